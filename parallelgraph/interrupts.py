"""Kernel ▸ Interrupt for runs that go in background threads (both dashboards share it).

A signal reaches only the main thread, and an idle ipykernel ignores SIGINT, so a run started
by a button (in a thread, with the kernel idle) would never hear of an interrupt. While such a
run goes, `RELAY` wraps the SIGINT handlers (the process's and the one ipykernel restores after
each message) in a `Relay` that tells every listening run, then does what the wrapped handler
did. A run listens with a `queue.SimpleQueue` (`RELAY.attach`), a listener thread of its own
turns the word into a stop, and `end_listener` ends that when the run ends; `RELAY.restore()`
(main thread only) puts the handlers back once no run listens.
"""

from __future__ import annotations

import queue
import signal
import threading
from typing import Any


class Relay:
    """A SIGINT handler that tells every background run listening (`RELAY`) to stop, then does
    what the handler it wraps did: raise KeyboardInterrupt (Python's default handler), nothing
    (SIG_IGN: an idle ipykernel), or call that handler.

    It runs in the main thread between two bytecodes, possibly while that thread holds a lock
    of the dashboard or of a StopSignal, so it takes no lock: it only puts a word on each run's
    `queue.SimpleQueue` (whose put is reentrant, safe in a signal handler); the run's listener
    thread does the stopping."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous

    def __call__(self, signum: int, frame: Any) -> None:
        for listener in RELAY.listeners:
            listener.put("interrupted")
        if callable(self.previous):
            self.previous(signum, frame)
        elif self.previous == signal.SIG_DFL:  # the process would end: end the cell at least
            raise KeyboardInterrupt


class InterruptRelay:
    """Makes a SIGINT (Ctrl-C, Kernel ▸ Interrupt) reach runs that go in background threads.

    Python delivers a signal to the main thread only, and ipykernel ignores SIGINT while the
    kernel is idle — which it is while a Run-button run goes. So while a background run is
    active, SIGINT is handled by a `Relay` wrapped around the handler it replaces, at two
    places, from the main thread only (`signal.signal` works nowhere else):

    - the process's current handler (a script, or the cell or widget message being handled);
    - under ipykernel, the handler the kernel puts back after each message
      (`kernel.saved_sigint_handler`, SIG_IGN when idle; `Kernel.post_handler_hook` restores it).

    `restore()` puts both back once no run listens (at the next `run()`, `wait()` or
    `close()` on the main thread: a run ends in its own thread, where that cannot be done);
    until then a relay with no listener is transparent. A relay never wraps a relay.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: one queue per active background run; replaced whole (the handler reads it unlocked)
        self.listeners: tuple[queue.SimpleQueue[str | None], ...] = ()

    def attach(self, listener: queue.SimpleQueue[str | None]) -> bool:
        """Listen for SIGINT with `listener`; False (nothing done) off the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return False
        self.restore()  # handlers changed since the last run (a new cell, a new message)
        current = signal.getsignal(signal.SIGINT)
        if current is not None and not isinstance(current, Relay):
            signal.signal(signal.SIGINT, Relay(current))
        kernel = ipykernel_kernel()
        if kernel is not None and not isinstance(kernel.saved_sigint_handler, Relay):
            kernel.saved_sigint_handler = Relay(kernel.saved_sigint_handler)
        with self._lock:
            self.listeners = (*self.listeners, listener)
        return True

    def detach(self, listener: queue.SimpleQueue[str | None]) -> None:
        """Stop listening (any thread)."""
        with self._lock:
            self.listeners = tuple(q for q in self.listeners if q is not listener)

    def restore(self) -> None:
        """Put the wrapped handlers back if no run listens and this is the main thread."""
        if self.listeners or threading.current_thread() is not threading.main_thread():
            return
        current = signal.getsignal(signal.SIGINT)
        if isinstance(current, Relay):
            signal.signal(signal.SIGINT, current.previous)
        kernel = ipykernel_kernel()
        if kernel is not None and isinstance(kernel.saved_sigint_handler, Relay):
            kernel.saved_sigint_handler = kernel.saved_sigint_handler.previous


RELAY = InterruptRelay()


def end_listener(words: queue.SimpleQueue[str | None], listener: threading.Thread) -> None:
    """Stop relaying SIGINT to a run that has ended, and join its listener thread."""
    RELAY.detach(words)
    words.put(None)
    listener.join()


def ipykernel_kernel() -> Any:
    """The ipykernel kernel this process is, if it keeps a SIGINT handler to restore."""
    import sys

    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    return kernel if hasattr(kernel, "saved_sigint_handler") else None
