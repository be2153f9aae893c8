"""py-spy's sampled timelines: `py-spy record --format chrometrace -o out.json -- python prog.py`
(or `--pid PID`).

What py-spy 0.4 writes (tests/fixtures/real/README.md has the details): a bare list of 'B'/'E'
pairs, all with cat "py-spy"; `name` is the Python function ("layer", "Thread.run",
"<module>"), `args` has `filename` and `line`; pid and tid are the OS process id and the
thread's pthread id; `ts` is integer µs since py-spy started. No thread names, no metadata.

**It is sampled.** Each sample is one stack per thread; a frame's slice begins at the first
sample that saw it and ends at the first later sample *of the same thread* whose stack no longer
holds it (a new line in the same function is a new slice, as is every call). So times are true to
a sample interval (`--rate`, 100 per second by default), and two things stretch slices:

- a thread that is idle (sleeping, blocked on a lock, waiting for the GIL) is not sampled (unless
  `--idle`), so its last frames stay open across the pause;
- a thread that ended is never sampled again, so its last frames stay open until py-spy writes
  the file (all of them end at the same, last timestamp).

Roles:

- **waiting**: the threading module's blocking calls (Thread.join, Event.wait, Condition.wait,
  Barrier.wait, Semaphore.acquire...), queue.Queue.get/put and concurrent.futures' waits
  (Future.result, wait, as_completed) — the innermost frame decides, so a thread's time inside
  Thread.join is waiting even though `<module>` encloses it;
- **setup**: the threading module's own machinery (Thread._bootstrap, _bootstrap_inner, run,
  start: starting and ending threads) and imports (importlib's `_find_and_load` and every
  frame inside it, the imported module's own code included: `py-spy record -- python prog.py`
  samples the program's imports);
- **work**: every other frame.

Ops are the frames (the function's name; several slices of one function on different lines are
separate ops). **Scopes**: with several threads, the thread — py-spy names none, so a thread
started by `threading` is named after its target function (the first frame under Thread.run:
targets named `net1` and `net2` make the branches "net1" and "net2"), the main thread is
"MainThread" and its frames have no scope (its waiting in `join` is not a branch); with one
thread, the top-level function under `<module>`. **Lanes**: "py-spy/<thread>" ("py-spy/net1",
"py-spy/MainThread"), the tid added where names repeat in a process; with several processes
(`py-spy record --subprocesses`) "py-spy:<pid>/<thread>", each process's threads its branches
(`python.branch_scopes`): a thread is its (pid, tid), and a forked child's main thread, which
has its parent's pthread id, is a lane of its own. Each lane runs in program order (a Python
thread runs its calls one after another).

Threads that run Python share one GIL: py-spy shows a thread waiting for the GIL as still in its
frame, so wall-clock overlap between threads is an upper bound on parallel work (NumPy, I/O and
other C code that releases the GIL do run in parallel) — said in a note.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

from ...trace.lanes import LaneKind
from ...trace.model import EventKind, EventRole
from ..document import Document, Slice, Thread
from . import python
from .base import (
    Converted,
    Draft,
    Producer,
    process_labels,
    process_lanes,
    unique_labels,
)

CATEGORY = "py-spy"

_THREADING_WAITS = frozenset(
    {
        "Thread.join",
        "Thread._wait_for_tstate_lock",
        "Event.wait",
        "Condition.wait",
        "Condition.wait_for",
        "Barrier.wait",
        "Barrier._wait",
        "Barrier._enter",
        "Semaphore.acquire",
        "BoundedSemaphore.acquire",
    }
)
_OTHER_WAITS = {
    "queue.py": frozenset({"Queue.get", "Queue.put", "Queue.join"}),
    "_base.py": frozenset({"Future.result", "Future.exception", "wait", "as_completed"}),
    "thread.py": frozenset({"ThreadPoolExecutor.shutdown"}),
    "process.py": frozenset({"ProcessPoolExecutor.shutdown", "BaseProcess.join"}),
    "popen_fork.py": frozenset({"Popen.wait", "Popen.poll"}),  # multiprocessing's children
}
#: importlib's frame around an import: everything in it (the module's own code too) is setup
IMPORT_FRAME = "_find_and_load"
_THREAD_ROOTS = ("Thread._bootstrap", "Thread._bootstrap_inner", "Thread.run")
_ENTRY_POINTS = frozenset(
    {"<module>", "_run_code", "_run_module_as_main", "run_path", "_run_module_code", "main"}
)

KNOBS = dataclasses.replace(  # Python's words, with what a sampler shows of the GIL
    python.KNOBS,
    inter_op=(
        "run the branches at the same time where the GIL allows: branches that spend their "
        "time in NumPy or I/O (which release the GIL) overlap in threading.Thread or "
        "concurrent.futures.ThreadPoolExecutor; pure-Python branches hold the GIL, so threads "
        "only take turns — run them in processes (multiprocessing, concurrent.futures."
        "ProcessPoolExecutor) or on a free-threaded Python (3.13t and later)."
    ),
    intra_op=(
        "make the calls on it faster: Python code that holds the GIL gains nothing from "
        "more threads — split its work over processes (multiprocessing, concurrent.futures."
        "ProcessPoolExecutor) or run a free-threaded Python (3.13t and later); NumPy's "
        "matmuls can use NumPy's own BLAS threads (threadpoolctl.threadpool_limits, "
        "OPENBLAS_NUM_THREADS)."
    ),
)

SAMPLED_NOTE = (
    "py-spy samples stacks: a frame's event runs from the first sample that saw it to the first "
    "later sample of its thread that did not, so times are true to a sample interval; an idle "
    "thread (sleeping, blocked, waiting for the GIL) is not sampled, so its last frames stay "
    "open across the pause, and a thread that ended keeps its last frames open until the file "
    "was written."
)
GIL_NOTE = (
    "Threads that run Python share one GIL, and py-spy shows a thread waiting for it as still "
    "in its frame: wall-clock overlap between threads is an upper bound on parallel work (only "
    "code that releases the GIL, such as NumPy's matmul or I/O, ran in parallel); a "
    "pure-Python program gains from processes or a free-threaded Python, not from threads."
)


def detect(document: Document) -> bool:
    sample = document.slices[:200]
    return bool(sample) and sum(p.cat == CATEGORY for p in sample) >= 0.8 * len(sample)


def _file(piece: Slice) -> str:
    return str(piece.args.get("filename", "")).replace("\\", "/").rpartition("/")[2]


def role_of(piece: Slice) -> EventRole:
    name, where = piece.name, _file(piece)
    if where == "threading.py":
        return EventRole.WAITING if name in _THREADING_WAITS else EventRole.SETUP
    if name in _OTHER_WAITS.get(where, ()):
        return EventRole.WAITING
    filename = str(piece.args.get("filename", ""))
    if "importlib" in filename and "_bootstrap" in filename:
        return EventRole.SETUP
    return EventRole.WORK


def _by_thread(pieces: list[Slice]) -> dict[Thread, list[Slice]]:
    out: dict[Thread, list[Slice]] = defaultdict(list)
    for piece in pieces:
        out[piece.thread].append(piece)
    return out


def _stacks(pieces: list[Slice]) -> dict[int, list[str]]:
    """Slice index -> the names of the frames around it on its thread, outermost first, and
    its own. Frames opened by one sample share their start (and often their end), so time
    alone cannot say which holds which; py-spy writes the B events outermost first, so among
    equal spans the earlier event is the caller."""
    out: dict[int, list[str]] = {}
    for thread_pieces in _by_thread(pieces).values():
        stack: list[Slice] = []
        for piece in sorted(thread_pieces, key=lambda p: (p.start, -p.end, p.index)):
            while stack and not (
                piece.end <= stack[-1].end
                and (piece.start < stack[-1].end or piece.start == stack[-1].start)
            ):
                stack.pop()
            stack.append(piece)
            out[piece.index] = [frame.name for frame in stack]
    return out


def _targets(pieces: list[Slice], chains: dict[int, list[str]]) -> dict[int, str]:
    """Slice index -> the outermost frame around it (itself included) that is neither thread
    machinery nor an entry point: a thread's target, or the main thread's top-level call."""
    skip = set(_THREAD_ROOTS) | _ENTRY_POINTS
    return {
        piece.index: next((n for n in chains.get(piece.index, ()) if n not in skip), "")
        for piece in pieces
    }


def _started(piece: Slice) -> bool:
    """Whether the frame is the root of a thread that `threading` started."""
    return piece.name == "Thread._bootstrap"


def _labels(document: Document, threads: dict[Thread, list[Slice]], targets: dict[int, str]):
    """A name per thread: the file's, else a threading thread's target, else MainThread."""
    base: dict[Thread, str] = {}
    for thread, pieces in threads.items():
        named = document.thread_names.get(thread, "").strip()
        if named:
            base[thread] = named
            continue
        if not any(_started(p) for p in pieces):
            base[thread] = "MainThread"
            continue
        time_in: Counter[str] = Counter()
        for piece in pieces:
            if targets.get(piece.index):
                time_in[targets[piece.index]] += piece.end - piece.start
        base[thread] = time_in.most_common(1)[0][0] if time_in else "thread"
    return unique_labels(base, lambda thread: thread[0], lambda thread: thread[1])


def _written_at(pieces: list[Slice]) -> tuple[int, int]:
    """(when py-spy wrote the file: the last end, the last moment a sample observed): frames
    still open at the write end there, though their thread may have ended long before."""
    written = max(piece.end for piece in pieces)
    observed = max(
        max(piece.start for piece in pieces),
        max((piece.end for piece in pieces if piece.end < written), default=0),
    )
    return written, observed


def convert(document: Document) -> Converted:
    converted = Converted()
    pieces = document.slices
    if not pieces:
        return converted
    written, observed = _written_at(pieces)
    cut = sum(piece.end == written for piece in pieces) if observed < written else 0
    threads = _by_thread(pieces)
    chains = _stacks(pieces)
    targets = _targets(pieces, chains)
    importing = {index for index, names in chains.items() if IMPORT_FRAME in names}
    labels = _labels(document, threads, targets)
    processes = process_labels(document, {pid for pid, _ in threads})
    lanes = process_lanes("py-spy", labels, processes)
    mains = {t for t, frames in threads.items() if not any(_started(p) for p in frames)}
    several = len(threads) > 1
    scopes = python.branch_scopes(threads, labels, processes, mains) if several else {}
    for piece in pieces:
        converted.add(
            Draft(
                name=piece.name,
                op_type=piece.name,
                scope=scopes[piece.thread] if several else targets.get(piece.index, ""),
                device="cpu",
                kind=EventKind.OP,
                lane=lanes[piece.thread],
                start=piece.start,
                end=max(piece.start, observed) if cut and piece.end == written else piece.end,
                role=EventRole.SETUP if piece.index in importing else role_of(piece),
            ),
            piece,
        )
    for lane in lanes.values():
        converted.lane_kinds[lane] = LaneKind.WORKER
        converted.program_order.add(lane)
    converted.notes.append(SAMPLED_NOTE)
    if cut:
        converted.notes.append(
            f"{cut} frame(s) were still open when py-spy wrote the file "
            f"({(written - observed) / 1e6:.1f} ms after the last sample that changed a stack): "
            "they end at that last observed change instead, since their threads may have "
            "ended long before."
        )
    if len(threads) > len(processes):  # threads of one process share its GIL
        converted.notes.append(GIL_NOTE)
    return converted


PRODUCER = Producer("py-spy", detect, convert, KNOBS)
