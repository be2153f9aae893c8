"""explain(): each cause, shown by a trace built to exhibit it, is named in the report."""

from pathlib import Path

import pytest

import parallelgraph as pg
from parallelgraph.explain import explain
from parallelgraph.recorded import h200_trace
from parallelgraph.trace import Trace, TraceEvent


def op(name, lane, start, end, inputs=()):
    return TraceEvent(
        name, "x", name.rpartition("/")[0], "cpu:0", "op", lane, start, end, 0, 0, None, inputs
    )


def config(inter, streams=1):
    return {"config": {"inter_op_threads": inter, "intra_op_threads": 1, "streams": streams}}


MS = 1_000_000


def test_overlapping_scopes_are_reported_as_parallel():
    trace = Trace(
        (op("net1/a", "inter-op/0", 0, 10 * MS), op("net2/a", "inter-op/1", 0, 9 * MS)), config(2)
    )
    report = explain(trace)
    (pair,) = report.pairs
    assert pair.overlapped and pair.cause is None
    assert "net1 and net2: ran in parallel (overlap 1.00)" in str(report)


def test_cause_one_inter_op_thread():
    trace = Trace(
        (op("net1/a", "inter-op/0", 0, 10 * MS), op("net2/a", "inter-op/0", 10 * MS, 20 * MS)),
        config(1),
    )
    report = explain(trace)
    assert report.pairs[0].cause == "one worker"
    text = str(report)
    assert "did not overlap (overlap 0.00)" in text and "inter_op_threads=1" in text
    assert "raise inter_op_threads" in report.suggestion


def test_cause_dependency():
    trace = Trace(
        (
            op("net1/a", "inter-op/0", 0, 10 * MS),
            op("net2/b", "inter-op/1", 10 * MS, 20 * MS, ("net1/a",)),
        ),
        config(2),
    )
    report = explain(trace)
    assert report.pairs[0].cause == "dependency"
    assert "'net2/b' needs 'net1/a'" in str(report)


def test_cause_every_worker_busy():
    trace = Trace(
        (
            op("net1/a", "inter-op/0", 0, 10 * MS),
            op("net3/c", "inter-op/1", 0, 10 * MS),
            op("net2/b", "inter-op/0", 10 * MS, 20 * MS),
            op("net4/d", "inter-op/1", 10 * MS, 20 * MS),
        ),
        config(2),
    )
    report = explain(trace)
    causes = {(p.scope_a, p.scope_b): p.cause for p in report.pairs}
    assert causes[("net1", "net2")] == "all workers busy"
    assert "every worker busy" in str(report) and "net3" in str(report)


def test_cause_ops_too_short():
    events = []
    for i in range(10):
        events.append(op(f"net1/a{i}", "inter-op/0", 2 * i * 20_000, (2 * i + 1) * 20_000))
        events.append(op(f"net2/b{i}", "inter-op/1", (2 * i + 1) * 20_000, (2 * i + 2) * 20_000))
    report = explain(Trace(tuple(events), config(2)))
    assert report.pairs[0].cause == "ops too short"
    assert "median duration is 20.0 us" in str(report)
    assert "make ops bigger" in report.suggestion


def test_inexpensive_ops_on_one_thread_are_said_to_be_our_choice():
    preset = pg.presets.two_networks("tiny")
    with pg.Session(preset.graph, pg.Config(inter_op_threads=2)) as session:
        session.run(preset.fetch)
        _, trace = session.run(preset.fetch, trace=True)
    report = explain(trace)
    assert report.pairs[0].cause == "ops too short"
    assert "parallelgraph ran them all on one" in str(report)
    assert "as TensorFlow runs inexpensive ops inline" in str(report)


@pytest.mark.parametrize("fuse", [False, True])
def test_tiny_ops_are_told_of_fusion_unless_it_was_on(fuse):
    """The advice for tiny ops names the knob that makes steps bigger, Config(fuse=True), and
    does not ask for it again of a run that had it (whose plan has fewer, fused steps)."""
    preset = pg.presets.two_networks("tiny")
    with pg.Session(preset.graph, pg.Config(inter_op_threads=2, fuse=fuse)) as session:
        session.run(preset.fetch)
        _, trace = session.run(preset.fetch, trace=True)
        steps = session.plan_for(preset.fetch).steps
    assert any(s.op.type == "fused" for s in steps) == fuse  # matmul+add as one step
    report = explain(trace)
    assert report.pairs[0].cause == "ops too short"
    assert ("Config(fuse=True) runs each group" in report.suggestion) != fuse
    assert ("this run had Config(fuse=True)" in report.suggestion) == fuse
    assert "make ops bigger" in report.suggestion


def test_cause_ops_finished_before_a_second_worker_woke_up(monkeypatch):
    """Ops shorter than a hand-off all ran on one of two workers: too short to be worth the
    other one. The hand-off is the one measured on the machine (here made 400 us)."""
    from parallelgraph import calibration

    monkeypatch.setattr(calibration, "handoff_ns", lambda: 400_000)
    trace = Trace(
        (op("net1/a", "inter-op/0", 0, 300_000), op("net2/a", "inter-op/0", 300_000, 600_000)),
        config(2),
    )
    report = explain(trace)
    assert report.pairs[0].cause == "ops too short"
    assert "before another worker thread could have taken the next one" in str(report)
    assert "(a hand-off costs about 512 us on this machine)" in str(report)  # 400, rounded


def test_ops_far_longer_than_a_handoff_on_one_of_two_workers_are_not_called_too_short():
    """Two independent 300 us ops on one of two workers: a hand-off (20 us, as the tests pin it)
    would have let the other worker take one, so "too short" would contradict the measured
    hand-off; a hand-made trace says nothing more, so the cause is not determined (a fixed 1 ms
    bar once called such ops too short)."""
    trace = Trace(
        (op("net1/a", "inter-op/0", 0, 300_000), op("net2/a", "inter-op/0", 300_000, 600_000)),
        config(2),
    )
    report = explain(trace)
    assert report.pairs[0].cause != "ops too short"
    # The idle thread is the one that has no lane at all; the lane that ran both ops was never
    # idle, so it is not listed as idle ("idle: inter-op/0 0%" once contradicted itself).
    assert "(1 of the 2 inter-op threads ran no op at all)" in str(report)
    assert "inter-op/0 0%" not in str(report)


def test_cause_soft_placement():
    metadata = config(1, streams=2)
    metadata["notes"] = [
        "net1/a: placed on gpu:0, ran on cpu:0 (soft placement)",
        "net2/a: placed on gpu:0, ran on cpu:0 (soft placement)",
    ]
    trace = Trace(
        (op("net1/a", "inter-op/0", 0, 10 * MS), op("net2/a", "inter-op/0", 10 * MS, 20 * MS)),
        metadata,
    )
    report = explain(trace)
    assert report.pairs[0].cause == "soft placement"
    assert "Soft placement: 2 op(s) placed on gpu:0 ran on cpu:0" in str(report)


def test_bounds_and_critical_path_are_reported():
    trace = Trace(
        (
            op("net1/a", "inter-op/0", 0, 10 * MS),
            op("net1/b", "inter-op/0", 10 * MS, 30 * MS, ("net1/a",)),
            op("net2/c", "inter-op/1", 0, 5 * MS),
        ),
        config(2),
    )
    report = explain(trace)
    assert report.critical_path.names == ["net1/a", "net1/b"]
    assert report.lower_bound_ns == 30 * MS
    text = str(report)
    assert "Makespan 30.00 ms" in text and "no schedule on those lanes beats 30.00 ms" in text
    assert "raise intra_op_threads" in report.suggestion
    assert "<li>" in report._repr_html_()


def test_explain_on_a_real_run():
    g = pg.Graph()
    with g.as_default():
        for name in ("net1", "net2"):
            with pg.scope(name):
                pg.tanh(pg.random_normal((64, 64), seed=1))
    with pg.Session(g, pg.Config(inter_op_threads=1)) as sess:
        _, trace = sess.run([g.tensor("net1/Tanh"), g.tensor("net2/Tanh")], trace=True)
    report = trace.explain()
    assert report.pairs[0].cause == "one worker"
    assert "net1 and net2" in repr(report)


@pytest.mark.parametrize("scopes", [1, 9])
def test_single_scope_and_many_pairs(scopes):
    events = tuple(op(f"s{i}/a", "inter-op/0", i * MS, (i + 1) * MS) for i in range(scopes))
    report = explain(Trace(events, config(1)))
    if scopes == 1:
        assert "Only one top-level scope ran" in str(report)
    else:
        assert len(report.pairs) == 36 and report.omitted_pairs == 0
        text = str(report)
        assert text.count(": did not overlap") == 4  # the first few, then a count
        assert "(32 more pairs: 0 ran in parallel, 32 did not; report.pairs has" in text


def test_cause_one_cuda_stream():
    metadata = {"config": {"inter_op_threads": 2, "streams": 1, "stream_policy": "branches"}}
    events = (
        TraceEvent("net1/a", "matmul", "net1", "gpu:0", "op", "stream/0", 0, 10 * MS),
        TraceEvent("net2/a", "matmul", "net2", "gpu:0", "op", "stream/0", 10 * MS, 20 * MS),
    )
    report = explain(Trace(events, metadata))
    assert report.pairs[0].cause == "one stream"
    assert "TensorFlow 1.x's single compute stream" in str(report)
    assert "streams=2" in report.suggestion


def test_imported_tensorflow_timeline_is_explained():
    trace = pg.Trace.load(Path(__file__).parent / "fixtures/traces/tf_timeline_seed.json")
    report = trace.explain()
    assert report.pairs[0].scope_a == "net1" and not report.pairs[0].overlapped
    assert report.pairs[0].cause == "one stream"
    assert "gpu:0/stream:14" in str(report)


def test_cause_scheduling_latency():
    metadata = {"config": {"inter_op_threads": 2, "executor": "dask"}}
    trace = Trace(
        (
            op("net1/a", "worker-0/0", 0, 2 * MS),
            op("net1/b", "worker-0/0", 7 * MS, 9 * MS, ("net1/a",)),
            op("net2/c", "worker-1/0", 9 * MS, 11 * MS),
            op("net2/d", "worker-1/0", 16 * MS, 18 * MS, ("net2/c",)),
        ),
        metadata,
    )
    report = explain(trace)
    assert report.pairs[0].cause == "scheduling latency"
    assert "median 5.00 ms after its inputs" in str(report) and "Dask scheduler" in str(report)
    assert "fewer, bigger tasks" in report.suggestion


def kernel(name, stream, start, end, inputs=()):
    scope = name.rpartition("/")[0]
    lane = f"stream/{stream}"
    return TraceEvent(name, "x", scope, "gpu:0", "op", lane, start, end, 0, 0, None, inputs)


US = 1_000


def test_gpu_kernels_too_short_are_called_launch_bound_and_no_cpu_threads_are_proposed():
    """Two streams, 10 us kernels with 30 us gaps between them (the host launching)."""
    events = []
    for index in range(4):
        start = index * 80 * US
        events.append(kernel(f"net1/k{index}", 0, start, start + 10 * US))
        events.append(kernel(f"net2/k{index}", 1, start + 40 * US, start + 50 * US))
    report = explain(Trace(events, config(1, streams=2)))
    assert report.pairs[0].cause == "ops too short"
    text = str(report)
    assert "kernels too short" in text and "launching a kernel from Python" in text
    assert "some kernel running 28% of it" in text  # 8 kernels of 10 us in 290 us
    assert "fewer, bigger kernels" in report.suggestion and "launch-bound" in report.suggestion
    assert "inter_op_threads" not in report.suggestion + text.split("Cause")[1]


def test_gpu_streams_that_overlap_are_not_called_a_speed_up():
    events = [
        kernel("net1/matmul", 0, 0, 5 * MS),
        kernel("net2/matmul", 1, 0, 5 * MS),
        kernel("out", 0, 5 * MS, 6 * MS, ("net1/matmul", "net2/matmul")),
    ]
    report = explain(Trace(events, config(1, streams=2)))
    assert report.pairs[0].overlapped
    text = str(report)
    assert "overlap shows they ran at once, not that the run got shorter" in text
    assert "some kernel running 100% of it" in text and "Work" not in text
    assert "intra_op_threads" not in report.suggestion
    assert "faster kernels on the critical path" in report.suggestion


@pytest.mark.parametrize(
    "size, cause, advice",
    [
        ("narrow", None, "faster kernels on the critical path"),
        ("small", "ops too short", "fewer, bigger kernels"),
        ("large", None, "faster kernels on the critical path"),
    ],
)
def test_real_h200_traces_are_explained_as_gpu_runs(size, cause, advice):
    """Traces of the two-network graph on 2 streams, recorded on an H200 by
    benchmarks/gpu_streams.py (parallelgraph.recorded)."""
    report = explain(h200_trace(size))
    (pair,) = report.pairs
    assert pair.cause == cause and report.gpu_busy is not None
    assert advice in report.suggestion
    assert "inter_op_threads" not in report.suggestion
    assert "intra_op_threads" not in report.suggestion


def test_numbas_compiler_in_a_run_is_said_from_the_sessions_record():
    preset = pg.presets.two_networks("tiny")
    with pg.Session(preset.graph) as session:
        session.run(preset.fetch)
        _, trace = session.run(preset.fetch, trace=True)
    assert trace.metadata["jit"]["busy_s"] == 0.0  # kernels loaded by the first run
    assert "Numba" not in str(trace.explain()) and "first run" not in str(trace.explain())

    makespan = trace.makespan_s
    trace.metadata["jit"] = {"busy_s": makespan / 2, "compiled": 3, "compile_s": makespan / 3}
    text = str(trace.explain())
    assert "Numba's compiler held this run up" in text and "3 kernel(s) compiled" in text
    assert "steady state" in text
    trace.metadata["jit"] = {"busy_s": makespan / 2, "compiled": 0, "compile_s": 0.0}
    assert "loaded from Numba's cache" in str(trace.explain())
    trace.metadata["jit"] = {"busy_s": makespan / 1000, "compiled": 0, "compile_s": 0.0}
    assert "Numba" not in str(trace.explain())  # too small to matter


def test_an_older_traces_first_run_still_gets_the_general_note():
    preset = pg.presets.two_networks("tiny")
    with pg.Session(preset.graph) as session:
        _, trace = session.run(preset.fetch, trace=True)
    del trace.metadata["jit"]
    assert "first run" in str(trace.explain())
    trace.metadata["run"] = 1
    assert "first run" not in str(trace.explain())


def test_cause_every_worker_busy_until_the_later_branch_started():
    """Three branches on two workers: the third waits for a free worker, then runs while the
    first one is still going (its exclusive time alone would not show all workers busy)."""
    trace = Trace(
        (
            op("net1/a", "inter-op/0", 0, 25 * MS),
            op("net2/a", "inter-op/1", 0, 13 * MS),
            op("net3/a", "inter-op/1", 13 * MS, 37 * MS),
        ),
        config(2),
    )
    report = explain(trace)
    pair = next(p for p in report.pairs if {p.scope_a, p.scope_b} == {"net2", "net3"})
    assert pair.cause == "all workers busy"
    assert "until net3 started" in pair.detail


def test_many_branches_are_summed_up_as_a_group_first():
    """Eight heads: 28 pairs; the report says first how many overlapped and why the others did
    not, with the counts (its numbers are the pairs')."""
    preset = pg.models.preset("attention", "tiny")
    with pg.Session(preset.graph, pg.Config(inter_op_threads=1)) as session:
        _, trace = session.run(preset.fetch, trace=True)
    report = trace.explain()
    group = report.group()
    assert group is not None and group.pairs == len(report.pairs)
    assert group.overlapped + group.partly <= group.pairs
    assert sum(n for _, n in group.causes) == group.pairs - group.overlapped
    assert group.branches[0] == "attention/head0" and "attention/head1" in group.branches
    assert report.lines()[0] == group.line()
