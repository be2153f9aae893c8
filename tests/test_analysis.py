"""Trace analysis on small hand-built traces with known answers."""

import pytest

from parallelgraph.trace import Trace, TraceEvent, analysis


def op(name, lane, start, end, inputs=(), kind="op", shard=None):
    scope = name.rpartition("/")[0]
    return TraceEvent(name, "x", scope, "cpu:0", kind, lane, start, end, 0, 0, shard, inputs)


def diamond():
    """a -> (b on lane 0, c on lane 1) -> d; c has 2 shards, one on a helper lane."""
    return Trace(
        (
            op("s/a", "inter-op/0", 0, 10),
            op("s/b", "inter-op/0", 10, 40, ("s/a",)),
            op("t/c", "inter-op/1", 12, 32, ("s/a",)),
            op("t/c", "inter-op/1", 12, 22, kind="shard", shard=0),
            op("t/c", "intra-op/0", 12, 30, kind="shard", shard=1),
            op("d", "inter-op/0", 45, 50, ("s/b", "t/c")),
        )
    )


def test_work_counts_shards_instead_of_their_op():
    assert analysis.total_work_ns(diamond()) == 10 + 30 + (10 + 18) + 5


def test_critical_path_follows_inputs():
    path = analysis.critical_path(diamond())
    assert path.names == ["s/a", "s/b", "d"] and path.length_ns == 45


def test_critical_path_without_dependency_data_is_the_longest_op():
    trace = Trace((op("a", "x/0", 0, 5), op("b", "x/1", 0, 9)))
    assert analysis.critical_path(trace).names == ["b"]
    assert analysis.critical_path(Trace(())).length_ns == 0


def test_lower_bound_and_trace_methods():
    trace = diamond()
    assert analysis.lower_bound_ns(trace) == max(73 // 3, 45) == 45
    assert analysis.lower_bound_ns(trace, workers=1) == 73
    assert trace.lower_bound_s(1) == pytest.approx(73e-9)
    assert trace.work_s() == pytest.approx(73e-9)
    assert trace.critical_path().names == ["s/a", "s/b", "d"]


def test_utilization_and_idle_gaps():
    trace = diamond()
    use = trace.utilization()
    assert use["inter-op/0"] == pytest.approx(45 / 50)
    assert use["intra-op/0"] == pytest.approx(18 / 50)
    assert analysis.idle_gaps_ns(trace, "inter-op/0") == [(40, 45)]
    assert analysis.idle_gaps_ns(trace, "inter-op/1") == [(0, 12), (32, 50)]
    assert analysis.idle_gaps_ns(trace, "inter-op/1", minimum_ns=15) == [(32, 50)]
    assert trace.idle_gaps_ms("inter-op/0") == [(40e-6, 45e-6)]


def test_dependency_between_scopes():
    chain = Trace(
        (
            op("a/x", "l/0", 0, 10),
            op("mid", "l/0", 10, 20, ("a/x",)),
            op("b/y", "l/0", 20, 30, ("mid",)),
            op("c/z", "l/1", 0, 30),
        )
    )
    assert analysis.dependency_between(chain, "a", "b") == ("a/x", "b/y")
    assert analysis.dependency_between(chain, "b", "a") == ("a/x", "b/y")
    assert analysis.dependency_between(chain, "a", "c") is None
    assert analysis.worker_lanes(chain) == ["l/0", "l/1"]


def test_all_busy_fraction_and_exclusive_time():
    trace = Trace(
        (
            op("a/x", "w/0", 0, 100),
            op("c/z", "w/1", 0, 100),
            op("b/y", "w/0", 100, 150),
        )
    )
    alone = analysis.exclusive_time(trace.busy_intervals("a"), trace.busy_intervals("b"))
    assert alone == [(0, 150)]
    assert analysis.all_busy_fraction(trace, ["w/0", "w/1"], alone) == pytest.approx(100 / 150)
