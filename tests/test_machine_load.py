"""A busy machine said out loud: `LoadMonitor` against real busy loops (another process, this
process, a child named as ours, children that end in the period), `busy_note`'s rule on values
made by hand, and the demo's note with a real neighbour running.

The machine these tests run on is shared, so no test asserts that it is quiet: each compares
two monitors over the same period, or a period with our own work against one without, or
counts what a neighbour we start adds on top of whatever else is there.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from helpers import neighbour

from parallelgraph.cli import main
from parallelgraph.config import cpu_count
from parallelgraph.experiments.machine_load import (
    BUSY_CORES,
    MIN_WALL_S,
    LoadMonitor,
    MachineLoad,
    busy_note,
    load_note,
)

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/stat"), reason="LoadMonitor reads Linux's /proc"
)


def spin(seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


def test_a_busy_neighbour_is_other_cores_and_said_out_loud():
    with neighbour():
        with LoadMonitor() as monitor:
            time.sleep(0.6)
    load = monitor.load
    assert load is not None
    assert 0.6 <= load.wall_s < 1.5 and load.cores == cpu_count()
    assert load.other_cores >= 0.5, load  # the loop alone keeps (most of) one core busy
    assert load.own_cores < 0.2, load  # this process slept
    assert len(load.loadavg_start) == len(load.loadavg_end) == 3
    note = busy_note(load)
    assert note is not None and f"of {load.cores} core" in note
    assert f"used {load.other_cores:.2f}" in note or f"used {load.other_cores:.1f}" in note
    assert "not reliable" in note


def test_our_own_cpu_work_is_ours_not_the_machines():
    """Periods with a busy loop in this process, each paired with one that sleeps as long: the
    loop shows in own_cores, as much as the kernel's own count of this process's CPU time
    (also when own_pids names this process), and not in other_cores. Counted as others it
    would show twice: on a busy machine own + other would pass the cores there are, on a
    quiet one other_cores would rise by the loop's share in every pair (the best of three
    pairs absorbs a neighbour that starts or stops meanwhile)."""
    added = []
    for _ in range(3):
        with LoadMonitor() as quiet:
            time.sleep(0.25)
        cpu_before = time.process_time()
        also_named = LoadMonitor(lambda: [os.getpid()]).start()
        with LoadMonitor() as working:
            spin(0.25)
        also_named.stop()
        cpu_s = time.process_time() - cpu_before
        assert cpu_s >= 0.03  # even on a crowded machine the loop got some CPU time
        assert quiet.load is not None and working.load is not None
        assert also_named.load is not None
        for load in (working.load, also_named.load):
            assert load.own_cores * load.wall_s == pytest.approx(cpu_s, abs=0.04), load
        assert working.load.own_cores + working.load.other_cores <= working.load.cores + 0.1
        added.append((working.load.other_cores - quiet.load.other_cores) / working.load.own_cores)
    assert min(added) < 0.5, added


REPORTING_LOOP = (
    "import signal, time\n"
    "signal.signal(signal.SIGUSR1, lambda *_: print(time.process_time(), flush=True))\n"
    "print('ready', flush=True)\n"
    "while True:\n"
    "    pass\n"
)


def test_a_child_named_by_own_pids_is_ours_also_when_it_starts_in_the_period():
    """Three monitors over (almost) the same period of a busy child that tells its own CPU
    time (process_time, on SIGUSR1): not named, named from the start, and named only once it
    runs (a worker started during the period). Naming it moves exactly its CPU time in the
    period from other_cores to own_cores, however crowded the machine is."""

    def child_cpu_s() -> float:
        child.send_signal(signal.SIGUSR1)
        return float(child.stdout.readline())

    pids: list[int] = []
    cpu_before = time.process_time()
    late = LoadMonitor(lambda: pids).start()
    child = subprocess.Popen(
        [sys.executable, "-c", REPORTING_LOOP], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        time.sleep(0.1)
        child_before = child_cpu_s()
        unnamed = LoadMonitor().start()
        named = LoadMonitor(lambda: [child.pid]).start()
        answers = iter([[child.pid], []])  # named at start only (a worker that retired)
        retired = LoadMonitor(lambda: next(answers)).start()
        time.sleep(0.6)
        pids.append(child.pid)
        retired_load, named_load, unnamed_load = retired.stop(), named.stop(), unnamed.stop()
        child_after = child_cpu_s()
        late_load = late.stop()
        child_life = child_cpu_s()
        our_cpu_s = time.process_time() - cpu_before
    finally:
        child.kill()
        child.wait()
    assert named_load is not None and unnamed_load is not None and late_load is not None
    in_period = child_after - child_before
    assert in_period >= 0.03  # the child got some CPU time
    moved_to_ours = (named_load.own_cores - unnamed_load.own_cores) * named_load.wall_s
    moved_from_others = (unnamed_load.other_cores - named_load.other_cores) * named_load.wall_s
    assert moved_to_ours == pytest.approx(in_period, abs=0.04), (named_load, unnamed_load)
    assert moved_from_others == pytest.approx(in_period, abs=0.04), (named_load, unnamed_load)
    assert retired_load is not None
    assert retired_load.own_cores * retired_load.wall_s == pytest.approx(
        named_load.own_cores * named_load.wall_s, abs=0.03
    )
    # all of the late-named child's life is in the late monitor's period, and counted
    late_own_s = late_load.own_cores * late_load.wall_s
    assert late_own_s == pytest.approx(child_life + our_cpu_s, abs=0.05), late_load


def works_then_waits(wait_s: float) -> str:
    """Code for a child: 0.3 s of CPU time (however long that takes on a crowded machine),
    "done", then `wait_s` asleep."""
    return (
        "import time\n"
        "while time.process_time() < 0.3:\n"
        "    pass\n"
        "print('done', flush=True)\n"
        f"time.sleep({wait_s})\n"
    )


def parent_of(grandchild_code: str, then_sleep_s: float) -> subprocess.Popen:
    """A child that starts a grandchild running `grandchild_code` (its output ours to read,
    after the grandchild's pid), waits for it, then sleeps `then_sleep_s` before it ends."""
    code = (
        "import subprocess, sys, time\n"
        f"grandchild = subprocess.Popen([sys.executable, '-c', {grandchild_code!r}])\n"
        "print(grandchild.pid, flush=True)\n"
        "grandchild.wait()\n"
        f"time.sleep({then_sleep_s})\n"
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


@pytest.mark.parametrize("depth", ["child", "grandchild"])
def test_processes_that_end_in_the_period_count_only_their_time_in_the_period(depth):
    """A child (or a grandchild, whose parent is our child) works 0.3 s before the period and
    sleeps through it; in the period it ends (the grandchild killed) and is waited for (the
    grandchild by its parent, which then ends and is waited for by us). Our cutime then holds
    the whole lives, of which the period holds (almost) nothing: so for a monitor that names
    it and for one that does not."""
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    if depth == "child":
        process = subprocess.Popen(
            [sys.executable, "-c", works_then_waits(0.15)], stdout=subprocess.PIPE, text=True
        )
        pid = process.pid
    else:
        process = parent_of(works_then_waits(30), then_sleep_s=0)
        assert process.stdout is not None
        pid = int(process.stdout.readline())
    try:
        assert process.stdout is not None and process.stdout.readline() == "done\n"
        named = LoadMonitor(lambda: [pid]).start()
        unnamed = LoadMonitor().start()
        if depth == "grandchild":
            os.kill(pid, signal.SIGKILL)
        process.wait(timeout=10)
        time.sleep(0.05)
        loads = named.stop(), unnamed.stop()
    finally:
        process.kill()
        process.wait()
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    life_s = sum(
        getattr(children_after, f) - getattr(children_before, f) for f in ("ru_utime", "ru_stime")
    )
    assert life_s >= 0.3  # so counting whole lives would show
    for load in loads:  # in the period: an interpreter's shutdown, and our waiting
        assert load is not None
        assert load.own_cores * load.wall_s < 0.12, (load, life_s)


def test_a_named_pid_that_ends_unseen_counts_nothing_and_a_missing_pid_is_skipped():
    """A named grandchild killed in the period is waited for by its parent, which is not ours
    and lives on: what it used in the period cannot be known afterwards, so it counts as
    nothing of ours (and so as somebody else's), without taking anything off what this
    process used; a pid that does not exist is skipped."""
    parent = parent_of("while True: pass", then_sleep_s=5)
    try:
        assert parent.stdout is not None
        grandchild = int(parent.stdout.readline())
        time.sleep(0.15)
        outer_before = time.process_time()  # the monitor's own reading of /proc is ours too
        monitor = LoadMonitor(lambda: [grandchild, 2**22 + 12345]).start()  # above any pid_max
        cpu_before = time.process_time()
        spin(0.3)
        os.kill(grandchild, signal.SIGKILL)
        time.sleep(0.1)  # the parent waits for it meanwhile
        cpu_s = time.process_time() - cpu_before
        load = monitor.stop()
        outer_s = time.process_time() - outer_before
        assert parent.poll() is None  # still there
    finally:
        parent.kill()
        parent.wait()
    assert load is not None
    # between what this process used in the period and that plus the monitor's own reads
    # (tick rounding: a hundredth of a second at each end)
    assert cpu_s - 0.03 <= load.own_cores * load.wall_s <= outer_s + 0.03, (load, cpu_s, outer_s)


class Sorting:
    """A thread of this process that keeps a core busy with NumPy sorts (the GIL released
    while each sorts), named `name`, until the `with` block ends."""

    def __init__(self, name: str | None = None) -> None:
        self.done = threading.Event()
        self.data = np.random.default_rng(0).random(200_000)
        self.thread = threading.Thread(target=self._work, name=name, daemon=True)

    def _work(self) -> None:
        while not self.done.is_set():
            np.sort(self.data)

    def __enter__(self) -> Sorting:
        self.thread.start()
        time.sleep(0.05)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.done.set()
        self.thread.join()
        # join() returns when the Python thread is done; the OS thread exits a moment later
        # (longer on a busy machine), and until then /proc still lists it with its ticks
        task = f"/proc/self/task/{self.thread.native_id}"
        deadline = time.monotonic() + 5.0
        while os.path.exists(task) and time.monotonic() < deadline:
            time.sleep(0.005)


IN_PROCESS = "threads of this process outside parallelgraph (a BLAS library's own pool"


def test_a_busy_thread_of_this_process_is_process_other_cores_and_said():
    """A user's thread sorting while we measure: inside own_cores (same process), not in
    other_cores, and said as this process's other threads."""
    with Sorting("user-thread"):
        with LoadMonitor() as monitor:
            time.sleep(0.5)
    load = monitor.load
    assert load is not None
    assert load.process_other_cores >= 0.5, load  # the loop keeps (most of) one core busy
    assert load.process_other_cores <= load.own_cores + 0.05, load
    note = busy_note(load)
    assert note is not None and IN_PROCESS in note
    assert f"used {load.process_other_cores:.2f} core" in note or (
        f"used {load.process_other_cores:.1f} core" in note
    )
    assert "threadpool_limits(1)" in note
    # a thread that starts in the period counts with all its ticks; one that also ends in it
    # with none (its ticks are gone with it)
    late = LoadMonitor().start()
    ended = LoadMonitor().start()
    with Sorting():
        time.sleep(0.4)
        late_load = late.stop()
    ended_load = ended.stop()
    assert late_load is not None and late_load.process_other_cores >= 0.4, late_load
    assert ended_load is not None and ended_load.process_other_cores < 0.1, ended_load


def test_parallelgraph_threads_and_named_threads_are_the_measurements():
    """The same loop in a thread named "parallelgraph-..." (seen at stop too: started in the
    period), or named by own_threads, is the measurement's own work."""
    with Sorting("parallelgraph-test-worker"):
        with LoadMonitor() as monitor:
            time.sleep(0.5)
    started_inside = LoadMonitor().start()
    with Sorting("parallelgraph-test-worker"):
        time.sleep(0.4)
        started_inside.stop()
    with Sorting("user-thread") as sorting:
        with LoadMonitor(own_threads=lambda: [sorting.thread.native_id]) as named:
            time.sleep(0.4)
    for load in (monitor.load, started_inside.load, named.load):
        assert load is not None
        assert load.own_cores >= 0.3, load  # the loop ran, and was ours
        assert load.process_other_cores < 0.1, load
        note = busy_note(load)
        assert note is None or IN_PROCESS not in note


def test_a_quiet_process_has_no_process_other_cores():
    with LoadMonitor() as monitor:
        time.sleep(0.4)
    load = monitor.load
    assert load is not None and load.process_other_cores < 0.1, load
    note = busy_note(load)
    assert note is None or IN_PROCESS not in note


def test_without_procfs_there_is_no_load_and_no_note(tmp_path):
    monitor = LoadMonitor(proc=tmp_path)
    with monitor:
        pass
    assert monitor.load is None and monitor.stop() is None
    assert busy_note(monitor.load) is None


def test_stop_before_start_is_an_error_and_a_second_stop_repeats_the_first():
    with pytest.raises(RuntimeError, match="before start"):
        LoadMonitor().stop()
    monitor = LoadMonitor().start()
    first = monitor.stop()
    assert first is not None and monitor.stop() is first


def load(
    other_cores: float,
    steal: float = 0.0,
    cores: int = 2,
    wall_s: float = 1.0,
    process_other: float = 0.0,
):
    return MachineLoad(
        wall_s=wall_s,
        cores=cores,
        own_cores=1.0,
        other_cores=other_cores,
        steal_share=steal,
        loadavg_start=(0.5, 0.5, 0.5),
        loadavg_end=(1.5, 0.7, 0.6),
        process_other_cores=process_other,
    )


def test_busy_note_is_silent_on_a_quiet_machine_and_gives_the_numbers_on_a_busy_one():
    assert busy_note(None) is None
    assert busy_note(load(0.0)) is None
    assert busy_note(load(BUSY_CORES - 0.01)) is None
    assert busy_note(load(BUSY_CORES)) is not None
    assert busy_note(load(1.6)) == (
        "other processes used 1.6 of 2 cores during these runs: the speed-up is not "
        "reliable; rerun on a quiet machine or with more repeats"
    )
    assert "used 0.30 of 1 core during" in busy_note(load(0.3, cores=1))
    assert busy_note(load(1.6, wall_s=MIN_WALL_S - 0.01)) is None  # too short to tell


def test_load_note_says_busy_or_too_short_and_nothing_only_on_a_quiet_long_enough_period():
    """A quiet machine and an untested one never look alike beside a speed-up (issue #40)."""
    assert load_note(None) is None
    assert load_note(load(0.0)) is None
    assert load_note(load(1.6)) == f"Busy machine: {busy_note(load(1.6))}."
    short = load_note(load(1.6, wall_s=0.18))
    assert short == (
        "Too short to tell whether the machine was busy: the runs took 0.18 s, and the load "
        "check needs 0.25 s (more repeats let it judge)."
    )
    assert load_note(load(0.0, wall_s=0.18)) == short


def test_busy_note_forgives_what_ran_on_the_cores_the_runs_left_free():
    assert busy_note(load(5.0, cores=8), threads_used=2) is None  # 6 cores free
    note = busy_note(load(6.5, cores=8), threads_used=2)
    assert note is not None and "6.5 of 8 cores (the runs used up to 2 threads)" in note
    assert busy_note(load(0.3, cores=2), threads_used=3) is not None  # none free
    with pytest.raises(ValueError, match="at least 1"):
        busy_note(load(0.3), threads_used=0)


def test_busy_note_says_steal():
    assert busy_note(load(0.0, steal=0.04)) is None
    note = busy_note(load(0.0, steal=0.07))
    assert note is not None and "other processes" not in note
    assert "gave 7% of the CPU time to other machines (steal)" in note
    both = busy_note(load(1.2, steal=0.1))
    assert both is not None and both.startswith(
        "other processes used 1.2 of 2 cores and the hypervisor gave 10% of the CPU time"
    )


def test_busy_note_says_this_processs_other_threads_by_the_same_rule():
    assert busy_note(load(0.0, process_other=BUSY_CORES - 0.01)) is None
    assert busy_note(load(0.0, process_other=0.4)) == (
        "threads of this process outside parallelgraph (a BLAS library's own pool, say, still "
        "spinning after a NumPy call) used 0.40 cores during these runs: the speed-up is not "
        "reliable; rerun on a quiet machine or with more repeats (and let this process's "
        "other threads finish first, or hold NumPy's BLAS to one thread: "
        "threadpoolctl.threadpool_limits(1))"
    )
    assert busy_note(load(0.0, cores=8, process_other=5.0), threads_used=2) is None  # free
    both = busy_note(load(1.2, process_other=0.5))
    assert both is not None and both.startswith("other processes used 1.2 of 2 cores and ")
    assert IN_PROCESS in both
    # a record written before the field existed still loads, as 0
    old = {k: v for k, v in dataclasses.asdict(load(0.0)).items() if k != "process_other_cores"}
    assert MachineLoad(**old).process_other_cores == 0.0


def test_the_demo_says_so_when_a_neighbour_kept_a_core_busy(tmp_path, capsys):
    """On two CPUs (this thread pinned to two of its own, so that the neighbour and the demo's
    threads share them on a bigger machine as well), one busy neighbour is half the machine."""
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, sorted(allowed)[:2])
    try:
        with neighbour():
            code = main(["demo", "--size", "medium", "--repeats", "2", "--out", str(tmp_path)])
    finally:
        os.sched_setaffinity(0, allowed)
    assert code == 0
    out = capsys.readouterr().out
    table_end = out.index("(medians of 2 interleaved repeats")
    note = out.index("Busy machine: other processes used ")
    assert note > table_end and "the runs used up to 3 threads" in out[note:]
    assert out.index("wrote ") > note
