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
from collections.abc import Callable, Iterator
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


Count = tuple[Callable[[], int], Callable[[int], Any]]


def _direct(lib: Any) -> Count:
    """(get, set) of one library's thread count: OpenBLAS's own C functions where its pool is
    process-wide (its pthreads build: one C call each, ~0.2 us), else threadpoolctl's methods
    (an OpenMP build's count is per thread, which those handle)."""
    if getattr(lib, "internal_api", None) == "openblas" and lib.threading_layer != "openmp":
        get = lib._get_symbol("openblas_get_num_threads")
        set_ = lib._get_symbol("openblas_set_num_threads")
        if get is not None and set_ is not None:
            return get, set_
    return lib.get_num_threads, functools.partial(_set_threads, lib)


@functools.lru_cache(maxsize=1)
def _counts() -> tuple[Count, ...]:
    """(get, set) for each BLAS library loaded when first asked (as `_blas_libraries`)."""
    return tuple(_direct(lib) for lib in _blas_libraries())


class BlasThreadLimit:
    """The process-wide, reference-counted owner of the BLAS thread limit; see the module
    docstring. Thread-safe: any thread may hold and release at any time.

    A run's cost: ~5 us to hold and release in a tight loop (C calls, a weak reference for the
    owner); it was ~10 us through threadpoolctl's methods and a `weakref.finalize`, and about
    three times that inside a run, where the kernels between have pushed the Python code out of
    the caches (benchmarks/RESULTS.md, "The BLAS hold made cheaper"). A library already at one
    thread (a user's OPENBLAS_NUM_THREADS=1) is neither set nor restored.

    >>> BLAS_LIMIT.hold(owner); ...; BLAS_LIMIT.release(owner)      # doctest: +SKIP
    """

    def __init__(self) -> None:
        # Reentrant: a holder's weakref callback may run (garbage collection) inside hold().
        self._lock = threading.RLock()
        self._holders: dict[int, weakref.ref] = {}
        self._limited = False
        self._saved: list[int] = []

    def hold(self, owner: object) -> None:
        """Limit BLAS to one thread until `release(owner)` (or until `owner` is collected).
        Holding twice for one owner counts once."""
        with self._lock:
            key = id(owner)
            if key not in self._holders:
                self._holders[key] = weakref.ref(owner, lambda _, key=key: self._drop(key))
            if not self._limited:
                counts = _counts()
                self._saved = [get() for get, _ in counts]
                self._limited = True  # before changing: an interrupt then cannot lose _saved
                for (_, set_), saved in zip(counts, self._saved):
                    if saved != 1:
                        set_(1)

    def release(self, owner: object) -> None:
        """End `owner`'s hold; the last holder restores the saved counts. Idempotent."""
        with self._lock:
            # A weak reference dropped here never calls back (its referent is not collected).
            self._holders.pop(id(owner), None)
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
        for (_, set_), saved in zip(_counts(), self._saved):
            if saved != 1:
                set_(saved)
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
