"""More real PyTorch and JAX traces (tests/fixtures/real: make_torch_more.py, torch 2.13;
make_jax_devices.py, JAX 0.10.2): torch.jit.fork at inter-op 1 and 2, torch.compile, a profiler
schedule with profile_memory, and JAX on one and two host devices.

The facts — work makespan, busy time per lane, overlap, lower bound — are computed here from
the raw JSON with this file's own few lines, by the rules the fixtures' README states (which
events are ops, which wait, which are setup), not with parallelgraph's reader; the advice is
checked against what the make-scripts measured (MANIFEST "measured_effects")."""

from __future__ import annotations

import functools
import gzip
import itertools
import json
from collections import defaultdict
from pathlib import Path

import pytest
from raw_facts import length, overlap, span, union

import parallelgraph as pg
from parallelgraph.explain import Cause
from parallelgraph.trace import EventRole

REAL = Path(__file__).parent / "fixtures" / "real"
MANIFEST = json.loads((REAL / "MANIFEST.json").read_text())["files"]
TORCH = sorted(n for n in MANIFEST if n.startswith("torch2_"))
JAX = sorted(n for n in MANIFEST if n.startswith("jax2_"))
FORK1, FORK2 = "torch2_fork_interop1.json", "torch2_fork_interop2.json"
COMPILE_EVENTS = ("dynamo", "entire_frame_compile")


# -- raw facts, straight from the JSON ------------------------------------------------------------
@functools.cache
def raw_events(name: str) -> list[dict]:  # cached: the same dicts each time (ids are keys)
    data = (REAL / name).read_bytes()
    document = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return [e for e in document["traceEvents"] if e]


def inside(e: dict, outer: dict) -> bool:
    return e["tid"] == outer["tid"] and outer["ts"] <= e["ts"] and span(e)[1] <= span(outer)[1]


def raw_ops(name: str) -> list[dict]:
    """The README's rule: Kineto's cpu_ops (not the CompiledFxGraph marker, a scope) on OS
    threads; XLA's events with an hlo_op."""
    complete = [e for e in raw_events(name) if e.get("ph") == "X"]
    if name.startswith("jax2_"):
        return [e for e in complete if "hlo_op" in e.get("args", {})]
    return [
        e
        for e in complete
        if e.get("cat") == "cpu_op"
        and isinstance(e["tid"], int)
        and not e["name"].startswith("## Call CompiledFxGraph")
    ]


def roles(name: str) -> dict[int, str]:
    """id(event) -> 'work' | 'waiting' | 'setup', by the README's rule: torch.compile's
    compilation and all inside it is setup; the torch.jit.fork caller (an outermost op on a
    thread while `<forked function>` tasks start on other threads) waits."""
    ops = raw_ops(name)
    out = {id(e): "work" for e in ops}
    if name.startswith("jax2_"):
        return out
    compiling = [e for e in ops if e["name"] in COMPILE_EVENTS or "(dynamo_timed)" in e["name"]]
    tasks = [e for e in ops if e["name"] == "<forked function>"]
    for e in ops:
        if any(inside(e, c) for c in compiling):
            out[id(e)] = "setup"
        elif e["name"] != "<forked function>" and not any(inside(e, o) and o is not e for o in ops):
            start, end = span(e)
            if any(t["tid"] != e["tid"] and start <= t["ts"] < end for t in tasks):
                out[id(e)] = "waiting"
    return out


def work_time(events: list[dict], role: dict[int, str]) -> list[tuple[float, float]]:
    """The spans of one thread during which its innermost open event was work."""
    bounds = sorted({t for e in events for t in span(e)})
    pieces = []
    for low, high in itertools.pairwise(bounds):
        open_now = [e for e in events if e["ts"] <= low and high <= span(e)[1]]
        if open_now:
            innermost = max(open_now, key=lambda e: (e["ts"], -span(e)[1]))
            if role[id(innermost)] == "work":
                pieces.append((low, high))
    return union(pieces)


def raw_facts(name: str) -> dict:
    ops, role = raw_ops(name), roles(name)
    threads = defaultdict(list)
    for e in ops:
        threads[e["tid"]].append(e)
    working = {tid: work_time(evs, role) for tid, evs in threads.items()}
    working = {tid: spans for tid, spans in working.items() if spans}
    start = min(s[0][0] for s in working.values())
    end = max(s[-1][1] for s in working.values())
    busy = {tid: length(s) for tid, s in working.items()}
    # the longest chain: the python thread runs its outermost ops in program order, a pool or
    # XLA thread runs independent tasks (the longest one); the files record no inputs
    names = {
        e["tid"]: e["args"]["name"] for e in raw_events(name) if e.get("name") == "thread_name"
    }
    chain = 0.0
    for tid, evs in threads.items():
        work = [e for e in evs if role[id(e)] == "work"]
        outer = [e for e in work if not any(inside(e, o) and o is not e for o in work)]
        if not outer:
            continue
        if names.get(tid, "").endswith("(python)") and not name.startswith("jax2_"):
            chain = max(chain, sum(e["dur"] for e in outer))
        else:
            chain = max(chain, max(e["dur"] for e in outer))
    return {"makespan_us": end - start, "busy_us": busy, "chain_us": chain, "role": role}


def load(name: str) -> pg.Trace:
    return pg.Trace.load(REAL / name)


# -- every file ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", TORCH + JAX)
def test_every_file_has_the_raw_work_makespan_busy_time_and_lower_bound(name):
    trace, raw = load(name), raw_facts(name)
    assert trace.source == ("jax" if name.startswith("jax2_") else "pytorch")
    # the reader rounds each µs float to whole ns: 1 ns either end
    assert trace.makespan_ms == pytest.approx(raw["makespan_us"] / 1e3, abs=2.5e-6)
    assert sorted(trace.lane_busy_s().values()) == pytest.approx(
        sorted(b / 1e6 for b in raw["busy_us"].values()), abs=1e-7
    )
    assert len(trace.lanes) == len(raw["busy_us"])
    work = sum(raw["busy_us"].values())
    bound = max(work / len(raw["busy_us"]), raw["chain_us"])
    assert trace.lower_bound_s() == pytest.approx(bound / 1e6, rel=1e-6, abs=1e-8)
    assert trace.lower_bound_s() <= trace.makespan_s + 1e-12
    assert all(len(lane) < 40 for lane in trace.lanes)
    text = str(trace.explain())
    assert not any(k in text for k in ("inter_op_threads", "intra_op_threads", "Config("))


@pytest.mark.parametrize("name", TORCH)
def test_waiting_and_setup_events_have_their_role(name):
    trace, raw = load(name), raw_facts(name)
    expected = defaultdict(set)
    for e in raw_ops(name):
        expected[raw["role"][id(e)]].add(e["name"])
    got = defaultdict(set)
    for e in trace.events:
        got[e.role.value].add(e.name.split("#")[0])
    assert got["waiting"] == expected["waiting"]
    assert got["setup"] == expected["setup"]
    assert got["work"] == expected["work"]


# -- torch.jit.fork at inter-op 1 and 2 ----------------------------------------------------------
def test_fork_at_inter_op_1_waits_on_the_main_thread_and_runs_one_task_at_a_time():
    trace = load(FORK1)
    caller = next(e for e in trace.events if e.name == "forked_two_branch")
    assert caller.role is EventRole.WAITING
    assert trace.lanes == ["cpu/PTThreadPool"]  # the main thread only waited: not a busy lane
    assert "cpu/python" not in trace.lane_busy_s()
    report = trace.explain()
    (pair,) = report.pairs
    assert (pair.scope_a, pair.scope_b, pair.overlap) == ("net1", "net2", 0.0)
    assert pair.cause is Cause.ONE_WORKER  # not "every worker busy"
    assert "every worker busy" not in str(report)
    effects = MANIFEST[FORK1]["measured_effects"]
    assert effects["helped"] == "torch.set_num_interop_threads(2)"
    assert "set_num_interop_threads(2)" in report.suggestion
    intra2 = next(s for s in effects["settings"] if s["worker"] == "fork_inter1_intra2")
    inter1 = next(s for s in effects["settings"] if s["worker"] == "fork_inter1")
    if intra2["median"] > 0.95 * inter1["median"]:  # it did not help this program
        assert "set_num_threads(" not in report.suggestion


def test_fork_without_labels_names_the_tasks_in_fork_order():
    trace = load("torch2_fork_interop1_nolabels.json")
    assert trace.scopes()[:2] == ["fork1", "fork2"]
    tasks = [e for e in trace.ops() if e.name.startswith("<forked function>")]
    assert [e.scope for e in tasks] == ["fork1", "fork2"]
    assert trace.explain().pairs[0].cause is Cause.ONE_WORKER


@pytest.mark.parametrize("name", [FORK2, "torch2_fork_interop2_nolabels.json"])
def test_fork_at_inter_op_2_runs_on_two_named_pool_threads(name):
    trace = load(name)
    # Kineto names the pool threads "PTThreadPool" and then "python": the pool's name wins
    assert sorted(lane.split(" ")[0] for lane in trace.lanes) == ["cpu/PTThreadPool"] * 2
    tasks = sorted(
        (e for e in raw_ops(name) if e["name"] == "<forked function>"), key=lambda e: e["ts"]
    )
    raw = overlap([span(tasks[0])], [span(tasks[1])])
    a, b = ("net1", "net2") if "nolabels" not in name else ("fork1", "fork2")
    assert trace.overlap(a, b) == pytest.approx(raw, abs=0.05)


def test_the_net1_net2_overlap_of_each_labelled_fork_file_matches_the_raw_labels():
    for name in (FORK1, FORK2):
        events = raw_events(name)
        labels = {e["name"]: e for e in events if e.get("cat") == "user_annotation"}
        spans = {
            b: [span(e) for e in raw_ops(name) if inside(e, labels[b])] for b in ("net1", "net2")
        }
        raw = overlap(spans["net1"], spans["net2"])
        assert load(name).overlap("net1", "net2") == pytest.approx(raw, abs=0.05)


def test_replaying_the_inter_op_1_fork_with_two_threads_predicts_torchs_inter_op_2_run():
    trace = load(FORK1)
    predicted = pg.simulate(trace, pg.Config(inter_op_threads=2), cores=2)
    measured = MANIFEST[FORK2]["timings_ms"]["median"]
    assert predicted.makespan_s >= trace.lower_bound_s(2) - 1e-9
    machine = MANIFEST[FORK2]["measured_effects"]["machine"]
    control = max(machine["control_before"], machine["control_after"])
    if predicted.makespan_ms != pytest.approx(measured, rel=0.15) and control > 0.7:
        pytest.xfail(
            f"the inter-op 2 median was measured while the shared 2-core VM had less than two "
            f"free cores (control {control}: 0.5 = two, 1.0 = one), and two matmuls at once on "
            "its two vCPUs run slower than alone; the replay assumes two free cores"
        )
    assert predicted.makespan_ms == pytest.approx(measured, rel=0.15)


def test_the_main_thread_of_eager_pytorch_runs_in_program_order():
    trace = load("torch2_schedule_memory.json")
    ops = trace.ops()
    assert {e.lane for e in ops} == {"cpu/python"}
    assert all(e.after == before.name for before, e in itertools.pairwise(ops))
    # so the critical path is the whole thread, and the replay cannot reorder it
    assert trace.lower_bound_s(2) == pytest.approx(trace.work_s(), rel=1e-6)


@pytest.mark.parametrize("name", ["torch2_schedule_memory.json", "torch2_compile.json"])
def test_one_thread_at_a_time_advice_matches_what_was_measured(name):
    """Eager and compiled ran one op at a time on one thread: the advice is faster ops on the
    critical path with torch.set_num_threads, which the measurement says helped them."""
    report = load(name).explain()
    effects = MANIFEST[name]["measured_effects"]
    medians = {s["worker"]: s["median"] for s in effects["settings"]}
    if medians["eager_intra2"] <= 0.95 * medians["eager_intra1"]:
        assert "torch.set_num_threads" in report.suggestion


def test_pool_threads_are_not_program_order():
    trace = load(FORK1)
    tasks = [e for e in trace.ops() if e.name.startswith("<forked function>")]
    assert [e.after for e in tasks] == [None, None]


# -- torch.compile --------------------------------------------------------------------------------
def test_compiled_graphs_are_scopes_named_by_their_region_not_by_the_hash():
    trace = load("torch2_compile.json")
    scopes = {e.scope for e in trace.events}
    assert "step/compiled_0_0" in scopes
    assert not any("CompiledFxGraph" in s or "##" in s for s in scopes)
    assert any(e.name.startswith("aten::addmm") for e in trace.events)
    assert not any(e.role is not EventRole.WORK for e in trace.events)


def test_compilation_is_setup_and_not_part_of_the_run():
    name = "torch2_compile_first_call.json.gz"
    trace = load(name)
    dynamo = next(e for e in trace.events if e.name == "dynamo")
    assert dynamo.role is EventRole.SETUP
    # the fake-tensor ops of tracing, inside the compilation, are setup too
    nested = [e for e in trace.events if dynamo.start <= e.start and e.end <= dynamo.end]
    assert len(nested) > 1 and all(e.role is EventRole.SETUP for e in nested)
    assert trace.makespan_s < (dynamo.end - dynamo.start) / 1e9
    assert [s for s in trace.scopes() if s][:2] == ["first_call", "second_call"]
    assert not any("_data: " in e.name for e in trace.events)  # dynamo's metadata markers


# -- schedule + profile_memory -------------------------------------------------------------------
def test_schedule_steps_and_memory_events_leave_the_eager_ops():
    name = "torch2_schedule_memory.json"
    trace = load(name)
    events = raw_events(name)
    steps = sorted(e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#"))
    assert len(steps) == 2 and steps == MANIFEST[name]["traced_run"]["profiler_steps"]
    assert any("ProfilerStep#" in n for n in trace.metadata["notes"])
    assert any(e.get("name") == "[memory]" for e in events)
    assert not any("memory" in e.name for e in trace.events)
    assert len(trace.ops()) == len(
        [e for e in raw_ops(name) if not any(inside(e, o) and o is not e for o in raw_ops(name))]
    )
    assert trace.explain().suggestion


# -- JAX on two host devices ----------------------------------------------------------------------
def raw_device_spans(name: str) -> dict[str, list]:
    spans = defaultdict(list)
    for e in raw_ops(name):
        spans[f"cpu:{e['args']['device_ordinal']}"].append(span(e))
    return spans


@pytest.mark.parametrize("name", ["jax2_devices2.trace.json.gz", "jax2_pmap2.trace.json.gz"])
def test_jax_ops_carry_their_device_and_the_devices_are_compared(name):
    trace = load(name)
    raw = raw_device_spans(name)
    assert {e.device for e in trace.ops()} == {"cpu:0", "cpu:1"} == set(raw)
    expected = overlap(raw["cpu:0"], raw["cpu:1"])
    assert trace.overlap("device:cpu:0", "device:cpu:1") == pytest.approx(expected, abs=0.05)
    (pair,) = trace.explain().pairs  # the default branches are the two devices
    assert {pair.scope_a, pair.scope_b} == {"cpu:0", "cpu:1"}
    assert pair.overlap == pytest.approx(expected, abs=0.05)


def test_jax_on_one_device_runs_one_op_at_a_time_and_the_advice_is_two_devices():
    name = "jax2_devices1.trace.json.gz"
    trace = load(name)
    assert {e.device for e in trace.ops()} == {"cpu:0"}
    report = trace.explain()
    assert report.pairs[0].cause is Cause.ONE_WORKER
    assert "xla_force_host_platform_device_count=2" in report.suggestion
    assert "jax.device_put" in report.suggestion
    # measured: two devices were no faster than one on this 2-core machine (XLA's intra-op
    # threads already used the second core for part of each matmul), so the advice says to
    # time it rather than promising a speed-up
    effects = MANIFEST[name]["measured_effects"]
    if effects["helped"].startswith("nothing"):
        assert "time the step both ways" in report.suggestion


def test_every_setting_was_measured_interleaved_with_the_machine_load_said():
    for name in TORCH + JAX:
        effects = MANIFEST[name]["measured_effects"]
        assert effects["machine"]["rounds"] >= 15
        assert "loadavg_before" in effects["machine"] and "loadavg_after" in effects["machine"]
        for setting in effects["settings"]:
            assert len(setting["all"]) >= 15
            assert setting["min"] <= setting["median"]
