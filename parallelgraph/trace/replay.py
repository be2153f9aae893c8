"""What-if: replay a measured trace under another thread setting and predict the timeline.

`simulate(trace, config)` takes the durations a run measured — every op, and every shard of a
sharded op — and replays them with the threads executor's own rules:

- `inter_op_threads` workers take ready ops lowest-first (here: in the measured start order,
  which respects dependencies) and each op pays the measured per-op dispatch overhead;
- an op with shards runs them on its own worker plus up to `intra_op_threads - 1` helpers of one
  intra-op pool shared by all running ops, offered only as many helpers as there are cores no
  thread computes on (`pools.CoreBudget`; helpers take the offers as they come free, and keep
  taking that op's shards until none is left), exactly as `IntraOpPool`/`ShardJob` do;
- the machine has `cores` cores: when more threads compute than there are cores, every running
  piece of work slows down in proportion (processor sharing), and a little more for the cost
  of time-slicing (which the budget now avoids for our own executor; a setting of another
  tool's that oversubscribes still pays it);
- a thread that was asleep (an idle inter-op worker given a ready op, an intra-op helper given
  a job) starts `WAKE_UP_NS` later; the worker that just finished an op goes straight on to the
  next ready one, as the real loop does; and, in parallelgraph's own traces, no sleeping worker
  is woken for an op cheaper than a hand-off on this machine (`costs.inexpensive_ns`), which
  our executor leaves to the worker that made it ready (another producer's executor inlines
  ops by rules a trace does not show).

The replay is a small discrete-event simulation of work amounts: durations are converted to
"single-core work" using the contention under which they were measured (so a trace measured at
inter 1 / intra 1 gives clean numbers; one measured with oversubscription is corrected by the
average load its events saw on the cores its run recorded). A file that does not say how many
cores ran it (another tool's) is taken as measured: its lanes' times are its work. The result
is a Trace (lanes, op and shard events) that plots, overlaps and explains like a measured one,
with `info.simulated` True.

Imported traces replay the same way: a TensorFlow timeline measured with one inter-op thread,
replayed with two, predicts what TensorFlow's two threads do (benchmarks/RESULTS.md; the test
checks it on the real fixture). Only the outermost work op events are replayed (nested ones are
part of their time; waiting and setup are not work), each with its data inputs and, on a lane
its producer ran in program order (eager PyTorch, a Python thread), the op before it — so a
replay never runs an op before its predecessor ended, and never beats max(work / threads,
critical path). The report keeps the trace's `source`, so its advice stays in the producer's
terms.

GPU traces (ops on GPU-stream lanes) are replayed on `Config.streams` streams assigned by
`Config.stream_policy` (`replay_streams`), with the host's launch interval read off the trace
and the copies back to the host after their producers. Limits, said plainly: memory-bandwidth
contention, cache effects and thread wake-up jitter are only approximated on the CPU; on the
GPU, kernels on different streams are assumed not to compete for the multiprocessors, so a
trace measured with kernels that filled the GPU side by side predicts one stream too slow
(+42% and +75% for the `medium` and `large` graphs on an H200, within 5% for `narrow` and
`small`: benchmarks/RESULTS.md).
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import itertools
import statistics
from dataclasses import dataclass, field

from ..config import Config, cpu_count
from ..costs import inexpensive_ns
from .analysis import collector_paused, computing_pieces, enclosing_finder, outermost_inputs
from .cycles import require_acyclic
from .lanes import LaneKind, parse_lane
from .model import EventKind, Trace, TraceEvent
from .run_info import RunConfig, RunInfo

#: Time for a sleeping thread to wake up and start (measured on the 2-core VM: ~100 us for a
#: second inter-op worker, ~100-190 us for an intra-op helper's first shard).
WAKE_UP_NS = 100_000
#: Share of the cores' work that time-sliced threads still get done when there are more of them
#: than cores (measured on the 2-core VM: 2 inter x 2 intra ran 12-21% slower than a fair share).
OVERSUBSCRIBED_EFFICIENCY = 0.85
#: Host time per GPU op launched from Python when a trace cannot tell (fewer than two ops);
#: measured on an H200 machine: 17-25 us per op (prepared launches, events, scheduling).
LAUNCH_NS = 20_000
#: A GPU op that started this long after its stream and inputs were ready waited for the host
#: (event timing puts back-to-back kernels on one stream 1-3 us apart).
HOST_WAIT_NS = 4_000


@dataclass
class OpModel:
    """One op of the replay: its work and how it was split, from the measured trace."""

    event: TraceEvent
    order: int
    serial_work: float  # ns of single-core work outside the shards (prepare, finish, overhead)
    shard_work: list[float]  # ns of single-core work of each shard
    inputs: list[str] = field(default_factory=list)


@dataclass
class Piece:
    """A piece of work running on a lane: an op's serial part (`shard` None) or one shard."""

    op: OpModel
    lane: str
    shard: int | None
    remaining: float
    start: float  # when it starts computing (after a wake-up, if its thread was asleep)


class LoadProfile:
    """How many threads computed at each moment of a trace, as a step function with its
    running integral, so that the mean load over any interval costs O(log n) (a sharded op
    counts through its shards, which is where its threads worked; a nested event is part of its
    parent's thread, not another thread; waiting and setup are not computing)."""

    def __init__(self, trace: Trace):
        points = []
        for event in computing_pieces(trace):
            points.append((event.start, 1))
            points.append((event.end, -1))
        points.sort()
        self.times: list[int] = []
        self.busy: list[int] = []  # threads computing from times[i] to times[i + 1]
        self.area: list[float] = []  # thread-ns computed before times[i]
        busy, area = 0, 0.0
        for time, delta in points:
            if self.times and time == self.times[-1]:
                busy += delta
                self.busy[-1] = busy
                continue
            if self.times:
                area += (time - self.times[-1]) * self.busy[-1]
            busy += delta
            self.times.append(time)
            self.busy.append(busy)
            self.area.append(area)

    def _integral(self, t: int) -> float:
        """Thread-ns computed before time t (one thread assumed outside the profile)."""
        position = bisect.bisect_right(self.times, t) - 1
        if position < 0:
            return float(t - (self.times[0] if self.times else t))  # before: one thread
        return self.area[position] + (t - self.times[position]) * self.busy[position]

    def mean(self, start: int, end: int) -> float:
        """Average number of busy threads over [start, end), at least 1."""
        if end <= start or not self.times:
            return 1.0
        return max(1.0, (self._integral(end) - self._integral(start)) / (end - start))


def model_ops(trace: Trace, cores: int | None) -> list[OpModel]:
    """Single-core work of every op and shard, corrected for the contention they ran under on
    the `cores` of the machine that ran them; each op's inputs are its data inputs and, on a
    program-order lane, the op before it. With `cores` None (a file that does not say what
    ran it) the times are the work: many lanes busy at once are no evidence of contention on
    a machine whose cores nobody knows; judged by the replaying machine's cores, a file of many
    busy threads lost most of its work and was replayed below its own bound."""
    profile = LoadProfile(trace)
    inputs = outermost_inputs(trace, program_order=True)

    def slowdown(start: int, end: int) -> float:
        return 1.0 if cores is None else max(1.0, profile.mean(start, end) / cores)

    def work(event: TraceEvent) -> float:
        return event.work_ns / slowdown(event.start, event.end)

    shards: dict[str, list[TraceEvent]] = {}
    for event in trace.events:
        if event.kind == EventKind.SHARD:
            shards.setdefault(event.name, []).append(event)
    models = []
    for order, event in enumerate(sorted(trace.ops(), key=lambda e: e.start)):
        own = sorted(shards.get(event.name, []), key=lambda e: e.shard or 0)
        # A call that computed several shards at once (merged: executors.step) is replayed as
        # that many shards of equal work: the plan's shards have equal rows, up to alignment.
        shard_work = [piece for s in own for piece in [work(s) / s.shards] * s.shards]
        on_own_lane = sum(s.work_ns for s in own if s.lane == event.lane)
        serial = work(event) - on_own_lane / slowdown(event.start, event.end)
        models.append(
            OpModel(
                event,
                order,
                max(0.0, serial if own else work(event)),
                shard_work,
                sorted(inputs.get(event.name, ())),
            )
        )
    return models


def dispatch_overhead(trace: Trace) -> float:
    """Median gap (ns) between an op's end and the next op's start on the same lane."""
    gaps = []
    by_lane: dict[str, list[TraceEvent]] = {}
    for event in trace.ops():
        by_lane.setdefault(event.lane, []).append(event)
    for events in by_lane.values():
        events.sort(key=lambda e: e.start)
        gaps.extend(max(0, b.start - a.end) for a, b in itertools.pairwise(events))
    return statistics.median(gaps) if gaps else 0.0


class Replay:
    """The discrete-event replay (see the module docstring)."""

    def __init__(
        self,
        ops: list[OpModel],
        inter: int,
        intra: int,
        cores: int,
        overhead: float,
        inexpensive_ns: float = 0.0,
    ):
        self.ops = {op.event.name: op for op in ops}
        self.inter, self.intra, self.cores, self.overhead = inter, intra, cores, overhead
        self.inexpensive_ns = inexpensive_ns
        self.waiting = {op.event.name: {i for i in op.inputs if i in self.ops} for op in ops}
        self.consumers: dict[str, list[str]] = {}
        for op in ops:
            for name in self.waiting[op.event.name]:
                self.consumers.setdefault(name, []).append(op.event.name)
        self.ready: list[tuple[int, str]] = [
            (op.order, op.event.name) for op in ops if not self.waiting[op.event.name]
        ]
        heapq.heapify(self.ready)
        self.free_workers = [f"inter-op/{i}" for i in range(inter)]
        self.hot_workers = {"inter-op/0"}  # the calling thread starts awake
        self.free_helpers = [f"intra-op/{i}" for i in range(intra - 1)]
        self.running: list[Piece] = []
        self.next_shard: dict[str, int] = {}
        self.shards_left: dict[str, int] = {}
        self.offers: dict[str, int] = {}  # helpers an op's shards were offered to, not yet taken
        self.op_start: dict[str, float] = {}
        self.op_lane: dict[str, str] = {}
        self.events: list[TraceEvent] = []
        self.now = 0.0

    def run(self) -> list[TraceEvent]:
        self._dispatch()
        while self.running:
            computing = [p for p in self.running if p.start <= self.now]
            waking = [p.start for p in self.running if p.start > self.now]
            speed = self._speed(len(computing))
            finish_in = min((p.remaining / speed for p in computing), default=float("inf"))
            advance = min(finish_in, min(waking, default=float("inf")) - self.now)
            self.now += advance
            for piece in computing:
                piece.remaining -= advance * speed
            done = [p for p in computing if p.remaining <= 1e-6]
            self.running = [p for p in self.running if p not in done]
            for finished in sorted(done, key=lambda p: (p.op.order, p.shard or 0)):
                self._finish(finished)
            self._dispatch()
        return self.events

    def _speed(self, computing: int) -> float:
        """Speed of each computing thread: 1 while threads fit the cores, else a fair share of
        the cores, less what time-slicing costs (context switches, shared caches)."""
        if computing <= self.cores:
            return 1.0
        return self.cores / computing * OVERSUBSCRIBED_EFFICIENCY

    def _dispatch(self) -> None:
        """Give ready ops to free workers, lowest order first; the worker that just finished an
        op takes the first one at once, sleeping workers after a wake-up. No sleeping worker is
        woken for an inexpensive op (single-core work under `inexpensive_ns`) while some thread
        computes: the one that finishes takes it, as the executor leaves inexpensive ops to
        the worker that made them ready (`Plan.expensive`; measured work stands in for the
        planner's estimate, which a trace does not carry)."""
        deferred = []
        while self.ready and self.free_workers:
            order, name = heapq.heappop(self.ready)
            hot = [lane for lane in self.free_workers if lane in self.hot_workers]
            op = self.ops[name]
            if not hot and self.running and self._inexpensive(op):
                deferred.append((order, name))
                continue
            lane = hot[0] if hot else self.free_workers[0]
            self.free_workers.remove(lane)
            start = self.now if lane in self.hot_workers else self.now + WAKE_UP_NS
            self.hot_workers.discard(lane)
            op = self.ops[name]
            self.op_start[name], self.op_lane[name] = start, lane
            work = max(op.serial_work + self.overhead, 1.0)
            self.running.append(Piece(op, lane, None, work, start))
        for item in deferred:
            heapq.heappush(self.ready, item)
        self.hot_workers.clear()  # a worker left without work goes to sleep

    def _inexpensive(self, op: OpModel) -> bool:
        return op.serial_work + sum(op.shard_work) < self.inexpensive_ns

    def _start_shards(self, op: OpModel, lane: str) -> None:
        name = op.event.name
        self.next_shard[name], self.shards_left[name] = 0, len(op.shard_work)
        # the cores nobody computes on: workers inside an op (this one too), busy helpers
        busy = (self.inter - len(self.free_workers)) + (self.intra - 1 - len(self.free_helpers))
        self.offers[name] = min(self.intra - 1, len(op.shard_work) - 1, max(0, self.cores - busy))
        self._take_shard(op, lane)
        while (
            self.free_helpers and self.offers[name] and self.next_shard[name] < len(op.shard_work)
        ):
            self.offers[name] -= 1
            self._take_shard(op, self.free_helpers.pop(0), delay=WAKE_UP_NS)

    def _take_shard(self, op: OpModel, lane: str, delay: float = 0.0) -> bool:
        name = op.event.name
        index = self.next_shard[name]
        if index >= len(op.shard_work):
            return False
        self.next_shard[name] = index + 1
        work = max(op.shard_work[index], 1.0)
        self.running.append(Piece(op, lane, index, work, self.now + delay))
        return True

    def _finish(self, piece: Piece) -> None:
        op, name = piece.op, piece.op.event.name
        if piece.shard is None:
            if op.shard_work:
                self._start_shards(op, piece.lane)
                return
            self._complete(op)
            return
        shard = self._event(op, piece.lane, piece.start, self.now, EventKind.SHARD, piece.shard)
        self.events.append(shard)
        self.shards_left[name] -= 1
        took = self._take_shard(op, piece.lane)
        if not took and parse_lane(piece.lane).kind is LaneKind.HELPER:
            self.free_helpers.append(piece.lane)
            self.free_helpers.sort()
            self._lend_helpers()
        if self.shards_left[name] == 0:
            self._complete(op)

    def _lend_helpers(self) -> None:
        """A freed helper takes an offer of a running op that still has shards to hand out."""
        for name, index in sorted(self.next_shard.items()):
            while (
                self.free_helpers
                and self.offers.get(name)
                and index < len(self.ops[name].shard_work)
            ):
                self.offers[name] -= 1
                self._take_shard(self.ops[name], self.free_helpers.pop(0), delay=WAKE_UP_NS)
                index += 1

    def _complete(self, op: OpModel) -> None:
        name = op.event.name
        lane = self.op_lane[name]
        self.events.append(self._event(op, lane, self.op_start[name], self.now, EventKind.OP, None))
        self.free_workers.append(lane)
        self.free_workers.sort()
        self.hot_workers.add(lane)
        self.next_shard.pop(name, None)
        self.offers.pop(name, None)
        for consumer in self.consumers.get(name, []):
            self.waiting[consumer].discard(name)
            if not self.waiting[consumer]:
                heapq.heappush(self.ready, (self.ops[consumer].order, consumer))

    @staticmethod
    def _event(
        op: OpModel, lane: str, start: float, end: float, kind: EventKind, shard: int | None
    ) -> TraceEvent:
        inputs = op.event.inputs if kind == EventKind.OP else ()
        event = dataclasses.replace(op.event, kind=kind, shard=shard, inputs=inputs, idle_ns=0)
        return _moved(event, lane, start, end)


def carried_along(trace: Trace, replayed: list[TraceEvent]) -> list[TraceEvent]:
    """The work ops nested in each replayed op, moved with it: same place in it, in proportion
    to its new duration, on its new lane — so the replay keeps the scopes and names a profiler
    recorded inside an op (`record_function` labels inside a `torch.jit.fork` task)."""
    moved = {e.name: e for e in replayed if e.kind == EventKind.OP}
    measured = {e.name: e for e in trace.ops()}
    parent = {e.name: e.parent for e in trace.ops(nested=True)}

    outermost = enclosing_finder(parent, lambda name: parent.get(name) is None)  # memoised
    carried = []
    for event in trace.ops(nested=True):
        if event.parent is None or event.kind != EventKind.OP:
            continue
        top = outermost(event.name)
        if top is None or top not in moved:
            continue
        old, new = measured[top], moved[top]
        scale = new.duration_ns / old.duration_ns if old.duration_ns else 1.0
        start = new.start + (event.start - old.start) * scale
        end = new.start + (event.end - old.start) * scale
        nested = dataclasses.replace(event, inputs=(), idle_ns=0, after=None)
        carried.append(_moved(nested, new.lane, start, end))
    return carried


def launch_interval(ops: list[TraceEvent]) -> float:
    """The host's time per GPU op launch, read off a trace.

    An op cannot start before it is launched, so with launches evenly spaced from the first op,
    (start_i - start_0) / i bounds the interval from above for every op i. The bound is tight
    for an op that waited only for the host — its stream was idle and its inputs were done
    before it started — so the smallest ratio among such ops is the estimate. A trace with no
    such op (the GPU never waited for the host) cannot tell: then `LAUNCH_NS`, or the bound if
    that is smaller.
    """
    ordered = sorted(ops, key=lambda e: e.start)
    if len(ordered) < 2:
        return LAUNCH_NS
    origin, ends = ordered[0].start, {e.name: e.end for e in ordered}
    lane_end: dict[str, int] = {}
    bound, waited_for_host = float("inf"), []
    for i, event in enumerate(ordered):
        if i:
            ratio = (event.start - origin) / i
            bound = min(bound, ratio)
            ready = max(
                [lane_end.get(event.lane, origin)] + [ends[n] for n in event.inputs if n in ends]
            )
            if event.start > ready + HOST_WAIT_NS:
                waited_for_host.append(ratio)
        lane_end[event.lane] = max(lane_end.get(event.lane, origin), event.end)
    return min(waited_for_host) if waited_for_host else min(bound, LAUNCH_NS)


def launch_order(
    ordered: list[TraceEvent], producers: dict[int, list[int]], breadth_first: bool
) -> list[int]:
    """The order the executor launches the ops in (indices into `ordered`, a measured order).

    As `Plan.priority` does: breadth-first — by depth, then measured order — when the ops use
    several streams; otherwise graph order, which a trace does not record: approximated by
    top-level scope (in order of first appearance), then measured order, which is how graphs
    built scope by scope are numbered. Always a topological order.
    """
    from ..streams import depths, ready_walk

    consumers: list[list[int]] = [[] for _ in ordered]
    for i in range(len(ordered)):  # measured order is topological
        for p in producers[i]:
            consumers[p].append(i)
    scopes: dict[str, int] = {}
    for event in ordered:
        scopes.setdefault(event.scope.split("/")[0], len(scopes))
    if breadth_first:
        depth = depths(consumers)
        keys = [(depth[i], i) for i in range(len(ordered))]
    else:
        keys = [(scopes[e.scope.split("/")[0]], i) for i, e in enumerate(ordered)]
    return ready_walk(consumers, keys)


def replay_streams(
    ops: list[TraceEvent], copies: list[TraceEvent], config: Config
) -> list[TraceEvent]:
    """GPU ops on `config.streams` streams assigned by `config.stream_policy`, and copies.

    Each op keeps its measured kernel time; the host launches them one `launch_interval` apart,
    in the order the executor would (`launch_order`); a stream runs its kernels one after
    another, and an op starts once its stream is free and its inputs are done (CUDA events). A
    copy back to the host starts when its producer ends (one at a time on its lane); other
    copies keep their measured place. Kernels on different streams are assumed not to slow each
    other down — true for kernels that leave the GPU room, optimistic for kernels that fill it.
    """
    from ..streams import POLICIES

    interval = launch_interval(ops)
    ordered = sorted(ops, key=lambda e: e.start)
    index = {event.name: i for i, event in enumerate(ordered)}
    producers = {
        i: sorted(index[name] for name in event.inputs if name in index)
        for i, event in enumerate(ordered)
    }
    stream_of = POLICIES[config.stream_policy].assign(
        list(range(len(ordered))), producers, config.streams
    )
    stream_free: dict[int, float] = {}
    ends: dict[int, float] = {}
    events = []
    breadth_first = len(set(stream_of.values())) > 1
    for position, i in enumerate(launch_order(ordered, producers, breadth_first)):
        event, stream = ordered[i], stream_of[i]
        start = max(
            [(position + 1) * interval, stream_free.get(stream, 0.0)]
            + [ends[p] for p in producers[i]]
        )
        ends[i] = stream_free[stream] = start + event.duration_ns
        events.append(_moved(event, f"stream/{stream}", start, ends[i]))
    origin = ordered[0].start - interval if ordered else 0
    lane_free: dict[str, float] = {}
    for copy in sorted(copies, key=lambda e: e.start):
        producer = index.get(copy.name)
        if copy.lane.endswith("d2h") and producer is not None:
            start = max(ends[producer], lane_free.get(copy.lane, 0.0))
        else:
            start = copy.start - origin
        lane_free[copy.lane] = start + copy.duration_ns
        events.append(_moved(copy, copy.lane, start, lane_free[copy.lane]))
    return events


def _moved(event: TraceEvent, lane: str, start: float, end: float) -> TraceEvent:
    return dataclasses.replace(event, lane=lane, start=int(start), end=int(end))


@collector_paused
def simulate(trace: Trace, config: Config | None = None, cores: int | None = None) -> Trace:
    """Predict the timeline of the traced graph under `config` (see the module docstring).

    >>> predicted = pg.simulate(trace, pg.Config(inter_op_threads=2))   # doctest: +SKIP
    >>> predicted.makespan_ms, predicted.plot()                          # doctest: +SKIP
    """
    if not isinstance(trace, Trace):
        raise TypeError(f"simulate() replays a Trace, got {type(trace).__name__}")
    if config is not None and not isinstance(config, Config):
        raise TypeError(
            f"simulate(trace, config): config must be a pg.Config, got {config!r:.60} "
            "(for example pg.Config(inter_op_threads=2))"
        )
    if cores is not None and (isinstance(cores, bool) or not isinstance(cores, int) or cores < 1):
        raise ValueError(f"simulate(..., cores={cores!r}): cores must be a whole number >= 1")
    if not trace.ops():
        raise ValueError("simulate() needs a trace with op events; this one has none")
    config = (config or Config()).resolved()
    cores = cores or trace.info.cores or cpu_count()
    gpu = [e for e in trace.ops() if trace.lane(e.lane).kind is LaneKind.STREAM]
    if gpu:
        if len(gpu) != len(trace.ops()):
            raise ValueError("simulate() replays CPU traces or GPU traces, not both in one graph")
        require_acyclic(gpu)
        copies = [e for e in trace.events if e.kind == EventKind.COPY]
        events = replay_streams(gpu, copies, config)
    else:
        ops = model_ops(trace, trace.info.cores)  # None: the file does not say
        require_acyclic(ops)  # an op that waits for itself has no place in any schedule
        replay = Replay(
            ops,
            config.inter_op_threads,
            config.intra_op_threads,
            cores,
            dispatch_overhead(trace),
            # our executor's rule; another producer's executor inlines by its own, unknown here
            inexpensive_ns() if trace.source == "parallelgraph" else 0.0,
        )
        events = replay.run()
        events.extend(carried_along(trace, events))
    events.sort(key=lambda e: (e.start, e.kind != EventKind.OP))
    info = RunInfo(
        config=RunConfig(config.as_dict()),
        graph=trace.info.graph if trace.info.graph is not None else "trace",
        cores=cores,
        simulated=True,
        simulated_from=trace.info.settings,
        source=trace.source,
    )
    return Trace(tuple(events), info)
