"""Config(fuse=True) on elementwise ops: a group of them runs as one step and one kernel
(`ops.fused_elementwise`, `kernels.program`), bit for bit as the unfused sequential reference,
on every kernel, dtype, operand kind, NaN payload and shard split; only ops whose values
nobody else needs join a group."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parallelgraph as pg
from parallelgraph import plan as plan_module
from parallelgraph.experiments.presets import build_preset
from parallelgraph.kernels import program
from parallelgraph.ops.fused import covered
from parallelgraph.ops.fused_elementwise import compile_group

SETTINGS = [(1, 1), (2, 1), (1, 2), (2, 2)]
NAN_PAYLOADS = np.array([0x7FC00001, 0xFFC00002, 0x7F800001], np.uint32)  # quiet, -quiet, sNaN


def reference(graph, fetch, feed=None):
    with pg.Session(graph, pg.Config(executor="sequential")) as session:
        return session.run(fetch, feed_dict=feed)


def assert_same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def chain(length, shape=(1, 1)):
    graph = pg.Graph()
    with graph.as_default():
        x = pg.random_normal(shape, seed=1)
        one = pg.constant(np.full(shape, 0.25, np.float32))
        for _ in range(length):
            x = pg.add(x, one)
    return graph, x


def test_a_chain_of_adds_is_one_step_with_the_reference_bits():
    graph, out = chain(500)
    expected = reference(graph, out)
    for inter, intra in SETTINGS:
        config = pg.Config(inter_op_threads=inter, intra_op_threads=intra, fuse=True)
        with pg.Session(graph, config) as session:
            assert [s.op.type for s in session.plan_for(out).steps] == [
                "random_normal",
                "fused_elementwise",
            ]
            assert_same_bits(session.run(out), expected)
            _, trace = session.run(out, trace=True)
    fused = trace.ops()[-1]
    assert fused.name == "Add+...+Add_499 (500 ops)"
    assert fused.op_type == "add+...+add (500 ops)" and fused.flops == 500


def operand_values(shape, dtype, seed):
    """Normal values with NaN payloads of both signs, infinities and signed zeros mixed in."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape).astype(dtype) * 3
    flat = values.reshape(-1)
    specials = [np.inf, -np.inf, 0.0, -0.0, 80.0, -80.0]
    for index, special in zip(rng.choice(flat.size, min(flat.size, 6), replace=False), specials):
        flat[index] = special
    if dtype == "float32":
        nans = NAN_PAYLOADS.view(np.float32)
    else:
        nans = (NAN_PAYLOADS.astype(np.uint64) << np.uint64(29)).view(np.float64)
        nans = np.where(np.isnan(nans), nans, np.float64("nan"))
    for index, nan in zip(rng.choice(flat.size, min(flat.size, 3), replace=False), nans):
        flat[index] = nan
    return values


def every_kind(dtype, shape):
    """One group using every opcode and operand kind: a bias, a scalar, a value read twice,
    add_n of one, two and four terms, and a value read by two ops of the group."""
    graph = pg.Graph()
    with graph.as_default():
        x = pg.constant(operand_values(shape, dtype, 1))
        y = pg.constant(operand_values(shape, dtype, 2))
        bias = pg.constant(operand_values(shape[-1:], dtype, 3))
        scalar = pg.constant(np.array(-0.5, dtype))
        a = pg.tanh(x + bias)
        b = pg.multiply(a, scalar)
        c = pg.sigmoid(b) * pg.exp(y)
        d = pg.relu(c + c)
        e = pg.add_n([d])
        f = pg.add_n([e, a])
        out = pg.add_n([f, pg.relu(a), y, pg.tanh(d)])
    return graph, out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape", [(1,), (40, 1), (9, 2), (3, 5), (64, 8), (300, 5), (40, 1100), (2, 3, 7)]
)
@pytest.mark.parametrize("shard_all", [False, True])
def test_every_op_kind_gives_the_reference_bits(dtype, shape, shard_all, monkeypatch):
    if shard_all:  # every op with rows split, however small: shards inside the program
        monkeypatch.setattr(plan_module, "MIN_SHARD_NS", 1)
    graph, out = every_kind(dtype, shape)
    expected = reference(graph, out)
    for inter, intra in SETTINGS:
        config = pg.Config(inter_op_threads=inter, intra_op_threads=intra, fuse=True)
        with pg.Session(graph, config) as session:
            steps = session.plan_for(out).steps
            assert [s.op.type for s in steps] == ["fused_elementwise"]
            assert_same_bits(session.run(out), expected)
    assert (len(steps[0].shards) > 1) == (shard_all and len(shape) > 1 and shape[0] > 1)
    tolerance = 1e-5 if dtype == "float32" else 1e-12  # absolute too: sums cancel
    np.testing.assert_allclose(  # and the NumPy composition of the ops
        *[v.astype(np.float64) for v in (expected, fused_reference(graph, out))],
        rtol=tolerance,
        atol=tolerance,
    )


def fused_reference(graph, out):
    """`FusedElementwise.reference`: the parts' NumPy references in turn."""
    with pg.Session(graph, pg.Config(fuse=True)) as session:
        step = session.plan_for(out).steps[0]
        args = [session.run(tensor) for tensor in step.op.inputs]
    with np.errstate(all="ignore"):
        return step.definition.reference(step.op, args)


def test_only_values_nobody_else_needs_join_a_group():
    graph = pg.Graph()
    with graph.as_default():
        x = pg.random_normal((16, 8), seed=3)
        fetched = pg.tanh(x + 1.0)  # fetched: its value must stay
        shared = pg.relu(fetched)  # read by the matmul too
        product = pg.matmul(shared, pg.variable((8, 8), name="w"))
        fed = pg.exp(shared)
        out = pg.sigmoid(pg.add(fed, pg.tanh(product)))  # tanh: no matmul epilogue
        narrow = pg.reduce_sum(out, axis=0)  # another shape: a reduction between two groups
        last = pg.tanh(pg.relu(out) + narrow)
    with pg.Session(graph, pg.Config(fuse=True)) as session:
        plan = session.plan_for([fetched, last])
        by_type = [(s.op.type, [p.name for p in covered(s.op)]) for s in plan.steps]
        assert by_type == [
            ("random_normal", ["RandomNormal"]),
            ("fused_elementwise", ["Add", "Tanh"]),
            ("relu", ["Relu"]),
            ("matmul", ["MatMul"]),
            # exp and tanh would wait for each other's branch in one step: they stay out
            ("exp", ["Exp"]),
            ("tanh", ["Tanh_1"]),
            ("fused_elementwise", ["Add_1", "Sigmoid"]),
            ("reduce_sum", ["Sum"]),
            ("relu", ["Relu_1"]),  # it need not wait for the sum
            ("fused_elementwise", ["Add_2", "Tanh_2"]),
        ]
        values = session.run([fetched, last])
        feed = {fed: np.full((16, 8), 0.5, np.float32)}
        fed_plan = session.plan_for(last, feed)  # the fed exp is no step; the rest still fuses
        assert "Exp" not in {p.name for s in fed_plan.steps for p in covered(s.op)}
        fed_value = session.run(last, feed_dict=feed)
    for got, want in zip(values, reference(graph, [fetched, last])):
        assert_same_bits(got, want)
    assert_same_bits(fed_value, reference(graph, last, feed))


def test_a_group_never_makes_an_op_wait_for_a_value_it_does_not_need():
    """A residual add reads nothing its group does not already wait for, and fuses; the seed
    graph's final add, which joins two networks, fuses into neither network's matmul."""
    graph = pg.Graph()
    with graph.as_default():
        x = pg.random_normal((8, 8), seed=1)
        residual = pg.relu(pg.matmul(x, pg.variable((8, 8), name="w")) + x)
        late = pg.tanh(pg.random_normal((8, 8), seed=2))
        out = pg.sigmoid(pg.exp(residual) + late)
    with pg.Session(graph, pg.Config(fuse=True)) as session:
        steps = [[p.name for p in covered(s.op)] for s in session.plan_for(out).steps]
        value = session.run(out)
    assert ["MatMul", "Add", "Relu"] in steps  # x is the matmul's own input
    assert ["Exp"] in steps and ["Add_1", "Sigmoid"] in steps  # exp need not wait for `late`
    assert_same_bits(value, reference(graph, out))
    built = build_preset("two-networks", "small")
    with pg.Session(built.graph, pg.Config(inter_op_threads=2, fuse=True)) as session:
        steps = [[p.type for p in covered(s.op)] for s in session.plan_for(built.fetch).steps]
    assert steps.count(["matmul", "add"]) == 2 and ["add"] in steps


def branchy(shape):
    """add_n of four values of x: P = tanh(sigmoid(x)) + exp(relu(x)) (two branches itself),
    Q = sigmoid(x * 0.5), R = relu(x + 1) + c, and x + 1 again, which R computes: the root reads
    two values of R's ops."""
    graph = pg.Graph()
    with graph.as_default():
        x = pg.random_normal(shape, seed=4)
        p = pg.tanh(pg.sigmoid(x)) + pg.exp(pg.relu(x))
        q = pg.sigmoid(x * 0.5)
        shifted = x + 1.0
        r = pg.relu(shifted) + pg.constant(np.full(shape, 0.25, np.float32))
        out = pg.add_n([p, q, r, shifted])
    return graph, out


def groups(session, fetch):
    return sorted(tuple(p.name for p in covered(s.op)) for s in session.plan_for(fetch).steps)


@pytest.mark.parametrize("threads", [*SETTINGS, (2, 0), (0, 1), (0, 0)])
def test_branches_worth_a_worker_become_groups_at_inter_op_2_intra_op_1(threads, monkeypatch):
    """At inter-op >= 2 with one thread an op, a group's independent branches that are each
    worth a hand-off run as groups of their own, recursively; branches that share an op, or
    whose values the rest reads more than once, stay together. Elsewhere, or when the branches
    are cheap, one group. The bits are the unfused sequential run's either way."""
    graph, out = branchy((4, 8))
    expected = reference(graph, out)
    inter, intra = threads
    resolved = pg.Config(inter_op_threads=inter, intra_op_threads=intra).resolved()
    splits = resolved.inter_op_threads > 1 and resolved.intra_op_threads == 1
    with pg.Session(
        graph, pg.Config(inter_op_threads=inter, intra_op_threads=intra, fuse=True)
    ) as session:
        assert len(session.plan_for(out).steps) == 2  # random_normal, and one cheap group
        assert_same_bits(session.run(out), expected)
    monkeypatch.setattr(plan_module, "inexpensive_ns", lambda: 0)  # every branch is worth it
    with pg.Session(
        graph, pg.Config(inter_op_threads=inter, intra_op_threads=intra, fuse=True)
    ) as session:
        got = groups(session, out)
        assert_same_bits(session.run(out), expected)
    if not splits:
        assert len(got) == 2
        return
    assert got == sorted(
        [
            ("RandomNormal",),
            ("Sigmoid", "Tanh"),  # P's two branches, split in turn
            ("Relu", "Exp"),
            ("Add",),  # P's root
            ("Mul", "Sigmoid_1"),  # Q
            # R and x + 1, two values the root reads, are no branch of their own; in the
            # root's part they would wait for P and Q, so they leave it (`waiting_parts`)
            ("Add_1",),
            ("Relu_1",),
            ("Add_2",),
            ("AddN",),
        ]
    )


@st.composite
def elementwise_trees(draw):
    """A random tree of elementwise ops over two constants (NaN payloads, infinities and signed
    zeros among their values: `operand_values`), whose root combines several branches that
    may share ops: what a group's branches look like."""
    shape = draw(st.sampled_from([(3, 4), (5,), (2, 3, 2)]))
    graph = pg.Graph()
    with graph.as_default():
        leaves = [pg.constant(operand_values(shape, "float32", seed)) for seed in (1, 2)]
        made = list(leaves)

        def node(depth):
            kinds = ["unary", "binary", "add_n"] + (["leaf"] if depth < 3 else [])
            kinds += ["made"] if depth == 1 else []
            kind = draw(st.sampled_from(kinds))
            if depth == 0 or kind == "leaf":
                return draw(st.sampled_from(leaves))
            if kind == "made":  # an op some other branch also reads
                return draw(st.sampled_from(made))
            if kind == "unary":
                value = draw(st.sampled_from([pg.relu, pg.tanh, pg.exp, pg.sigmoid]))(
                    node(depth - 1)
                )
            elif kind == "binary":
                value = draw(st.sampled_from([pg.add, pg.multiply]))(
                    node(depth - 1), node(depth - 1)
                )
            else:
                value = pg.add_n([node(depth - 1) for _ in range(draw(st.integers(1, 4)))])
            made.append(value)
            return value

        out = pg.add_n([node(3) for _ in range(draw(st.integers(2, 4)))])
    return graph, out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=elementwise_trees())
def test_random_groups_split_into_branches_keep_the_bits(tree):
    """Every branch worth a worker (the bar at 0) at inter-op 2 / intra-op 1: whatever the
    groups come out as, each fused op has one value, the run gives the unfused sequential
    bits, and the ops are the same."""
    graph, out = tree
    expected = reference(graph, out)
    saved, plan_module.inexpensive_ns = plan_module.inexpensive_ns, lambda: 0
    try:
        config = pg.Config(inter_op_threads=2, intra_op_threads=1, fuse=True)
        with pg.Session(graph, config) as session:
            split = session.plan_for(out)
            assert_same_bits(session.run(out), expected)
    finally:
        plan_module.inexpensive_ns = saved
    with pg.Session(graph, pg.Config(fuse=True)) as session:
        whole = session.plan_for(out)
    ops = sorted(p.id for s in split.steps for p in covered(s.op))
    assert ops == sorted(p.id for s in whole.steps for p in covered(s.op))
    assert len(split.steps) >= len(whole.steps)


def test_a_group_reads_at_most_eight_values():
    graph = pg.Graph()
    with graph.as_default():
        x = pg.random_normal((4, 6), seed=5)
        for k in range(20):  # each add reads a value of its own
            x = x + pg.constant(np.full((4, 6), k, np.float32))
    with pg.Session(graph, pg.Config(fuse=True)) as session:
        fused = [s.op for s in session.plan_for(x).steps if s.op.type == "fused_elementwise"]
        value = session.run(x)
    assert sum(len(op.attrs["covers"]) for op in fused) == 20 and len(fused) == 3
    assert all(len(op.inputs) <= program.MAX_OPERANDS for op in fused)
    assert_same_bits(value, reference(graph, x))


def instructions(members):
    outside = list(
        dict.fromkeys(t.op.id for op in members for t in op.inputs if t.op not in members)
    )
    return compile_group(members, outside)


def test_registers_are_reused_and_no_instruction_writes_what_it_reads():
    graph, _ = chain(50)
    adds = [op for op in graph.ops if op.type == "add"]
    code, registers = instructions(adds)
    assert registers == 2 and code.shape == (50, 4) and code[-1, 1] == program.OUTPUT
    graph, _ = every_kind("float32", (3, 5))
    members = [op for op in graph.ops if op.type != "constant"]
    code, registers = instructions(members)
    assert registers <= 4
    for opcode, target, first, second in code:
        reads = {first, second} if binary(opcode) else {first}
        assert target < 0 or target not in reads


def binary(opcode):
    """Whether an opcode reads two operands (the table's binary entries come first)."""
    return program.COPY < opcode < program.BINARY_END


def test_the_kernel_refuses_rows_outside_its_arrays():
    out = np.empty((3, 4), np.float32)
    operands = (np.ones((3, 4), np.float32),) * program.MAX_OPERANDS
    code = np.array([[program.OPCODES["tanh"], program.OUTPUT, -1, 0]], np.int64)
    with pytest.raises(IndexError, match="out of bounds"):
        program.run_program(code, 1, operands, out, 1, 4)
    with pytest.raises(IndexError, match="widths differ"):
        program.run_program(code, 1, (np.ones((3, 5), np.float32),) * 8, out, 0, 3)
    narrow = np.empty((3, program.NARROW), np.float32)  # the element path checks the same
    with pytest.raises(IndexError, match="out of bounds"):
        program.run_program(code, 1, (np.ones((3, program.NARROW), np.float32),) * 8, narrow, 1, 4)
    with pytest.raises(IndexError, match="widths differ"):
        program.run_program(code, 1, (np.ones((3, 5), np.float32),) * 8, narrow, 0, 3)


def random_program(rng, length, registers):
    """`length` instructions of random opcodes over three outside operands (full rows, one
    row, full rows) and `registers` registers, each read only once written; the last writes
    the output. No instruction writes a register it reads (`compile_group`'s rule)."""
    written, code = [], []
    for n in range(length):
        opcode = int(rng.integers(0, len(program.OPCODES) + 1))
        first, second = (
            int(rng.choice(written))
            if written and rng.random() < 0.6
            else -1 - int(rng.integers(3))
            for _ in range(2)
        )
        reads = {first, second} if binary(opcode) else {first}
        free = [r for r in range(registers) if r not in reads]
        target = program.OUTPUT if n == length - 1 else int(rng.choice(free))
        code.append((opcode, target, first, second if binary(opcode) else first))
        if target >= 0 and target not in written:
            written.append(target)
    return np.array(code, np.int64)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_narrow_outputs_element_by_element_give_the_tile_loops_bits(dtype):
    """The element path (ranges of at most `program.NARROW` elements) against the tile path
    (narrow rows joined), both called on the same program and operands: NaN payloads (an sNaN
    copied stays signalling), infinities, signed zeros, every opcode and operand kind."""
    rng = np.random.default_rng(7)
    rows, width = 6, program.NARROW + 9
    full, other = (operand_values((rows, width), dtype, seed) for seed in (1, 2))
    operands = (full, operand_values((1, width), dtype, 3), other)
    operands += (full,) * (program.MAX_OPERANDS - len(operands))
    bits = np.uint32 if dtype == "float32" else np.uint64
    for _ in range(200):
        code = random_program(rng, int(rng.integers(1, 12)), registers=3)
        by_tiles, by_elements = (np.empty((rows, width), dtype) for _ in range(2))
        program._run_tiles(code, 3, operands, by_tiles, 0, rows)
        program._run_elements(code, 3, operands, by_elements, 0, rows)
        np.testing.assert_array_equal(by_elements.view(bits), by_tiles.view(bits), str(code))
        narrow = np.empty((rows, program.NARROW), dtype)  # and through run_program's choice
        columns = tuple(np.ascontiguousarray(x[:, : program.NARROW]) for x in operands)
        program.run_program(code, 3, columns, narrow, 0, rows)
        np.testing.assert_array_equal(narrow.view(bits), by_tiles[:, : program.NARROW].view(bits))


def test_a_chain_of_20000_adds_plans_and_runs_as_one_step():
    graph, out = chain(20_000, shape=(2, 3))
    with pg.Session(graph, pg.Config(fuse=True)) as session:
        steps = session.plan_for(out).steps
        value = session.run(out)
    assert len(steps) == 2 and steps[1].op.attrs["registers"] == 2
    assert_same_bits(value, reference(graph, out))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows, width", [(7, 5), (64, 3), (3, 2000), (1, 9), (33, 1)])
def test_a_column_operand_is_splatted_across_its_rows(rows, width, dtype, many_shards):
    """x - max(x, keepdims) then exp, divided by a row sum: the (rows, 1) operands join the
    group (each row's value splatted across the row), with the unfused run's bits."""
    values = operand_values((rows, width), dtype, 4)
    graph = pg.Graph("splat")
    with graph.as_default():
        x = pg.constant(values)
        column = pg.constant(operand_values((rows, 1), dtype, 5))
        out = pg.exp((x - column) * 0.5) / (column + 3.0) + x
    with pg.Session(graph, pg.Config(executor="sequential")) as session:
        expected = session.run(out)
    for inter, intra in [(1, 1), (2, 2)]:
        with pg.Session(
            graph, pg.Config(fuse=True, inter_op_threads=inter, intra_op_threads=intra)
        ) as session:
            steps = session.plan_for(out).steps
            assert any(step.op.type == "fused_elementwise" for step in steps)
            assert_same_bits(session.run(out), expected)
