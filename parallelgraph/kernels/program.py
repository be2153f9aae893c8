"""One kernel that runs a whole group of elementwise ops: a small program over column tiles.

`Config(fuse=True)` turns a group of elementwise ops whose values in between nobody else reads
(`ops.fused_elementwise`) into one step. Compiling a Numba function per group would cost a
second or more per new graph (and seconds for a chain of 2,000 adds); instead this one kernel,
compiled once per dtype and cached, *interprets* the group: `code` holds one instruction a row,
`(opcode, destination, first operand, second operand)`, and for each row of the range and each
tile of up to `TILE` columns the instructions run in order, each a SIMD loop over the tile.
Values in between live in a few tile-sized registers (the planner reuses them:
`ops.fused_elementwise.compile_group`), so they stay in the L1 cache and never reach memory.
Rows narrower than half a tile are joined, several to a tile; a range of at most `NARROW`
elements (a chain of ops on scalars) runs element by element instead, with one value a
register: a SIMD loop's set-up would cost more than its elements.

Operands: a value >= 0 is a register; a value < 0 is the external operand `-1 - value` of
`operands`, a tuple of `MAX_OPERANDS` 2-D C-contiguous arrays of the output's width, each with
the output's rows or ONE row every row reads (a bias, a scalar), or of width 1 with the
output's rows (a softmax's row max, a layer norm's row mean: splatted across each row into a
tile once per tile, which every instruction reading it then reads as a full operand);
unused places repeat an operand (a tuple of one fixed length keeps to one compiled kernel per
dtype). Destination `OUTPUT` (-1) is `out`, C-contiguous too.

**Opcodes come from the op table** (`ops.elementwise`): every entry that `fuses` (one or two
float inputs, a value of their dtype) has one, binary ones first, and the interpreter
(`kernels.interpreter`) is compiled together with the dispatch the table generates
(`kernels.codegen`), so a new entry is a new opcode with nothing written here.

**The same bits as the ops one by one**: each opcode's loop calls the same inlined scalar as
that op's row kernel (the entry's arithmetic under the NaN rule, `vecmath.tanh_scalar`, ...),
and no `fastmath`: an element's value is a function of its
operands alone (see `kernels.vecmath`), whatever the tile, the row range or the thread. A
destination register is never one the instruction reads (the planner frees operand registers
only after choosing the destination), so every loop reads and writes different arrays and
LLVM vectorizes it without a run-time overlap check failing.
"""

from __future__ import annotations

from typing import Any

from ..ops.elementwise import TABLE

#: Opcode 0 copies its operand (add_n of one term); the table's fusing entries follow, binary
#: first: opcodes below `BINARY_END` read a second operand.
COPY = 0
_FUSING = sorted((e for e in TABLE.values() if e.fuses), key=lambda e: e.arity != 2)
#: The opcode of each op type a fused group may hold (add_n folds with ADD, or is a COPY).
OPCODES: dict[str, int] = {entry.name: code for code, entry in enumerate(_FUSING, start=1)}
BINARY_END = 1 + sum(1 for entry in _FUSING if entry.arity == 2)
ADD = OPCODES["add"]
#: The destination that is the output array.
OUTPUT = -1
#: How many external operands a group may read (the length of `operands`).
MAX_OPERANDS = 8
#: Columns a register holds: 256 float64 are 2 KB, so a dozen registers stay in L1.
TILE = 1024
#: Row ranges of at most this many elements run element by element (`_run_elements`): there
#: an instruction's SIMD loop costs its set-up (~25 ns) for one or two elements, and a scalar
#: step ~5 ns an element; more, and `_run_tiles` joins narrow rows into tiles. Measured
#: interleaved, element by element against a tile a row (RESULTS.md, "Narrow groups element
#: by element"): the chain's 1,998 adds on 1x1 0.22-0.33x, 1x2 0.41-0.55x, 1x4 0.71x, 1x8
#: 1.39-1.48x; nine ops with tanh, exp and sigmoid 0.58-0.61x a 1-element row, 0.88-0.91x a
#: 2-element row, 1.25-1.26x a 3-element row.
NARROW = 2


#: The interpreter's functions (`kernels.interpreter`), compiled into the generated module in
#: this order (callees first).
KERNELS = ("_splat", "_flat_views", "_run_elements", "_run_tiles", "run_program")


def __getattr__(name: str) -> Any:
    """`run_program` (and the interpreter's other kernels): compiled with the table's dispatch
    in the generated module (`kernels.codegen`), on first use."""
    if name in KERNELS:
        from . import codegen

        return getattr(codegen.cpu_module(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
