"""The seed graph on the GPU: parallelgraph against PyTorch, side by side, in one run.

    python benchmarks/gpu_vs_torch.py                 # on a machine with an NVIDIA GPU: table
    python benchmarks/gpu_vs_torch.py --write         # ... and results/h200_gpu_vs_torch.json
    python benchmarks/gpu_vs_torch.py --sizes medium --repeats 50 --json out.json
    python benchmarks/gpu_vs_torch.py --simulator-smoke   # parallelgraph rows, tiny, simulator
    python benchmarks/gpu_vs_torch.py --torch-cpu-smoke   # torch rows on the CPU (logic only)

What runs (issue #15, part 3): the seed graph of `experiments.presets.two_networks` -- two
independent networks, each ``x = random_normal([batch, in])``, ``(x @ W1 + b1) @ W2``, then
``out = result1 + result2`` (nine GPU ops: 2 random, 4 matmul, 3 add) -- at the sizes small,
medium, large and narrow of `TWO_NETWORK_SIZES` (batch, in, hidden, out), float32, TF32 off
everywhere (``torch.backends.cuda.matmul.allow_tf32 = False``, the same for cuDNN,
``set_float32_matmul_precision("highest")``, and ``NVIDIA_TF32_OVERRIDE=0``, ``CUPY_TF32=0``
set before any CUDA library starts). One row per (size, way):

* torch, ``eager, 1 stream`` -- the forward written as a user would, on the current stream;
* torch, ``eager, 2 streams`` -- net1 on one ``torch.cuda.Stream``, net2 on another, both
  waiting on the current stream first and joined with ``wait_stream`` before the final add;
* torch, ``CUDA graph`` -- the 1-stream forward captured once with ``torch.cuda.graph`` after
  three warm-up forwards on a side stream (as PyTorch's docs prescribe), then
  ``graph.replay()``; ``CUDA graph, 2 streams`` captures the 2-stream forward (the streams
  become parallel branches of the graph).
  The weights are CUDA tensors made once; the random data is made inside the forward, on the
  GPU, by ``torch.randn`` from the default CUDA generator, which ``torch.cuda.graph`` captures
  graph-safely (each replay draws new numbers; a parallelgraph run draws the same seeded
  numbers every time, the same work on the GPU);
* parallelgraph, ``parallelgraph, S stream(s)`` -- ``pg.Session(preset.graph,
  pg.Config(streams=S, stream_policy="branches", matmul_kernel=K))`` with the preset built on
  ``device_name="gpu:0"``, for S in (1, 2) and K in ("numba", "blas"). Which matmul really ran
  is read from the plan's notes (``session.plan_for(fetch).notes``, kept in the row's
  ``notes``): ``blas`` on the GPU is cuBLAS through CuPy, on the step's own stream, and falls
  back to the numba kernel, with a note, where CuPy cannot be used; such a row says
  ``numba (blas unavailable)``. Each of those four ways also runs with
  ``Config(cuda_graph=True)`` (``parallelgraph, S stream(s), CUDA graph``): its untraced runs
  after the first replay one CUDA graph; the row's ``graph`` says "replayed", or why not (then
  the run counts as a failed check).

Timing: the wall time of one whole forward as a caller sees it, synchronized: torch runs
``torch.cuda.synchronize()``, the forward, and ``.cpu()`` of the output (then synchronizes
again), because ``session.run(fetch)`` also waits for the GPU and copies the fetched value to
the host -- both sides pay the same device-to-host copy. Three warm-up runs of every way, then
`--repeats` rounds (default 20) in which every way of a size runs once, round-robin
(`_common.interleaved`), so drift on the machine hits all ways alike. Columns: median ms and
the interquartile range (IQR, % of the median; ``iqr_ms`` in the JSON).

Host cost: ``host us/GPU op`` is the median wall time divided by the GPU ops of the run (nine
for torch; the plan's GPU steps for parallelgraph) -- a crude number that includes the kernels'
own time. For parallelgraph, `--traced` (default 5) traced runs per way after the timing give
``trace ms``, the median `trace.makespan` (first GPU event's start to the last one's end), and
``host_overhead_us_per_gpu_op`` = (median wall - trace makespan) / GPU ops in the JSON: the
time a run spends outside the GPU's own span (Python scheduling, launches not hidden behind
kernels, the copy to the host), spread over its ops (traced runs are a little slower than
untraced ones, so on small, noisy runs it can come out below zero).

Checks: the two frameworks draw different random numbers, so their outputs are not compared.
Every way's output must have shape [batch, out] and be finite; the torch ways are compared with
each other on the same seed (``torch.cuda.manual_seed(0)`` before each), and must agree to 1e-5
relative (max |a - b| / max |a|). A failed check is printed, listed under ``"failures"`` in the
JSON, and makes the script exit 1 after printing and writing everything.

JSON (`--write`: benchmarks/results/h200_gpu_vs_torch.json, or `--json PATH`):
``{"device", "driver", "versions", "settings", "rows", "failures"}``; each row has
``framework``, ``size``, ``way``, ``matmul_kernel`` (parallelgraph only), ``streams``,
``cuda_graph``, ``median_ms``, ``iqr_ms``, ``repeats``, ``host_us_per_gpu_op`` and more.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

from _common import interleaved, median, spread, table

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
JSON_PATH = os.path.join(RESULTS, "h200_gpu_vs_torch.json")
#: (batch, in, hidden, out): a copy of experiments.presets.TWO_NETWORK_SIZES, so that the
#: torch part runs without importing parallelgraph; the parallelgraph part checks they agree.
SIZES = {
    "tiny": (8, 16, 16, 8),
    "narrow": (32, 16384, 1024, 32),
    "small": (64, 256, 256, 64),
    "medium": (512, 1024, 1024, 512),
    "large": (2048, 2048, 2048, 1024),
}
DEFAULT_SIZES = ("small", "medium", "large", "narrow")
WARMUP = 3
TORCH_GPU_OPS = 9  # 2 randn, 4 matmul, 3 add
TOLERANCE = 1e-5
#: The parallelgraph ways, one row each per size.
PG_WAYS = [
    {"streams": streams, "matmul_kernel": kernel, "cuda_graph": False}
    for kernel in ("numba", "blas")
    for streams in (1, 2)
]
# The same four ways with `Config(cuda_graph=True)`: untraced runs replay one CUDA graph.
PG_WAYS += [{**way, "cuda_graph": True} for way in PG_WAYS]
#: Words of a plan note saying that `blas` did not run (any of them, in a note naming "blas").
FALLBACK_WORDS = ("numba kernel", "fall back", "falls back", "fell back", "fallback", "cannot")


def streams_label(streams: int) -> str:
    return f"{streams} stream" + ("s" if streams > 1 else "")


# -- PyTorch ---------------------------------------------------------------------------------
class TorchSeed:
    """The seed graph in PyTorch on `device` ("cuda" or, for the smoke test, "cpu").

    Weights are made once (glorot-uniform, like parallelgraph's variables, from a CPU
    generator); the random inputs are drawn inside every forward, on the device, from the
    device's default generator: net1's before net2's in every way, so that the same seed gives
    the same numbers whatever the streams or the graph.
    """

    def __init__(self, torch, dims: tuple[int, int, int, int], device: str):
        self.torch = torch
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        batch, n_in, hidden, n_out = dims
        self.data_shape, self.out_shape = (batch, n_in), (batch, n_out)
        generator = torch.Generator().manual_seed(0)

        def glorot(*shape: int):
            limit = math.sqrt(6.0 / (shape[0] + shape[-1]))
            values = (torch.rand(shape, generator=generator) * 2 - 1) * limit
            return values.to(device=self.device, dtype=torch.float32).contiguous()

        self.weights = [
            (glorot(n_in, hidden), glorot(hidden), glorot(hidden, n_out)) for _ in range(2)
        ]
        self.streams = [torch.cuda.Stream(), torch.cuda.Stream()] if self.cuda else []

    def seed(self, value: int) -> None:
        if self.cuda:
            self.torch.cuda.manual_seed(value)
        else:
            self.torch.manual_seed(value)

    def net(self, index: int):
        w1, b1, w2 = self.weights[index]
        x = self.torch.randn(self.data_shape, device=self.device, dtype=self.torch.float32)
        return (x @ w1 + b1) @ w2

    def forward_one_stream(self):
        return self.net(0) + self.net(1)

    def forward_two_streams(self):
        """net1 and net2 on their own streams, joined before the add (as PyTorch's docs on
        streams prescribe: wait before using, record_stream for tensors crossing streams)."""
        if not self.cuda:
            return self.forward_one_stream()
        torch = self.torch
        current = torch.cuda.current_stream()
        first, second = self.streams
        first.wait_stream(current)
        second.wait_stream(current)
        with torch.cuda.stream(first):
            result1 = self.net(0)
        with torch.cuda.stream(second):
            result2 = self.net(1)
        current.wait_stream(first)
        current.wait_stream(second)
        if not torch.cuda.is_current_stream_capturing():  # a graph's pool keeps them anyway
            result1.record_stream(current)
            result2.record_stream(current)
        return result1 + result2

    def capture(self, forward):
        """(graph, static output): `forward` captured once after warm-up on a side stream."""
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP):
                forward()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static = forward()
        torch.cuda.synchronize()
        return graph, static

    def ways(self, log, failures: list[str], size: str) -> dict:
        """way -> function() returning the output on the host, synchronized on both ends. A
        way that cannot be built is left out, with a line in `failures`."""
        torch = self.torch
        sync = torch.cuda.synchronize if self.cuda else (lambda: None)

        def timed(forward):
            def run():
                sync()
                value = forward().cpu()
                sync()
                return value

            return run

        ways = {
            "eager, 1 stream": timed(self.forward_one_stream),
            "eager, 2 streams": timed(self.forward_two_streams),
        }
        if not self.cuda:
            log("torch-cpu-smoke: 'eager, 2 streams' runs on one thread (no CUDA streams on cpu)")
        for way, forward in (
            ("CUDA graph", self.forward_one_stream),
            ("CUDA graph, 2 streams", self.forward_two_streams),
        ):
            if not self.cuda:
                log(f"torch-cpu-smoke: {way!r} runs its forward eagerly (no CUDA graph on cpu)")
                ways[way] = timed(forward)
                continue
            try:
                graph, static = self.capture(forward)
            except Exception as error:  # noqa: BLE001 - report it, time the other ways
                failures.append(
                    f"torch {size} {way!r}: capture failed: {type(error).__name__}: {error}"
                )
                log(failures[-1])
                torch.cuda.synchronize()
                continue
            ways[way] = timed(lambda graph=graph, static=static: graph.replay() or static)
        return ways


def torch_check(model: TorchSeed, ways: dict, size: str) -> tuple[dict, list[str]]:
    """Per way: shape, finiteness and agreement with eager 1-stream on the same seed."""
    torch = model.torch
    outputs, failures, report = {}, [], {}
    for way, run in ways.items():
        model.seed(0)
        outputs[way] = run()
    reference = outputs["eager, 1 stream"].double()
    scale = float(reference.abs().max()) or 1.0
    for way, value in outputs.items():
        problems = []
        if tuple(value.shape) != model.out_shape:
            problems.append(f"shape {tuple(value.shape)} != {model.out_shape}")
        if not bool(torch.isfinite(value).all()):
            problems.append("not finite")
        difference = float((value.double() - reference).abs().max()) / scale
        if difference > TOLERANCE:
            problems.append(f"differs from 'eager, 1 stream' by {difference:.1e} relative")
        report[way] = {"rel_diff_vs_eager": difference, "output_ok": not problems}
        failures += [f"torch {size} {way!r}: {problem}" for problem in problems]
    return report, failures


def torch_cases(torch, size: str, device: str, log) -> tuple[dict, dict, list[str]]:
    """(label -> case, label -> row stub, failures) of the torch ways at `size`."""
    model = TorchSeed(torch, SIZES[size], device)
    failures: list[str] = []
    ways = model.ways(log, failures, size)
    report, check_failures = torch_check(model, ways, size)
    failures += check_failures
    cases, stubs = {}, {}
    for way, run in ways.items():
        label = f"torch | {way}"
        cases[label] = run
        stubs[label] = {
            "framework": "torch",
            "size": size,
            "way": way,
            "matmul_kernel": None,
            "streams": 2 if "2 streams" in way else 1,
            "cuda_graph": "CUDA graph" in way,
            "gpu_ops": TORCH_GPU_OPS,
            **report[way],
        }
    return cases, stubs, failures


def torch_setup(device: str) -> object:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    if device == "cpu":
        torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    return torch


# -- parallelgraph ---------------------------------------------------------------------------
def pg_config(pg, way: dict):
    settings = {
        "streams": way["streams"],
        "stream_policy": "branches",
        "matmul_kernel": way["matmul_kernel"],
    }
    if way["cuda_graph"]:
        settings["cuda_graph"] = True
    return pg.Config(**settings)


def kernel_that_ran(requested: str, notes: list[str]) -> str:
    """`requested`, or "numba (blas unavailable)" when the plan notes that `blas` fell back: a
    plan says nothing when cuBLAS runs, and names "blas" in a note when it could not
    (`parallelgraph.plan._gpu_kernel_notes`: "... the 4 GPU matmul(s) ran the numba kernel")."""
    if requested != "blas":
        return requested
    blas = [note.lower() for note in notes if "blas" in note.lower()]
    if any(word in note for note in blas for word in FALLBACK_WORDS):
        return "numba (blas unavailable)"
    return "blas"


def pg_cases(stack: contextlib.ExitStack, size: str, traced: int) -> tuple[dict, dict, list]:
    """(label -> case, label -> row stub, failures) of the parallelgraph ways at `size`; the
    sessions stay open in `stack` until the size's timing is done."""
    import numpy as np

    import parallelgraph as pg
    from parallelgraph.experiments.presets import TWO_NETWORK_SIZES, two_networks

    if TWO_NETWORK_SIZES.get(size) != SIZES[size]:
        raise SystemExit(f"gpu_vs_torch: SIZES[{size!r}] differs from presets; update the copy")
    batch, _, _, n_out = SIZES[size]
    cases, stubs, failures = {}, {}, []
    for way in PG_WAYS:
        label = f"parallelgraph | {streams_label(way['streams'])} | {way['matmul_kernel']}"
        label += " | CUDA graph" if way["cuda_graph"] else ""
        preset = two_networks(size, device_name="gpu:0")
        session = stack.enter_context(pg.Session(preset.graph, pg_config(pg, way)))
        fetch = preset.fetch
        try:
            plan = session.plan_for(fetch)
            value = session.run(fetch)  # compiles, allocates, copies the variables once
        except Exception as error:  # noqa: BLE001 - report it, time the other ways
            failures.append(f"parallelgraph {size} {label}: {type(error).__name__}: {error}")
            print(failures[-1], flush=True)
            continue
        notes = list(plan.notes)
        gpu_ops = sum(1 for step in plan.steps if step.device.is_gpu)
        problems = []
        if tuple(value.shape) != (batch, n_out):
            problems.append(f"shape {tuple(value.shape)} != {(batch, n_out)}")
        if not np.isfinite(value).all():
            problems.append("not finite")
        if gpu_ops == 0:
            problems.append(f"no op ran on the GPU (notes: {notes})")
        failures += [f"parallelgraph {size} {label}: {problem}" for problem in problems]
        way_label = f"parallelgraph, {streams_label(way['streams'])}"
        way_label += ", CUDA graph" if way["cuda_graph"] else ""
        cases[label] = lambda session=session, fetch=fetch: session.run(fetch)
        stubs[label] = {
            "framework": "parallelgraph",
            "size": size,
            "way": way_label,
            "matmul_kernel": kernel_that_ran(way["matmul_kernel"], notes),
            "matmul_kernel_requested": way["matmul_kernel"],
            "streams": way["streams"],
            "cuda_graph": way["cuda_graph"],
            "gpu_ops": gpu_ops,
            "notes": notes,
            "output_ok": not problems,
            "_trace": (session, fetch, traced),
        }
    return cases, stubs, failures


def graph_state(session, fetch) -> str:
    """ "replayed" when the session's runs of `fetch` are one CUDA graph launch, else why not
    (the capture's error, or "not captured")."""
    from parallelgraph.executors.cuda_graphs import CapturedPlan

    plan = session.plan_for(fetch)
    if any("simulator cannot capture" in note for note in plan.notes):
        return SIMULATED
    state = session._executor._gpu._graphs.get(id(plan))
    if isinstance(state, CapturedPlan):
        return "replayed"
    return state or "not captured"


#: `graph_state` in the CUDA simulator, which cannot capture graphs (no failed check there).
SIMULATED = "plain launches (the simulator cannot capture)"


def pg_traced(stub: dict) -> None:
    """Median makespan of a few traced runs, and the host time outside it per GPU op."""
    session, fetch, count = stub.pop("_trace")
    if count <= 0 or stub["framework"] != "parallelgraph":
        return
    makespans = []
    for _ in range(count):
        _, trace = session.run(fetch, trace=True)
        makespans.append(trace.makespan_ms)
    stub["traced_makespan_ms"] = median(makespans)
    stub["traced_runs"] = count
    outside = stub["median_ms"] - stub["traced_makespan_ms"]
    stub["host_overhead_us_per_gpu_op"] = outside * 1e3 / max(stub["gpu_ops"], 1)


# -- both ------------------------------------------------------------------------------------
def iqr_ms(seconds: list[float]) -> float | None:
    """The interquartile range in milliseconds (None under 4 values: JSON has no NaN)."""
    if len(seconds) < 4:
        return None
    q1, _, q3 = statistics.quantiles(seconds, n=4)
    return (q3 - q1) * 1e3


def measure_size(size, repeats, torch, torch_device, with_pg, traced, log) -> tuple[list, list]:
    """One row per way at `size`: every way timed round-robin (see the module docstring)."""
    cases, stubs, failures = {}, {}, []
    with contextlib.ExitStack() as stack:
        if torch is not None:
            more_cases, more_stubs, more_failures = torch_cases(torch, size, torch_device, log)
            cases |= more_cases
            stubs |= more_stubs
            failures += more_failures
        if with_pg:
            more_cases, more_stubs, more_failures = pg_cases(stack, size, traced)
            cases |= more_cases
            stubs |= more_stubs
            failures += more_failures
        times = interleaved(cases, repeats, warmup=WARMUP)
        rows = []
        for label, stub in stubs.items():
            seconds = times[label]
            row = {
                **stub,
                "median_ms": median(seconds) * 1e3,
                "iqr_ms": iqr_ms(seconds),
                "iqr": spread(seconds),
                "min_ms": min(seconds) * 1e3,
                "repeats": len(seconds),
            }
            row["host_us_per_gpu_op"] = row["median_ms"] * 1e3 / max(row["gpu_ops"], 1)
            if row["cuda_graph"] and "_trace" in row:
                row["graph"] = graph_state(*row["_trace"][:2])
                if row["graph"] not in ("replayed", SIMULATED):
                    failures.append(f"{row['size']} {label}: no CUDA graph ({row['graph']})")
            if "_trace" in row:
                pg_traced(row)
            rows.append(row)
    return rows, failures


def print_table(rows: list[dict]) -> None:
    header = [
        "size",
        "framework",
        "way",
        "matmul_kernel",
        "streams",
        "cuda_graph",
        "median ms",
        "IQR",
        "host us/GPU op",
        "trace ms",
    ]
    lines = []
    for row in rows:
        trace = row.get("traced_makespan_ms")
        lines.append(
            [
                row["size"],
                row["framework"],
                row["way"],
                row["matmul_kernel"] or "-",
                row["streams"],
                str(row["cuda_graph"]).lower(),
                f"{row['median_ms']:.3f}",
                row["iqr"],
                f"{row['host_us_per_gpu_op']:.1f}",
                "-" if trace is None else f"{trace:.3f}",
            ]
        )
    print(table(header, lines), flush=True)


def summary(rows: list[dict]) -> list[str]:
    """Per size: PyTorch's best way against parallelgraph's best way."""
    lines = []
    for size in dict.fromkeys(row["size"] for row in rows):
        best = {}
        for framework in ("torch", "parallelgraph"):
            mine = [r for r in rows if r["size"] == size and r["framework"] == framework]
            if mine:
                best[framework] = min(mine, key=lambda r: r["median_ms"])
        if len(best) == 2:
            torch_row, pg_row = best["torch"], best["parallelgraph"]
            ratio = pg_row["median_ms"] / torch_row["median_ms"]
            lines.append(
                f"{size}: parallelgraph's best ({pg_row['way']}, {pg_row['matmul_kernel']}, "
                f"{pg_row['median_ms']:.3f} ms) is {ratio:.2f}x "
                f"torch's best ({torch_row['way']}, {torch_row['median_ms']:.3f} ms)"
            )
    return lines


def versions() -> dict:
    """Versions of what ran, without importing what this mode does not use."""
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": sys.version.split()[0]}
    for name in ("torch", "numba", "numba-cuda", "numpy", "parallelgraph"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    try:
        import cupy

        found["cupy"] = cupy.__version__
    except Exception:  # noqa: BLE001 - not installed, or no CUDA for it
        found["cupy"] = None
    if "torch" in sys.modules:
        found["torch_cuda"] = sys.modules["torch"].version.cuda
    return found


def driver_version() -> str | None:
    try:
        query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"]
        text = subprocess.run(query, capture_output=True, text=True, timeout=20).stdout.strip()
        return text or None
    except (OSError, subprocess.SubprocessError):
        return None


def write(document: dict, path: str) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as file:
        json.dump(document, file, indent=1, default=str)
        file.write("\n")
    return path


def gpu_present() -> tuple[bool, object]:
    """(is there a usable CUDA GPU, torch or None); torch first, numba only without torch."""
    try:
        torch = torch_setup("cuda")
    except Exception:  # noqa: BLE001 - not installed, or a broken install: no torch rows
        torch = None
    if torch is not None:
        return bool(torch.cuda.is_available()), torch
    try:
        from numba import cuda

        return bool(cuda.is_available()), None
    except Exception:  # noqa: BLE001 - a broken CUDA install means "no GPU"
        return False, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), help="default: %(default)s")
    parser.add_argument("--repeats", type=int, default=20, help="timed rounds per way")
    parser.add_argument("--traced", type=int, default=5, help="traced parallelgraph runs/way")
    parser.add_argument("--write", action="store_true", help=f"write {JSON_PATH}")
    parser.add_argument("--json", help="write the JSON here (implies --write)")
    parser.add_argument("--simulator-smoke", action="store_true", help="parallelgraph, simulator")
    parser.add_argument("--torch-cpu-smoke", action="store_true", help="torch rows on the CPU")
    args = parser.parse_args()
    smoke = args.simulator_smoke or args.torch_cpu_smoke
    if args.simulator_smoke and args.torch_cpu_smoke:
        sys.exit("gpu_vs_torch: choose one of --simulator-smoke and --torch-cpu-smoke")
    # Before any CUDA library starts: plain FP32, no TF32 in cuBLAS (torch's or CuPy's).
    os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
    os.environ["CUPY_TF32"] = "0"
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    log = print
    torch, torch_device, with_pg = None, "cuda", True
    if args.simulator_smoke:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported
        print("simulator smoke: torch rows skipped (PyTorch does not run in Numba's simulator)")
        device, driver = "CUDA simulator", None
        sizes, repeats, traced = args.sizes or ["tiny"], min(args.repeats, 2), min(args.traced, 1)
    elif args.torch_cpu_smoke:
        torch, torch_device, with_pg = torch_setup("cpu"), "cpu", False
        print("torch-cpu-smoke: parallelgraph rows skipped (they need a GPU or the simulator)")
        device, driver = "cpu (torch-cpu-smoke)", None
        sizes, repeats, traced = args.sizes or ["tiny", "small"], min(args.repeats, 2), 0
    else:
        if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
            sys.exit("gpu_vs_torch: NUMBA_ENABLE_CUDASIM=1 is set; unset it or --simulator-smoke")
        present, torch = gpu_present()
        if not present:
            sys.exit("gpu_vs_torch: no CUDA GPU here; try --simulator-smoke or --torch-cpu-smoke")
        if torch is None:
            print("PyTorch is not installed: parallelgraph rows only")
        device = torch.cuda.get_device_name(0) if torch is not None else None
        if device is None:
            from numba import cuda

            name = cuda.get_current_device().name
            device = name.decode() if isinstance(name, bytes) else str(name)
        driver = driver_version()
        sizes, repeats, traced = args.sizes or list(DEFAULT_SIZES), args.repeats, args.traced
    started = time.perf_counter()
    print(
        f"{device}, driver {driver}; sizes {sizes}; {WARMUP} warm-up runs, then {repeats} "
        f"round-robin rounds; {time.strftime('%Y-%m-%d %H:%M')}",
        flush=True,
    )
    rows, failures = [], []
    for size in sizes:
        try:
            size_rows, size_failures = measure_size(
                size, repeats, torch, torch_device, with_pg, traced, log
            )
        except Exception as error:  # noqa: BLE001 - keep the other sizes' rows
            traceback.print_exc()
            size_rows, size_failures = [], [f"{size}: {type(error).__name__}: {error}"]
        rows += size_rows
        failures += size_failures
        print(f"({size}: {time.perf_counter() - started:.1f} s so far)", flush=True)
    print_table(rows)
    print("\n".join(summary(rows)))
    document = {
        "device": device,
        "driver": driver,
        "versions": versions(),
        "settings": {
            "dtype": "float32",
            "tf32": False,
            "warmup": WARMUP,
            "repeats": repeats,
            "traced_runs": traced,
            "sizes": {size: SIZES[size] for size in sizes},
            "timing": "wall time of one synchronized forward incl. the copy of out to the host",
            "date": time.strftime("%Y-%m-%d"),
        },
        "rows": rows,
        "failures": failures,
    }
    path = args.json or (JSON_PATH if args.write else None)
    if smoke and path is None:  # exercise the writer anyway
        with tempfile.TemporaryDirectory() as folder:
            written = write(document, os.path.join(folder, "smoke.json"))
            with open(written) as file:
                assert len(json.load(file)["rows"]) == len(rows)
    elif path is not None:
        print("wrote", write(document, path))
    for failure in failures:
        print("CHECK FAILED:", failure)
    seconds = time.perf_counter() - started
    print(f"{len(rows)} rows, {len(failures)} failed checks, {seconds:.1f} s")
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
