"""Branches: the parts of a run whose overlap a person asks about.

In a parallelgraph graph, or a TensorFlow one, the independent parts have names: the top-level
scopes ("net1", "net2"). Traces of other programs often have none — two `torch.jit.fork`
branches without `record_function`, two Python threads — so a branch can be named three ways:

- a **scope**: "net1" or "scope:net1" — the ops of that scope and its sub-scopes (the outermost
  of them: those nested in another op of the scope are part of its time), even when they nest in
  an op outside the scope (a "step" event around a whole run);
- a **lane**: "lane:cpu/PTThreadPool-1" (or just the lane's name when no scope has it) — the
  outermost ops that ran on that thread or stream;
- a **device**: "device:cpu:1" — the outermost ops that ran on that device (JAX on two host
  devices, a GPU against the CPU);
- an **op-name pattern**: "op:aten::*" or any name with a `*`, `?` or `[` in it — every op
  (nested ones too) whose name matches, in `fnmatch` syntax; "op:a*|b*" matches either
  (XLA's ops, named "ynn_fusion.3", can be gathered into the branches they came from).

`default_branches` picks what `explain()` compares when it is given nothing: the top-level
scopes when there are two or more, else the devices when the ops ran on two or more of one kind
(JAX's host devices), else the lanes that ran ops. A branch's busy time is its ops' work: the
time their lanes spent waiting or in setup inside them is left out.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..devices import split_device
from ..scopes import branch_level, enclosing_scopes
from .intervals import Intervals, intersect, length

if TYPE_CHECKING:
    from .model import Trace, TraceEvent

PREFIXES = ("scope:", "lane:", "op:", "device:")


@dataclass(frozen=True)
class Branch:
    """A named part of a run: its label, how it was named, its ops and when they ran."""

    label: str
    by: str  # "scope" | "lane" | "op" | "device"
    ops: tuple[TraceEvent, ...]
    busy: Intervals

    @cached_property
    def busy_ns(self) -> int:
        """The length of `busy`, summed once: explain() asks it of each branch for each pair."""
        return length(self.busy)

    @cached_property
    def lanes(self) -> frozenset[str]:
        """The lanes its ops ran on."""
        return frozenset(e.lane for e in self.ops)


def _branch(trace: Trace, label: str, by: str, ops: list[TraceEvent]) -> Branch:
    """The branch of `ops`, keeping the outermost of them (those not nested in another one)."""
    names = {e.name for e in ops}
    outermost = tuple(e for e in ops if e.parent is None or e.parent not in names)
    return Branch(label, by, outermost, trace.work_spans(outermost))


def _choices(trace: Trace) -> str:
    scopes = [s for s in trace.scopes() if s][:8]
    lanes = trace.lanes[:8]
    return f"scopes in this trace: {scopes}; lanes: {lanes} (use 'lane:NAME' or 'op:PATTERN')"


def select(trace: Trace, spec: str) -> Branch:
    """The branch that `spec` names (see the module docstring); ValueError if it has no ops."""
    if not isinstance(spec, str):
        raise TypeError(f"a branch is named by a string, got {type(spec).__name__}: {spec!r:.60}")
    by, _, name = spec.partition(":") if spec.startswith(PREFIXES) else ("", "", spec)
    if not by:
        if any(char in spec for char in "*?["):
            by = "op"
        elif any(e.in_scope(spec) for e in trace.ops(nested=True)):
            by = "scope"
        elif spec in trace.lanes:
            by = "lane"
        else:
            by = "scope"
    if by == "scope":
        ops = [e for e in trace.ops(nested=True) if e.in_scope(name)]
    elif by == "lane":
        ops = [e for e in trace.ops() if e.lane == name]
    elif by == "device":
        ops = [e for e in trace.ops() if e.device == name]
    else:
        patterns = name.split("|")
        ops = [
            e
            for e in trace.ops(nested=True)
            if any(fnmatch.fnmatchcase(e.name, pattern) for pattern in patterns)
        ]
    if not ops:
        raise ValueError(f"no op events for {by} {name!r}; {_choices(trace)}")
    return _branch(trace, name, by, ops)


def overlap_of(a: Branch, b: Branch) -> float:
    """The fraction of the shorter branch's busy time during which the other was also busy."""
    shorter = min(a.busy_ns, b.busy_ns)
    return length(intersect(a.busy, b.busy)) / shorter if shorter else 0.0


def overlap(trace: Trace, spec_a: str, spec_b: str) -> float:
    """`overlap_of` the branches that two specs name."""
    return overlap_of(select(trace, spec_a), select(trace, spec_b))


def default_branches(trace: Trace) -> list[Branch]:
    """The top-level scopes ("" left out) when there are two or more, or, when every scoped op
    is in one (a model built in `pg.scope("attention")`), the first level below it with two or
    more (`branch_scopes`); else each lane that ran ops (a thread, a stream), busiest first;
    else the one scope there is."""
    scopes = branch_scopes(trace)
    if len(scopes) >= 2:
        return _scope_branches(trace, scopes)
    devices = _devices(trace)
    if len(devices) >= 2:
        return [select(trace, f"device:{device}") for device in devices]
    by_lane: dict[str, list[TraceEvent]] = {}
    for event in trace.ops():
        if trace.lane(event.lane).kind.computes:
            by_lane.setdefault(event.lane, []).append(event)
    if len(by_lane) >= 2:
        lanes = [_branch(trace, lane, "lane", ops) for lane, ops in by_lane.items()]
        return sorted(lanes, key=lambda b: -b.busy_ns)
    return _scope_branches(trace, scopes)


def _scope_branches(trace: Trace, scopes: list[str]) -> list[Branch]:
    """`select(trace, "scope:NAME")` of each of `scopes`, their ops gathered in one pass over
    the trace (each op's enclosing scopes looked up), not one pass per scope: a trace of
    thousands of scopes made that quadratic."""
    ops: dict[str, list[TraceEvent]] = {scope: [] for scope in scopes}
    for event in trace.ops(nested=True):
        for scope in enclosing_scopes(event.scope):
            if scope in ops:
                ops[scope].append(event)
    # a scope without ops: select's error, which names the scopes there are
    return [
        _branch(trace, s, "scope", ops[s]) if ops[s] else select(trace, f"scope:{s}")
        for s in scopes
    ]


def branch_scopes(trace: Trace) -> list[str]:
    """The trace's branch scopes (`scopes.branch_level`): the top-level ones, or the first level
    below a lone one with two or more."""
    return branch_level(event.scope for event in trace.ops(nested=True))


def _devices(trace: Trace) -> list[str]:
    """The devices the ops ran on, when they are two or more of one kind ("cpu:0", "cpu:1";
    not a GPU beside the host, whose ops are launches and copies), in order of first use."""
    seen: dict[str, None] = {}
    for event in trace.ops():
        seen.setdefault(event.device, None)
    parts = [split_device(device) for device in seen]  # foreign kinds too ("tpu:0")
    kinds = {kind for kind, _ in parts}
    numbered = all(index is not None for _, index in parts)
    return list(seen) if len(kinds) == 1 and numbered and len(seen) >= 2 else []
