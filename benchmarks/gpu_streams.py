"""The seed's first question on a real GPU: do net1 and net2 overlap on several CUDA streams?

    python benchmarks/gpu_streams.py              # on a machine with an NVIDIA GPU
    python benchmarks/gpu_streams.py --simulate   # smoke test in Numba's CUDA simulator

For the two-network graph at each size (small, medium, large, and `narrow`, whose kernels do not
fill an H200 so that two of them fit side by side) and 1, 2 and 4 streams (policy `branches`):
median makespan over repeats (GPU event timing), median overlap of net1 and net2, speed-up
against 1 stream, host microseconds per GPU op (wall time of an untraced run divided by its GPU
ops: launch plus scheduling), and the largest relative error of the output against float64
NumPy on the same inputs. Stops itself after `--budget` seconds (default 170).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

SIZES = ("narrow", "small", "medium", "large")  # parallelgraph.presets.TWO_NETWORK_SIZES
SIMULATED_SIZES = ("tiny",)


def float64_reference(sess, graph, out):
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


def measure(size: str, streams: int, repeats: int) -> dict:
    import numpy as np

    import parallelgraph as pg
    from parallelgraph.presets import two_networks

    preset = two_networks(size, device_name="gpu:0")
    graph, out = preset.graph, preset.fetch
    config = pg.Config(streams=streams, stream_policy="branches", inter_op_threads=1)
    with pg.Session(graph, config) as sess:
        value = sess.run(out)  # warm-up: compiles, allocates, copies variables once
        reference = float64_reference(sess, graph, out)
        error = float(np.max(np.abs(value - reference)) / max(np.max(np.abs(reference)), 1e-30))
        traces = [sess.run(out, trace=True)[1] for _ in range(repeats)]
        gpu_ops = sum(1 for e in traces[0].ops() if e.device.startswith("gpu"))
        walls = []
        for _ in range(repeats):
            start = time.perf_counter()
            sess.run(out)
            walls.append(time.perf_counter() - start)
    return {
        "size": size,
        "streams": streams,
        "median_ms": statistics.median(t.makespan_ms for t in traces),
        "overlap": statistics.median(t.overlap("net1", "net2") for t in traces),
        "host_us_per_op": statistics.median(walls) / gpu_ops * 1e6,
        "error": error,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulate", action="store_true", help="use the CUDA simulator")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--budget", type=float, default=170.0, help="seconds before stopping")
    args = parser.parse_args()
    if args.simulate:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        args.repeats = min(args.repeats, 2)
    from numba import cuda

    if not cuda.is_available():
        sys.exit("no usable CUDA GPU (try --simulate)")
    device = "CUDA simulator" if args.simulate else cuda.get_current_device().name
    print(f"device: {device}; policy branches; {args.repeats} repeats; {time.strftime('%Y-%m-%d')}")
    started = time.perf_counter()
    rows = []
    for size in SIMULATED_SIZES if args.simulate else SIZES:
        base = None
        for streams in (1, 2, 4):
            if time.perf_counter() - started > args.budget:
                print(f"(budget of {args.budget:.0f} s spent: stopping before {size}/{streams})")
                break
            result = measure(size, streams, args.repeats)
            base = base or result["median_ms"]
            result["speedup"] = base / result["median_ms"]
            rows.append(result)
            print(
                f"| {size:>6} | {streams} | {result['median_ms']:9.3f} | {result['overlap']:.2f} | "
                f"{result['speedup']:5.2f} | {result['host_us_per_op']:7.1f} | "
                f"{result['error']:.1e} |",
                flush=True,
            )
    print(
        "columns: size | streams | median ms | net1/net2 overlap | speed-up vs 1 stream | "
        "host us per GPU op | max relative error vs float64"
    )


if __name__ == "__main__":
    main()
