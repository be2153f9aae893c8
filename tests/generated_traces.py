"""Trace files from a producer nobody has seen, with their right answers known by construction.

`generate(seed)` writes a random trace in the plain trace-event format — no category or name
that any producer module knows — shaped like the programs users trace:

- a **main thread** that sets up (a span carrying `"role": "setup"` in its args, the format's
  only way to say it), then calls a `run` span that launches the work (short `launch` calls
  nested in it) and holds the thread until the workers are done: **waiting**, which the
  reader must find by its timing alone;
- **worker threads**, each running ops of several scopes ("net1/op3") one after another, some
  with calls nested inside them (counted once), in 'X' or 'B'/'E' form;
- **flows** ('s'/'f') from some ops to ops on other threads that start after them.

`Truth` holds what the answers must be, computed here from the construction, not from the
file: work per lane, the work's makespan, the critical path through the flows, the overlap of
every two scopes, which event waits and which sets up.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from itertools import combinations

from raw_facts import length, union

US = 1.0  # the file's unit is µs


@dataclass
class Truth:
    lane_work_us: dict[int, float] = field(default_factory=dict)  # by tid
    start_us: float = 0.0
    end_us: float = 0.0
    critical_path_us: float = 0.0
    scope_spans: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    waiting: set[str] = field(default_factory=set)
    setup: set[str] = field(default_factory=set)
    ops: dict[str, tuple[float, float, int]] = field(default_factory=dict)  # name: start, end, tid
    inputs: dict[str, list[str]] = field(default_factory=dict)

    @property
    def work_us(self) -> float:
        return sum(self.lane_work_us.values())

    def overlap(self, a: str, b: str) -> float:
        first, second = union(self.scope_spans[a]), union(self.scope_spans[b])
        both = sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in first for s2, e2 in second)
        shorter = min(length(first), length(second))
        return both / shorter if shorter else 0.0

    def scope_pairs(self) -> list[tuple[str, str]]:
        return list(combinations(sorted(self.scope_spans), 2))


def generate(seed: int) -> tuple[list[dict], Truth]:
    """A random trace (a bare list of events) and its answers (see the module docstring)."""
    rng = random.Random(seed)
    truth = Truth()
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "app"}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 1, "args": {"name": "main"}},
    ]
    workers = rng.randint(2, 4)
    scopes = [f"net{i + 1}" for i in range(rng.randint(2, 3))]
    setup_end = rng.uniform(200, 900)
    events.append(_x("load_model", 1, 0.0, setup_end, role="setup"))
    truth.setup.add("load_model")
    run_start = setup_end + rng.uniform(5, 30)
    launch_end = run_start
    launches = []
    for i in range(workers):  # the calls that hand the work over, nested in `run`
        start = launch_end + rng.uniform(1, 3)
        launch_end = start + rng.uniform(2, 6)
        launches.append((start, launch_end))
        events.append(_x(f"launch{i}", 1, start, launch_end))
    truth.lane_work_us[1] = sum(e - s for s, e in launches)
    finished = []
    counter = 0
    for worker in range(workers):
        tid = 10 + worker
        events.append(
            {"ph": "M", "name": "thread_name", "pid": 7, "tid": tid, "args": {"name": f"w{worker}"}}
        )
        clock = launches[worker][1] + rng.uniform(5, 40)
        busy = 0.0
        for _ in range(rng.randint(2, 6)):
            counter += 1
            scope = rng.choice(scopes)
            name = f"{scope}/op{counter}"
            duration = rng.uniform(200, 2000)
            start, end = clock, clock + duration
            truth.ops[name] = (start, end, tid)
            truth.scope_spans.setdefault(scope, []).append((start, end))
            if rng.random() < 0.5:
                events.append(_x(name, tid, start, end))
            else:  # the B/E form
                events.append({"ph": "B", "name": name, "pid": 7, "tid": tid, "ts": start})
                events.append({"ph": "E", "pid": 7, "tid": tid, "ts": end})
            if rng.random() < 0.4:  # a call nested inside: counted once
                inner = rng.uniform(start, end)
                events.append(_x(f"{name}.inner", tid, inner, rng.uniform(inner, end)))
            busy += duration
            clock = end + rng.uniform(0, 60)
        truth.lane_work_us[tid] = busy
        finished.append(clock)
    _add_flows(rng, events, truth)
    run_end = max(end for _, end, _ in truth.ops.values()) + rng.uniform(5, 50)
    events.append(_x("run", 1, run_start, run_end))
    truth.waiting.add("run")
    work = [(s, e) for s, e, _ in truth.ops.values()] + launches
    truth.start_us = min(s for s, _ in work)
    truth.end_us = max(e for _, e in work)
    truth.critical_path_us = _critical_path(truth, launches)
    rng.shuffle(events)  # files are not always in time order
    return events, truth


def _x(name: str, tid: int, start: float, end: float, role: str | None = None) -> dict:
    event = {"ph": "X", "name": name, "pid": 7, "tid": tid, "ts": start, "dur": end - start}
    if role:
        event["args"] = {"role": role}
    return event


def _add_flows(rng: random.Random, events: list[dict], truth: Truth) -> None:
    """Flows between ops of different threads, from one that ended before the other began."""
    names = sorted(truth.ops)
    for flow_id in range(rng.randint(0, 4)):
        producer, consumer = rng.sample(names, 2)
        p_start, p_end, p_tid = truth.ops[producer]
        c_start, _, c_tid = truth.ops[consumer]
        if p_tid == c_tid or p_end > c_start:
            continue
        truth.inputs.setdefault(consumer, []).append(producer)
        common = {"name": "flow", "cat": "data", "id": flow_id, "pid": 7}
        events.append({**common, "ph": "s", "tid": p_tid, "ts": (p_start + p_end) / 2})
        events.append({**common, "ph": "f", "bp": "e", "tid": c_tid, "ts": c_start})


def _critical_path(truth: Truth, launches: list[tuple[float, float]]) -> float:
    """The longest chain of ops linked by the flows (a launch alone is a chain too)."""
    longest: dict[str, float] = {}
    for name in sorted(truth.ops, key=lambda n: truth.ops[n][0]):
        start, end, _ = truth.ops[name]
        before = max((longest[p] for p in truth.inputs.get(name, ())), default=0.0)
        longest[name] = before + (end - start)
    return max([*longest.values(), *(e - s for s, e in launches)], default=0.0)


def scaling_events(count: int) -> list[dict]:
    """A trace-event list of about `count` events for timing the analyses as `count` doubles,
    holding at every size each shape that once made one of them quadratic:

    - **net2** then **net1**: two chains of ops (each op reads the one before) on two threads,
      net1 after net2, and net1's last op also reads an op of net2 (issue #42's 30,000-op
      chain: explain() searched the ancestors of every consumer); every fourth op holds a
      nested call that reads an op two back (a flow into a nested call is a dependency of the
      op around it);
    - **net3**: a few ops beside net1, independent of it (a pair that overlapped);
    - **deep**: ops nested in one another, count / 8 deep (simulate walked each to the top);
    - **s0, s1, ...**: count / 8 scopes of one op each (explain() gathered each scope's ops in
      a pass of its own, the plot compared each scope with every colour).

    Every op records its output shape (the memory model sizes it). Times in µs; no metadata,
    so the generic reader takes it.
    """
    nested = max(1, count // 8)
    scopes = max(2, count // 8)
    ops = max(8, (count - nested - scopes) * 4 // 5)  # 5 events per 4 chained ops
    first = ops // 2  # net2's ops, then net1's
    events: list[dict] = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": f"worker {tid}"}}
        for tid in (1, 2, 3)
    ]

    def op(name: str, tid: int, start: float, dur: float, inputs: tuple[str, ...] = ()) -> None:
        args = {"inputs": list(inputs), "shapes": "(64, 64) -> (64, 64) float32"}
        events.append({"ph": "X", "name": name, "pid": 1, "tid": tid, "ts": start, "dur": dur,
                       "args": args})  # fmt: skip

    def chain(scope: str, tid: int, origin: float, length: int, last: tuple[str, ...]) -> float:
        for i in range(length):
            start = origin + 100.0 * i
            inputs = (f"{scope}/op{i - 1}",) if i else ()
            op(f"{scope}/op{i}", tid, start, 90.0, inputs + (last if i == length - 1 else ()))
            if i % 4 == 3:
                op(f"{scope}/op{i}/call", tid, start + 10.0, 50.0, (f"{scope}/op{i - 2}",))
        return origin + 100.0 * length

    net1_start = chain("net2", 2, 0.0, first, ())
    end = chain("net1", 1, net1_start, ops - first, (f"net2/op{first // 2}",))
    for i in range(3):
        op(f"net3/op{i}", 2, net1_start + 100.0 * i, 90.0)
    for i in range(nested):  # each 0.01 µs inside the one before
        op(f"deep/op{i}", 3, end + 0.01 * i, 100.0 * nested - 0.02 * i)
    end += 100.0 * nested
    for i in range(scopes):
        op(f"s{i}/op", 3, end + 100.0 * i, 90.0)
    return events


#: Thread names a generated process draws from: repeats within a process and across processes
#: (Chromium's many "ThreadPoolForegroundWorker"s), a name that reads like another thread's
#: name and tid ("worker 2" beside a "worker" of tid 2), a "/" in a name, and no name at all.
THREAD_NAMES = (
    "ThreadPoolForegroundWorker",
    "MainThread",
    "worker",
    "worker 2",
    "tf_Eigen/7",
    None,
)
#: Process names likewise: two "Renderer"s, viztracer's names for a launcher and its children.
PROCESS_NAMES = ("Renderer", "Browser", "MainProcess", "net1", None)
#: The producers whose format records threads of several processes in one file.
LANE_FORMATS = ("trace-event", "python", "pytorch", "py-spy", "onnxruntime", "paddle")


@dataclass
class Threads:
    """The right lanes of a `shared_threads` document: a thread is its (pid, tid)."""

    busy_us: dict[tuple[int, int], float] = field(default_factory=dict)  # per thread
    names: dict[tuple[int, int], str] = field(default_factory=dict)  # the named ones
    op_thread: dict[str, tuple[int, int]] = field(default_factory=dict)  # op name -> thread

    @property
    def work_us(self) -> float:
        return sum(self.busy_us.values())


def shared_threads(seed: int, form: str) -> tuple[list[dict] | dict, Threads]:
    """A trace in `form` (one of `LANE_FORMATS`) of 1-3 processes of 1-4 threads whose names
    come from small pools (`THREAD_NAMES`, `PROCESS_NAMES`) and whose tids collide across
    processes (a forked child keeps its parent's tid numbers in viztracer's files), each thread
    running ops one after another, with overlap between threads; and the right lanes, busy
    times and work, by construction."""
    rng = random.Random(seed)
    truth = Threads()
    events: list[dict] = []
    pids = rng.sample(range(100, 110), rng.randint(1, 3))
    for number, pid in enumerate(pids):
        name = rng.choice(PROCESS_NAMES)
        if name is not None:
            events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}})
        tids = rng.sample(range(1, 6), rng.randint(1, 4))
        if form == "onnxruntime" and rng.random() < 0.5:
            tids[0] = pid  # the process's main thread
        for tid in tids:
            thread = (pid, tid)
            named = rng.choice(THREAD_NAMES)
            if form == "pytorch":
                named = named or "python"
                label = {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid}
                events.append({**label, "args": {"name": f"thread {tid} ({named})"}})
                truth.names[thread] = named
            elif form == "paddle" and named is not None:  # each thread twice: Python, C++
                for side in ("Python", "C++"):
                    label = {"ph": "M", "name": "thread_name", "pid": pid, "tid": f"{tid}({side})"}
                    events.append({**label, "args": {"name": f"thread {tid}:{named}({side})"}})
                truth.names[thread] = named
            elif named is not None and form not in ("py-spy", "onnxruntime"):  # they name none
                label = {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid}
                events.append({**label, "args": {"name": named}})
                truth.names[thread] = named
            clock = rng.uniform(0, 500)
            truth.busy_us[thread] = 0.0
            for k in range(rng.randint(1, 4)):
                op = f"op_{number}_{tid}_{k}"
                duration = rng.uniform(50, 900)
                events.extend(_in_form(form, op, pid, tid, clock, duration))
                truth.op_thread[op] = thread
                truth.busy_us[thread] += duration
                clock += duration + rng.uniform(1, 200)
    if form == "py-spy":  # a last sample where the file was written, so no frame is cut there
        last = max((e for e in events if e["ph"] == "E"), key=lambda e: e["ts"])
        events += _in_form(form, "written", last["pid"], last["tid"], last["ts"], 0.0)
    rng.shuffle(events)
    return (
        {"traceEvents": events, "viztracer_metadata": {}} if form == "python" else events
    ), truth


def _in_form(form: str, op: str, pid: int, tid: int, start: float, duration: float) -> list[dict]:
    """One op as `form` writes it: its name, category and phase."""
    where = {"pid": pid, "tid": tid}
    if form == "paddle":  # the op on its thread's C++ lane, a label around it on its Python lane
        span = {"ph": "X", "pid": pid, "ts": start, "dur": duration}
        return [
            {**span, "name": f"{op} dygraph[{duration:.3f} us]", "cat": "Operator",
             "tid": f"{tid}(C++)"},
            {**span, "name": f"label[{duration:.3f} us]", "cat": "PythonUserDefined",
             "tid": f"{tid}(Python)"},
        ]  # fmt: skip
    if form == "py-spy":
        args = {"filename": "/p/prog.py", "line": 3}
        begin = {"ph": "B", "name": op, "cat": "py-spy", "ts": start, "args": args}
        return [{**begin, **where}, {"ph": "E", "cat": "py-spy", "ts": start + duration, **where}]
    name, cat, args = {
        "trace-event": (op, "", {}),
        "python": (f"{op} (/p/prog.py:3)", "FEE", {}),
        "pytorch": (op, "cpu_op", {}),
        "onnxruntime": (f"{op}_kernel_time", "Node", {"op_name": "Gemm"}),
    }[form]
    return [
        {"ph": "X", "name": name, "cat": cat, "ts": start, "dur": duration, "args": args, **where}
    ]
