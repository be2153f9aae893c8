"""A fresh hunt beside issue 22's cases: about 250 inputs a careless or hostile user could give
— hand-written trace files, paths, the command line, configs, sessions, sweeps and the
dashboard. Each must end in a correct result or ONE clear line (ValueError, TypeError,
GraphError, ...) naming the file or argument: never a raw error from deep inside, never a hang,
never a wrong answer given silently.

Rows marked "failed before" in a comment failed on the code before this file (a TypeError from
a set lookup, an AttributeError, a ZeroDivisionError, a numpy message without the argument, an
answer for a lane that does not exist, a closed dashboard that reopened a session, minutes of
explain() on a trace with a thread per event)."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import random
import re
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_load_refused_in_one_line

import parallelgraph as pg
from parallelgraph.chrome.files import MAX_BYTES_VARIABLE
from parallelgraph.cli import main

REAL = Path(__file__).parent / "fixtures" / "real"
BAD_TYPES = (IndexError, KeyError, AttributeError, ZeroDivisionError, RecursionError, OverflowError)


def _slice(**fields) -> dict:
    return {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1, **fields}


def _doc(*events: dict, **top) -> str:
    return json.dumps({"traceEvents": list(events), **top})


def _meta(name: str, args, **fields) -> dict:
    return {"ph": "M", "name": name, "pid": 1, "tid": 1, "args": args, **fields}


def _flow(phase: str, flow_id, tid: int, ts: float) -> dict:
    return {"ph": phase, "id": flow_id, "pid": 1, "tid": tid, "ts": ts, "bp": "e"}


def _mark(phase: str, tid: int, ts: float) -> dict:
    return {"ph": phase, "name": "a", "pid": 1, "tid": tid, "ts": ts}


def _without(key: str) -> dict:
    return {k: v for k, v in _slice().items() if k != key}


# -- trace files that must load, explain, replay and save back ---------------------------------

LOADS = [
    ("name-int", _doc(_slice(name=5))),
    ("name-null", _doc(_slice(name=None))),
    ("name-object", _doc(_slice(name={"a": 1}))),
    ("name-missing", _doc(_without("name"))),
    ("name-empty", _doc(_slice(name=""), _slice(name="", tid=2))),
    ("name-control-chars", _doc(_slice(name="a\x00b\x1b[31m\n\r\t"), _slice(name="\u202ex/y"))),
    ("name-unicode-scopes", _doc(_slice(name="网络1/矩阵"), _slice(name="网络2/矩阵", tid=2))),
    ("name-lone-surrogate", '{"traceEvents": [{"ph": "X", "name": "\\ud800", "ts": 0, "dur": 1}]}'),
    ("name-200k-chars", _doc(_slice(name="n" * 200_000), _slice(name="n" * 200_000 + "b", tid=2))),
    ("name-slashes-only", _doc(_slice(name="////"), _slice(name="/", tid=2))),
    ("scope-1000-deep", _doc(_slice(name="s/" * 1000 + "op"), _slice(name="t/" * 500, tid=2))),
    ("pid-float", _doc(_slice(pid=1.5))),
    ("pid-object", _doc(_slice(pid={}))),
    ("pid-null", _doc(_slice(pid=None))),
    ("pid-negative", _doc(_slice(pid=-1, tid=-1))),
    ("tid-list", _doc(_slice(tid=[1]))),
    ("tid-bool", _doc(_slice(tid=True))),
    ("tid-30-digits", _doc(_slice(tid=10**30))),
    ("pid-string-and-int", _doc(_slice(pid="p"), _slice(name="b", tid="1"))),
    ("ts-negative", _doc(_slice(ts=-100), _slice(name="b", ts=-50))),
    ("ts-epoch-us", _doc(_slice(ts=1.7e15), _slice(name="b", ts=1.7e15 + 0.001, dur=0.001))),
    ("dur-zero", _doc(_slice(dur=0), _slice(name="b", dur=0))),
    ("dur-missing", _doc(_without("dur"))),
    ("dur-subnormal", _doc(_slice(dur=1e-300), _slice(name="b", ts=1e-300, dur=5e-324))),
    ("args-list", _doc(_slice(args=[1, 2]))),
    ("args-string", _doc(_slice(args="x"))),
    ("args-name-int", _doc(_slice(args={"name": 5}))),
    ("args-long-name-list", _doc(_slice(args={"long_name": [1]}))),
    ("cat-int", _doc(_slice(cat=5))),
    ("cat-list", _doc(_slice(cat=["a"]))),
    ("ph-int", _doc(_slice(ph=1), _slice(name="b"))),
    ("ph-empty", _doc(_slice(ph=""), _slice(name="b"))),
    ("ph-list", _doc(_slice(ph=["X"]), _slice(name="b"))),  # failed before: unhashable 'list'
    ("ph-object", _doc(_slice(ph={"X": 1}), _slice(name="b"))),  # failed before, the same
    ("ph-unknown", _doc(_slice(), {"ph": "Q", "name": "x", "pid": 1, "tid": 1, "ts": 0})),
    ("instant-events", _doc(_slice(), {"ph": "i", "name": "m", "ts": 0, "s": "g"}, {"ph": "I"})),
    ("counter-odd-args", _doc(_slice(), {"ph": "C", "name": "mem", "ts": 0, "args": {"v": "x"}})),
    (
        "async-events",
        _doc(
            _slice(),
            {"ph": "b", "name": "x", "id": "0x1", "pid": 1, "tid": 1, "ts": 0, "cat": "c"},
            {"ph": "e", "name": "x", "id": "0x1", "pid": 1, "tid": 1, "ts": 5, "cat": "c"},
        ),
    ),
    ("B-E-across-threads", _doc(_mark("B", 1, 0), _mark("E", 2, 5))),
    ("E-without-B", _doc(_slice(), {"ph": "E", "name": "a", "pid": 1, "tid": 1, "ts": 5})),
    ("B-without-E", _doc({"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 0}, _slice(ts=2))),
    ("E-before-B", _doc(_mark("B", 1, 10), _mark("E", 1, 5))),
    (
        "B-E-names-crossed",
        _doc(
            {"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 0},
            {"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": 1},
            {"ph": "E", "name": "a", "pid": 1, "tid": 1, "ts": 2},
            {"ph": "E", "name": "b", "pid": 1, "tid": 1, "ts": 3},
        ),
    ),
    ("X-overlapping-one-thread", _doc(_slice(dur=10), _slice(name="b", ts=5, dur=10))),
    ("ids-duplicate", _doc(_slice(id=1), _slice(name="b", ts=2, id=1))),
    ("same-name-200-times", _doc(*(_slice(tid=i % 2, ts=2 * i) for i in range(200)))),
    ("same-ts-200-events", _doc(*(_slice(name=f"o{i}", tid=i % 3) for i in range(200)))),
    ("flow-to-nowhere", _doc(_slice(), _flow("s", 1, 1, 0))),
    ("flow-end-only", _doc(_slice(), _flow("f", 1, 1, 0))),
    ("flow-id-list", _doc(_slice(), _flow("s", [1], 1, 0), _flow("f", [1], 2, 3))),
    (
        "flow-twice",
        _doc(
            _slice(),
            _slice(name="b", tid=2, ts=5),
            *[_flow("s", 1, 1, 0.5), _flow("s", 1, 1, 0.6)],
            *[_flow("f", 1, 2, 5), _flow("f", 1, 2, 5)],
        ),
    ),
    (
        "flow-both-ways",
        _doc(
            _slice(),
            _slice(name="b", tid=2),
            *[_flow("s", 1, 1, 0.5), _flow("f", 1, 2, 0.5)],
            *[_flow("s", 2, 2, 0.5), _flow("f", 2, 1, 0.5)],
        ),
    ),
    ("meta-args-null", _doc(_slice(), _meta("thread_name", None))),
    ("meta-args-list", _doc(_slice(), _meta("thread_name", [1]))),
    ("meta-no-args", _doc(_slice(), {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1})),
    ("meta-name-int", _doc(_slice(), _meta("thread_name", {"name": 5}))),
    ("meta-name-object", _doc(_slice(), _meta("process_name", {"name": {"x": 1}}))),
    ("meta-sort-word", _doc(_slice(), _meta("thread_sort_index", {"sort_index": "z"}))),
    ("meta-sort-1e308", _doc(_slice(), _meta("process_sort_index", {"sort_index": 1e308}))),
    (
        "meta-two-threads-one-name",
        _doc(
            _slice(),
            _slice(name="b", tid=2),
            _meta("thread_name", {"name": "same"}),
            _meta("thread_name", {"name": "same"}, tid=2),
        ),
    ),
    ("time-unit-ns", _doc(_slice(ts=1000, dur=1000), displayTimeUnit="ns")),
    ("time-unit-furlongs", _doc(_slice(), displayTimeUnit="furlongs")),
    ("time-unit-int", _doc(_slice(), displayTimeUnit=5)),
    ("other-data-list", _doc(_slice(), otherData=[1])),
    ("other-data-string", _doc(_slice(), otherData="x")),
    ("our-format-unknown-version", _doc(_slice(), otherData={"format": "parallelgraph-trace/9"})),
    ("our-format-int", _doc(_slice(), otherData={"format": 5})),
    ("torch-schema-word", _doc(_slice(cat="cpu_op"), schemaVersion="x", deviceProperties=[])),
    ("torch-device-props-object", _doc(_slice(cat="cpu_op"), schemaVersion=1, deviceProperties={})),
    (
        "torch-external-id-float",
        _doc(_slice(cat="cpu_op", args={"External id": 1.5}), schemaVersion=1, deviceProperties=[]),
    ),
    ("torch-kernel-alone", _doc(_slice(cat="kernel", tid=7), schemaVersion=1, deviceProperties=[])),
    ("top-level-list", json.dumps([_slice(), _slice(name="b", ts=2)])),
    ("top-level-empty-list", "[]"),
    ("events-empty", _doc()),
    ("events-metadata-only", _doc(_meta("thread_name", {"name": "t"}))),
    ("event-empty-object", _doc({})),
    ("two-documents", _doc(_slice()) * 2),  # `cat a.json b.json`: two processes' traces
    ("two-lists", json.dumps([_slice()]) + "\n" + json.dumps([_slice(name="b")])),
]


@pytest.mark.parametrize("text", [r[1] for r in LOADS], ids=[r[0] for r in LOADS])
def test_odd_trace_files_load_explain_replay_and_save_back(tmp_path, text):
    path = tmp_path / "odd.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    trace = pg.Trace.load(path)
    back = pg.Trace.load(trace.save(tmp_path / "back.json"))
    assert [(e.name, e.lane, e.start, e.end) for e in back.events] == [
        (e.name, e.lane, e.start, e.end) for e in trace.events
    ]
    assert str(trace.explain())
    if trace.ops():
        assert pg.simulate(trace, pg.Config(inter_op_threads=2)).ops()
    else:
        with pytest.raises(ValueError, match="needs a trace with op events"):
            pg.simulate(trace)


def test_what_the_odd_files_read_as():
    """A few of the rows above, read: the answer is the one a trace viewer would draw."""

    def load(tmp: Path, text: str) -> pg.Trace:
        path = tmp / "t.json"
        path.write_text(text)
        return pg.Trace.load(path)

    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        rows = dict(LOADS)
        crossed = load(tmp, rows["B-E-across-threads"])  # the E ends nothing on its thread
        assert [(e.start, e.end) for e in crossed.events] == [(0, 5000)]  # to the last ts
        assert any("no 'B'" in n for n in crossed.metadata["notes"])
        assert [e.end - e.start for e in load(tmp, rows["dur-missing"]).events] == [0]
        assert [e.name for e in load(tmp, rows["ph-list"]).events] == ["b"]
        assert load(tmp, rows["ts-negative"]).makespan_ms == pytest.approx(0.051)
        unicode = load(tmp, rows["name-unicode-scopes"])
        assert unicode.scopes()[:2] == ["网络1", "网络2"] and unicode.overlap("网络1", "网络2") == 1
        assert len(load(tmp, rows["ids-duplicate"]).events) == 2


# -- trace files that must be refused in one line naming the file ------------------------------

REFUSED = [
    ("ts-string", _doc(_slice(ts="5")), r"event 0 has no valid ts/dur: 'ts' must be a number"),
    ("ts-word", _doc(_slice(ts="soon")), r"'ts' must be a number of µs, got 'soon'"),
    ("ts-null", _doc(_slice(ts=None)), r"'ts' must be a number of µs, got None"),
    ("ts-missing", _doc(_without("ts")), r"'ts' is missing"),
    ("ts-bool", _doc(_slice(ts=True)), r"got True"),
    ("ts-list", _doc(_slice(ts=[0])), r"got \[0\]"),
    ("ts-NaN", _doc(_slice()).replace('"ts": 0', '"ts": NaN'), r"'ts' must be .* got nan"),
    ("ts-Infinity", _doc(_slice()).replace('"ts": 0', '"ts": Infinity'), r"got inf"),
    ("dur-NaN", _doc(_slice()).replace('"dur": 1', '"dur": NaN'), r"'dur' must be .* got nan"),
    ("dur-minus-inf", _doc(_slice()).replace('"dur": 1', '"dur": -Infinity'), r"got -inf"),
    ("dur-negative", _doc(_slice(dur=-5)), r"'dur' is negative \(-5\)"),
    ("dur-string", _doc(_slice(dur="1")), r"'dur' must be a number of µs, got '1'"),
    ("dur-object", _doc(_slice(dur={})), r"got \{\}"),
    ("dur-2-to-62", _doc(_slice(), _slice(name="b", dur=2**62)), r"event 1 .* 'dur' is 4.61e\+18"),
    ("events-object", json.dumps({"traceEvents": {"a": 1}}), r"'traceEvents' must be a list"),
    ("events-string", json.dumps({"traceEvents": "x"}), r"'traceEvents' must be a list, got str"),
    ("events-null", json.dumps({"traceEvents": None}), r"got NoneType"),
    ("top-int", "5", r"expected a JSON object or list, got int"),
    ("top-string", '"x"', r"expected a JSON object or list, got str"),
    ("top-null", "null", r"got NoneType"),
    ("top-empty-object", "{}", r"needs a 'traceEvents' list; it has keys \[\]"),
    ("event-int", _doc(5), r"event 0 is not an object: 5"),  # type: ignore[arg-type]
    ("event-null", json.dumps({"traceEvents": [None]}), r"event 0 is not an object: None"),
    ("event-list", json.dumps({"traceEvents": [[1, 2]]}), r"event 0 is not an object"),
    ("nesting-100000", '{"traceEvents": [' + "[" * 100_000 + "]" * 100_000 + "]}", r"too deeply"),
    (
        "args-5000-deep",
        _doc(_slice(args="@")).replace('"@"', '{"a":' * 5000 + "1" + "}" * 5000),
        r"too deeply",
    ),
    ("empty", "", r"the file is empty"),
    ("whitespace", " \n\t ", r"the file is empty"),
    ("trailing-garbage", _doc(_slice()) + "garbage", r"not valid JSON at line 1, column \d+"),
    ("two-documents-then-garbage", _doc(_slice()) * 2 + "x", r"\(Extra data\)"),
    ("nul-bytes", "\0" * 100, r"not valid JSON at line 1, column 1"),
    (
        "our-metadata-a-string",
        _doc(_slice(), otherData={"format": "parallelgraph-trace/1", "metadata": "x"}),
        r"otherData.metadata.\(itself\) must be an object",
    ),
]


@pytest.mark.parametrize("text, message", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_broken_trace_files_are_one_line_naming_the_file(tmp_path, text, message):
    path = tmp_path / "broken.json"
    path.write_text(text)
    assert_load_refused_in_one_line(path, message)


BINARY = [
    ("utf-16", _doc(_slice()).encode("utf-16"), r"not UTF-8 text: byte 0 is 0xff"),
    ("gzip-empty", gzip.compress(b""), r"the file is empty"),
    ("gzip-header-cut", gzip.compress(_doc(_slice()).encode())[:5], r"gzip stream ends early"),
    ("gzip-magic-only", b"\x1f\x8b", r"gzip stream ends early"),
    ("gzip-of-gzip", gzip.compress(gzip.compress(_doc(_slice()).encode())), r"not UTF-8 text"),
    ("zip-named-json", b"PK\x03\x04" + b"\0" * 40, r"not valid JSON"),
]


@pytest.mark.parametrize("data, message", [r[1:] for r in BINARY], ids=[r[0] for r in BINARY])
def test_binary_oddities_are_one_line_naming_the_file(tmp_path, data, message):
    path = tmp_path / "odd.json.gz"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: .*{message}"):
        pg.Trace.load(path)


def test_byte_order_mark_and_plain_json_named_gz_load(tmp_path):
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + _doc(_slice()).encode())
    plain = tmp_path / "plain.json.gz"  # not gzip at all: recognised by content
    plain.write_text(_doc(_slice()))
    assert len(pg.Trace.load(bom).events) == len(pg.Trace.load(plain).events) == 1


# -- paths -------------------------------------------------------------------------------------


def _paths(tmp: Path) -> dict[str, Path | str]:
    good = _doc(_slice())
    (tmp / "multi").mkdir()
    (tmp / "multi" / "a.json").write_text(good)
    (tmp / "multi" / "b.json.gz").write_bytes(gzip.compress(good.encode()))
    (tmp / "empty").mkdir()
    (tmp / "junk").mkdir()
    (tmp / "junk" / "readme.txt").write_text("hi")
    os.symlink(tmp / "loop", tmp / "loop")
    (tmp / "dirloop").mkdir()
    os.symlink(tmp / "dirloop", tmp / "dirloop" / "self")
    os.symlink(tmp / "nothing", tmp / "dangling.json")
    return {
        "missing": tmp / "nope.json",
        "folder-with-two": tmp / "multi",
        "empty-folder": tmp / "empty",
        "folder-of-junk": tmp / "junk",
        "symlink-loop": tmp / "loop",
        "folder-with-a-loop": tmp / "dirloop",
        "dangling-symlink": tmp / "dangling.json",
        "name-too-long": tmp / ("x" * 300 + ".json"),  # failed before: a raw OSError
        "empty-string": "",  # failed before: loaded the working folder's 300 JSON files
        "blank-string": "  ",
    }


PATHS = [
    ("missing", FileNotFoundError, r"nope.json: No such file or folder"),
    ("folder-with-two", ValueError, r"multi: a folder with 2 trace files \(a.json, b.json.gz"),
    ("empty-folder", ValueError, r"empty: a folder with no trace file"),
    ("folder-of-junk", ValueError, r"junk: a folder with no trace file"),
    ("symlink-loop", FileNotFoundError, r"loop: a symlink to nothing \(a missing target, or a"),
    ("folder-with-a-loop", ValueError, r"dirloop: a folder with no trace file"),
    ("dangling-symlink", FileNotFoundError, r"dangling.json: a symlink to nothing"),
    ("name-too-long", ValueError, r"x{300}.json: cannot be read: File name too long"),
    ("empty-string", ValueError, r"^'': an empty path; name a trace file or its folder"),
    ("blank-string", ValueError, r"^'  ': an empty path"),
]


@pytest.mark.parametrize("key, kind, message", PATHS, ids=[r[0] for r in PATHS])
def test_bad_paths_name_the_path_and_what_is_wrong(tmp_path, key, kind, message):
    path = _paths(tmp_path)[key]
    with pytest.raises(kind, match=message) as caught:
        pg.Trace.load(path)
    assert "\n" not in str(caught.value)
    assert main(["explain", str(path)]) == 2


def test_a_profiler_folder_with_one_trace_deep_inside_loads(tmp_path):
    deep = tmp_path / "plugins" / "profile" / "2026_12_02"
    deep.mkdir(parents=True)
    (deep / "host.trace.json.gz").write_bytes(gzip.compress(_doc(_slice()).encode()))
    assert len(pg.Trace.load(tmp_path).events) == 1


@pytest.mark.parametrize(
    "max_bytes, message",
    [
        (-1, r"got -1"),
        (0, r"got 0"),
        ("10", r"got '10'"),
        (float("nan"), r"got nan"),
        (1e9, r"a positive int of bytes, got 1000000000.0"),
        (True, r"got True"),
    ],
)
def test_max_bytes_must_be_a_positive_int(tmp_path, max_bytes, message):
    path = tmp_path / "t.json"
    path.write_text(_doc(_slice()))
    with pytest.raises(
        ValueError, match=f"^max_bytes must be {message}" if "int" in message else message
    ):
        pg.Trace.load(path, max_bytes=max_bytes)


@pytest.mark.parametrize("value", ["inf", "1e400", "-5", "0", "nan", "lots"])
def test_the_byte_limit_variable_names_itself(tmp_path, monkeypatch, value):
    path = tmp_path / "t.json"
    path.write_text(_doc(_slice()))
    monkeypatch.setenv(MAX_BYTES_VARIABLE, value)  # failed before: inf an OverflowError
    with pytest.raises(ValueError, match=rf"^{MAX_BYTES_VARIABLE}='{value}': not a number of"):
        pg.Trace.load(path)


# -- the command line --------------------------------------------------------------------------


def _cli_files(tmp: Path) -> dict[str, str]:
    good = tmp / "good.json"
    good.write_text(_doc(_slice(name="net1/a"), _slice(name="net2/a", tid=2)))
    (tmp / "folder").mkdir()
    return {"GOOD": str(good), "TMP": str(tmp), "FOLDER": str(tmp / "folder")}


CLI = [
    (["explain", "TMP/nope.json"], r"explain: error: .*nope.json: No such file"),
    (["explain", "GOOD", "--branch", "nosuch"], r"no op events for scope 'nosuch'"),
    (["explain", "GOOD", "--branch", "lane:"], r"no op events for lane ''"),
    (["explain", "GOOD", "--branch", "op:["], r"no op events for op '\['"),
    (["plot", "GOOD", "--t0", "5", "--t1", "1", "--out", "TMP/p.png"], r"empty zoom window"),
    (["plot", "GOOD", "--t0", "nan", "--out", "TMP/p.png"], r"zoom t0=nan: must be a finite"),
    (["plot", "GOOD", "--t1", "inf", "--out", "TMP/p.png"], r"zoom t1=inf: must be a finite"),
    (["plot", "GOOD", "--out", "TMP/p.xyz"], r"p.xyz: unknown picture format 'xyz'"),
    (["plot", "GOOD", "--out", "GOOD/p.png"], r"good.json/p.png: a part of the path is not a"),
    (["plot", "GOOD", "--out", "FOLDER"], r"folder: is a folder; give a file name"),
    (["compare", "GOOD"], r"compare needs at least two trace files"),
    (["compare", "GOOD", "GOOD", "--labels", "a", "--out", "TMP/c.png"], r"1 labels for 2"),
    (["compare", "GOOD", "TMP/nope.json", "--out", "TMP/c.png"], r"nope.json: No such file"),
    (["compare", "GOOD", "GOOD", "--out", "FOLDER"], r"is a folder; give a file name"),
    (  # failed before: --address was dropped silently and the run used threads
        ["run", "--size", "tiny", "--address", "tcp://127.0.0.1:1"],
        r"--address 'tcp://127.0.0.1:1' is a Dask scheduler's: it needs --executor dask",
    ),
    (["sweep", "--size", "tiny", "--inter", ""], r"--inter needs thread counts >= 1"),
    (["sweep", "--size", "tiny", "--inter", ",,"], r"--inter needs thread counts"),
    (["sweep", "--size", "tiny", "--inter", "1,x"], r"--inter takes comma-separated integers"),
    (["sweep", "--size", "gigantic"], r"unknown size 'gigantic'"),
    (["sweep", "--size", ""], r"grid\['size'\] is empty"),
    (  # failed before: numpy's "expected non-negative integer", no argument named
        ["sweep", "--size", "tiny", "--seed", "-1"],
        r"sweep\(seed=-1\): need seed >= 0, a whole number",
    ),
    (["demo", "--size", "tiny", "--out", "GOOD"], r"good.json"),
]


@pytest.mark.parametrize("argv, message", CLI, ids=[" ".join(r[0])[:40] for r in CLI])
def test_bad_command_lines_exit_2_with_one_line(tmp_path, capsys, argv, message):
    files = _cli_files(tmp_path)
    argv = [re.sub(r"GOOD|TMP|FOLDER", lambda m: files[m.group()], a) for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert re.search(message, lines[0]), lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--inter", "two"],
        ["run", "--inter", "-1"],
        ["run", "--inter", "99999"],
        ["run", "--repeats", "0"],
        ["run", "--warmup", "-1"],
        ["run", "--streams", "0"],
        ["plot", "x.json", "--t0", "x"],
        ["sweep", "--repeats", "0"],
        ["demo", "--repeats", "0"],
        ["frobnicate"],
        [],
    ],
)
def test_arguments_argparse_refuses_exit_2_with_one_line(capsys, argv):
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "error:" in err[-1] and "Traceback" not in "".join(err)


def test_plot_into_folders_not_there_yet_and_as_svg(tmp_path, capsys):
    files = _cli_files(tmp_path)
    assert main(["plot", files["GOOD"], "--out", str(tmp_path / "new" / "deep" / "p.png")]) == 0
    assert (tmp_path / "new" / "deep" / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["plot", files["GOOD"], "--out", str(tmp_path / "p.svg")]) == 0
    assert "<svg" in (tmp_path / "p.svg").read_text()[:400]


# -- configs, sessions, simulate, plots --------------------------------------------------------

CONFIGS = [
    ({"inter_op_threads": "2"}, ValueError, r"inter_op_threads must be an int >= 0, got '2'"),
    ({"inter_op_threads": 2.0}, ValueError, r"got 2.0"),
    ({"inter_op_threads": float("nan")}, ValueError, r"got nan"),
    ({"inter_op_threads": True}, ValueError, r"got True"),
    ({"intra_op_threads": -1}, ValueError, r"intra_op_threads must be an int >= 0, got -1"),
    ({"streams": 0}, ValueError, r"streams must be an int >= 1, got 0"),
    ({"executor": "THREADS"}, ValueError, r"executor must be one of .* got 'THREADS'"),
    ({"executor": None}, ValueError, r"got None"),
    ({"executor": ["threads"]}, ValueError, r"got \['threads'\]"),
    ({"stream_policy": 1}, ValueError, r"stream_policy must be one of"),
    ({"matmul_kernel": {}}, ValueError, r"matmul_kernel must be one of"),
    ({"soft_placement": "no"}, ValueError, r"soft_placement must be True or False, got 'no'"),
    ({"fuse": "false"}, ValueError, r"fuse must be True or False, got 'false'"),
    ({"fuse": None}, ValueError, r"got None"),
    ({"cuda_graph": 2}, ValueError, r"cuda_graph must be True or False, got 2"),
    ({"executor": "dask", "dask_address": 5}, ValueError, r"dask_address must be a scheduler"),
    ({"executor": "dask", "dask_placement": {"n": -1}}, ValueError, r"must map scope names"),
    ({"executor": "dask", "dask_placement": ["n"]}, ValueError, r"must map scope names"),
    ({"threads": 2}, TypeError, r"unknown setting 'threads'"),
    ({"inter_op_threads": 1, "inter_op_parallelism_threads": 2}, TypeError, r"twice"),
]


@pytest.mark.parametrize("settings, kind, message", CONFIGS, ids=[str(r[0])[:40] for r in CONFIGS])
def test_bad_configs_name_the_setting(settings, kind, message):
    with pytest.raises(kind, match=message):
        pg.Config(**settings)
    with pytest.raises(kind, match=message):
        pg.Config().replace(**settings)


def test_numpy_ints_are_thread_counts_and_an_alias_twice_is_refused_by_replace():
    config = pg.Config(inter_op_threads=np.int64(2), streams=np.uint8(3))
    assert config.inter_op_threads == 2 and type(config.inter_op_threads) is int
    assert config.streams == 3 and type(config.streams) is int
    with pytest.raises(TypeError, match=r"replace got 'inter_op_threads' twice"):
        pg.Config().replace(inter_op_threads=1, inter_op_parallelism_threads=2)  # was: 2, quietly


def _placeholder_graph() -> tuple[pg.Graph, object, object]:
    graph = pg.Graph("hunt")
    with graph.as_default():
        x = pg.placeholder((2, 3), name="x")
        y = pg.tanh(pg.add(x, x))
    return graph, x, y


def _run(feed: dict, fetch: str = "y"):
    graph, x, y = _placeholder_graph()
    with pg.Session(graph, pg.Config(inter_op_threads=1, intra_op_threads=1)) as session:
        return session.run(
            {"y": y, "x": x}[fetch], feed_dict={x if k == "x" else k: v for k, v in feed.items()}
        )


ONES = np.ones((2, 3), np.float32)
FEEDS = [
    ({}, r"placeholder 'x' .* needs a value: pass it in feed_dict"),
    ({"x": np.ones((3, 2), np.float32)}, r"shape \[3, 2\] does not match the tensor's shape"),
    ({"x": np.ones((2, 3), np.complex64)}, r"dtype complex64 cannot become float32"),
    ({"x": "hello"}, r"dtype <U5 cannot become float32"),
    ({"x": np.array([[None] * 3] * 2)}, r"dtype object cannot become float32"),
    ({"x": [[1, 2, 3], [4, 5]]}, r"cannot read it as an array"),
    ({"x": np.float32(1)}, r"shape \[\] does not match"),
    ({"nope": ONES}, r"graph 'hunt' has no op named 'nope'"),
    ({5: ONES}, r"cannot fetch 5 \(int\)"),
]


@pytest.mark.parametrize("feed, message", FEEDS, ids=[str(list(r[0]))[:30] for r in FEEDS])
def test_bad_feeds_are_graph_errors_before_anything_runs(feed, message):
    with pytest.raises(pg.GraphError, match=message):
        _run(feed)


def test_odd_but_valid_feeds_give_the_right_values():
    expected = np.tanh(2 * ONES)
    assert np.array_equal(_run({"x": [[1, 1, 1], [1, 1, 1]]}), expected)  # a list
    assert np.array_equal(_run({"x": np.ones((3, 2), np.float32).T}), expected)  # strided
    readonly = ONES.copy()
    readonly.setflags(write=False)
    assert np.array_equal(_run({"x": readonly}), expected)
    assert np.array_equal(_run({"x": np.ones((2, 3))}), expected)  # float64 becomes float32
    assert np.isnan(_run({"x": np.full((2, 3), np.nan, np.float32)})).all()
    assert (_run({"x": np.full((2, 3), -np.inf, np.float32)}) == -1).all()


def test_session_misuse_is_one_clear_error():
    graph, x, y = _placeholder_graph()
    _, _, y_other = _placeholder_graph()
    session = pg.Session(graph, pg.Config(inter_op_threads=1))
    try:
        with pytest.raises(pg.GraphError, match=r"belongs to graph 'hunt', but this session"):
            session.run(y_other, feed_dict={x: ONES})
        # The two graphs have one name: the message says they are still two graphs.
        with pytest.raises(pg.GraphError, match=r"another graph of the same name"):
            session.run(y_other, feed_dict={x: ONES})
        for fetch, message in [(None, "cannot fetch None"), (5, "cannot fetch 5"), ({y}, r"set")]:
            with pytest.raises(pg.GraphError, match=message):
                session.run(fetch, feed_dict={x: ONES})
        with pytest.raises(pg.GraphError, match=r"'x:7': op 'x' .* has one output"):
            session.run("x:7")
        assert session.run([]) == []
    finally:
        session.close()
    session.close()  # twice is fine
    with pytest.raises(RuntimeError, match=r"this Session is closed; create a new one"):
        session.run(y, feed_dict={x: ONES})
    with pytest.raises(TypeError, match=r"takes a pg.Config, not dict"):
        pg.Session(graph, {"inter_op_threads": 2})
    with pytest.raises(TypeError, match=r"takes a pg.Graph, not str"):
        pg.Session("graph")


@pytest.fixture(scope="module")
def real_trace() -> pg.Trace:
    return pg.Trace.load(REAL / "tf_seed_inter2.ctf.json")


CALLS = [
    (
        "simulate-config-dict",
        lambda t: pg.simulate(t, {"inter_op_threads": 2}),
        TypeError,
        "must be a pg.Config",
    ),
    (
        "simulate-cores-0",
        lambda t: pg.simulate(t, cores=0),
        ValueError,
        r"cores=0\): cores must be",
    ),
    ("simulate-cores-str", lambda t: pg.simulate(t, cores="2"), ValueError, r"cores='2'"),
    ("simulate-cores-2.5", lambda t: pg.simulate(t, cores=2.5), ValueError, r"cores=2.5"),
    (
        "simulate-a-path",
        lambda t: pg.simulate("trace.json"),
        TypeError,
        r"replays a Trace, got str",
    ),
    (
        "overlap-unknown",
        lambda t: t.overlap("net1", "zzz"),
        ValueError,
        r"no op events for scope 'zzz'",
    ),
    ("explain-unknown", lambda t: t.explain("net1", "zzz"), ValueError, r"no op events for scope"),
    # failed before: the whole run as one idle gap of a lane that is not there
    ("idle-gaps-no-lane", lambda t: t.idle_gaps_ms("nolane"), ValueError, r"no lane 'nolane'"),
    (
        "plot-t0-nan",
        lambda t: t.plot(t0=float("nan")),
        ValueError,
        r"zoom t0=nan: must be a finite",
    ),
    ("plot-t1-word", lambda t: t.plot(t1="soon"), ValueError, r"zoom t1='soon': must be a finite"),
    ("plot-t0-equals-t1", lambda t: t.plot(t0=1, t1=1), ValueError, r"empty zoom window"),
    ("compare-nothing", lambda t: pg.plot.compare([]), ValueError, r"needs at least one trace"),
    # failed before: AttributeError: 'str' object has no attribute 'all_lanes'
    (
        "compare-paths",
        lambda t: pg.plot.compare(["a.json", "b.json"]),
        TypeError,
        r"compare takes Traces",
    ),
    ("compare-a-path", lambda t: pg.plot.compare("a.json"), TypeError, r"got str 'a' as trace 0"),
    (
        "compare-labels-short",
        lambda t: pg.plot.compare([t, t], labels=["a"]),
        ValueError,
        r"2 traces but 1",
    ),
    (
        "save-to-a-folder",
        lambda t: t.save(Path(__file__).parent),
        OSError,
        r"is a folder; give a file",
    ),
]


@pytest.mark.parametrize("call, kind, message", [r[1:] for r in CALLS], ids=[r[0] for r in CALLS])
def test_bad_calls_on_a_trace_name_the_argument(real_trace, call, kind, message):
    import matplotlib.pyplot as plt

    with pytest.raises(kind, match=message) as caught:
        call(real_trace)
    assert not isinstance(caught.value, BAD_TYPES) and "\n" not in str(caught.value)
    plt.close("all")


def test_odd_but_valid_calls_on_a_trace(real_trace):
    import matplotlib.pyplot as plt

    assert real_trace.overlap("net1", "net1") == 1.0
    assert real_trace.idle_gaps_ms(real_trace.lanes[0]) is not None
    assert pg.plot.compare([real_trace]) is not None
    assert pg.plot.compare([real_trace, real_trace], labels=[1, 2]) is not None
    assert real_trace.plot(t0=1e6, t1=1e6 + 1) is not None  # a window after the run: empty
    plt.close("all")
    assert len(pg.simulate(real_trace, cores=10**9).ops()) == len(real_trace.ops())


# -- sweeps: every wrong argument is refused before a session opens -----------------------------

SWEEPS = [
    ({"grid": {"inter": []}}, ValueError, r"grid\['inter'\] is empty"),
    ({"grid": {"frobs": [1]}}, ValueError, r"grid key 'frobs' is no preset parameter or Config"),
    ({"grid": {"size": "tiny"}}, TypeError, r"grid\['size'\] must be a list of values, got 'tiny'"),
    ({"grid": {"inter": 2}}, TypeError, r"grid\['inter'\] must be a list of values, got 2"),
    (
        {"grid": [("inter", [1])]},
        TypeError,
        r"sweep's grid maps names to lists of values, got list",
    ),
    (
        {"grid": {"inter": list(range(1, 1001)), "intra": list(range(1, 1001))}},
        ValueError,  # failed before: opened a session per cell, a million of them
        r"the grid has 1,000,000 cells, more than 1,024",
    ),
    ({"repeats": "2"}, ValueError, r"sweep\(repeats='2'\): need repeats >= 1"),
    ({"repeats": 1.5}, ValueError, r"sweep\(repeats=1.5\)"),
    ({"repeats": float("nan")}, ValueError, r"sweep\(repeats=nan\)"),
    ({"repeats": 0}, ValueError, r"need repeats >= 1"),
    ({"warmup": -1}, ValueError, r"sweep\(warmup=-1\): need warmup >= 0"),
    ({"seed": -1}, ValueError, r"sweep\(seed=-1\): need seed >= 0"),
    ({"seed": 1.5}, ValueError, r"sweep\(seed=1.5\)"),
    ({"precision": 0}, ValueError, r"sweep\(precision=0\): a fraction between 0 and 1"),
    ({"precision": 2}, ValueError, r"sweep\(precision=2\)"),
    ({"build": "nosuch"}, ValueError, r"unknown preset 'nosuch'"),
    ({"grid": {"size": ["tiny"], "inter": [-1]}}, ValueError, r"inter_op_threads must be an int"),
    ({"grid": {"size": ["gigantic"]}}, ValueError, r"unknown size 'gigantic'"),
    ({"baseline": {"inter": 7}}, ValueError, r"\{'inter': 7\} matches 0 cells"),
]


@pytest.mark.parametrize("change, kind, message", SWEEPS, ids=[str(r[0])[:40] for r in SWEEPS])
def test_bad_sweeps_are_refused_naming_the_argument(change, kind, message):
    arguments = {
        "build": "two-networks",
        "grid": {"size": ["tiny"], "inter": [1]},
        "repeats": 1,
        "progress": False,
        "noise_check": False,
        **change,
    }
    start = time.perf_counter()
    with pytest.raises(kind, match=message) as caught:
        pg.sweep(arguments.pop("build"), arguments.pop("grid"), **arguments)
    assert time.perf_counter() - start < 10
    assert not isinstance(caught.value, BAD_TYPES) and "\n" not in str(caught.value)


def test_odd_but_valid_sweep_grids():
    tiny = {"repeats": 1, "progress": False, "noise_check": False, "predict": False}
    assert (
        len(pg.sweep("two-networks", {"size": ("tiny",), "inter": range(1, 3)}, **tiny).cells) == 2
    )
    assert (
        len(pg.sweep("two-networks", {"size": ["tiny"], "inter": np.array([1])}, **tiny).cells) == 1
    )
    with pytest.raises(TypeError, match=r"nothing to fetch: a build function returns"):
        pg.sweep(lambda **_: None, {"inter": [1]}, **tiny)


# -- the dashboard, headless -------------------------------------------------------------------


def _branches(batch: int = 8, width: int = 16, branches: int = 2):
    outputs = []
    for index in range(branches):
        with pg.scope(f"b{index}"):
            x = pg.random_normal((batch, width), seed=index)
            outputs.append(pg.tanh(pg.matmul(x, pg.variable((width, width), name="w"))))
    return pg.add_n(outputs)


def test_dashboard_refuses_odd_controls_naming_the_parameter():
    pytest.importorskip("ipywidgets")
    for abbreviation, message in [
        ([], r"_branches\(\) parameter width=\[\]: no values"),  # failed before: ran with None
        ((64, 8), r"parameter width=\(64, 8\): value must be between min and max"),
        (float("nan"), r"parameter width=nan: value must be between"),
    ]:
        with pytest.raises(ValueError, match=message):
            pg.dashboard(_branches, width=abbreviation)
    with pytest.raises(TypeError, match=r"_branches\(\) has no parameter\(s\) \['nosuch'\]"):
        pg.dashboard(_branches, nosuch=(1, 3))
    with pytest.raises(ValueError, match=r"inter_op_threads must be at most 1024"):
        pg.dashboard(_branches, inter_op_threads=99_999)
    with pytest.raises(ValueError, match=r"timeline must be 'auto', 'png' or 'interactive'"):
        pg.dashboard(_branches, timeline="ascii")


def test_dashboard_controls_clamp_names_and_a_closed_dashboard_stays_closed():
    pytest.importorskip("ipywidgets")
    dash = pg.dashboard(_branches, batch=(1, 64), repeats=1)
    try:
        with pytest.raises(KeyError, match=r"no control 'nope'; the controls: \['batch'"):
            dash.controls["nope"]  # failed before: a bare KeyError: 'nope'
        for name, value, seen in [("batch", 10**9, 64), ("batch", -5, 1), ("repeats", 0, 1)]:
            dash.controls[name].value = value  # sliders clamp, as in a browser
            assert dash.controls[name].value == seen
        dash.stop()  # stopping or waiting with nothing running is harmless
        assert dash.wait(timeout=1) is None
        dash.run()
        dash.wait(timeout=60)
        assert dash.ending == "done" and dash.result.params["batch"] == 1
    finally:
        dash.close()
    with pytest.raises(RuntimeError, match=r"this dashboard is closed"):
        dash.run()  # failed before: it reopened a session nothing would close
    dash.controls["batch"].value = 8  # after close, a change starts nothing
    assert not dash._busy


def test_dashboard_build_that_fails_or_returns_nothing_says_so():
    pytest.importorskip("ipywidgets")
    for build, message in [
        (lambda batch=8: 1 / 0, r"failed: ZeroDivisionError: division by zero"),
        (lambda batch=8: None, r"failed: TypeError: nothing to fetch: .* not None"),
    ]:
        dash = pg.dashboard(build, batch=(1, 8), repeats=1)
        try:
            dash.run()
            dash.wait(timeout=60)
            assert dash.ending == "failed" and re.search(message, dash.status), dash.status
        finally:
            dash.close()


# -- size: a thread or a scope per event, deep nesting, wide fan-in -----------------------------

BIG = [
    # failed before: explain() over a minute (all n²/2 pairs of 5,000 threads made and sorted,
    # each lane's idle gaps finding the trace's start and end anew)
    ("thread-per-event-5000", [_slice(name=f"o{i}", tid=i, ts=i % 7) for i in range(5000)]),
    ("process-per-event-5000", [_slice(name=f"o{i}", pid=i, ts=i % 7) for i in range(5000)]),
    ("scope-per-event-2000", [_slice(name=f"s{i}/op", tid=i % 2, ts=i) for i in range(2000)]),
    (  # failed before: ~40 s in explain(), each nested op walked its 1,500 parents per pair
        "fan-in-6000-nested",
        [_slice(name=f"o{i}", tid=i % 4) for i in range(6000)]
        + [_slice(name="sink", tid=9, ts=5)]
        + [_flow("s", i, i % 4, 0.5) for i in range(6000)]
        + [_flow("f", i, 9, 5) for i in range(6000)],
    ),
    (
        "nested-3000-deep",
        [_slice(name=f"n{i}", ts=i * 1e-3, dur=10 - i * 2e-3) for i in range(3000)],
    ),
]


@pytest.mark.parametrize("events", [r[1] for r in BIG], ids=[r[0] for r in BIG])
def test_wide_and_deep_traces_load_explain_and_replay_in_seconds(tmp_path, events):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"traceEvents": events}))
    start = time.perf_counter()
    trace = pg.Trace.load(path)
    report = trace.explain()
    assert pg.simulate(trace, pg.Config(inter_op_threads=2)).ops()
    took = time.perf_counter() - start
    assert took < 20, f"{took:.1f} s"
    assert report.omitted_pairs >= 0 and len(report.pairs) <= 120


def test_the_first_pairs_are_those_all_pairs_sorted_would_give():
    from parallelgraph.explain import _largest_pairs

    class Branch:
        def __init__(self, index: int, busy: int):
            self.index, self.busy_ns = index, busy

    rng = random.Random(22)
    for _ in range(1500):
        chosen = [
            Branch(i, rng.choice([0, 1, 2, 3, rng.randint(0, 9)]))
            for i in range(rng.randint(0, 12))
        ]
        limit = rng.randint(1, 70)
        every = itertools.combinations(chosen, 2)
        expected = sorted(every, key=lambda pair: -min(b.busy_ns for b in pair))[:limit]
        assert _largest_pairs(chosen, limit) == expected
