"""conv2d on ResNet/Inception-like shapes: parallelgraph (BLAS and Numba matmul kernels) against
a NumPy im2col + matmul and, when importable, PyTorch's CPU conv2d; float32, medians.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/conv.py [--repeats 7] [--quick]

For each shape and thread count (1, then 2), the cases run round-robin (drift hits all alike),
each after a warm-up call; NumPy runs on its own after them, then the script sleeps 0.3 s
(OpenBLAS's idle threads spin for a while after a call with 2 threads and would take a core
from whatever runs next). The table shows GFLOP/s of the median time (2 * N * OH * OW * C_out
* kh * kw * C_in / groups per run):

* pg blas / pg numba -- `pg.conv2d` (NHWC) through a Session with intra-op threads 1 or 2 and
  `Config(matmul_kernel="blas" | "numba")`, the wall time of `session.run` (x fed, filters a
  constant);
* numpy -- an im2col (`sliding_window_view` of the padded input, copied) times the filter
  matrix, NumPy's BLAS limited to that many threads (threadpoolctl);
* torch -- ``torch.nn.functional.conv2d`` on NCHW tensors (PyTorch's default layout) under
  ``torch.inference_mode``, ``torch.set_num_threads(1 | 2)``; "torch not installed" without it.

The last column is pg blas's speed as a fraction of torch's (the issue's target: >= 0.5 at one
thread), and "x2" columns give each engine's speed-up from 1 to 2 threads. The machine's CPU
and its SIMD flags are printed first: PyTorch's oneDNN uses AVX-512 (and AMX for bf16 only)
where the CPU has it.

A second table (``--layouts`` alone) compares the data formats on the shapes of small ONNX
image models (batch 16, 32x32x32; ONNX is NCHW): milliseconds of one `session.run` at one
intra-op thread for conv2d, max_pool2d and avg_pool2d in NHWC and NCHW, conv2d with both matmul
kernels (pools and depthwise convs have none), and, when importable, ONNX Runtime's Conv,
MaxPool and AveragePool (NCHW) at one thread. All cases of a shape run round-robin.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # torch's idle threads must not spin

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import blas_description, interleaved, median, table
from threadpoolctl import threadpool_limits

import parallelgraph as pg

# (name, (N, H, W, C_in), (kh, kw, C_out), strides, padding, groups)
SHAPES = [
    ("res 56x56x64 3x3", (8, 56, 56, 64), (3, 3, 64), 1, "SAME", 1),
    ("res 28x28x128 3x3", (8, 28, 28, 128), (3, 3, 128), 1, "SAME", 1),
    ("res 56x56x64 1x1 ->256", (8, 56, 56, 64), (1, 1, 256), 1, "VALID", 1),
    ("res 28x28x512 1x1 s2 ->256", (8, 28, 28, 512), (1, 1, 256), 2, "VALID", 1),
    ("res 14x14x256 3x3", (8, 14, 14, 256), (3, 3, 256), 1, "SAME", 1),
    ("incep 28x28x32 5x5 ->64", (8, 28, 28, 32), (5, 5, 64), 1, "SAME", 1),
    ("mobile 56x56x64 dw 3x3", (8, 56, 56, 64), (3, 3, 64), 1, "SAME", 64),
]
QUICK = {"res 56x56x64 3x3", "res 56x56x64 1x1 ->256", "incep 28x28x32 5x5 ->64"}
# the layout table: (name, op, (N, H, W, C), (kh, kw, C_out) or pool window, stride, padding,
# groups)
LAYOUT_SHAPES = [
    ("conv 5x5 ->32", "conv2d", (16, 32, 32, 32), (5, 5, 32), 1, "SAME", 1),
    ("conv 3x3 ->32", "conv2d", (16, 32, 32, 32), (3, 3, 32), 1, "SAME", 1),
    ("conv 3x3 s2 ->64", "conv2d", (16, 32, 32, 32), (3, 3, 64), 2, "SAME", 1),
    ("conv 1x1 ->32", "conv2d", (16, 32, 32, 32), (1, 1, 32), 1, "VALID", 1),
    ("conv 1x1 ->128", "conv2d", (16, 32, 32, 32), (1, 1, 128), 1, "VALID", 1),
    ("depthwise 3x3", "conv2d", (16, 32, 32, 32), (3, 3, 32), 1, "SAME", 32),
    ("depthwise 3x3 s2", "conv2d", (16, 32, 32, 32), (3, 3, 32), 2, "SAME", 32),
    ("max_pool 3x3 s1", "max_pool2d", (16, 32, 32, 32), (3, 3), 1, "SAME", 1),
    ("max_pool 3x3 s2", "max_pool2d", (16, 32, 32, 32), (3, 3), 2, "SAME", 1),
    ("avg_pool 3x3 s1", "avg_pool2d", (16, 32, 32, 32), (3, 3), 1, "SAME", 1),
]


def cpu_description() -> str:
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown CPU":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    simd = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")]
    shown = ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in simd)
    return f"{model}; {os.cpu_count()} cores; {shown}"


def torch_module():
    try:
        import torch
    except ImportError:
        return None
    return torch


def numpy_conv(x: np.ndarray, filters: np.ndarray, stride: int, padding: str) -> np.ndarray:
    """im2col + matmul in NumPy (groups 1): the reference the issue names."""
    n, h, w, c = x.shape
    kh, kw, _, co = filters.shape
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
        ph, pw = max((oh - 1) * stride + kh - h, 0), max((ow - 1) * stride + kw - w, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))
    windows = windows[:, ::stride, ::stride]  # (n, oh, ow, c, kh, kw)
    oh, ow = windows.shape[1:3]
    patches = np.ascontiguousarray(windows.transpose(0, 1, 2, 4, 5, 3)).reshape(-1, kh * kw * c)
    return (patches @ filters.reshape(-1, co)).reshape(n, oh, ow, co)


def numpy_case(x, filters, stride, padding, threads):
    def run():
        with threadpool_limits(threads, user_api="blas"):
            numpy_conv(x, filters, stride, padding)

    return run


def session_case(x, filters, stride, padding, groups, threads, kernel):
    graph = pg.Graph("conv")
    with graph.as_default():
        feed = pg.placeholder(x.shape, "float32")
        y = pg.conv2d(feed, filters, strides=stride, padding=padding, groups=groups)
    config = pg.Config(inter_op_threads=1, intra_op_threads=threads, matmul_kernel=kernel)
    session = pg.Session(graph, config)
    session.run(y, {feed: x})  # the plan, the first compile or cache load
    return session, (lambda: session.run(y, {feed: x})), y.shape


def torch_case(torch, x, filters, stride, padding, groups):
    tx = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    tw = torch.from_numpy(np.ascontiguousarray(filters.transpose(3, 2, 0, 1)))
    pad = "same" if padding == "SAME" and stride == 1 else 0
    if padding == "SAME" and stride != 1:
        pad = filters.shape[0] // 2

    def run():
        with torch.inference_mode():
            torch.nn.functional.conv2d(tx, tw, stride=stride, padding=pad, groups=groups)

    return run


# -- NCHW against NHWC ------------------------------------------------------------------------
def same_pads(size: int, k: int, stride: int) -> tuple[int, int]:
    """TensorFlow's SAME padding (before, after) along one axis."""
    total = max((-(-size // stride) - 1) * stride + k - size, 0)
    return total // 2, total - total // 2


def layout_case(op, x_nhwc, window, stride, padding, groups, nchw, kernel, threads):
    """A session running `op` on x (fed in the layout), one thread; returns (session, run)."""
    x = np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2)) if nchw else x_nhwc
    fmt = "NCHW" if nchw else "NHWC"
    graph = pg.Graph("layout")
    with graph.as_default():
        feed = pg.placeholder(x.shape, "float32")
        if op == "conv2d":
            kh, kw, co = window
            rng = np.random.default_rng(1)
            cig = x_nhwc.shape[3] // groups
            filters = rng.standard_normal((kh, kw, cig, co)).astype(np.float32)
            y = pg.conv2d(feed, filters, stride, padding, groups=groups, data_format=fmt)
        else:
            pool = pg.max_pool2d if op == "max_pool2d" else pg.avg_pool2d
            y = pool(feed, window, stride, padding, data_format=fmt)
    config = pg.Config(inter_op_threads=1, intra_op_threads=threads, matmul_kernel=kernel)
    session = pg.Session(graph, config)
    session.run(y, {feed: x})
    return session, lambda: session.run(y, {feed: x})


def ort_layout_case(op, x_nhwc, window, stride, padding, groups, threads):
    """ONNX Runtime running the same op on NCHW x, or None without onnx/onnxruntime."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    x = np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))
    kh, kw = window[:2]
    h, w = x.shape[2:]
    (pt, pb), (pl, pr) = (
        (same_pads(h, kh, stride), same_pads(w, kw, stride)) if padding == "SAME" else ((0, 0),) * 2
    )
    attrs = dict(kernel_shape=[kh, kw], strides=[stride] * 2, pads=[pt, pl, pb, pr])
    inits, inputs = [], ["x"]
    if op == "conv2d":
        rng = np.random.default_rng(1)
        cig = x.shape[1] // groups
        weights = rng.standard_normal((window[2], cig, kh, kw)).astype(np.float32)
        inits.append(numpy_helper.from_array(weights, "w"))
        inputs.append("w")
        node = helper.make_node("Conv", inputs, ["y"], group=groups, **attrs)
    elif op == "max_pool2d":
        node = helper.make_node("MaxPool", inputs, ["y"], **attrs)
    else:  # the mean over the input positions only, as pg.avg_pool2d
        node = helper.make_node("AveragePool", inputs, ["y"], count_include_pad=0, **attrs)
    graph = helper.make_graph(
        [node], "layout", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return lambda: session.run(None, {"x": x})


def layout_table(repeats: int, threads: int) -> None:
    print(f"\nNHWC and NCHW, ms of one run at {threads} intra-op thread(s); median of {repeats}:")
    rng = np.random.default_rng(0)
    rows = []
    for name, op, x_shape, window, stride, padding, groups in LAYOUT_SHAPES:
        x = rng.standard_normal(x_shape).astype(np.float32)
        cases, sessions = {}, []
        for nchw in (False, True):
            # pools and depthwise convs have one kernel (no matmul)
            for kernel in ("blas", "numba") if op == "conv2d" and groups == 1 else ("blas",):
                key = f"{'NCHW' if nchw else 'NHWC'} {kernel}"
                session, cases[key] = layout_case(
                    op, x, window, stride, padding, groups, nchw, kernel, threads
                )
                sessions.append(session)
        ort_run = ort_layout_case(op, x, window, stride, padding, groups, threads)
        if ort_run is not None:
            cases["ort"] = ort_run
        times = interleaved(cases, repeats)
        for session in sessions:
            session.close()
        ms = {key: 1e3 * median(values) for key, values in times.items()}
        columns = ["NHWC blas", "NHWC numba", "NCHW blas", "NCHW numba", "ort"]
        row = [name] + [f"{ms[c]:.2f}" if c in ms else "-" for c in columns]
        row.append(f"{ms['NCHW blas'] / ms['NHWC blas']:.2f}")
        rows.append(row)
        print(f"  {name}: done", file=sys.stderr)
    header = ["op (N=16, 32x32x32)", "NHWC blas", "NHWC numba", "NCHW blas", "NCHW numba"]
    print(table([*header, "ort (NCHW)", "NCHW/NHWC blas"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="three shapes, 3 repeats")
    parser.add_argument("--layouts", action="store_true", help="only the NHWC/NCHW table")
    parser.add_argument("--threads", type=int, default=1, help="of the NHWC/NCHW table")
    args = parser.parse_args()
    repeats = 3 if args.quick else args.repeats
    torch = torch_module()
    print(f"CPU: {cpu_description()}")
    print(f"BLAS: {blas_description()}")
    if args.layouts:
        layout_table(max(repeats, 5) * 3, args.threads)
        return
    print(f"torch: {torch.__version__ if torch else 'torch not installed'}")
    print(f"float32, NHWC for parallelgraph and NumPy, NCHW for torch; median of {repeats}")
    rng = np.random.default_rng(0)
    rows = []
    for name, x_shape, (kh, kw, co), stride, padding, groups in SHAPES:
        if args.quick and name not in QUICK:
            continue
        x = rng.standard_normal(x_shape).astype(np.float32)
        filters = rng.standard_normal((kh, kw, x_shape[3] // groups, co)).astype(np.float32)
        row, speed = [name], {}
        for threads in (1, 2):
            cases, sessions = {}, []
            for kernel in ("blas", "numba"):
                case = session_case(x, filters, stride, padding, groups, threads, kernel)
                session, cases[f"pg {kernel}"], (_, out_h, out_w, _) = case
                sessions.append(session)
            if torch is not None:
                torch_run = torch_case(torch, x, filters, stride, padding, groups)

                def torch_timed(threads=threads, torch_run=torch_run):
                    torch.set_num_threads(threads)
                    torch_run()

                cases["torch"] = torch_timed
            times = interleaved(cases, repeats)
            if groups == 1:  # on its own, last: OpenBLAS's threads spin after a call
                numpy_run = {"numpy": numpy_case(x, filters, stride, padding, threads)}
                times.update(interleaved(numpy_run, repeats))
                time.sleep(0.3)
            for session in sessions:
                session.close()
            flops = 2 * x_shape[0] * out_h * out_w * co * kh * kw * x_shape[3] // groups
            for case, values in times.items():
                speed[(case, threads)] = flops / median(values) / 1e9
        for case in ("pg blas", "pg numba", "numpy", "torch"):
            for threads in (1, 2):
                gflops = speed.get((case, threads))
                row.append("-" if gflops is None else f"{gflops:.0f}")
        ratio = [speed.get(("pg blas", t), 0) / speed[("torch", t)] for t in (1, 2) if torch]
        scale = speed[("pg blas", 2)] / speed[("pg blas", 1)]
        row += [f"{scale:.2f}", " / ".join(f"{r:.2f}" for r in ratio) or "-"]
        rows.append(row)
        print(f"  {name}: done", file=sys.stderr)
    header = ["shape (N=8)", "pg blas 1", "2", "pg numba 1", "2", "numpy 1", "2", "torch 1", "2"]
    print("GFLOP/s by engine and threads (1, 2):")
    print(table([*header, "pg blas x2", "pg blas/torch 1 / 2"], rows))
    layout_table(max(repeats, 5) * 3, args.threads)


if __name__ == "__main__":
    main()
