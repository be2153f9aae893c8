"""Stream policies: which CUDA stream each GPU op of the two-network graph gets."""

import pytest
from helpers import seed_graph

import parallelgraph as pg
from parallelgraph.plan import build_plan
from parallelgraph.streams import POLICIES


def gpu_plan(policy, streams):
    g, out, _ = seed_graph(device="gpu:0")
    config = pg.Config(streams=streams, stream_policy=policy)
    return build_plan(g, [out.op], [], config, gpu_available=True)


def streams_by_scope(plan):
    by_scope = {}
    for step in plan.steps:
        by_scope.setdefault(step.op.scope or "<root>", set()).add(step.stream)
    return by_scope


def test_single_puts_everything_on_one_stream():
    plan = gpu_plan("single", 4)
    assert {s.stream for s in plan.steps} == {0} and plan.streams == 1
    assert all(not s.waits for s in plan.steps)


def test_branches_gives_each_network_its_own_stream_and_joins_with_events():
    plan = gpu_plan("branches", 2)
    assert streams_by_scope(plan) == {"net1": {0}, "net2": {1}, "<root>": {0}}
    (out,) = [s for s in plan.steps if s.op.name == "Add"]
    net2_last = next(s for s in plan.steps if s.op.name == "net2/MatMul_1")
    assert out.waits == (net2_last.index,)
    assert all(not s.waits for s in plan.steps if s is not out)


def test_branches_with_one_stream_is_single():
    assert {s.stream for s in gpu_plan("branches", 1).steps} == {0}


def test_round_robin_cycles_through_streams():
    plan = gpu_plan("round_robin", 3)
    assert [s.stream for s in plan.steps] == [i % 3 for i in range(len(plan.steps))]
    for step in plan.steps:  # every cross-stream producer is waited for
        producers = {p.index for p in plan.steps if step.index in p.consumers}
        assert set(step.waits) == {p for p in producers if plan.steps[p].stream != step.stream}


def test_forks_open_new_streams():
    producers = {1: [0], 2: [0], 3: [1, 2]}
    assert POLICIES["branches"].assign([0, 1, 2, 3], producers, 4) == {0: 0, 1: 0, 2: 1, 3: 0}


def test_cpu_ops_have_no_stream():
    plan = gpu_plan("branches", 2)
    g, out, _ = seed_graph()
    cpu = build_plan(g, [out.op], [], pg.Config(), gpu_available=True)
    assert all(s.stream is None for s in cpu.steps) and cpu.streams == 0
    assert plan.uses_gpu and not cpu.uses_gpu


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="stream_policy"):
        pg.Config(stream_policy="fastest")


def test_multi_stream_plans_launch_breadth_first_and_cpu_plans_keep_graph_order():
    """With GPU steps on several streams every chain gets its first kernel launched before any
    gets its second; elsewhere ready steps are taken in graph order (depth-first on a chain)."""
    from parallelgraph.experiments.presets import two_networks

    preset = two_networks("tiny", device_name="gpu:0")

    def launch_order(gpu=True, **config):
        plan = build_plan(preset.graph, [preset.fetch.op], [], pg.Config(**config), gpu)
        return [plan.steps[index].op.name for index in plan.by_priority]

    chain = ["RandomNormal", "MatMul", "Add", "MatMul_1"]
    depth_first = [f"{net}/{op}" for net in ("net1", "net2") for op in chain] + ["out"]
    breadth_first = [f"{net}/{op}" for op in chain for net in ("net1", "net2")] + ["out"]
    assert launch_order(streams=1) == depth_first
    assert launch_order(streams=2, stream_policy="branches") == breadth_first
    assert launch_order(gpu=False, streams=2) == depth_first  # soft-placed on the CPU


def test_a_run_wakes_only_the_inter_op_workers_that_can_have_work():
    from parallelgraph.experiments.presets import two_networks

    def workers(size, gpu, threads):
        preset = two_networks(size, device_name="gpu:0")
        plan = build_plan(preset.graph, [preset.fetch.op], [], pg.Config(), gpu)
        return plan.useful_workers(threads)

    assert workers("small", gpu=True, threads=16) == 1  # every step on the GPU: one launches
    # nine CPU steps, but two chains: never more than two of them ready at once
    assert workers("small", gpu=False, threads=16) == 2
    assert workers("small", gpu=False, threads=2) == 2
    assert workers("small", gpu=False, threads=1) == 1
    # every op estimated under INEXPENSIVE_NS: a second worker would only contend for the GIL
    assert workers("tiny", gpu=False, threads=16) == 1
