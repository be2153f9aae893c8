"""cuBLAS matmul on the GPU, through CuPy: `Config(matmul_kernel="blas")` on gpu:0.

TensorFlow and PyTorch run a GPU matmul through cuBLAS; so does parallelgraph's "blas" kernel,
so that what a stream experiment shows on the GPU transfers to them. `BlasMatmul` is a launch
like `kernels.gpu.Launch`: built once per plan step, called with the step's numba stream on
every run. Building wraps the plan's own device buffers as CuPy arrays (the CUDA array
interface: no copy, no allocation); calling enqueues `cupy.matmul(a, b, out=out)` on that very
stream (`cupy.cuda.ExternalStream` of the numba stream's handle, made once per stream), so the
executor's events order it like any other kernel and time it where it ran. FP32 stays FP32:
CuPy uses TF32 only when `CUPY_TF32=1` is set.

Where CuPy cannot run cuBLAS (not installed, no usable GPU, the CUDA simulator), the plan says
why in its notes (`cublas_problem`) and the GPU matmuls run the numba kernel
(`kernels.gpu.gemm`).
"""

from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=1)
def cublas_problem() -> str | None:
    """None when CuPy can run cuBLAS on this machine's GPU; otherwise why not, in a few words."""
    from numba import config

    if config.ENABLE_CUDASIM:
        return "the CUDA simulator has no cuBLAS"
    try:
        import cupy
    except Exception as problem:  # noqa: BLE001 - not installed, or a broken install
        return f"CuPy cannot be imported ({type(problem).__name__}: install cupy-cuda12x or 13x)"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "CuPy sees no GPU"
    except Exception as problem:  # noqa: BLE001 - a driver/runtime mismatch, no device
        return f"CuPy cannot use the GPU ({type(problem).__name__}: {problem})"
    return None


class BlasMatmul:
    """out = a @ b by cuBLAS on the stream it is called with (see the module docstring)."""

    __slots__ = ("_matmul", "_stream_class", "_streams", "a", "b", "out")

    def __init__(self, a: Any, b: Any, out: Any):
        import cupy

        # Views of the numba device arrays (they keep them alive); nothing is copied.
        self.a, self.b, self.out = cupy.asarray(a), cupy.asarray(b), cupy.asarray(out)
        self._matmul, self._stream_class = cupy.matmul, cupy.cuda.ExternalStream
        self._streams: dict[int, Any] = {}

    def __call__(self, stream: Any) -> None:
        pointer = int(stream)  # a numba Stream's handle
        external = self._streams.get(pointer)
        if external is None:
            external = self._streams[pointer] = self._stream_class(pointer)
        with external:
            self._matmul(self.a, self.b, out=self.out)

    def __repr__(self) -> str:
        return f"BlasMatmul({tuple(self.a.shape)} @ {tuple(self.b.shape)})"


def kernel_for(requested: str) -> str:
    """The GPU matmul kernel that runs for `Config.matmul_kernel`: "blas" only where cuBLAS can
    run (`cublas_problem`), else "numba"."""
    return "blas" if requested == "blas" and cublas_problem() is None else "numba"


def matmul_launches(a: Any, b: Any, out: Any) -> list[Any]:
    """The launches of out = a @ b by cuBLAS (shapes checked as the numba kernel checks them)."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul needs [m, k] @ [k, n], got {a.shape} @ {b.shape}")
    if tuple(out.shape) != (a.shape[0], b.shape[1]):
        raise ValueError(f"matmul out has shape {out.shape}, expected {(a.shape[0], b.shape[1])}")
    return [BlasMatmul(a, b, out)]
