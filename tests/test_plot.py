"""Gantt timelines: lanes, legend, labels, zoom, arrows, shards, files, compare, big traces."""

from __future__ import annotations

import itertools
import random

import matplotlib
import pytest

import parallelgraph as pg
from parallelgraph.plot import compare, gantt
from parallelgraph.trace import Trace, TraceEvent

matplotlib.use("Agg")

MS = 1_000_000


def op(name, lane, start, end, inputs=(), kind="op"):
    scope = name.rsplit("/", 1)[0] if "/" in name else ""
    return TraceEvent(name, "matmul", scope, "cpu:0", kind, lane, int(start * MS), int(end * MS),
                      inputs=tuple(inputs))  # fmt: skip


def shard(name, lane, start, end, index):
    scope = name.rsplit("/", 1)[0]
    return TraceEvent(name, "matmul", scope, "cpu:0", "shard", lane, int(start * MS),
                      int(end * MS), shard=index)  # fmt: skip


def two_networks(scale: float = 1.0) -> Trace:
    """Ten ops in two scopes on two inter-op lanes; the first matmul has three shards, one of
    them on an intra-op helper; net1/Add and out are too narrow for a label."""
    s = scale
    events = [
        op("net1/RandomNormal", "inter-op/0", 0, 2 * s),
        op("net2/RandomNormal", "inter-op/1", 0.1 * s, 2.2 * s),
        op("net1/MatMul", "inter-op/0", 2.1 * s, 6 * s, ["net1/RandomNormal", "net1/w1"]),
        shard("net1/MatMul", "inter-op/0", 2.2 * s, 4 * s, 0),
        shard("net1/MatMul", "intra-op/0", 2.3 * s, 4.1 * s, 1),
        shard("net1/MatMul", "inter-op/0", 4.1 * s, 5.9 * s, 2),
        op("net2/MatMul", "inter-op/1", 2.3 * s, 6.5 * s, ["net2/RandomNormal"]),
        op("net1/Add", "inter-op/0", 6.1 * s, 6.12 * s, ["net1/MatMul"]),
        op("net2/Add", "inter-op/1", 6.6 * s, 7.0 * s, ["net2/MatMul"]),
        op("net1/MatMul_1", "inter-op/0", 6.4 * s, 8 * s, ["net1/Add"]),
        op("net2/MatMul_1", "inter-op/1", 7.1 * s, 8.2 * s, ["net2/Add"]),
        op("out", "inter-op/0", 8.3 * s, 8.32 * s, ["net1/MatMul_1", "net2/MatMul_1"]),
    ]
    events.sort(key=lambda e: (e.start, e.kind != "op"))
    config = {"inter_op_threads": 2, "intra_op_threads": 2}
    return Trace(events, {"graph": "hand", "config": config})


def synthetic(count: int, lanes: int = 6, seed: int = 1) -> Trace:
    rng = random.Random(seed)
    ends, events, names = [0.0] * lanes, [], []
    while len(events) < count:
        lane = rng.randrange(lanes)
        start = ends[lane] + rng.uniform(0.002, 0.02)
        ends[lane] = end = start + rng.uniform(0.01, 0.4)
        name = f"s{rng.randrange(3)}/op{len(events)}"
        if lane < lanes // 2:
            events.append(op(name, f"inter-op/{lane}", start, end, names[-5:][:2]))
            names.append(name)
        else:
            events.append(shard(name, f"intra-op/{lane}", start, end, 0))
    return Trace(events)


def child(ax, gid):
    found = [artist for artist in ax.get_children() if artist.get_gid() == gid]
    return found[0] if found else None


@pytest.fixture(scope="module")
def drawn():
    """The hand trace drawn once, with arrows, rendered (so draw-time decisions are made)."""
    figure = gantt(two_networks(), arrows=True)
    figure.canvas.draw()
    return figure


def test_one_y_tick_per_lane_grouped_by_pool():
    lanes = ["copy/0", "stream/0", "intra-op/1", "inter-op/1", "intra-op/0", "inter-op/0"]
    trace = Trace([op(f"n/op{i}", lane, i, i + 1) for i, lane in enumerate(lanes)])
    ax = gantt(trace).axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["inter-op/0", "inter-op/1", "intra-op/0", "intra-op/1", "stream/0", "copy/0"]
    assert list(ax.get_yticks()) == list(range(6))


def test_lanes_in_order_and_figure_returned(drawn):
    ax = drawn.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "inter-op/0",
        "inter-op/1",
        "intra-op/0",
    ]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # first lane on top
    assert "makespan 8.32 ms" in ax.get_title(loc="left")
    assert "inter-op 2, intra-op 2" in ax.get_title(loc="left")


def test_legend_names_the_scopes_outside_the_axes(drawn):
    ax = drawn.axes[0]
    legend = ax.get_legend()
    entries = [t.get_text() for t in legend.get_texts()]
    assert entries[:3] == ["net1", "net2", "<root>"]
    assert "shard (lower part)" in entries and "dependency" in entries
    renderer = drawn.canvas.get_renderer()
    assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1


def test_labels_on_wide_bars_only(drawn):
    shown = child(drawn.axes[0], "bar-labels").drawn_labels
    assert {"RandomNormal", "MatMul", "MatMul_1"} <= set(shown)
    assert "Add" in shown  # net2/Add is 0.4 ms wide, net1/Add only 0.02 ms
    assert shown.count("Add") == 1
    assert "out" not in shown


def test_labels_can_be_turned_off():
    figure = gantt(two_networks(), labels=False)
    assert child(figure.axes[0], "bar-labels") is None


def test_bars_are_collections_with_edges_only_when_wide(drawn):
    ax = drawn.axes[0]
    bars = child(ax, "op-bars")
    assert len(bars.get_paths()) == 9
    assert len(ax.patches) < 3  # the lane-group bands only, no barh rectangles
    names = [e.name for e in two_networks().ops()]
    widths = dict(zip(names, bars.get_linewidths()))
    edges = dict(zip(names, bars.get_edgecolors().tolist()))
    faces = dict(zip(names, bars.get_facecolors().tolist()))
    assert widths["net1/MatMul"] > 0 and widths["out"] > 0
    assert edges["net1/MatMul"] != faces["net1/MatMul"]  # a dark edge
    assert edges["out"] == faces["out"]  # a thin bar: only a hairline in its own colour


def test_shards_drawn_inside_their_op_and_on_helpers(drawn):
    shards = child(drawn.axes[0], "shard-bars")
    boxes = [path.get_extents() for path in shards.get_paths()]
    assert len(boxes) == 3
    rows = sorted(round((box.y0 + box.y1) / 2) for box in boxes)
    assert rows == [0, 0, 2]
    for box in boxes:
        row = round((box.y0 + box.y1) / 2)
        assert row < box.y0 < box.y1 < row + 0.4  # lower part of the row, thinner than ops
    ops = child(drawn.axes[0], "op-bars").get_paths()
    matmul = ops[[e.name for e in two_networks().ops()].index("net1/MatMul")].get_extents()
    for box in boxes:
        if round(box.y0) == 0:
            assert matmul.x0 <= box.x0 and box.x1 <= matmul.x1


def test_zoom_limits_axis_and_drops_events_outside():
    figure = gantt(two_networks(), t0=2.0, t1=5.0, arrows=True)
    ax = figure.axes[0]
    assert ax.get_xlim() == (2.0, 5.0)
    visible_ops = {"net1/MatMul", "net2/MatMul", "net1/RandomNormal", "net2/RandomNormal"}
    assert len(child(ax, "op-bars").get_paths()) == len(visible_ops)
    assert len(child(ax, "shard-bars").get_paths()) == 3
    arrows = child(ax, "dependency-arrows")
    assert arrows.N == 2  # RandomNormal -> MatMul in each net; net1/w1 is not an event
    assert "window 2–5 ms" in ax.get_title(loc="left")
    with pytest.raises(ValueError, match="empty zoom window"):
        gantt(two_networks(), t0=5, t1=2)


def test_arrows_only_when_asked(drawn):
    arrows = child(drawn.axes[0], "dependency-arrows")
    assert arrows is not None and arrows.N == 8  # net1/w1 is not an event
    assert child(gantt(two_networks()).axes[0], "dependency-arrows") is None


def test_saves_png_and_svg(tmp_path, drawn):
    drawn.savefig(tmp_path / "t.png")
    drawn.savefig(tmp_path / "t.svg")
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = (tmp_path / "t.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "RandomNormal" in svg


def test_draws_on_a_given_axes():
    from matplotlib.figure import Figure

    figure = Figure()
    ax = figure.add_subplot()
    assert gantt(two_networks(), ax) is figure
    assert len(ax.get_yticks()) == 3
    assert two_networks().plot(ax=ax, title="mine") is figure
    assert ax.get_title(loc="left") == "mine"


def test_compare_one_axes_per_trace_with_speedup():
    slow, fast = two_networks(), two_networks(scale=0.5)
    figure = compare([slow, fast], labels=["inter-op 1", "inter-op 2"])
    axes = figure.axes
    assert len(axes) == 2
    assert axes[0].get_title(loc="left") == "inter-op 1: makespan 8.32 ms"
    assert "×2.00 (one run: not a conclusion) vs inter-op 1" in axes[1].get_title(loc="left")
    assert "inter-op 2 ×2.00" in figure.get_suptitle()
    assert "one run each: not a conclusion" in figure.get_suptitle()
    assert axes[0].get_xlim() == axes[1].get_xlim()  # one shared time axis
    legend = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert legend[:3] == ["net1", "net2", "<root>"]
    again = compare(slow, fast, labels=["a", "b"])
    assert len(again.axes) == 2 and "b ×2.00" in again.get_suptitle()


def test_empty_trace_and_imported_trace_without_config():
    assert gantt(Trace()).axes[0].get_yticks().size == 0
    trace = Trace([op("a/x", "inter-op/0", 0, 1)])
    assert gantt(trace).axes[0].get_title(loc="left").startswith("trace — makespan 1.00 ms")


def test_five_thousand_events_draw(tmp_path):
    trace = synthetic(5000)
    figure = gantt(trace, arrows=True)
    figure.savefig(tmp_path / "big.png", dpi=60)
    ax = figure.axes[0]
    ops, shards = child(ax, "op-bars"), child(ax, "shard-bars")
    assert len(ops.get_paths()) + len(shards.get_paths()) == 5000
    assert (tmp_path / "big.png").stat().st_size > 5_000


def test_copies_streams_and_workers():
    events = [
        op("n/h2d", "copy/0", 0, 1, kind="copy"),
        op("n/MatMul", "stream/0", 1, 3, ["n/h2d"]),
        op("n/d2h", "copy/0", 3, 4, ["n/MatMul"], kind="copy"),
        op("n/MatMul", "copy/1", 3.5, 4.5, kind="copy"),  # a copy of MatMul's output
        op("m/x", "worker-tcp://10.0.0.1:4000/0", 0, 2),
        op("m/y", "worker-tcp://10.0.0.2:4000/0", 2, 2),  # an instant
    ]
    figure = gantt(Trace(events), arrows=True)
    figure.canvas.draw()
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "stream/0",
        "copy/0",
        "copy/1",
        "worker-tcp://10.0.0.1:4000/0",
        "worker-tcp://10.0.0.2:4000/0",
    ]
    copies = child(ax, "copy-bars")
    assert len(copies.get_paths()) == 3 and copies.get_hatch() == "////"
    assert child(ax, "dependency-arrows").N == 3  # h2d -> MatMul -> d2h, MatMul -> its copy
    assert {"h2d", "MatMul", "d2h"} <= set(child(ax, "bar-labels").drawn_labels)
    assert "copy" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_compare_title_and_options():
    figure = compare(two_networks(), two_networks(0.5), title="mine", arrows=True, t0=1, t1=3)
    assert figure.get_suptitle() == "mine"
    assert all(ax.get_xlim() == (1.0, 3.0) for ax in figure.axes)
    assert child(figure.axes[0], "dependency-arrows") is not None
    with pytest.raises(ValueError, match="2 traces but 1 labels"):
        compare(two_networks(), two_networks(), labels=["one"])


def extents(figure, texts):
    renderer = figure.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in texts if t.get_visible() and t.get_text()]


def assert_nothing_cut_off_or_overlapping(figure):
    """Lane names, titles, the time axis and the legend lie inside the figure; the legend is
    right of every panel; each panel's title sits between it and the panel above."""
    figure.canvas.draw()
    width, height = figure.bbox.width, figure.bbox.height
    axes = sorted(figure.axes, key=lambda ax: -ax.get_position().y1)
    texts = [figure._suptitle] if figure._suptitle else []
    renderer = figure.canvas.get_renderer()
    boxes = []
    for ax in axes:
        boxes += extents(figure, [ax._left_title, ax.xaxis.label, *ax.get_yticklabels()])
        frame = ax.get_window_extent(renderer)
        ticks = extents(figure, ax.get_xticklabels())  # only those inside the view are drawn
        boxes += [box for box in ticks if frame.x0 - 1 <= (box.x0 + box.x1) / 2 <= frame.x1 + 1]
    for box in boxes + extents(figure, texts):
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, box
    legends = [*figure.legends, *(ax.get_legend() for ax in axes if ax.get_legend())]
    for legend in legends:
        box = legend.get_window_extent(renderer)
        assert box.x1 <= width and box.y0 >= 0 and box.y1 <= height
        assert all(box.x0 >= ax.get_window_extent(renderer).x1 for ax in axes)
    for upper, lower in itertools.pairwise(axes):
        (title,) = extents(figure, [lower._left_title])
        assert lower.get_window_extent(renderer).y1 <= title.y0
        assert title.y1 <= upper.get_window_extent(renderer).y0


@pytest.mark.parametrize("size", [None, (6.0, 3.0), (16.0, 8.0)])
def test_timeline_layout_keeps_every_text_inside_and_apart(size):
    trace = two_networks()
    for figure in (gantt(trace, arrows=True), compare([trace, trace], labels=["one", "two"])):
        if size:
            figure.set_size_inches(*size)
        assert_nothing_cut_off_or_overlapping(figure)


def test_timeline_layout_leaves_room_for_long_lane_names_and_hand_placed_axes_alone():
    long_lane = "worker-tcp://10.0.0.1:40000/0"
    trace = Trace([op("a/x", long_lane, 0, 1), op("b/y", "inter-op/0", 0, 2)])
    figure = gantt(trace)
    assert_nothing_cut_off_or_overlapping(figure)
    inset = figure.add_axes((0.9, 0.1, 0.05, 0.8))
    figure.canvas.draw()
    assert tuple(inset.get_position().bounds) == pytest.approx((0.9, 0.1, 0.05, 0.8))


def test_nested_events_are_drawn_as_sub_rows_and_labels_never_overlap():
    from parallelgraph.recorded import framework_trace

    trace = framework_trace("pytorch-eager")  # aten::linear holds aten::addmm, and deeper
    figure = trace.plot()
    figure.canvas.draw()
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == trace.lanes == ["cpu/python"]
    deepest = max(e.depth for e in trace.events)
    assert ax.get_ylim() == (deepest + 0.5, -0.5)  # one sub-row per depth
    labels = child(ax, "bar-labels")
    assert {"linear", "addmm"} <= {text.split("::")[-1] for text in labels.drawn_labels}
    drawn = [(labels.y[i], labels.left[i], labels.right[i]) for i in labels.drawn_indices]
    for (y1, l1, r1), (y2, l2, r2) in itertools.combinations(drawn, 2):
        assert y1 != y2 or r1 <= l2 or r2 <= l1  # never two labels on one spot


def test_legend_stays_readable_with_many_scopes():
    events = [op(f"layer{i}/op", "inter-op/0", i, i + 1) for i in range(30)]
    figure = Trace(events).plot()
    texts = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert len(texts) == 21 and texts[-1] == "+10 more scope(s)"
    colors = pg.plot.scope_colors([Trace(events)])
    distinct = [c for c in colors.values() if c != pg.plot.OTHER_COLOR]
    assert len(distinct) == len(set(distinct)) == 20  # no colour repeated


def test_compare_reports_the_overlap_of_two_branches_in_each_panel():
    from parallelgraph.recorded import framework_trace

    fork = framework_trace("pytorch-fork")
    pools = [f"lane:{lane}" for lane in fork.lanes if "PTThreadPool" in lane]
    figure = pg.plot.compare([fork], labels=["fork"], branches=tuple(pools))
    assert "overlap lane:cpu/PTThreadPool" in figure.axes[0].get_title(loc="left")


def test_hovering_a_bar_shows_its_name_shapes_and_duration():
    """The tooltip ipympl shows: the same handler, fed a mouse event on an Agg canvas."""
    from matplotlib.backend_bases import MouseEvent

    import parallelgraph.experiments.presets as presets

    preset = presets.two_networks("tiny")
    with pg.Session(preset.graph, pg.Config(inter_op_threads=1)) as session:
        _, trace = session.run(preset.fetch, trace=True)
    figure = trace.plot()
    figure.canvas.draw()
    ax = figure.axes[0]
    tooltip = child(ax, "hover-tooltip")
    # the widest matmul: a run's timings decide the bars' widths, and a sub-pixel bar's centre
    # can lie on its neighbour
    matmul = max((e for e in trace.ops() if e.op_type == "matmul"), key=lambda e: e.end - e.start)
    bars = ax.parallelgraph_bars
    x = (bars.window.ms(matmul.start) + bars.window.ms(matmul.end)) / 2
    y = ax.parallelgraph_bars.rows.y(matmul)
    px, py = ax.transData.transform((x, y))
    figure.canvas.callbacks.process(
        "motion_notify_event", MouseEvent("motion_notify_event", figure.canvas, px, py)
    )
    assert tooltip.get_visible()
    text = tooltip.get_text()
    assert text.startswith(matmul.name) and "(8, 16) x (16, 16) -> (8, 16) float32" in text
    assert f"lane {matmul.lane}" in text and "GFLOP" in text
    assert matmul.name in ax.format_coord(x, y)
    # off the bars: the tooltip goes away
    px, py = ax.transData.transform((x, len(trace.lanes) + 5))
    figure.canvas.callbacks.process(
        "motion_notify_event", MouseEvent("motion_notify_event", figure.canvas, px, py)
    )
    assert not tooltip.get_visible()


def test_shapes_are_recorded_and_survive_save_and_load(tmp_path):
    import parallelgraph.experiments.presets as presets

    preset = presets.two_networks("tiny")
    with pg.Session(preset.graph) as session:
        _, trace = session.run(preset.fetch, trace=True)
    assert all(e.shapes.endswith("float32") for e in trace.ops())
    assert pg.Trace.load(trace.save(tmp_path / "t.json")).events == trace.events


def test_waiting_is_hatched_setup_grey_and_long_names_keep_the_chart_wide():
    """Issue 21: a Ray-like trace (56-hex-digit worker ids, a driver that waits, a model that
    loads first): the waiting and setup spans are drawn behind their lanes, the lane and scope
    names are shortened with their unique part kept, and the chart keeps >= 75% of the width."""
    from parallelgraph.trace import EventRole

    SETUP, WAIT = EventRole.SETUP, EventRole.WAITING
    worker = "ray/worker " + "3f9a" * 14
    scope = "task::a_very_long_remote_function_name_in_a_module"
    events = [
        TraceEvent("load_model", "setup", "", "cpu", "op", "ray/driver", 0, 2 * MS, role=SETUP),
        TraceEvent("ray.get", "wait", "", "cpu", "op", "ray/driver", 2 * MS, 9 * MS, role=WAIT),
        op(f"{scope}/net1", worker + "1", 2.5, 8),
        op(f"{scope}/net2", worker + "2", 2.6, 8.5),
    ]
    figure = gantt(Trace(events))
    figure.canvas.draw()
    ax = figure.axes[0]
    gids = {artist.get_gid() for artist in ax.collections}
    assert {"waiting-spans", "setup-spans"} <= gids
    waiting = next(a for a in ax.collections if a.get_gid() == "waiting-spans")
    assert waiting.get_hatch()
    labels = [tick.get_text() for tick in ax.get_yticklabels()]
    assert "ray/driver" in labels and len(set(labels)) == 3
    assert all(len(label) <= 28 for label in labels), labels
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert "waiting" in legend and "setup" in legend
    assert all(len(text) <= 14 for text in legend), legend
    assert ax.get_position().width >= 0.75, ax.get_position().width


def test_a_scripts_pyplot_savefig_draws_the_timeline(tmp_path):
    """Issue 23: `trace.plot(); plt.savefig(...)` in a script saved an empty image."""
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "from parallelgraph.recorded import framework_trace\n"
        "framework_trace('pytorch-eager').plot()\nplt.savefig('out.png')\n"
    )
    subprocess.run([sys.executable, str(script)], cwd=tmp_path, check=True, timeout=120)
    import matplotlib.image

    image = matplotlib.image.imread(tmp_path / "out.png")
    assert (image[..., :3] < 0.9).mean() > 0.02  # bars and text, not a blank page


def test_the_dashboard_without_ipywidgets_names_the_extra():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['ipywidgets'] = None; import parallelgraph as pg; pg.dashboard()"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    assert "pg.dashboard needs ipywidgets" in result.stderr
    assert "pip install 'parallelgraph[lab]'" in result.stderr


def test_a_scope_has_one_colour_in_gantt_and_compare_whichever_trace_comes_first():
    """Notebook 05 drew net1 blue in one plot and orange in the next: colours are now the
    process's, not the plot's."""
    forward = two_networks()
    backward = Trace([e for e in forward.events if e.scope != "net1"]
                     + [e for e in forward.events if e.scope == "net1"])  # fmt: skip
    assert backward.scopes()[0] == "net2"

    def net1_color(ax):
        bars = child(ax, "op-bars")
        ops = [e for e in ax.parallelgraph_bars.events if e.kind == "op"]
        return {tuple(bars.faces[i]) for i, e in enumerate(ops) if e.scope == "net1"}

    alone = net1_color(gantt(backward).axes[0])
    assert len(alone) == 1
    assert net1_color(gantt(forward).axes[0]) == alone
    assert all(net1_color(ax) == alone for ax in compare(forward, backward).axes)


def test_highlight_on_a_big_trace_fades_only_the_others():
    trace = synthetic(3000)
    figure = gantt(trace, highlight="s1/*")
    ax = figure.axes[0]
    found = ax.parallelgraph_highlight
    ops = [e for e in ax.parallelgraph_bars.events if e.kind == "op"]
    assert found.matched == sum(1 for e in ops if e.name.startswith("s1/")) > 0
    faces = child(ax, "op-bars").faces
    faded = [min(faces[i][:3]) > 0.75 for i in range(len(ops))]
    assert faded == [not e.name.startswith("s1/") for e in ops]
    figure.canvas.draw()


# -- wheel and keyboard zoom (plot.zoom) ----------------------------------------------------
def scroll(figure, ax, x_ms, row, step):
    """A real wheel event, `step` notches (+ up), with the pointer at (x_ms, row) on `ax`."""
    from matplotlib.backend_bases import MouseEvent

    px, py = ax.transData.transform((x_ms, row))
    event = MouseEvent("scroll_event", figure.canvas, px, py, step=step)
    figure.canvas.callbacks.process("scroll_event", event)


def press(figure, key, at=None):
    """A real key press, the pointer at display point `at` (None: over no axes)."""
    from matplotlib.backend_bases import KeyEvent

    x, y = at if at is not None else (0, 0)
    event = KeyEvent("key_press_event", figure.canvas, key, x, y)
    figure.canvas.callbacks.process("key_press_event", event)


def test_the_zoom_arithmetic_keeps_the_pointer_and_bounds_the_span():
    from parallelgraph.plot import zoom

    assert zoom.zoomed(0.0, 10.0, 5.0, 2.0) == (2.5, 7.5)
    assert zoom.zoomed(0.0, 10.0, 0.0, 2.0) == (0.0, 5.0)  # the left edge stays put
    assert zoom.zoomed(0.0, 10.0, 8.0, 0.5) == (-8.0, 12.0)  # zoom out: x at 80% still
    assert zoom.zoomed(0.0, 10.0, 99.0, 2.0) == (5.0, 10.0)  # x clamped into the view
    assert zoom.panned(0.0, 10.0, -0.25) == (-2.5, 7.5)
    home = (0.0, 10.0)
    assert zoom.bounded(2.0, 4.0, home) == (2.0, 4.0)
    assert zoom.bounded(-50.0, 50.0, home) == (-10.0, 10.0)  # at most twice the drawn window
    lo, hi = zoom.bounded(3.0, 3.0 + 1e-9, home, anchor=3.0)  # at least a nanosecond
    assert hi - lo == pytest.approx(zoom.MIN_SPAN_MS) and lo == pytest.approx(3.0)
    assert zoom.bounded(20.0, 24.0, home) == (8.0, 12.0)  # the middle stays on the trace


def test_the_wheel_zooms_the_time_axis_around_the_pointer_and_labels_follow():
    figure = gantt(two_networks())
    figure.canvas.draw()
    ax = figure.axes[0]
    labels = child(ax, "bar-labels")
    narrow = next(i for i, left in enumerate(labels.left) if left == pytest.approx(6.1))
    assert narrow not in labels.drawn_indices  # net1/Add: 0.02 ms, too narrow for its name
    lo, hi = ax.get_xlim()
    pointer = ax.transData.transform((6.11, 0))[0]
    scroll(figure, ax, 6.11, 0, 1)
    new_lo, new_hi = ax.get_xlim()
    assert new_hi - new_lo == pytest.approx((hi - lo) / 1.25)
    assert ax.transData.transform((6.11, 0))[0] == pytest.approx(pointer)  # stays under it
    for _ in range(20):
        scroll(figure, ax, 6.11, 0, 1)
    figure.canvas.draw()
    assert ax.get_xlim()[0] < 6.11 < ax.get_xlim()[1]
    assert narrow in labels.drawn_indices  # decided at draw time: the zoom reveals it
    for _ in range(60):  # far out: no further than twice the drawn window
        scroll(figure, ax, 6.11, 0, -1)
    window = ax.parallelgraph_bars.window
    assert ax.get_xlim()[1] - ax.get_xlim()[0] == pytest.approx(2 * (window.hi - window.lo))


def test_keys_zoom_and_pan_and_leave_other_axes_alone():
    import matplotlib.pyplot as plt

    figure = gantt(two_networks())
    ax = figure.axes[0]
    lo, hi = ax.get_xlim()
    press(figure, "+")  # the pointer over no axes: around the middle
    zoomed = ax.get_xlim()
    assert zoomed[1] - zoomed[0] == pytest.approx((hi - lo) / 1.5)
    assert sum(zoomed) / 2 == pytest.approx((lo + hi) / 2)
    press(figure, "left")
    span = zoomed[1] - zoomed[0]
    assert ax.get_xlim() == pytest.approx((zoomed[0] - span / 4, zoomed[1] - span / 4))
    at = ax.transData.transform((2.0, 0))
    press(figure, "-", at=at)  # over the timeline: around the pointer
    assert ax.get_xlim()[1] - ax.get_xlim()[0] == pytest.approx(span * 1.5)
    assert ax.transData.transform((2.0, 0))[0] == pytest.approx(at[0])

    # A figure of the user's with a timeline and another axes: the other is not a timeline.
    own, (timeline, other) = plt.subplots(1, 2)
    try:
        gantt(two_networks(), ax=timeline, legend=False)
        before = other.get_xlim()
        scroll(own, other, 0.5, 0.5, 1)
        press(own, "+", at=other.transData.transform((0.5, 0.5)))
        assert other.get_xlim() == before
        assert not any(line.get_visible() for line in other.get_xgridlines())
        press(own, "g", at=other.transData.transform((0.5, 0.5)))  # matplotlib's own keys
        # ... still reach it, once (twice would toggle the grid back off)
        assert all(line.get_visible() for line in other.get_xgridlines())
    finally:
        plt.close(own)


def test_zooming_one_panel_zooms_the_shared_time_axis():
    trace = two_networks()
    figure = compare(trace, trace)
    top, bottom = figure.axes[:2]
    scroll(figure, bottom, 4.0, 1, 2)  # the lower panel
    assert top.get_xlim() == bottom.get_xlim()
    assert top.get_xlim()[1] - top.get_xlim()[0] < 8.32 / 1.5

    with_memory = gantt(trace, memory=True)
    timeline, panel = with_memory.axes[:2]
    before = timeline.get_xlim()
    scroll(with_memory, panel, 4.0, 0.5, 1)  # the wheel over the memory panel
    assert timeline.get_xlim()[1] - timeline.get_xlim()[0] == pytest.approx(
        (before[1] - before[0]) / 1.25
    )


def test_a_tooltip_shows_over_the_next_panel_and_stays_inside_the_figure():
    """Hovering the lowest bar of a pinned (upper) panel: the tooltip reaching into the panel
    below was covered by it; one near the right edge ran off the canvas."""
    import numpy as np
    from matplotlib.backend_bases import MouseEvent

    trace = two_networks()
    figure = compare(trace, trace)
    figure.canvas.draw()
    top, bottom = figure.axes[:2]
    bars = top.parallelgraph_bars
    last = max(range(len(bars.events)), key=lambda i: (bars.y[i], bars.right[i]))

    def hover_at(ax, x, y):
        px, py = ax.transData.transform((x, y))
        event = MouseEvent("motion_notify_event", figure.canvas, px, py)
        figure.canvas.callbacks.process("motion_notify_event", event)
        figure.canvas.draw()
        return ax.parallelgraph_tooltip

    tooltip = hover_at(top, (bars.left[last] + bars.right[last]) / 2, bars.y[last])
    box = tooltip.get_bbox_patch().get_window_extent()
    assert box.y0 < bottom.get_window_extent().y1  # it does reach into the lower panel
    pixels = np.asarray(figure.canvas.buffer_rgba())
    x, y = int((box.x0 + box.x1) / 2), int(pixels.shape[0] - box.y0 - 4)
    face = np.array([255, 255, 240])  # the tooltip's face, 95% opaque: what is under it shows
    assert np.all(0.95 * face - 1 <= pixels[y, x, :3]) and np.all(pixels[y, x, :3] <= face + 1)
    assert figure.bbox.contains(box.x1, box.y0)
    tooltip = hover_at(top, bars.right[last] - 0.01, bars.y[last])  # at the right edge
    box = tooltip.get_bbox_patch().get_window_extent()
    assert figure.bbox.x0 <= box.x0 and box.x1 <= figure.bbox.x1
    zorder = top.get_zorder()
    hover_at(top, bars.right[last] + 50, bars.y[last])  # off the bars: hidden, order restored
    assert not tooltip.get_visible() and zorder > bottom.get_zorder() == top.get_zorder()


def test_a_model_built_in_one_scope_is_coloured_by_its_branches():
    """The heads of `pg.models.attention` (all in scope "attention") get a colour each."""
    from parallelgraph.plot.colors import color_key, reset_scope_colors, scope_colors

    preset = pg.models.preset("attention", "tiny")
    with pg.Session(preset.graph) as session:
        _, trace = session.run(preset.fetch, trace=True)
    reset_scope_colors()
    colors = scope_colors([trace])
    assert {"attention/head0", "attention/head1"} <= set(colors)
    assert colors["attention/head0"] != colors["attention/head1"]
    assert color_key("attention/head1/q", colors) == "attention/head1"
    assert color_key("x", colors) == "x"
