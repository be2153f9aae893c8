"""The scheduling loop, written once: every CPU executor is a few threads running `Run.work`.

State of one run (all guarded by one condition variable):

- `pending[i]`: how many producing steps step i still waits for (its dependency counter);
- `ready`: a min-heap of the priorities (`Plan.priority`: graph order, or breadth-first when
  GPU steps use several streams) of steps whose counter reached zero. Priorities are distinct,
  so two runs of one config schedule alike;
- `values[slot]`: outputs; an intermediate value is dropped once its last reader has run;
- `running`, `remaining`, `failure`, `finished`.

A worker pops a ready step, releases the lock, runs it, re-takes the lock and releases the
step's consumers. The worker that completes a step goes straight on to the next ready one
without a hand-off, so a chain of ops runs on one thread with no wake-ups; when a completion
makes k > 1 steps ready, k - 1 sleeping workers are notified (GPU steps, which only launch
kernels, and inexpensive CPU steps, which are mostly Python under the GIL, count as one between
them: `Plan.expensive`). There is no polling and no sleep.

One worker. When the plan can use only one worker (`Plan.useful_workers`: inter_op_threads=1,
a chain, or only inexpensive ops), that worker runs `_alone`: the steps in the fixed order a
lone worker would pop them (`Plan.serial_order`), dropping each value after its last reader
(`Plan.serial_frees`), with no lock, heap or counters. Same steps, same order, same bits;
a tiny op costs about half as much. Measured cost on this kind of machine: see
benchmarks/RESULTS.md (dispatch overhead, tiny ops).

On failure the loop stops handing out steps, waits for running ones, and the run ends with
`failure` set: steps that depend on the failed one never run.

Interrupts. A KeyboardInterrupt (Ctrl-C, a notebook's interrupt) is delivered to the main
thread only, and it may land on any bytecode: in a kernel, in `Condition.wait`, or halfway through
the bookkeeping of `_complete`. Pool threads (lanes >= 1) are never interrupted, so their
bookkeeping is always whole; lane 0, the calling thread, is the one that can be cut short.
Three rules make that safe, whatever state the interrupt leaves:

- `running` counts only steps on lanes >= 1. Lane 0 needs no counter: it is the thread that
  returns the run, so when it returns it is running nothing; and an interrupt cannot leave a
  count of its own wrong.
- The lock is an RLock, which knows its owner: `abort` releases it if (and only if) the
  interrupted thread still holds it, instead of guessing from where the exception came.
- `abort` trusts nothing lane 0 may have half-updated (`ready`, `pending`, `remaining`): it
  clears the ready queue, waits only for `running` (kept by uninterrupted threads, so it reaches
  0 once their current steps end) and marks the run finished, which sends every helper home.
  A run that was aborted is thrown away; the next run starts from the plan's fresh state.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..plan import Plan, Step

#: execute(step, lane) -> the step's output value
ExecuteStep = Callable[[Step, int], Any]


class Run:
    """One execution of a plan. Thread-safe: any number of workers may call `work` at once;
    lane 0 must be the calling thread (the one an interrupt can land in)."""

    def __init__(
        self,
        plan: Plan,
        values: list[Any],
        execute: ExecuteStep,
        workers: int = 0,
        budget: Any = None,
        direct: bool = False,
    ):
        self.plan = plan
        #: How many workers will call `work` (0: not said). One worker runs `_alone`.
        self.workers = workers
        self.values = values
        self.execute = execute
        #: The caller's word that `execute(step, lane)` is `step.whole(inputs)` for a step
        #: that has one (no trace, no GPU, nobody to count cores for): a lone worker then calls
        #: it itself, without the two Python calls around it (`_alone`).
        self.direct = direct
        self.priority = plan.priority
        if workers == 1:
            # A lone worker (`_alone`) keeps no ready queue, dependency counters or reader
            # counts, and never asks what is expensive (nor measures the hand-off cost that
            # decides it: costs.inexpensive_ns).
            self.expensive: tuple[bool, ...] = ()
            self.pending: list[int] = []
            self.ready: list[int] = []
            self.uses: list[int] = []
        else:
            self.expensive = plan.expensive
            self.pending = list(plan.initial_pending)
            self.ready = [self.priority[i] for i in plan.initial_ready]
            heapq.heapify(self.ready)
            self.uses = list(plan.slot_uses)
        #: A `pools.CoreBudget` whose `claimed` this run keeps (None: nobody asks). Expensive
        #: ready steps that idle workers will take as soon as they wake are cores spoken for:
        #: an op starting meanwhile offers its shards to no helper for them (else, at the
        #: start of a run of two ready ops, the first offered a shard to a helper in the
        #: ~50-100 us before the second worker woke, and three threads shared two cores).
        self.budget = budget
        self.active = 0  # steps being executed, on any lane
        self.ready_expensive = (
            sum(1 for i in plan.initial_ready if self.expensive[i]) if (budget is not None) else 0
        )
        self.remaining = len(plan.steps)
        #: Steps running on lanes >= 1 (see the module docstring: lane 0 is not counted).
        self.running = 0
        self.failure: tuple[Step | None, BaseException] | None = None
        self.finished = self.remaining == 0
        self._lock = threading.RLock()
        self.condition = threading.Condition(self._lock)

    @classmethod
    def replayed(cls, plan: Plan, values: list[Any]) -> Run:
        """A finished run whose steps ran without the loop (a CUDA graph launch)."""
        run = cls(plan, values, lambda step, lane: None)
        run.ready.clear()
        run.remaining, run.finished = 0, True
        return run

    def work(self, lane: int) -> None:
        """Run ready steps on the calling thread until the run is finished or has failed.

        On lane 0, an exception escaping the loop (an interrupt between two bookkeeping
        statements) aborts the run before it propagates, so no helper waits forever.
        """
        # NumPy calls in steps (ufunc fast paths, BLAS blocks) say nothing about overflow or
        # NaN, as the Numba kernels never do; errstate is per thread, so each worker sets it.
        with np.errstate(all="ignore"):
            if lane != 0:
                self._loop(lane)
                return
            try:
                if self.workers == 1:
                    self._alone()
                else:
                    self._loop(0)
            except BaseException as error:
                self.abort(error)
                raise

    def _loop(self, lane: int) -> None:
        steps, condition, by_priority = self.plan.steps, self.condition, self.plan.by_priority
        counted = 1 if lane else 0  # only lanes >= 1 count in `running`
        condition.acquire()
        try:
            while True:
                while not self.ready and not self.finished:
                    condition.wait()
                if self.finished:
                    return
                index = by_priority[heapq.heappop(self.ready)]
                step = steps[index]
                self.running += counted
                if self.budget is not None:
                    self._claim(started=1, released=-self.expensive[index])
                condition.release()
                try:
                    value = self.execute(step, lane)
                except BaseException as error:  # noqa: BLE001 - reported by the caller
                    condition.acquire()
                    self._fail(step, error, counted)
                    continue
                condition.acquire()
                self._complete(step, value, counted)
        finally:
            _release_if_owned(self._lock)

    def _alone(self) -> None:
        """The loop of a run with one worker (a chain, or inter_op_threads=1): the steps in the
        order that worker would pop them from the ready queue (`Plan.serial_order`: fixed by
        the priorities), with no lock, queue or counters (values are dropped after their last
        reader by `Plan.serial_frees`), since no other thread reads them. The same steps in
        the same order as `_loop`, at less cost per step; an op's failure ends the run the
        same way (no later step runs)."""
        plan, values, execute, direct = self.plan, self.values, self.execute, self.direct
        steps = plan.steps
        done = 0
        for index, frees in zip(plan.serial_order, plan.serial_frees):
            step = steps[index]
            try:
                whole = step.whole if direct else None
                if whole is not None:  # what execute would do, two calls fewer (~0.4 us)
                    values[step.slot] = whole([values[slot] for slot in step.input_slots])
                else:
                    values[step.slot] = execute(step, 0)
            except BaseException as error:  # noqa: BLE001 - reported by the caller
                self.failure = (step, error)
                break
            done += 1
            for slot in frees:
                values[slot] = None
        self.remaining -= done
        self.ready.clear()
        self.finished = True

    def _claim(self, started: int, released: int) -> None:
        """Count `started` steps more in execution (-1: one ended) and `released` expensive
        steps more in the ready queue (negative: taken out), and tell the budget how many cores
        ready steps will take once idle workers wake: one per expensive ready step, as far as
        there are workers not executing one (caller holds the lock)."""
        self.active += started
        self.ready_expensive += released
        idle = self.workers - self.active
        self.budget.claimed = max(0, min(self.ready_expensive, idle))

    def _complete(self, step: Step, value: Any, counted: int) -> None:
        """Store a value and release consumers (caller holds the lock)."""
        self.running -= counted
        self.remaining -= 1
        values, uses = self.values, self.uses
        values[step.slot] = value
        for slot in step.input_slots:
            uses[slot] -= 1
            if uses[slot] == 0 and slot not in self.plan.kept_slots:
                values[slot] = None
        if self.failure is not None:
            self._finish_if_idle()
            return
        released_cpu, released_other = 0, False
        pending, ready, priority = self.pending, self.ready, self.priority
        expensive = self.expensive
        for consumer in step.consumers:
            pending[consumer] -= 1
            if pending[consumer] == 0:
                heapq.heappush(ready, priority[consumer])
                if expensive[consumer]:
                    released_cpu += 1
                else:
                    released_other = True
        # Launching a GPU step takes microseconds, and an inexpensive CPU step is mostly
        # Python under the GIL: all such released steps together are one worker's job (waking
        # a thread for each costs more than they do; Plan.expensive).
        released = released_cpu + released_other
        if self.budget is not None:
            self._claim(started=-1, released=released_cpu)
        if self.remaining == 0:
            self.finished = True
            self.condition.notify_all()
        elif released > 1:
            self.condition.notify(released - 1)

    def _fail(self, step: Step, error: BaseException, counted: int) -> None:
        """Remember the first failure, stop handing out work (caller holds the lock)."""
        self.running -= counted
        if self.failure is None:
            self.failure = (step, error)
        self.ready.clear()
        if self.budget is not None:  # the ready queue was cleared
            self._claim(started=-1, released=-self.ready_expensive)
        self._finish_if_idle()

    def _finish_if_idle(self) -> None:
        if self.running == 0:
            self.finished = True
            self.condition.notify_all()

    def abort(self, error: BaseException) -> None:
        """Stop the run from its calling thread after an exception outside a step (an
        interrupt), whatever state it left; returns once no helper runs a step. Idempotent.

        Bounded: it waits only for the steps running on pool threads to end.
        """
        _release_if_owned(self._lock)
        with self.condition:
            if self.failure is None:
                self.failure = (None, error)
            self.ready.clear()
            if self.budget is not None:  # lane 0's counts may be half-updated: claim nothing
                self.ready_expensive = 0
                self.budget.claimed = 0
            while self.running:
                self.condition.wait()
            self.finished = True
            self.condition.notify_all()


def _release_if_owned(lock: Any) -> None:
    """Release an RLock if the calling thread holds it (an interrupt may have cut the loop
    short with the lock held, or just after it was released)."""
    while lock._is_owned():  # an RLock's owner check, as threading.Condition uses it
        lock.release()
