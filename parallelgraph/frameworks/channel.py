"""The framed messages between a sweep and its worker processes, and the worker's lifeline.

**Framing.** `multiprocessing.connection.Connection` trusts a message's length header: a build
that writes anything into the worker's socket (it is an inherited file descriptor the user's
code can reach) makes the parent wait for gigabytes that never come. A `Channel` message is a
header — the magic bytes `PGw`, a protocol version byte, the pickled body's length (at most
`MAX_MESSAGE_BYTES`) — then the body. A header that is not ours, a version that is not ours, a
length beyond the bound or a body that stops arriving (`BODY_TIMEOUT_S` without a byte, once
the header has come) is a `ChannelError` at once, never a wait.

**The lifeline.** A worker must not outlive its parent (a notebook kernel killed, a script that
crashed). A watchdog *thread* cannot promise that: a step that holds the GIL (a long regex, a
C extension) keeps it from running. So the guarantee is made by the kernel: the parent keeps the
write end of a pipe it never writes to; the worker sets its read end to signal asynchronously
(`O_ASYNC`), its owner to the worker's own process group and its signal to SIGKILL
(`F_SETOWN`, `F_SETSIG`). When every copy of the write end is closed — the parent exited, was
killed, or ended the worker — Linux sends SIGKILL to the group: the worker and anything it
started, whatever they are doing. Where `F_SETSIG` does not exist (not Linux) the worker falls
back to a watchdog thread. A child the parent forks keeps no copy of the write end
(`os.register_at_fork`), so it cannot hold the workers alive.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import socket
import struct
import time
import weakref
from typing import Any

#: The first bytes of every message; then the protocol's version.
MAGIC = b"PGw"
VERSION = 1
HEADER = struct.Struct(">3sBQ")  # magic, version, body length
#: The largest message either side accepts (a build function travels by value: it may carry data).
MAX_MESSAGE_BYTES = 1 << 30
#: Once a header has arrived, the longest wait for the next byte of its body.
BODY_TIMEOUT_S = 30.0
#: Linux's F_SETSIG (fcntl.h), not exported by Python's fcntl module on every version.
F_SETSIG = 10


class ChannelError(ConnectionError):
    """The bytes on the channel are not a message of this protocol (the peer wrote something
    else into it), or the channel closed in the middle of a message."""


class Channel:
    """One end of a socket pair, speaking framed, pickled messages (see the module docstring)."""

    def __init__(self, sock: socket.socket):
        sock.setblocking(True)
        self.socket = sock

    @classmethod
    def from_fd(cls, fd: int) -> Channel:
        return cls(socket.socket(fileno=fd))

    def fileno(self) -> int:
        return self.socket.fileno()

    def send(self, message: Any) -> None:
        body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        if len(body) > MAX_MESSAGE_BYTES:
            raise ChannelError(
                f"a message of {len(body):,} bytes is over the channel's {MAX_MESSAGE_BYTES:,}"
            )
        self.socket.sendall(HEADER.pack(MAGIC, VERSION, len(body)) + body)

    def poll(self, timeout: float) -> bool:
        """Whether a message (or the channel's end) is there to read within `timeout` s."""
        readable, _, _ = select.select([self.socket], [], [], timeout)
        return bool(readable)

    def recv(self) -> Any:
        """The next message; EOFError when the peer closed between messages, ChannelError when
        what arrived is not a message of ours."""
        header = self._read(HEADER.size, at_start=True)
        magic, version, length = HEADER.unpack(header)
        if magic != MAGIC:
            raise ChannelError(
                f"the channel held {header[:8]!r}..., not a parallelgraph message: something "
                "in the worker wrote into its channel's file descriptor"
            )
        if version != VERSION:
            raise ChannelError(
                f"the peer speaks protocol version {version}, this parallelgraph {VERSION}: "
                "the worker imported another parallelgraph than its parent"
            )
        if length > MAX_MESSAGE_BYTES:
            raise ChannelError(
                f"a message header announces {length:,} bytes, over the channel's "
                f"{MAX_MESSAGE_BYTES:,}: the channel's bytes are damaged"
            )
        body = self._read(length, at_start=False)
        try:
            return pickle.loads(body)
        except Exception as error:  # noqa: BLE001 - whatever the damage, one kind of error
            raise ChannelError(
                f"a message's body could not be read back ({error!r:.200})"
            ) from None

    def _read(self, size: int, at_start: bool) -> bytes:
        chunks, got = [], 0
        deadline = None if at_start else time.monotonic() + BODY_TIMEOUT_S
        while got < size:
            if deadline is not None or got:
                deadline = deadline or time.monotonic() + BODY_TIMEOUT_S
                if not self.poll(max(0.0, deadline - time.monotonic())):
                    raise ChannelError(
                        f"a message stopped arriving after {got:,} of {size:,} bytes "
                        f"({BODY_TIMEOUT_S:.0f} s without a byte)"
                    )
            chunk = self.socket.recv(min(size - got, 1 << 20))
            if not chunk:
                if at_start and not got:
                    raise EOFError("the channel closed")
                raise ChannelError(
                    f"the channel closed after {got:,} of a message's {size:,} bytes"
                )
            chunks.append(chunk)
            got += len(chunk)
            deadline = time.monotonic() + BODY_TIMEOUT_S
        return b"".join(chunks)

    def close(self) -> None:
        self.socket.close()


# -- the lifeline ------------------------------------------------------------------------------
#: Write ends held by this process, closed in any child it forks (see the module docstring).
_HELD: weakref.WeakSet[Lifeline] = weakref.WeakSet()


class Lifeline:
    """The parent's side: a pipe whose write end lives as long as the worker should."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()  # both close on exec: the worker gets read_fd
        _HELD.add(self)

    def handed_over(self) -> None:
        """The worker started with its copy of the read end: ours is not needed."""
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1

    def cut(self) -> None:
        """Close the write end: a worker still alive gets SIGKILL, with its process group."""
        self.handed_over()
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1
        _HELD.discard(self)


def _drop_in_forked_child() -> None:
    for lifeline in list(_HELD):
        if lifeline.write_fd >= 0:
            try:
                os.close(lifeline.write_fd)
            except OSError:
                pass
            lifeline.write_fd = -1
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_in_forked_child)


def hold_lifeline(read_fd: int, parent: int) -> str:
    """In the worker: be killed with the process group when the lifeline's write end closes.
    Returns how ("kernel" or "thread", the fallback)."""
    try:
        import fcntl

        fcntl.fcntl(read_fd, fcntl.F_SETOWN, -os.getpgrp())
        fcntl.fcntl(read_fd, getattr(fcntl, "F_SETSIG", F_SETSIG), int(signal.SIGKILL))
        flags = fcntl.fcntl(read_fd, fcntl.F_GETFL)
        fcntl.fcntl(read_fd, fcntl.F_SETFL, flags | os.O_ASYNC | os.O_NONBLOCK)
    except (ImportError, OSError, AttributeError):
        _watch_with_thread(parent)
        return "thread"
    try:  # the parent may have died before the signal was armed: no edge would come
        if os.read(read_fd, 1) == b"":
            os.killpg(os.getpgrp(), signal.SIGKILL)
    except BlockingIOError:
        pass  # the write end is open: armed
    return "kernel"


def _watch_with_thread(parent: int) -> None:
    import threading

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()
