"""Trace files to JSON values: plain or gzip, found in a folder, and every error naming the file.

Profilers write trace-event JSON in several wrappings: PyTorch's `tensorboard_trace_handler`
(`use_gzip=True`), JAX (always) and viztracer (`-o trace.json.gz`) write gzip; JAX and
TensorBoard put the file in a folder of their own (`plugins/profile/<run>/<host>.trace.json.gz`).
`read_json` takes any of them:

- gzip is recognised by its first two bytes (1f 8b), whatever the file is called;
- a folder is searched for trace files (`*.json`, `*.json.gz`); exactly one must be there;
- text is UTF-8 (a byte-order mark is allowed);
- the JSON Array Format may lack its closing "]" (streamed writers that were stopped).

Every problem is a `ValueError` that starts with the file's path and says what is wrong and
where: the byte offset of bad UTF-8, the line and column of bad JSON, a gzip stream that ends
early, nesting too deep to be a trace.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

GZIP_MAGIC = b"\x1f\x8b"
TRACE_SUFFIXES = (".json", ".json.gz")


def trace_file(path: Path) -> Path:
    """`path` itself, or the one trace file inside the folder `path`."""
    if not path.exists():
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


def _gunzip(data: bytes, source: str) -> bytes:
    try:
        return gzip.decompress(data)
    except EOFError:
        partial = zlib.decompressobj(wbits=31).decompress(data)
        raise ValueError(
            f"{source}: the gzip stream ends early (the file is truncated after "
            f"{len(partial):,} bytes of JSON)"
        ) from None
    except (OSError, zlib.error) as problem:
        raise ValueError(f"{source}: not a valid gzip file ({problem})") from None


def _text(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        raise ValueError(
            f"{source}: not UTF-8 text: byte {problem.start:,} is 0x{data[problem.start]:02x} "
            f"({problem.reason}); a trace file is JSON in UTF-8"
        ) from None


def parse_json(text: str, source: str) -> Any:
    """JSON text; the JSON Array Format may lack its closing ']' (streamed writers)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(
            f"{source}: JSON nested too deeply to be a trace (a trace is a list of flat events)"
        ) from None
    except json.JSONDecodeError as problem:
        if text.lstrip().startswith("["):
            try:
                return json.loads(text.rstrip().rstrip(",") + "]")
            except (json.JSONDecodeError, RecursionError):
                pass
        raise ValueError(
            f"{source}: not valid JSON at line {problem.lineno}, column {problem.colno} "
            f"({problem.msg}); is the file truncated?"
        ) from None


def read_json(path: str | Path) -> tuple[Any, str]:
    """The parsed JSON of a trace file (or of the one trace file in a folder), and its path as
    text for messages; ValueError naming the file for anything that is not a trace's JSON."""
    path = trace_file(Path(path))
    source = str(path)
    data = path.read_bytes()
    if data[:2] == GZIP_MAGIC:
        data = _gunzip(data, source)
    if not data.strip():
        raise ValueError(f"{source}: the file is empty")
    return parse_json(_text(data, source), source), source
