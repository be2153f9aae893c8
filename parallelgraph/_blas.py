"""Hold the BLAS libraries to one thread while a session runs.

The intra-op pool, not OpenBLAS, owns the parallelism of a matmul (as TensorFlow's intra-op pool
drives its contraction kernels): each shard calls BLAS on its own row block, single-threaded.
That also makes BLAS results independent of any thread count. threadpoolctl's controller is
built once (finding the loaded libraries takes milliseconds); limiting and restoring per run
costs a few microseconds.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator


@functools.lru_cache(maxsize=1)
def _controller():  # type: ignore[no-untyped-def]
    import numpy  # noqa: F401 - make sure numpy's BLAS is loaded before looking
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Limit every loaded BLAS to one thread inside the block, then restore it."""
    with _controller().limit(limits=1, user_api="blas"):
        yield
