"""Trace files to JSON values: plain or gzip, found in a folder, and every error naming the file.

Profilers write trace-event JSON in several wrappings: PyTorch's `tensorboard_trace_handler`
(`use_gzip=True`), JAX (always) and viztracer (`-o trace.json.gz`) write gzip; JAX and
TensorBoard put the file in a folder of their own (`plugins/profile/<run>/<host>.trace.json.gz`).
`read_json` takes any of them:

- gzip is recognised by its first two bytes (1f 8b), whatever the file is called;
- a folder is searched for trace files (`*.json`, `*.json.gz`); exactly one must be there;
- text is UTF-8 (a byte-order mark is allowed);
- the JSON Array Format may lack its closing "]" (streamed writers that were stopped);
- a file may hold several complete documents one after another (`cat a.json b.json > c.json`):
  they come back `Joined`, and are read as one trace of all their processes.

Every problem is a `ValueError` that starts with the file's path and says what is wrong and
where: the byte offset of bad UTF-8, the line and column of bad JSON, a gzip stream that ends
early, nesting too deep to be a trace.

Budgets for untrusted files: a trace's JSON may be at most `max_bytes` bytes (default
`DEFAULT_MAX_BYTES`, 1 GiB, or the environment variable `PARALLELGRAPH_MAX_TRACE_BYTES`), checked
against the file's size for plain JSON and while inflating for gzip: gzip is decompressed as a
stream, a bounded piece at a time, so a small "zip bomb" stops with an error naming the file and
the limit as soon as its output passes the limit, with memory bounded by the limit. Reading is
linear in the file's size, also for gzip of many concatenated members (some writers append one
member per flush; `gzip.decompress` copies the rest of the input per member, quadratic in their
number: 400,000 members took 119 s, now about a second).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

GZIP_MAGIC = b"\x1f\x8b"
TRACE_SUFFIXES = (".json", ".json.gz")
#: The most bytes of JSON a trace file may hold (after decompression) unless raised.
DEFAULT_MAX_BYTES = 1 << 30
#: The environment variable that raises (or lowers) that limit, in bytes ("4e9" and "4_000_000"
#: are read too).
MAX_BYTES_VARIABLE = "PARALLELGRAPH_MAX_TRACE_BYTES"
#: Compressed bytes fed to the decompressor at a time, and the most it may return per call:
#: small input pieces keep the copy Python's zlib makes of a member's unused tail short.
_FEED = 16 * 1024
_OUT = 1 << 20


def trace_file(path: Path) -> Path:
    """`path` itself, or the one trace file inside the folder `path`."""
    try:
        exists = path.exists()
    except OSError as problem:  # a name too long for the file system
        raise ValueError(f"{path}: cannot be read: {problem.strerror}") from None
    if not exists:
        if path.is_symlink():
            raise FileNotFoundError(f"{path}: a symlink to nothing (a missing target, or a loop)")
        raise FileNotFoundError(f"{path}: No such file or folder")
    if not path.is_dir():
        return path
    found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(f"{path}: a folder with no trace file (*.json, *.json.gz) in it")
    listed = ", ".join(str(p.relative_to(path)) for p in found[:5])
    raise ValueError(f"{path}: a folder with {len(found)} trace files ({listed}...); name one")


def max_bytes_allowed(max_bytes: int | None = None) -> int:
    """The limit in force: `max_bytes` if given, else $PARALLELGRAPH_MAX_TRACE_BYTES, else the
    default; a ValueError for a limit that is not a positive number of bytes."""
    if max_bytes is None:
        text = os.environ.get(MAX_BYTES_VARIABLE, "").strip()
        if not text:
            return DEFAULT_MAX_BYTES
        try:
            number = int(float(text)) if any(c in text for c in ".eE") else int(text)
        except (ValueError, OverflowError):  # "lots", "nan"; "inf" and "1e400"
            number = 0
        if number < 1:
            raise ValueError(
                f"{MAX_BYTES_VARIABLE}={text!r}: not a number of bytes >= 1 (e.g. 4000000000)"
            )
        return number
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive int of bytes, got {max_bytes!r}")
    return max_bytes


def _too_big(source: str, limit: int, what: str) -> ValueError:
    return ValueError(
        f"{source}: {what} more than {limit:,} bytes of JSON, the limit for a trace file; if "
        f"the file is trusted, raise it ({MAX_BYTES_VARIABLE}=<bytes>, or max_bytes=)"
    )


def _gunzip(file: BinaryIO, source: str, limit: int) -> bytearray:
    """Inflate a gzip file of one or more members as a stream; at most `limit` bytes out."""
    out = bytearray()
    inflater = zlib.decompressobj(wbits=31)
    pending = b""  # compressed bytes read but not given to the inflater yet
    members = 0
    started = False  # the current member has begun
    while True:
        if not pending:
            pending = file.read(_FEED)
            if not pending:
                break
        if not started:
            if not pending.strip(b"\0"):  # zero padding after the last member
                pending = b""
                continue
            if members and len(pending) >= 2 and pending[:2] != GZIP_MAGIC:
                raise ValueError(
                    f"{source}: not a valid gzip file (bytes after gzip member {members} are "
                    "not another member)"
                )
            started = True
        data = pending
        while True:  # at most _OUT bytes per call, so memory stays within limit + _OUT
            try:
                piece = inflater.decompress(data, _OUT)
            except zlib.error as problem:
                raise ValueError(f"{source}: not a valid gzip file ({problem})") from None
            out += piece
            if len(out) > limit:
                raise _too_big(source, limit, "decompresses to")
            if inflater.eof or (not inflater.unconsumed_tail and len(piece) < _OUT):
                break
            data = inflater.unconsumed_tail
        if inflater.eof:
            members += 1
            pending = inflater.unused_data
            inflater = zlib.decompressobj(wbits=31)
            started = False
        else:
            pending = b""
    if started:
        raise ValueError(
            f"{source}: the gzip stream ends early (the file is truncated after "
            f"{len(out):,} bytes of JSON)"
        )
    return out


def _text(data: bytes | bytearray, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        raise ValueError(
            f"{source}: not UTF-8 text: byte {problem.start:,} is 0x{data[problem.start]:02x} "
            f"({problem.reason}); a trace file is JSON in UTF-8"
        ) from None


_gc_lock = threading.Lock()
_gc_holders = 0
_gc_was_enabled = False


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Python's cyclic garbage collector off while a big trace is read, back as it was after.

    Reading makes millions of objects that stay alive (dicts, lists, events) and no cycles; the
    collector would walk all of them again and again as they pile up, which made loading
    superlinear (a million events: the collector's passes grew faster than the events). Nested
    and concurrent uses are counted: the collector comes back when the last one ends."""
    global _gc_holders, _gc_was_enabled
    with _gc_lock:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0 and _gc_was_enabled:
                gc.enable()


class Joined(tuple):
    """Complete JSON documents that one file holds one after another (`cat a.json b.json`:
    `{...}{...}` or `[...][...]`), in file order; `document.read_document` reads them as one
    trace of all their processes."""


def _joined(text: str) -> Joined | None:
    """The documents of `text` if it is two or more complete JSON objects or lists one after
    another (whitespace between them), else None."""
    decoder, parts, index = json.JSONDecoder(), [], 0
    while True:
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        if index == len(text):
            return Joined(parts) if len(parts) > 1 else None
        try:
            value, index = decoder.raw_decode(text, index)
        except (json.JSONDecodeError, RecursionError):
            return None
        if not isinstance(value, dict | list):
            return None
        parts.append(value)


def parse_json(text: str, source: str) -> Any:
    """JSON text; the JSON Array Format may lack its closing ']' (streamed writers); several
    complete documents one after another are `Joined`."""
    try:
        with paused_gc():
            return json.loads(text)
    except RecursionError:
        raise ValueError(
            f"{source}: JSON nested too deeply to be a trace (a trace is a list of flat events)"
        ) from None
    except json.JSONDecodeError as problem:
        if problem.msg == "Extra data":
            with paused_gc():
                joined = _joined(text)
            if joined is not None:
                return joined
        if text.lstrip().startswith("["):
            try:
                return json.loads(text.rstrip().rstrip(",") + "]")
            except (json.JSONDecodeError, RecursionError):
                pass
        raise ValueError(
            f"{source}: not valid JSON at line {problem.lineno}, column {problem.colno} "
            f"({problem.msg}); is the file truncated?"
        ) from None
    except ValueError as problem:  # an integer of more than 4300 digits, and the like
        raise ValueError(f"{source}: not a trace's JSON: {str(problem).split(';')[0]}") from None


def read_json(path: str | Path, max_bytes: int | None = None) -> tuple[Any, str]:
    """The parsed JSON of a trace file (or of the one trace file in a folder), and its path as
    text for messages; ValueError naming the file for anything that is not a trace's JSON, or
    for more than `max_bytes` bytes of JSON (see `max_bytes_allowed`)."""
    limit = max_bytes_allowed(max_bytes)
    if isinstance(path, str) and not path.strip():  # Path("") would be the working folder
        raise ValueError(f"{path!r}: an empty path; name a trace file or its folder")
    path = trace_file(Path(path))
    source = str(path)
    with open(path, "rb") as file:
        head = file.read(2)
        file.seek(0)
        if head == GZIP_MAGIC:
            data: bytes | bytearray = _gunzip(file, source, limit)
        else:
            size = os.fstat(file.fileno()).st_size
            if size > limit:
                raise _too_big(source, limit, f"holds {size:,} bytes,")
            data = file.read(limit + 1)
            if len(data) > limit:  # a file growing while read, or no size to tell
                raise _too_big(source, limit, "holds")
    if not data.strip():
        raise ValueError(f"{source}: the file is empty")
    return parse_json(_text(data, source), source), source
