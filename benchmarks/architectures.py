"""The seven architectures of `pg.models` against PyTorch eager and ONNX Runtime, in one process.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /tmp/torchvenv/bin/python \\
        benchmarks/architectures.py [--size medium] [--archs attention,inception,...]
        [--repeats 15] [--warmup 2] [--runs-before 1] [--gap-ms 0] [--seed 0] [--no-diagnose]

For each architecture (`pg.models.preset(name, size)`; sizes in parallelgraph/models/presets.py):

1. parallelgraph at every setting of inter-op {1, 2} x intra-op {1, 2} x fuse {off, on}: eight
   sessions of one graph, each timed around `Session.run(fetch, feed_dict)`;
2. PyTorch eager (if importable), the same architecture as an `nn.Module` built from
   parallelgraph's own variable values (`architectures_peers.py`), under
   `torch.inference_mode()`, at `torch.set_num_threads(1)` and 2 (eager runs one op at a time:
   its inter-op pool plays no part), and for the image architectures also channels_last;
3. ONNX Runtime (if importable) on that module exported by `torch.onnx.export(dynamo=False)`:
   ORT_ENABLE_ALL, intra-op 1 and 2 threads, ORT_SEQUENTIAL and ORT_PARALLEL (2 inter-op
   threads).

Inputs: the presets draw their inputs with `random_normal` ops on every run; here those ops are
fed their own first values instead (`feed_dict`), so that every framework computes the same
function of the same fixed arrays and none pays for drawing inputs. Before anything is timed,
every PyTorch and ONNX Runtime case is checked against parallelgraph's output (max |diff| at most
1e-3 of max |output|; a case that fails is reported, not timed), and the eight parallelgraph
settings against each other (bit-identical, the product's promise).

Timing: `--warmup` untimed rounds, then `--repeats` rounds; each round runs every case of the
architecture (all frameworks, all settings) once, in an order shuffled per round, so drift
and whoever runs first hit all alike. Each timed run follows `--runs-before` (default 1)
untimed runs of the same case: on this 2-vCPU VM a pool whose threads went to sleep pays for
waking them (PyTorch's two OpenMP threads: two_tower medium 1.9 ms back to back, median 3.8 ms
with a long tail after 20 ms idle), so a cold run measures the VM more than the library;
`--runs-before 0` times them cold, `--gap-ms` sleeps before each case. Medians (IQR as % of
the median in the detail tables).
"Inter-op gain" is t(inter 1, intra 1) / t(inter 2, intra 1), "intra-op gain"
t(inter 1, intra 1) / t(inter 1, intra 2), both at the fuse setting of parallelgraph's best.

Diagnosis (`--no-diagnose` skips it): parallelgraph's traced run at (inter 1, intra 1) and at
its best setting, work by op type (ms per run, share, GFLOP/s where the op counts FLOPs), and
PyTorch's profiler at 1 thread (self CPU time of the top aten ops).

Targets (from the issue): at medium, parallelgraph at its best setting <= 1.0x PyTorch eager at
its best on every architecture, and ahead of ONNX Runtime on the branchy ones (all but resnet).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import architectures_peers as peers
from _common import alternated, blas_description, median, simd_level, spread, table

import parallelgraph as pg
from parallelgraph.experiments.machine_load import LoadMonitor, MachineLoad
from parallelgraph.models import ARCHITECTURES

#: parallelgraph's settings: (inter-op threads, intra-op threads, fuse).
SETTINGS = tuple((i, j, f) for f in (False, True) for i in (1, 2) for j in (1, 2))
#: The architectures where the issue wants parallelgraph ahead of ONNX Runtime.
BRANCHY = ("attention", "inception", "mixture_of_experts", "ensemble", "two_tower", "wide_and_deep")
#: A peer's output must match parallelgraph's within this much of max |output|.
TOLERANCE = 1e-3


def setting_label(setting: tuple[int, int, bool]) -> str:
    inter, intra, fuse = setting
    return f"{inter}x{intra}{' fused' if fuse else ''}"


@dataclass
class Result:
    """One architecture's medians (ms) and what was noticed on the way."""

    name: str
    description: str
    pg: dict[tuple[int, int, bool], list[float]] = field(default_factory=dict)
    torch: dict[str, list[float]] = field(default_factory=dict)
    ort: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    diagnosis: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: What other processes used while the cases were timed (None without procfs).
    load: MachineLoad | None = None

    def others(self) -> str:
        if self.load is None:
            return "?"
        return f"{self.load.other_cores:.2f} cores, steal {self.load.steal_share:.0%}"

    @staticmethod
    def best(times: dict) -> tuple[object, float] | None:
        if not times:
            return None
        key = min(times, key=lambda k: median(times[k]))
        return key, median(times[key]) * 1e3


def _relative_error(value: np.ndarray, reference: np.ndarray) -> float:
    if value.shape != reference.shape:
        return float("inf")
    scale = max(float(np.max(np.abs(reference))), 1e-30) if reference.size else 1.0
    return float(np.max(np.abs(value.astype(np.float64) - reference))) / scale


def _by_type(trace: object) -> list[tuple[str, float, float, float]]:
    """A trace's op work by op type: (type, ms, share, GFLOP/s or nan), largest first."""
    work: dict[str, float] = {}
    flops: dict[str, float] = {}
    for event in trace.events:
        if str(event.kind) != "op" or str(event.role) != "work":
            continue
        work[event.op_type] = work.get(event.op_type, 0.0) + event.work_ns
        flops[event.op_type] = flops.get(event.op_type, 0.0) + event.flops
    total = sum(work.values()) or 1.0
    rows = [
        (kind, ns / 1e6, ns / total, flops[kind] / ns if flops[kind] and ns else float("nan"))
        for kind, ns in work.items()
    ]
    # GFLOP/s only where FLOPs are the point (products, convolutions), not elementwise ops
    rows = [
        row if any(w in row[0] for w in ("matmul", "conv")) else (*row[:3], float("nan"))
        for row in rows
    ]
    return sorted(rows, key=lambda row: -row[1])


def _pg_diagnosis(
    session: pg.Session, fetch: object, feeds: dict, label: str, runs: int = 3
) -> list[str]:
    """The traced run with the median wall time of `runs`, by op type."""
    traced = []
    session.run(fetch, feed_dict=feeds)  # untimed: pools awake, caches hot, as when timed
    for _ in range(runs):
        start = time.perf_counter()
        _, trace = session.run(fetch, feed_dict=feeds, trace=True)
        traced.append((time.perf_counter() - start, trace))
    wall, trace = sorted(traced, key=lambda pair: pair[0])[len(traced) // 2]
    rows = _by_type(trace)
    work = sum(row[1] for row in rows)
    parts = [
        f"{kind} {ms:.2f} ({share:.0%}{'' if np.isnan(rate) else f', {rate:.0f} GFLOP/s'})"
        for kind, ms, share, rate in rows[:7]
    ]
    head = (
        f"  pg {label}: wall {wall * 1e3:.2f} ms, makespan {trace.makespan_ms:.2f} ms, "
        f"op work {work:.2f} ms:"
    )
    return [head, "    " + "; ".join(parts)]


def run_architecture(name: str, size: str, args: argparse.Namespace, have: dict) -> Result:
    started = time.perf_counter()
    preset = pg.models.preset(name, size)
    params = dict(ARCHITECTURES[name].sizes[size])
    result = Result(name, preset.description)
    sessions = {
        s: pg.Session(
            preset.graph, pg.Config(inter_op_threads=s[0], intra_op_threads=s[1], fuse=s[2])
        )
        for s in SETTINGS
    }
    try:
        base = sessions[SETTINGS[0]]
        graph_ops = preset.graph.ops
        drawn = [op for op in graph_ops if op.type == "random_normal"]
        feeds = dict(zip([op.output for op in drawn], base.run([op.output for op in drawn])))
        by_name = {op.name: op for op in graph_ops}
        inputs = [base.run(by_name[n].output) for n in peers.INPUTS[name]]
        weights = {
            op.name: base.run(op.output) for op in graph_ops if op.type in ("variable", "constant")
        }
        reference = base.run(preset.fetch, feed_dict=feeds)
        for setting, session in sessions.items():
            if session.run(preset.fetch, feed_dict=feeds).tobytes() != reference.tobytes():
                result.notes.append(f"pg {setting_label(setting)} differs from 1x1 (bits)")

        cases: dict[tuple[str, object], object] = {}
        for setting, session in sessions.items():

            def step(session: pg.Session = session) -> float:
                start = time.perf_counter()
                session.run(preset.fetch, feed_dict=feeds)
                return time.perf_counter() - start

            cases[("pg", setting)] = step

        peer_cases: list[tuple[str, peers.PeerCase]] = []
        directory = peers.temporary_directory()
        if have["torch"]:
            peer_cases += [("torch", c) for c in peers.torch_cases(name, params, weights, inputs)]
        if have["torch"] and have["onnxruntime"]:
            try:
                found = peers.ort_cases(name, params, weights, inputs, directory.name)
                peer_cases += [("ort", c) for c in found]
            except Exception as error:  # noqa: BLE001  (an export failure is a result)
                result.notes.append(f"ONNX export/load failed: {type(error).__name__}: {error}")
        for framework, case in peer_cases:
            error = _relative_error(case.output(), reference)
            if error > TOLERANCE:
                result.notes.append(
                    f"{framework} {case.label}: output differs from pg by {error:.1e} "
                    "of max |output|: not timed"
                )
                continue
            cases[(framework, case.label)] = case.step

        if args.runs_before or args.gap_ms:
            cases = {k: _prepared(v, args.runs_before, args.gap_ms / 1e3) for k, v in cases.items()}
        with LoadMonitor() as monitor:  # what other processes used meanwhile
            times = alternated(cases, args.repeats, args.warmup, seed=args.seed)
        result.load = monitor.load
        for (framework, key), values in times.items():
            getattr(result, framework)[key] = values
        directory.cleanup()

        if args.diagnose:
            best_setting = Result.best(result.pg)[0]
            result.diagnosis += _pg_diagnosis(
                sessions[(1, 1, best_setting[2])],
                preset.fetch,
                feeds,
                setting_label((1, 1, best_setting[2])),
            )
            if best_setting[:2] != (1, 1):
                result.diagnosis += _pg_diagnosis(
                    sessions[best_setting], preset.fetch, feeds, setting_label(best_setting)
                )
            if have["torch"]:
                rows = peers.torch_profile(name, params, weights, inputs, threads=1)
                total = sum(row[2] for row in rows)
                parts = [f"{key} x{count} {ms:.2f}" for key, count, ms in rows]
                layout = " channels_last" if name in peers.IMAGES else ""
                result.diagnosis.append(
                    f"  torch 1 thread{layout}, top self CPU ms per run ({total:.2f} in these):"
                )
                result.diagnosis.append("    " + "; ".join(parts))
    finally:
        for session in sessions.values():
            session.close()
    result.seconds = time.perf_counter() - started
    return result


def _prepared(step: Callable[[], float], runs_before: int, gap: float) -> Callable[[], float]:
    """`step` timed after `runs_before` untimed calls of it (so its pool threads are awake and
    its caches hot, whatever ran before) and, before those, `gap` seconds of sleep."""

    def prepared() -> float:
        if gap:
            time.sleep(gap)
        for _ in range(runs_before):
            step()
        return step()

    return prepared


def _ms(values: list[float] | None) -> str:
    return "-" if not values else f"{median(values) * 1e3:.2f}"


def _ms_spread(values: list[float] | None) -> str:
    return "-" if not values else f"{median(values) * 1e3:.2f} ({spread(values)})"


def print_tables(results: list[Result], have: dict, size: str) -> None:
    missing = {k: "not installed" for k, v in have.items() if not v}
    if have["onnxruntime"] and not have["torch"]:
        missing["onnxruntime"] = "no torch to export"

    print(f"\nparallelgraph, median ms per setting (inter x intra [fused]), size {size}:")
    header = [
        "architecture",
        *[setting_label(s) for s in SETTINGS],
        "best",
        "inter-op gain",
        "intra-op gain",
    ]
    rows = []
    for r in results:
        best = Result.best(r.pg)[0]
        fuse = best[2]
        one = median(r.pg[(1, 1, fuse)])
        rows.append(
            [
                r.name,
                *[_ms(r.pg.get(s)) for s in SETTINGS],
                setting_label(best),
                f"x{one / median(r.pg[(2, 1, fuse)]):.2f}",
                f"x{one / median(r.pg[(1, 2, fuse)]):.2f}",
            ]
        )
    print(table(header, rows))

    print(
        "\nagainst the peers (medians, ms; ratio < 1: parallelgraph faster; others' cores: "
        "what other processes kept busy, on average, while the cases were timed):"
    )
    header = ["architecture", "pg best", "torch best", "ORT best", "pg/torch", "pg/ORT"]
    header += ["<= torch?", "< ORT? (branchy)", "others' cores"]
    rows = []
    for r in results:
        pg_best, pg_ms = Result.best(r.pg)
        cells = [r.name, f"{pg_ms:.2f} ({setting_label(pg_best)})"]
        ratios = []
        for framework, times in (("torch", r.torch), ("onnxruntime", r.ort)):
            found = Result.best(times)
            if found is None:
                cells.append(missing.get(framework, "no valid case"))
                ratios.append(None)
            else:
                cells.append(f"{found[1]:.2f} ({found[0]})")
                ratios.append(pg_ms / found[1])
        cells += ["-" if x is None else f"{x:.2f}" for x in ratios]
        cells.append("-" if ratios[0] is None else ("met" if ratios[0] <= 1.0 else "NOT met"))
        if r.name not in BRANCHY:
            cells.append("n/a")
        else:
            cells.append("-" if ratios[1] is None else ("met" if ratios[1] < 1.0 else "NOT met"))
        cells.append("?" if r.load is None else f"{r.load.other_cores:.2f}")
        rows.append(cells)
    print(table(header, rows))

    print(
        "\none thread each (pg inter 1 intra 1, better fuse setting; torch 1 thread, better "
        "layout; ORT sequential intra 1): kernels and fusion, no parallelism"
    )
    header = ["architecture", "pg 1 thread", "torch 1 thread", "ORT 1 thread", "pg/torch"]
    header.append("pg/ORT")
    rows = []
    for r in results:
        pg_one = Result.best({k: v for k, v in r.pg.items() if k[:2] == (1, 1)})
        torch_one = Result.best({k: v for k, v in r.torch.items() if k.startswith("1 thread")})
        ort_one = Result.best({k: v for k, v in r.ort.items() if k == "sequential intra 1"})
        cells = [r.name, f"{pg_one[1]:.2f}"]
        cells += ["-" if x is None else f"{x[1]:.2f}" for x in (torch_one, ort_one)]
        cells += ["-" if x is None else f"{pg_one[1] / x[1]:.2f}" for x in (torch_one, ort_one)]
        rows.append(cells)
    print(table(header, rows))

    labels_torch = sorted({k for r in results for k in r.torch})
    labels_ort = sorted({k for r in results for k in r.ort})
    if labels_torch or labels_ort:
        print("\npeers, median ms (IQR % of median) per setting:")
        header = [
            "architecture",
            *[f"torch {k}" for k in labels_torch],
            *[f"ORT {k}" for k in labels_ort],
        ]
        rows = [
            [
                r.name,
                *[_ms_spread(r.torch.get(k)) for k in labels_torch],
                *[_ms_spread(r.ort.get(k)) for k in labels_ort],
            ]
            for r in results
        ]
        print(table(header, rows))
    print(
        "\nparallelgraph best setting's spread: "
        + ", ".join(f"{r.name} {spread(r.pg[Result.best(r.pg)[0]])}" for r in results)
    )
    for r in results:
        for note in r.notes:
            print(f"note: {r.name}: {note}")
    if any(r.diagnosis for r in results):
        print("\ndiagnosis (pg: op work by type, ms per run (share, GFLOP/s); torch: profiler):")
        for r in results:
            print(f"{r.name}:")
            for line in r.diagnosis:
                print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="medium", choices=pg.models.SIZES)
    parser.add_argument("--archs", default=",".join(ARCHITECTURES), help="comma-separated")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="of the shuffled round order")
    parser.add_argument(
        "--runs-before",
        type=int,
        default=1,
        help="untimed runs of the same case right before each timed one (0: it follows the "
        "other cases' runs cold)",
    )
    parser.add_argument(
        "--gap-ms", type=float, default=0.0, help="sleep before each timed case (ms)"
    )
    parser.add_argument("--no-diagnose", dest="diagnose", action="store_false")
    args = parser.parse_args()
    archs = [a.strip() for a in args.archs.split(",") if a.strip()]
    unknown = [a for a in archs if a not in ARCHITECTURES]
    if unknown:
        parser.error(f"unknown architectures {unknown}; choose from {list(ARCHITECTURES)}")

    found = peers.versions()
    have = {"torch": found["torch"] is not None, "onnxruntime": found["onnxruntime"] is not None}
    import numba

    machine = platform.processor() or platform.machine()
    print(f"CPU: {simd_level()}, {os.cpu_count()} cores ({machine})")
    print(f"BLAS (NumPy): {blas_description()}")
    print(
        f"versions: python {platform.python_version()}, parallelgraph {pg.__version__}, "
        f"numpy {np.__version__}, numba {numba.__version__}, "
        + ", ".join(f"{k} {v or 'not installed'}" for k, v in found.items())
    )
    if have["torch"]:
        import torch

        print(
            f"torch: {torch.__config__.parallel_info().splitlines()[-1].strip()}, "
            f"interop threads {torch.get_num_interop_threads()} (left as started)"
        )
    load_before = os.getloadavg()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}")
    print(
        f"size {args.size}, repeats {args.repeats}, warm-up rounds {args.warmup}, "
        f"untimed runs before each timed one {args.runs_before}, gap {args.gap_ms:g} ms\n"
    )
    started = time.perf_counter()
    results = []
    for name in archs:
        result = run_architecture(name, args.size, args, have)
        results.append(result)
        pg_best = Result.best(result.pg)
        print(
            f"{name}: {result.description}; pg best {pg_best[1]:.2f} ms "
            f"({setting_label(pg_best[0])}); {result.seconds:.0f} s; other processes used "
            f"{result.others()} while timed",
            flush=True,
        )
    print_tables(results, have, args.size)
    load_after = os.getloadavg()
    print(
        f"\nload average before: {' '.join(f'{x:.2f}' for x in load_before)}; after: "
        f"{' '.join(f'{x:.2f}' for x in load_after)}; total {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
