"""What else used the CPUs while we measured: a busy machine, said out loud.

A speed-up measured on a machine that other processes were using is not a property of the
graph or the config: two threads need two free cores, and a neighbour that takes a quarter of
one turns a speed-up of 1.9 into 1.6. Medians of interleaved repeats absorb short bursts, not a
neighbour that runs all along. So a measurement should say when the machine was busy, in
numbers, next to its result. `LoadMonitor` measures that; `busy_note` turns it into a sentence,
or into nothing on a quiet machine.

How it is measured (Linux, from procfs; two samples, at start and at stop, and nothing in
between, so a monitor costs a few dozen small file reads whatever the period):

- **All CPU time** is /proc/stat's per-CPU lines, summed over the CPUs this process may run on
  (its affinity mask): user + nice + system + irq + softirq. A process on a CPU we may not use
  does not slow us, so a `taskset`-pinned measurement is not blamed on the rest of a big
  machine. `guest` is already inside `user`; `iowait` is idle time.
- **Steal** is the time the hypervisor ran something else while one of these virtual CPUs
  wanted to run: other virtual machines. `steal_share` is its part of all the CPUs' time.
- **Our CPU time** is this process's utime + stime (all its threads, living and ended, the
  in-process other ones below too) plus cutime + cstime (the children it has waited for), and
  the same for every pid `own_pids()` names at start or at stop — worker processes we started.
  A pid is sampled at start and stop; one named only at stop (a worker started during the
  period) counts with all its CPU time, as if it had started in the period; a pid reused by a
  new process (another start time) is a new process; our own pid among `own_pids()` is not
  counted twice.
- **A child of ours that `own_pids()` does not name** is somebody else's work while it runs
  (a busy loop we started is a neighbour like any other).
- **Processes that end in the period**: once waited for, a process's whole life — its CPU
  time before the period too — is in its parent's cutime. So at start every living
  descendant of ours is read as well, and a process that is gone at stop is taken off again
  with its CPU time at start when whoever waited for it (its parent as it was at start, or
  that one's parent if it is gone too, and so on) is one of ours: what stays is exactly what
  it used in the period, named or not (a compiler we ran and waited for is ours). A process
  waited for by somebody else — a named grandchild whose parent is not ours and lives on —
  counts with nothing: what it used in the period cannot be read after it is gone.
- **Threads of this process that are not the measurement** ("in-process other" work): an
  OpenBLAS or OpenMP pool still spinning after a user's multi-threaded NumPy call (OpenBLAS's
  busy-waits for about 0.1 s), a user's own Python threads, Numba's, a kernel's. Their CPU
  time is inside ours above (same process), so `other_cores` cannot see them; they are read
  per thread from /proc/<pid>/task/<tid>/stat (utime + stime) at start and at stop. The
  measurement's threads are the one that started the monitor, every live Python thread whose
  name starts with "parallelgraph-" (the pools' threads), and those `own_threads()` names,
  each looked up at start and at stop (a pool started in the period is seen at stop).
  `process_other_cores` is the rest's CPU time over the wall time: a thread that appeared in
  the period counts with all its ticks, a thread that ended in the period counts with none
  (its ticks are gone from the task list, so what it used is lost). A framework sweep's
  workers are other processes named by `own_pids()`: their own pools are theirs, all ours,
  and only the sweeping process's threads are read.
- **Load averages** (/proc/loadavg, 1, 5 and 15 minutes) are kept for the record only: they
  count our own runnable threads too and lag by a minute, so they cannot say who was busy.

`other_cores` = (all CPU time − ours) / wall time, clipped at 0: how many cores, on average,
something other than our measurement kept busy. Both counts are in clock ticks (USER_HZ, 100 a
second): over a period of a second the rounding is a few hundredths of a core, and short
periods are noisier (two ticks in 0.1 s are 0.2 core), so measure at least a few tenths of a
second before believing small numbers. Not seen: a CPU quota of a container's cgroup (the
cores are the affinity mask's), and own processes running outside our affinity mask (their
time is subtracted but was never added; the clip at 0 keeps the result sane).

Without procfs (macOS, Windows, a sandbox that hides it) `LoadMonitor.stop()` returns None and
so does `busy_note(None)`: no sentence is better than a made-up one.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..config import cpu_count

#: Other processes using at least this many cores on average make the machine busy. A quiet
#: machine's daemons use a few hundredths of a core, and the tick rounding over a second is a
#: few hundredths more, so a quiet machine stays well below it. Above it the harm is the size
#: of the differences a measurement reports: on 2 cores a quarter core taken from runs that
#: need both slows those runs by about an eighth, which moves a speed-up of 1.9 to about 1.7,
#: and unevenly (the neighbour's bursts hit some repeats and not others).
BUSY_CORES = 0.25
#: A hypervisor withholding this share of the CPU time (steal) makes the machine busy. A quiet
#: cloud VM shows well under 1%; 5% is a slow-down of that size on every run that needs all
#: its cores, and it comes and goes with the neighbours.
BUSY_STEAL = 0.05
#: Python threads whose name starts with this are parallelgraph's own (the pools' threads).
OWN_THREAD_PREFIX = "parallelgraph-"
#: A period shorter than this is too short to tell: it holds under 25 clock ticks per CPU, so
#: each tick charged to whoever happened to run at that instant is 0.04 core or more, and the
#: handful that a few short-lived processes (a shell, a timer) cause reach BUSY_CORES.
#: `busy_note` says nothing about such a period, busy or not.
MIN_WALL_S = 0.25

_PROC = Path("/proc")


@dataclass(frozen=True)
class MachineLoad:
    """What the CPUs did during one measured period (see the module docstring).

    `cores` are the CPUs this process may use; `own_cores` and `other_cores` the average number
    of them that our processes and everything else kept busy; `steal_share` the part of the
    CPU time a hypervisor gave to other machines; the load averages are (1, 5, 15) minutes.
    `process_other_cores` is the average number of cores that threads of this process outside
    the measurement kept busy (a BLAS pool still spinning, a user's thread): inside
    `own_cores`, not in `other_cores`; threads that ended during the period are not in it.
    """

    wall_s: float
    cores: int
    own_cores: float
    other_cores: float
    steal_share: float
    loadavg_start: tuple[float, float, float]
    loadavg_end: tuple[float, float, float]
    process_other_cores: float = 0.0


@dataclass(frozen=True)
class _Process:
    """One process's CPU time in clock ticks: its own plus its waited-for children's."""

    ticks: int
    parent: int
    started: int  # clock ticks after boot: tells a reused pid from the process it replaces


@dataclass(frozen=True)
class _Sample:
    at: float  # time.monotonic() when /proc/stat was read
    busy: int  # clock ticks over our CPUs
    steal: int
    total: int  # every tick of our CPUs but guest time (already in user)
    loadavg: tuple[float, float, float]
    ours: dict[int, _Process]  # this process and the named pids (at stop: also those named
    # at start)
    others: dict[int, _Process]  # at start: the living descendants of ours that are not ours;
    # at stop: the processes of the start sample that are still there and not ours
    threads: dict[int, _Process]  # this process's threads (tid: utime + stime, start time)
    own_threads: set[int]  # the tids of the measurement's threads (at stop: also the start's)


def _read_cpus(proc: Path, cpus: set[int]) -> tuple[int, int, int]:
    """(busy, steal, total) clock ticks of /proc/stat, summed over `cpus` (all when none of
    them has a line: a kernel that only shows the total)."""
    busy = steal = total = 0
    found = False
    aggregate: tuple[int, int, int] | None = None
    for line in (proc / "stat").read_text().splitlines():
        if not line.startswith("cpu"):
            continue
        name, *fields = line.split()
        values = [int(value) for value in fields[:8]] + [0] * (8 - len(fields[:8]))
        user, nice, system, idle, iowait, irq, softirq, stolen = values
        counts = (
            user + nice + system + irq + softirq,
            stolen,
            user + nice + system + idle + iowait + irq + softirq + stolen,
        )
        if name == "cpu":
            aggregate = counts
        elif int(name[3:]) in cpus:
            found = True
            busy, steal, total = busy + counts[0], steal + counts[1], total + counts[2]
    if not found:
        if aggregate is None:
            raise ValueError("no cpu lines in /proc/stat")
        return aggregate
    return busy, steal, total


def _read_process(proc: Path, pid: int | str) -> _Process | None:
    """/proc/<pid>/stat's CPU times, or None for a pid that is not there (any more) or that
    procfs does not show us (mounted with hidepid)."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last
    rest = text[text.rindex(")") + 2 :].split()
    utime, stime, cutime, cstime = (int(value) for value in rest[11:15])
    return _Process(utime + stime + cutime + cstime, int(rest[1]), int(rest[19]))


def _read_threads(proc: Path, pid: int) -> dict[int, _Process]:
    """This process's living threads, each with its own utime + stime (a thread's stat has
    no children's times: they are the process's); raises OSError where procfs has no task
    list."""
    threads = {}
    for task in (proc / str(pid) / "task").iterdir():
        try:
            text = (task / "stat").read_text()
        except OSError:  # a thread that ended meanwhile
            continue
        rest = text[text.rindex(")") + 2 :].split()
        threads[int(task.name)] = _Process(int(rest[11]) + int(rest[12]), pid, int(rest[19]))
    return threads


def _named_threads() -> set[int]:
    """The native ids of the living Python threads named "parallelgraph-..."."""
    return {
        t.native_id
        for t in threading.enumerate()
        if t.name.startswith(OWN_THREAD_PREFIX) and t.native_id is not None
    }


def dask_client_threads() -> list[int]:
    """The native ids of a dask.distributed Client's threads in this process (its "IO loop",
    which also runs a LocalCluster's scheduler, and its "Dask-..." pools): the work of a
    measurement that runs on a Dask executor, for `LoadMonitor(own_threads=...)`."""
    return [
        t.native_id
        for t in threading.enumerate()
        if (t.name == "IO loop" or t.name.startswith("Dask-")) and t.native_id is not None
    ]


def _read_processes(proc: Path, pids: Iterable[int]) -> dict[int, _Process]:
    """The pids that are there, read."""
    found = {}
    for pid in pids:
        process = _read_process(proc, pid)
        if process is not None:
            found[pid] = process
    return found


def _children(proc: Path, pid: int) -> set[int]:
    """The living children of `pid`, from /proc/<pid>/task/<tid>/children (one file per
    thread: a child belongs to the thread that started it); empty where the kernel does not
    have these files (CONFIG_PROC_CHILDREN)."""
    found: set[int] = set()
    try:
        threads = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return found
    for thread in threads:
        try:
            found.update(int(child) for child in (thread / "children").read_text().split())
        except OSError:  # a thread that ended meanwhile, or no such file
            continue
    return found


def _descendants(proc: Path, roots: Iterable[int]) -> set[int]:
    """The living children of `roots`, their children, and so on."""
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in _children(proc, todo.pop()) - found:
            found.add(child)
            todo.append(child)
    return found


def _read_loadavg(proc: Path) -> tuple[float, float, float]:
    one, five, fifteen = (float(value) for value in (proc / "loadavg").read_text().split()[:3])
    return one, five, fifteen


def _affinity() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - no sched_getaffinity: every CPU
        return set(range(os.cpu_count() or 1))


class LoadMonitor:
    """Measures what else used the CPUs between `start()` and `stop()` (or over a `with`
    block, after which `load` holds the result).

    `own_pids` is called at start and at stop and names processes whose CPU time is ours
    (worker processes of an executor); this process, its threads and the children it waited
    for are always ours. `own_threads`, called at start and at stop too, names (native ids)
    threads of this process that work for the measurement besides the one that starts the
    monitor and the "parallelgraph-..." ones (`dask_client_threads`); every other thread's
    CPU time is `process_other_cores`. `proc` is where procfs is mounted. Not thread-safe: one
    period at a time, started and stopped by one thread.
    """

    def __init__(
        self,
        own_pids: Callable[[], Iterable[int]] | None = None,
        *,
        own_threads: Callable[[], Iterable[int]] | None = None,
        proc: str | Path = _PROC,
    ) -> None:
        self._own_pids = own_pids
        self._own_threads = own_threads
        self._measuring: int | None = None  # the native id of the thread that started it
        self._proc = Path(proc)
        self._start: _Sample | None = None
        self._state = "new"  # then "running", then "stopped" (start() again: a new period)
        self.load: MachineLoad | None = None

    def _sample(self, previous: _Sample | None = None) -> _Sample | None:
        """Everything at this moment, or None where procfs cannot tell. At start (no
        `previous`) the descendants of ours are read too; at stop, what is left of the
        processes the start sample saw."""
        me = os.getpid()
        named = {int(pid) for pid in self._own_pids()} if self._own_pids is not None else set()
        if previous is not None:
            named |= previous.ours.keys()
        named.discard(me)
        own_threads = _named_threads() | {self._measuring or threading.get_native_id()}
        if self._own_threads is not None:
            own_threads |= {int(tid) for tid in self._own_threads()}
        if previous is not None:
            own_threads |= previous.own_threads
        try:
            busy, steal, total = _read_cpus(self._proc, _affinity())
            at = time.monotonic()
            loadavg = _read_loadavg(self._proc)
            mine = _read_process(self._proc, me)
            if mine is None:
                return None
            ours = {me: mine} | _read_processes(self._proc, named)
            if previous is None:
                others = _read_processes(self._proc, _descendants(self._proc, ours) - ours.keys())
            else:
                seen = (previous.ours.keys() | previous.others.keys()) - ours.keys()
                others = _read_processes(self._proc, seen)
            threads = _read_threads(self._proc, me)
        except (OSError, ValueError, IndexError):  # no procfs, or one we cannot read
            return None
        return _Sample(at, busy, steal, total, loadavg, ours, others, threads, own_threads)

    def start(self) -> LoadMonitor:
        """Take the first sample; returns the monitor."""
        self._measuring = threading.get_native_id()
        self._start = self._sample()
        self._state = "running"
        self.load = None
        return self

    def stop(self) -> MachineLoad | None:
        """Take the second sample and return the period's MachineLoad (also kept in `load`);
        None without procfs. A second call returns the same result."""
        if self._state == "new":
            raise RuntimeError("LoadMonitor.stop() before start()")
        if self._state == "stopped":
            return self.load
        self._state = "stopped"
        if self._start is not None:
            end = self._sample(self._start)
            if end is not None:
                self.load = _compare(self._start, end, cpu_count())
        return self.load

    def __enter__(self) -> LoadMonitor:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _own_ticks(start: _Sample, end: _Sample) -> int:
    """Clock ticks our processes used between the samples (see the module docstring)."""
    seen = start.others | start.ours

    def there(pid: int, before: _Process) -> bool:
        now = end.ours.get(pid) or end.others.get(pid)
        return now is not None and now.started == before.started

    ticks = 0
    for pid, now in end.ours.items():
        before = seen.get(pid)
        if before is not None and before.started == now.started:
            ticks += max(0, now.ticks - before.ticks)
        else:
            ticks += now.ticks  # new in the period (or a new process under a reused pid)
    for pid, before in seen.items():
        if there(pid, before):
            continue  # counted above if it is ours, not at all if it is not
        parent, steps = before.parent, 0  # who waited for it: its parent, or theirs if gone
        while parent in seen and not there(parent, seen[parent]) and steps < len(seen):
            parent, steps = seen[parent].parent, steps + 1
        if parent in start.ours and there(parent, start.ours[parent]) and parent in end.ours:
            ticks -= before.ticks  # that one of ours now holds its whole life in its cutime
    return max(0, ticks)


def _process_other_ticks(start: _Sample, end: _Sample) -> int:
    """Clock ticks the threads of this process outside the measurement used between the
    samples: those living at stop (all of a new one's); the ended ones are lost."""
    ticks = 0
    for tid, now in end.threads.items():
        if tid in end.own_threads:
            continue
        before = start.threads.get(tid)
        same = before is not None and before.started == now.started
        ticks += max(0, now.ticks - before.ticks) if same and before is not None else now.ticks
    return ticks


def _compare(start: _Sample, end: _Sample, cores: int) -> MachineLoad:
    wall_s = end.at - start.at
    hertz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    busy = max(0, end.busy - start.busy)
    ours = _own_ticks(start, end)
    total = end.total - start.total
    per_second = hertz * wall_s if wall_s > 0 else 0.0
    return MachineLoad(
        wall_s=wall_s,
        cores=cores,
        own_cores=ours / per_second if per_second else 0.0,
        other_cores=max(0.0, (busy - ours) / per_second) if per_second else 0.0,
        steal_share=(end.steal - start.steal) / total if total > 0 else 0.0,
        loadavg_start=start.loadavg,
        loadavg_end=end.loadavg,
        process_other_cores=_process_other_ticks(start, end) / per_second if per_second else 0.0,
    )


def _cores_text(value: float) -> str:
    return f"{value:.2f}" if value < 1 else f"{value:.1f}"


def busy_note(load: MachineLoad | None, threads_used: int | None = None) -> str | None:
    """A sentence saying that the machine was busy during the measured period, with the
    numbers and what to do; None on a quiet machine, for a period shorter than MIN_WALL_S,
    or without a measurement.

    Busy means other processes kept at least BUSY_CORES cores busy on average beyond the cores
    the runs left free (`cores - threads_used`, when `threads_used` says how many threads the
    runs kept running at most: what runs on a core they did not use takes nothing from them),
    or a hypervisor withheld at least BUSY_STEAL of the CPU time, or threads of this process
    outside the measurement (`process_other_cores`: a BLAS pool still spinning after a NumPy
    call, a user's thread) kept as many cores busy as other processes must. The free cores are
    counted generously: a neighbour on them still shares memory bandwidth, caches and, with
    SMT, the physical core, which this rule does not see.
    """
    if threads_used is not None and threads_used < 1:
        raise ValueError(f"threads_used must be at least 1, got {threads_used}")
    if load is None or load.wall_s < MIN_WALL_S:
        return None
    free = max(0, load.cores - threads_used) if threads_used is not None else 0
    crowded = load.other_cores >= BUSY_CORES + free
    stolen = load.steal_share >= BUSY_STEAL
    spinning = load.process_other_cores >= BUSY_CORES + free
    if not (crowded or stolen or spinning):
        return None
    parts = []
    if crowded:
        used = f" (the runs used up to {threads_used} threads)" if threads_used is not None else ""
        parts.append(
            f"other processes used {_cores_text(load.other_cores)} of {load.cores} "
            f"core{'s' if load.cores != 1 else ''}{used}"
        )
    if stolen:
        parts.append(
            f"the hypervisor gave {load.steal_share:.0%} of the CPU time to other machines (steal)"
        )
    if spinning:
        parts.append(
            "threads of this process outside parallelgraph (a BLAS library's own pool, say, "
            f"still spinning after a NumPy call) used {_cores_text(load.process_other_cores)} "
            f"core{'s' if load.process_other_cores != 1 else ''}"
        )
    advice = "rerun on a quiet machine or with more repeats"
    if spinning:
        advice += (
            " (and let this process's other threads finish first, or hold NumPy's BLAS to one "
            "thread: threadpoolctl.threadpool_limits(1))"
        )
    return f"{' and '.join(parts)} during these runs: the speed-up is not reliable; {advice}"


def load_note(load: MachineLoad | None, threads_used: int | None = None) -> str | None:
    """The line a screen shows about the machine during a measurement: "Busy machine: ..."
    (`busy_note`), or, for a period too short for that check to judge, a line saying so — a
    quiet machine and an untested one must not look alike beside a speed-up; None on a quiet
    machine, or without /proc."""
    busy = busy_note(load, threads_used)
    if busy is not None:
        return f"Busy machine: {busy}."
    if load is not None and load.wall_s < MIN_WALL_S:
        return (
            f"Too short to tell whether the machine was busy: the runs took "
            f"{load.wall_s:.2f} s, and the load check needs {MIN_WALL_S:g} s (more repeats let "
            "it judge)."
        )
    return None
