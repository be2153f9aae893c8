"""CPU kernels: Numba `@njit(nogil=True, cache=True)` functions over a range of output rows.

Every kernel takes its inputs, its output buffer and a row range, so one op can be split into
shards that run on several threads at once; `nogil=True` is what lets those threads run truly in
parallel, and `cache=True` keeps a fresh process from recompiling (in a read-only install, in a
user folder, or uncached: see `parallelgraph.kernels.numba_cache`). Submodules are imported on
first use (`kernels.elementwise`, ...) so that `import parallelgraph` does not import Numba, and
only a GPU path imports `kernels.gpu` (and with it numba.cuda).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .numba_cache import prepare

# Before any kernel module exists: where Numba caches them when it cannot beside this folder
# (a read-only install); os.access checks only, unless there is something to fix.
prepare()

_SUBMODULES = (
    "elementwise",
    "reduce",
    "random",
    "normal32",
    "normal64",
    "matmul",
    "blas_rows",
    "conv",
    "program",
    "shape",
    "indexing",
    "rowwise",
    "gpu",
)


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
