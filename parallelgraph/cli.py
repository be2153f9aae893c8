"""The `parallelgraph` command line: `demo` (the main job) and `run`; `--version`.

Every command exits non-zero with a one-line message (no traceback) on bad input: argparse's
own errors (exit 2) included, which by default print the whole usage block first.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from .config import MAX_STREAMS, MAX_THREADS, STREAM_POLICIES, Config
from .errors import GraphError, OpError
from .machine_load import LoadMonitor, busy_note
from .measure import Measurement, measure, measure_interleaved
from .presets import PRESETS, TWO_NETWORK_SIZES, Preset, build_preset
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
_thread_count = _int_at_least(0, MAX_THREADS)
_stream_count = _int_at_least(1, MAX_STREAMS)


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

    run = commands.add_parser("run", help="run a preset graph and report its timing")
    run.add_argument("--preset", default="two-networks", choices=PRESETS)
    run.add_argument(
        "--size", default="medium", choices=["tiny", "small", "medium", "large", "narrow"]
    )
    run.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    run.add_argument("--inter", type=_thread_count, default=0, help="inter-op threads (0 = cores)")
    run.add_argument("--intra", type=_thread_count, default=0, help="intra-op threads (0 = cores)")
    run.add_argument("--executor", default="threads", choices=["sequential", "threads", "dask"])
    run.add_argument("--address", help="executor dask: scheduler address (default: a LocalCluster)")
    run.add_argument("--device", default="cpu", choices=["cpu", "gpu"], help="place the graph")
    run.add_argument("--streams", type=_stream_count, default=1, help="CUDA streams")
    run.add_argument("--stream-policy", default="branches", choices=list(STREAM_POLICIES))
    run.add_argument("--matmul-kernel", default="blas", choices=["blas", "numba"])
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
    sweep.add_argument("--out", help="write results JSON here, plus .csv and heatmap .png beside")

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
    if preset.name == "two-networks":
        report["overlap"] = measurement.median_overlap("net1", "net2")
    return report


def command_run(args: argparse.Namespace) -> int:
    device_name = "gpu:0" if args.device == "gpu" else None
    if args.address is not None and args.executor != "dask":
        raise ValueError(
            f"--address {args.address!r} is a Dask scheduler's: it needs --executor dask "
            f"(this run's executor is {args.executor!r})"
        )
    preset = build_preset(args.preset, args.size, args.dtype, device_name)
    config = Config(
        inter_op_threads=args.inter,
        intra_op_threads=args.intra,
        executor=args.executor,
        matmul_kernel=args.matmul_kernel,
        streams=args.streams,
        stream_policy=args.stream_policy,
        dask_address=args.address,
    )
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
            + (f"; net1/net2 overlap {overlap:.2f}" if overlap is not None else "")
        )
    if args.trace:  # after the report, so a failed save does not lose what was measured
        try:
            measurement.median_trace().save(args.trace)
        except OSError as problem:
            print(f"parallelgraph run: error: trace not saved: {problem}", file=sys.stderr)
            return 2
    return 0


def command_demo(args: argparse.Namespace) -> int:
    from .plot import compare

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    preset = build_preset("two-networks", args.size)
    print(f"parallelgraph demo — the seed experiment on the CPU: {preset.description}")
    print("(the first run compiles the Numba kernels; later runs use the cache)\n")
    settings = [(1, 1), (2, 1), (1, 2), (2, 2)]
    sessions = {
        setting: Session(
            preset.graph, Config(inter_op_threads=setting[0], intra_op_threads=setting[1])
        )
        for setting in settings
    }
    try:
        with LoadMonitor() as monitor:  # what else used the CPUs while the runs were measured
            measured = measure_interleaved(sessions, preset.fetch, args.repeats, warmup=2)
    finally:
        for session in sessions.values():
            session.close()
    # at most inter-op threads plus the intra-op helpers (intra - 1, shared) run at once
    busy = busy_note(monitor.load, threads_used=max(inter + intra - 1 for inter, intra in settings))
    results = [measured[setting] for setting in settings]
    base = results[0].median_ms
    print(
        f"{'inter-op':>8} {'intra-op':>8} {'median ms':>10} {'IQR ms':>13} {'speed-up':>9} "
        f"{'net1/net2 overlap':>18}"
    )
    for (inter, intra), result in zip(settings, results):
        low, high = result.quartiles_ms()
        print(
            f"{inter:>8} {intra:>8} {result.median_ms:>10.2f} {low:>6.1f}-{high:<6.1f} "
            f"{base / result.median_ms:>9.2f} {result.median_overlap('net1', 'net2'):>18.2f}"
        )
    print(f"(medians of {args.repeats} interleaved repeats; IQR = middle half of the runs)")
    if busy is not None:
        print(f"Busy machine: {busy}.")
    traces = [r.median_trace() for r in results[:2]]
    traces[1].save(out / "trace.ctf.json")
    save_figure(compare(traces, labels=["inter-op 1", "inter-op 2"]), out / "timeline.png")
    print(f"\nwrote {out / 'trace.ctf.json'} (open in https://ui.perfetto.dev or chrome://tracing)")
    print(f"wrote {out / 'timeline.png'}")
    overlap = results[1].median_overlap("net1", "net2")
    verdict = "ran in parallel" if overlap > 0.5 else "mostly did NOT run in parallel"
    print(
        f"\nWith 2 inter-op threads net1 and net2 {verdict} (overlap {overlap:.2f}); "
        f"with 1 they cannot overlap (overlap {results[0].median_overlap('net1', 'net2'):.2f})."
    )
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
    base = measured[1].median_ms
    for streams, result in measured.items():
        print(
            f"  {streams} stream(s): median {result.median_ms:.3f} ms, speed-up "
            f"{base / result.median_ms:.2f}, net1/net2 overlap "
            f"{result.median_overlap('net1', 'net2'):.2f}"
        )
    traces = [measured[1].median_trace(), measured[2].median_trace()]
    save_figure(compare(traces, labels=["1 stream", "2 streams"]), out / "gpu_timeline.png")
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
    from .trace import Trace

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
    from .trace import Trace

    if len(args.traces) < 2:
        raise ValueError("compare needs at least two trace files")
    labels = args.labels.split(",") if args.labels else [Path(p).stem for p in args.traces]
    if len(labels) != len(args.traces):
        raise ValueError(f"{len(labels)} labels for {len(args.traces)} traces")
    traces = [Trace.load(path) for path in args.traces]
    written = save_figure(compare(traces, labels=labels), args.out)
    base = traces[0].makespan_ms
    for label, trace in zip(labels, traces):
        ratio = f"x{base / trace.makespan_ms:.2f}" if base > 0 and trace.makespan_ms > 0 else "-"
        print(f"{label}: makespan {trace.makespan_ms:.2f} ms ({ratio})")
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


def command_sweep(args: argparse.Namespace) -> int:
    from .sweeps import sweep

    grid = {
        "size": [s.strip() for s in args.size.split(",") if s.strip()],
        "inter": _int_list(args.inter, "inter"),
        "intra": _int_list(args.intra, "intra"),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the table below repeats the noise note
        result = sweep(args.preset, grid, repeats=args.repeats, warmup=args.warmup, seed=args.seed)
    print(result)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        result.to_json(out)
        result.to_csv(out.with_suffix(".csv"))
        for size in grid["size"]:
            picture = out.with_name(f"{out.stem}-{size}-heatmap.png")
            result.heatmap("inter", "intra", size=size).savefig(picture, dpi=110)
        print(f"wrote {out}, {out.with_suffix('.csv')} and heatmap(s) beside them")
    return 0


def command_explain(args: argparse.Namespace) -> int:
    from .trace import Trace

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
