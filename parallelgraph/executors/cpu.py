"""CPU executors: `threads` (inter-op and intra-op pools) and `sequential` (the reference).

Both run the one scheduling loop of `scheduler.Run`; they differ only in how many threads run it
and how many help with shards. The sequential executor is the threads executor with one thread
in each pool: it runs the same steps, cut into the same shards, in ascending op order on the
calling thread. Every other setting must (and, by construction, does) reproduce its outputs bit
for bit, because shard boundaries and partial-sum order do not depend on threads.

Pool sharing rule: an executor's pools serve one run at a time (Session serializes runs), and the
intra-op pool is shared by all ops running concurrently within that run.
"""

from __future__ import annotations

from typing import Any

from ..config import Config, cpu_count
from ..plan import Plan, Step
from .blas_threads import BLAS_LIMIT
from .pools import CoreBudget, InterOpPool, IntraOpPool, Recorder
from .scheduler import Run
from .step import execute_step


class ThreadsExecutor:
    """Runs plans with `inter_op_threads` op workers and `intra_op_threads` threads per op.

    Owns its threads; `close()` (or leaving a `with` block) joins them. Not re-entrant: one run
    at a time (the Session makes sure of that).
    """

    name = "threads"

    def __init__(self, config: Config):
        self.config = config
        self.inter_op_threads = config.inter_op_threads
        self.intra_op_threads = config.intra_op_threads
        self._inter = InterOpPool(self.inter_op_threads)
        self._lane_names = [f"inter-op/{i}" for i in range(self.inter_op_threads)]
        #: the cores both pools share (pools.CoreBudget): an op's shards go to helpers only
        #: where no inter-op worker computes
        self.budget = CoreBudget(cpu_count())
        try:
            self._intra = IntraOpPool(self.intra_op_threads, self.budget)
        except BaseException:
            self._inter.close()  # a failed executor leaves no thread behind
            raise
        self._gpu: Any = None  # a CudaDevice, made when a plan first has GPU steps
        self._closed = False

    def run(self, plan: Plan, values: list[Any], record: Recorder | None) -> Run:
        """Execute every step of `plan`, reading and writing `values`; returns the finished
        Run (its `failure` says whether a step raised)."""
        if self._closed:
            raise RuntimeError("this executor is closed")

        lanes, config, intra, budget = self._lane_names, self.config, self._intra, self.budget
        workers = plan.useful_workers(self.inter_op_threads)
        # The budget only decides offers to helpers: with none, nothing is counted. A lone
        # worker is counted once for the whole run (below), not around each op: on a chain of
        # tiny ops two locked updates an op were a quarter of its cost at intra-op 2.
        counting = self.intra_op_threads > 1 and workers > 1
        counted_for_the_run = self.intra_op_threads > 1 and workers == 1
        gpu = self._gpu_for(plan)
        if gpu is not None and record is None and gpu.replay(plan, values):
            return Run.replayed(plan, values)  # one CUDA graph launch (Config.cuda_graph)
        value_of = values.__getitem__

        def execute(step: Step, lane: int) -> Any:
            if gpu is None:
                args = list(map(value_of, step.input_slots))
            elif step.on_gpu:
                return gpu.launch(plan, step, values, record)
            else:  # GPU values a CPU op reads come to the host first
                args = [gpu.to_host(plan, s, values[s], record) for s in step.input_slots]
            # One op, all its shards, on this thread with helpers from the intra-op pool.
            if not counting:  # no helpers to offer shards to: nothing to count (tiny ops)
                return execute_step(step, args, lanes[lane], record, config, intra)
            if lane == 0:  # the calling thread states it computes (see CoreBudget: interrupts)
                budget.caller = 1
                try:
                    return execute_step(step, args, lanes[lane], record, config, intra)
                finally:
                    budget.caller = 0
            budget.enter()  # a pool thread: never interrupted, so counted exactly
            try:
                return execute_step(step, args, lanes[lane], record, config, intra)
            finally:
                budget.leave()

        # Untraced CPU steps on a lone worker: `execute` is just `step.whole(inputs)` for
        # one-shard steps (no record, no GPU copies, no core counting), which the loop calls
        # itself (`Run.direct`).
        direct = gpu is None and record is None and not counting
        run = Run(plan, values, execute, workers, budget if counting else None, direct)
        if gpu is not None:
            gpu.begin_run(plan)
        # BLAS_LIMIT is process-wide and reference counted: other sessions may run meanwhile.
        # hold() inside the try and an idempotent release() in the finally: an interrupt
        # anywhere between them cannot leave the limit held (see executors.blas_threads).
        budget.caller = 1 if counted_for_the_run else 0  # also ends what an interrupt left
        budget.claimed = 0
        holds_blas = plan.calls_blas  # a plan of Numba kernels only needs no BLAS limit
        try:
            if holds_blas:
                BLAS_LIMIT.hold(run)
            self._inter.run(run.work, workers)
            if gpu is not None and run.failure is None:
                for slot in plan.fetch_slots:
                    values[slot] = gpu.to_host(plan, slot, values[slot], record)
        except BaseException as interrupt:  # e.g. KeyboardInterrupt in the calling thread
            run.abort(interrupt)  # idempotent; returns once no pool thread runs a step
            raise
        finally:
            budget.caller = budget.claimed = 0
            if holds_blas:
                BLAS_LIMIT.release(run)
            if gpu is not None:
                gpu.end_run(plan, record)
        return run

    def _gpu_for(self, plan: Plan) -> Any:
        """The CUDA device part of this executor, created on the first plan with GPU steps."""
        if not plan.uses_gpu:
            return None
        if self._gpu is None:
            from .cuda import CudaDevice

            self._gpu = CudaDevice(self.config)
        return self._gpu

    def close(self) -> None:
        """Join every thread this executor started. Idempotent."""
        if not self._closed:
            self._closed = True
            self._inter.close()
            self._intra.close()

    def __enter__(self) -> ThreadsExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class SequentialExecutor(ThreadsExecutor):
    """The reference: the same loop and the same shards on the calling thread alone."""

    name = "sequential"

    def __init__(self, config: Config):
        super().__init__(config.replace(inter_op_threads=1, intra_op_threads=1))
