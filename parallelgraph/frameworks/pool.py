"""Worker processes seen from the parent: start one per setting, ask, and always end them.

`Worker` starts a Python that runs `parallelgraph.frameworks.worker` with `subprocess` (not
`multiprocessing`: a spawned multiprocessing child imports the parent's `__main__` again,
which reruns a script that lacks an `if __name__ == "__main__"` guard), hands it one end of a
socket pair (framed messages: `channel.Channel`) and the read end of its lifeline (the kernel
kills the worker when the parent is gone: `channel.Lifeline`), and speaks the protocol of
`worker`. The child gets the parent's `sys.path` — as JSON in its environment, since a folder
whose name holds ":" cannot be written in PYTHONPATH — so a build function defined in a module
of the user's is found, and one defined in a notebook cell or a script travels by value, with
its source (`travel`).

Every worker is ended — on `close()`, when the `Workers` group that holds it closes (a sweep
closes its group on any ending: done, Stop, Ctrl-C, an error), when it is garbage-collected,
and at interpreter exit (`weakref.finalize`) — first asked to stop, then terminated, then
killed; and if the parent dies without any of that, by the kernel, through the lifeline. A
reply is awaited in short polls, so a Ctrl-C or a Stop in the parent is seen within 0.1 s even
while the worker is inside a long step; the group then kills that worker rather than wait for
its step to end.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from .channel import Channel, ChannelError, Lifeline
from .knobs import Framework, common_environment

#: Poll interval while waiting for a reply: how soon a Stop or Ctrl-C is seen.
POLL_S = 0.1
#: How long a worker gets to exit after "stop", and after SIGTERM, before it is killed.
GRACE_S = 2.0


class FrameworkError(RuntimeError):
    """The user's code failed in a worker: the message names the setting; `remote_traceback`
    is the worker's traceback."""

    def __init__(self, label: str, described: Mapping[str, Any]):
        self.label = label
        self.remote_type = described.get("type", "Error")
        self.message = described.get("message", "")
        self.remote_traceback = described.get("traceback", "")
        where = {"setup": "building", "time": "a timed step", "trace": "the traced step"}.get(
            described.get("where", ""), "the worker"
        )
        super().__init__(
            f"{label}: {where} failed with {self.remote_type}: {described.get('message', '')}\n"
            f"--- traceback in the worker ---\n{self.remote_traceback}"
        )


class WorkerLost(RuntimeError):
    """A worker process ended without answering (crashed, killed, out of memory)."""


class Stopped(Exception):
    """A wait for a worker's reply was cut short by a Stop request."""


def _kill(process: subprocess.Popen, channel: Channel | None, lifeline: Lifeline) -> None:
    """End a worker: ask it, then SIGTERM, then SIGKILL; then what it left in its process group
    (processes its build started), and cut its lifeline (weakref.finalize calls this too)."""
    if process.poll() is None and channel is not None:
        try:
            channel.send(("stop", {}))
            process.wait(GRACE_S)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
    for end in (process.terminate, process.kill):
        if process.poll() is not None:
            break
        end()
        try:
            process.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            continue
    if process.poll() is not None:
        _kill_group(process.pid)
    lifeline.cut()
    if channel is not None:
        channel.close()


def _kill_group(leader: int) -> None:
    """SIGKILL what is left of the process group the worker led (it started a session of its
    own). Just after the worker was reaped: while any member lives its number cannot be reused."""
    try:
        os.killpg(leader, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


#: The environment variable that carries the parent's sys.path to the worker, as JSON.
PATH_VARIABLE = "PARALLELGRAPH_WORKER_SYS_PATH"
#: What the worker's Python runs: the parent's sys.path first, then the worker's main loop.
BOOT = (
    "import json, os, sys; "
    f"sys.path[:0] = json.loads(os.environ.pop({PATH_VARIABLE!r}, '[]')); "
    "from parallelgraph.frameworks.worker import main; main(sys.argv)"
)


def child_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """The parent's environment, its sys.path (as JSON for the worker, and as PYTHONPATH for
    the programs the framework starts, less the folders that PYTHONPATH cannot name), and the
    setting's variables."""
    paths = list(dict.fromkeys(os.path.abspath(p or os.curdir) for p in sys.path))
    folders = [p for p in paths if os.path.isdir(p)]
    env = dict(os.environ)
    env[PATH_VARIABLE] = json.dumps(folders)
    env["PYTHONPATH"] = os.pathsep.join(p for p in folders if os.pathsep not in p)
    env.update(extra)
    return env


class Worker:
    """One worker process for one setting (see the module docstring)."""

    def __init__(self, framework: Framework, setting: Mapping[str, Any], label: str):
        self.framework = framework
        self.setting = dict(setting)
        self.label = label
        ours, theirs = socket.socketpair()
        lifeline = Lifeline()
        env = {**common_environment(setting), **framework.environment(setting)}
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    BOOT,
                    str(theirs.fileno()),
                    str(lifeline.read_fd),
                    str(os.getpid()),
                ],
                pass_fds=(theirs.fileno(), lifeline.read_fd),
                env=child_environment(env),
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C reaches the parent, not workers
            )
        except BaseException:
            ours.close()
            lifeline.cut()
            raise
        finally:
            theirs.close()
            lifeline.handed_over()
        self.channel = Channel(ours)
        self._finalizer = weakref.finalize(self, _kill, self.process, self.channel, lifeline)
        #: A request was sent and its reply not read: the worker is busy (in a step, a build).
        self.pending = False

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, command: str, request: Mapping[str, Any]) -> None:
        try:
            self.channel.send((command, dict(request)))
        except OSError as error:
            raise self._lost() from error
        self.pending = True

    def receive(self, stopped: Callable[[], bool] = lambda: False) -> Any:
        """The reply to the last request; raises FrameworkError for a failure in the user's
        code, WorkerLost if the process died, Stopped if `stopped()` turned true first."""
        while not self.channel.poll(POLL_S):
            if stopped():
                raise Stopped(self.label)
            if not self.alive:
                raise self._lost()
        try:
            status, value = self.channel.recv()
        except ChannelError as error:  # not ours: what else is there cannot be trusted either
            self._finalizer()
            raise WorkerLost(f"{self.label}: {error}; the worker was ended") from None
        except (EOFError, OSError) as error:
            raise self._lost() from error
        self.pending = False
        if status == "error":
            raise FrameworkError(self.label, value)
        return value

    def ask(self, command: str, stopped: Callable[[], bool] = lambda: False, **request: Any) -> Any:
        self.send(command, request)
        return self.receive(stopped)

    def _lost(self) -> WorkerLost:
        try:
            code = self.process.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            code = None
        why = f"exit status {code}" if code is not None and code >= 0 else f"signal {-(code or 0)}"
        return WorkerLost(
            f"{self.label}: the worker process ended without answering ({why}); its output, "
            "if any, is in the terminal or the Jupyter server's log"
        )

    def close(self) -> None:
        """End the worker: politely when it is idle; at once when it is busy (a Stop or a
        Ctrl-C left it inside a step or a build, which may take any time)."""
        if self.pending and self.alive:
            self.process.terminate()
        self._finalizer()


class Workers:
    """The workers of one sweep: closed together, whatever ends the sweep."""

    def __init__(self) -> None:
        self.workers: list[Worker] = []

    def start(self, framework: Framework, setting: Mapping[str, Any], label: str) -> Worker:
        worker = Worker(framework, setting, label)
        self.workers.append(worker)
        return worker

    def pids(self) -> list[int]:
        return [w.pid for w in self.workers if w.alive]

    def close(self) -> None:
        """End every worker; the slow ones in parallel (stop requests first, then the waits)."""
        deadline = time.monotonic() + GRACE_S
        for worker in self.workers:
            if worker.alive and worker.pending:
                worker.process.terminate()  # inside a step or a build: not worth waiting for
            elif worker.alive:
                try:
                    worker.channel.send(("stop", {}))
                except (OSError, ValueError):
                    pass
        for worker in self.workers:
            try:
                worker.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.process.terminate()  # inside a long step: not worth waiting for
        for worker in self.workers:
            worker.close()
        self.workers.clear()

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
