"""Gantt timelines with matplotlib (imported lazily; figures are built without pyplot, so they
work in scripts, on servers and inline in notebooks alike).

One row per lane (inter-op workers, then intra-op helpers); bars are coloured by top-level scope;
shards are drawn as thinner bars in the lower half of the row of the thread that ran them, so a
sharded op on its own lane shows its shards nested under it; op names are written on bars wide
enough to hold them.
"""

from __future__ import annotations

from typing import Any

from .trace import Trace

PALETTE = (
    "#4C72B0",
    "#DD8452",
    "#55A868",
    "#C44E52",
    "#8172B3",
    "#937860",
    "#DA8BC3",
    "#8C8C8C",
    "#CCB974",
    "#64B5CD",
)


def _new_figure(rows: int, width: float = 11.0) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    _show_figures_in_notebooks(Figure)
    figure = Figure(figsize=(width, 1.2 + 0.45 * max(rows, 2)), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _show_figures_in_notebooks(figure_type: type) -> None:
    """In IPython, display a returned Figure as a PNG (our figures bypass pyplot, so the
    inline backend would not show them, and scripts never accumulate open pyplot figures)."""
    import sys

    if "IPython" not in sys.modules:
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    shell.display_formatter.formatters["image/png"].for_type(figure_type, _png_bytes)


def _png_bytes(figure: Any) -> bytes:
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def scope_colors(traces: list[Trace]) -> dict[str, str]:
    """One colour per top-level scope, stable across the traces drawn together."""
    colors: dict[str, str] = {}
    for trace in traces:
        for scope in trace.scopes():
            colors.setdefault(scope, PALETTE[len(colors) % len(PALETTE)])
    return colors


def gantt(
    trace: Trace,
    ax: Any = None,
    title: str | None = None,
    colors: dict[str, str] | None = None,
    time_origin: int | None = None,
    legend: bool = True,
) -> Any:
    """Draw `trace` as a Gantt chart on `ax` (a new Figure if None); return the Figure.

    >>> trace.plot().savefig("timeline.png")   # doctest: +SKIP
    """
    if ax is None:
        ax = _new_figure(len(trace.lanes)).add_subplot()
    colors = colors or scope_colors([trace])
    origin = trace.start if time_origin is None else time_origin
    lanes = trace.lanes
    row_of = {lane: row for row, lane in enumerate(lanes)}
    span_ms = max(trace.makespan_ms, 1e-6)
    for event in trace.events:
        row = row_of[event.lane]
        left, width = (event.start - origin) / 1e6, event.duration / 1e6
        color = colors.get(event.scope.split("/", 1)[0], "#999999")
        if event.kind == "shard":
            ax.barh(
                row + 0.2,
                width,
                left=left,
                height=0.35,
                color=color,
                alpha=0.55,
                edgecolor="white",
                linewidth=0.3,
            )
            continue
        ax.barh(
            row,
            width,
            left=left,
            height=0.8,
            color=color,
            edgecolor="black",
            linewidth=0.4,
            alpha=0.9,
        )
        label = event.name.rsplit("/", 1)[-1]
        if width > span_ms * 0.012 * max(len(label), 3) and len(trace.events) < 400:
            ax.text(
                left + width / 2,
                row - 0.18,
                label,
                ha="center",
                va="center",
                fontsize=7,
                color="white",
                clip_on=True,
            )
    ax.set_yticks(range(len(lanes)), lanes, fontsize=8)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlabel("time (ms)")
    ax.grid(axis="x", alpha=0.3)
    if title is None:
        config = trace.metadata.get("config", {})
        inter, intra = config.get("inter_op_threads", "?"), config.get("intra_op_threads", "?")
        title = (
            f"{trace.metadata.get('graph', 'trace')}: inter-op {inter}, intra-op {intra} "
            f"— makespan {trace.makespan_ms:.1f} ms"
        )
    ax.set_title(title, fontsize=10)
    if legend and colors:
        from matplotlib.patches import Patch

        handles = [Patch(color=c, label=s or "<root>") for s, c in colors.items()]
        ax.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False
        )
    return ax.figure


def compare(traces: list[Trace], labels: list[str] | None = None) -> Any:
    """Timelines stacked on one time axis (each from its own start), speed-up in the title."""
    labels = labels or [f"run {i + 1}" for i in range(len(traces))]
    figure = _new_figure(sum(len(t.lanes) for t in traces) + len(traces))
    heights = [max(len(t.lanes), 1) + 1 for t in traces]
    axes = figure.subplots(len(traces), 1, sharex=True, gridspec_kw={"height_ratios": heights})
    axes = list(axes) if len(traces) > 1 else [axes]
    colors = scope_colors(traces)
    base = traces[0].makespan_ms
    for ax, trace, label in zip(axes, traces, labels):
        speedup = base / trace.makespan_ms if trace.makespan_ms else float("nan")
        gantt(
            trace,
            ax=ax,
            colors=colors,
            legend=ax is axes[0],
            title=f"{label}: {trace.makespan_ms:.1f} ms (x{speedup:.2f} vs {labels[0]})",
        )
    for ax in axes[:-1]:
        ax.set_xlabel("")
    return figure
