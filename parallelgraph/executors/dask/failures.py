"""What ends a Dask run early, and which op it is blamed on.

A kernel error comes back wrapped in `StepError` (`worker.py`), which carries the step's
index, so the session raises `OpError` naming the op and stays usable. A worker that dies mid-run
is survived where Dask can: its running tasks are rescheduled and lost intermediates recomputed.
If a scattered source was lost with it (it cannot be recomputed: `LostData`), the executor
submits the run once more with the sources sent again; a second loss, `KilledWorker` (a task
whose workers kept dying), a lost scheduler, no worker for `no_worker_timeout_s` or a run longer
than `run_timeout_s` (off by default; the last three: `Stalled`, from `check_health`) end the run
with an error naming an op. A failure is always a (step, exception) pair, `Failure`.
"""

from __future__ import annotations

import time
from typing import Any

from ...plan import Plan, Step
from .chains import RunKeys
from .worker import StepError

#: How a run failed: the step blamed, and the error the session raises for it.
Failure = tuple[Step, BaseException]


class LostData(Exception):
    """A value the run needs was lost with a worker and cannot be recomputed."""

    def __init__(self, slot: int | None, error: Exception):
        super().__init__(slot, error)
        self.slot, self.error = slot, error


class Stalled(Exception):
    """The run cannot finish (no scheduler, no worker, too long): `step` is a pending op."""

    def __init__(self, step: Step, error: Exception):
        super().__init__(step, error)
        self.step, self.error = step, error


def check_health(
    client: Any,
    futures: list[Any],
    keys: RunKeys,
    started: float,
    no_worker_since: float | None,
    run_timeout_s: float | None,
    no_worker_timeout_s: float,
) -> float | None:
    """Raise `Stalled` (naming a pending op) when the run cannot finish; returns since
    when the cluster has had no worker (None: it has workers)."""
    pending = next((f for f in futures if f.status == "pending"), futures[0])
    step = keys.steps[pending.key]
    if client.status not in ("running", "connecting"):
        raise Stalled(
            step,
            RuntimeError(f"lost the connection to the Dask scheduler (client {client.status})"),
        )
    now = time.monotonic()
    if run_timeout_s is not None and now - started > run_timeout_s:
        raise Stalled(step, TimeoutError(f"not finished within run_timeout_s={run_timeout_s} s"))
    try:
        if client.nthreads():
            return None
    except OSError as problem:  # the scheduler went away while we asked
        error = RuntimeError(f"the Dask scheduler did not answer: {problem}")
        raise Stalled(step, error) from None
    if no_worker_since is not None and now - no_worker_since > no_worker_timeout_s:
        raise Stalled(
            step,
            RuntimeError(f"the Dask cluster has had no worker for {now - no_worker_since:.0f} s"),
        )
    return no_worker_since if no_worker_since is not None else now


def failure_of(plan: Plan, error: BaseException | None, keys: RunKeys) -> Failure:
    """(step, original error) from a failed fetch: a StepError names its step, a
    KilledWorker its task; anything else is blamed on the first step."""
    if isinstance(error, StepError):
        if error.worker_traceback and hasattr(error.error, "add_note"):
            error.error.add_note(f"on the Dask worker:\n{error.worker_traceback}")
        return plan.steps[error.index], error.error
    key = getattr(error, "task", None)
    step = keys.steps.get(key)  # type: ignore[arg-type]
    chain = keys.chains.get(key, ())  # type: ignore[arg-type]
    if error is not None and len(chain) > 1:  # which of them was running is unknowable
        ran = " -> ".join(repr(name) for name in chain)
        error = RuntimeError(
            f"{type(error).__name__}: {error} (this Dask task ran the chain {ran}; any of "
            "them may be the cause)"
        ).with_traceback(error.__traceback__)
    return step or plan.steps[0], error or RuntimeError("the Dask task failed")


def lost_data(refs: dict[int, Any], future: Any) -> LostData:
    """The loss behind a cancelled fetch: the first source slot (of `refs`) whose data is gone,
    if any."""
    lost = [slot for slot, f in refs.items() if f.status != "finished"]
    slot = lost[0] if lost else None
    what = "an input" if slot is None else "its input"
    return LostData(
        slot,
        RuntimeError(
            f"{what} was lost with a Dask worker that died during the run "
            f"({future.key!r} {future.status})"
        ),
    )


def first_reader(plan: Plan, slot: int | None) -> Step:
    """The step a lost source is blamed on: its first reader (else the plan's first step)."""
    return next((s for s in plan.steps if slot in s.input_slots), plan.steps[0])
