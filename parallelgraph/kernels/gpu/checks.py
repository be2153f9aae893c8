"""What every GPU launcher checks once, on the host, before it builds its launches: device
arrays (a host array would make numba copy in and back synchronously), one float dtype, shapes,
scratch buffers."""

from __future__ import annotations

import numpy as np

from .launch import DeviceArray

_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def check_device(*arrays: DeviceArray) -> None:
    for array in arrays:
        if isinstance(array, np.ndarray):
            raise TypeError(
                "GPU launchers take device arrays (cuda.to_device / cuda.device_array), not "
                "host NumPy arrays: numba would copy them in and back synchronously"
            )


def check_scratch(what: str, scratch: DeviceArray, needed: int) -> None:
    """`scratch` is a 1-D float64 device array of at least `needed` elements."""
    check_device(scratch)
    if len(scratch.shape) != 1 or scratch.shape[0] < needed or scratch.dtype != np.float64:
        raise ValueError(
            f"{what} scratch must be 1-D float64 with >= {needed} elements, "
            f"got {scratch.shape} {scratch.dtype}"
        )


def check_dtype(*arrays: DeviceArray) -> np.dtype:
    dtype = np.dtype(arrays[0].dtype)
    if dtype not in _FLOAT_DTYPES or any(np.dtype(a.dtype) != dtype for a in arrays[1:]):
        names = ", ".join(str(a.dtype) for a in arrays)
        raise ValueError(f"GPU kernels need one dtype, float32 or float64; got {names}")
    return dtype


def check_shape(name: str, array: DeviceArray, shape: tuple[int, ...]) -> None:
    if tuple(array.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(array.shape)}, expected {tuple(shape)}")


def check_1d(*arrays: DeviceArray) -> None:
    shape = tuple(arrays[0].shape)
    if len(shape) != 1 or any(tuple(a.shape) != shape for a in arrays[1:]):
        raise ValueError(
            f"expected 1-D arrays of one shape, got {[tuple(a.shape) for a in arrays]}"
        )
