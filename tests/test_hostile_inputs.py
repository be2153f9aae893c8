"""Hostile inputs (issue 22): one row per case, each a file a careless or hostile user could hand
us, and the one clear line it must give (a ValueError naming the file and what is wrong), or the
budget it must stay within. Every row failed before its fix (an OverflowError, a ValueError
without the file, a TypeError, minutes of time or gigabytes of memory)."""

from __future__ import annotations

import json
import re
import time
import zlib
from pathlib import Path

import pytest
from helpers import assert_load_refused_in_one_line

import parallelgraph as pg
from parallelgraph.chrome.files import MAX_BYTES_VARIABLE, read_json
from parallelgraph.chrome.metadata import event_id, validate_metadata
from parallelgraph.cli import main

REAL = Path(__file__).parent / "fixtures" / "real"


def _events(*events: dict) -> str:
    return json.dumps({"traceEvents": list(events)})


def _slice(**fields) -> dict:
    return {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1, **fields}


def _raw(ts: str, dur: str = "1") -> str:
    """An event whose ts/dur are JSON number literals json.dumps would not write."""
    event = f'"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}'
    return f'{{"traceEvents": [{{{event}}}]}}'


# (id, file text, the message the load must give: a ValueError that starts with the file)
TABLE = [
    ("ts-1e306", _raw("1e306"), r"event 0 .* 'ts' is 1e\+306 µs, beyond the .* a trace can span"),
    ("dur-1e306", _raw("0", "1e306"), r"event 0 .* 'dur' is 1e\+306 µs, beyond"),
    ("ts-400-digits", _raw("1" + "0" * 400), r"'ts' is an integer of about 401 digits µs"),
    (
        "ts-far-apart",
        _events(_slice(), _slice(name="b", ts=10**30)),
        r"event 1 .* 'ts' is 1e\+30 µs, beyond",
    ),
    ("ts-5000-digits", _raw("1" + "0" * 5000), r"not a trace's JSON: Exceeds the limit \(4300"),
]


@pytest.mark.parametrize("text, message", [row[1:] for row in TABLE], ids=[r[0] for r in TABLE])
def test_hostile_trace_file_gives_one_line_naming_the_file(tmp_path, text, message):
    path = tmp_path / "hostile.json"
    path.write_text(text)
    assert_load_refused_in_one_line(path, message)


def test_hostile_trace_file_in_the_cli_is_one_line_not_a_traceback(tmp_path, capsys):
    path = tmp_path / "far.json"
    path.write_text(_raw("1e306"))
    assert main(["explain", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "beyond" in err[0]


def test_tid_with_two_minus_signs_is_a_thread_name_not_a_crash(tmp_path):
    path = tmp_path / "tid.json"
    path.write_text(_events(_slice(tid="--5"), _slice(name="b", tid="-5", ts=2)))
    trace = pg.Trace.load(path)
    assert len(trace.events) == 2 and len(trace.lanes) == 2


def test_compare_command_with_a_zero_length_trace(tmp_path, capsys):
    zero = tmp_path / "zero.json"
    zero.write_text(_events(_slice(dur=0)))
    real = str(REAL / "tf_seed_inter2.ctf.json")
    for order in ([real, str(zero)], [str(zero), real]):
        assert main(["compare", *order, "--out", str(tmp_path / "c.png")]) == 0
        out = capsys.readouterr().out
        assert "zero: makespan 0.00 ms (" in out and "no speed-up: a median of 0 ms" in out
    assert pg.plot.compare([pg.Trace.load(zero), pg.Trace.load(real)]) is not None


# -- budgets: decompressed size, concatenated gzip members --------------------------------------


def _member(data: bytes) -> bytes:
    packer = zlib.compressobj(9, wbits=31)
    return packer.compress(data) + packer.flush()


def _bomb(path: Path, megabytes: int) -> None:
    """A gzip of `megabytes` MB of JSON (spaces inside a valid trace) in a few kB."""
    head, tail = _events(_slice()).encode()[:-1], b"}"
    packer = zlib.compressobj(9, wbits=31)
    with open(path, "wb") as file:
        file.write(packer.compress(head))
        block = b" " * (1 << 20)
        for _ in range(megabytes):
            file.write(packer.compress(block))
        file.write(packer.compress(tail) + packer.flush())


def test_gzip_bomb_stops_at_the_limit_with_a_clear_error(tmp_path, monkeypatch):
    import resource

    path = tmp_path / "bomb.json.gz"
    _bomb(path, 2048)  # 2 GiB of JSON in about 2 MB
    assert path.stat().st_size < 4 << 20
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(ValueError) as caught:
        pg.Trace.load(path)
    assert time.perf_counter() - start < 20
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 1400, f"{grown_mb:.0f} MB more resident to refuse a bomb"
    line = str(caught.value)
    assert line.startswith(f"{path}: decompresses to more than 1,073,741,824 bytes of JSON")
    assert MAX_BYTES_VARIABLE in line
    # the limit is the caller's to set: lower it by the environment, or per call
    small = tmp_path / "small.json.gz"
    _bomb(small, 3)
    monkeypatch.setenv(MAX_BYTES_VARIABLE, "2e6")
    with pytest.raises(ValueError, match=r"more than 2,000,000 bytes"):
        pg.Trace.load(small)
    monkeypatch.setenv(MAX_BYTES_VARIABLE, "5000000")
    assert len(pg.Trace.load(small).events) == 1
    monkeypatch.delenv(MAX_BYTES_VARIABLE)
    with pytest.raises(ValueError, match=r"more than 1,000,000 bytes"):
        read_json(small, max_bytes=1_000_000)
    plain = tmp_path / "plain.json"
    plain.write_text(_events(_slice()) + " " * 2000)
    with pytest.raises(ValueError, match=r"holds 2,0\d\d bytes, more than 1,000 bytes"):
        read_json(plain, max_bytes=1000)
    monkeypatch.setenv(MAX_BYTES_VARIABLE, "lots")
    with pytest.raises(ValueError, match=r"PARALLELGRAPH_MAX_TRACE_BYTES='lots': not a number"):
        pg.Trace.load(plain)


def test_400000_concatenated_gzip_members_load_in_linear_time(tmp_path):
    text = _events(*(_slice(name=f"op{i}", ts=10 * i) for i in range(20))).encode()
    path = tmp_path / "members.json.gz"
    space = _member(b" ")
    path.write_bytes(_member(text[:-1]) + space * 399_998 + _member(text[-1:]))
    assert path.stat().st_size > 8_000_000
    start = time.perf_counter()
    trace = pg.Trace.load(path)
    took = time.perf_counter() - start
    assert len(trace.events) == 20
    assert took < 20, f"{took:.1f} s for 400,000 members (was 119 s: quadratic)"


def test_gzip_members_truncated_or_followed_by_garbage(tmp_path):
    text = _events(_slice()).encode()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(_member(text[:10]) + _member(text[10:])[:-6])
    with pytest.raises(ValueError, match=r"cut.json.gz: the gzip stream ends early"):
        pg.Trace.load(cut)
    garbage = tmp_path / "garbage.json.gz"
    garbage.write_bytes(_member(text) + b"PK\x03\x04 not gzip")
    with pytest.raises(ValueError, match=r"bytes after gzip member 1 are not another member"):
        pg.Trace.load(garbage)
    padded = tmp_path / "padded.json.gz"
    padded.write_bytes(_member(text) + b"\0" * 512)  # zero padding (tape, block devices)
    assert len(pg.Trace.load(padded).events) == 1


# -- ill-typed metadata in our own files; ill-typed ids in PyTorch's ----------------------------

METADATA = [
    ("config-a-string", {"config": "threads"}, r"metadata.config must be an object"),
    ("cores-a-word", {"cores": "two"}, r"metadata.cores must be an int >= 1, got 'two'"),
    ("jit-a-list", {"jit": [1]}, r"metadata.jit must be an object"),
    ("lane-kinds-a-list", {"lane_kinds": ["a"]}, r"metadata.lane_kinds must be an object"),
    (
        "inter-a-string",
        {"config": {"inter_op_threads": "2"}},
        r"metadata.config.inter_op_threads must",
    ),
    ("notes-a-string", {"notes": "x"}, r"metadata.notes must be a list of strings"),
    ("busy-a-string", {"jit": {"busy_s": "1"}}, r"metadata.jit.busy_s must be a number"),
]


@pytest.mark.parametrize("bad, message", [r[1:] for r in METADATA], ids=[r[0] for r in METADATA])
def test_validate_metadata_names_the_file_and_the_field(bad, message):
    good = {"config": {"inter_op_threads": 2, "executor": "threads"}, "cores": 2, "notes": []}
    assert validate_metadata(dict(good), "t.json") == good
    with pytest.raises(ValueError, match=r"^t\.json: otherData\." + message):
        validate_metadata({**good, **bad}, "t.json")
    with pytest.raises(ValueError, match=r"metadata.\(itself\) must be an object"):
        validate_metadata([1], "t.json")  # type: ignore[arg-type]


def _ours_with(tmp_path: Path, **metadata) -> Path:
    trace = pg.Trace.load(REAL / "tf_seed_inter2.ctf.json")
    path = trace.save(tmp_path / "ours.json")
    document = json.loads(path.read_text())
    document["otherData"]["format"] = "parallelgraph-trace/1"
    document["otherData"]["metadata"].update(metadata)
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("bad", [r[1] for r in METADATA[:5]], ids=[r[0] for r in METADATA[:5]])
def test_our_file_with_ill_typed_metadata_fails_when_read(tmp_path, bad):
    path = _ours_with(tmp_path, **bad)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: otherData.metadata"):
        trace = pg.Trace.load(path)
        str(trace.explain())
        pg.simulate(trace)


def test_event_id_takes_ints_and_strings_and_names_anything_else():
    assert event_id(7, "t.json", 3, "correlation") == 7
    assert event_id("7", "t.json", 3, "correlation") == "7"
    assert event_id(None, "t.json", 3, "correlation") is None
    with pytest.raises(ValueError, match=r"^t.json: event 3 has an ill-typed args.'correlation'"):
        event_id([1], "t.json", 3, "correlation")
    with pytest.raises(ValueError, match=r"got True"):
        event_id(True, "t.json", 3, "correlation")


def test_pytorch_correlation_that_is_a_list_names_the_file(tmp_path):
    path = tmp_path / "torch.json"
    path.write_text(
        json.dumps(
            {
                "schemaVersion": 1,
                "deviceProperties": [],
                "traceEvents": [
                    _slice(cat="cpu_op", name="aten::mm", args={"correlation": [1]}),
                    _slice(cat="kernel", name="k", ts=2, tid=7, args={"correlation": [1]}),
                ],
            }
        )
    )
    with pytest.raises(ValueError, match=r"torch.json: event \d has an ill-typed args"):
        pg.Trace.load(path)
