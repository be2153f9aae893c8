"""The cuda executor under Numba's CUDA simulator (tiny sizes): same outputs as the CPU
reference for every op and stream policy, cross-stream events, copies, buffers allocated once."""

import numpy as np
import pytest
from helpers import seed_graph

import parallelgraph as pg
from parallelgraph.executors import cuda as cuda_executor

POLICIES = [("single", 1), ("branches", 2), ("round_robin", 3)]


def all_ops_graph(dtype):
    rng = np.random.default_rng(3)
    g = pg.Graph("all-ops")
    with g.as_default(), pg.device("gpu:0"):
        with pg.scope("net1"):
            x = pg.random_normal((6, 5), seed=7, dtype=dtype)
            w = pg.variable((5, 4), name="w", dtype=dtype)
            b = pg.variable((4,), name="b", dtype=dtype)
            h = pg.relu(pg.matmul(x, w) + b)
            s = pg.reduce_sum(h, axis=0)
        with pg.scope("net2"):
            c = pg.constant(rng.standard_normal((6, 4)).astype(dtype))
            t = pg.sigmoid(pg.exp(pg.tanh(c * 0.5)) * 2.0)
            m = pg.reduce_mean(t)
            n = pg.add_n([t, t, c])
        out = pg.add_n([h, n, t]) + pg.reduce_mean(h) * pg.reduce_sum(h, axis=0)
    return g, [out, s, m, n, h]


def run(graph, fetches, config):
    with pg.Session(graph, config) as sess:
        return sess.run(fetches, trace=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("policy, streams", POLICIES)
def test_gpu_outputs_match_the_cpu_reference(dtype, policy, streams):
    g, fetches = all_ops_graph(dtype)
    expected, _ = run(g, fetches, pg.Config(executor="sequential"))
    actual, trace = run(g, fetches, pg.Config(streams=streams, stream_policy=policy))
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    for want, got in zip(expected, actual):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
    assert {e.device for e in trace.ops()} == {"gpu:0"}
    lanes = {e.lane for e in trace.ops()}
    assert lanes <= {f"stream/{i}" for i in range(streams)} and len(lanes) == min(streams, 7)


def test_seed_graph_on_two_streams_trace_lanes_and_overlap_api():
    g, out, _ = seed_graph(device="gpu:0")
    (value,), trace = run(g, [out], pg.Config(streams=2, stream_policy="branches"))
    by_scope = {e.scope: e.lane for e in trace.ops()}
    assert by_scope["net1"] == "stream/0" and by_scope["net2"] == "stream/1"
    assert 0.0 <= trace.overlap("net1", "net2") <= 1.0
    expected, _ = run(g, [out], pg.Config(executor="sequential"))
    np.testing.assert_allclose(value, expected[0], rtol=1e-5, atol=1e-5)


class EventSpy:
    """Wraps the device's events to log record/wait calls in order."""

    def __init__(self, monkeypatch, device):
        self.log = []
        real_event = device._event

        def spy_event():
            event = real_event()
            return SpiedEvent(event, self.log)

        monkeypatch.setattr(device, "_event", spy_event)


class SpiedEvent:
    def __init__(self, event, log):
        self.event, self.log = event, log

    def record(self, stream):
        self.log.append(("record", id(self), id(stream)))
        self.event.record(stream)

    def wait(self, stream):
        self.log.append(("wait", id(self), id(stream)))
        self.event.wait(stream)

    def __getattr__(self, name):
        return getattr(self.event, name)


def test_consumers_wait_on_producer_events_of_other_streams(monkeypatch):
    """Fails if the cross-stream event wait is removed from the executor: for every producer
    on another stream, the consumer's stream waits on the producer's end event after that
    event was recorded and before the consumer's own kernel (its start event) is queued."""
    g, out, _ = seed_graph(device="gpu:0")
    with pg.Session(g, pg.Config(streams=2, stream_policy="branches")) as sess:
        plan = sess.plan_for(out)
        sess.run(out)  # creates the device part of the executor
        device = sess._executor._gpu
        device._plans.clear()  # the next run makes new events, through the spy
        spy = EventSpy(monkeypatch, device)
        sess.run(out)
        buffers = device._plans[id(plan)]
    cross = [(producer, step) for step in plan.steps for producer in step.waits]
    assert cross, "the two-network graph on 2 streams has a cross-stream join"
    for producer, consumer in cross:
        end = id(buffers.end_events[producer])
        start = id(buffers.start_events[consumer.index])
        producer_stream = id(device.streams[plan.steps[producer].stream])
        consumer_stream = id(device.streams[consumer.stream])
        recorded = spy.log.index(("record", end, producer_stream))
        waited = spy.log.index(("wait", end, consumer_stream))
        queued = spy.log.index(("record", start, consumer_stream))
        assert recorded < waited < queued


def test_variables_stay_on_the_device_and_buffers_are_allocated_once(monkeypatch):
    g, out, _ = seed_graph(device="gpu:0")
    with pg.Session(g, pg.Config(streams=2)) as sess:
        _, first = sess.run(out, trace=True)
        from numba import cuda

        allocations = []
        real = cuda.device_array
        monkeypatch.setattr(
            cuda, "device_array", lambda *a, **k: allocations.append(a) or real(*a, **k)
        )
        _, second = sess.run(out, trace=True)
    copies_in = lambda t: sorted(e.name for e in t.events if e.lane == "copy/h2d")  # noqa: E731
    assert copies_in(first) == sorted(
        f"{net}/{v}" for net in ("net1", "net2") for v in ("b1", "w1", "w2")
    )
    assert copies_in(second) == []  # variables stayed on the device
    assert allocations == []  # no device memory allocated by the second run
    assert [e.name for e in second.events if e.lane == "copy/d2h"] == ["Add"]  # the fetch


def test_mixed_cpu_and_gpu_graph_copies_across_devices():
    g = pg.Graph("mixed")
    with g.as_default():
        with pg.device("gpu:0"), pg.scope("gpu"):
            x = pg.random_normal((8, 4), seed=1)
            y = pg.tanh(x)
        with pg.scope("cpu"):
            z = pg.relu(y) * 2.0  # CPU op reading a GPU value
        with pg.device("gpu:0"), pg.scope("back"):
            w = pg.reduce_sum(z + y, axis=1)  # GPU op reading a CPU value
    expected, _ = run(g, [w, z], pg.Config(executor="sequential"))
    actual, trace = run(g, [w, z], pg.Config(inter_op_threads=2))
    for want, got in zip(expected, actual):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    copies = {(e.lane, e.name) for e in trace.events if e.kind == "copy"}
    assert ("copy/d2h", "gpu/Tanh") in copies and ("copy/h2d", "cpu/Mul") in copies
    devices = {e.name: e.device for e in trace.ops()}
    assert devices["cpu/Relu"] == "cpu:0" and devices["back/Sum"] == "gpu:0"


def test_failing_gpu_kernel_raises_op_error_and_session_survives(monkeypatch):
    g, out, _ = seed_graph(device="gpu:0")
    from parallelgraph.kernels import gpu
    from parallelgraph.kernels.gpu import gemm

    with pg.Session(g, pg.Config(streams=2)) as sess:
        good = sess.run(out)
        real_call = gpu.Launch.__call__

        def broken(self, stream):
            if self.kernel is gemm.config_kernel(np.float32):  # a float32 matmul's first kernel
                raise MemoryError("out of device memory (injected)")
            real_call(self, stream)

        monkeypatch.setattr(gpu.Launch, "__call__", broken)
        with pytest.raises(pg.OpError, match=r"MatMul.*out of device memory"):
            sess.run(out)
        monkeypatch.undo()
        np.testing.assert_array_equal(sess.run(out), good)


def test_sequential_executor_is_the_cpu_reference_even_with_gpu_placement():
    g, out, _ = seed_graph(device="gpu:0")
    with pg.Session(g, pg.Config(executor="sequential")) as sess:
        _, trace = sess.run(out, trace=True)
    assert {e.device for e in trace.ops()} == {"cpu:0"}


def test_gpu_available_in_the_simulator():
    assert cuda_executor.gpu_available()


@pytest.mark.gpu
def test_two_streams_overlap_on_real_hardware():
    """On a real GPU, narrow kernels of net1 and net2 on two streams overlap."""
    from parallelgraph.experiments.presets import two_networks

    preset = two_networks("narrow", device_name="gpu:0")
    g, out = preset.graph, preset.fetch
    with pg.Session(g, pg.Config(streams=2, stream_policy="branches")) as sess:
        for _ in range(3):
            sess.run(out)
        _, trace = sess.run(out, trace=True)
    assert trace.overlap("net1", "net2") > 0.5
    assert all(e.end >= e.start for e in trace.events)


@pytest.mark.gpu
def test_prepared_launches_are_replayed_and_match_numba_launches_bit_for_bit(monkeypatch):
    """On a real GPU, a step's launches are built once and replayed through cuda.core; the
    results are the same bits as launching every kernel through numba's dispatcher."""
    from parallelgraph.kernels import gpu

    g, fetches = all_ops_graph("float32")
    results = {}
    for direct in (False, True):
        monkeypatch.setattr(gpu.launch, "DIRECT_LAUNCH", direct)
        with pg.Session(g, pg.Config(streams=2, stream_policy="branches")) as sess:
            first = sess.run(fetches)
            results[direct] = sess.run(fetches)
            device = sess._executor._gpu
            launches = [
                launch
                for buffers in device._plans.values()
                for _, step_launches in buffers.launches.values()
                for launch in step_launches
                if isinstance(launch, gpu.Launch)
            ]
        assert launches and all(callable(launch._direct) == direct for launch in launches)
        for a, b in zip(first, results[direct]):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(results[False], results[True]):
        np.testing.assert_array_equal(a, b)


def _all_launches(sess):
    """Every launch the session's GPU steps have built (one list per step, built once)."""
    device = sess._executor._gpu
    return [
        launch
        for buffers in device._plans.values()
        for _, step_launches in buffers.launches.values()
        for launch in step_launches
    ]


def test_blas_on_the_simulator_says_it_ran_the_numba_kernel():
    """matmul_kernel="blas" (the default) on a GPU needs cuBLAS through CuPy; where it cannot
    run (here: the simulator) the plan and explain() say the GPU matmuls ran the numba kernel."""
    from parallelgraph.kernels.gpu.cublas import cublas_problem

    assert cublas_problem() == "the CUDA simulator has no cuBLAS"
    g, fetches = all_ops_graph("float32")
    with pg.Session(g, pg.Config(streams=2, stream_policy="branches")) as sess:
        assert any("ran the numba kernel" in note for note in sess.plan_for(fetches).notes)
        _, trace = sess.run(fetches, trace=True)
    assert "the 1 GPU matmul(s) ran the numba kernel" in str(trace.explain())
    with pg.Session(g, pg.Config(streams=2, matmul_kernel="numba")) as sess:
        assert not sess.plan_for(fetches).notes


@pytest.mark.gpu
def test_blas_runs_cublas_on_the_steps_stream_and_matches_the_reference():
    """On a real GPU with CuPy: the GPU matmuls are cuBLAS calls (BlasMatmul) on the step's
    stream, within float tolerance of the CPU reference and of the numba kernel."""
    from parallelgraph.kernels.gpu.cublas import BlasMatmul, cublas_problem

    if cublas_problem() is not None:
        pytest.skip(f"no cuBLAS here: {cublas_problem()}")
    from parallelgraph.experiments.presets import two_networks

    preset = two_networks("small", device_name="gpu:0")
    expected, _ = run(preset.graph, [preset.fetch], pg.Config(executor="sequential"))
    values = {}
    for kernel in ("blas", "numba"):
        config = pg.Config(streams=2, stream_policy="branches", matmul_kernel=kernel)
        with pg.Session(preset.graph, config) as sess:
            assert not sess.plan_for(preset.fetch).notes
            sess.run(preset.fetch)
            values[kernel], trace = sess.run(preset.fetch, trace=True)
            blas = [launch for launch in _all_launches(sess) if isinstance(launch, BlasMatmul)]
            assert len(blas) == (4 if kernel == "blas" else 0)
        assert {e.lane for e in trace.ops()} == {"stream/0", "stream/1"}
    for value in values.values():
        np.testing.assert_allclose(value, expected[0], rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(values["blas"], values["numba"], rtol=2e-5, atol=2e-5)


def test_cuda_graph_in_the_simulator_says_kernels_launch_one_by_one():
    g, fetches = all_ops_graph("float32")
    plain, _ = run(g, fetches, pg.Config(streams=2))
    config = pg.Config(streams=2, cuda_graph=True)
    with pg.Session(g, config) as sess:
        notes = sess.plan_for(fetches).notes
        assert any("simulator cannot capture graphs" in note for note in notes)
        first, second = sess.run(fetches), sess.run(fetches)
        assert not sess._executor._gpu._graphs  # nothing captured, nothing pretended
    for a, b, c in zip(plain, first, second):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_cuda_graph_without_gpu_ops_says_there_is_nothing_to_capture():
    g, fetches = all_ops_graph("float32")
    with pg.Session(g, pg.Config(executor="sequential", cuda_graph=True)) as sess:
        notes = sess.plan_for(fetches).notes
    assert any("no op of this plan runs on a GPU" in note for note in notes)
    with pytest.raises(ValueError, match="cuda_graph must be True or False"):
        pg.Config(cuda_graph="yes")


@pytest.mark.gpu
def test_cuda_graph_replays_the_plans_gpu_work_with_the_same_results():
    """On a real GPU: the second untraced run captures the plan, later runs replay it; the
    values match plain launches, a re-initialized variable reaches the graph, and traced runs
    still show every kernel on its stream."""
    from parallelgraph.executors.cuda_graphs import CapturedPlan
    from parallelgraph.experiments.presets import two_networks

    preset = two_networks("small", device_name="gpu:0")
    plain_config = pg.Config(streams=2, stream_policy="branches")
    with pg.Session(preset.graph, plain_config) as sess:
        expected = [sess.run(preset.fetch) for _ in range(3)]
    config = plain_config.replace(cuda_graph=True)
    with pg.Session(preset.graph, config) as sess:
        plan = sess.plan_for(preset.fetch)
        assert any("replay the GPU work as one CUDA graph" in note for note in plan.notes)
        values = [sess.run(preset.fetch) for _ in range(3)]
        captured = sess._executor._gpu._graphs.get(id(plan))
        assert isinstance(captured, CapturedPlan), captured
        _, trace = sess.run(preset.fetch, trace=True)
        assert {e.lane for e in trace.ops()} == {"stream/0", "stream/1"}
        sess.run(pg.global_variables_initializer())  # new variable values: copied, then replayed
        after = sess.run(preset.fetch)
    for want, got in zip(expected, values):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(after, expected[0], rtol=1e-6, atol=1e-6)  # same seeds
