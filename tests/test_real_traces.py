"""Traces written by the real tools (tests/fixtures/real: TensorFlow 2.21, torch 2.13, JAX 0.10,
viztracer 1.1; see its README for how they were made): every one loads, gzip included, and on
each the numbers and the explanation agree with facts this file computes from the raw events
itself — with its own few lines of JSON reading, not with parallelgraph's reader."""

from __future__ import annotations

import gzip
import itertools
import json
from collections import defaultdict
from pathlib import Path

import pytest
from raw_facts import length, overlap, span, union

import parallelgraph as pg
from parallelgraph.explain import Cause

REAL = Path(__file__).parent / "fixtures" / "real"
MANIFEST = json.loads((REAL / "MANIFEST.json").read_text())["files"]
#: The producers this file knows (each newer producer's fixtures have a test file of their own).
PREFIXES = ("tf_", "torch_", "jax_", "viztracer_")
TRACES = sorted(
    p.name
    for p in REAL.iterdir()
    if p.name.endswith((".json", ".json.gz")) and p.name in MANIFEST and p.name.startswith(PREFIXES)
)
#: The parallelgraph words that must never appear in advice for another tool's trace.
OUR_KNOBS = ("inter_op_threads", "intra_op_threads", "Config(")


# -- raw facts, straight from the JSON ------------------------------------------------------------
def raw_events(name: str) -> tuple[list[dict], dict]:
    data = (REAL / name).read_bytes()
    document = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return [e for e in document["traceEvents"] if e], document


def raw_ops(name: str) -> list[dict]:
    """The events that are ops, by each tool's rule (as the fixtures' README states them)."""
    events, _ = raw_events(name)
    complete = [e for e in events if e.get("ph") == "X"]
    if name.startswith("tf_"):
        return [e for e in complete if e["args"]["name"] not in ("_SOURCE",)
                and e["args"]["op"] != "_Retval"]  # fmt: skip
    if name.startswith("torch_"):  # and the calling thread's DataLoader iterator
        return [e for e in complete if e.get("cat") == "cpu_op" or is_loader(e)]
    if name.startswith("jax_"):
        return [e for e in complete if "hlo_op" in e.get("args", {})]
    return complete  # viztracer: every call


#: viztracer's calls that block their thread (the README's rule): waiting, not work.
BLOCKING = ("Thread.join", "Thread._wait_for_tstate_lock", "Event.wait", "Condition.wait",
            "Barrier.wait", "Condition.wait_for")  # fmt: skip
BLOCKING_C = ("_thread.lock.acquire", "_thread.RLock.acquire", "time.sleep", "posix.waitpid")
#: ... and multiprocessing's waits for a child process, by the file that defines them.
BLOCKING_PROCESS = {
    "process.py": ("BaseProcess.join",),
    "popen_fork.py": ("Popen.wait", "Popen.poll"),
}


def is_loader(event: dict) -> bool:
    """PyTorch's `enumerate(DataLoader)#<iterator>.__next__` label."""
    return event.get("cat") == "user_annotation" and event["name"].startswith(
        "enumerate(DataLoader)#"
    )


def is_waiting(name: str, event: dict) -> bool:
    if name.startswith("torch_fork"):  # the torch.jit.fork caller holds the main thread
        return event["name"] == "forked_two_branch"
    if name.startswith("torch_"):  # the next batch from DataLoader's worker processes
        return is_loader(event) and "_MultiProcessingDataLoaderIter" in event["name"]
    if not name.startswith("viztracer_"):
        return False
    call = event["name"]
    function, _, where = call.partition(" (")
    in_file = where.rpartition(":")[0].rpartition("/")[2]
    return (
        call in BLOCKING_C
        or (function in BLOCKING and in_file == "threading.py")
        or function in BLOCKING_PROCESS.get(in_file, ())
    )


def work_time(name: str, events: list[dict]) -> list[tuple[float, float]]:
    """The spans of one thread during which its innermost open event was work."""
    bounds = sorted({t for e in events for t in span(e)})
    pieces = []
    for low, high in itertools.pairwise(bounds):
        open_now = [e for e in events if e["ts"] <= low and high <= span(e)[1]]
        if open_now:
            innermost = max(open_now, key=lambda e: (e["ts"], -span(e)[1]))
            if not is_waiting(name, innermost):
                pieces.append((low, high))
    return union(pieces)


def raw_branches(name: str) -> dict[str, list[tuple[float, float]]]:
    """net1's and net2's ops as spans, by the rule each file's MANIFEST entry gives."""
    events, _ = raw_events(name)
    ops = raw_ops(name)
    spans: dict[str, list] = defaultdict(list)
    if name.startswith("tf_"):
        for e in ops:
            branch = e["args"]["name"].split("/")[0]
            if branch in ("net1", "net2"):
                spans[branch].append(span(e))
    elif name.startswith("torch_"):
        labels = [e for e in events if e.get("cat") == "user_annotation" and e["name"] in
                  ("net1", "net2")]  # fmt: skip
        for e in ops:
            for label in labels:
                inside = label["ts"] <= e["ts"] and span(e)[1] <= span(label)[1]
                if inside and label["tid"] == e["tid"]:
                    spans[label["name"]].append(span(e))
    elif name.startswith("viztracer_"):  # threads or processes named net1 and net2
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                 if e.get("name") == "thread_name"}  # fmt: skip
        processes = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
        for e in ops:
            branch = names.get((e["pid"], e["tid"]))
            branch = branch if branch in ("net1", "net2") else processes.get(e["pid"])
            if branch in ("net1", "net2"):
                spans[branch].append(span(e))
    elif name.startswith("jax_"):
        branch_of = MANIFEST[name]["branches"]["branch_of_hlo_op"]
        for e in ops:
            branch = branch_of[e["args"]["hlo_module"]][e["args"]["hlo_op"]]
            if branch in ("net1", "net2"):
                spans[branch].append(span(e))
    return spans


def jax_branch_patterns(name: str) -> tuple[str, str]:
    """'op:a*|b*' patterns that gather XLA's ops into the branches they came from."""
    branch_of = MANIFEST[name]["branches"]["branch_of_hlo_op"]["jit_two_branch"]
    pattern = {
        branch: "op:" + "|".join(f"{op}#*|{op}" for op, b in branch_of.items() if b == branch)
        for branch in ("net1", "net2")
    }
    return pattern["net1"], pattern["net2"]


def branch_names(trace: pg.Trace, name: str) -> tuple[str, str]:
    if name.startswith("jax_"):
        return jax_branch_patterns(name)
    return "net1", "net2"


# -- every file ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", TRACES)
def test_every_real_trace_loads_with_the_raw_makespan_and_lane_busy_time(name):
    trace = pg.Trace.load(REAL / name)
    ops = raw_ops(name)
    by_thread = defaultdict(list)
    for e in ops:
        by_thread[(e["pid"], e["tid"])].append(e)
    working = {thread: work_time(name, events) for thread, events in by_thread.items()}
    working = {thread: spans for thread, spans in working.items() if spans}  # waited only: no lane
    start = min(spans[0][0] for spans in working.values() if spans)
    end = max(spans[-1][1] for spans in working.values() if spans)
    assert trace.makespan_ms == pytest.approx((end - start) / 1e3, abs=1e-6)
    raw_busy = sorted(length(spans) / 1e6 for spans in working.values())
    assert sorted(trace.lane_busy_s().values()) == pytest.approx(raw_busy, abs=1e-8)
    assert len(trace.lanes) == len(working)


@pytest.mark.parametrize("name", TRACES)
def test_bounds_never_exceed_the_makespan_and_nested_time_counts_once(name):
    trace = pg.Trace.load(REAL / name)
    assert trace.lower_bound_s() <= trace.makespan_s + 1e-12
    assert trace.work_s() <= sum(trace.lane_busy_s().values()) + 1e-12
    assert all(0.0 <= u <= 1.0 + 1e-9 for u in trace.utilization().values())
    report = trace.explain()
    assert report.lower_bound_ns <= report.makespan_ns


@pytest.mark.parametrize("name", [n for n in TRACES if "with_stack" not in n and "tb_" not in n])
def test_the_overlap_of_the_two_branches_matches_the_raw_events(name):
    trace = pg.Trace.load(REAL / name)
    raw = raw_branches(name)
    a, b = branch_names(trace, name)
    assert trace.overlap(a, b) == pytest.approx(overlap(raw["net1"], raw["net2"]), abs=0.05)


@pytest.mark.parametrize("name", TRACES)
def test_advice_is_in_the_producers_own_terms(name):
    trace = pg.Trace.load(REAL / name)
    report = trace.explain(*branch_names(trace, name)) if name.startswith("jax_") else (
        trace.explain())  # fmt: skip
    text = str(report)
    assert not any(knob in text for knob in OUR_KNOBS), text
    expected = {"tf_": "tensorflow", "torch_": "pytorch", "jax_": "jax", "viztracer_": "python"}
    assert trace.source == next(v for k, v in expected.items() if name.startswith(k))


# -- the seed's question, on TensorFlow's own timeline ---------------------------------------------
def test_tensorflow_with_one_inter_op_thread_is_explained_as_one_inter_op_thread():
    trace = pg.Trace.load(REAL / "tf_seed_inter1.ctf.json")
    report = trace.explain()
    (pair,) = report.pairs
    assert (pair.scope_a, pair.scope_b, pair.overlap) == ("net1", "net2", 0.0)
    assert pair.cause is Cause.ONE_WORKER and "one inter-op thread" in pair.detail
    # the shared shape constant (Grappler merged the two) is no dependency between branches
    assert "needs" not in str(report)
    assert "inter_op_parallelism_threads" in report.suggestion
    assert "set_inter_op_parallelism_threads" in report.suggestion  # TF2's spelling too
    # the run used one lane; the bound for the workers it could have had is said, with whence
    assert report.workers == 1 and report.possible.possible >= 1
    assert "only more cores" not in str(report)


def test_tensorflow_with_two_inter_op_threads_ran_the_branches_in_parallel():
    report = pg.Trace.load(REAL / "tf_seed_inter2.ctf.json").explain()
    assert report.pairs[0].overlapped and report.pairs[0].cause is None


def test_tensorflow_tiny_graph_with_one_inter_op_thread():
    report = pg.Trace.load(REAL / "tf_seed_tiny_inter1.ctf.json").explain()
    assert report.pairs[0].cause is Cause.ONE_WORKER
    assert report.makespan_ns < 5_000_000 and report.source == "tensorflow"


def test_replaying_tensorflows_one_thread_run_with_two_threads_predicts_its_two_thread_run():
    """Issue 12: within 15% of the time TensorFlow measured with 2 inter-op threads."""
    trace = pg.Trace.load(REAL / "tf_seed_inter1.ctf.json")
    predicted = pg.simulate(trace, pg.Config(inter_op_threads=2, intra_op_threads=1), cores=2)
    measured = MANIFEST["tf_seed_inter2.ctf.json"]["timings_ms"]["median"]
    assert predicted.makespan_ms == pytest.approx(measured, rel=0.15)
    # and the speed-up it predicts is TensorFlow's, measured side by side in one run
    one = MANIFEST["tf_seed_inter1.ctf.json"]["timings_ms"]["median"]
    assert predicted.makespan_ms / trace.makespan_ms == pytest.approx(measured / one, rel=0.15)
    assert predicted.overlap("net1", "net2") > 0.5
    assert predicted.source == "tensorflow"


# -- PyTorch -------------------------------------------------------------------------------------
def test_pytorch_eager_is_one_thread_and_the_advice_is_torch_jit_fork():
    trace = pg.Trace.load(REAL / "torch_eager_record_function.json")
    assert trace.lanes == ["cpu/python"]
    report = trace.explain()
    assert report.pairs[0].cause is Cause.ONE_WORKER
    assert "torch.jit.fork" in report.suggestion and "set_num_interop_threads" in report.suggestion


def test_pytorch_nested_ops_are_sub_events_not_more_work():
    trace = pg.Trace.load(REAL / "torch_eager_record_function.json")
    linear = next(e for e in trace.ops() if e.name.startswith("aten::linear"))
    addmm = [e for e in trace.events if e.parent == linear.name and "addmm" in e.name]
    assert linear.depth == 0 and addmm and addmm[0].depth == 1
    raw = raw_ops("torch_eager_record_function.json")
    assert trace.work_s() * 1e6 < sum(e["dur"] for e in raw)  # the raw sum counts nesting twice
    assert trace.work_s() <= trace.makespan_s


def test_pytorch_fork_branches_run_on_named_pool_threads_and_overlap():
    trace = pg.Trace.load(REAL / "torch_fork_interop2.json")
    assert sum(lane.startswith("cpu/PTThreadPool") for lane in trace.lanes) == 2
    report = trace.explain()
    assert report.pairs[0].overlapped
    pools = [lane for lane in trace.lanes if "PTThreadPool" in lane]
    # without record_function the threads themselves can be compared
    assert trace.overlap(f"lane:{pools[0]}", f"lane:{pools[1]}") > 0.3


def test_pytorch_module_hierarchy_and_profiler_frames():
    trace = pg.Trace.load(REAL / "torch_with_stack.json")
    scopes = {e.scope for e in trace.ops(nested=True)}
    assert any(s.startswith("net1/") and "Branch_" in s for s in scopes)
    assert not any("profiler" in e.name or e.name.startswith("nn.Module") for e in trace.events)
    assert any("python_function" in note for note in trace.metadata["notes"])


TB_HANDLER = ["torch_tb_handler.pt.trace.json", "torch_tb_handler.pt.trace.json.gz"]
JAX = ["jax_two_branch.trace.json.gz", "jax_two_branch.perfetto_trace.json.gz"]


@pytest.mark.parametrize("name", TB_HANDLER)
def test_pytorch_profiler_step_is_the_profilers_own_and_gzip_reads_alike(name):
    trace = pg.Trace.load(REAL / name)
    assert not any(e.name.startswith("ProfilerStep#") for e in trace.events)
    assert any("ProfilerStep#" in note for note in trace.metadata["notes"])
    assert trace.scopes()[:2] == ["net1", "net2"]


# -- JAX and Python tracers ----------------------------------------------------------------------
@pytest.mark.parametrize("name", JAX)
def test_jax_xla_ops_without_the_runtimes_own_events(name):
    trace = pg.Trace.load(REAL / name)
    assert {e.name.split("#")[0] for e in trace.ops()} <= set(
        MANIFEST[name]["branches"]["branch_of_hlo_op"]["jit_two_branch"]
    )
    assert all(len(lane) < 40 for lane in trace.lanes)  # XLA's hashed thread names cut
    report = trace.explain(*jax_branch_patterns(name))
    assert report.pairs[0].cause is Cause.ONE_WORKER
    assert "xla_force_host_platform_device_count" in report.suggestion


@pytest.mark.parametrize("name", ["viztracer_two_threads.json", "viztracer_two_threads.json.gz"])
def test_python_tracer_scopes_are_threads_not_file_paths(name):
    trace = pg.Trace.load(REAL / name)
    assert trace.scopes() == ["", "net1", "net2"] or set(trace.scopes()) == {"", "net1", "net2"}
    assert not any("/" in e.name or ".py" in e.name for e in trace.events)
    report = trace.explain()
    assert [(p.scope_a, p.scope_b) for p in report.pairs] == [("net1", "net2")]
    assert report.pairs[0].overlapped
    assert any("GIL" in note for note in report.notes)


def test_the_framework_traces_shipped_with_the_package_are_the_fixtures():
    from parallelgraph.recorded import FRAMEWORK_TRACES, framework_runs

    package = Path(pg.__file__).parent / "recorded"
    for name, file in FRAMEWORK_TRACES.items():
        assert (package / file).read_bytes() == (REAL / file).read_bytes(), name
        assert framework_runs()[name]["tool_versions"] == MANIFEST[file]["tool_versions"]


def raw_tf_critical_path(name: str) -> float:
    """µs: the longest chain of TensorFlow nodes through their `args.input*` (the timeline's
    own record of the graph's edges), by the raw durations."""
    ops = {e["args"]["name"]: e for e in raw_ops(name)}
    longest: dict[str, float] = {}
    for node in sorted(ops, key=lambda n: ops[n]["ts"]):
        args = ops[node]["args"]
        inputs = [
            str(v).lstrip("^").split(":")[0] for k, v in args.items() if k.startswith("input")
        ]
        before = max((longest[i] for i in inputs if i in longest), default=0.0)
        longest[node] = before + ops[node]["dur"]
    return max(longest.values())


@pytest.mark.parametrize("name", [n for n in TRACES if n.startswith(("tf_", "viztracer_"))])
def test_the_lower_bound_is_the_raw_work_and_chain(name):
    """max(work / lanes, critical path), each computed here from the raw events: TensorFlow's
    chain through the recorded inputs; a Python thread's calls one after another (program
    order), so its chain is the thread's own work."""
    trace = pg.Trace.load(REAL / name)
    by_thread = defaultdict(list)
    for e in raw_ops(name):
        by_thread[(e["pid"], e["tid"])].append(e)
    work = {thread: length(work_time(name, events)) for thread, events in by_thread.items()}
    if name.startswith("tf_"):
        chain = raw_tf_critical_path(name)
    else:
        chain = max(work.values())
    expected = max(sum(work.values()) / len(work), chain)
    assert trace.lower_bound_s() * 1e6 == pytest.approx(expected, rel=1e-6, abs=0.01)
