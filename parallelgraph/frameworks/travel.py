"""How the user's build function travels to a worker process, its source with it.

`pack(build)` pickles the function with cloudpickle: by reference when it lives in an
importable module (the worker imports it), by value when it was defined in a notebook cell or
a script's `__main__`. By value, the code arrives without its source: cloudpickle names its
file "<dynamic-code>", and a notebook cell's "file" exists only in the kernel's linecache
anyway. But some frameworks read the source of the functions they compile —
`torch.jit.script` parses it — so the source lines of the function's file travel too, and
`unpack` gives the code its file name back and puts the lines in the worker's linecache, where
`inspect.getsource` (and TorchScript) find them.
"""

from __future__ import annotations

import linecache
import types
from collections.abc import Callable
from typing import Any


def pack(build: Callable[..., Any]) -> bytes:
    """The build function (and its file's source lines) as bytes, or a TypeError saying why
    it cannot travel."""
    import cloudpickle

    if not callable(build):
        raise TypeError(
            f"a framework sweep needs build(setting) -> step, a function; got {build!r:.80}"
        )
    code = getattr(build, "__code__", None)
    filename = code.co_filename if code is not None else ""
    lines = linecache.getlines(filename) if filename else []
    try:
        return cloudpickle.dumps((build, filename, lines))
    except Exception as error:  # any pickling failure is the user's to see
        name = getattr(build, "__qualname__", repr(build))
        raise TypeError(
            f"build function {name} cannot be sent to a worker process ({error}); build the "
            "model inside it instead of capturing a live one (a session, a lock, an open file)"
        ) from error


def unpack(data: bytes) -> Callable[..., Any]:
    """In the worker: the build function, its code named after its file again and the file's
    lines in linecache (see the module docstring)."""
    import cloudpickle

    build, filename, lines = cloudpickle.loads(data)
    code = getattr(build, "__code__", None)
    if lines and code is not None and code.co_filename != filename:
        linecache.cache[filename] = (sum(map(len, lines)), None, list(lines), filename)
        build.__code__ = renamed(code, code.co_filename, filename)
    return build


def renamed(code: types.CodeType, old: str, new: str) -> types.CodeType:
    """`code`, and every code object nested in it, with file name `old` replaced by `new`."""
    consts = tuple(
        renamed(c, old, new) if isinstance(c, types.CodeType) else c for c in code.co_consts
    )
    filename = new if code.co_filename == old else code.co_filename
    return code.replace(co_filename=filename, co_consts=consts)
