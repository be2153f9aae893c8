"""Fused epilogues: `matmul -> add(bias) [-> relu | tanh | sigmoid]` as one step, row block by
row block.

TensorFlow's oneDNN path fuses MatMul with its BiasAdd (and an activation); so do we, with
`Config(fuse=True)`. The plan (`fuse_epilogues`, called by `plan.build_plan`) replaces such a
chain by one op of type "fused" when nothing else needs the intermediate values: the matmul's
output feeds only the add, the add's output only the activation, neither is fetched or fed,
all run on the same CPU device, the add keeps the matmul's shape (a bias over the last axis,
a scalar or an equal-shaped tensor), and its other operand is a value the matmul waits for
anyway: a source, a fed value or one of the matmul's own inputs (`waiting_parts`, the rule the
elementwise groups of `ops.fused_elementwise` follow too).

The fused op takes the place of the chain's last op (its id, so every consumer still finds its
value) and is named after all of them ("net1/MatMul+Add+Relu"), so the timeline's bar says which
ops it covers. `FusedEpilogue` composes the ops' own definitions: `prepare` prepares each on
the previous one's output buffer, and `compute` runs, for one row range, the matmul's kernel and
then the add's and the activation's on the same rows, while they are in cache. The shards are
the matmul's own (merged into one call per thread where the matmul's are: `merges_rows`), so
every number is computed by the same kernels as without fusion: outputs are bit-identical to
the unfused sequential reference.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..devices import Device
from ..graph import Op
from .registry import Arrays, Bounds, Cost, OpDef, opdef, register

#: Op types that can end a fused chain after the add.
ACTIVATIONS = ("relu", "tanh", "sigmoid", "gelu")
FUSED = "fused"
#: A group of elementwise ops run by one program (`ops.fused_elementwise`).
FUSED_ELEMENTWISE = "fused_elementwise"
#: A fused op's label lists its parts up to this many; a longer one says its first and last.
LISTED_PARTS = 4


def covered(op: Op) -> tuple[Op, ...]:
    """The original ops a fused op runs (the op itself for any other op)."""
    return op.attrs["covers"] if op.type in (FUSED, FUSED_ELEMENTWISE) else (op,)


def joined(labels: list[str]) -> str:
    """The parts' labels as one: "MatMul+Add+Relu", or "Add+...+Add_9 (10 ops)"."""
    if len(labels) <= LISTED_PARTS:
        return "+".join(labels)
    return f"{labels[0]}+...+{labels[-1]} ({len(labels)} ops)"


def fused_name(parts: Iterable[Op]) -> str:
    """A fused op's name: the first part's full name, then the others' last components
    ("net1/MatMul+Add+Relu"), so the timeline's bar says which ops it covers."""
    first, *rest = parts
    return joined([first.name, *(part.name.rsplit("/", 1)[-1] for part in rest)])


@register
class FusedEpilogue(OpDef):
    type = FUSED
    default_name = "Fused"

    def cost(self, op: Any) -> Cost:
        costs = [opdef(part.type).cost(part) for part in covered(op)]
        return Cost(sum(c.flops for c in costs), sum(c.bytes for c in costs))

    def rows(self, op: Any) -> int:
        matmul = covered(op)[0]
        return opdef(matmul.type).rows(matmul)

    def sharding(self, op: Any) -> tuple[OpDef, Any]:
        matmul = covered(op)[0]
        return opdef(matmul.type), matmul

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Any, np.dtype]:
        last = attrs["covers"][-1]
        return last.shape, last.dtype

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        """Each covered op prepared on the previous one's output buffer (filled later)."""
        matmul, *epilogue = covered(op)
        works = [opdef(matmul.type).prepare(matmul, args[:2], num_shards, config)]
        for part, sources in zip(epilogue, _operand_sources(op)):
            previous = works[-1][-1]  # the output buffer of the op before
            operands = [previous if source is None else args[source] for source in sources]
            # the output's own rows: the epilogue runs in the matmul's row ranges
            works.append(opdef(part.type).prepare_rows(part, operands, standard=True))
        return tuple(works)

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        for part, part_work in zip(covered(op), work):
            opdef(part.type).compute(part, part_work, shard, row_start, row_stop)

    def calls_blas(self, op: Any, config: Any) -> bool:
        return any(opdef(part.type).calls_blas(part, config) for part in covered(op))

    def merges_rows(self, op: Any, work: Any, shards: Bounds, groups: Bounds) -> bool:
        """Where the matmul's kernel gives the same bits over merged rows (its own answer).
        The epilogue then runs over the merged rows too: its parts are elementwise, whose value
        per element does not depend on the rows a call is given. (Alone, those ops keep one
        call per shard for a crash not yet explained: see `ElementwiseOp.merges_rows`.)
        Asking every part, as this did, never merged: a fused matmul packed B once per shard
        where the unfused one packs it once per thread, and the seed graph at medium ran at
        inter-op 2 in 1.39x the unfused time (benchmarks/RESULTS.md, "Fused epilogues merge
        their matmul's shards")."""
        matmul = covered(op)[0]
        return opdef(matmul.type).merges_rows(matmul, work[0], shards, groups)

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray] | None:
        """Each part's own one-call path in turn (None if a part has none): a one-shard step
        costs what its ops cost unfused, less the steps saved."""
        parts = covered(op)
        calls = [opdef(part.type).whole(part, config) for part in parts]
        if any(call is None for call in calls):
            return None
        first, wiring = calls[0], list(zip(calls[1:], _operand_sources(op)))

        def fused(args: Arrays) -> np.ndarray:
            value = first(args[:2])
            for call, sources in wiring:
                value = call([value if source is None else args[source] for source in sources])
            return value

        return fused

    def finish(self, op: Any, work: Any) -> np.ndarray:
        parts = covered(op)
        return opdef(parts[-1].type).finish(parts[-1], work[-1])

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        matmul, *epilogue = covered(op)
        value = opdef(matmul.type).reference(matmul, args[:2])
        for part, sources in zip(epilogue, _operand_sources(op)):
            operands = [value if source is None else args[source] for source in sources]
            value = opdef(part.type).reference(part, operands)
        return value


def _operand_sources(fused: Op) -> list[list[int | None]]:
    """For each epilogue part, where each of its inputs comes from: None for the value of the
    part before it, else the index in the fused op's inputs (the matmul's two come first)."""
    parts, extra = covered(fused), itertools.count(2)
    return [
        [None if tensor.op is before else next(extra) for tensor in part.inputs]
        for before, part in itertools.pairwise(parts)
    ]


def _chain_from(
    matmul: Op,
    consumers: dict[int, list[Op]],
    fetched: set[int],
    fed: set[int],
    device: dict[int, Device],
) -> list[Op] | None:
    """matmul -> add [-> activation], if the rules of the module docstring allow it: the chain
    stops after a fetched op (its value must be kept) and never takes in a fed one."""
    chain = [matmul]
    for wanted in (("add",), ACTIVATIONS):
        last = chain[-1]
        users = consumers.get(last.id, [])
        if last.id in fetched or len(users) != 1 or users[0].type not in wanted:
            break
        nxt = users[0]
        if nxt.id in fed or device.get(nxt.id) != device[matmul.id]:
            break  # its value comes from the feed, or it runs elsewhere
        if nxt.shape != matmul.shape or sum(t.op is last for t in nxt.inputs) != 1:
            break  # a broadcast that grows the shape, or add(x, x): not an epilogue
        chain.append(nxt)
    return chain if len(chain) > 1 else None


def consumers_of(ops: list[Op]) -> dict[int, list[Op]]:
    """Op id -> the ops of `ops` that read its value (once per input that does)."""
    consumers: dict[int, list[Op]] = {}
    for op in ops:
        for tensor in op.inputs:
            consumers.setdefault(tensor.op.id, []).append(op)
    return consumers


def waiting_parts(parts: list[Op], fed: set[int]) -> list[Op]:
    """The parts (in graph order) that would start later as one step than as ops of their own:
    those that do not need, through the parts before them, every value the parts read from
    outside and another step computes (a source or a fed value is there before a run starts).

    Fusing them would make work wait for a value it does not read: with the seed graph's final
    add (its two networks summed) taken as the epilogue of one network's last matmul, that
    matmul waited for the other network and the two ran one after the other at inter-op 2
    (benchmarks/RESULTS.md, "Fused epilogues merge their matmul's shards"). A residual add,
    x + matmul(x, w), reads nothing new and fuses.
    """
    inside = {part.id for part in parts}
    needs: dict[int, set[int]] = {}
    computed: set[int] = set()
    for part in parts:
        own = {
            t.op.id
            for t in part.inputs
            if t.op.id not in inside and t.op.id not in fed and not opdef(t.op.type).is_source
        }
        computed |= own
        needs[part.id] = own.union(*(needs[t.op.id] for t in part.inputs if t.op.id in inside))
    return [part for part in parts if needs[part.id] != computed]


def fuse_epilogues(
    ops: list[Op], fetched: Iterable[int], fed: Iterable[int], device: dict[int, Device]
) -> list[Op]:
    """`ops` (a plan's ops in graph order) with each fusable chain replaced by one fused op.

    `fetched` and `fed`: ids of ops whose values are fetched or fed; `device`: each op's
    placement. The fused op has the id, position and device of the chain's last op, so consumers
    and slots are unchanged; `device` gets no new entries.
    """
    fetched, fed = set(fetched), set(fed)
    consumers = consumers_of(ops)
    fused_at: dict[int, Op] = {}
    dropped: set[int] = set()
    for op in ops:
        if op.type != "matmul" or op.id in fed or not device[op.id].is_cpu:
            continue
        chain = _chain_from(op, consumers, fetched, fed, device)
        if chain is None or any(part.id in fused_at for part in chain[1:]):
            continue  # no chain, or its add already ends another matmul's chain
        if waiting_parts(chain, fed):
            continue  # the add reads a value the matmul does not need: it would wait for it
        last = chain[-1]
        inputs = tuple(op.inputs) + tuple(
            tensor
            for before, part in itertools.pairwise(chain)
            for tensor in part.inputs
            if tensor.op is not before
        )
        fused_at[last.id] = dataclasses.replace(
            last, type=FUSED, name=fused_name(chain), inputs=inputs, attrs={"covers": tuple(chain)}
        )
        dropped.update(part.id for part in chain[:-1])
    return [fused_at.get(op.id, op) for op in ops if op.id not in dropped]
