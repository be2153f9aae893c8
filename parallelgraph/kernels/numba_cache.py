"""Where Numba caches our compiled kernels, when it cannot cache next to the package.

The kernels are `@njit(cache=True)`: Numba keeps their machine code in `__pycache__` beside
`parallelgraph/kernels/`, else in its user-wide folder (`~/.cache/numba`). In a read-only install
(a container image, a shared site-packages) with no writable home either, every kernel raised
Numba's "cannot cache function ...: no locator available" when its module was imported. So,
before any kernel module is imported (`parallelgraph.kernels` calls `prepare()`):

1. when NUMBA_CACHE_DIR is not set and the kernels' folder is not writable, the cache goes to a
   user folder of ours: `$XDG_CACHE_HOME/parallelgraph/numba` (or `~/.cache/...`), else
   `<tempdir>/parallelgraph-numba-<uid>` (made 0700), the first that is writable; it is set as
   NUMBA_CACHE_DIR, so Dask workers started from this process use it too;
2. when none is writable (or NUMBA_CACHE_DIR names a folder that is not), kernels run
   uncached: a kernel whose cache Numba cannot place is compiled in each process instead of
   failing (`numba.core.dispatcher.Dispatcher.enable_caching` falls back to no cache, only on
   "no locator available").

Either way it is said once per process (a RuntimeWarning). The checks are `os.access` calls
and, only in case 1, creating the folder: nothing is written in a normal install.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings

KERNELS = os.path.dirname(os.path.abspath(__file__))  # this module lives among the kernels
#: What `prepare()` decided: "in-tree" (Numba's own places), "user" (NUMBA_CACHE_DIR set by
#: the user, or by us: `folder`), or "uncached".
state = {"mode": None, "folder": None}


def _writable_folder(path: str) -> bool:
    return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)


def _can_create_in(path: str) -> bool:
    """`path` is a writable folder, or does not exist and its nearest existing parent is."""
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
    return _writable_folder(path)


def in_tree_writable(kernels: str = KERNELS) -> bool:
    """Whether Numba can cache beside the kernels' sources (their `__pycache__`)."""
    return _can_create_in(os.path.join(kernels, "__pycache__"))


def _candidates() -> list[str]:
    home_cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return [
        os.path.join(home_cache, "parallelgraph", "numba"),
        os.path.join(tempfile.gettempdir(), f"parallelgraph-numba-{uid}"),
    ]


def _make(folder: str) -> bool:
    if not _can_create_in(folder):
        return False
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    return _writable_folder(folder)


def _set_cache_dir(folder: str) -> None:
    os.environ["NUMBA_CACHE_DIR"] = folder
    if "numba" in sys.modules:  # numba read its environment already
        from numba import config

        config.CACHE_DIR = folder


def _run_uncached() -> None:
    """Kernels whose cache Numba cannot place compile in each process instead of failing."""
    from numba.core import dispatcher

    original = dispatcher.Dispatcher.enable_caching
    if getattr(original, "_parallelgraph_uncached", False):
        return

    def enable_caching(self):
        try:
            original(self)
        except RuntimeError as problem:
            if "no locator available" not in str(problem):
                raise

    enable_caching._parallelgraph_uncached = True  # type: ignore[attr-defined]
    dispatcher.Dispatcher.enable_caching = enable_caching


def _say(message: str) -> None:
    warnings.warn(f"parallelgraph: {message}", RuntimeWarning, stacklevel=3)


def prepare(kernels: str = KERNELS) -> str:
    """Decide where compiled kernels are cached (see the module docstring), once per process;
    returns the mode ("in-tree", "user" or "uncached")."""
    if state["mode"] is not None:
        return state["mode"]
    given = os.environ.get("NUMBA_CACHE_DIR", "").strip()
    if given:
        if _make(given):
            state.update(mode="user", folder=given)
        else:
            state.update(mode="uncached")
            _run_uncached()
            _say(
                f"NUMBA_CACHE_DIR={given!r} is not a writable folder: Numba's kernels run "
                "uncached (compiled in every process, seconds on first use); set it to a "
                "writable folder"
            )
        return state["mode"]
    if in_tree_writable(kernels):
        state.update(mode="in-tree")
        return "in-tree"
    for folder in _candidates():
        if _make(folder):
            _set_cache_dir(folder)
            state.update(mode="user", folder=folder)
            _say(
                f"Numba cannot cache compiled kernels next to the package ({kernels} is "
                f"read-only): they are cached in {folder} instead (NUMBA_CACHE_DIR chooses "
                "another folder)"
            )
            return "user"
    state.update(mode="uncached")
    _run_uncached()
    _say(
        f"Numba cannot cache compiled kernels next to the package ({kernels} is read-only) "
        f"nor in {' or '.join(_candidates())}: they run uncached (compiled in every process, "
        "seconds on first use); set NUMBA_CACHE_DIR to a writable folder"
    )
    return "uncached"
