"""Figures that grow with what they show (issue 40): an attention-like trace of 1, 8 and 32
heads (a scope each, `attention/head<i>`) on two inter-op lanes, each head's matmuls sharded
onto an intra-op helper, drawn with a long title, with and without a search highlight, at the
notebook's width (an inline figure, `FIGURE_WIDTH`) and at an ipympl canvas' width
(`CANVAS_WIDTH_PX`, the height kept, as a fit request leaves it). The traces are made by hand,
so that every run has its shards (a real run shards only what its cost model splits).

Rendered, every text (titles, lane names, the time axis and its label, the legend and each of
its entries) lies inside the figure, every legend entry is there, and a new figure gives its
lanes their full height whatever its legend and title need.
"""

from __future__ import annotations

import matplotlib
import pytest

from parallelgraph.plot import compare, figures, gantt
from parallelgraph.trace import Trace, TraceEvent

matplotlib.use("Agg")

LONG_TITLE = (
    "attention, one scope per head: what the graph is, its thread settings, its makespan, "
    "and what a newcomer is looking at in this picture, in one long sentence"
)
HEADS = (1, 8, 32)
US = 1_000


def event(name: str, lane: str, start: int, end: int, kind: str = "op", shard: int = 0):
    scope = name.rsplit("/", 1)[0] if "/" in name else ""
    return TraceEvent(name, "matmul", scope, "cpu:0", kind, lane, start * US, end * US,
                      shard=shard)  # fmt: skip


def attention_trace(heads: int) -> Trace:
    """x, then per head q, k, v matmuls (each in two shards, the second on the helper), a
    softmax and a matmul, alternating inter-op lanes; then the output projection."""
    events = [event("RandomNormal", "inter-op/0", 0, 10)]
    ends = {"inter-op/0": 10, "inter-op/1": 10}
    for head in range(heads):
        lane = f"inter-op/{head % 2}"
        for op in ("q/MatMul", "k/MatMul", "v/MatMul", "Softmax", "MatMul"):
            name, start = f"attention/head{head}/{op}", ends[lane] + 1
            ends[lane] = end = start + 20
            events.append(event(name, lane, start, end))
            if op.endswith("MatMul"):
                events.append(event(name, lane, start + 1, start + 10, "shard", 0))
                events.append(event(name, "intra-op/0", start + 1, start + 12, "shard", 1))
    start = max(ends.values()) + 1
    events.append(event("attention/out/MatMul", "inter-op/0", start, start + 30))
    events.sort(key=lambda e: (e.start, e.kind != "op"))
    config = {"inter_op_threads": 2, "intra_op_threads": 2}
    return Trace(events, {"graph": f"attention{heads}", "config": config})


@pytest.fixture(scope="module")
def traces() -> dict[int, Trace]:
    return {heads: attention_trace(heads) for heads in HEADS}


def texts_of(figure) -> list:
    """Every text a timeline figure shows: titles, lane names, the time axis' label and its
    ticks inside the view, the legend's title and entries."""
    found = [figure._suptitle] if figure._suptitle is not None else []
    for ax in figure.axes:
        found += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        found += ax.get_yticklabels()
        lo, hi = sorted(ax.get_xlim())
        found += [t for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi]
        legend = ax.get_legend()
        if legend is not None:
            found += [legend.get_title(), *legend.get_texts()]
    return [t for t in found if t.get_visible() and t.get_text()]


def assert_inside(figure) -> None:
    """Render `figure`; every text and the legend lie inside the figure's box."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    box = figure.bbox
    for text in texts_of(figure):
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 0.5 and extent.x1 <= box.x1 + 0.5, text.get_text()
        assert extent.y0 >= box.y0 - 0.5 and extent.y1 <= box.y1 + 0.5, text.get_text()
    for ax in figure.axes:
        legend = ax.get_legend()
        if legend is not None:
            extent = legend.get_window_extent(renderer)
            assert box.x0 <= extent.x0 and extent.x1 <= box.x1 + 0.5
            assert box.y0 <= extent.y0 and extent.y1 <= box.y1 + 0.5


def legend_entries(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def lanes_height(ax) -> float:
    return ax.get_window_extent(ax.figure.canvas.get_renderer()).height


@pytest.mark.parametrize("highlight", [None, "*MatMul*"])
@pytest.mark.parametrize("heads", HEADS)
def test_a_timeline_keeps_every_text_and_legend_entry_inside(traces, heads, highlight):
    trace = traces[heads]
    figure = gantt(trace, title=LONG_TITLE, highlight=highlight)
    ax = figure.axes[0]
    handles = ax.get_legend().parallelgraph_handles
    assert_inside(figure)
    entries = legend_entries(ax)
    assert entries == [h.get_label() for h in handles]  # every entry, none lost
    assert "shard (lower part)" in entries
    assert "…/head0" in entries and (heads != 8 or "…/head7" in entries)
    assert (heads == 32) == entries[-2].endswith("more scope(s)")  # past the 20 colours
    title = ax._left_title
    assert title.get_text().startswith(LONG_TITLE)  # wrapped as drawn, the text kept whole
    renderer = figure.canvas.get_renderer()
    one_line = title.get_fontsize() * figure.dpi / 72 * 1.6
    assert title.get_window_extent(renderer).height > one_line  # more than one line
    # the lanes keep their rows' height: the figure grew for the title and the legend
    rows = figures.rows_inches(len(trace.lanes), 0) * figure.dpi
    assert lanes_height(ax) == pytest.approx(rows, abs=2)


@pytest.mark.parametrize("highlight", [None, "*MatMul*"])
@pytest.mark.parametrize("heads", HEADS)
def test_at_an_ipympl_canvas_width_the_texts_stay_inside(traces, heads, highlight):
    figure = gantt(traces[heads], title=LONG_TITLE, highlight=highlight)
    height = figure.get_figheight()
    figure.set_size_inches(figures.CANVAS_WIDTH_PX / figure.dpi, height)
    assert_inside(figure)
    assert len(legend_entries(figure.axes[0])) == len(
        figure.axes[0].get_legend().parallelgraph_handles
    )


def test_a_legend_beside_the_lanes_when_it_fits_else_below_the_time_axis(traces):
    placed = {}
    for heads in HEADS:
        figure = gantt(traces[heads])
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        ax, legend = figure.axes[0], figure.axes[0].get_legend()
        box = legend.get_window_extent(renderer)
        if box.x0 >= ax.get_window_extent(renderer).x1:
            placed[heads] = f"beside, {legend._ncols} column(s)"
        else:
            assert box.y1 <= ax.xaxis.label.get_window_extent(renderer).y0  # under the axis
            assert legend._ncols > 2  # rows across the width
            placed[heads] = "below"
    # 3 lanes: 4 entries fit beside, 11 in two columns, 22 do not
    assert placed == {1: "beside, 1 column(s)", 8: "beside, 2 column(s)", 32: "below"}


def test_a_resized_canvas_re_lays_the_legend_out_in_the_columns_that_fit(traces):
    figure = gantt(traces[32])
    figure.canvas.draw()
    wide = figure.axes[0].get_legend()._ncols
    figure.set_size_inches(figures.FIT_MIN_PX / figure.dpi, figure.get_figheight())
    assert_inside(figure)
    narrow = figure.axes[0].get_legend()
    assert narrow._ncols < wide
    assert len(narrow.get_texts()) == len(narrow.parallelgraph_handles) == 22


def test_more_lanes_make_a_taller_figure():
    events = [event(f"s{i}/op", f"inter-op/{i}", 0, 1000) for i in range(32)]
    tall, short = Trace(events).plot(), Trace(events[:2]).plot()
    assert tall.get_figheight() - short.get_figheight() == pytest.approx(
        30 * figures.ROW_INCHES, abs=0.05
    )
    assert_inside(tall)


@pytest.mark.parametrize("highlight", [None, "*MatMul*"])
def test_compare_of_eight_heads_keeps_everything_inside(traces, highlight):
    trace = traces[8]
    figure = compare([trace, trace], labels=["one " * 12, "two " * 12], highlight=highlight)
    assert_inside(figure)
    legend = figure.axes[0].get_legend()
    assert len(legend.get_texts()) == len(legend.parallelgraph_handles)
    assert "…/head7" in legend_entries(figure.axes[0])


def test_long_scope_names_keep_their_distinctive_end():
    from parallelgraph.plot.legend import scope_label, scope_labels

    assert scope_label("attention/head7") == "…/head7"
    assert scope_label("net1") == "net1" and scope_label("") == "<root>"
    assert scope_label("model/encoder/layer11/attention") == "…/attention"
    labels = scope_labels(["a_long_prefix/x/head", "another_prefix/y/head"])
    assert len(set(labels)) == 2  # never two entries that read alike
