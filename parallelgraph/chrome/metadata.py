"""Checks for what a trace file says about itself, so that a hand-edited or hostile file fails
when it is read, in one line naming the file and the field, instead of later in `explain()` or
`simulate()` with a TypeError or AttributeError.

- `validate_metadata(metadata, source)`: the metadata of our own files (`otherData.metadata`),
  checked by `trace.run_info.RunInfo.from_json` (the typed record the reader builds from it:
  the checks live beside the fields they guard).
- `event_id(value, source, index, field)`: an id that links events (PyTorch's `correlation`,
  `External id`): an int or a string, or None when missing; anything else (a list, a dict) is
  a ValueError.
"""

from __future__ import annotations

from typing import Any

from ..trace.run_info import RunInfo, is_int, shown


def validate_metadata(metadata: dict[str, Any], source: str = "trace file") -> dict[str, Any]:
    """`metadata` itself when every field parallelgraph reads has the right type; else a
    ValueError naming `source` (the file), the field and what it must be. A value that is not
    a dict at all is an error too. `None` values of optional fields are allowed."""
    RunInfo.from_json(metadata, source)
    return metadata


def event_id(value: Any, source: str, index: int, field: str) -> int | str | None:
    """An id linking events (`correlation`, `External id`): an int or a string as it is, None
    when missing; a ValueError naming the file, the event and the field otherwise."""
    if value is None or isinstance(value, str) or is_int(value):
        return value
    raise ValueError(
        f"{source}: event {index} has an ill-typed args.{field!r}: it must be an integer or a "
        f"string id, got {shown(value)} ({type(value).__name__})"
    )
