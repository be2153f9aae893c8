"""Damaged copies of a good result file, each with what loading it must do, known by construction.

`damaged(good, edits, seed)` takes the bytes of a file a writer made (a JSON object, written
without trailing whitespace) and yields `Case`s: bytes to put where the file was (or `FOLDER`: a
folder there instead) and the behaviour the loader owes them:

- `REFUSED`: a ValueError whose text starts with the file's path. Certain by construction for a
  truncation anywhere (a JSON object needs its closing brace), a byte no UTF-8 text holds
  (the writers write ASCII), an empty or blank file, binary garbage that starts with such a
  byte, a folder, and the `edits` the caller marks so;
- `LOADS`: loads, with what the edit did not touch unchanged (the caller's edits of optional or
  derived fields, and the file itself, unchanged);
- `EITHER`: a printable byte changed at random, or a value replaced at a random place: the file
  may still be valid (a digit of a time), so it may load or be refused, but nothing else.

Every case may also never raise anything but a ValueError: not a KeyError, TypeError,
AttributeError or IndexError from inside the loader. The seed makes the cases the same on every
run.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

REFUSED, LOADS, EITHER = "refused", "loads", "either"
FOLDER = object()  # a folder where the file was

#: An edit of the parsed document: (name, function changing it in place, what it must get).
Edit = tuple[str, Callable[[Any], None], str]

#: Values of every JSON kind, put where something else was.
WRONG_VALUES = (None, True, -1, 1.5, 10**30, 1e300, "text", [], [1, "x"], {}, {"a": 1})
#: Bytes that no UTF-8 text holds on their own (in ASCII text, even a lead byte).
NOT_UTF8 = (0x80, 0xBF, 0xC0, 0xFE, 0xFF)


@dataclass(frozen=True)
class Case:
    name: str
    data: Any  # bytes, or FOLDER
    expect: str


def _dumped(document: Any) -> bytes:
    return json.dumps(document, indent=1).encode()


def _places(value: Any, where: tuple = ()) -> Iterator[tuple]:
    """Every key path into `value` (dict keys and list indices)."""
    yield where
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _places(inner, (*where, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _places(inner, (*where, index))


def _replace(document: Any, where: tuple, value: Any) -> Any:
    changed = copy.deepcopy(document)
    if not where:
        return value
    holder = changed
    for step in where[:-1]:
        holder = holder[step]
    holder[where[-1]] = value
    return changed


def damaged(
    good: bytes, edits: Sequence[Edit] = (), seed: int = 0, draws: int = 40
) -> Iterator[Case]:
    """The cases for the file `good` (see the module docstring); `draws` random ones a kind."""
    assert good.startswith(b"{") and good.endswith(b"}") and good.isascii(), "a JSON object"
    rng = random.Random(seed)
    document = json.loads(good)
    yield Case("unchanged", good, LOADS)
    yield Case("empty", b"", REFUSED)
    yield Case("blank", b" \n\t\n", REFUSED)
    yield Case("a folder", FOLDER, REFUSED)
    yield Case("binary garbage", bytes([0xFF, *rng.randbytes(200)]), REFUSED)
    yield Case("a PNG", b"\x89PNG\r\n\x1a\n" + rng.randbytes(64), REFUSED)
    yield Case("a number with 5000 digits", b'{"x": ' + b"9" * 5000 + b"}", REFUSED)
    yield Case("nested 100000 deep", b"[" * 100_000 + b"]" * 100_000, REFUSED)
    for offset in sorted(rng.sample(range(1, len(good)), min(draws, len(good) - 1))):
        yield Case(f"truncated at byte {offset}", good[:offset], REFUSED)
    for _ in range(draws):
        offset, byte = rng.randrange(len(good)), rng.choice(NOT_UTF8)
        changed = good[:offset] + bytes([byte]) + good[offset + 1 :]
        yield Case(f"byte {offset} made 0x{byte:02x}", changed, REFUSED)
    for _ in range(draws):
        offset, byte = rng.randrange(len(good)), rng.randrange(0x20, 0x7F)
        changed = good[:offset] + bytes([byte]) + good[offset + 1 :]
        yield Case(f"byte {offset} made {chr(byte)!r}", changed, EITHER)
    places = list(_places(document))[1:]
    for _ in range(draws):
        where, value = rng.choice(places), rng.choice(WRONG_VALUES)
        yield Case(
            f"{list(where)} = {value!r:.20}", _dumped(_replace(document, where, value)), EITHER
        )
    for name, edit, expect in edits:
        changed = copy.deepcopy(document)
        edit(changed)
        yield Case(name, _dumped(changed), expect)


def write_case(case: Case, path: Any) -> None:
    """Put the case where `path` names (a file of its bytes, or a folder)."""
    if case.data is FOLDER:
        path.mkdir()
    else:
        path.write_bytes(case.data)
