"""Hold the BLAS libraries to one thread while any run needs it: one process-wide owner.

The intra-op pool, not OpenBLAS, owns the parallelism of a matmul (as TensorFlow's intra-op pool
drives its contraction kernels): each shard calls BLAS on its own row block, single-threaded.
That also makes BLAS results independent of any thread count.

The BLAS thread count is process state, and several runs may be in flight at once (two
sessions used from two threads, Dask tasks on one worker). So no run sets and restores it on its
own — the second run would "restore" the first run's limit of 1, or the first would lift the
limit under the second. `BLAS_LIMIT` is the one owner: runs *hold* it and *release* it; the
first holder saves the libraries' thread counts and sets them to 1, the last one out restores
them. Holders are keyed by an owner object (a Run, a task), which makes `release` idempotent
and lets a hold whose release was skipped (an interrupt landing between two bytecodes of the
caller's cleanup) end when its owner is garbage-collected. The counts are set with idempotent
calls on threadpoolctl's per-library controllers, ordered so that an interrupt between any two
statements never loses the saved counts. Holding and releasing costs a few microseconds.

Why not `threadpoolctl.limit()` per run: since threadpoolctl 3.6, OpenBLAS's (process-wide) count
may only be changed by one "controlling" Python thread at a time; a second thread's limit is
silently ignored. Two sessions run from two threads then computed with whatever count the other
had left (different bits: OpenBLAS splits a row block among its threads), and the last one out
restored the other's limit of 1 for the rest of the process. Being the one owner of the limit,
we set the count directly (`_set_threads`).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Iterator
from typing import Any


@functools.lru_cache(maxsize=1)
def _controller():  # type: ignore[no-untyped-def]
    import numpy  # noqa: F401 - make sure numpy's BLAS is loaded before looking
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _blas_libraries() -> list[Any]:
    """threadpoolctl's controllers of the loaded BLAS libraries (found once per process)."""
    return [lib for lib in _controller().lib_controllers if lib.user_api == "blas"]


def _set_threads(lib: Any, count: int) -> None:
    """Set one library's thread count from any thread (see the module docstring: threadpoolctl's
    OpenBLAS controller would ignore calls from all but its controlling thread)."""
    getattr(lib, "_real_set_num_threads", lib.set_num_threads)(count)


class BlasThreadLimit:
    """The process-wide, reference-counted owner of the BLAS thread limit; see the module
    docstring. Thread-safe: any thread may hold and release at any time.

    >>> BLAS_LIMIT.hold(owner); ...; BLAS_LIMIT.release(owner)      # doctest: +SKIP
    """

    def __init__(self) -> None:
        # Reentrant: a holder's finalizer may run (garbage collection) inside hold().
        self._lock = threading.RLock()
        self._holders: dict[int, weakref.finalize] = {}
        self._limited = False
        self._saved: list[int] = []

    def hold(self, owner: object) -> None:
        """Limit BLAS to one thread until `release(owner)` (or until `owner` is collected).
        Holding twice for one owner counts once."""
        with self._lock:
            key = id(owner)
            if key not in self._holders:
                self._holders[key] = weakref.finalize(owner, self._drop, key)
            if not self._limited:
                libraries = _blas_libraries()
                self._saved = [lib.get_num_threads() for lib in libraries]
                self._limited = True  # before changing: an interrupt then cannot lose _saved
                for lib in libraries:
                    _set_threads(lib, 1)

    def release(self, owner: object) -> None:
        """End `owner`'s hold; the last holder restores the saved counts. Idempotent."""
        with self._lock:
            finalizer = self._holders.pop(id(owner), None)
            if finalizer is not None:
                finalizer.detach()
            self._restore_if_unheld()

    @property
    def holders(self) -> int:
        """How many owners hold the limit now."""
        return len(self._holders)

    def _drop(self, key: int) -> None:
        with self._lock:
            if self._holders.pop(key, None) is not None:
                self._restore_if_unheld()

    def _restore_if_unheld(self) -> None:
        if self._holders or not self._limited:
            return
        for lib, count in zip(_blas_libraries(), self._saved):
            _set_threads(lib, count)
        self._limited = False  # after restoring: an interrupt before it leaves a retry


BLAS_LIMIT = BlasThreadLimit()


class _Holder:
    """A private owner for one `single_threaded_blas` block."""


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Hold `BLAS_LIMIT` inside the block (nesting and concurrent blocks are fine)."""
    holder = _Holder()
    try:
        BLAS_LIMIT.hold(holder)
        yield
    finally:
        BLAS_LIMIT.release(holder)


def blas_threads() -> list[int]:
    """The loaded BLAS libraries' current thread counts (tests check they are restored)."""
    return [lib.get_num_threads() for lib in _blas_libraries()]
