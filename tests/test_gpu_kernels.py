"""The numba.cuda kernels (parallelgraph.kernels.gpu) against NumPy and the CPU kernels.

Without an NVIDIA GPU these run in Numba's CUDA simulator (tests/conftest.py sets
NUMBA_ENABLE_CUDASIM=1), where every CUDA thread is a Python thread: sizes stay tiny. Every
launch goes on a stream; results are copied back after `stream.synchronize()`. Outputs start
as NaN so that an element a kernel forgets to write shows up.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import gpu_launchers as launchers
import numpy as np
import pytest
from numba import cuda

import parallelgraph as pg
from parallelgraph.kernels import gpu
from parallelgraph.kernels.gpu import gemm as gpu_matmul
from parallelgraph.kernels.normal32 import normal_rows32
from parallelgraph.kernels.normal64 import normal_rows64
from parallelgraph.ops import opdef
from parallelgraph.ops.sources import philox_normal_reference

DTYPES = [np.float32, np.float64]
TOLERANCE = {np.float32: {"rtol": 1e-5, "atol": 1e-6}, np.float64: {"rtol": 1e-12, "atol": 1e-12}}
RNG = np.random.default_rng(2024)
BIG_SEED = 0xFEDC_BA98_7654_3210  # above 2**63: both key words used, top bit set


@pytest.fixture
def stream():
    return cuda.stream()


def device(array: np.ndarray, stream) -> object:
    return cuda.to_device(np.ascontiguousarray(array), stream=stream)


def nan_output(shape: tuple[int, ...], dtype, stream) -> object:
    return cuda.to_device(np.full(shape, np.nan, dtype=dtype), stream=stream)


def result(d_out, stream) -> np.ndarray:
    stream.synchronize()
    return d_out.copy_to_host()


def random_array(shape: tuple[int, ...], dtype) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype) -> None:
    assert actual.dtype == np.dtype(dtype)
    np.testing.assert_allclose(actual, expected, equal_nan=True, **TOLERANCE[dtype])


# --- matmul ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, k, n", [(5, 7, 3), (17, 33, 9), (4, 0, 5), (32, 32, 32)])
def test_matmul_matches_numpy(stream, dtype, m, k, n):
    a, b = random_array((m, k), dtype), random_array((k, n), dtype)
    d_out = nan_output((m, n), dtype, stream)
    launchers.matmul(device(a, stream), device(b, stream), d_out, stream)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(result(d_out, stream), expected, dtype)


def test_matmul_empty_output_launches_nothing(stream):
    a, b = np.ones((0, 3), np.float32), np.ones((3, 4), np.float32)
    d_out = cuda.device_array((0, 4), np.float32, stream=stream)
    launchers.matmul(device(a, stream), device(b, stream), d_out, stream)
    assert result(d_out, stream).shape == (0, 4)


# Tiny tiles (16 threads a block) so the simulator runs many blocks and k steps quickly, with
# split-K as soon as the output has fewer than 4 tiles and k holds two slices of 8.
TINY = gpu_matmul.MatmulConfig(
    bm=8, bn=8, bk=4, tm=2, tn=2, split_target_blocks=4, split_min_slice=8
)
TINY_SHAPES = [
    (16, 8, 16),  # exact multiples of every tile: 2 x 2 blocks, 2 k steps
    (13, 11, 9),  # ragged m, k and n
    (3, 5, 20),  # m under one tile
    (20, 6, 2),  # n under one tile
    (9, 1, 10),  # k = 1
    (7, 0, 5),  # k = 0: zeros
]
SPLIT_SHAPES = [(5, 64, 6), (12, 61, 3), (3, 33, 17), (2, 36, 5)]


def run_matmul(a, b, stream, config=None, split=False) -> np.ndarray:
    """The GPU matmul of host arrays a, b (with scratch for split-K when `split`)."""
    (m, k), n = a.shape, b.shape[1]
    d_out = nan_output((m, n), a.dtype, stream)
    scratch = None
    if split:
        size = gpu_matmul.matmul_scratch_size(m, k, n, a.dtype, config)
        scratch = cuda.device_array(max(size, 1), np.float64, stream=stream)
    launches = gpu_matmul.matmul_launches(
        device(a, stream), device(b, stream), d_out, scratch, config
    )
    slices, _ = gpu_matmul.matmul_splits(m, k, n, config or gpu_matmul.matmul_config(a.dtype))
    assert len(launches) == (2 if split and slices > 1 else 1)
    gpu.run_launches(launches, stream)
    return result(d_out, stream)


def matmul_inputs(m, k, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape).astype(dtype) for shape in ((m, k), (k, n)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, k, n", TINY_SHAPES)
def test_tiled_matmul_handles_every_edge(stream, dtype, m, k, n):
    a, b = matmul_inputs(m, k, n, dtype)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(run_matmul(a, b, stream, TINY), expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, k, n", SPLIT_SHAPES)
def test_split_k_matches_numpy_and_is_deterministic(stream, dtype, m, k, n):
    slices, k_slice = gpu_matmul.matmul_splits(m, k, n, TINY)
    assert slices > 1 and k_slice % TINY.bk == 0 and (slices - 1) * k_slice < k
    a, b = matmul_inputs(m, k, n, dtype, seed=k)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    first = run_matmul(a, b, stream, TINY, split=True)
    assert_close(first, expected, dtype)
    np.testing.assert_array_equal(run_matmul(a, b, stream, TINY, split=True), first)


@pytest.mark.parametrize(
    "dtype, shape", [(np.float32, (20, 19, 70)), (np.float64, (70, 19, 20))], ids=["f32", "f64"]
)
def test_default_configs_on_several_ragged_blocks(stream, dtype, shape):
    a, b = matmul_inputs(*shape, dtype)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(run_matmul(a, b, stream), expected, dtype)


def test_default_float32_config_splits_k(stream):
    config = dataclasses.replace(gpu_matmul.matmul_config(np.float32), split_min_slice=8)
    assert gpu_matmul.matmul_splits(20, 24, 70, config) == (3, 8)
    a, b = matmul_inputs(20, 24, 70, np.float32)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(run_matmul(a, b, stream, config, split=True), expected, np.float32)


def test_split_k_rule_on_the_seed_shapes():
    f32, f64 = gpu_matmul.matmul_config(np.float32), gpu_matmul.matmul_config(np.float64)
    assert gpu_matmul.matmul_splits(32, 16384, 1024, f32) == (17, 968)  # narrow: 16 tiles
    assert gpu_matmul.matmul_splits(512, 1024, 1024, f32) == (4, 256)  # medium: 64 tiles
    assert gpu_matmul.matmul_splits(2048, 2048, 2048, f32) == (1, 2048)  # large: 512 tiles
    assert gpu_matmul.matmul_splits(512, 1024, 1024, f64) == (3, 344)
    assert gpu_matmul.matmul_splits(32, 300, 32, f32) == (1, 300)  # k too short to split
    assert gpu_matmul.matmul_scratch_size(32, 16384, 1024, np.float32) == 17 * 32 * 1024
    assert gpu_matmul.matmul_scratch_size(2048, 2048, 2048, np.float32) == 0
    assert gpu.matmul_scratch_size(32, 16384, 1024, np.float32) == 17 * 32 * 1024


def test_matmul_configs_are_checked():
    with pytest.raises(ValueError, match="multiple"):
        gpu_matmul.MatmulConfig(bm=8, bn=8, bk=4, tm=3, tn=2)
    with pytest.raises(ValueError, match="multiples of bk and bn"):
        gpu_matmul.MatmulConfig(bm=8, bn=8, bk=4, tm=4, tn=4)  # 4 threads load 8-wide rows
    assert gpu_matmul.matmul_config(np.float32).threads == 256
    assert gpu_matmul.matmul_config(np.float64).threads == 256


def test_matmul_checks_its_scratch(stream):
    a, b = matmul_inputs(5, 64, 6, np.float32)
    small = cuda.device_array(10, np.float64, stream=stream)
    d_out = nan_output((5, 6), np.float32, stream)
    with pytest.raises(ValueError, match="scratch"):
        gpu_matmul.matmul_launches(device(a, stream), device(b, stream), d_out, small, TINY)
    with pytest.raises(ValueError, match="expected"):
        launchers.matmul(
            device(a, stream), device(b, stream), nan_output((5, 7), np.float32, stream), stream
        )


def test_gpu_gemm_imports_on_its_own():
    """kernels.gpu.gemm imports first, without an import cycle through the package."""
    code = (
        "import numpy as np; "
        "from parallelgraph.kernels.gpu import gemm; from parallelgraph.kernels import gpu; "
        "assert gpu.gemm is gemm and gpu.matmul_launches is gemm.matmul_launches; "
        "assert gemm.config_kernel('float32') is gemm.config_kernel(np.float32)"
    )
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_matmul_op_splits_k_in_the_executor_scratch(monkeypatch):
    """MatMul.gpu_scratch_size asks for the partials; the cuda executor passes them back."""
    monkeypatch.setitem(gpu_matmul.CONFIGS, np.dtype(np.float32), TINY)
    launched = []
    real_call = gpu.Launch.__call__

    def spy(self, stream):
        launched.append(self.kernel)
        real_call(self, stream)

    monkeypatch.setattr(gpu.Launch, "__call__", spy)
    g = pg.Graph("split-k")
    with g.as_default(), pg.device("gpu:0"):
        x = pg.random_normal((5, 64), seed=1)
        w = pg.random_normal((64, 6), seed=2)
        y = pg.matmul(x, w)
    with pg.Session(g, pg.Config(streams=1)) as sess:
        xv, wv, yv = sess.run([x, w, y])
    assert gpu_matmul._sum_slices_kernel in launched
    assert_close(yv, xv.astype(np.float64) @ wv.astype(np.float64), np.float32)


# --- add, multiply ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "multiply"])
@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((13, 37), (13, 37)),
        ((13, 37), (37,)),
        ((13, 37), (1,)),
        ((37,), (13, 37)),
        ((13, 1), (1, 37)),
        ((2, 1, 5), (3, 1)),
    ],
    ids=["same", "bias", "scalar", "left-bias", "outer", "3-d"],
)
def test_binary_ops_broadcast_like_numpy(stream, dtype, op, a_shape, b_shape):
    a, b = random_array(a_shape, dtype), random_array(b_shape, dtype)
    expected = getattr(np, op)(a.astype(np.float64), b.astype(np.float64))
    d_out = nan_output(expected.shape, dtype, stream)
    launchers.elementwise(op, [device(a, stream), device(b, stream)], d_out, stream)
    assert_close(result(d_out, stream), expected, dtype)


# --- relu, tanh, exp, sigmoid, accumulate ----------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_relu_keeps_nan_and_zeroes_negatives(stream, dtype):
    x = random_array(301, dtype)
    x[:6] = [np.nan, -np.inf, np.inf, -0.0, 0.0, -1e-30]
    d_out = nan_output(x.shape, dtype, stream)
    launchers.elementwise("relu", [device(x, stream)], d_out, stream)
    out = result(d_out, stream)
    assert np.isnan(out[0]) and out[1] == 0 and out[2] == np.inf and out[5] == 0
    assert_close(out, np.maximum(x.astype(np.float64), 0), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["tanh", "exp", "sigmoid"])
def test_vector_math_matches_numpy(stream, name, dtype):
    """tanh, exp and sigmoid against their float64 references, far tails included (sigmoid's
    negative tail is e**x, not 0)."""
    x = random_array(300, dtype) * 4
    x[:5] = [30.0, -30.0, 0.0, 60.0, -60.0]
    d_out = nan_output(x.shape, dtype, stream)
    launchers.elementwise(name, [device(x, stream)], d_out, stream)
    expected = opdef(name).entry.reference(x.astype(np.float64))
    assert_close(result(d_out, stream), expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_then_accumulate_folds_add_n_in_order(stream, dtype):
    terms = [random_array((7, 19), dtype) for _ in range(4)]
    d_terms = [device(t, stream) for t in terms]
    d_out = nan_output((7, 19), dtype, stream)
    launchers.elementwise("add", d_terms[:2], d_out, stream)
    for d_term in d_terms[2:]:  # in place, as AddN's launches fold
        launchers.elementwise("add", [d_out, d_term], d_out, stream)
    expected = terms[0].copy()
    for term in terms[1:]:
        expected = expected + term  # the CPU fold, in the dtype
    np.testing.assert_array_equal(result(d_out, stream), expected)


def test_elementwise_launchers_reject_host_arrays(stream):
    x = np.ones(8, np.float32)
    with pytest.raises(TypeError, match="device arrays"):
        launchers.elementwise("relu", [x], nan_output((8,), np.float32, stream), stream)


# --- reduce_sum ------------------------------------------------------------------------------

REDUCE_SHAPES = [(3, 5, 4), (1, 300, 1), (1, 257, 3), (2, 0, 3), (4, 9, 1), (1, 1, 6)]


def reduce_reference(x: np.ndarray, mean: bool) -> np.ndarray:
    x64 = x.astype(np.float64)
    if not mean:
        return x64.sum(axis=1)
    if x.shape[1] == 0:
        return np.full((x.shape[0], x.shape[2]), np.nan)
    return x64.mean(axis=1)


def run_reduce(x: np.ndarray, mean: bool, stream, use_scratch: bool) -> np.ndarray:
    outer, length, inner = x.shape
    d_out = nan_output((outer, inner), x.dtype, stream)
    scratch = None
    if use_scratch:
        size = max(1, gpu.reduce_scratch_size(outer, length, inner))
        scratch = cuda.device_array(size, np.float64, stream=stream)
    launchers.reduce_sum(device(x, stream), d_out, stream, mean=mean, scratch=scratch)
    return result(d_out, stream)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", REDUCE_SHAPES, ids=[str(s) for s in REDUCE_SHAPES])
@pytest.mark.parametrize("mean", [False, True], ids=["sum", "mean"])
def test_reduce_sum_and_mean_match_numpy(stream, dtype, shape, mean):
    x = random_array(shape, dtype)
    expected = reduce_reference(x, mean)
    assert_close(run_reduce(x, mean, stream, use_scratch=False), expected, dtype)
    if gpu.reduce_scratch_size(*shape):  # the two-pass path (otherwise scratch is unused)
        assert_close(run_reduce(x, mean, stream, use_scratch=True), expected, dtype)


def test_reduce_uses_two_passes_only_for_few_outputs_on_a_long_axis():
    assert gpu.reduce_chunks(1, 300, 1) == 300 // gpu.REDUCE_MIN_SLICE
    assert gpu.reduce_scratch_size(1, 257, 3) == 3 * 4
    assert gpu.reduce_chunks(1, 10**8, 1) == gpu.REDUCE_MAX_CHUNKS
    assert gpu.reduce_chunks(3, 5, 4) == 1  # short axis
    assert gpu.reduce_chunks(1000, 10**4, 100) == 1  # enough outputs for one pass
    assert gpu.reduce_scratch_size(3, 5, 4) == 0


def test_reduce_with_scratch_is_deterministic_and_checks_its_size(stream):
    x = random_array((1, 300, 1), np.float32)
    first = run_reduce(x, False, stream, use_scratch=True)
    second = run_reduce(x, False, stream, use_scratch=True)
    np.testing.assert_array_equal(first, second)
    small = cuda.device_array(2, np.float64, stream=stream)
    with pytest.raises(ValueError, match="scratch"):
        launchers.reduce_sum(
            device(x, stream), nan_output((1, 1), x.dtype, stream), stream, False, small
        )


# --- random_normal ---------------------------------------------------------------------------


def gpu_normals(count: int, seed: int, dtype, stream, mean=0.0, stddev=1.0) -> np.ndarray:
    d_out = nan_output((count,), dtype, stream)
    launchers.random_normal(d_out, seed, mean, stddev, stream)
    return result(d_out, stream)


def cpu_normals(count: int, seed: int, dtype, mean=0.0, stddev=1.0) -> np.ndarray:
    """What the CPU op computes: the vectorized kernel of the dtype."""
    out = np.full((1, count), np.nan, dtype=dtype)
    kernel = normal_rows32 if np.dtype(dtype) == np.float32 else normal_rows64
    kernel(out, np.uint64(seed & 0xFFFF_FFFF_FFFF_FFFF), mean, stddev, 0, 1)
    return out.reshape(-1)


# float32 uniforms (w + 0.5) * 2**-24 round in float32 on the GPU and the CPU kernel, not in
# the float64 reference: for u1 a few ulp below 1 the radius differs most (CPU kernel against
# the reference: at most 1.3e-5 over 4M numbers, 3 beyond this tolerance; none in these counts).
# GPU (simulator, libm) against the CPU's vectorized kernels, whose log/sin/cos are their own
# polynomials: at most 1.3e-6 in float32 (2.4e-7 against the libm kernel kernels.random); in
# float64 1.9e-15 (bit-equal to the libm kernel, but the op no longer runs that one).
RANDOM_TOLERANCE = {np.float32: {"rtol": 1e-5, "atol": 1e-5}, np.float64: TOLERANCE[np.float64]}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "count, seed", [(1, 0), (7, 1), (1001, BIG_SEED), (2050, 2**64 - 1), (6, -5)]
)
def test_random_normal_matches_the_reference_and_the_cpu_kernel(stream, dtype, count, seed):
    bits = 24 if dtype == np.float32 else 32
    out = gpu_normals(count, seed, dtype, stream)
    assert out.dtype == np.dtype(dtype) and not np.isnan(out).any()
    np.testing.assert_allclose(
        out, philox_normal_reference(count, seed, bits), **RANDOM_TOLERANCE[dtype]
    )
    np.testing.assert_allclose(out, cpu_normals(count, seed, dtype), **RANDOM_TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_random_normal_applies_mean_and_stddev_like_the_cpu(stream, dtype):
    out = gpu_normals(203, BIG_SEED, dtype, stream, mean=1.5, stddev=2.0)
    np.testing.assert_allclose(
        out, cpu_normals(203, BIG_SEED, dtype, 1.5, 2.0), **RANDOM_TOLERANCE[dtype]
    )
    prefix = gpu_normals(101, BIG_SEED, dtype, stream, mean=1.5, stddev=2.0)
    np.testing.assert_array_equal(prefix, out[:101])  # element j depends on (seed, j) only


def test_launch_config_covers_every_item():
    assert gpu.launch_config(0) == (0, gpu.ELEMENTWISE_THREADS)
    assert gpu.launch_config(1) == (1, 256)
    assert gpu.launch_config(256) == (1, 256)
    assert gpu.launch_config(257) == (2, 256)
