"""Search and highlight by op name: which ops match the patterns, and how the rest fade."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..trace.model import EventKind, TraceEvent

if TYPE_CHECKING:
    pass


#: Highlight: how much of its colour a faded bar keeps (the rest is white), and its label ink.
FADE_KEEP, FADED_INK = 0.22, "#a0a0a0"


# -- highlight ------------------------------------------------------------------------------
def highlight_patterns(highlight: object) -> tuple[str, ...]:
    """The highlight patterns as a tuple ('' and None: none), or a TypeError/ValueError."""
    if highlight is None:
        return ()
    items = [highlight] if isinstance(highlight, str) else highlight
    if not isinstance(items, Sequence | set | frozenset) or isinstance(items, bytes):
        raise TypeError(
            f"highlight= takes an op-name pattern or a list of them, got {highlight!r:.60}"
        )
    patterns = tuple(items)
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip():
            raise ValueError(
                f"highlight= patterns are non-empty strings (fnmatch: 'MatMul*'), got {pattern!r}"
            )
    if not patterns:
        raise ValueError("highlight=[] names no pattern: give one ('MatMul*') or leave it out")
    return patterns


@dataclass(frozen=True)
class Highlight:
    """What `highlight=` found: the patterns, the names of the drawn ops that match, and how
    many op events were drawn and matched; `note` is the title's line about it."""

    patterns: tuple[str, ...]
    names: frozenset[str]  # matching names of drawn events (ops, their shards and copies)
    ops: int
    matched: int

    @property
    def note(self) -> str:
        shown = ", ".join(repr(p) for p in self.patterns[:4])
        if len(self.patterns) > 4:
            shown += f" (+{len(self.patterns) - 4})"
        if not self.matched:
            return f"highlight {shown}: no op matched (all {self.ops} ops drawn as usual)"
        return f"highlight {shown}: {self.matched} of {self.ops} ops"


def name_matcher(patterns: Sequence[str]) -> Any:
    """A function name -> bool: whether an op name matches one of the fnmatch `patterns`,
    case-insensitively, as the full name, without its scope, or without a reader's "#N"."""
    expression = re.compile("|".join(f"(?:{fnmatch.translate(p.lower())})" for p in patterns))

    def matches(name: str) -> bool:
        lowered = name.lower()
        plain = re.sub(r"#\d+$", "", lowered)
        candidates = {lowered, plain, lowered.rsplit("/", 1)[-1], plain.rsplit("/", 1)[-1]}
        return any(expression.match(candidate) for candidate in candidates)

    return matches


def highlight_of(patterns: tuple[str, ...], events: list[TraceEvent]) -> Highlight:
    matches = name_matcher(patterns)
    names = frozenset(name for name in {e.name for e in events} if matches(name))
    ops = [e for e in events if e.kind == EventKind.OP]
    return Highlight(patterns, names, len(ops), sum(1 for e in ops if e.name in names))
