"""The two thread pools, as in TensorFlow: inter-op workers run ops, intra-op helpers run shards.

- `InterOpPool(n)` owns n - 1 threads; with the calling thread they are n workers that each run
  the scheduling loop (`Run.work`) of the current run. Each worker has its own queue, so a run
  reaches every worker exactly once and each worker keeps its lane number.
- `IntraOpPool(m)` owns m - 1 helper threads shared by every running op. An op with several shards
  becomes a `ShardJob`; the op's own thread offers the job to up to (shards - 1) helpers and then
  takes shards itself until none are left, and waits only for shards already being computed. So
  one op uses at most m threads, a busy pool never blocks an op (its own thread does all the
  work), and nothing can deadlock even with m = 1.
- `CoreBudget(cores)`: the two pools share the cores, as TensorFlow's inter-op workers share one
  intra-op pool sized to the machine. A thread counts itself while it computes (an inter-op
  worker inside an op, a helper inside a job), and an op offers its shards only to as many
  helpers as there are cores nobody computes on or is about to (a ready op an idle inter-op
  worker will take claims a core: `scheduler.Run`). So inter-op 2 / intra-op 2 on two cores runs
  like inter-op 2 while two ops run at once and like intra-op 2 while one does, instead of
  three threads taking turns on two cores. The plan's shards are the same either way (a shard
  not offered is computed by the op's own thread), so outputs keep their bits.

Both pools' threads are daemon threads named "parallelgraph-inter-op-i" / "-intra-op-i" and end
in `close()`, which joins them. A pool that cannot start all its threads (the OS refuses one)
stops and joins those it started before raising: a failed pool leaves no thread behind.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any

from ..config import cpu_count
from ..trace.model import EventKind

#: record(a `trace.model.StepRecord` or `CopyRecord` as a plain tuple), e.g. a list's append
Recorder = Callable[[tuple[Any, ...]], None]


class ShardJob:
    """The shards of one op, handed out by an atomic counter to whichever thread asks.

    `compute(i)` computes piece i of `count`. A piece is one shard, or, when the op merged
    consecutive shards into one call (`spans[i]` = (first shard, how many): see
    `step._pieces`), several; its trace record then names the first and the count.
    """

    def __init__(
        self,
        count: int,
        compute: Callable[[int], None],
        step_index: int,
        record: Recorder | None,
        clock: Callable[[], int],
        spans: tuple[tuple[int, int], ...] | None = None,
    ):
        self.count = count
        self.compute = compute
        self.step_index = step_index
        self.record = record
        self.clock = clock
        self.spans = spans
        self._next_shard = itertools.count()  # next() on a C iterator is atomic under the GIL
        self._finished_count = itertools.count(1)
        # Held until the last shard is done. A bare lock, not an Event: waiting on it is one C
        # call, where Event.wait (Python code around a Condition) can be cut by an interrupt
        # between its own release and re-acquire and then fail with "release unlocked lock".
        self._all_done = threading.Lock()
        self._all_done.acquire()
        self.error: BaseException | None = None
        # Helpers inside `work`, counted by `help` (helpers get no interrupts, so exactly);
        # `_no_helper` is held while there is one, for `cancel` to wait on (one C call).
        self._cancelled = False
        self._helpers_in = 0
        self._helpers_lock = threading.Lock()
        self._no_helper = threading.Lock()

    def work(self, lane: str) -> None:
        """Compute shards until none is left; safe to call from any number of threads."""
        while True:
            shard = next(self._next_shard)
            if shard >= self.count:
                return
            if self.error is None and not self._cancelled:
                start = self.clock() if self.record else 0
                try:
                    self.compute(shard)
                except BaseException as error:  # noqa: BLE001 - re-raised by the op's thread
                    self.error = self.error or error
                if self.record:
                    end = self.clock()
                    if self.spans is None:
                        self.record((EventKind.SHARD, self.step_index, lane, start, end, shard))
                    else:
                        first, covered = self.spans[shard]
                        record = (EventKind.SHARD, self.step_index, lane, start, end, first)
                        self.record((*record, covered) if covered > 1 else record)
            if next(self._finished_count) == self.count:
                self._all_done.release()

    def wait(self) -> None:
        """Block until every shard is done (the thread that finished the last released it)."""
        self._all_done.acquire()
        self._all_done.release()

    def help(self, lane: str) -> None:
        """`work`, as a helper thread: counted, so that `cancel` can wait for it; nothing at
        all once the job is cancelled."""
        with self._helpers_lock:
            if self._cancelled:
                return
            self._helpers_in += 1
            if self._helpers_in == 1:
                self._no_helper.acquire()  # free: nobody waits on it before `_cancelled`
        try:
            self.work(lane)
        finally:
            with self._helpers_lock:
                self._helpers_in -= 1
                if self._helpers_in == 0:
                    self._no_helper.release()

    def cancel(self) -> None:
        """From the op's own thread, when an interrupt cut its `work` or `wait` short: no
        shard starts any more, and this returns once no helper computes one. Bounded by the
        shards helpers are computing at that moment.

        Without it the interrupted run returned while helpers still computed its shards: into
        the next run, with the BLAS limit the run had held already lifted (BLAS calls then
        ran multi-threaded inside a helper's shard)."""
        with self._helpers_lock:
            self._cancelled = True
        self._no_helper.acquire()
        self._no_helper.release()


class CoreBudget:
    """How many threads compute right now, against the cores they share (module docstring).

    `free()` is the cores nobody computes on. Two kinds of thread say that they compute, in two
    ways, because only one of them can be interrupted:

    - pool threads (inter-op lanes >= 1, intra-op helpers) get no interrupts: `enter()` and
      `leave()` keep their exact count under a lock (a few hundred ns a change, per op or job,
      not per shard);
    - the run's calling thread (lane 0) may get a KeyboardInterrupt between any two bytecodes,
      so it never counts up and down: it *states* whether it computes (`caller`, 0 or 1, one
      store), and the executor states 0 again whenever a run starts or ends. An interrupt can
      leave it counted for the rest of its own run at most. (With a count, an interrupt between
      `enter()` and the flag that says to undo it left the count raised for good: after some
      Ctrl-Cs every later run of the session offered its shards to no helper.)

    `free()` reads without the lock: an offer decided on a count a moment old costs at most
    one thread waiting for a core, never a wrong result.
    """

    def __init__(self, cores: int):
        self.cores = cores
        self.busy = 0
        #: 1 while the run's calling thread computes an op (set by the executor, never counted)
        self.caller = 0
        #: cores that ready ops will take as soon as idle inter-op workers wake (set by the
        #: run's scheduler: `scheduler.Run._claim`; the executor states 0 when a run starts
        #: and ends)
        self.claimed = 0
        self._lock = threading.Lock()

    def enter(self) -> None:
        with self._lock:
            self.busy += 1

    def leave(self) -> None:
        with self._lock:
            self.busy -= 1

    def free(self) -> int:
        return self.cores - self.busy - self.caller - self.claimed


class IntraOpPool:
    """`threads - 1` helper threads that run shards of any op; see the module docstring.
    `budget` (default: the cores this process may use) is shared with the inter-op workers."""

    def __init__(self, threads: int, budget: CoreBudget | None = None):
        self.threads = threads
        self.budget = budget if budget is not None else CoreBudget(cpu_count())
        self._queue: SimpleQueue[ShardJob | None] = SimpleQueue()
        self._helpers = [
            threading.Thread(
                target=self._serve,
                args=(f"intra-op/{i}",),
                name=f"parallelgraph-intra-op-{i}",
                daemon=True,
            )
            for i in range(threads - 1)
        ]
        _start_all(self._helpers, self.close)

    def offers(self, shards: int) -> int:
        """How many helpers an op of `shards` shards would be offered to now: at most one fewer
        than its shards, and no more than the cores nobody computes on (none when more threads
        compute than there are cores: `free()` is then below 0)."""
        return max(0, min(len(self._helpers), shards - 1, self.budget.free()))

    def run(self, job: ShardJob, lane: str, offers: int | None = None) -> None:
        """Run every piece of `job`, on the calling thread (which is computing already) and on
        `offers` helpers (default: `offers(job.count)`)."""
        try:
            for _ in range(self.offers(job.count) if offers is None else offers):
                self._queue.put(job)
            job.work(lane)
            job.wait()
        except BaseException:  # an interrupt (only this thread gets them): helpers stop too
            job.cancel()
            raise

    def _serve(self, lane: str) -> None:
        budget = self.budget
        while (job := self._queue.get()) is not None:
            budget.enter()  # helpers get no interrupts (only the main thread does)
            try:
                job.help(lane)
            finally:
                budget.leave()

    def close(self) -> None:
        """Stop and join the helper threads (those started, if starting them failed)."""
        started = [helper for helper in self._helpers if helper.ident is not None]
        for _ in started:
            self._queue.put(None)
        for helper in started:
            helper.join()
        self._helpers = []


class InterOpPool:
    """`threads - 1` worker threads; with the calling thread, `threads` run the loop of a run."""

    def __init__(self, threads: int):
        self.threads = threads
        self._queues: list[SimpleQueue[Any]] = [SimpleQueue() for _ in range(threads - 1)]
        self._workers = [
            threading.Thread(
                target=self._serve,
                args=(queue, lane),
                name=f"parallelgraph-inter-op-{lane}",
                daemon=True,
            )
            for lane, queue in enumerate(self._queues, start=1)
        ]
        _start_all(self._workers, self.close)

    def run(self, work: Callable[[int], None], workers: int | None = None) -> None:
        """Call `work(lane)` on the first `workers` lanes (default: all); the calling thread is
        lane 0 and returns when its own call returns (the run's loop ends for all workers at the
        same moment)."""
        for queue in self._queues[: None if workers is None else max(0, workers - 1)]:
            queue.put(work)
        work(0)

    @staticmethod
    def _serve(queue: SimpleQueue[Any], lane: int) -> None:
        while (work := queue.get()) is not None:
            work(lane)

    def close(self) -> None:
        """Stop and join the worker threads (those started, if starting them failed)."""
        for queue, worker in zip(self._queues, self._workers):
            if worker.ident is not None:
                queue.put(None)
        for worker in self._workers:
            if worker.ident is not None:
                worker.join()
        self._workers = []


def _start_all(threads: list[threading.Thread], close: Callable[[], None]) -> None:
    """Start every thread; if one cannot start, `close()` the pool (joining the threads already
    started) and raise a RuntimeError that says how far it got."""
    for count, thread in enumerate(threads):
        try:
            thread.start()
        except BaseException as error:
            close()
            if not isinstance(error, RuntimeError):
                raise
            raise RuntimeError(
                f"could not start thread {count + 1} of {len(threads)} ({error}); "
                "the threads already started were stopped: ask for fewer threads"
            ) from error
