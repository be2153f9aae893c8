"""Python tracers: viztracer (`viztracer -o trace.json[.gz] prog.py`, `VizTracer(...)`) and
others that record every Python call as a trace event named "function (file.py:line)".

- **ops**: every call. Calls nest on their thread (the trace model counts nested time once);
  an op's name is the function's name, without the file path and line ("layer", not
  "layer (/path/prog.py:2)").
- **scopes**: the thread, when the program ran several (threads named with
  `threading.Thread(name="net1")` make the branches "net1" and "net2"; the main thread's calls
  then have no scope, so that its waiting in `Thread.join` is not compared as a branch); the
  process, when it ran several (`multiprocessing.Process(name="net1")`: viztracer follows the
  children and names each process; the launcher's main thread has no scope; `branch_scopes`);
  with one thread, the top-level function under `<module>`.
- **lanes**: "python/<thread name>" ("python/MainThread", "python/net1"); with several
  processes "python:<process name>/<thread name>" ("python:net1/MainThread"): a thread is its
  (pid, tid) — a forked child keeps its parent's thread name and, in viztracer's files, its
  tid, and is a lane of its own all the same.
- **waiting**: a thread blocked in `Thread.join`, a lock's or condition's `acquire`/`wait`, a
  `Queue.get`, a future's `result`, `Process.join` or `time.sleep` (by function and module:
  threading.py, queue.py, concurrent/futures, multiprocessing, or the C functions
  `_thread.lock.acquire`, `time.sleep`, `posix.waitpid` ...) is waiting, not work: the main
  thread joining its workers is not a busy thread.
- **program order**: a Python thread runs its calls one after another, so every thread's lane
  is a program-order lane (`Converted.program_order`).
- The tracer's own metadata (`viztracer_metadata`, the `file_info` sources) is not kept.

A Python tracer times calls in wall-clock time: a thread waiting for the GIL still shows its
call as running, so overlap between threads is at most what ran in parallel — said in a note.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from ...trace.model import WORK, EventKind, EventRole
from ..document import Document, Slice, Thread
from .base import (
    Converted,
    Draft,
    Producer,
    SettingWords,
    enclosing_names,
    process_labels,
    process_lanes,
    thread_labels,
)

KNOBS = SettingWords(
    tool="Python",
    inter_op=(
        "run the branches in separate threads (threading, concurrent.futures."
        "ThreadPoolExecutor): they overlap while the code releases the GIL (NumPy, I/O); "
        "pure-Python work needs processes (concurrent.futures.ProcessPoolExecutor) or a "
        "free-threaded Python."
    ),
    intra_op=(
        "let the heaviest calls use more threads: NumPy's BLAS thread count "
        "(threadpoolctl.threadpool_limits, or OPENBLAS_NUM_THREADS / OMP_NUM_THREADS)."
    ),
    streams=(
        "put independent GPU work on separate CUDA streams (torch.cuda.Stream, "
        "cupy.cuda.Stream, numba.cuda.stream())."
    ),
    one_at_a_time="one thread (the program did its work on one thread)",
    bigger_ops=(
        "do more work per call (vectorise with NumPy): tiny calls cost more to hand to "
        "another thread than to run."
    ),
    experiment=(
        "time the program with its branches on one thread and on two (threading.Thread), "
        "and once with two processes (concurrent.futures.ProcessPoolExecutor), and compare "
        "the wall times: threads gain only where the code releases the GIL."
    ),
)

#: "layer (/path/prog.py:2)" (viztracer) or "prog.py(2): layer" (PyTorch's, cProfile-like).
_VIZTRACER_NAME = re.compile(r"^(?P<function>.+?) \((?P<where>[^()]*:\d+)\)$")
_FILE_FIRST_NAME = re.compile(r"^(?P<where>[^()]+\.py)\((?P<line>\d+)\): (?P<function>.+)$")
_CALL_NAMES = (_VIZTRACER_NAME, _FILE_FIRST_NAME)
_ENTRY_POINTS = ("<module>", "_run_code", "_run_module_as_main", "exec", "run_path")
#: Python functions that block their thread, by the module that defines them ...
WAITING_FUNCTIONS = {
    "threading.py": {"join", "wait", "acquire", "_wait_for_tstate_lock", "wait_for"},
    "queue.py": {"get", "put", "join"},
    "_base.py": {"result", "wait", "as_completed", "exception"},  # concurrent/futures/_base.py
    "thread.py": {"shutdown"},  # concurrent/futures/thread.py
    "process.py": {"shutdown", "join"},  # concurrent/futures' and multiprocessing's
    "popen_fork.py": {"wait", "poll"},  # multiprocessing waiting for a child
}
#: ... and the C functions that do (as viztracer names them).
WAITING_BUILTINS = frozenset(
    {
        "_thread.lock.acquire",
        "_thread.RLock.acquire",
        "time.sleep",
        "posix.waitpid",
        "select.select",
        "select.poll.poll",
        "select.epoll.poll",
        "_queue.SimpleQueue.get",
    }
)
GIL_NOTE = (
    "A Python tracer times calls in wall-clock time: a thread waiting for the GIL still shows "
    "its call as running, so overlap between threads is an upper bound on parallel work."
)


def role_of(name: str) -> EventRole:
    """Waiting for a call that blocks its thread (see the module docstring), else work."""
    if name in WAITING_BUILTINS:
        return EventRole.WAITING
    match = _VIZTRACER_NAME.match(name)
    if match is None:
        return WORK
    module = match.group("where").rpartition(":")[0].replace("\\", "/").rpartition("/")[2]
    function = match.group("function").rpartition(".")[2]  # "Thread.join" -> "join"
    if function in WAITING_FUNCTIONS.get(module, ()):
        return EventRole.WAITING
    return WORK


def function_name(name: str) -> str:
    """The function of a Python tracer's event name, without file and line."""
    for pattern in _CALL_NAMES:
        match = pattern.match(name)
        if match:
            return match.group("function")
    return name


def detect(document: Document) -> bool:
    if "viztracer_metadata" in document.header:
        return True
    sample = document.slices[:200]
    calls = sum(bool(pattern.match(p.name)) for p in sample for pattern in _CALL_NAMES)
    return bool(sample) and calls >= 0.8 * len(sample)


def _top_level_functions(pieces: list[Slice]) -> dict[int, str]:
    """Slice index -> the outermost function around it (itself included) that is not the
    program's entry point (`<module>`, runpy)."""
    chains = enclosing_names(pieces, pieces)
    scopes = {}
    for piece in pieces:
        names = (function_name(name) for name in chains.get(piece.index, ()))
        scopes[piece.index] = next((n for n in names if n not in _ENTRY_POINTS), "")
    return scopes


def branch_scopes(
    threads: dict[Thread, list[Slice]],
    labels: dict[Thread, str],
    processes: dict[Any, str],
    mains: set[Thread],
) -> dict[Thread, str]:
    """The scope of each thread's calls when the program ran several threads or processes: the
    thread within one process, the process (with the thread after a "/" for threads other than
    its main one) across several — so two processes `multiprocessing` forked are two branches
    although each ran in its "MainThread". The launcher's main thread has no scope, so that
    its waiting in `Thread.join` or `Process.join` is not compared as a branch: the main
    thread of a single process, else of the process that started first and ended last (viztracer
    names it "MainProcess")."""
    spans: dict[Any, tuple[int, int]] = {}
    for (pid, _), pieces in threads.items():
        start, end = spans.get(pid, (min(p.start for p in pieces), max(p.end for p in pieces)))
        spans[pid] = (min(start, *(p.start for p in pieces)), max(end, *(p.end for p in pieces)))
    if len(spans) == 1:
        return {thread: "" if thread in mains else labels[thread] for thread in threads}
    named = [pid for pid in spans if processes[pid] == "MainProcess"]
    first = min(spans, key=lambda pid: (spans[pid][0], -spans[pid][1], str(pid)))
    spans_all = spans[first][1] >= max(end for _, end in spans.values())
    launcher = named[0] if len(named) == 1 else first if spans_all else None
    scopes = {}
    for thread in threads:
        process = processes[thread[0]]
        if thread in mains:
            scopes[thread] = "" if thread[0] == launcher else process
        else:
            scopes[thread] = f"{process}/{labels[thread]}"
    return scopes


def convert(document: Document) -> Converted:
    converted = Converted()
    by_thread: dict[Thread, list[Slice]] = defaultdict(list)
    for piece in document.slices:
        by_thread[piece.thread].append(piece)
    labels = thread_labels(document, by_thread)
    processes = process_labels(document, {pid for pid, _ in by_thread})
    lanes = process_lanes("python", labels, processes)
    mains = {thread for thread in by_thread if labels[thread] == "MainThread"}
    several = len(by_thread) > 1
    scopes = branch_scopes(by_thread, labels, processes, mains) if several else {}
    top = {} if several else _top_level_functions(document.slices)
    for piece in document.slices:
        function = function_name(piece.name)
        converted.add(
            Draft(
                name=function,
                op_type=function,
                scope=scopes[piece.thread] if several else top.get(piece.index, ""),
                device="cpu",
                kind=EventKind.OP,
                lane=lanes[piece.thread],
                start=piece.start,
                end=piece.end,
                role=role_of(piece.name),
            ),
            piece,
        )
    converted.program_order = set(lanes.values())
    if len(by_thread) > len(processes):  # threads of one process share its GIL
        converted.notes.append(GIL_NOTE)
    return converted


PRODUCER = Producer("python", detect, convert, KNOBS)
