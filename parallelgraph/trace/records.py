"""From an executor's records to events: what a run appends in its hot path (`StepRecord`,
`CopyRecord`, plain tuples) becomes `TraceEvent`s only when someone reads `trace.events`.

Reading a run's records needs its plan (steps, costs, shards) and what fusion did; a trace read
from a file needs neither, so this module is imported only by `Trace.events` of a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .events import COPY_DEVICE, COPY_OP_TYPE, CopyRecord, EventKind, StepRecord, TraceEvent
from .lanes import parse_lane

if TYPE_CHECKING:
    from ..plan import Plan


def _copy_event(record: CopyRecord) -> TraceEvent:
    lane = parse_lane(record.lane)
    device = COPY_DEVICE if lane.pool == "copy" else lane.pool  # a Dask worker's transfers
    name = record.op_name
    return TraceEvent(
        name, COPY_OP_TYPE, name.rpartition("/")[0], device, EventKind.COPY, record.lane,
        record.start_ns, record.end_ns, 0, record.nbytes,
    )  # fmt: skip


def shapes_text(op: Any) -> str:
    """An op's input and output shapes, as the timeline's tooltip shows them."""
    inputs = " x ".join(str(tensor.shape) for tensor in op.inputs)
    return f"{inputs} -> {op.shape} {op.dtype.name}".strip()


def _step_event(
    plan: Plan,
    record: StepRecord,
    described: dict[int, tuple[str, str]],
    renamed: dict[str, str],
) -> TraceEvent:
    step = plan.steps[record.step]
    op = step.op
    op_type, shapes = described[record.step]
    kind = EventKind(record.kind)
    sharded = kind is EventKind.SHARD
    share = len(step.shards) if sharded else 1
    covered = record.shards if sharded else 1
    return TraceEvent(
        name=op.name,
        op_type=op_type,
        scope=op.scope,
        device=step.device,
        kind=kind,
        lane=record.lane,
        start=record.start_ns,
        end=record.end_ns,
        flops=step.cost.flops * covered // share,
        bytes=step.cost.bytes * covered // share,
        shard=record.shard if sharded else None,
        shards=covered,
        inputs=() if sharded else tuple(renamed.get(t.name, t.name) for t in op.inputs),
        shapes=shapes,
    )


def events_from_records(plan: Plan, records: list[tuple[Any, ...]]) -> tuple[TraceEvent, ...]:
    """TraceEvents from an executor's `StepRecord` and `CopyRecord` tuples.

    What fusion did comes from `ops.fused.covered` (imported here, not at the top: a trace
    read from a file never loads the op registry): a fused step's event has the op types it
    covers ("matmul+add+relu"), and an op inside it names the step as the producer of its
    value.
    """
    from ..ops.fused import covered as fused_parts
    from ..ops.fused import joined

    described: dict[int, tuple[str, str]] = {}  # per plan step: (op type, shapes), once
    renamed: dict[str, str] = {}  # an op inside a fused step -> the step's op
    for index, step in enumerate(plan.steps):
        parts = fused_parts(step.op)
        described[index] = (joined([part.type for part in parts]), shapes_text(step.op))
        renamed.update((part.name, step.op.name) for part in parts if part is not step.op)
    events = [
        _copy_event(CopyRecord._make(raw))
        if raw[0] == EventKind.COPY
        else _step_event(plan, StepRecord(*raw), described, renamed)
        for raw in records
    ]
    events.sort(key=lambda e: (e.start, e.kind != EventKind.OP))
    return tuple(events)


def fetched_ops(plan: Plan) -> list[str]:
    """The names of the steps whose output slots the plan fetches, in fetch order (a fetched
    source, a variable or feed, is no step and is left out)."""
    wanted = set(plan.fetch_slots)
    by_slot = {step.slot: step.op.name for step in plan.steps if step.slot in wanted}
    return list(dict.fromkeys(by_slot[slot] for slot in plan.fetch_slots if slot in by_slot))
