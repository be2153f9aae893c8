"""Result files: what a sweep's files hold, exports that never damage what they replace, and
loaders that refuse a damaged file by its path (a generator of damaged files with the right
answer known by construction, run over `SweepResult.load` and `Trace.load`)."""

from __future__ import annotations

import contextlib
import csv
import errno
import json
import os
import resource
import signal
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from damaged_files import EITHER, LOADS, REFUSED, damaged, write_case

import parallelgraph as pg
from parallelgraph.cli import main
from parallelgraph.experiments.machine_load import MachineLoad
from parallelgraph.experiments.sweeps import SweepResult, SweepRun
from parallelgraph.saving import write_file

REAL = Path(__file__).parent / "fixtures" / "real"
GRID = {"size": ["tiny"], "inter": [1, 2], "intra": [1, 2]}


def made_result(repeats: int = 8, seed: int = 3) -> SweepResult:
    """A sweep result built from seeded numbers (sub-millisecond makespans), no runs needed."""
    rng = np.random.default_rng(seed)
    cells = [{"size": "tiny", "inter": i, "intra": j} for i in (1, 2) for j in (1, 2)]
    runs = [
        SweepRun(cell, r, p, float(0.2 + 0.01 * cell + rng.normal(0, 0.004)), 0.3)
        for r in range(repeats)
        for p, cell in enumerate(rng.permutation(4).tolist())
    ]
    machine = MachineLoad(1.5, 2, 0.9, 0.1, 0.0, (0.5, 0.4, 0.3), (0.6, 0.4, 0.3))
    return SweepResult(
        dict(GRID), cells, runs, seed=seed, noise={"relative_iqr": 0.04},
        notes=["a note"], predicted_ms={0: 0.2, 3: 0.15}, machine=machine,
    )  # fmt: skip


def same_core(loaded: SweepResult, original: SweepResult) -> bool:
    core = ("grid", "cells", "measurements", "baseline", "complete", "seed")
    return all(getattr(loaded, name) == getattr(original, name) for name in core)


def used(result: SweepResult, tmp_path: Path) -> None:
    """What a user does with a loaded result: none of it may fail."""
    str(result), result._repr_html_(), result.rows()
    result.to_csv(tmp_path / "used.csv")
    SweepResult.load(result.to_json(tmp_path / "used.json"))


# -- what the files hold --------------------------------------------------------------------
def test_the_json_holds_each_cells_median_interval_speedup_and_verdict(tmp_path):
    result = made_result()
    document = json.loads(result.to_json(tmp_path / "r.json").read_text())
    summary = {record["cell"]: record for record in document["summary"]}
    for row in result.rows():
        record = summary[row.cell]
        assert record["params"] == row.params and record["n"] == row.n == 8
        assert record["median_ms"] == row.median_ms and record["ci_ms"] == list(row.ci_ms)
        assert record["speedup"] == row.speedup and record["speedup_ci"] == list(row.speedup_ci)
        assert record["verdict"] == row.verdict
    assert len(document["measurements"]) == 32  # the raw runs stay beside the summary


def test_the_csv_holds_each_runs_cell_summary_beside_the_run(tmp_path):
    result = made_result()
    with open(result.to_csv(tmp_path / "r.csv"), newline="") as handle:
        lines = list(csv.DictReader(handle))
    rows = {row.cell: row for row in result.rows()}
    assert len(lines) == 32
    for line, run in zip(lines, result.measurements):
        row = rows[run.cell]
        assert float(line["makespan_ms"]) == pytest.approx(run.makespan_ms, abs=1e-6)
        assert float(line["cell_median_ms"]) == row.median_ms
        assert (float(line["cell_ci_low_ms"]), float(line["cell_ci_high_ms"])) == row.ci_ms
        assert float(line["speedup"]) == row.speedup and line["verdict"] == row.verdict


def test_too_few_runs_are_null_in_the_json_empty_in_the_csv_and_said_in_the_table(tmp_path):
    result = made_result(repeats=5)
    document = json.loads(result.to_json(tmp_path / "r.json").read_text())
    assert all(record["ci_ms"] == [None, None] for record in document["summary"])
    assert "NaN" not in (tmp_path / "r.json").read_text()
    with open(result.to_csv(tmp_path / "r.csv"), newline="") as handle:
        line = next(csv.DictReader(handle))
    assert line["cell_ci_low_ms"] == "" and line["verdict"] == "too few runs"
    header, lines = result.table()
    ci = header.index("95% CI ms")
    assert all(line[ci] == "too few runs" for line in lines)
    assert "nan" not in str(result)


def test_the_table_prints_sub_millisecond_spreads_to_the_digits_that_differ():
    result = made_result()
    header, lines = result.table()
    for line, row in zip(lines, result.rows()):
        for column, (low, high) in (("IQR ms", row.iqr_ms), ("95% CI ms", row.ci_ms)):
            shown_low, shown_high = line[header.index(column)].split("-")
            assert (shown_low != shown_high) == (low != high), line
            assert float(shown_low) == pytest.approx(low, rel=0.01)
        assert float(line[header.index("median ms")]) == pytest.approx(row.median_ms, rel=0.005)


def test_files_written_before_the_summary_load_as_they_did(tmp_path):
    result = made_result()
    document = result.to_document()
    for later in ("summary", "notes", "framework", "read_back", "machine"):
        del document[later]
    older = tmp_path / "older.json"
    older.write_text(json.dumps(document))
    loaded = SweepResult.load(older)
    assert same_core(loaded, result) and loaded.rows() == result.rows()


# -- damaged files ----------------------------------------------------------------------------
def _pop(key):
    return lambda document: document.pop(key)


def _set(value, *where):
    def edit(document):
        for step in where[:-1]:
            document = document[step]
        document[where[-1]] = value

    return edit


SWEEP_EDITS = [
    *(
        (f"no {key!r}", _pop(key), REFUSED)
        for key in ("format", "grid", "cells", "measurements", "baseline", "complete", "seed")
    ),
    *(
        (f"no {key!r}", _pop(key), LOADS)
        for key in (
            "noise",
            "notes",
            "predicted_ms",
            "framework",
            "read_back",
            "machine",
            "summary",
        )
    ),
    ("a trace's format", _set("parallelgraph-trace/1", "format"), REFUSED),
    ("grid a list", _set([1, 2], "grid"), REFUSED),
    ("a grid key with no values", _set([], "grid", "inter"), REFUSED),
    ("a grid key with a value", _set(2, "grid", "inter"), REFUSED),
    ("cells not the grid's", _set(7, "cells", 1, "inter"), REFUSED),
    ("a cell missing", lambda d: d["cells"].pop(), REFUSED),
    ("a cell a list", _set([1], "cells", 0), REFUSED),
    ("a run's cell out of range", _set(4, "measurements", 3, "cell"), REFUSED),
    ("a run's cell huge", _set(10**30, "measurements", 3, "cell"), REFUSED),
    ("a run's cell negative", _set(-1, "measurements", 3, "cell"), REFUSED),
    ("a run's cell a float", _set(1.0, "measurements", 3, "cell"), REFUSED),
    ("a run's cell true", _set(True, "measurements", 3, "cell"), REFUSED),
    ("a run's round a text", _set("1", "measurements", 3, "round"), REFUSED),
    ("a run without its time", lambda d: d["measurements"][3].pop("makespan_ms"), REFUSED),
    ("a run with a field more", _set(1, "measurements", 3, "extra"), REFUSED),
    ("a run a list", _set([0, 0, 0, 1.0, 1.0], "measurements", 3), REFUSED),
    ("a time Infinity", _set(float("inf"), "measurements", 3, "makespan_ms"), REFUSED),
    ("a time NaN", _set(float("nan"), "measurements", 3, "wall_ms"), REFUSED),
    ("a time negative", _set(-0.5, "measurements", 3, "makespan_ms"), REFUSED),
    ("a time a text", _set("0.2", "measurements", 3, "makespan_ms"), REFUSED),
    ("measurements an object", _set({}, "measurements"), REFUSED),
    ("baseline out of range", _set(4, "baseline"), REFUSED),
    ("baseline huge", _set(10**30, "baseline"), REFUSED),
    ("baseline a text", _set("0", "baseline"), REFUSED),
    ("complete a text", _set("yes", "complete"), REFUSED),
    ("seed negative", _set(-1, "seed"), REFUSED),
    ("seed a float", _set(1.5, "seed"), REFUSED),
    ("noise a list", _set([], "noise"), REFUSED),
    ("noise's warning a number", _set(3, "noise", "warning"), REFUSED),
    ("notes a text", _set("note", "notes"), REFUSED),
    ("a note a number", _set([3], "notes"), REFUSED),
    ("a prediction for no cell", _set({"9": 1.0}, "predicted_ms"), REFUSED),
    ("a prediction keyed by a text", _set({"first": 1.0}, "predicted_ms"), REFUSED),
    ("a prediction a text", _set({"0": "fast"}, "predicted_ms"), REFUSED),
    ("an unknown framework", _set("tensorflöw", "framework"), REFUSED),
    ("a framework a number", _set(3, "framework"), REFUSED),
    ("read-back not an object", _set({"0": 3}, "read_back"), REFUSED),
    ("machine a list", _set([1], "machine"), REFUSED),
    ("machine's cores a text", _set("two", "machine", "cores"), REFUSED),
    ("machine's load averages short", _set([1], "machine", "loadavg_start"), REFUSED),
    ("machine without cores", lambda d: d["machine"].pop("cores"), REFUSED),
    ("the summary garbage", _set("garbage", "summary"), LOADS),
    ("the summary edited", _set(99.0, "summary", 0, "median_ms"), LOADS),
]


def check_case(case, path, load, original=None, same=lambda a, b: True, use=lambda r: None):
    """Load the case at `path` and hold it to what the case expects."""
    try:
        loaded = load(path)
        use(loaded)
    except ValueError as problem:
        assert case.expect != LOADS, f"{case.name}: refused: {problem}"
        assert str(problem).startswith(str(path)), f"{case.name}: {problem}"
        return
    assert case.expect != REFUSED, f"{case.name}: loaded"
    if case.expect == LOADS:
        assert same(loaded, original), case.name


def test_every_damaged_sweep_file_is_refused_by_its_path_or_loads_whole(tmp_path):
    result = made_result()
    good = result.to_json(tmp_path / "good.json").read_bytes()
    cases = list(damaged(good, SWEEP_EDITS, seed=42))
    assert len(cases) > 200 and {c.expect for c in cases} == {REFUSED, LOADS, EITHER}
    for number, case in enumerate(cases):
        path = tmp_path / f"case{number}.json"
        write_case(case, path)
        check_case(case, path, SweepResult.load, result, same_core, lambda r: used(r, tmp_path))


def test_every_damaged_trace_file_is_refused_by_its_path_or_loads(tmp_path):
    trace = pg.Trace.load(REAL / "tf_seed_inter2.ctf.json")
    good = trace.save(tmp_path / "good.json").read_bytes()
    trace_edits = [
        ("no traceEvents", lambda d: d.pop("traceEvents"), REFUSED),
        ("traceEvents a text", _set("x", "traceEvents"), REFUSED),
        ("no otherData", lambda d: d.pop("otherData"), EITHER),
    ]

    def use(loaded):
        loaded.events, loaded.makespan_ms, loaded.summary(), loaded.memory()

    def same(loaded, original):
        return loaded.events == original.events

    for number, case in enumerate(damaged(good, trace_edits, seed=42)):
        path = tmp_path / f"case{number}.json"
        write_case(case, path)
        check_case(case, path, pg.Trace.load, trace, same, use)


def test_a_sweep_file_that_is_missing_or_a_trace_says_so_by_its_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^\S*nope.json: cannot be read"):
        SweepResult.load(tmp_path / "nope.json")
    trace = pg.Trace.load(REAL / "tf_seed_inter2.ctf.json").save(tmp_path / "t.json")
    with pytest.raises(ValueError, match=r"t.json: not a parallelgraph sweep result \(JSON dict"):
        SweepResult.load(trace)


# -- exports that fail never change what they would replace ----------------------------------
@contextlib.contextmanager
def small_files_only():
    """Writes past 4 KiB fail with EFBIG (as on a full disk), for this process, inside the
    block only: the limit covers every file the process writes, pytest's own output too, so it
    must never span a moment when pytest reports (a fixture would span the test's result line,
    and a log past 4 KiB then fails pytest itself). Streams are flushed before it starts."""
    sys.stdout.flush()
    sys.stderr.flush()
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, old_limit[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)


LIMIT = 4096


def exports():
    """(name, export to a path) of every file a result is written to, each over LIMIT bytes."""
    big = made_result(repeats=40)
    trace = pg.Trace.load(REAL / "tf_seed_inter2.ctf.json")
    return [("json", big.to_json), ("csv", big.to_csv), ("trace", trace.save)]


def test_an_export_that_fails_half_way_leaves_the_old_file_byte_for_byte(tmp_path):
    for name, export in exports():
        path = tmp_path / f"old.{name}"
        old = bytes(range(256)) * 8  # half the limit: this one is written whole
        path.write_bytes(old)
        with pytest.raises(OSError, match=rf"^{path}: writing failed; the file was left") as err:
            with small_files_only():
                export(path)
        assert err.value.errno == errno.EFBIG
        assert path.read_bytes() == old, name
        assert sorted(p.name for p in tmp_path.iterdir()) == [path.name], "no temporary left"
        path.unlink()


def test_a_writer_raising_half_way_leaves_the_old_file_byte_for_byte(tmp_path):
    path = tmp_path / "kept.csv"
    path.write_bytes(b"old,contents\n1,2\n")

    def half_then_fail(file):
        file.write(b"new,contents\n" * 1000)
        raise RuntimeError("the serializer failed")

    with pytest.raises(RuntimeError, match="serializer"):
        write_file(path, half_then_fail)
    assert path.read_bytes() == b"old,contents\n1,2\n" and len(list(tmp_path.iterdir())) == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_device_is_an_error_naming_the_path():
    for _, export in exports():
        with pytest.raises(OSError, match=r"^/dev/full: writing failed \(No space left"):
            export("/dev/full")


def test_an_export_to_a_fifo_without_reader_is_refused_at_once(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    outcome = []

    def export():
        try:
            made_result().to_json(fifo)
        except OSError as problem:
            outcome.append(str(problem))

    writer = threading.Thread(target=export, daemon=True)
    writer.start()
    writer.join(10)
    if writer.is_alive():  # blocked opening the FIFO: let it go before failing
        with open(fifo, "rb") as pipe:
            pipe.read()
        writer.join(10)
    assert outcome == [f"{fifo}: a FIFO with no reader; nothing was written"]
    assert fifo.exists() and not fifo.is_file()


# -- the CLI's sweep --out --------------------------------------------------------------------
@pytest.mark.parametrize("name", ["results.csv", "results.json", "results"])
def test_sweep_out_writes_a_json_and_a_csv_never_one_over_the_other(tmp_path, capsys, name):
    argv = ["sweep", "--size", "tiny", "--inter", "1,2", "--intra", "1", "--repeats", "1"]
    assert main([*argv, "--warmup", "0", "--out", str(tmp_path / name)]) == 0
    document = tmp_path / ("results.json" if name == "results.csv" else name)
    table = tmp_path / "results.csv"
    picture = tmp_path / "results-tiny-heatmap.png"
    loaded = SweepResult.load(document)
    assert len(loaded.measurements) == 2 and loaded.grid["inter"] == [1, 2]
    with open(table, newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 2
    assert picture.read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [document.name, table.name, picture.name]
    )
    wrote = capsys.readouterr().out.splitlines()[-1]
    assert wrote == f"wrote {document}, {table} and {picture}"
