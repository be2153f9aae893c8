"""The worker process: one framework setting, started fresh, timing the user's step on request.

Started by `pool.Worker` as `python -c BOOT FD LIFELINE PARENT`, with the setting's environment
already in place; FD is its end of a socket pair, wrapped as a `channel.Channel` (framed,
pickled messages; the user's prints to stdout and stderr go where the parent's go and never mix
with the messages), LIFELINE the read end of the pipe that gets it killed when the parent is
gone (`channel.hold_lifeline`). Protocol, one reply per request — ("ok", value) or
("error", {"type", "message", "traceback", "where"}), every field text made so that no failure
of the user's exception (a `__str__` that raises) can keep the reply from going back:

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
(killed without a chance to clean up), the kernel kills the worker's process group at once,
even in the middle of a step that holds the GIL, so no process is left behind.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from typing import Any

from .channel import Channel, ChannelError, hold_lifeline
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
            "read_by_build": sorted(self.setting.read & set(self.framework.knobs)),
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


def _text(make: Any, fallback: str) -> str:
    """`make()` as text, or `fallback` when the user's object fails to say itself."""
    try:
        text = make()
        return text if isinstance(text, str) else fallback
    except BaseException:  # noqa: BLE001 - a __str__ may raise anything
        return fallback


def _described(error: BaseException, where: str) -> dict[str, str]:
    """An exception as the text fields of an error reply (see the module docstring)."""
    kind = _text(lambda: type(error).__name__, "Exception")
    return {
        "type": kind,
        "message": _text(lambda: str(error), f"<a {kind} whose str() failed>"),
        "traceback": _text(
            lambda: "".join(traceback.format_exception(error)),
            f"<the traceback of a {kind} could not be written>",
        ),
        "where": where,
    }


def _send_reply(channel: Channel, reply: tuple[str, Any], command: str) -> None:
    """Send a reply; one that cannot be pickled goes back as an error that says so."""
    try:
        channel.send(reply)
    except ChannelError as error:  # too big to send
        channel.send(("error", _described(error, command)))
    except (OSError, EOFError):
        raise
    except BaseException as error:  # noqa: BLE001 - an unpicklable value from the user's code
        channel.send(("error", _described(error, command)))


def serve(channel: Channel, parent: int, lifeline: int = -1) -> None:
    """Answer requests until "stop" or the parent's end of the channel closes."""
    if lifeline >= 0:
        hold_lifeline(lifeline, parent)
    state = WorkerState()
    handlers = {
        "setup": state.setup,
        "time": lambda request: state.time(request["steps"]),
        "trace": lambda request: state.trace(),
    }
    while True:
        try:
            command, request = channel.recv()
        except (EOFError, OSError):
            return
        if command == "stop":
            channel.send(("ok", None))
            return
        try:
            reply = ("ok", handlers[command](request))
        except BaseException as error:  # noqa: BLE001 - the user's code: every failure goes back
            reply = ("error", _described(error, command))
        _send_reply(channel, reply, command)


def main(argv: list[str]) -> None:
    """`argv`: [program, channel fd, lifeline fd, parent pid] (see the module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fd, lifeline, parent = int(argv[1]), int(argv[2]), int(argv[3])
    channel = Channel.from_fd(fd)
    try:
        serve(channel, parent, lifeline)
    finally:
        channel.close()
    sys.stdout.flush()
    # the framework's own threads (pools, profilers) must not keep the process alive
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
