"""The what-if replay on hand-built traces with known answers."""

import pytest

import parallelgraph as pg
from parallelgraph.recorded import h200_trace
from parallelgraph.trace import Trace, TraceEvent
from parallelgraph.trace.replay import WAKE_UP_NS, simulate

MS = 1_000_000


def op(name, start, end, lane="inter-op/0", inputs=(), kind="op", shard=None):
    return TraceEvent(
        name, "x", name.split("/")[0], "cpu:0", kind, lane, start, end, 0, 0, shard, inputs
    )


def sequential(*ops):
    return Trace(tuple(ops), {"cores": 2, "config": {"inter_op_threads": 1}})


def config(inter, intra=1):
    return pg.Config(inter_op_threads=inter, intra_op_threads=intra)


def test_independent_ops_overlap_with_two_workers():
    trace = sequential(op("a/x", 0, 10 * MS), op("b/y", 10 * MS, 20 * MS))
    assert simulate(trace, config(1)).makespan_ms == pytest.approx(20, rel=0.01)
    two = simulate(trace, config(2))
    assert two.makespan_ms == pytest.approx(10 + WAKE_UP_NS / MS, rel=0.01)
    assert two.overlap("a", "b") > 0.9 and two.lanes == ["inter-op/0", "inter-op/1"]
    assert two.metadata["simulated"] is True


def test_dependencies_are_respected():
    trace = sequential(op("a/x", 0, 10 * MS), op("b/y", 10 * MS, 20 * MS, inputs=("a/x",)))
    assert simulate(trace, config(4)).makespan_ms == pytest.approx(20, rel=0.01)


def shard_trace():
    events = [op("m/mm", 0, 20 * MS)]
    events += [op("m/mm", 5 * MS * i, 5 * MS * (i + 1), kind="shard", shard=i) for i in range(4)]
    return sequential(*events)


def test_shards_spread_over_intra_op_threads():
    trace = shard_trace()
    assert simulate(trace, config(1, 1)).makespan_ms == pytest.approx(20, rel=0.01)
    two = simulate(trace, config(1, 2))
    assert two.makespan_ms == pytest.approx(10 + WAKE_UP_NS / MS, rel=0.02)
    assert {e.lane for e in two.events if e.kind == "shard"} == {"inter-op/0", "intra-op/0"}


def test_more_threads_than_cores_share_the_cores():
    trace = shard_trace()
    four = simulate(trace, config(1, 4), cores=2)
    assert four.makespan_ms >= 10  # 4 threads on 2 cores cannot beat 2 cores
    assert simulate(trace, config(1, 4), cores=4).makespan_ms < 6


def test_contended_measurements_are_corrected_to_single_core_work():
    # Two ops measured side by side on 2 lanes of a 1-core machine: each took twice its work.
    trace = Trace(
        (op("a/x", 0, 20 * MS), op("b/y", 0, 20 * MS, lane="inter-op/1")),
        {"cores": 1, "config": {"inter_op_threads": 2}},
    )
    assert simulate(trace, config(1), cores=1).makespan_ms == pytest.approx(20, rel=0.01)
    assert simulate(trace, config(2), cores=2).makespan_ms == pytest.approx(10.1, rel=0.02)


def gpu_op(name, stream, start, end, inputs=()):
    return TraceEvent(
        name,
        "matmul",
        name.split("/")[0],
        "gpu:0",
        "op",
        f"stream/{stream}",
        start,
        end,
        0,
        0,
        None,
        inputs,
    )


def test_gpu_traces_replay_on_more_streams():
    """net1 and net2 measured on one stream; on two streams (branches) they run side by side."""
    single = Trace(
        (
            gpu_op("net1/a", 0, 0, 5 * MS),
            gpu_op("net1/b", 0, 5 * MS, 10 * MS, ("net1/a",)),
            gpu_op("net2/c", 0, 10 * MS, 15 * MS),
            gpu_op("net2/d", 0, 15 * MS, 20 * MS, ("net2/c",)),
            gpu_op("out", 0, 20 * MS, 21 * MS, ("net1/b", "net2/d")),
        ),
        {},
    )
    same = simulate(single, pg.Config(streams=1))
    assert same.makespan_ms == pytest.approx(21, rel=0.01)
    two = simulate(single, pg.Config(streams=2, stream_policy="branches"))
    assert two.makespan_ms == pytest.approx(11, rel=0.02)
    assert two.overlap("net1", "net2") > 0.9
    assert {e.lane for e in two.ops() if e.scope == "net2"} == {"stream/1"}
    mixed = Trace((*single.events, op("cpu/x", 0, 5)), {})
    with pytest.raises(ValueError, match="not both"):
        simulate(mixed, config(2))


def test_real_runs_replay():
    from parallelgraph.experiments.presets import two_networks

    preset = two_networks("tiny")
    with pg.Session(preset.graph, config(1)) as sess:
        _, trace = sess.run(preset.fetch, trace=True)
    predicted = pg.simulate(trace, config(2))
    assert {e.name for e in predicted.ops()} == {e.name for e in trace.ops()}
    assert predicted.plot() is not None and "net1 and net2" in str(predicted.explain())


def test_launch_interval_is_read_off_ops_that_waited_for_the_host():
    from parallelgraph.trace.replay import LAUNCH_NS, launch_interval

    us = 1_000
    # Launch-bound: 5 us kernels launched 30 us apart, alternating between two streams.
    starts = [i * 30 * us for i in range(6)]
    launched = [gpu_op(f"n{i % 2}/k{i}", i % 2, t, t + 5 * us) for i, t in enumerate(starts)]
    assert launch_interval(launched) == pytest.approx(30 * us)
    # GPU-bound: back-to-back 5 ms kernels on one stream say nothing about the host.
    busy = [gpu_op(f"n/k{i}", 0, i * 5 * MS, (i + 1) * 5 * MS) for i in range(4)]
    assert launch_interval(busy) == LAUNCH_NS


@pytest.mark.parametrize("size", ["narrow", "small", "large"])
def test_real_h200_traces_replay_their_own_config_and_copies(size):
    """Traces of the two-network graph on 2 streams, recorded on an H200 (parallelgraph.recorded;
    benchmarks/RESULTS.md: 1.673 / 0.201 / 7.294 ms on one stream)."""
    measured = h200_trace(size)
    same = simulate(measured, pg.Config(streams=2, stream_policy="branches"))
    assert same.makespan_ms == pytest.approx(measured.makespan_ms, rel=0.1)
    (copy,) = [e for e in same.events if e.kind == "copy"]
    assert copy.start >= max(e.end for e in same.ops() if e.name == copy.name)
    one = simulate(measured, pg.Config(streams=1)).makespan_ms
    one_stream_measured = {"narrow": 1.673, "small": 0.201, "large": 7.294}[size]
    if size == "large":  # its kernels filled the GPU side by side: the replay cannot undo that
        assert one > 1.5 * one_stream_measured
    else:
        assert one == pytest.approx(one_stream_measured, rel=0.1)


def test_recorded_traces_ship_with_the_package_and_say_what_they_are():
    medians = pg.recorded.h200_medians()
    assert medians["device"] == "NVIDIA H200"
    sizes = {row["size"] for row in medians["rows"]}
    assert sizes == set(pg.recorded.H200_SIZES)
    for size in pg.recorded.H200_SIZES:
        trace = pg.recorded.h200_trace(size)
        assert {e.lane for e in trace.ops()} == {"stream/0", "stream/1"}
    with pytest.raises(ValueError, match="no recorded H200 trace for size 'huge'"):
        pg.recorded.h200_trace("huge")


def test_replayed_launches_follow_the_executors_order():
    """One stream: scope by scope (net1's chain first), as the plan's graph order launches;
    several: breadth-first, as Plan.priority launches. Either way, dependencies first."""
    trace = pg.recorded.h200_trace("narrow")  # recorded breadth-first, on two streams
    chain = ["RandomNormal", "MatMul", "Add", "MatMul_1"]

    def launched(streams):
        replayed = simulate(trace, pg.Config(streams=streams, stream_policy="branches"))
        return [e.name for e in sorted(replayed.ops(), key=lambda e: e.start)]

    assert launched(1) == [f"{n}/{op}" for n in ("net1", "net2") for op in chain] + ["out"]
    assert launched(2)[:2] == ["net1/RandomNormal", "net2/RandomNormal"]
    assert launched(2)[-1] == "out"
