"""The analyses in linear (or n log n) time: the same answers as the quadratic code they
replaced, and time that doubles when the trace doubles.

Times are never compared with seconds, which the machine decides: each check compares the
best of a few runs at 2n events with the best at n, a ratio a busy machine moves little (2 for
linear work, 4 for quadratic)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from itertools import combinations

import doubling
import pytest

from parallelgraph.chrome.producers import knobs_for
from parallelgraph.explain import advice, causes
from parallelgraph.plot.colors import color_key
from parallelgraph.scopes import branch_of
from parallelgraph.trace import Trace, TraceEvent, analysis, branches, intervals
from parallelgraph.trace.model import EventKind

#: The most a step's time may grow when the events double: linear work gives about 2.0 and
#: quadratic about 4.0; the margin is for a machine busy with other work.
MAX_RATIO = 3.0


def _reference_heaviest_dependency(trace, ops_a, ops_b):
    """`analysis.heaviest_dependency` as it was before it was made linear (one walk up the
    parents per op, one ancestor search per consumer op: quadratic in a chain's length), kept
    as the reference for its answers."""

    def lifted(names, targets):
        parent = {e.name: e.parent for e in trace.ops(nested=True)}
        out = set()
        for name in names:
            node, seen = name, set()
            while node is not None and node not in targets and node not in seen:
                seen.add(node)
                node = parent.get(node)
            if node is not None and node in targets:
                out.add(node)
        return out

    graph = analysis.data_inputs(trace)
    a = {e.name: e for e in ops_a}
    b = {e.name: e for e in ops_b}
    best = None
    for consumers, producers in ((b, a), (a, b)):
        needed = lifted(analysis.ancestors(graph, consumers), producers)
        if not needed:
            continue
        busy = intervals.length(trace.work_spans(producers.values()))
        held = intervals.length(trace.work_spans(producers[n] for n in needed))
        heaviest = max(sorted(needed), key=lambda n: producers[n].work_ns)
        consumer = next(
            c
            for c in sorted(consumers)
            if heaviest in lifted(analysis.ancestors(graph, [c]), producers)
        )
        found = analysis.Dependency(heaviest, consumer, len(needed), held / busy if busy else 1.0)
        if best is None or found.share > best.share:
            best = found
    return best


def _random_trace(seed: int, longest: int = 300, loops: bool = True) -> Trace:
    """Ops of three scopes on three lanes, nested at random (the parents given; with `loops`,
    parents in a loop now and then, which no file can make), reading random earlier ops and
    now and then a later one; each lasting up to `longest` ns."""
    rng = random.Random(seed)
    count = rng.randint(2, 40)
    names = [f"{rng.choice('abc')}/op{i}" for i in range(count)]
    events = []
    for i, name in enumerate(names):
        parent = rng.choice([None, None, *names[:i]]) if i else None
        if loops and rng.random() < 0.03:
            parent = rng.choice(names)  # parents in a cycle: the walks must still end
        inputs = tuple(rng.sample(names, min(count, rng.randint(0, 3))))
        start = rng.randint(0, 1000 * longest // 300)
        lane, end = f"w/{rng.randint(0, 2)}", start + rng.randint(1, longest)
        depth = 0 if parent is None else 1
        scope = name.split("/")[0]
        event = TraceEvent(name, "x", scope, "cpu:0", EventKind.OP, lane, start, end)
        events.append(replace(event, inputs=inputs, depth=depth, parent=parent))
    return Trace(events, nested=True)


@pytest.mark.parametrize("seed", range(300))
def test_heaviest_dependency_gives_the_quadratic_references_answers(seed):
    trace = _random_trace(seed)
    rng = random.Random(seed)
    side = {  # most of each scope's ops, nested ones too: a tuple each, in two pairs
        scope: tuple(e for e in trace.ops(nested=True) if e.in_scope(scope) and rng.random() < 0.8)
        for scope in "abc"
    }
    flow = analysis.DataFlow(trace)  # shared by the pairs, as explain() shares it
    for scope_a, scope_b in ("ab", "bc", "ca"):
        ops_a, ops_b = side[scope_a], side[scope_b]
        want = _reference_heaviest_dependency(trace, ops_a, ops_b)
        assert analysis.heaviest_dependency(trace, ops_a, ops_b, flow) == want
        assert analysis.heaviest_dependency(trace, list(ops_a), list(ops_b)) == want


def _chain_reading_another_scope(ops: int) -> Trace:
    """A chain of `ops` ops of scope "a" on one lane, run after two ops of scope "b" on another;
    the chain's last op also reads b's last op (issue #42's round-three case)."""

    def op(name, lane, start, inputs=()):
        scope = name.split("/")[0]
        event = TraceEvent(name, "x", scope, "cpu:0", EventKind.OP, lane, start, start + 900)
        return replace(event, inputs=inputs)

    events = [op("b/op0", "w/1", 0), op("b/op1", "w/1", 1000, ("b/op0",))]
    for i in range(ops):
        inputs = (f"a/op{i - 1}",) if i else ()
        if i == ops - 1:
            inputs += ("b/op1",)
        events.append(op(f"a/op{i}", "w/0", 2000 + 1000 * i, inputs))
    return Trace(events)


def _explain(events):
    return Trace(events, nested=True).explain()


def test_explain_of_a_30000_op_chain_reading_another_scope_takes_twice_the_15000_op_time():
    """It was quadratic (one ancestor search per consumer op); the answer is the same."""
    calls = []
    for ops in (15_000, 30_000):
        trace = _chain_reading_another_scope(ops)
        evidence = trace.explain().pairs[0].evidence
        last = f"a/op{ops - 1}"
        assert (evidence.producer, evidence.consumer) == ("b/op0", last)
        assert evidence.chain == ("b/op0", "b/op1", last)
        calls.append(partial(_explain, trace.events))
    assert _growth(*calls) < MAX_RATIO


def _reference_branch_of(scope, branches):
    """`scopes.branch_of` as it was: every branch compared with the scope."""
    return next((b for b in branches if scope == b or scope.startswith(b + "/")), None)


def _reference_color_key(scope, colors):
    """`plot.colors.color_key` as it was: every key compared with the scope."""
    best = scope.split("/", 1)[0]
    for key in colors:
        if len(key) > len(best) and (scope == key or scope.startswith(key + "/")):
            best = key
    return best


def _random_scope(rng: random.Random) -> str:
    return "/".join(rng.choice(["a", "b", "", "a/b", "h0"]) for _ in range(rng.randint(0, 4)))


def test_scope_lookups_give_the_comparisons_answers():
    rng = random.Random(7)
    for _ in range(20_000):
        scope = _random_scope(rng)
        names = [_random_scope(rng) for _ in range(rng.randint(0, 5))]
        assert branch_of(scope, names) == _reference_branch_of(scope, names)
        colors = dict.fromkeys(names, "#000000")
        assert color_key(scope, colors) == _reference_color_key(scope, colors)


@pytest.mark.parametrize("seed", range(100))
def test_default_branches_are_each_scope_selected(seed):
    rng = random.Random(seed)
    events = [
        TraceEvent(f"op{i}", "x", rng.choice(["m/h0", "m/h1/x", "m/h1", "m", "", "n/a"]),
                   "cpu:0", EventKind.OP, f"w/{i % 3}", 10 * i, 10 * i + rng.randint(1, 30))
        for i in range(rng.randint(1, 30))
    ]  # fmt: skip
    trace = Trace(events)
    scopes = branches.branch_scopes(trace)
    if len(scopes) >= 2 or len(scopes) == len(trace.lanes) == 1:
        selected = [branches.select(trace, f"scope:{s}") for s in scopes]
        assert branches.default_branches(trace) == selected


def _reference_intersect(a, b):
    """`intervals.intersect` as a walk over both lists, whatever their lengths."""
    result, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if low < high:
            result.append((low, high))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return result


def test_intersect_of_a_short_list_and_a_long_one_is_the_walks():
    rng = random.Random(3)
    for _ in range(3000):
        lists = []
        for count in (rng.randint(0, 3), rng.randint(0, 200)):
            starts = sorted(rng.sample(range(10_000), count))
            lists.append(intervals.merge((s, s + rng.randint(1, 120)) for s in starts))
        short, long = lists
        assert intervals.intersect(short, long) == _reference_intersect(short, long)
        assert intervals.intersect(long, short) == _reference_intersect(long, short)


def test_every_analysis_takes_about_twice_the_time_on_twice_the_events(tmp_path):
    """Each step (`doubling.STEPS`: load, explain, simulate, top_ops, memory, plot) on traces
    of 10,000 and 20,000 events (large enough that the timer is not the noise), by `_growth`."""
    (_, small), (_, large) = (doubling.prepared(tmp_path, n) for n in (10_000, 20_000))
    ratios = {name: _growth(small[name], large[name]) for name in doubling.STEPS}
    assert all(ratio < MAX_RATIO for ratio in ratios.values()), ratios


def _growth(small: Callable[[], object], large: Callable[[], object]) -> float:
    """How many times longer `large` takes than `small`: the best of three turns
    (`doubling.in_turns`), the garbage collector paused; over `MAX_RATIO`, three more turns
    (the best of all kept), so that only what is slower every time fails."""
    best_small = best_large = float("inf")
    for _ in range(2):
        seconds = doubling.in_turns(small, large, 3, collector=False)
        best_small, best_large = min(best_small, seconds[0]), min(best_large, seconds[1])
        if best_large / best_small < MAX_RATIO:
            break
    return best_large / best_small


def _reference_short_ops(pairs, context):
    """`explain.advice._short_ops` as it was: the ops of both branches of every pair that did
    not overlap, listed again for each pair."""
    ops = [
        e
        for pair in pairs
        if not pair.overlapped
        for label in (pair.scope_a, pair.scope_b)
        for e in context.branches[label].ops
    ]
    return bool(ops) and causes.short_share(ops) >= 0.5


@pytest.mark.parametrize("seed", range(100))
def test_short_ops_advice_weighs_the_branches_as_the_lists_did(seed):
    trace = _random_trace(seed, longest=2 * causes.SHORT_OP_NS, loops=False)
    chosen = branches.default_branches(trace)
    labels = {b.label: b for b in chosen}
    context = causes.Context(trace, trace.info.settings, None, knobs_for("trace-event"), labels)
    pairs = tuple(causes.pair_report(context, a, b) for a, b in combinations(chosen, 2))
    assert advice._short_ops(pairs, context) == _reference_short_ops(pairs, context)
