"""The replay never predicts below its own bound.

Whatever the trace and whatever `Config` it is replayed under, no schedule can finish before
max(work / P, critical path): P the threads (or streams) that can compute at once on the
replay's cores, the critical path the longest chain of dependent ops, each op at the least time
the config allows it. The traces are generated with their work, chains and ops' least times
known by construction, and the bound is computed here from that construction, never from the
replay or the trace's own analyses:

- traces of a producer nobody knows (`generated_traces.generate`): a main thread that launches
  and waits, 2-4 workers side by side, flows between them; the file does not say how many cores
  ran it;
- our own CPU traces: ops on inter-op workers, some split into shards that ran on the op's
  worker and on intra-op helpers, inputs between ops; the trace records the cores it ran on, and
  never had more threads computing than those (so its times are its work);
- our own GPU traces: kernels on streams with inputs, replayed on `Config.streams` streams under
  every stream policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from generated_traces import generate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parallelgraph as pg
from parallelgraph.chrome import from_chrome
from parallelgraph.streams import POLICIES
from parallelgraph.trace import Trace, TraceEvent

US = 1_000  # ns
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
configs = st.builds(
    pg.Config,
    inter_op_threads=st.integers(0, 4),
    intra_op_threads=st.integers(0, 4),
    streams=st.integers(1, 4),
    stream_policy=st.sampled_from(sorted(POLICIES)),
)


@dataclass
class Built:
    """A trace's ops as they were built: each one's serial work, its shards' work, inputs."""

    serial: dict[str, int] = field(default_factory=dict)
    shards: dict[str, list[int]] = field(default_factory=dict)
    inputs: dict[str, list[str]] = field(default_factory=dict)
    events: list[TraceEvent] = field(default_factory=list)

    def least_ns(self, name: str, threads: int) -> float:
        """The least time the op can take when its shards may use `threads` threads."""
        shards = self.shards[name]
        spread = max(max(shards), sum(shards) / threads) if shards else 0
        return self.serial[name] + spread

    def chain_ns(self, threads: int) -> float:
        longest: dict[str, float] = {}
        for name in self.serial:  # built in a topological order
            before = max((longest[i] for i in self.inputs[name]), default=0.0)
            longest[name] = before + self.least_ns(name, threads)
        return max(longest.values())

    @property
    def work_ns(self) -> int:
        return sum(self.serial[n] + sum(self.shards[n]) for n in self.serial)


def event(name, lane, start, end, inputs=(), kind="op", shard=None, device="cpu:0"):
    scope = name.split("/")[0]
    return TraceEvent(name, "x", scope, device, kind, lane, start, end, 0, 0, shard, inputs)


@st.composite
def cpu_traces(draw) -> tuple[Trace, Built]:
    """Ops on 1-3 inter-op workers, each after its inputs, some split into 2-4 shards that run
    on the op's worker and on 0-2 intra-op helpers."""
    built = Built()
    workers = draw(st.integers(1, 3))
    helpers = draw(st.integers(0, 2))
    free = {f"inter-op/{i}": 0 for i in range(workers)} | {
        f"intra-op/{i}": 0 for i in range(helpers)
    }
    for number in range(draw(st.integers(1, 8))):
        name = f"s{number % 3}/op{number}"
        inputs = draw(some_of(list(built.serial)))
        lane = f"inter-op/{draw(st.integers(0, workers - 1))}"
        start = max([free[lane]] + [end_of(built, i) for i in inputs])
        serial = draw(st.integers(1, 500)) * US
        shards = draw(st.lists(st.integers(1, 500), max_size=4)) if helpers else []
        shards = [work * US for work in shards] if len(shards) > 1 else []
        clock = start + serial
        for index, work in enumerate(shards):
            where = draw(st.sampled_from([lane] + [f"intra-op/{i}" for i in range(helpers)]))
            begins = clock if where == lane else max(start + serial, free[where])
            built.events.append(
                event(name, where, begins, begins + work, kind="shard", shard=index)
            )
            free[where] = begins + work
            if where == lane:
                clock = begins + work
        end = max([start + serial] + [e.end for e in built.events if e.name == name])
        built.events.append(event(name, lane, start, end, tuple(inputs)))
        free[lane] = end
        built.serial[name], built.shards[name], built.inputs[name] = serial, shards, inputs
    lanes = {e.lane for e in built.events}
    info = {"cores": len(lanes), "config": {"inter_op_threads": workers}}
    return Trace(tuple(built.events), info), built


def some_of(names: list[str]) -> st.SearchStrategy[list[str]]:
    """Up to two of the ops built so far: an op's inputs."""
    if not names:
        return st.just([])
    return st.lists(st.sampled_from(names), max_size=2, unique=True).map(sorted)


def end_of(built: Built, name: str) -> int:
    return max(e.end for e in built.events if e.name == name and e.kind == "op")


@st.composite
def gpu_traces(draw) -> tuple[Trace, Built]:
    """Kernels on 1-2 streams, each after its inputs and its stream's previous kernel."""
    built = Built()
    free = {0: 0, 1: 0}
    for number in range(draw(st.integers(1, 8))):
        name = f"s{number % 2}/k{number}"
        inputs = draw(some_of(list(built.serial)))
        stream = draw(st.integers(0, 1))
        start = max([free[stream]] + [end_of(built, i) for i in inputs])
        work = draw(st.integers(1, 500)) * US
        lane = f"stream/{stream}"
        built.events.append(event(name, lane, start, start + work, tuple(inputs), device="gpu:0"))
        free[stream] = start + work
        built.serial[name], built.shards[name], built.inputs[name] = work, [], inputs
    return Trace(tuple(built.events), {}), built


def assert_at_least(predicted: Trace, bound_ns: float) -> None:
    makespan_ns = predicted.makespan_ms * 1e6
    assert makespan_ns >= bound_ns * (1 - 1e-9) - 2, (makespan_ns, bound_ns)


@SETTINGS
@given(seed=st.integers(0, 10_000), config=configs, cores=st.integers(1, 4))
def test_an_unknown_producers_trace_is_never_replayed_below_its_bound(seed, config, cores):
    events, truth = generate(seed)
    trace = from_chrome(events)
    assert trace.info.cores is None  # the file does not say what ran it
    predicted = pg.simulate(trace, config, cores=cores)
    threads = min(cores, config.resolved().inter_op_threads)  # no shards: the workers compute
    bound = max(truth.work_us * US / threads, truth.critical_path_us * US)
    assert_at_least(predicted, bound)


@SETTINGS
@given(built=cpu_traces(), config=configs, cores=st.integers(1, 4))
def test_our_own_cpu_trace_is_never_replayed_below_its_bound(built, config, cores):
    trace, ops = built
    predicted = pg.simulate(trace, config, cores=cores)
    resolved = config.resolved()
    intra = min(cores, resolved.intra_op_threads)  # the threads one op's shards can use
    threads = min(cores, resolved.inter_op_threads + resolved.intra_op_threads - 1)
    assert_at_least(predicted, max(ops.work_ns / threads, ops.chain_ns(intra)))


@SETTINGS
@given(built=gpu_traces(), config=configs)
def test_a_gpu_trace_is_never_replayed_below_its_bound(built, config):
    trace, ops = built
    predicted = pg.simulate(trace, config)
    assert_at_least(predicted, max(ops.work_ns / config.streams, ops.chain_ns(1)))


def test_the_cores_of_the_replaying_machine_never_shrink_an_imported_traces_work():
    """Four threads of a file from another machine, busy side by side for 1 s each: replayed
    on two workers of a 2-core machine they take 2 s — not the 1 s of work "corrected" for a
    contention that the file does not show (the file does not say it ran on 2 cores)."""
    events = [
        {"ph": "X", "name": f"op{t}", "pid": 1, "tid": t, "ts": 0, "dur": 1e6} for t in range(4)
    ]
    trace = from_chrome(events)
    predicted = pg.simulate(trace, pg.Config(inter_op_threads=2), cores=2)
    assert predicted.makespan_ms == pytest.approx(2000, rel=0.01)
