"""Viewer features: top ops, highlight by op name, stable scope colours, memory (output bytes,
live bytes, the Perfetto counter track, the panel under the Gantt). Answers known by
construction, and facts computed from a real profiler file's raw events."""

from __future__ import annotations

import json

import matplotlib
import numpy as np
import pytest
from raw_facts import REAL, length, span, union

import parallelgraph as pg
from parallelgraph.plot import FADE_KEEP, FADED_INK, OTHER_COLOR, PALETTE, compare, gantt
from parallelgraph.trace import EventRole, Trace, TraceEvent
from parallelgraph.trace.memory import ITEM_BYTES, memory_profile, output_bytes

matplotlib.use("Agg")

US = 1_000  # ns


def ev(name, lane, start, end, *, kind="op", inputs=(), shapes="", device="cpu:0",
       role=EventRole.WORK, op_type="matmul", shard=None):  # fmt: skip
    scope = name.rsplit("/", 1)[0] if "/" in name else ""
    return TraceEvent(name, op_type, scope, device, kind, lane, start * US, end * US,
                      shard=shard, inputs=tuple(inputs), shapes=shapes, role=role)  # fmt: skip


def child(ax, gid):
    return next((a for a in ax.get_children() if a.get_gid() == gid), None)


# -- top ops ------------------------------------------------------------------------------------
def nested_trace() -> Trace:
    """Lane L0: A [0,100) holds B [10,40) and C [50,70); D [400,500) holds 30 µs of waiting.
    Lane L1: A#2 [200,250) (a repeated name, as readers write it), a shard of A, a waiting
    span over all of it, and a copy. Known answers: A count 2, total 150, self 50 + 50; B 30/30;
    C 20/20; D total 70 (100 less the wait), self 70; the op work is 220."""
    events = [
        ev("A", "cpu/L0", 0, 100, op_type="linear"),
        ev("B", "cpu/L0", 10, 40, op_type="mm"),
        ev("C", "cpu/L0", 50, 70, op_type="mm"),
        ev("D", "cpu/L0", 400, 500, op_type="linear"),
        ev("wait", "cpu/L0", 420, 450, role=EventRole.WAITING, op_type="wait"),
        ev("outer", "cpu/L1", 150, 600, role=EventRole.WAITING, op_type="wait"),
        ev("A#2", "cpu/L1", 200, 250, op_type="linear"),
        ev("A#2", "intra-op/0", 210, 240, kind="shard", shard=0),
        ev("A", "copy/d2h", 260, 290, kind="copy"),
        ev("setup", "cpu/L2", 0, 900, role=EventRole.SETUP, op_type="setup"),
    ]
    return Trace(sorted(events, key=lambda e: (e.start, e.kind != "op")))


def test_top_ops_counts_total_self_and_share_known_by_construction():
    trace = nested_trace()
    table = trace.top_ops(limit=None)
    facts = {row.name: (row.count, row.total_ns, row.self_ns) for row in table}
    assert facts == {
        "A": (2, 150 * US, 100 * US),
        "B": (1, 30 * US, 30 * US),
        "C": (1, 20 * US, 20 * US),
        "D": (1, 70 * US, 70 * US),
    }  # no row for waiting, setup, shards or copies
    assert table.work_ns == 220 * US
    assert [row.name for row in table] == ["A", "D", "B", "C"]  # by total, largest first
    assert table.row("A").share == pytest.approx(100 / 220)
    assert sum(row.share for row in table) == pytest.approx(1.0)
    assert table.row("A").mean_ms == pytest.approx(0.075)
    # the op work is the lanes' work time: self time counts nested time once
    op_lanes = {e.lane for e in trace.ops()}
    assert table.work_ns == sum(length(trace.work_intervals[lane]) for lane in op_lanes)


def test_top_ops_orders_limits_and_groups():
    trace = nested_trace()
    assert [r.name for r in trace.top_ops(by="self", limit=None)] == ["A", "D", "B", "C"]
    assert [r.name for r in trace.top_ops(by="count", limit=2)] == ["A", "B"]  # ties by name
    assert [r.name for r in trace.top_ops(by="name")] == ["A", "B", "C", "D"]
    assert [r.name for r in trace.top_ops(by="mean", limit=None)] == ["A", "D", "B", "C"]
    limited = trace.top_ops(limit=1)
    assert len(limited) == 1 and limited.names == 4 and limited.left_out == 3
    by_type = {r.name: (r.count, r.self_ns) for r in trace.top_ops(group="type")}
    assert by_type == {"linear": (3, 170 * US), "mm": (2, 50 * US)}
    with pytest.raises(ValueError, match="sort by one of"):
        trace.top_ops(by="fastest")
    with pytest.raises(ValueError, match="a number of rows"):
        trace.top_ops(limit=-1)
    with pytest.raises(KeyError, match="no op named 'Z'"):
        trace.top_ops().row("Z")


def test_top_ops_prints_a_table_and_renders_html():
    trace = Trace([*nested_trace().events, ev("<script>", "cpu/L3", 0, 5)])
    table = trace.top_ops(limit=3)
    text = str(table).splitlines()
    assert text[0].startswith("top 3 of 5 op names by total")
    assert text[1].split() == ["name", "count", "total", "ms", "self", "ms", "mean", "ms", "share"]
    assert text[2].split() == ["A", "2", "0.150", "0.100", "0.075", f"{100 * 100 / 225:.1f}%"]
    assert text[-1].startswith("(+2 more")
    page = trace.top_ops(limit=None)._repr_html_()
    assert "<table>" in page and "&lt;script&gt;" in page and "<script>" not in page
    assert "no work op events" in str(Trace([]).top_ops())


def test_top_ops_of_a_real_pytorch_trace_match_its_raw_events():
    """aten::linear and aten::addmm in a PyTorch profiler file: count, total and self time
    computed here from the file's own events (self = duration less the union of the cpu_ops
    inside it on its thread)."""
    path = REAL / "torch_eager_record_function.json"
    raw = json.loads(path.read_text())
    ops = [e for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    expected = {}
    for name in ("aten::linear", "aten::addmm", "aten::relu", "aten::copy_"):
        mine = [e for e in ops if e["name"] == name]
        total = sum(e["dur"] for e in mine)
        self_us = 0.0
        for e in mine:
            start, end = span(e)
            inside = [span(o) for o in ops if o is not e and o["tid"] == e["tid"]
                      and start <= o["ts"] and span(o)[1] <= end]  # fmt: skip
            self_us += e["dur"] - length(union(inside))
        expected[name] = (len(mine), total, self_us)
    table = pg.Trace.load(path).top_ops(limit=None)
    for name, (count, total, self_us) in expected.items():
        row = table.row(name)
        assert row.count == count
        assert row.total_ns / 1e3 == pytest.approx(total, abs=0.01)
        assert row.self_ns / 1e3 == pytest.approx(self_us, abs=0.01)
    assert table.row("aten::linear").self_ns < 0.1 * table.row("aten::linear").total_ns
    outermost_us = sum(e["dur"] for e in ops if e["name"] in ("aten::linear", "aten::relu",
                                                              "aten::add"))  # fmt: skip
    assert table.work_ns / 1e3 == pytest.approx(outermost_us, abs=0.05)


# -- highlight ----------------------------------------------------------------------------------
def seed_like() -> Trace:
    names = ["net1/RandomNormal", "net1/MatMul", "net1/Add", "net1/MatMul_1",
             "net2/RandomNormal", "net2/MatMul", "net2/Add", "net2/MatMul_1"]  # fmt: skip
    events = [
        ev(name, f"inter-op/{index // 4}", 100 * (index % 4), 100 * (index % 4) + 90)
        for index, name in enumerate(names)
    ]
    events.append(ev("net1/MatMul", "intra-op/0", 110, 150, kind="shard", shard=1))
    events.append(ev("out", "inter-op/0", 400, 420, inputs=["net1/MatMul_1", "net2/MatMul_1"]))
    return Trace(sorted(events, key=lambda e: (e.start, e.kind != "op")))


def faces_by_name(ax, gid="op-bars"):
    bars = child(ax, gid)
    events = [e for e in ax.parallelgraph_bars.events if e.kind == gid.split("-")[0]]
    return {e.name: tuple(bars.faces[i]) for i, e in enumerate(events)}


def test_highlight_fades_the_ops_that_do_not_match_and_counts_the_matches():
    trace = seed_like()
    plain = faces_by_name(gantt(trace).axes[0])
    figure = gantt(trace, highlight="MatMul*")
    ax = figure.axes[0]
    lit = faces_by_name(ax)
    matching = {"net1/MatMul", "net1/MatMul_1", "net2/MatMul", "net2/MatMul_1"}
    for name, face in lit.items():
        if name in matching:
            assert face == plain[name]  # drawn as without a highlight
        else:
            faded = np.array(plain[name][:3]) * FADE_KEEP + (1 - FADE_KEEP)
            assert np.allclose(face[:3], faded) and min(face[:3]) > 0.75
    shard_face = faces_by_name(ax, "shard-bars")["net1/MatMul"]
    assert min(shard_face[:3]) < 0.75  # a matching op's shard is not faded
    assert ax.get_title(loc="left").splitlines()[-1] == "highlight 'MatMul*': 4 of 9 ops"
    assert ax.parallelgraph_highlight.names == frozenset(matching)
    figure.canvas.draw()
    labels = child(ax, "bar-labels")
    inks = dict(zip(labels.texts, labels.colors))
    assert inks["RandomNormal"] == FADED_INK and inks["MatMul"] != FADED_INK


def test_highlight_takes_a_list_scoped_patterns_and_ignores_case():
    trace = seed_like()
    ax = gantt(trace, highlight=["*add", "OUT"]).axes[0]
    assert ax.parallelgraph_highlight.names == {"net1/Add", "net2/Add", "out"}
    assert ax.get_title(loc="left").endswith("highlight '*add', 'OUT': 3 of 9 ops")
    ax = gantt(trace, highlight="net2/*", title="mine").axes[0]
    assert ax.parallelgraph_highlight.matched == 4
    assert ax.get_title(loc="left") == "mine\nhighlight 'net2/*': 4 of 9 ops"
    imported = Trace([ev("aten::mm#3", "cpu/0", 0, 10), ev("aten::mm", "cpu/0", 20, 30)])
    assert gantt(imported, highlight="aten::mm").axes[0].parallelgraph_highlight.matched == 2


def test_highlight_without_a_match_says_so_and_draws_as_usual():
    trace = seed_like()
    plain = faces_by_name(gantt(trace).axes[0])
    ax = gantt(trace, highlight="Conv*").axes[0]
    assert faces_by_name(ax) == plain
    assert "highlight 'Conv*': no op matched (all 9 ops drawn as usual)" in ax.get_title(loc="left")
    with pytest.raises(TypeError, match="op-name pattern"):
        gantt(trace, highlight=3)
    with pytest.raises(ValueError, match="names no pattern"):
        gantt(trace, highlight=[])
    with pytest.raises(ValueError, match="non-empty strings"):
        gantt(trace, highlight=["MatMul", ""])


def test_compare_passes_the_highlight_to_every_panel():
    figure = compare(seed_like(), seed_like(), highlight="*Add")
    for ax in figure.axes:
        assert ax.get_title(loc="left").endswith("highlight '*Add': 2 of 9 ops")


# -- colours ------------------------------------------------------------------------------------
def scoped(*scopes: str) -> Trace:
    return Trace([ev(f"{scope}/op", f"inter-op/{i}", 10 * i, 10 * i + 5)
                  for i, scope in enumerate(scopes)])  # fmt: skip


def scope_faces(figure) -> dict[str, tuple]:
    faces = {}
    for ax in figure.axes:
        faces.update({name.split("/")[0]: face for name, face in faces_by_name(ax).items()})
    return faces


def test_a_scope_keeps_its_colour_in_every_plot_whatever_the_order():
    first = scope_faces(scoped("net1", "net2").plot())
    second = scope_faces(scoped("net2", "net1").plot())  # net2 first this time
    assert first["net1"] == second["net1"] and first["net2"] == second["net2"]
    assert first["net1"] != first["net2"]
    third = scope_faces(compare(scoped("net3", "net2"), scoped("net1")))
    assert third["net1"] == first["net1"] and third["net2"] == first["net2"]
    assert len({third["net1"], third["net2"], third["net3"]}) == 3


def test_colours_are_given_in_order_of_first_appearance_and_reset():
    pg.plot.reset_scope_colors()
    assert pg.plot.scope_colors([scoped("b", "a")]) == {"b": PALETTE[0], "a": PALETTE[1]}
    assert pg.plot.scope_colors([scoped("a", "c")]) == {"a": PALETTE[1], "c": PALETTE[2]}
    pg.plot.reset_scope_colors()
    assert pg.plot.scope_colors([scoped("a")]) == {"a": PALETTE[0]}


def test_a_full_palette_gives_up_the_least_recent_colour_never_one_in_the_plot():
    pg.plot.reset_scope_colors()
    many = [f"layer{i}" for i in range(25)]
    colors = pg.plot.scope_colors([scoped(*many)])
    assert [colors[s] for s in many[:20]] == list(PALETTE)
    assert {colors[s] for s in many[20:]} == {OTHER_COLOR}
    again = pg.plot.scope_colors([scoped("net1", "layer5")])  # layer0 was drawn least recently
    assert again["layer5"] == PALETTE[5] and again["net1"] == PALETTE[0]
    assert pg.plot.scope_colors([scoped("layer1")]) == {"layer1": PALETTE[1]}  # kept


# -- memory: sizes and lifetimes ----------------------------------------------------------------
@pytest.mark.parametrize(
    "shapes, expected",
    [
        ("(512, 1024) x (1024, 1024) -> (512, 1024) float32", 512 * 1024 * 4),
        ("-> (64, 128) float64", 64 * 128 * 8),
        ("(3,) -> () float32", 4),
        ("(4, 0) -> (4, 0) float32", 0),
        ("(256, 512) x (512,)", None),  # imported: input shapes only
        ("-> (3,) mystery", None),
        ("", None),
        ("-> (4294967296, 536870911) float32", 2**63 - 2**34),  # the biggest sizes count
        ("-> (4294967296, 536870912) float32", None),  # 2**63 B: past what an array can hold
        ("-> (4294967296, 4294967296) float32", None),  # 2**66 B: no array is that big
        ("-> (99999999999999999999999, 0) float32", None),  # no such dimension either
    ],
)
def test_output_bytes_from_the_shapes_text(shapes, expected):
    assert output_bytes(ev("x", "cpu/0", 0, 1, shapes=shapes)) == expected
    assert ITEM_BYTES["float32"] == np.dtype("float32").itemsize


def memory_trace(metadata=None) -> Trace:
    """a (40 B) feeds b (200 B) and e (4 B); c (8 B) and b, e feed d (12 B), fetched by having
    no consumer. Lifetimes (µs): a 10-20 (b ends last), c 6-30, e 16-30, b 20-30, d from 30
    on. Live bytes: 8 from 6, 48 from 10, 52 from 16, 212 from 20, then 12 (d) from 30."""
    events = [
        ev("a", "inter-op/0", 0, 10, shapes="-> (10,) float32"),
        ev("c", "inter-op/1", 2, 6, shapes="-> (2,) float32"),
        ev("e", "inter-op/1", 8, 16, inputs=["a"], shapes="(10,) -> (1,) float32"),
        ev("b", "inter-op/0", 10, 20, inputs=["a:0"], shapes="(10,) -> (5, 5) float64"),
        ev("b", "intra-op/0", 11, 19, kind="shard", shard=1, shapes="(10,) -> (5, 5) float64"),
        ev("d", "inter-op/0", 20, 30, inputs=["b", "c", "e", "w"], shapes="-> (3,) float32"),
        ev("log", "inter-op/1", 17, 18, shapes="(256,)"),  # size unknown
        ev("join", "inter-op/1", 18, 30, role=EventRole.WAITING, shapes="-> (99,) float64"),
    ]
    return Trace(sorted(events, key=lambda e: (e.start, e.kind != "op")), metadata)


def test_live_bytes_known_by_construction():
    profile = memory_trace().memory()
    assert profile.output_bytes == {"a": 40, "c": 8, "e": 4, "b": 200, "d": 12}
    lifetimes = {b.op: (b.start // US, b.end // US, b.fetched) for b in profile.buffers}
    assert lifetimes == {
        "a": (10, 20, False),
        "c": (6, 30, False),
        "e": (16, 30, False),
        "b": (20, 30, False),
        "d": (30, 30, True),
    }
    assert {b.op: b.consumers for b in profile.buffers}["a"] == ("e", "b")
    times, values = profile.series()
    assert [t // US for t in times] == [6, 10, 16, 20, 30] and values == [8, 48, 52, 212, 12]
    assert profile.peak() == (212, 20 * US)
    assert profile.live_at(5 * US) == 0 and profile.live_at(19 * US) == 52
    assert profile.live_at(30 * US) == profile.live_at(10**9) == profile.returned_bytes == 12
    assert profile.unknown == ("log",)  # the waiting event is no op of the run
    assert "peak 212 B live at 0.020 ms from the run's start; 12 B returned" in str(profile)


def test_absurd_output_sizes_in_an_edited_file_count_nowhere_and_the_panel_draws(tmp_path):
    """Two fetched outputs of 2**62 B each sum past int64, which NumPy cannot hold as an
    integer; one of 2**66 B is no size at all. The memory panel draws, in floats."""
    huge = "-> (1073741824, 1073741824) float32"  # 2**62 B: the biggest a size may be, halved
    events = [
        ev("a", "inter-op/0", 0, 10, shapes=huge),
        ev("b", "inter-op/1", 0, 12, shapes=huge),
        ev("c", "inter-op/0", 10, 20, shapes="-> (4294967296, 4294967296) float32"),
    ]
    trace = Trace.load(Trace(events).save(tmp_path / "edited.json"))
    profile = trace.memory()
    assert profile.unknown == ("c",) and profile.peak()[0] == 2**63
    figure = trace.plot(memory=True)
    assert "peak 8589934592.00 GiB" in figure.axes[1].texts[-1].get_text()


def test_fetches_in_the_metadata_stay_live_until_the_run_ends():
    profile = memory_trace({"fetches": ["b"]}).memory()
    b = next(buffer for buffer in profile.buffers if buffer.op == "b")
    assert b.fetched and b.end == 30 * US
    assert profile.series()[1][-1] == 212  # b and d returned
    assert memory_trace({"fetches": "b"}).memory().series()[1][-1] == 12  # not a list: ignored


def test_copies_keep_a_value_live_and_devices_have_their_own_series():
    events = [
        ev("g", "stream/0", 0, 10, shapes="-> (4,) float32", device="gpu:0"),
        ev("h", "stream/0", 10, 20, inputs=["g"], shapes="-> (8,) float32", device="gpu:0"),
        ev("g", "copy/d2h", 12, 40, kind="copy"),
        ev("k", "inter-op/0", 40, 50, inputs=["g"], shapes="-> (1,) float64"),
    ]
    profile = Trace(events, {"fetches": ["h", "k"]}).memory()
    g = next(buffer for buffer in profile.buffers if buffer.op == "g")
    assert (g.start, g.end, g.consumers) == (10 * US, 50 * US, ("h", "g", "k"))
    assert profile.devices == ["gpu:0", "cpu:0"]
    assert profile.series("gpu:0")[1] == [16, 48, 32]  # g, g + h, h returned
    assert profile.series("cpu:0") == ([50 * US], [8])
    assert profile.counters()[-1] == (50 * US, {"gpu:0": 32, "cpu:0": 8})


def test_a_traced_run_records_its_fetches_and_the_sizes_of_its_values():
    g = pg.Graph("memory")
    with g.as_default():
        with pg.scope("net1"):
            x = pg.random_normal((32, 16), seed=1)
            h = pg.tanh(pg.matmul(x, pg.variable((16, 8), name="w")))
        out = pg.relu(h)
    with pg.Session(g, pg.Config(inter_op_threads=2)) as session:
        (value, hidden), trace = session.run([out, h], trace=True)
    assert trace.metadata["fetches"] == [out.op.name, h.op.name]
    profile = trace.memory()
    sizes = profile.output_bytes
    assert sizes[out.op.name] == value.nbytes and sizes[h.op.name] == hidden.nbytes
    assert sizes[x.op.name] == 32 * 16 * 4 and not profile.unknown
    fetched = {buffer.op for buffer in profile.buffers if buffer.fetched}
    assert fetched == {out.op.name, h.op.name}
    assert profile.returned_bytes == value.nbytes + hidden.nbytes
    assert profile.series()[1][-1] == profile.returned_bytes


# -- memory: the counter track in Chrome JSON ---------------------------------------------------
def test_memory_exports_as_counter_events_and_the_round_trip_stays_exact(tmp_path):
    trace = memory_trace({"fetches": ["b"]})
    assert not [e for e in trace.to_chrome()["traceEvents"] if e["ph"] == "C"]  # opt-in
    document = trace.to_chrome(memory=True)
    events = document["traceEvents"]
    counters = [e for e in events if e["ph"] == "C"]
    origin = min(e.start for e in trace.events)
    assert [(round(e["ts"] * 1000) + origin, e["args"]) for e in counters] == [
        (t, values) for t, values in trace.memory().counters()
    ]
    for item in counters:
        assert set(item) == {"name", "cat", "ph", "ts", "pid", "tid", "args"}
        assert item["name"] == "live bytes" and isinstance(item["ts"], float)
    (pid,) = {item["pid"] for item in counters}
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names[pid] == "memory (model)"
    assert pid not in {e["pid"] for e in events if e["ph"] == "X"}
    flows = [e for e in events if e["ph"] in "sf"]
    assert events[len(events) - len(flows) :] == flows  # flows still come last
    back = pg.Trace.load(trace.save(tmp_path / "memory.json", memory=True))
    assert back.events == trace.events and back.metadata == trace.metadata
    assert back.lanes == trace.lanes and back.memory() == trace.memory()


def test_a_traced_run_saved_with_memory_loads_back_with_the_same_memory(tmp_path):
    g = pg.Graph("round-trip")
    with g.as_default():
        a = pg.tanh(pg.random_normal((16, 16), seed=1))
        b = pg.relu(pg.random_normal((16, 16), seed=2))
        out = a + b
    with pg.Session(g, pg.Config(inter_op_threads=2)) as session:
        _, trace = session.run(out, trace=True)
    path = trace.save(tmp_path / "run.json.gz", memory=True)
    back = pg.Trace.load(path)
    assert back.metadata == json.loads(json.dumps(trace.metadata, default=str))
    assert back.memory() == trace.memory() and back.memory().peak()[0] >= 2 * 16 * 16 * 4
    assert not memory_profile(pg.Trace.load(REAL / "tf2_inter1.trace.json")).known
    imported = pg.Trace.load(REAL / "torch_eager_record_function.json")
    assert not [e for e in imported.to_chrome(memory=True)["traceEvents"] if e["ph"] == "C"]


# -- memory: the panel under the Gantt ----------------------------------------------------------
def test_memory_panel_draws_the_live_bytes_under_the_timeline():
    trace = memory_trace()
    figure = trace.plot(memory=True)
    timeline, panel = figure.axes
    assert panel.get_shared_x_axes().joined(timeline, panel)
    assert timeline.get_xlabel() == "" and panel.get_xlabel() == "time (ms)"
    line = child(panel, "memory-line cpu:0")
    data = line.get_data()
    values, edges = list(data.values), list(data.edges)
    assert values == [8, 48, 52, 212, 12]
    assert np.allclose(edges[:-1], [(t * US - trace.start) / 1e6 for t in (6, 10, 16, 20, 30)])
    assert edges[-1] == pytest.approx(panel.get_xlim()[1])  # what is returned, to the edge
    assert "peak 212 B at 0.020 ms · 12 B returned" in child(panel, "memory-note").get_text()
    assert panel.get_ylim()[1] > 212
    assert panel.format_coord(0.015, 0) == "t = 0.015 ms, live 48 B"
    figure.canvas.draw()
    assert [t.get_text() for t in panel.get_yticklabels()] == ["0", "200 B"]


def test_memory_panel_of_a_trace_without_sizes_says_so():
    trace = pg.Trace.load(REAL / "torch_eager_record_function.json")
    figure = trace.plot(memory=True)
    note = child(figure.axes[1], "memory-note").get_text()
    assert "records no output shapes" in note
    figure.canvas.draw()
    assert gantt(Trace([]), memory=True).axes[1].parallelgraph_memory.buffers == ()


def test_memory_on_axes_of_your_own_and_the_errors():
    from matplotlib.figure import Figure

    figure = Figure()
    top, bottom = figure.subplots(2, 1)
    assert gantt(memory_trace(), ax=top, memory=bottom) is figure
    assert child(bottom, "memory-line cpu:0") is not None
    assert bottom.get_xlim() == top.get_xlim()
    with pytest.raises(ValueError, match="leave out ax="):
        gantt(memory_trace(), ax=top, memory=True)
    with pytest.raises(TypeError, match="memory= takes"):
        gantt(memory_trace(), memory="yes")
    with pytest.raises(ValueError, match="goes with ax="):
        gantt(memory_trace(), memory=bottom)
    with pytest.raises(ValueError, match="compare draws no memory panels"):
        compare(memory_trace(), memory_trace(), memory=True)
