"""`compare`: several timelines stacked on one shared time axis, with consistent scope colours."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..experiments.stats import speedup_text
from ..trace.model import WORK, Trace

if TYPE_CHECKING:
    from matplotlib.figure import Figure
from .colors import scope_colors
from .figures import new_figure, rows_inches
from .gantt import Rows, gantt, ordered_lanes
from .layout import fit_height
from .legend import add_legend, legend_handles


def compare(
    *traces: Trace | Sequence[Trace],
    labels: Sequence[str] | None = None,
    title: str | None = None,
    branches: tuple[str, str] | None = None,
    **options: Any,
) -> Figure:
    """Timelines stacked on one shared time axis, each from its own start, with the same scope
    colours; each panel is titled with its makespan and the figure title gives the speed-up of
    each run against the first. `compare([a, b], labels=[...])` and `compare(a, b, ...)` both
    work. `branches`: two branches — scopes, "lane:NAME" or "op:PATTERN" (see
    `parallelgraph.trace.branches`) — whose overlap each panel's title gives. `title` replaces the
    speed-up line on top; other keyword options (arrows, t0, t1, highlight) go to `gantt` for
    every panel (a memory panel is not one of them: `trace.plot(memory=True)` draws one per
    trace).

    >>> compare(trace_1, trace_2, labels=["inter-op 1", "inter-op 2"])  # doctest: +SKIP
    """
    if options.get("memory"):
        raise ValueError(
            "compare draws no memory panels: draw each trace's with trace.plot(memory=True)"
        )
    runs = _flatten_traces(traces)
    names = list(labels) if labels is not None else [f"run {i + 1}" for i in range(len(runs))]
    if len(names) != len(runs):
        raise ValueError(f"{len(runs)} traces but {len(names)} labels: {names}")
    lane_counts = [max(Rows.of(t, ordered_lanes(t)).total, 1) for t in runs]
    figure = new_figure(sum(lane_counts) + 2 * len(runs))
    axes = figure.subplots(
        len(runs), 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": lane_counts}
    )[:, 0]
    colors = scope_colors(runs)
    for index, (ax, trace, name) in enumerate(zip(axes, runs, names)):
        heading = f"{name}: makespan {trace.makespan_ms:.2f} ms" + _speedup(runs, names, index)
        if branches is not None:
            heading += f", overlap {branches[0]} / {branches[1]} {trace.overlap(*branches):.2f}"
        gantt(trace, ax=ax, colors=colors, legend=False, title=heading, **options)
        if index < len(runs) - 1:
            ax.set_xlabel("")
    if "t0" not in options and "t1" not in options:
        longest = max((t.makespan_ms for t in runs), default=1.0) or 1e-6
        axes[0].set_xlim(-0.01 * longest, 1.01 * longest)
    kinds = {e.kind if e.role is WORK else e.role.value for trace in runs for e in trace.events}
    handles = legend_handles(colors, kinds, bool(options.get("arrows")))
    if handles:  # on the top panel; the layout puts it beside the panels or below them
        add_legend(axes[0], handles)
    heading = _speedup_summary(runs, names) if title is None else title
    figure.suptitle(heading, fontsize=11, wrap=True)  # wrapped to the figure's width
    fit_height(figure, [rows_inches(count, 0) for count in lane_counts])
    return figure


def _flatten_traces(traces: tuple[Trace | Sequence[Trace], ...]) -> list[Trace]:
    runs: list[Trace] = []
    for item in traces:
        runs.extend([item] if isinstance(item, Trace) else item)
    if not runs:
        raise ValueError("compare needs at least one trace")
    for index, run in enumerate(runs):
        if not isinstance(run, Trace):
            raise TypeError(
                f"compare takes Traces (pg.Trace.load(path) reads a file), got "
                f"{type(run).__name__} {run!r:.60} as trace {index}"
            )
    return runs


def _speedup(runs: list[Trace], names: list[str], index: int) -> str:
    """A panel heading's speed-up, by the one rule (`stats.speedup_text`): each panel is one
    run, so it says "one run: not a conclusion" beside the ratio."""
    if index == 0 or not runs[index].makespan_ms:
        return ""
    return f"  ({speedup_text([runs[0].makespan_ms], [runs[index].makespan_ms])} vs {names[0]})"


def _speedup_summary(runs: list[Trace], names: list[str]) -> str:
    if len(runs) == 1:
        return f"{names[0]}: makespan {runs[0].makespan_ms:.2f} ms"
    base = runs[0].makespan_ms
    parts = [
        f"{name} ×{base / trace.makespan_ms:.2f}" if trace.makespan_ms else f"{name} ×?"
        for trace, name in zip(runs[1:], names[1:])
    ]
    return f"speed-up against {names[0]} (one run each: not a conclusion): " + ", ".join(parts)
