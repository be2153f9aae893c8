"""Sweep result files: JSON and CSV out through the safe writer, JSON back in, checked.

What a file holds. `SweepResult.to_json` writes every measurement (each run's makespan, wall
time, round and position) and, beside them, what a reader came for: a `summary` with each
measured cell's median, IQR, 95% CI, speed-up against its baseline cell with its CI, verdict and
prediction (`SweepRow`'s fields). A number that does not exist -- the CI of fewer than
`stats.MIN_RUNS` runs -- is null, never NaN (which JSON does not have). `to_csv` writes one row
per measurement with its cell's summary in the columns after the raw ones (`CSV_COLUMNS`), so
a spreadsheet sees both. The summary is derived: `load` recomputes it from the measurements
(the seed makes the bootstrap the same), so files written before it existed load as they did.

Writing goes through `saving.write_file`: the text is made first, then written to a temporary
file that replaces the old one only once complete, so a failed export never leaves a truncated
file where a good one was; a FIFO is streamed (refused at once when nobody reads it); every error
of the file system starts with the path.

Reading checks what it reads, as `Trace.load` does: a file that is not UTF-8, not JSON, truncated,
empty, a folder, JSON of another kind, a missing or ill-typed field, a cell index out of range,
cells that are not the grid's, a time that is not a finite number >= 0 -- each is a ValueError
that starts with the path and says which field is wrong and how. A result that loads is one whose
table, rows and pictures work.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..saving import write_bytes
from .machine_load import MachineLoad

if TYPE_CHECKING:
    from .sweeps import SweepResult, SweepRow

FORMAT = "parallelgraph-sweep/1"
#: The fields of a measurement (`SweepRun`) in a file.
RUN_FIELDS = ("cell", "round", "position", "makespan_ms", "wall_ms")


# -- writing ------------------------------------------------------------------------------------
def _number(value: float | None) -> float | None:
    """A finite number as a float; NaN, infinities and None as None (null in JSON)."""
    return float(value) if value is not None and math.isfinite(value) else None


def summary(result: SweepResult) -> list[dict[str, Any]]:
    """One record per measured cell: its index, grid values and `SweepRow`'s statistics."""
    return [
        {
            "cell": row.cell,
            "params": row.params,
            "n": row.n,
            "median_ms": _number(row.median_ms),
            "iqr_ms": [_number(v) for v in row.iqr_ms],
            "ci_ms": [_number(v) for v in row.ci_ms],
            "speedup": _number(row.speedup),
            "speedup_ci": [_number(v) for v in row.speedup_ci],
            "verdict": row.verdict,
            "predicted_ms": _number(row.predicted_ms),
        }
        for row in result.rows()
    ]


def document(result: SweepResult) -> dict[str, Any]:
    """Everything but the traces, as JSON-ready values."""
    return {
        "format": FORMAT,
        "grid": result.grid,
        "cells": result.cells,
        "baseline": result.baseline,
        "complete": result.complete,
        "seed": result.seed,
        "noise": result.noise,
        "notes": result.notes,
        "predicted_ms": {str(k): v for k, v in result.predicted_ms.items()},
        "framework": result.framework,
        "read_back": {str(k): v for k, v in result.read_back.items()},
        "machine": None if result.machine is None else dataclasses.asdict(result.machine),
        "summary": summary(result),
        "measurements": [dataclasses.asdict(m) for m in result.measurements],
    }


def write_json(result: SweepResult, path: str | Path) -> Path:
    """`document(result)` as JSON at `path`, through `saving.write_file`."""
    return write_bytes(path, json.dumps(document(result), indent=1, default=str).encode())


def _summary_cells(row: SweepRow) -> list[str]:
    numbers = (row.median_ms, *row.ci_ms, row.speedup, *row.speedup_ci)
    return [*("" if _number(v) is None else repr(_number(v)) for v in numbers), row.verdict]


def write_csv(result: SweepResult, path: str | Path) -> Path:
    """Every measurement, one row each: its cell's grid values (columns named by
    `param_columns`), then CSV_COLUMNS: the run's own numbers, then its cell's summary."""
    from .sweeps import CSV_COLUMNS, param_columns

    keys = list(result.grid)
    summaries = {row.cell: _summary_cells(row) for row in result.rows()}
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow([*param_columns(keys, CSV_COLUMNS), *CSV_COLUMNS])
    for m in result.measurements:
        cell = result.cells[m.cell]
        writer.writerow(
            [
                *(cell[k] for k in keys),
                m.round,
                m.position,
                f"{m.makespan_ms:.6f}",
                f"{m.wall_ms:.6f}",
                *summaries[m.cell],
            ]
        )
    return write_bytes(path, text.getvalue().encode())


# -- reading ------------------------------------------------------------------------------------
def read_document(path: str | Path) -> tuple[Any, str]:
    """The parsed JSON of the file at `path` and the path as text; a ValueError starting with
    the path for a folder, an empty file, text that is not UTF-8 or not JSON."""
    source = str(path)
    if not source.strip():
        raise ValueError(f"{source!r}: an empty path; name a sweep result file (.json)")
    try:
        data = Path(path).read_bytes()
    except IsADirectoryError:
        raise ValueError(f"{source}: a folder, not a sweep result file (.json)") from None
    except OSError as problem:  # missing, no permission: the same kind, its text the path's
        named = type(problem)(f"{source}: cannot be read ({problem.strerror or problem})")
        named.errno = problem.errno
        raise named from None
    if not data.strip():
        raise ValueError(f"{source}: the file is empty, not a sweep result")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        raise ValueError(
            f"{source}: not UTF-8 text (byte {problem.start:,} is 0x{data[problem.start]:02x}); "
            "a sweep result is JSON"
        ) from None
    try:
        return json.loads(text), source
    except json.JSONDecodeError as problem:
        raise ValueError(
            f"{source}: not valid JSON at line {problem.lineno}, column {problem.colno} "
            f"({problem.msg}); is the file truncated?"
        ) from None
    except RecursionError:
        raise ValueError(f"{source}: JSON nested too deeply to be a sweep result") from None
    except ValueError as problem:  # an integer of more than 4300 digits
        raise ValueError(f"{source}: not a sweep result's JSON ({problem})") from None


class _Fields:
    """The fields of a sweep document, read one at a time, each checked; every error is a
    ValueError that starts with `source` and names the field (`bad`, `missing`)."""

    def __init__(self, document: Any, source: str) -> None:
        self.source = source
        if not isinstance(document, Mapping) or document.get("format") != FORMAT:
            kind = document.get("format") if isinstance(document, Mapping) else None
            what = f"format {kind!r}" if kind else f"JSON {type(document).__name__}"
            raise ValueError(f"{source}: not a parallelgraph sweep result ({what}, not {FORMAT})")
        self.document = document

    def bad(self, where: str, value: Any, wanted: str) -> ValueError:
        return ValueError(
            f"{self.source}: {where} is {_shown(value)}, not {wanted}; the file is damaged"
        )

    def missing(self, where: str) -> ValueError:
        return ValueError(f"{self.source}: no {where} in the file; the file is damaged")

    def field(self, key: str, kind: type, wanted: str, default: Any = ...) -> Any:
        """The top-level field `key`, an instance of `kind` (a bool only where `kind` is bool);
        an optional one (with a `default`) may be missing or null."""
        if key not in self.document:
            if default is not ...:
                return default
            raise self.missing(repr(key))
        value = self.document[key]
        if default is not ... and value is None:
            return default
        if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
            raise self.bad(key, value, wanted)
        return value

    def whole(self, value: Any, where: str, low: int, high: float = math.inf) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value < high:
            span = f"from {low} to {high - 1}" if high < math.inf else f">= {low}"
            raise self.bad(where, value, f"a whole number {span}")
        return value

    def amount(self, value: Any, where: str, unit: str = "ms") -> float:
        """A finite real number >= 0 (a time in ms, a number of cores, a load average)."""
        real = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not real or not math.isfinite(value) or value < 0:
            raise self.bad(where, value, f"a finite number{' of ' + unit if unit else ''} >= 0")
        return value

    def by_cell(self, key: str, count: int) -> dict[int, Any]:
        """A {"cell index": value} mapping as {int: value}."""
        found = self.field(key, Mapping, "an object of cell indices", default={})
        checked = {}
        for name, value in found.items():
            index = int(name) if name.isdecimal() and len(name) < 20 else -1
            checked[self.whole(index if index >= 0 else name, f"{key} key", 0, count)] = value
        return checked


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _grid(fields: _Fields) -> dict[str, list[Any]]:
    grid = fields.field("grid", Mapping, "an object of grid keys and their values")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise fields.bad(f"grid[{key!r}]", values, "a list of one value or more")
    return dict(grid)


def _cells(fields: _Fields, grid: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    cells = fields.field("cells", list, "a list of cells")
    product = [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]
    if cells != product:
        raise ValueError(
            f"{fields.source}: its {len(cells)} cells are not the {len(product)} cells of its "
            "grid (every combination of the grid's values, in order); the file is damaged"
        )
    return product


def _runs(fields: _Fields, count: int) -> list[dict[str, Any]]:
    runs = fields.field("measurements", list, "a list of measurements")
    checked = []
    for index, run in enumerate(runs):
        where = f"measurements[{index}]"
        if not isinstance(run, Mapping) or set(run) != set(RUN_FIELDS):
            raise fields.bad(where, run, f"an object of {', '.join(RUN_FIELDS)}")
        checked.append(
            {
                "cell": fields.whole(run["cell"], f"{where}.cell", 0, count),
                "round": fields.whole(run["round"], f"{where}.round", 0),
                "position": fields.whole(run["position"], f"{where}.position", 0),
                "makespan_ms": fields.amount(run["makespan_ms"], f"{where}.makespan_ms"),
                "wall_ms": fields.amount(run["wall_ms"], f"{where}.wall_ms"),
            }
        )
    return checked


def _machine(fields: _Fields) -> MachineLoad | None:
    record = fields.field("machine", Mapping, "an object (the machine's load)", default=None)
    if record is None:
        return None
    values = {}
    for spec in dataclasses.fields(MachineLoad):
        where = f"machine.{spec.name}"
        if spec.name not in record:
            if spec.default is dataclasses.MISSING:
                raise fields.missing(where)
            continue
        value = record[spec.name]
        if spec.name.startswith("loadavg"):
            if not isinstance(value, list) or len(value) != 3:
                raise fields.bad(where, value, "three load averages")
            values[spec.name] = tuple(fields.amount(v, where, unit="") for v in value)
        elif spec.name == "cores":
            values[spec.name] = fields.whole(value, where, 1)
        else:
            values[spec.name] = fields.amount(value, where, unit="")
    return MachineLoad(**values)


def _texts(fields: _Fields, key: str) -> list[str]:
    texts = fields.field(key, list, "a list of sentences", default=[])
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise fields.bad(f"{key}[{index}]", text, "a sentence")
    return list(texts)


def _framework(fields: _Fields) -> str | None:
    name = fields.field("framework", str, "a framework's name", default=None)
    if name is not None:
        from ..frameworks.knobs import framework

        try:
            framework(name)
        except ValueError as problem:
            raise ValueError(f"{fields.source}: {problem}; the file is damaged") from None
    return name


def result_fields(document: Any, source: str) -> dict[str, Any]:
    """The fields of a SweepResult from a document `document()` made (older ones, without the
    summary or the later optional fields, too), each checked; a ValueError starting with
    `source` saying what is wrong. Measurements come as records of RUN_FIELDS."""
    fields = _Fields(document, source)
    grid = _grid(fields)
    cells = _cells(fields, grid)
    noise = fields.field("noise", Mapping, "an object (the noise check)", default={})
    if "warning" in noise and not isinstance(noise["warning"], str):
        raise fields.bad("noise.warning", noise["warning"], "a sentence")
    predicted = fields.by_cell("predicted_ms", len(cells))
    for index, value in predicted.items():
        fields.amount(value, f"predicted_ms[{index}]")
    baseline = fields.field("baseline", int, "a cell index")
    read_back = fields.by_cell("read_back", len(cells))
    for index, value in read_back.items():
        if not isinstance(value, Mapping):
            raise fields.bad(f"read_back[{index}]", value, "an object")
    return {
        "grid": grid,
        "cells": cells,
        "measurements": _runs(fields, len(cells)),
        "baseline": fields.whole(baseline, "baseline", 0, len(cells)),
        "complete": fields.field("complete", bool, "true or false"),
        "seed": fields.whole(fields.field("seed", int, "a whole number"), "seed", 0),
        "noise": dict(noise),
        "notes": _texts(fields, "notes"),
        "predicted_ms": predicted,
        "framework": _framework(fields),
        "read_back": read_back,
        "machine": _machine(fields),
    }


__all__ = ["FORMAT", "document", "read_document", "result_fields", "summary"]
