"""GPU matmul GFLOP/s: parallelgraph's numba kernel against CuPy's ``a @ b`` (cuBLAS), float32.

    python benchmarks/gpu_matmul.py                  # on a machine with an NVIDIA GPU: table
    python benchmarks/gpu_matmul.py --write          # ... and results/h200_gpu_matmul.json
    python benchmarks/gpu_matmul.py --sweep          # ... plus other float32 tile configs
    python benchmarks/gpu_matmul.py --simulator-smoke  # every code path, tiny, CUDA simulator

Shapes [m, k, n]: squares n = 1024, 2048, 4096 and the seed graph's first matmul
``x[batch, in] @ w1[in, hidden]`` at medium, large and narrow (parallelgraph.experiments.presets).

Kernels (one row each per shape; the `KERNELS` table):

* ``numba`` -- `parallelgraph.kernels.gpu.gemm` as the cuda executor runs it: prepared
  `Launch` objects, with its split-K scratch allocated once (as the executor does per plan).
* ``cupy`` -- ``cupy.matmul(a, b, out=c)`` on the same buffers, on the same stream: cuBLAS
  SGEMM. TF32 stays off: CuPy uses TF32 for float32 only when ``CUPY_TF32=1``, and this script
  sets ``CUPY_TF32=0`` and ``NVIDIA_TF32_OVERRIDE=0`` (all NVIDIA libraries) before importing
  CuPy; both go in the JSON. The error column checks it: FP32 gives ~1e-6 relative error at
  k = 4096, TF32 (10-bit mantissa) ~1e-3.
* ``blas`` -- parallelgraph's own cuBLAS path, ``Config(matmul_kernel="blas")`` on the GPU, as
  the cuda executor runs it: `parallelgraph.kernels.gpu.cublas` launches (CuPy's matmul on the
  plan's buffers, on the step's stream). Issue 15's target: within 5% of ``cupy``.

Timing: CUDA events on one stream around `--inner` back-to-back calls (so the host's launch
cost hides behind the GPU), the median over `--repeats`; GFLOP/s = 2 m k n / time. Every
kernel's result is checked against a float64 product (CuPy on the device), and the largest
relative error (max |err| / max |ref|) goes in the row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
JSON_PATH = os.path.join(RESULTS, "h200_gpu_matmul.json")
SQUARES = (1024, 2048, 4096)
SEED_SIZES = ("medium", "large", "narrow")
SMOKE_SHAPES = ([16, 8, 16], [13, 11, 9], [5, 64, 6])


def seed_shapes() -> list[tuple[str, list[int]]]:
    """(label, [m, k, n]) of every benchmarked shape."""
    from parallelgraph.experiments.presets import TWO_NETWORK_SIZES

    shapes = [(f"n={n}", [n, n, n]) for n in SQUARES]
    for size in SEED_SIZES:
        batch, n_in, hidden, _ = TWO_NETWORK_SIZES[size]
        shapes.append((size, [batch, n_in, hidden]))
    return shapes


def numba_case(a, b, out, config=None):
    """A function() that enqueues the numba kernel's launches on the current stream."""
    import numpy as np
    from numba import cuda

    from parallelgraph.kernels import gpu
    from parallelgraph.kernels.gpu import gemm as gpu_matmul

    (m, k), n = a.shape, b.shape[1]
    size = gpu_matmul.matmul_scratch_size(m, k, n, a.dtype, config)
    scratch = cuda.device_array(size, np.float64) if size else None
    launches = gpu_matmul.matmul_launches(a, b, out, scratch, config)
    return lambda stream: gpu.run_launches(launches, stream)


def cupy_case(a, b, out):
    """A function(stream) that runs cupy.matmul (cuBLAS) on the same device buffers."""
    import cupy

    ca, cb, cout = (cupy.asarray(x) for x in (a, b, out))  # views via __cuda_array_interface__
    streams = {}

    def run(stream):
        handle = int(stream)  # a numba Stream's handle (ctypes or cuda-python bindings)
        if handle not in streams:
            streams[handle] = cupy.cuda.ExternalStream(handle)
        with streams[handle]:
            cupy.matmul(ca, cb, out=cout)

    return run


def blas_case(a, b, out):
    """A function(stream) that runs parallelgraph's cuBLAS launches (`kernels.gpu.cublas`)."""
    from parallelgraph.kernels import gpu
    from parallelgraph.kernels.gpu import cublas as gpu_blas

    launches = gpu_blas.matmul_launches(a, b, out)
    return lambda stream: gpu.run_launches(launches, stream)


#: kernel name -> case builder(a, b, out) -> function(stream)
KERNELS = {"numba": numba_case, "blas": blas_case, "cupy": cupy_case}


def time_case(run, stream, inner: int, repeats: int, simulated: bool) -> float:
    """Median seconds per call: CUDA events around `inner` calls (wall clock in the simulator)."""
    from numba import cuda

    run(stream)  # warm-up: compiles, and the first cuBLAS call picks its algorithm
    stream.synchronize()
    times = []
    for _ in range(repeats):
        if simulated:  # the simulator has no event timing
            start_wall = time.perf_counter()
            for _ in range(inner):
                run(stream)
            stream.synchronize()
            times.append((time.perf_counter() - start_wall) / inner)
            continue
        start, end = cuda.event(timing=True), cuda.event(timing=True)
        start.record(stream)
        for _ in range(inner):
            run(stream)
        end.record(stream)
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000 / inner)
    return statistics.median(times)


def max_relative_error(out, reference) -> float:
    import numpy as np

    out, reference = np.asarray(out, np.float64), np.asarray(reference, np.float64)
    scale = float(np.abs(reference).max()) if reference.size else 0.0
    return float(np.abs(out - reference).max() / scale) if scale else 0.0


def environment(simulated: bool) -> dict:
    import numba
    import numpy as np
    from numba import cuda

    versions = {"numpy": np.__version__, "numba": numba.__version__}
    try:
        from importlib.metadata import version

        versions["numba-cuda"] = version("numba-cuda")
    except Exception:  # noqa: BLE001 - best effort
        pass
    if simulated:
        return {"device": "CUDA simulator", "driver": None, "versions": versions}
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    driver = "CUDA " + ".".join(str(v) for v in cuda.cudadrv.driver.get_version())
    try:
        query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"]
        release = subprocess.run(query, capture_output=True, text=True, timeout=20).stdout
        driver = f"{release.strip()} ({driver})" if release.strip() else driver
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        import cupy

        versions["cupy"] = cupy.__version__
        versions["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        versions["CUPY_TF32"] = os.environ.get("CUPY_TF32")
        versions["NVIDIA_TF32_OVERRIDE"] = os.environ.get("NVIDIA_TF32_OVERRIDE")
    except ImportError:
        versions["cupy"] = None
    versions["sms"] = device.MULTIPROCESSOR_COUNT
    return {"device": name, "driver": driver, "versions": versions}


def benchmark(shapes, kernels, configs, inner, repeats, simulated, dtype="float32") -> list[dict]:
    """One row per (shape, kernel[, config]): GFLOP/s, milliseconds, error against float64."""
    import numpy as np
    from numba import cuda

    from parallelgraph.kernels.gpu import gemm as gpu_matmul

    stream = cuda.stream()
    rng = np.random.default_rng(0)
    rows = []
    for label, (m, k, n) in shapes:
        a_host = rng.standard_normal((m, k)).astype(dtype)
        b_host = rng.standard_normal((k, n)).astype(dtype)
        a, b = cuda.to_device(a_host), cuda.to_device(b_host)
        if simulated:
            reference = a_host.astype(np.float64) @ b_host.astype(np.float64)
        else:
            import cupy

            reference = (cupy.asarray(a, cupy.float64) @ cupy.asarray(b, cupy.float64)).get()
        cases = [(name, None, build) for name, build in kernels.items()]
        cases += [("numba", config, numba_case) for config in configs]
        for name, config, build in cases:
            out = cuda.device_array((m, n), dtype)
            run = build(a, b, out, config) if config else build(a, b, out)
            seconds = time_case(run, stream, inner, repeats, simulated)
            stream.synchronize()
            used = config or gpu_matmul.matmul_config(dtype)
            slices, _ = gpu_matmul.matmul_splits(m, k, n, used)
            row = {
                "kernel": name,
                "shape": [m, k, n],
                "label": label,
                "dtype": dtype,
                "gflops": 2 * m * k * n / seconds / 1e9,
                "ms": seconds * 1e3,
                "max_rel_err": max_relative_error(out.copy_to_host(), reference),
            }
            if name == "numba":
                row["config"] = used.label() + ("" if config else " (default)")
                row["split_k"] = slices
            rows.append(row)
            print_row(row)
    return rows


def print_row(row: dict) -> None:
    config = row.get("config", "")
    split = f"split {row['split_k']}" if row.get("split_k", 1) > 1 else ""
    print(
        f"{row['label']:>8} {row['shape']!s:>20} {row['kernel']:>6} {config:>26} {split:>9}"
        f" {row['gflops']:10.1f} GFLOP/s {row['ms']:9.4f} ms  err {row['max_rel_err']:.1e}",
        flush=True,
    )


def ratios(rows: list[dict]) -> list[str]:
    """numba (default config) and blas against cupy, per shape."""
    lines = []
    for cupy_row in (r for r in rows if r["kernel"] == "cupy"):
        for row in rows:
            if row["shape"] != cupy_row["shape"]:
                continue
            share = row["gflops"] / cupy_row["gflops"]
            if row["kernel"] == "numba" and "(default)" in row["config"]:
                lines.append(f"{cupy_row['label']:>8}: numba at {share:.0%} of cuBLAS")
            elif row["kernel"] == "blas":
                lines.append(f"{cupy_row['label']:>8}: blas at {share:.1%} of CuPy's a @ b")
    return lines


def smoke() -> None:
    """Every code path on tiny shapes in the CUDA simulator, without CuPy."""
    from parallelgraph.kernels.gpu import gemm as gpu_matmul

    tiny = gpu_matmul.MatmulConfig(
        bm=8, bn=8, bk=4, tm=2, tn=2, split_target_blocks=4, split_min_slice=8
    )
    shapes = [(f"smoke{i}", shape) for i, shape in enumerate(SMOKE_SHAPES)]
    rows = benchmark(shapes, {"numba": numba_case}, [tiny], 1, 1, simulated=True)
    rows += benchmark([("narrow/64", [1, 40, 7])], {}, [tiny], 1, 1, simulated=True)
    assert any(r.get("split_k", 1) > 1 for r in rows), "the smoke run must take split-K"
    worst = max(r["max_rel_err"] for r in rows)
    assert worst < 1e-5, f"smoke: relative error {worst:.1e}"
    print("\n".join(ratios(rows)) or "(no cupy rows in the simulator)")
    with tempfile.TemporaryDirectory() as folder:
        path = write(rows, environment(simulated=True), os.path.join(folder, "smoke.json"))
        with open(path) as file:
            assert json.load(file)["rows"][0]["kernel"] == "numba"
    print(f"simulator smoke: {len(rows)} rows, every path ran, max relative error {worst:.1e}")


def write(rows: list[dict], env: dict, path: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as file:
        json.dump({**env, "rows": rows}, file, indent=1)
        file.write("\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {JSON_PATH}")
    parser.add_argument("--sweep", action="store_true", help="also time other float32 configs")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--inner", type=int, default=10, help="calls between two events")
    parser.add_argument("--simulator-smoke", action="store_true", help="tiny shapes, simulator")
    args = parser.parse_args()
    if args.simulator_smoke:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        smoke()
        return
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        sys.exit("gpu_matmul: NUMBA_ENABLE_CUDASIM=1 is set; unset it, or use --simulator-smoke")
    from numba import cuda

    if not cuda.is_available():
        sys.exit(
            "gpu_matmul: no CUDA GPU (numba.cuda.is_available() is False); try --simulator-smoke"
        )
    # Before CuPy or cuBLAS start: plain FP32 SGEMM, no TF32 tensor cores. CuPy uses TF32 only
    # with CUPY_TF32=1; NVIDIA_TF32_OVERRIDE=0 turns it off in every NVIDIA library.
    os.environ["CUPY_TF32"] = "0"
    os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    kernels = dict(KERNELS)
    try:
        import cupy  # noqa: F401
    except ImportError:
        print("CuPy is not installed: numba rows only")
        kernels.pop("cupy")
        kernels.pop("blas")
    from parallelgraph.kernels.gpu.gemm import MatmulConfig

    sweep = []
    if args.sweep:  # alternatives to the default 128x64x8/8x4
        sweep = [
            MatmulConfig(bm=128, bn=128, bk=8, tm=8, tn=8),
            MatmulConfig(bm=64, bn=64, bk=8, tm=4, tn=4),
            MatmulConfig(bm=128, bn=64, bk=16, tm=8, tn=4),
            MatmulConfig(bm=64, bn=128, bk=8, tm=4, tn=8),
        ]
    env = environment(simulated=False)
    print(f"{env['device']}, driver {env['driver']}, {env['versions']}")
    rows = benchmark(seed_shapes(), kernels, sweep, args.inner, args.repeats, simulated=False)
    print("\n".join(ratios(rows)))
    if args.write:
        print("wrote", write(rows, env, JSON_PATH))


if __name__ == "__main__":
    main()
