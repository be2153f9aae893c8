"""`Launch`: one kernel with everything fixed, replayed without numba's per-call cost.

The cuda executor allocates a plan's buffers once, so a step's kernels see the same arrays on
every run and their launches can be built once and replayed. Numba's own launch path
(``kernel[grid, block, stream](*args)``) types every argument and converts each array to kernel
parameters on every call, which on an H200's host costs more than many of the kernels take
(benchmarks/RESULTS.md, "GPU streams": one launch through numba against prepared). A `Launch`
does that work once: its first call goes through numba (which compiles and launches), a hook
captures the compiled kernel, and later calls hand the converted parameters straight to
``cuda.core.launch`` (`DIRECT_LAUNCH`; in the CUDA simulator, or if numba's internals ever
change shape, every call simply goes through numba).
"""

from __future__ import annotations

import weakref
from typing import Any, TypeAlias

import numpy as np

if not hasattr(np, "row_stack"):  # pragma: no cover - NumPy >= 2.5 only
    # numba-cuda 0.30.4 registers an overload for np.row_stack when it compiles its first
    # kernel; NumPy 2.5 removed that alias of vstack, and the compile then fails. Every kernel
    # module imports this one before it defines a kernel, so the alias is back in time; it is
    # set only where NumPy lacks it, and only once a GPU path is used.
    np.row_stack = np.vstack

DeviceArray: TypeAlias = Any
"""A numba device array (`DeviceNDArray`, or the simulator's stand-in)."""
Stream: TypeAlias = Any
"""A numba stream (`cuda.stream()`), or anything numba accepts as a launch stream."""

ELEMENTWISE_THREADS = 256
"""Threads per block of every 1-D kernel."""
#: The most blocks a grid may have along y.
MAX_GRID_Y = 65535

DIRECT_LAUNCH = True
"""Replay prepared launches through ``cuda.core.launch`` (True) or always through numba."""


class Launch:
    """One kernel with its grid, block and arguments fixed; ``launch(stream)`` enqueues it.

    The first call goes through numba's dispatcher (compiling if needed). With `DIRECT_LAUNCH`
    on a real GPU, that call also captures the compiled kernel (numba's pre-launch hook) and
    converts the arguments to kernel parameters once; later calls pass them straight to
    ``cuda.core.launch``. The arguments (device arrays) are kept alive by this object.
    """

    __slots__ = ("_direct", "args", "block", "grid", "kernel")

    def __init__(self, kernel: Any, grid: Any, block: Any, args: tuple[Any, ...]):
        self.kernel, self.grid, self.block, self.args = kernel, grid, block, args
        # None: not prepared yet; False: numba launches it every time; else: the direct launcher
        self._direct: Any = None

    def __call__(self, stream: Stream) -> None:
        direct = self._direct
        if direct:
            direct(stream)
            return
        configured = self.kernel[self.grid, self.block, stream]
        captured: list[Any] = []
        hooks = getattr(configured, "pre_launch_callbacks", None)
        if DIRECT_LAUNCH and direct is None and hooks is not None:  # no hooks in the simulator
            hooks.append(lambda kernel, _config: captured.append(kernel))
        configured(*self.args)
        if captured:
            self._direct = _direct_launcher(captured[0], configured, self.args) or False

    def __repr__(self) -> str:
        name = getattr(self.kernel, "__name__", None) or getattr(self.kernel, "py_func", "?")
        return f"Launch({name}, grid={self.grid}, block={self.block})"


class DeviceCopy:
    """A device-to-device copy, enqueued like a `Launch` (add_n of a single term)."""

    __slots__ = ("source", "target")

    def __init__(self, source: DeviceArray, target: DeviceArray):
        self.source, self.target = source, target

    def __call__(self, stream: Stream) -> None:
        self.target.copy_to_device(self.source, stream=stream)


def run_launches(launches: list[Any], stream: Stream) -> None:
    """Enqueue `launches` on `stream`, in order."""
    for launch in launches:
        launch(stream)


_core_streams: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _direct_launcher(kernel: Any, configured: Any, args: tuple[Any, ...]) -> Any:
    """A function(stream) that launches the compiled `kernel` with `args` through cuda.core,
    or None when numba's internals are not the expected ones (then numba launches every time).
    """
    try:
        from cuda.core import LaunchConfig
        from cuda.core import launch as core_launch
        from numba.cuda._compat import CUDA_CORE_GE_1_0
        from numba.cuda.cudadrv.driver import _to_core_stream

        if getattr(kernel, "debug", False) or getattr(kernel, "extensions", None):
            return None
        parameters: list[Any] = []
        for argument_type, value in zip(kernel.argument_types, args, strict=True):
            kernel._prepare_args(argument_type, value, 0, [], parameters)
        cooperative = {"is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch": False}
        config = LaunchConfig(
            grid=configured.griddim,
            block=configured.blockdim,
            shmem_size=configured.sharedmem,
            **cooperative,
        )
        function = kernel._codelibrary.get_cufunc().kernel
    except Exception:  # noqa: BLE001 - any surprise: keep numba's own launch path
        return None

    def launch(stream: Stream) -> None:
        core_stream = _core_streams.get(stream)
        if core_stream is None:
            core_stream = _core_streams[stream] = _to_core_stream(stream)
        core_launch(core_stream, config, function, *parameters)

    return launch


def launch_config(n: int, threads: int = ELEMENTWISE_THREADS) -> tuple[int, int]:
    """(blocks, threads per block) for a 1-D kernel with one thread per item of `n`."""
    return (n + threads - 1) // threads, threads
