"""Running one step: an op's shards on the calling thread and an intra-op pool, one trace event.

The one place an op is executed on the CPU, whoever schedules it: the threads and sequential
executors call it from their scheduling loop (`cpu.py`), Dask workers from their tasks
(`dask/worker.py`). Both therefore compute the same shards with the same kernels and combine partial
results in the same order, which is what makes their outputs bit-identical. It lives in its own
module so that neither executor imports the other.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from ..config import Config
from ..trace.model import EventKind
from .pools import IntraOpPool, Recorder, ShardJob

clock = time.perf_counter_ns


def execute_step(
    step: Any,
    args: list[Any],
    lane: str,
    record: Recorder | None,
    config: Config,
    intra: IntraOpPool,
) -> Any:
    """Run one op (all its shards) on the calling thread, with helpers from `intra`.

    `step` is a plan Step or anything with its `index`, `op`, `definition`, `shards` and
    `whole` (the Dask executor sends workers such a stand-in). The op's event goes to `record`
    on `lane`, its shards on the lanes of the threads that computed them.
    """
    start = clock() if record else 0
    whole = step.whole
    if whole is not None:  # one call, the same bits (see OpDef.whole): tiny ops come here
        value = whole(args)
    else:
        value = _sharded(step, args, lane, record, config, intra)
    if record:
        record((EventKind.OP, step.index, lane, start, clock(), None))
    return value


def _sharded(
    step: Any,
    args: list[Any],
    lane: str,
    record: Recorder | None,
    config: Config,
    intra: IntraOpPool,
) -> Any:
    """prepare, compute every shard (on this thread and helpers from `intra`), finish."""
    op, definition, shards = step.op, step.definition, step.shards
    if len(shards) == 1:
        work = definition.prepare(op, args, 1, config)
        definition.compute(op, work, 0, *shards[0])
        return definition.finish(op, work)
    work = definition.prepare(op, args, len(shards), config)
    offers = intra.offers(len(shards))
    pieces, spans = _pieces(definition, op, work, shards, offers + 1)
    job = ShardJob(
        len(pieces),
        lambda piece: definition.compute(op, work, *pieces[piece]),
        step.index,
        record,
        clock,
        spans,
    )
    intra.run(job, lane, offers)
    if job.error is not None:
        raise job.error
    return definition.finish(op, work)


def _pieces(
    definition: Any, op: Any, work: Any, shards: tuple[tuple[int, int], ...], takers: int
) -> tuple[list[tuple[int, int, int]], tuple[tuple[int, int], ...] | None]:
    """What each `compute` call of an op covers: (shard, row_start, row_stop) per call, and
    for merged calls the (first shard, count) of each.

    With as many threads taking part as there are shards, or more, a call per shard. With
    fewer (`takers`: the op's own thread and the helpers it is offered to), each taker's share
    of consecutive shards becomes one call where the op's kernel gives the same bits that way
    (`OpDef.merges_rows`: a matmul then packs B once per thread, not once per shard). The
    shards are still the plan's; only how many calls compute them changes, so the bits do not.
    """
    count = len(shards)
    one_each = [(index, *bounds) for index, bounds in enumerate(shards)], None
    if takers >= count:
        return one_each
    starts = [taker * count // takers for taker in range(takers + 1)]
    spans = tuple((first, stop - first) for first, stop in itertools.pairwise(starts))
    groups = [(shards[first][0], shards[first + covered - 1][1]) for first, covered in spans]
    if not definition.merges_rows(op, work, shards, groups):
        return one_each
    return [(first, *rows) for (first, _), rows in zip(spans, groups)], spans
