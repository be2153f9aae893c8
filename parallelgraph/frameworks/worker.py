"""The worker process: one framework setting, started fresh, timing the user's step on request.

Started as `python -m parallelgraph.frameworks.worker FD` by `pool.Worker`, with the setting's
environment already in place; FD is its end of a socket pair, wrapped as a
`multiprocessing.connection.Connection` (pickled messages; the user's prints to stdout and
stderr go where the parent's go and never mix with the messages). Protocol, one reply per
request — ("ok", value) or ("error", {"type", "message", "traceback", "where"}):

- ("setup", {framework, setting, params, build, warmup}): start the framework with the
  setting (`Framework.start`: knobs applied before anything else), unpack `build` (the user's
  function, sent by `travel.pack`), `step = build(Setting)`, call `step()` `warmup` times;
  replies with what the framework reports it uses (`read_back`) and the warm-up times.
- ("time", {"steps": k}): call `step()` k times back to back; replies with each call's ns
  (`perf_counter_ns` around the call: nothing else is inside the timed span).
- ("trace", {}): trace one warm step with the framework's own profiler (ONNX Runtime, whose
  sessions profile from their creation, builds again with profiling on and traces that
  session's first step); replies with the trace file's path (the parent loads it).
- ("stop", {}): exit.

The worker ignores SIGINT (a notebook interrupt signals the kernel's whole process group): the
parent decides what an interrupt means and ends its workers itself. If the parent disappears
(killed without a chance to clean up), a watchdog thread notices within half a second and the
worker exits, so no process is left behind.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

from .knobs import Framework, Setting, common_read_back, framework, scratch_folder
from .travel import unpack


class WorkerState:
    """The worker's framework, setting and step, once set up."""

    def __init__(self) -> None:
        self.framework: Framework | None = None
        self.module: Any = None
        self.build: Any = None
        self.values: dict[str, Any] = {}
        self.setting: Setting | None = None
        self.step: Any = None

    def setup(self, request: dict[str, Any]) -> dict[str, Any]:
        self.framework = framework(request["framework"])
        knobs = request["setting"]
        self.module = self.framework.start(knobs)  # before unpickling: it may import the framework
        self.build = unpack(request["build"])
        self.values = {**request["params"], **knobs}
        self.setting, self.step = self._built(profiling=None)
        warm = self.time(request["warmup"])
        return {"read_back": self.read_back(), "warmup_ns": warm, "pid": os.getpid()}

    def _built(self, profiling: str | None) -> tuple[Setting, Any]:
        assert self.framework is not None
        setting = Setting(self.framework.name, self.values, profiling=profiling)
        step = self.build(setting)
        if not callable(step):
            raise TypeError(f"build() must return the step to time (a callable), not {step!r:.80}")
        return setting, step

    def read_back(self) -> dict[str, Any]:
        assert self.framework is not None and self.setting is not None
        return {
            **common_read_back(self.values),
            **self.framework.read_back(self.module, self.setting),
        }

    def time(self, steps: int) -> list[int]:
        step, clock = self.step, time.perf_counter_ns
        times = []
        for _ in range(steps):
            start = clock()
            step()
            times.append(clock() - start)
        return times

    def trace(self) -> str:
        assert self.framework is not None
        if self.framework.profile is None:  # pragma: no cover - every framework has one
            raise RuntimeError(f"{self.framework.title} has no profiler parallelgraph can read")
        folder = scratch_folder()
        if self.framework.profiles_from_start:  # a fresh build, profiled from its creation
            setting, step = self._built(profiling=folder)
        else:  # the warm step: a new build would compile (jit, tf.function) inside the trace
            setting, step = self.setting, self.step
        return self.framework.profile(self.module, step, setting, folder)


def _described(error: BaseException, where: str) -> dict[str, Any]:
    return {
        "type": type(error).__name__,
        "message": str(error),
        "traceback": "".join(traceback.format_exception(error)),
        "where": where,
    }


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(3)


def serve(connection: Connection, parent: int) -> None:
    """Answer requests until "stop" or the parent's end of the connection closes."""
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    state = WorkerState()
    handlers = {
        "setup": state.setup,
        "time": lambda request: state.time(request["steps"]),
        "trace": lambda request: state.trace(),
    }
    while True:
        try:
            command, request = connection.recv()
        except (EOFError, OSError):
            return
        if command == "stop":
            connection.send(("ok", None))
            return
        try:
            reply = ("ok", handlers[command](request))
        except BaseException as error:  # noqa: BLE001 - the user's code: every failure goes back
            reply = ("error", _described(error, command))
        connection.send(reply)


def main(argv: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fd, parent = int(argv[1]), int(argv[2])
    connection = Connection(fd)
    try:
        serve(connection, parent)
    finally:
        connection.close()
    sys.stdout.flush()
    # the framework's own threads (pools, profilers) must not keep the process alive
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
