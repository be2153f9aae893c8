"""Fused elementwise groups: connected elementwise ops of one shape as one step and one kernel.

With `Config(fuse=True)` the plan (`fuse_elementwise`, after `fused.fuse_epilogues`) gathers
the elementwise ops of the table that fuse (`ops.elementwise`: float in, float out) and add_n
ops into groups: an op joins the group of its
consumers when all of them are in that one group, it has their shape, its value is neither
fetched nor fed, it runs on the same CPU device, and the group then still reads at most
`kernels.program.MAX_OPERANDS` other values. A group of two or more ops becomes one op of type
"fused_elementwise" in place of its last op (the one whose value leaves the group: its id, so
consumers and slots are unchanged), named after the ops it covers, whose inputs are the values
the group reads from outside. An op that would wait, in the group, for a value it does not
need (`fused.waiting_parts`: a tanh of one branch in a group that also adds another branch)
stays out of it. Branches that read the same values (x * sigmoid(x) and exp(x), say) share
one step, whose rows split over intra-op helpers; where no helper can take them (inter-op 2 or
more, one thread an op) the branches that are each worth a hand-off (the plan's bar,
`costs.inexpensive_ns`) become groups of their own, so they still run on two workers
(`_branches`; benchmarks/RESULTS.md, "Fused branches on their own workers": one group was
0.89x the unfused time there, its branches now 1.19-1.72x faster than unfused).

Its kernel is `kernels.program.run_program`: the group compiled here (`compile_group`) into a
few instructions over tile-sized registers, so a chain of 2,000 tiny adds is one kernel call
instead of 2,000 steps, and the values in between a larger group's ops stay in the cache
instead of going to memory and back. Each instruction is its op's own arithmetic, so outputs
are bit-identical to the unfused sequential reference (tests/test_fusion_elementwise.py).
Shards are the group's output rows, cut as for any elementwise op.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import kernels
from ..devices import Device
from ..dtypes import num_elements, row_view_shape
from ..graph import Op, Tensor
from .broadcast import reads_as_program_operand
from .fused import FUSED_ELEMENTWISE, consumers_of, covered, fused_name, waiting_parts
from .math import _rows_of
from .registry import Arrays, Cost, OpDef, opdef, register


def _groups(op: Op) -> bool:
    """Whether `op` may be in a group: an op with an opcode (`kernels.program.OPCODES`: the
    table's entries that fuse) or add_n (a fold of adds), on float values, each input read as
    the program reads operands (`broadcast.reads_as_program_operand`: the output's rows or one
    row)."""
    if op.type not in kernels.program.OPCODES and op.type != "add_n":
        return False
    return op.dtype.kind == "f" and all(
        t.dtype == op.dtype and reads_as_program_operand(t.shape, op.shape) for t in op.inputs
    )


@dataclasses.dataclass
class _Group:
    """Members in the making (latest op first), their ids, and the ids of the values they read
    from outside."""

    members: list[Op]
    ids: set[int]
    outside: set[int]


def _reads(op: Op) -> set[int]:
    return {tensor.op.id for tensor in op.inputs}


def fuse_elementwise(
    ops: list[Op],
    fetched: Iterable[int],
    fed: Iterable[int],
    device: dict[int, Device],
    own_step: Callable[[list[Op]], bool] | None = None,
) -> list[Op]:
    """`ops` (a plan's ops in graph order) with each group of two or more elementwise ops
    (module docstring) replaced by one fused op. Arguments as `fused.fuse_epilogues`;
    `own_step(ops)`, where given, says whether a branch is worth a worker of its own: a group
    is then split into such branches (`_branches`)."""
    fetched, fed = set(fetched), set(fed)
    consumers = consumers_of(ops)
    group_of: dict[int, _Group] = {}
    for op in reversed(ops):  # every consumer of an op comes before it here
        if not _groups(op) or op.id in fed or not device[op.id].is_cpu:
            continue
        users = consumers.get(op.id, [])
        group = group_of.get(users[0].id) if users else None
        joins = (
            group is not None
            and op.id not in fetched
            and all(group_of.get(user.id) is group for user in users)
            and op.shape == group.members[0].shape
            and device[op.id] == device[group.members[0].id]
        )
        if joins:
            outside = (group.outside - {op.id}) | (_reads(op) - group.ids)
            joins = len(outside) <= kernels.program.MAX_OPERANDS
        if joins:
            group.members.append(op)
            group.ids.add(op.id)
            group.outside = outside
        else:
            group = _Group([op], {op.id}, _reads(op))
        group_of[op.id] = group
    fused_at: dict[int, Op] = {}
    dropped: set[int] = set()
    for group in {id(g): g for g in group_of.values()}.values():
        members = _without_waiting(group.members[::-1], fed)
        parts = _branches(members, own_step) if own_step is not None else [members]
        for part in parts:
            part = _without_waiting(part, fed)  # the root's part now reads the branches' values
            if len(part) > 1:
                fused = _fused_op(part)
                if len(fused.inputs) <= kernels.program.MAX_OPERANDS:
                    fused_at[fused.id] = fused
                    dropped.update(op.id for op in part[:-1])
    return [fused_at.get(op.id, op) for op in ops if op.id not in dropped]


def _branches(members: list[Op], own_step: Callable[[list[Op]], bool]) -> list[list[Op]]:
    """`members` (graph order; the last, the root, reads the others' values in the end) as one
    group or several: when two or more of the branches that feed the root are each worth a
    worker of their own (`own_step`), each becomes a group (split the same way in turn) and
    the root keeps the rest. A branch is what the root reaches through one of its inputs;
    branches that share an op are one, and one whose values the rest reads more than once (two
    tops) stays with the root, since a fused op has one value.

    Why: the ops of two branches can run side by side on two inter-op workers; as one step
    they run on one thread unless intra-op helpers split its rows (benchmarks/RESULTS.md,
    "Fused branches on their own workers")."""
    inside = {op.id: op for op in members}
    root = members[-1]
    branches: list[set[int]] = []
    for tensor in root.inputs:
        if tensor.op.id not in inside:
            continue
        reach = _reached(tensor.op, inside)
        for other in [branch for branch in branches if branch & reach]:
            branches.remove(other)
            reach |= other
        branches.append(reach)
    own = []
    for branch in branches:
        ops = [op for op in members if op.id in branch]
        read_outside = {t.op.id for op in members if op.id not in branch for t in op.inputs}
        if len(read_outside & branch) == 1 and own_step(ops):
            own.append(ops)
    if len(own) < 2:
        return [members]
    taken = {op.id for ops in own for op in ops}
    rest = [op for op in members if op.id not in taken]
    return [part for ops in own for part in _branches(ops, own_step)] + [rest]


def _reached(top: Op, inside: dict[int, Op]) -> set[int]:
    """The ids of `top` and of the members its value is computed from."""
    reached, stack = set(), [top]
    while stack:
        op = stack.pop()
        if op.id not in reached:
            reached.add(op.id)
            stack.extend(inside[t.op.id] for t in op.inputs if t.op.id in inside)
    return reached


def _without_waiting(members: list[Op], fed: set[int]) -> list[Op]:
    """`members` (graph order) less those that would wait for a value they do not need
    (`fused.waiting_parts`), until none would; the last (which reads them all) stays. What
    leaves runs as its own step, and its value comes to the group from outside."""
    while waiting := waiting_parts(members, fed):
        members = [op for op in members if op not in waiting]
    return members


def _fused_op(members: list[Op]) -> Op:
    """The op that runs `members` (in graph order) in place of the last."""
    inside = {op.id for op in members}
    inputs: dict[int, Tensor] = {}
    for op in members:
        for tensor in op.inputs:
            if tensor.op.id not in inside:
                inputs.setdefault(tensor.op.id, tensor)
    code, registers = compile_group(members, list(inputs))
    last = members[-1]
    return dataclasses.replace(
        last,
        type=FUSED_ELEMENTWISE,
        name=fused_name(members),
        inputs=tuple(inputs.values()),
        attrs={"covers": tuple(members), "code": code, "registers": registers},
    )


def compile_group(members: list[Op], outside: list[int]) -> tuple[np.ndarray, int]:
    """The program of `kernels.program` for `members` (graph order, the last one's value is the
    output) reading the values of the op ids `outside` as operands 0, 1, ...; returns the code
    and how many registers it uses.

    A register is free again once the last instruction reading it has been given its own
    destination (never before, so no instruction writes a register it reads); a chain of any
    length needs two.
    """
    program = kernels.program
    location = {op_id: -1 - k for k, op_id in enumerate(outside)}
    readers = Counter(tensor.op.id for op in members for tensor in op.inputs)
    reads_left: dict[int, int] = {}  # register -> reads still to come
    free: list[int] = []
    used = 0
    code: list[tuple[int, int, int, int]] = []
    for op in members:
        steps = _steps(op, [location[tensor.op.id] for tensor in op.inputs])
        previous = program.OUTPUT
        for n, (opcode, operands) in enumerate(steps):
            operands = [previous if source is None else source for source in operands]
            final = n == len(steps) - 1
            if final and op is members[-1]:
                target = program.OUTPUT
            elif free:
                target = free.pop()
            else:
                target, used = used, used + 1
            code.append((opcode, target, operands[0], operands[-1]))
            for source in operands:
                if source >= 0:
                    reads_left[source] -= 1
                    if reads_left[source] == 0:
                        free.append(source)
            if target >= 0:  # a partial sum is read once, by the next step
                reads_left[target] = readers[op.id] if final else 1
            previous = target
        location[op.id] = previous
    return np.array(code, dtype=np.int64).reshape(-1, 4), max(used, 1)


def _steps(op: Op, sources: list[int]) -> list[tuple[int, list[int | None]]]:
    """An op's instructions as (opcode, operands); None: the previous step's result. add_n
    folds its terms left to right, ((x0 + x1) + x2) + ..., as its row kernels do."""
    program = kernels.program
    if op.type != "add_n":
        return [(program.OPCODES[op.type], sources)]
    if len(sources) == 1:
        return [(program.COPY, sources)]
    return [(program.ADD, sources[:2])] + [(program.ADD, [None, term]) for term in sources[2:]]


def _program(op: Op) -> tuple[np.ndarray, int]:
    """A fused op's code and register count (`compile_group`)."""
    return op.attrs["code"], op.attrs["registers"]


def _operands(args: Arrays, rows: int, columns: int) -> tuple[np.ndarray, ...]:
    """The program's operand tuple: each value as 2-D C-contiguous rows (`math._rows_of`),
    padded to `MAX_OPERANDS` with the first (one tuple type: one compiled kernel a dtype)."""
    views = [np.ascontiguousarray(_rows_of(x, rows, columns)) for x in args]
    return (*views, *[views[0]] * (kernels.program.MAX_OPERANDS - len(views)))


@register
class FusedElementwise(OpDef):
    type = FUSED_ELEMENTWISE
    default_name = "Fused"
    blas_free = True  # kernels.program only
    #: The elementwise rate of `ops.math.ElementwiseOp` (a group's vector-math parts run
    #: faster per flop, so its time is overestimated: shards come out smaller, never larger).
    flops_per_ns = 20.0

    def cost(self, op: Any) -> Cost:
        """The parts' arithmetic; memory traffic only for what the group reads and writes."""
        flops = sum(opdef(part.type).cost(part).flops for part in covered(op))
        reads = sum(num_elements(t.shape) * t.dtype.itemsize for t in op.inputs)
        return Cost(flops, reads + num_elements(op.shape) * op.dtype.itemsize)

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Any, np.dtype]:
        last = attrs["covers"][-1]
        return last.shape, last.dtype

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        out = np.empty(op.shape, dtype=op.dtype)
        rows, columns = row_view_shape(op.shape)
        return _operands(args, rows, columns), _rows_of(out, rows, columns), out

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        operands, out_rows, _ = work
        kernels.program.run_program(*_program(op), operands, out_rows, row_start, row_stop)

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray]:
        run_program, code, registers = kernels.program.run_program, *_program(op)
        shape, dtype = op.shape, op.dtype
        rows, columns = row_view_shape(shape)

        def fused(args: Arrays) -> np.ndarray:
            out = np.empty(shape, dtype)
            operands = _operands(args, rows, columns)
            run_program(code, registers, operands, _rows_of(out, rows, columns), 0, rows)
            return out

        return fused

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        """Each covered op's NumPy reference in turn."""
        values = {tensor.op.id: value for tensor, value in zip(op.inputs, args)}
        for part in covered(op):
            operands = [values[tensor.op.id] for tensor in part.inputs]
            values[part.id] = opdef(part.type).reference(part, operands)
        return values[covered(op)[-1].id]
