"""The dashboard's run thread: a run in the background, a Stop that works, interrupts relayed.

`dash.run()` (the Run button) starts a run in a thread and returns: the kernel stays free, so
the **Stop** button works (`dash.stop()`); a change made during a run is run after it.
`dash.wait(timeout)` blocks until the run ends; a kernel interrupt (Ctrl-C, Kernel ▸ Interrupt)
arriving while a cell waits (a *foreground* run) stops the run, waits for it to end, and is
raised again, so the cell fails and a Run All stops there. A kernel interrupt while a run goes
with the kernel idle (after the Run button) stops the run too: SIGINT reaches only the main
thread, and ipykernel ignores it between messages, so while a background run started on the
main thread goes, a relay (`parallelgraph.interrupts`) wraps the SIGINT handlers and passes the
interrupt to the run. While *another* cell runs, an interrupt interrupts that cell (ipykernel
installs Python's own handler for each message); Stop ends the run. Stop ends a run between ops
(`measure.StopSignal`: as fast as the longest op) and keeps the traced runs measured so far.

`RunThread` is this part of `Dashboard` (a base class, as `viewer.ViewerControls` is): the
busy/pending state under one `threading.Lock`, the idle event `wait()` waits for, the stop
signal and its reason. What one run does is the dashboard's `_run_once`; how the buttons look,
its `_set_buttons`. `stop()` may be called from any thread.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import TYPE_CHECKING

from ..experiments.measure import StopSignal
from ..interrupts import RELAY, end_listener

if TYPE_CHECKING:
    from .runner import Result

WAIT_SLICE_S = 0.05  # dash.wait() looks for a pending interrupt this often


class RunThread:
    """Runs in a background thread, one at a time, with Stop and interrupts (module docstring).

    Thread safety: `run`, `wait` on the kernel's main thread (or one thread); `stop` from any."""

    # what the Dashboard has
    result: Result | None
    closed: bool
    runs: int

    def _init_run_thread(self) -> None:
        """The state of the run thread: idle, nothing pending, no stop asked."""
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._busy = False
        self._pending = False
        self._stop_signal: StopSignal | None = None
        self._stop_reason = "stopped"

    if TYPE_CHECKING:  # the Dashboard's methods these use

        def _run_once(self) -> None: ...
        def _set_buttons(self, busy: bool) -> None: ...

    @property
    def busy(self) -> bool:
        return self._busy

    def run(self) -> None:
        """Start a run with the controls' settings in a background thread and return; if a
        run is going, run once more after it (with the controls' values then).

        Called on the main thread (a button click, a cell), it also makes a SIGINT — Ctrl-C,
        Kernel ▸ Interrupt — end the run "interrupted" while it goes (`interrupts.RELAY`): a
        listener thread waits for the relay's word and stops the run, as Stop does."""
        if self.closed:  # its session would reopen with nothing left to close it
            raise RuntimeError("this dashboard is closed; make a new one (pg.dashboard(...))")
        with self._lock:
            self.runs += 1
            if self._busy:
                self._pending = True
                return
            self._busy, self._pending = True, False
            self._stop_signal, self._stop_reason = StopSignal(), "stopped"
            self._idle.clear()
        self._set_buttons(busy=True)
        words: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        listener = None
        if RELAY.attach(words):
            listener = threading.Thread(
                target=self._listen, args=(words,), name="pg-dashboard-interrupt", daemon=True
            )
            listener.start()
        thread = threading.Thread(
            target=self._run_loop, args=(words, listener), name="pg-dashboard-run", daemon=True
        )
        thread.start()

    def _listen(self, words: queue.SimpleQueue[str | None]) -> None:
        """The listener thread: stop the run at each SIGINT the relay passes on, until the run
        loop says None (it has ended)."""
        while (word := words.get()) is not None:
            self._stop(word)

    def wait(self, timeout: float | None = None) -> Result | None:
        """Block until no run is going; return the latest result (None if nothing ran well).

        A KeyboardInterrupt (a kernel interrupt, Ctrl-C) while waiting stops the run, waits
        for it to end "interrupted" with what it measured (within one op), and is raised again:
        the cell fails, so a Run All stops there. Raises TimeoutError after `timeout` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            # In slices: an interrupt that is only flagged (`_thread.interrupt_main`, a SIGINT
            # taken by another thread) is handled at the main thread's next bytecode, which a
            # long lock wait would put off until the run ends.
            while not self._idle.wait(WAIT_SLICE_S):
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"the dashboard's run did not end in {timeout} s")
        except KeyboardInterrupt:
            self._stop("interrupted")
            self._idle.wait()
            raise
        finally:
            RELAY.restore()
        return self.result

    def stop(self) -> None:
        """End the run between ops, keeping what was measured (the Stop button). Thread-safe;
        a no-op when nothing runs."""
        self._stop("stopped")

    def _stop(self, reason: str) -> None:
        with self._lock:
            self._pending = False
            stop_signal = self._stop_signal if self._busy else None
            if stop_signal is not None:
                self._stop_reason = reason
        if stop_signal is not None:
            stop_signal.stop()

    def _run_loop(
        self, words: queue.SimpleQueue[str | None], listener: threading.Thread | None
    ) -> None:
        """The run thread: run, show, and run again while a change came in meanwhile.

        Then the hand-over, in this order: the interrupt listener is told to end and joined
        (outside the lock: it may be waiting for it in `_stop`), so no thread of the run outlives
        `wait()`; then, under the lock, the buttons, `busy` and the idle event. A `run()` from
        another thread meanwhile finds the dashboard busy and is run here (a change that came in
        during the hand-over: Stop reaches it, the interrupt relay no longer does)."""
        ended = False
        try:
            while True:
                self._run_once()
                with self._lock:
                    if self._renew_if_pending():
                        continue
                if listener is not None:
                    end_listener(words, listener)
                    listener = None
                with self._lock:
                    if self._renew_if_pending():
                        continue
                    self._end_run()
                    ended = True
                    return
        finally:  # also after a stray asynchronous exception: never stay busy for good
            if listener is not None:
                end_listener(words, listener)
            if not ended:
                with self._lock:
                    self._end_run()

    def _renew_if_pending(self) -> bool:
        """Under the lock: if a run was asked for meanwhile, make it the next (True)."""
        if not self._pending:
            return False
        self._pending = False
        self._stop_signal, self._stop_reason = StopSignal(), "stopped"
        return True

    def _end_run(self) -> None:
        """Under the lock: Run and Pin usable, Stop greyed, not busy, `wait()` returns."""
        self._set_buttons(busy=False)
        self._busy = False
        self._idle.set()


__all__ = ["WAIT_SLICE_S", "RunThread"]
