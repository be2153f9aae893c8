"""What the dashboard's output area says: the summary table, the timeline's figure, and the
status and message lines' words — pure functions of `Result`s, no widgets.

One run, one set of numbers. The timeline draws one repeat, `Result.trace`, and `explain()`,
the overlap, utilization and bound in the table are read off that same repeat. The median of an
odd count of repeats is the makespan of such a repeat, and that repeat is the one drawn. The
median of an even count lies between the two middle repeats; the dashboard draws the lower one
and, wherever it gives the median (status, table, timeline title, the line above `explain()`),
gives the drawn run's makespan beside it, and wherever it gives that makespan, the median:
"median 1090.37 ms of 4 runs; drawn: the lower middle run, makespan 1019.36 ms" (`drawn_words`,
`median_words`). Speed-ups are ratios of medians with their uncertainty, by the package's one
rule (`stats.speedup_text`: "×0.97 (95% CI 0.81-1.12, within noise)", or "×0.65 (one run: not
a conclusion)" when the pin or the current run has a single run), in the status, the table and
on the timeline alike: the bootstrap is seeded, so the same runs give the same words in all
three. A pin of another graph is not compared (`comparable`).
"""

from __future__ import annotations

import html
import traceback
from collections.abc import Sequence
from typing import Any, Literal

from ..experiments import stats
from .runner import Result

#: How the dashboard's last run ended ("not run" before the first, "failed" when it raised):
#: `measure.Ending`'s three and those two.
LastEnding = Literal["not run", "done", "stopped", "interrupted", "failed"]


def comparable(result: Result, pinned: Sequence[Result]) -> list[Result]:
    """The pinned runs of the same graph and parameters (the others are not compared)."""
    return [pin for pin in pinned if pin.settings.same_graph(result.settings) and pin.runs]


def figure_for(result: Result, pinned: Sequence[Result] = (), highlight: Sequence[str] = ()) -> Any:
    """The Gantt of the run drawn (`Result.trace`); with pins of the same graph, all on one time
    axis (pins first, oldest on top). `highlight`: op-name patterns (the search box's) drawn as
    usual, the other ops faded, each panel's title ending with how many matched.

    Every title names the run it draws and its makespan (and, for an even count, the median
    beside it); the speed-ups on top are those of the table (ratios of medians with their CIs,
    `speedup_text`), not ratios of the drawn runs' makespans, which `plot.compare` would print
    and which could contradict them. One line per pin.
    """
    from ..plot import compare, gantt
    from ..plot.layout import fit_height

    patterns = tuple(highlight) or None
    pins = comparable(result, pinned)
    if not pins:
        figure = gantt(result.trace, highlight=patterns)
        ax = figure.axes[0]
        head, note = _title_and_note(ax)
        ax.set_title(f"{head} ({drawn_words(result)}){note}", loc="left")
        fit_height(figure)  # the longer title may wrap to one more line: the lanes keep theirs
        return figure
    runs = [*pins, result]
    labels = [f"pin {pin_number(pinned, p)} ({p.knobs.label()})" for p in pins]
    labels.append(f"current ({result.knobs.label()})")
    speedups = "\n".join(f"{speedup_text(result, p)} vs pin {pin_number(pinned, p)}" for p in pins)
    figure = compare(
        [r.trace for r in runs],
        labels=labels,
        title=f"current's speed-up (ratio of medians, as in the table):\n{speedups}",
        highlight=patterns,
    )
    panels = [ax for ax in figure.axes if hasattr(ax, "parallelgraph_bars")]
    for ax, run, label in zip(panels, runs, labels):
        note = _title_and_note(ax)[1]
        ax.set_title(
            f"{label}: makespan {run.trace.makespan_ms:.2f} ms ({drawn_words(run)}){note}",
            loc="left",
        )
    fit_height(figure)
    return figure


def _title_and_note(ax: Any) -> tuple[str, str]:
    """A timeline panel's title without the highlight's line, and that line ("\n..."; "" when
    drawn without a highlight)."""
    title = ax.get_title(loc="left")
    found = getattr(ax, "parallelgraph_highlight", None)
    if found is not None and title.endswith(found.note):
        return title[: -len(found.note)].rstrip("\n"), f"\n{found.note}"
    return title, ""


def pin_number(pinned: Sequence[Result], pin: Result) -> int:
    return next(i for i, p in enumerate(pinned, 1) if p is pin)


def summary_rows(result: Result, pinned: Sequence[Result] = ()) -> list[tuple[str, ...]]:
    """(metric, current, pin 1, ...) rows of the summary table, as text."""
    runs = [result, *pinned]
    rows: list[tuple[str, ...]] = [
        ("graph", *(r.settings.graph_label() for r in runs)),
        ("size", *(r.size_text() for r in runs)),
        ("run", *(_run_text(r) for r in runs)),
        ("median makespan", *(_median_text(r) for r in runs)),
        ("drawn and explained", *(_drawn_text(r) for r in runs)),
        ("current's speed-up vs this", "—", *(speedup_text(result, p) for p in pinned)),
        ("overlap of the scopes", *(_overlap_text(r) for r in runs)),
        ("utilization (mean of lanes)", *(_utilization_text(r) for r in runs)),
        ("critical-path bound", *(_bound_text(r) for r in runs)),
        ("repeats, wall per run", *(_wall_text(r) for r in runs)),
    ]
    return rows


def summary_html(result: Result, pinned: Sequence[Result] = ()) -> str:
    """The summary table as HTML (inline styles: widget HTML gets no notebook styling)."""
    header = ["", "current"] + [f"pin {i}" for i in range(1, len(pinned) + 1)]
    cell = "padding:2px 10px;text-align:left;border-bottom:1px solid #ddd;white-space:nowrap"
    head = "".join(f"<th style='{cell}'>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td style='{cell}'>{html.escape(c)}</td>" for c in row) + "</tr>"
        for row in summary_rows(result, pinned)
    )
    return (
        "<table class='pg-summary-table' style='border-collapse:collapse;font-size:13px'>"
        f"<tr>{head}</tr>{body}</table>"
    )


def _run_text(result: Result) -> str:
    k = result.knobs
    text = f"{k.executor} on {k.device}: {k.label()}"
    return text if result.ending == "done" else f"{text} ({result.ending})"


def _median_text(result: Result) -> str:
    q1, q3 = result.measurement.quartiles_ms()
    return f"{result.median_ms:.2f} ms (IQR {q1:.2f}-{q3:.2f})"


def drawn_words(result: Result) -> str:
    """Which repeat the timeline and explain() show, in a few words: "the only run", "the median
    of 5 runs", or (an even count, whose median lies between two runs) "the lower middle of 4
    runs; median 1090.37 ms"."""
    runs = result.runs
    if runs == 1:
        return "the only run"
    if runs % 2:
        return f"the median of {runs} runs"
    return f"the lower middle of {runs} runs; median {result.median_ms:.2f} ms"


def median_words(result: Result) -> str:
    """The median for the status line, with the run drawn where the two differ: "median
    1019.36 ms of 5 runs, the run drawn", or "median 1090.37 ms of 4 runs; drawn: the lower
    middle run, makespan 1019.36 ms"."""
    runs = result.runs
    text = f"median {result.median_ms:.2f} ms of {runs} run{'s' if runs != 1 else ''}"
    if runs % 2:
        return f"{text}, the run drawn"
    return f"{text}; drawn: the lower middle run, makespan {result.trace.makespan_ms:.2f} ms"


def _drawn_text(result: Result) -> str:
    return f"makespan {result.trace.makespan_ms:.2f} ms, {drawn_words(result)}"


def speedup_text(result: Result, pin: Result) -> str:
    """The current run's speed-up against a pin, as the status, the table and the timeline
    give it: `stats.speedup_text` of their makespans ("×1.89 (95% CI 1.80-1.97, faster)",
    "×0.65 (one run: not a conclusion)"); a pin of another graph is not compared."""
    if not pin.settings.same_graph(result.settings):
        return "another graph: not compared"
    if not pin.runs or not result.runs:
        return "—"
    return stats.speedup_text(pin.measurement.makespans_ms, result.measurement.makespans_ms)


def _overlap_text(result: Result) -> str:
    """Two scopes: their overlap. More: as a group, as explain() says them — how many pairs
    ran side by side (overlap at least `causes.OVERLAPPED`) and the median overlap."""
    from ..explain.causes import OVERLAPPED

    overlap = result.overlap()
    if overlap is None:
        return "— (no independent scopes)"
    scopes = result.built.scopes
    if len(scopes) == 2:
        return f"{scopes[0]}/{scopes[1]} {overlap:.2f}"
    overlaps = sorted(result.pair_overlaps())
    side_by_side = sum(value >= OVERLAPPED for value in overlaps)
    return (
        f"{len(scopes)} scopes: {side_by_side} of {len(overlaps)} pairs side by side "
        f"(median {overlaps[len(overlaps) // 2]:.2f})"
    )


def _utilization_text(result: Result) -> str:
    return f"{100 * result.utilization():.0f}% of {len(result.trace.lanes)} lane(s)"


def _bound_text(result: Result) -> str:
    bound = result.bound_ms()
    ratio = f", makespan {result.trace.makespan_ms / bound:.2f}x it" if bound else ""
    return f"{bound:.2f} ms{ratio}"


def _wall_text(result: Result) -> str:
    return f"{result.runs}, {result.measurement.median_wall_ms:.2f} ms"


def error_html(error: BaseException) -> str:
    """An exception for the message line: one line in red, the traceback folded away."""
    summary = html.escape(f"{type(error).__name__}: {error}")
    details = html.escape("".join(traceback.format_exception(error)))
    return (
        f"<div class='pg-error' style='color:#b00020'><b>Run failed:</b> {summary}"
        f"<details><summary>traceback</summary><pre style='font-size:11px'>{details}</pre>"
        "</details></div>"
    )


def explained_html(result: Result) -> str:
    """`explain()` of the run drawn, headed by which run that is, so that its makespan is read
    beside the median the status and the table give."""
    head = (
        "<div class='pg-explained-run' style='color:#555'>Explaining the run drawn: makespan "
        f"{result.trace.makespan_ms:.2f} ms, {html.escape(drawn_words(result))}.</div>"
    )
    return head + result.trace.explain()._repr_html_()


def info_html(text: str) -> str:
    """A plain answer for the message line (what Pin did)."""
    return f"<div class='pg-info' style='color:#2a5d8a'>{html.escape(text)}</div>"


def notes_html(lines: Sequence[str]) -> str:
    """Notes for the message line (soft placement, a stop); empty if none."""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return f"<div class='pg-notes' style='color:#8a5a00'><ul>{items}</ul></div>" if items else ""


def ending_text(result: Result, how: str) -> str:
    """How a run ended, in words, for the status and message lines."""
    planned = result.knobs.repeats
    if how == "done":
        return f"done: {result.runs} of {planned} runs"
    cause = {"stopped": "stopped (Stop)", "interrupted": "interrupted (kernel interrupt)"}[how]
    if not result.runs:
        return f"{cause} before a traced run ended: nothing measured"
    return f"{cause} after {result.runs} of {planned} runs, kept"


__all__ = [
    "LastEnding",
    "comparable",
    "drawn_words",
    "ending_text",
    "error_html",
    "explained_html",
    "figure_for",
    "info_html",
    "median_words",
    "notes_html",
    "pin_number",
    "speedup_text",
    "summary_html",
    "summary_rows",
]
