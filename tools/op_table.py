"""The README's table of ops, made from the op registry (so it lists every op, and says what is
true): which builder makes each op type, and whether it has a GPU kernel and fuses.

    python tools/op_table.py          # prints the table; tests/test_docs.py checks the README's
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from parallelgraph.ops import REGISTRY, OpDef, composites
from parallelgraph.ops.elementwise import TABLE
from parallelgraph.ops.fused import ACTIVATIONS, FUSED, FUSED_ELEMENTWISE

#: Op types whose builders have other names (or several).
BUILDERS = {
    "strided_slice": "slice, split, t[...]",
    "top_k_indices": "top_k",
    "take_along_axis": "top_k",
    "take_along": "take_along_axis",
}
INTERNAL = {FUSED, FUSED_ELEMENTWISE}


def _fuses(op_type: str) -> str:
    if op_type == "matmul":
        return "epilogue: + bias, activation"
    parts = []
    if (op_type in TABLE and TABLE[op_type].fuses) or op_type == "add_n":
        parts.append("group")
    if op_type == "add" or op_type in ACTIVATIONS:
        parts.append("epilogue")
    return ", ".join(parts) or "-"


def rows() -> list[list[str]]:
    out = []
    for op_type, definition in REGISTRY.items():
        if definition.is_source or op_type in INTERNAL:
            continue
        if not type(definition).__module__.startswith("parallelgraph."):
            continue  # an op a test registered in this process (tests/test_dashboard_viewer)
        kind = "elementwise (table)" if op_type in TABLE else type(definition).__module__
        kind = kind.replace("parallelgraph.ops.", "")
        if kind == "rowwise":
            kind = "rowwise: one row kernel (the last axis; other axes: a composite)"
        gpu = type(definition).gpu_launches is not OpDef.gpu_launches
        builder = BUILDERS.get(op_type, op_type)
        out.append([op_type, builder, kind, "yes" if gpu else "no", _fuses(op_type)])
    for name in composites.__all__:
        if name not in REGISTRY:  # a row op of its name is listed above
            out.append(
                [name, name, "composite of primitives", "its parts", "its elementwise parts"]
            )
    return out


def render() -> str:
    header = ["op", "builder (pg.)", "defined in", "GPU", "fuse=True"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += [
        "| " + " | ".join(f"`{row[0]}`" if i == 0 else row[i] for i in range(5)) + " |"
        for row in rows()
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(render())
