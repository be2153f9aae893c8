"""Saving files without destroying what they write over.

`write_file(path, write)` is how parallelgraph writes a file the user named (a trace, a picture):

- a regular file (or a new name) is written atomically: a temporary file in the same folder,
  fsync, then `os.replace`, so a failed write never leaves a truncated file where a good one
  was. A symlink is followed to its target (the link stays a link, the target gets the new
  data); an existing file keeps its permission bits (and its owner, where we may give it); a
  new file gets 0666 less the umask, as `open()` would give it (the temporary file is created
  with mode 0666, so the kernel applies the umask and no thread has to change it).
- a FIFO or a character device (`/dev/null`, a terminal) is written as a stream, in place:
  opened for writing without truncating or creating, never replaced. A FIFO with no reader is
  an error (it would block forever).
- a folder, a socket or a block device is refused with an `OSError` naming the path; nothing
  is created or replaced.

Every error of the file system is an `OSError` whose message starts with the path the user gave:
also one raised while the data goes out (a full disk, `/dev/full`, a FIFO whose reader left),
which Python would report as "[Errno 28] No space left on device" and nothing else. Any other
error of `write` (the caller's serializer) passes through unchanged; either way a regular file
is left as it was.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

Writer = Callable[[BinaryIO], None]


def _error(code: int, message: str) -> OSError:
    """An OSError whose text is just `message` (no "[Errno N]" before it), errno kept."""
    problem = OSError(message)
    problem.errno = code
    return problem


def _refuse(path: Path, code: int, what: str) -> OSError:
    return _error(code, f"{path}: {what}; nothing was written")


def _named(path: Path, problem: OSError, what: str) -> OSError:
    """`problem` (raised while writing `path`) as an OSError whose text starts with the path."""
    if str(problem).startswith(str(path)):
        return problem
    reason = problem.strerror or str(problem)
    return _error(problem.errno or errno.EIO, f"{path}: {what} ({reason})")


def _stream(path: Path, target: str, mode: int, write: Writer) -> None:
    flags = os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)
    if stat.S_ISFIFO(mode):
        flags |= os.O_NONBLOCK  # no reader: ENXIO now instead of blocking forever
    try:
        descriptor = os.open(target, flags)
    except OSError as problem:
        if problem.errno == errno.ENXIO:
            raise _refuse(path, problem.errno, "a FIFO with no reader") from None
        message = f"{path}: cannot open for writing ({problem.strerror})"
        raise _error(problem.errno, message) from None
    if stat.S_ISFIFO(mode):
        os.set_blocking(descriptor, True)  # the reader is there: write it all, as a pipe does
    try:
        with os.fdopen(descriptor, "wb") as file:
            write(file)
    except OSError as problem:  # /dev/full, a reader that went away
        raise _named(path, problem, "writing failed") from None


def _temporary(folder: str, name: str) -> tuple[int, str]:
    """A new file beside the target, created 0666 & ~umask (the kernel applies the umask)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        candidate = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(candidate, flags, 0o666), candidate
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"{folder}: no free temporary name")  # pragma: no cover


def _keep_owner(descriptor: int, existing: os.stat_result) -> None:
    """The replaced file's owner and group, where we may give them (root, or our own group)."""
    if not hasattr(os, "fchown"):  # pragma: no cover - Windows
        return
    if (existing.st_uid, existing.st_gid) == (os.geteuid(), os.getegid()):
        return
    try:
        os.fchown(descriptor, existing.st_uid, existing.st_gid)
    except OSError:
        pass  # not allowed: the new file is ours, as any rewrite by us would be


def write_file(path: str | Path, write: Writer, *, make_parents: bool = True) -> Path:
    """Write a file through `write(binary_file)` without destroying what `path` names (see the
    module's docstring); returns `path` as a Path."""
    path = Path(path)
    target = os.path.realpath(path)  # through symlinks (also a dangling one) to the target
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    except NotADirectoryError:
        raise _error(errno.ENOTDIR, f"{path}: a part of the path is not a folder") from None
    except OSError as problem:  # a symlink loop, a name too long, no permission to look
        raise _error(problem.errno, f"{path}: cannot write there ({problem.strerror})") from None
    if existing is not None:
        mode = existing.st_mode
        if stat.S_ISDIR(mode):
            raise _refuse(path, errno.EISDIR, "is a folder; give a file name")
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
            _stream(path, target, mode, write)
            return path
        if not stat.S_ISREG(mode):
            raise _refuse(path, errno.EINVAL, "is not a regular file, FIFO or character device")
    folder, name = os.path.split(target)
    if make_parents:
        try:
            Path(folder).mkdir(parents=True, exist_ok=True)
        except OSError as problem:  # a read-only place, a file where a folder would go
            raise _named(path, problem, f"cannot make the folder {folder}") from None
    try:
        descriptor, temporary = _temporary(folder, name)
    except OSError as problem:  # a read-only folder or file system, a full disk
        message = f"{path}: cannot write in {folder} ({problem.strerror}); nothing was written"
        raise _error(problem.errno, message) from None
    try:
        with os.fdopen(descriptor, "wb") as file:
            write(file)
            file.flush()
            if existing is not None:
                os.fchmod(file.fileno(), stat.S_IMODE(existing.st_mode))
                _keep_owner(file.fileno(), existing)
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException as problem:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        if isinstance(problem, OSError):  # a full disk, a file too large: the old file stays
            kept = "the file was left as it was" if existing else "nothing was written"
            raise _named(path, problem, f"writing failed; {kept}") from None
        raise
    return path


def write_bytes(path: str | Path, data: bytes) -> Path:
    """`write_file` of bytes already made."""
    return write_file(path, lambda file: file.write(data))
