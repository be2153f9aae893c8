"""The `parallelgraph` command line, one function per command; `--version`.

- `demo`: the main job, the seed experiment (two networks, inter-op 1 against 2, interleaved,
  with the busy-machine note), writing a trace and a timeline picture;
- `run`: a preset graph under one setting, its median timing (`--json` for scripts);
- `sweep`: a grid of thread settings with honest statistics (`pg.sweep`);
- `plot`, `compare`, `explain`: a trace file (ours or another tool's) as a timeline, two or
  more on one time axis, and why its branches did or did not overlap.

Every command exits non-zero with a one-line message (no traceback) on bad input: argparse's
own errors (exit 2) included, which by default print the whole usage block first.

Every speed-up a command prints is `stats.speedup_text`'s, the package's one rule: the ratio of
medians with its 95% bootstrap CI and verdict, or "one run: not a conclusion" (`compare`, whose
traces are one run each, always says the latter).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from .config import MAX_THREADS, Config, choices_of, cli_fields, flag_of
from .errors import GraphError, OpError
from .executors.registry import REGISTRY, executor_spec
from .experiments.machine_load import LoadMonitor, MachineLoad, busy_note, load_note
from .experiments.measure import Measurement, measure, measure_interleaved
from .experiments.presets import PRESETS, TWO_NETWORK_SIZES, Preset, build_preset
from .experiments.stats import runs_text, speedup, speedup_text
from .saving import write_file
from .session import Session


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit 2), without the usage block;
    `--help` still shows the usage. Subcommand parsers are made of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _int_at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: an int in [minimum, maximum], or a one-line error saying which."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got {value}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its "invalid ... value" message
    return parse


_at_least_one = _int_at_least(1)
_non_negative = _int_at_least(0)


def add_config_arguments(parser: argparse.ArgumentParser, config_type: type = Config) -> None:
    """A flag for every setting of `config_type` the command line can give (`config.cli_fields`),
    made from the field: its flag and help, a whole number within its bounds, one of its
    choices, or --name / --no-name for a bool; the default is the field's. A new Config field
    is a new flag, with nothing written here."""
    for f in cli_fields(config_type):
        options: dict[str, Any] = {"dest": f.name, "default": f.default}
        options["help"] = f.metadata.get("help", f.name.replace("_", " "))
        choices = choices_of(f)
        if "minimum" in f.metadata:
            options["type"] = _int_at_least(f.metadata["minimum"], f.metadata["maximum"])
            options["metavar"] = "N"
        elif f.type in ("bool", bool):
            options["action"] = argparse.BooleanOptionalAction
        elif choices is not None:
            options["choices"] = list(choices)
        else:
            options["metavar"] = flag_of(f).lstrip("-").upper()
        parser.add_argument(flag_of(f), **options)


def config_from_args(args: argparse.Namespace, config_type: type = Config) -> Any:
    """The `config_type` the flags of `add_config_arguments` give."""
    return config_type(**{f.name: getattr(args, f.name) for f in cli_fields(config_type)})


def package_version(distribution: str = "parallelgraph") -> str:
    """The installed distribution's version (importlib.metadata: what pip installed, also for
    an editable install); parallelgraph.__version__ where no distribution of that name is
    installed (the source tree on sys.path), "unknown" where neither says."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        import parallelgraph

        return str(getattr(parallelgraph, "__version__", "unknown"))


def make_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="parallelgraph",
        description="Run dataflow graphs on inter-op and intra-op thread pools; see the timeline.",
    )
    parser.add_argument("--version", action="version", version=f"parallelgraph {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="the seed experiment: two networks, inter-op 1 vs 2")
    demo.add_argument(
        "--out", default="demo-out", help="folder for trace.ctf.json and timeline.png"
    )
    demo.add_argument("--size", default="medium", choices=[s for s in TWO_NETWORK_SIZES])
    demo.add_argument("--repeats", type=_at_least_one, default=15)

    run = commands.add_parser("run", help="run a preset graph or an ONNX file, report its timing")
    run.add_argument("model", nargs="?", help="an ONNX file to run (instead of --preset)")
    run.add_argument("--preset", default="two-networks", choices=PRESETS)
    run.add_argument(
        "--shape",
        action="append",
        metavar="NAME=D1,D2",
        help="ONNX: an input's shape, or a symbolic dimension's size (repeat)",
    )
    run.add_argument(
        "--fallback", choices=["reference"], help="ONNX: run unknown op types in onnx's evaluator"
    )
    run.add_argument(
        "--compare", choices=["onnxruntime"], help="ONNX: measure ONNX Runtime beside it"
    )
    run.add_argument(
        "--size", default="medium", choices=["tiny", "small", "medium", "large", "narrow"]
    )
    run.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    add_config_arguments(run)
    run.add_argument("--device", default="cpu", choices=["cpu", "gpu"], help="place the graph")
    run.add_argument("--repeats", type=_at_least_one, default=5)
    run.add_argument("--warmup", type=_non_negative, default=1)
    run.add_argument("--trace", metavar="FILE", help="write the median run's Chrome trace here")
    run.add_argument("--json", action="store_true", help="print one JSON object")

    plot = commands.add_parser("plot", help="draw a trace file as a Gantt timeline")
    plot.add_argument("trace", help="Chrome trace JSON (ours, TensorFlow's, PyTorch's, ...)")
    plot.add_argument("--out", default="timeline.png", help="PNG or SVG file to write")
    plot.add_argument("--t0", type=float, help="zoom: start of the window in ms")
    plot.add_argument("--t1", type=float, help="zoom: end of the window in ms")
    plot.add_argument("--arrows", action="store_true", help="draw dependency arrows")

    compare = commands.add_parser("compare", help="two or more traces on one time axis")
    compare.add_argument("traces", nargs="+", metavar="TRACE", help="two or more trace files")
    compare.add_argument("--labels", help="comma-separated labels, one per trace")
    compare.add_argument("--out", default="compare.png", help="PNG or SVG file to write")

    sweep = commands.add_parser("sweep", help="a grid of thread settings, with honest statistics")
    sweep.add_argument("--preset", default="two-networks", choices=PRESETS)
    sweep.add_argument("--size", default="small", help="one size or a comma-separated list")
    sweep.add_argument("--inter", default="1,2", help="comma-separated inter-op thread counts")
    sweep.add_argument("--intra", default="1,2", help="comma-separated intra-op thread counts")
    sweep.add_argument("--repeats", type=_at_least_one, default=10)
    sweep.add_argument("--warmup", type=_non_negative, default=1)
    sweep.add_argument("--seed", type=int, default=0)
    sweep.add_argument(
        "--out",
        help="write the results' JSON here (a name ending in .csv: the CSV), with the other one "
        "and a heatmap .png per size beside it",
    )

    explain = commands.add_parser("explain", help="did the branches overlap, and if not, why?")
    explain.add_argument(
        "trace", help="trace file (.json or .json.gz; ours, TensorFlow, PyTorch, JAX, viztracer)"
    )
    explain.add_argument(
        "--branch",
        action="append",
        default=[],
        help="a branch to compare (repeat): a scope, lane:NAME or op:PATTERN "
        "(default: the top-level scopes, else the threads)",
    )
    return parser


def run_preset(preset: Preset, config: Config, repeats: int, warmup: int) -> Measurement:
    with Session(preset.graph, config) as session:
        return measure(session, preset.fetch, repeats=repeats, warmup=warmup)


def summarize(preset: Preset, config: Config, measurement: Measurement) -> dict[str, object]:
    """The JSON report of `parallelgraph run --json`."""
    median = measurement.median_trace()
    report: dict[str, object] = {
        "preset": preset.name,
        "size": preset.size,
        "makespan_ms": measurement.median_ms,
        "makespan_ms_all": measurement.makespans_ms,
        "wall_ms": measurement.median_wall_ms,
        "overlap": None,
        "lanes": median.lanes,
        "ops": len(median.ops()),
        "config": config.resolved().as_dict(),
    }
    if len(preset.scopes) >= 2:  # its first two branches (net1 and net2 for the seed graph)
        report["overlap"] = measurement.median_overlap(*preset.scopes[:2])
        report["overlap_of"] = list(preset.scopes[:2])
    return report


def command_run(args: argparse.Namespace) -> int:
    device_name = "gpu:0" if args.device == "gpu" else None
    if args.dask_address is not None and not executor_spec(args.executor).distributed:
        needs = " or ".join(name for name, spec in REGISTRY.items() if spec.distributed)
        raise ValueError(
            f"--address {args.dask_address!r} is a Dask scheduler's: it needs --executor {needs} "
            f"(this run's executor is {args.executor!r})"
        )
    if args.model is not None:
        from .onnx.presets import onnx_preset, parse_shapes

        preset, model, feeds = onnx_preset(
            args.model, parse_shapes(args.shape), args.fallback, device_name
        )
    else:
        if args.compare or args.shape or args.fallback:
            raise ValueError("--shape, --fallback and --compare go with an ONNX file")
        preset = build_preset(args.preset, args.size, args.dtype, device_name)
    config = config_from_args(args)
    measurement = run_preset(preset, config, args.repeats, args.warmup)
    report = summarize(preset, config, measurement)
    if args.json:
        print(json.dumps(report))
    else:
        overlap = report["overlap"]
        print(f"{preset.name} ({preset.size}): {preset.description}")
        print(f"config: {report['config']}")
        print(
            f"median makespan {report['makespan_ms']:.2f} ms over {args.repeats} repeats "
            f"(wall {report['wall_ms']:.2f} ms); {report['ops']} ops on lanes {report['lanes']}"
            + (
                f"; {' / '.join(report['overlap_of'])} overlap {overlap:.2f}"  # type: ignore[arg-type]
                if overlap is not None
                else ""
            )
        )
    if args.compare and not args.json:
        resolved = config.resolved()
        here = (resolved.inter_op_threads, resolved.intra_op_threads)
        settings = list(dict.fromkeys([(1, 1), here]))
        print(model.compare_onnxruntime(feeds, settings=settings, repeats=args.repeats))
    if args.trace:  # after the report, so a failed save does not lose what was measured
        try:
            measurement.median_trace().save(args.trace, memory=True)  # for Perfetto
        except OSError as problem:
            print(f"parallelgraph run: error: trace not saved: {problem}", file=sys.stderr)
            return 2
    return 0


#: The demo's settings, (inter-op threads, intra-op threads); the first is the baseline.
DEMO_SETTINGS: tuple[tuple[int, int], ...] = ((1, 1), (2, 1), (1, 2), (2, 2))


def demo_runs(
    preset: Preset, repeats: int, settings: Sequence[tuple[int, int]] = DEMO_SETTINGS
) -> tuple[dict[tuple[int, int], Measurement], MachineLoad | None]:
    """Measure every setting `repeats` times, interleaved (`measure_interleaved`: repeat r of
    every setting before repeat r + 1 of any, so a machine that slows down during the demo
    slows every setting alike), after two untimed warm-ups each; with what else used the CPUs
    meanwhile (`LoadMonitor`)."""
    sessions = {
        setting: Session(
            preset.graph, Config(inter_op_threads=setting[0], intra_op_threads=setting[1])
        )
        for setting in settings
    }
    try:
        with LoadMonitor() as monitor:  # what else used the CPUs while the runs were measured
            measured = measure_interleaved(sessions, preset.fetch, repeats, warmup=2)
    finally:
        for session in sessions.values():
            session.close()
    return measured, monitor.load


def demo_table(measured: Mapping[tuple[int, int], Measurement], repeats: int) -> list[str]:
    """The demo's table: per setting the median and IQR of the makespans, the median of the
    runs' net1/net2 overlaps, and the speed-up against the first setting by the package's one
    rule (`stats.speedup_text`: with its 95% CI and verdict, or "one run: not a conclusion")."""
    settings = list(measured)
    base = measured[settings[0]].makespans_ms
    against = f"speed-up against inter-op {settings[0][0]}, intra-op {settings[0][1]}"
    lines = [
        f"{'inter-op':>8} {'intra-op':>8} {'median ms':>10} {'IQR ms':>13} "
        f"{'net1/net2 overlap':>18}  {against}"
    ]
    for index, (inter, intra) in enumerate(settings):
        result = measured[(inter, intra)]
        low, high = result.quartiles_ms()
        speedup = "baseline" if index == 0 else speedup_text(base, result.makespans_ms)
        lines.append(
            f"{inter:>8} {intra:>8} {result.median_ms:>10.2f} {low:>6.1f}-{high:<6.1f} "
            f"{result.median_overlap('net1', 'net2'):>18.2f}  {speedup}"
        )
    lines.append(
        f"(medians of {repeats} interleaved repeats; IQR = middle half of the runs; overlap = "
        "median of the runs';\n speed-up = ratio of medians with its 95% bootstrap CI, called "
        "faster or slower only when the CI excludes 1.0)"
    )
    return lines


def demo_conclusion(
    one: Measurement, two: Measurement, busy: bool = False, label: str = "inter-op threads"
) -> str:
    """What the demo concludes about 1 against 2 `label`, in words that the numbers beside
    them cannot contradict.

    Two statements, each of its own evidence: whether net1 and net2 overlapped is read off the
    runs drawn in timeline.png (and saved as trace.ctf.json), and says so ("in the drawn run");
    whether that made the graph faster is the speed-up of all the runs, with its CI and verdict
    (`stats.Speedup`). A run can overlap fully and gain nothing (other programs on the cores,
    ops too short to be worth a second thread): then the words say that overlap is not
    speed-up, instead of "ran in parallel" beside a speed-up of 0.97."""
    overlap = two.median_trace().overlap("net1", "net2")
    alone = one.median_trace().overlap("net1", "net2")
    side_by_side = overlap > 0.5
    seen = "ran side by side" if side_by_side else "mostly did NOT run side by side"
    gain = speedup(one.makespans_ms, two.makespans_ms)
    if not math.isfinite(gain.low):
        meaning = "rerun with --repeats 5 or more for a confidence interval"
    elif gain.verdict == "faster":
        meaning = "the graph was faster with 2" + (", as they overlapped" if side_by_side else "")
    elif gain.verdict == "slower":
        meaning = "the graph was slower with 2" + (
            ", although they overlapped: overlap is not speed-up" if side_by_side else ""
        )
    else:
        meaning = (
            "these runs cannot tell 2 from 1"
            + (": overlap is not speed-up" if side_by_side else "")
            + (" (the machine was busy, see above)" if busy else "")
        )
    return (
        f"With 2 {label} net1 and net2 {seen} in the drawn run (overlap {overlap:.2f}); with 1 "
        f"they cannot overlap (overlap {alone:.2f} in the drawn run).\n"
        f"Speed-up of 2 against 1 over {runs_text(len(two.traces))}: {gain.text()}: {meaning}."
    )


def command_demo(args: argparse.Namespace) -> int:
    from .plot import compare

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    preset = build_preset("two-networks", args.size)
    print(f"parallelgraph demo — the seed experiment on the CPU: {preset.description}")
    print("(the first run compiles the Numba kernels; later runs use the cache)\n")
    measured, load = demo_runs(preset, args.repeats)
    # at most inter-op threads plus the intra-op helpers (intra - 1, shared) run at once
    threads_used = max(inter + intra - 1 for inter, intra in measured)
    busy, said = busy_note(load, threads_used), load_note(load, threads_used)
    print("\n".join(demo_table(measured, args.repeats)))
    if said is not None:
        print(said)
    results = [measured[setting] for setting in DEMO_SETTINGS]
    traces = [r.median_trace() for r in results[:2]]
    traces[1].save(out / "trace.ctf.json", memory=True)  # with its memory track, for Perfetto
    title = f"inter-op 2 against inter-op 1 over {runs_text(args.repeats)}: " + speedup_text(
        results[0].makespans_ms, results[1].makespans_ms
    )
    save_figure(
        compare(traces, labels=["inter-op 1", "inter-op 2"], title=title), out / "timeline.png"
    )
    print(f"\nwrote {out / 'trace.ctf.json'} (open in https://ui.perfetto.dev or chrome://tracing)")
    print(f"wrote {out / 'timeline.png'} (the median run of each; its title: the speed-up)")
    print("\n" + demo_conclusion(results[0], results[1], busy=busy is not None))
    print("\nWhy, in the words of trace.explain() for inter-op 1:")
    print(results[0].median_trace().explain())
    if real_gpu_available():
        demo_gpu_streams(out, args.repeats)
    return 0


def real_gpu_available() -> bool:
    """A real CUDA GPU (not the simulator); importing numba.cuda only to find out."""
    from .executors.cuda import gpu_available, simulated

    return gpu_available() and not simulated()


def demo_gpu_streams(out: Path, repeats: int) -> None:
    """The seed's GPU question: the narrow two-network graph on 1 and 2 CUDA streams."""
    from .plot import compare

    preset = build_preset("two-networks", "narrow", device_name="gpu:0")
    sessions = {
        streams: Session(preset.graph, Config(streams=streams, stream_policy="branches"))
        for streams in (1, 2)
    }
    try:
        measured = measure_interleaved(sessions, preset.fetch, max(1, repeats), warmup=2)
    finally:
        for session in sessions.values():
            session.close()
    print(f"\nGPU: {preset.description}")
    base = measured[1].makespans_ms
    for streams, result in measured.items():
        gain = "baseline" if streams == 1 else speedup_text(base, result.makespans_ms)
        print(
            f"  {streams} stream(s): median {result.median_ms:.3f} ms, net1/net2 overlap "
            f"{result.median_overlap('net1', 'net2'):.2f}, speed-up {gain}"
        )
    print("\n" + demo_conclusion(measured[1], measured[2], label="CUDA streams"))
    traces = [measured[1].median_trace(), measured[2].median_trace()]
    title = f"2 streams against 1 over {runs_text(max(1, repeats))}: " + speedup_text(
        base, measured[2].makespans_ms
    )
    figure = compare(traces, labels=["1 stream", "2 streams"], title=title)
    save_figure(figure, out / "gpu_timeline.png")
    print(f"wrote {out / 'gpu_timeline.png'}")


def save_figure(figure: Any, path: str | Path) -> Path:
    """Save a matplotlib figure to exactly `path` (the format from its suffix, PNG without
    one: matplotlib would add ".png" to the name) without destroying what is there
    (`parallelgraph.saving`: atomic for a regular file, a folder refused)."""
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    known = figure.canvas.get_supported_filetypes()
    if suffix and suffix not in known:
        raise ValueError(f"{path}: unknown picture format {suffix!r} (one of {', '.join(known)})")
    kind = suffix or "png"
    return write_file(path, lambda file: figure.savefig(file, format=kind, dpi=110))


def command_plot(args: argparse.Namespace) -> int:
    from .trace.model import Trace

    trace = Trace.load(args.trace)
    options = {"arrows": args.arrows}
    if args.t0 is not None or args.t1 is not None:
        options.update(t0=args.t0, t1=args.t1)
    written = save_figure(trace.plot(**options), args.out)
    print(
        f"wrote {written}: {len(trace.events)} events on {len(trace.lanes)} lanes, "
        f"makespan {trace.makespan_ms:.2f} ms"
    )
    return 0


def command_compare(args: argparse.Namespace) -> int:
    from .plot import compare
    from .trace.model import Trace

    if len(args.traces) < 2:
        raise ValueError("compare needs at least two trace files")
    labels = args.labels.split(",") if args.labels else [Path(p).stem for p in args.traces]
    if len(labels) != len(args.traces):
        raise ValueError(f"{len(labels)} labels for {len(args.traces)} traces")
    traces = [Trace.load(path) for path in args.traces]
    written = save_figure(compare(traces, labels=labels), args.out)
    base = traces[0].makespan_ms
    for index, (label, trace) in enumerate(zip(labels, traces)):
        # one trace a side: the package's rule says "one run: not a conclusion"
        gain = "baseline" if index == 0 else speedup_text([base], [trace.makespan_ms])
        print(f"{label}: makespan {trace.makespan_ms:.2f} ms ({gain})")
    print(f"wrote {written}")
    return 0


def _int_list(text: str, what: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--{what} takes comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1 or max(values) > MAX_THREADS:
        raise ValueError(
            f"--{what} needs thread counts >= 1 and at most {MAX_THREADS}, got {text!r}"
        )
    return values


def sweep_outputs(out: str | Path, sizes: Sequence[str]) -> list[Path]:
    """The files `sweep --out OUT` writes, distinct by construction: the JSON at OUT and the
    CSV beside it with the suffix .csv (OUT ending in .csv names the CSV, and the JSON is
    beside it as .json), then a heatmap per size, "<JSON's stem>-<size>-heatmap.png".

    >>> [str(p) for p in sweep_outputs("r.csv", ["tiny"])]
    ['r.json', 'r.csv', 'r-tiny-heatmap.png']
    """
    given = Path(out)
    if given.suffix.lower() == ".csv":
        document, table = given.with_suffix(".json"), given
    else:
        document, table = given, given.with_suffix(".csv")
    pictures = [document.with_name(f"{document.stem}-{size}-heatmap.png") for size in sizes]
    return [document, table, *pictures]


def command_sweep(args: argparse.Namespace) -> int:
    from .experiments.sweeps import sweep

    grid = {
        "size": list(dict.fromkeys(s.strip() for s in args.size.split(",") if s.strip())),
        "inter": _int_list(args.inter, "inter"),
        "intra": _int_list(args.intra, "intra"),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the table below repeats the noise note
        result = sweep(args.preset, grid, repeats=args.repeats, warmup=args.warmup, seed=args.seed)
    print(result)
    if args.out:
        document, table, *pictures = sweep_outputs(args.out, grid["size"])
        result.to_json(document)
        result.to_csv(table)
        for size, picture in zip(grid["size"], pictures):
            save_figure(result.heatmap("inter", "intra", size=size), picture)
        print(f"wrote {document}, {table} and {', '.join(map(str, pictures))}")
    return 0


def command_explain(args: argparse.Namespace) -> int:
    from .trace.model import Trace

    print(Trace.load(args.trace).explain(*args.branch))
    return 0


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"parallelgraph: warning: {message}\n"


def main(argv: Sequence[str] | None = None) -> int:
    warnings.formatwarning = _one_line_warning
    args = make_parser().parse_args(argv)
    handlers = {
        "demo": command_demo,
        "run": command_run,
        "plot": command_plot,
        "compare": command_compare,
        "explain": command_explain,
        "sweep": command_sweep,
    }
    try:
        return handlers[args.command](args)
    except (GraphError, OpError, ValueError, OSError, RuntimeError) as problem:
        print(f"parallelgraph {args.command}: error: {problem}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"parallelgraph {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
