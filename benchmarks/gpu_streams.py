"""The seed's first question on a real GPU: do net1 and net2 overlap on several CUDA streams?

    python benchmarks/gpu_streams.py              # on a machine with an NVIDIA GPU
    python benchmarks/gpu_streams.py --simulate   # smoke test in Numba's CUDA simulator
    python benchmarks/gpu_streams.py --sizes narrow 32x4096x4096x32 --json out.json

For the two-network graph at each size (narrow, whose kernels do not fill an H200 so that two
of them fit side by side, then small, medium and large; or `--sizes`, names or explicit
BATCHxINxHIDDENxOUT), 1, 2 and 4 streams (policy `branches`) and both launch paths (`prepared`:
the executor replays launches built once; `numba`: every launch goes through numba's dispatcher,
`kernels.gpu.launch.DIRECT_LAUNCH = False`), one row each:

- median makespan over repeats (GPU event timing) and its speed-up against 1 stream;
- median overlap of net1 and net2;
- GPU busy: the part of the makespan during which some GPU op ran (the union of the op
  intervals). Well under 1 with one stream means the GPU waited for the host: launch-bound;
- host microseconds per GPU op: wall time of an untraced run divided by its GPU ops (launch,
  events and scheduling);
- the largest relative error of the output against float64 NumPy on the same inputs.

First, the host costs that bound what streams can gain: one kernel launch (three device arrays)
through numba and as a prepared `Launch`, and one event record. Stops itself after `--budget`
seconds (default 170).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

SIZES = (
    "narrow",
    "small",
    "medium",
    "large",
)  # parallelgraph.experiments.presets.TWO_NETWORK_SIZES
SIMULATED_SIZES = ("tiny",)
STREAMS = (1, 2, 4)
LAUNCHES = ("prepared", "numba")


def parse_size(text: str) -> str | tuple[int, ...]:
    """A preset name, or BATCHxINxHIDDENxOUT."""
    return tuple(int(part) for part in text.split("x")) if "x" in text else text


def float64_reference(sess, graph):
    """out = sum over nets of (x @ w1 + b1) @ w2, in float64 on the session's own inputs."""
    total = 0
    for net in ("net1", "net2"):
        x, w1, b1, w2 = sess.run(
            [graph.tensor(f"{net}/RandomNormal")]
            + [graph.tensor(f"{net}/{name}") for name in ("w1", "b1", "w2")]
        )
        as64 = [v.astype("float64") for v in (x, w1, b1, w2)]
        total = total + (as64[0] @ as64[1] + as64[2]) @ as64[3]
    return total


def measure(size, streams: int, launch: str, repeats: int) -> dict:
    import numpy as np

    import parallelgraph as pg
    from parallelgraph.devices import DeviceKind, device_kind
    from parallelgraph.experiments.measure import median_trace
    from parallelgraph.experiments.presets import size_label, two_networks
    from parallelgraph.kernels import gpu
    from parallelgraph.trace import analysis

    gpu.launch.DIRECT_LAUNCH = launch == "prepared"  # read when a session first launches a step
    preset = two_networks(size, device_name="gpu:0")
    graph, out = preset.graph, preset.fetch
    config = pg.Config(streams=streams, stream_policy="branches", inter_op_threads=1)
    with pg.Session(graph, config) as sess:
        value = sess.run(out)  # warm-up: compiles, allocates, copies variables once
        reference = float64_reference(sess, graph)
        error = float(np.max(np.abs(value - reference)) / max(np.max(np.abs(reference)), 1e-30))
        sess.run(out, trace=True)
        traces = [sess.run(out, trace=True)[1] for _ in range(repeats)]
        gpu_ops = sum(1 for e in traces[0].ops() if device_kind(e.device) is DeviceKind.GPU)
        walls = []
        for _ in range(repeats):
            start = time.perf_counter()
            sess.run(out)
            walls.append(time.perf_counter() - start)
    makespans = [t.makespan_ms for t in traces]
    return {
        "size": size_label(size),
        "launch": launch,
        "streams": streams,
        "median_ms": statistics.median(makespans),
        "overlap": statistics.median(t.overlap("net1", "net2") for t in traces),
        "gpu_busy": statistics.median(analysis.gpu_busy(t) for t in traces),
        "host_us_per_op": statistics.median(walls) / gpu_ops * 1e6,
        "error": error,
        "trace": median_trace(traces),  # the run nearest the median, as everywhere
    }


def host_costs(simulated: bool) -> dict:
    """Microseconds of one launch of a 3-array kernel (numba, prepared) and of an event record."""
    import numpy as np
    from numba import cuda

    from parallelgraph.kernels import gpu

    stream = cuda.stream()
    a = cuda.to_device(np.ones((1, 256), np.float32), stream=stream)
    out = cuda.device_array_like(a, stream=stream)
    event = cuda.event() if simulated else cuda.event(timing=True)
    count = 20 if simulated else 2000
    gpu.run_launches(gpu.elementwise_launches("add", [a, a], out), stream)  # compile
    stream.synchronize()
    start = time.perf_counter()
    for _ in range(count):
        gpu.run_launches(gpu.elementwise_launches("add", [a, a], out), stream)
    launch = (time.perf_counter() - start) / count * 1e6
    stream.synchronize()
    (prepared,) = gpu.elementwise_launches("add", [a, a], out)
    prepared(stream)  # captures the compiled kernel
    start = time.perf_counter()
    for _ in range(count):
        prepared(stream)
    replay = (time.perf_counter() - start) / count * 1e6
    stream.synchronize()
    start = time.perf_counter()
    for _ in range(count):
        event.record(stream)
    record = (time.perf_counter() - start) / count * 1e6
    stream.synchronize()
    return {"numba_launch_us": launch, "prepared_launch_us": replay, "event_record_us": record}


COLUMNS = (
    "size | launch | streams | median ms | speed-up vs 1 stream | net1/net2 overlap | GPU busy | "
    "host us per GPU op | max relative error vs float64"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulate", action="store_true", help="use the CUDA simulator")
    parser.add_argument("--sizes", nargs="+", help="names or BATCHxINxHIDDENxOUT")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--budget", type=float, default=170.0, help="seconds before stopping")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    parser.add_argument("--timelines", help="save a 1 vs 2 streams timeline PNG per size here")
    args = parser.parse_args()
    if args.simulate:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        args.repeats = min(args.repeats, 2)
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")  # small grids are the point
    from numba import cuda

    if not cuda.is_available():
        sys.exit("no usable CUDA GPU (try --simulate)")
    device = "CUDA simulator" if args.simulate else cuda.get_current_device().name
    if isinstance(device, bytes):
        device = device.decode()
    sizes = [parse_size(s) for s in args.sizes or (SIMULATED_SIZES if args.simulate else SIZES)]
    print(f"device: {device}; policy branches; {args.repeats} repeats; {time.strftime('%Y-%m-%d')}")
    costs = host_costs(args.simulate)
    print(
        f"host: one launch (3 device arrays) through numba {costs['numba_launch_us']:.1f} us, "
        f"prepared {costs['prepared_launch_us']:.1f} us; one event record "
        f"{costs['event_record_us']:.1f} us",
        flush=True,
    )
    print(f"columns: {COLUMNS}")
    started = time.perf_counter()
    rows = []
    for size, launch in [(size, launch) for size in sizes for launch in LAUNCHES]:
        base = None
        by_streams = {}
        for streams in STREAMS:
            if time.perf_counter() - started > args.budget:
                print(f"(budget of {args.budget:.0f} s spent: stopping before {size}/{streams})")
                break
            result = measure(size, streams, launch, args.repeats)
            base = base or result["median_ms"]
            result["speedup"] = base / result["median_ms"]
            by_streams[streams] = result.pop("trace")
            rows.append(result)
            print(
                f"| {result['size']:>15} | {launch:>8} | {streams} | {result['median_ms']:9.3f} | "
                f"{result['speedup']:5.2f} | {result['overlap']:.2f} | {result['gpu_busy']:.2f} | "
                f"{result['host_us_per_op']:7.1f} | {result['error']:.1e} |",
                flush=True,
            )
        if launch == "prepared" and args.timelines and 1 in by_streams and 2 in by_streams:
            from parallelgraph.plot import compare

            os.makedirs(args.timelines, exist_ok=True)
            path = os.path.join(args.timelines, f"gpu_{rows[-1]['size']}.png")
            figure = compare([by_streams[1], by_streams[2]], labels=["1 stream", "2 streams"])
            figure.savefig(path, dpi=110)
            by_streams[2].save(path.replace(".png", ".ctf.json"))
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"device": device, "host": costs, "rows": rows}, file, indent=1)


if __name__ == "__main__":
    main()
