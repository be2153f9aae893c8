"""Checks for what a trace file says about itself, so that a hand-edited or hostile file fails
when it is read, in one line naming the file and the field, instead of later in `explain()` or
`simulate()` with a TypeError or AttributeError.

- `validate_metadata(metadata, source)`: the metadata of our own files (`otherData.metadata`):
  every key parallelgraph reads must have the type it writes (`config` a dict of thread counts
  and names, `cores` a positive int, `notes` a list of strings, `jit` a dict of numbers,
  `lane_kinds` a dict of strings...). Keys it does not read pass through unchecked.
- `event_id(value, source, index, field)`: an id that links events (PyTorch's `correlation`,
  `External id`): an int or a string, or None when missing; anything else (a list, a dict) is
  a ValueError.
"""

from __future__ import annotations

import math
from typing import Any


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check(ok: bool, source: str, where: str, wanted: str, value: Any) -> None:
    if not ok:
        raise ValueError(
            f"{source}: otherData.metadata.{where} must be {wanted}, got {_shown(value)} "
            f"({type(value).__name__}); the file was changed by hand or is not ours"
        )


#: Fields of `metadata["config"]` that parallelgraph reads: (check, what it must be).
_CONFIG = {
    "inter_op_threads": (lambda v: _is_int(v) and v >= 0, "an int >= 0"),
    "intra_op_threads": (lambda v: _is_int(v) and v >= 0, "an int >= 0"),
    "streams": (lambda v: _is_int(v) and v >= 1, "an int >= 1"),
    "executor": (lambda v: isinstance(v, str), "a string"),
    "stream_policy": (lambda v: isinstance(v, str), "a string"),
    "fuse": (lambda v: isinstance(v, bool), "true or false"),
}

_JIT = {
    "busy_s": (lambda v: _is_number(v) and v >= 0, "a number >= 0"),
    "compile_s": (lambda v: _is_number(v) and v >= 0, "a number >= 0"),
    "compiled": (lambda v: _is_int(v) and v >= 0, "an int >= 0"),
}


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


#: Top-level fields: (check, what it must be).
_TOP = {
    "source": (lambda v: isinstance(v, str), "a string"),
    "graph": (lambda v: isinstance(v, str), "a string"),
    "executor": (lambda v: isinstance(v, str), "a string"),
    "cores": (lambda v: _is_int(v) and v >= 1, "an int >= 1"),
    "run": (lambda v: _is_int(v) and v >= 0, "an int >= 0"),
    "wall_ns": (lambda v: _is_number(v) and v >= 0, "a number >= 0"),
    "notes": (_strings, "a list of strings"),
    "lane_kinds": (_string_map, "an object of strings"),
    "simulated": (lambda v: isinstance(v, bool), "true or false"),
    "imported": (lambda v: isinstance(v, dict), "an object (the file it was read from)"),
    "config": (lambda v: isinstance(v, dict), "an object"),
    "simulated_from": (lambda v: isinstance(v, dict), "an object"),
    "jit": (lambda v: isinstance(v, dict), "an object"),
}


def validate_metadata(metadata: dict[str, Any], source: str = "trace file") -> dict[str, Any]:
    """`metadata` itself when every field parallelgraph reads has the right type; else a
    ValueError naming `source` (the file), the field and what it must be. A value that is not
    a dict at all is an error too. `None` values of optional fields are allowed."""
    _check(isinstance(metadata, dict), source, "(itself)", "an object", metadata)
    for key, (ok, wanted) in _TOP.items():
        if metadata.get(key) is not None:
            _check(ok(metadata[key]), source, key, wanted, metadata[key])
    for name, fields in (("config", _CONFIG), ("simulated_from", _CONFIG), ("jit", _JIT)):
        inner = metadata.get(name) or {}
        for key, (ok, wanted) in fields.items():
            if inner.get(key) is not None:
                _check(ok(inner[key]), source, f"{name}.{key}", wanted, inner[key])
    return metadata


def event_id(value: Any, source: str, index: int, field: str) -> int | str | None:
    """An id linking events (`correlation`, `External id`): an int or a string as it is, None
    when missing; a ValueError naming the file, the event and the field otherwise."""
    if value is None or isinstance(value, str) or _is_int(value):
        return value
    raise ValueError(
        f"{source}: event {index} has an ill-typed args.{field!r}: it must be an integer or a "
        f"string id, got {_shown(value)} ({type(value).__name__})"
    )
