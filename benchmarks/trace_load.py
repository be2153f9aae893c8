"""How long a large trace takes to read, explain and draw: a PyTorch-profiler-shaped file of
about 100 MB (nested aten:: ops under record_function ranges on two threads), plain and gzip.

    python benchmarks/trace_load.py [--mb 100] [--repeats 3]
    python benchmarks/trace_load.py --doubling [--max-events 1000000] [--repeats 1]

Prints one row per step (median of the repeats, in seconds). `--doubling` prints a doubling
table instead: files of the same shape from max-events / 64 up to max-events events, each twice
the one before, one column per measured step (`DOUBLING_STEPS`: a function of the file and its
loaded Trace that returns seconds) with the ratio to the row before; a linear-time step gives
about 2.0, and a ratio above `MAX_RATIO` is marked "!". Results: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import tempfile
import time
from pathlib import Path

import parallelgraph as pg

#: One step of a branch: (name, start, duration, children) in µs, nested as PyTorch writes it.
TRANSPOSE = ("aten::t", 1, 5, [("aten::transpose", 2, 3, [])])
ADDMM = ("aten::addmm", 7, 80, [("aten::expand", 8, 2, []), ("aten::copy_", 11, 20, [])])
LAYER = ("aten::linear", 0, 90, [TRANSPOSE, ADDMM])


def events_of(tid: int, scope: str, origin: float, layers: int) -> list[dict]:
    out = [{"ph": "X", "cat": "user_annotation", "name": scope, "pid": 1, "tid": tid,
            "ts": origin, "dur": layers * 100.0, "args": {"External id": 0}}]  # fmt: skip

    def emit(node, base):
        name, start, dur, children = node
        out.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid,
                    "ts": base + start, "dur": float(dur),
                    "args": {"External id": len(out), "Record function id": 0}})  # fmt: skip
        for child in children:
            emit(child, base + start)

    for layer in range(layers):
        emit(LAYER, origin + layer * 100.0 + 1)
    return out


def write_trace(folder: Path, megabytes: float) -> tuple[Path, Path, int]:
    layers = 1000
    probe = json.dumps(events_of(1, "net1", 0.0, layers))
    rounds = max(1, int(megabytes * 1e6 / (2 * len(probe))))
    events = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": t,
               "args": {"name": f"thread {t} (python)"}} for t in (1, 2)]  # fmt: skip
    for r in range(rounds):
        origin = r * layers * 100.0
        events += events_of(1, "net1", origin, layers) + events_of(2, "net2", origin, layers)
    plain = folder / "big.pt.trace.json"
    plain.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    packed = folder / "big.pt.trace.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes(), compresslevel=1))
    return plain, packed, len(events)


def timed(step, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# -- the doubling table -------------------------------------------------------------------------

#: The most a step's time may grow when the events double (linear time gives about 2.0).
MAX_RATIO = 2.2


def write_events(path: Path, count: int) -> int:
    """A PyTorch-shaped file of about `count` events (two threads, 6 events a layer); returns
    how many events it holds."""
    layers = max(1, (count - 2) // 12)
    events = events_of(1, "net1", 0.0, layers) + events_of(2, "net2", 0.0, layers)
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return len(events)


def step_load(path: Path, trace: pg.Trace, repeats: int) -> float:
    """Trace.load of the file (its events read, nested and frozen)."""
    return timed(lambda: pg.Trace.load(path).events, repeats)


def step_explain(path: Path, trace: pg.Trace, repeats: int) -> float:
    """explain() of the loaded trace, worded (each run on a fresh copy: the trace caches
    nothing the report needs, but the copy keeps the runs alike)."""
    return timed(
        lambda: str(pg.Trace(trace.events, trace.metadata, nested=True).explain()), repeats
    )


def step_simulate(path: Path, trace: pg.Trace, repeats: int) -> float:
    """pg.simulate of the loaded trace with two inter-op threads on two cores."""
    config = pg.Config(inter_op_threads=2, intra_op_threads=1)
    return timed(lambda: pg.simulate(trace, config, cores=2).events, repeats)


#: The columns of the doubling table: name -> step(path, loaded trace, repeats) -> seconds.
DOUBLING_STEPS = {"load": step_load, "explain": step_explain, "simulate": step_simulate}


def doubling(max_events: int, repeats: int, rows: int = 7) -> list[tuple[int, dict[str, float]]]:
    """Each step timed on files of max_events / 2**(rows - 1) ... max_events events; prints the
    table as it goes and returns (events, {step: seconds}) per row."""
    names = list(DOUBLING_STEPS)
    print(f"{'events':>10}" + "".join(f"{name + ' s':>12}{'x':>7}" for name in names))
    table: list[tuple[int, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as folder:
        for row in range(rows):
            path = Path(folder) / "doubling.pt.trace.json"
            count = write_events(path, max_events >> (rows - 1 - row))
            trace = pg.Trace.load(path)
            seconds = {name: step(path, trace, repeats) for name, step in DOUBLING_STEPS.items()}
            cells = []
            for name in names:
                ratio = seconds[name] / table[-1][1][name] if table else None
                mark = "" if ratio is None else f"{ratio:.2f}" + ("!" if ratio > MAX_RATIO else "")
                cells.append(f"{seconds[name]:>12.3f}{mark:>7}")
            print(f"{count:>10,}" + "".join(cells), flush=True)
            table.append((count, seconds))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="size of the plain JSON file")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--doubling", action="store_true", help="print the doubling table")
    parser.add_argument("--max-events", type=int, default=1_000_000)
    args = parser.parse_args()
    if args.doubling:
        doubling(args.max_events, args.repeats)
        return
    with tempfile.TemporaryDirectory() as folder:
        plain, packed, count = write_trace(Path(folder), args.mb)
        size = plain.stat().st_size / 1e6
        print(f"{count:,} events, {size:.0f} MB plain, {packed.stat().st_size / 1e6:.0f} MB gzip")
        trace = pg.Trace.load(plain)
        rows = [
            ("load .json", timed(lambda: pg.Trace.load(plain).events, args.repeats)),
            ("load .json.gz", timed(lambda: pg.Trace.load(packed).events, args.repeats)),
            ("explain()", timed(lambda: str(trace.explain()), args.repeats)),
            ("plot() + PNG", timed(lambda: trace.plot().savefig(Path(folder) / "t.png"), 1)),
        ]
    print(f"{'step':<16}{'median s':>10}")
    for name, seconds in rows:
        print(f"{name:<16}{seconds:>10.2f}")


if __name__ == "__main__":
    main()
