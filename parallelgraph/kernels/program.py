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
the output's rows or ONE row every row reads (a bias, a scalar: `elementwise.operand_row`);
unused places repeat an operand (a tuple of one fixed length keeps to one compiled kernel per
dtype). Destination `OUTPUT` (-1) is `out`, C-contiguous too.

**The same bits as the ops one by one**: each opcode's loop is the arithmetic of that op's row
kernel, written with the same inlined functions (`elementwise._first_nan` for the NaN rule,
`vecmath.tanh_scalar`, ...), and no `fastmath`: an element's value is a function of its
operands alone (see `kernels.vecmath`), whatever the tile, the row range or the thread. A
destination register is never one the instruction reads (the planner frees operand registers
only after choosing the destination), so every loop reads and writes different arrays and
LLVM vectorizes it without a run-time overlap check failing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bounds import check_operand_rows
from .elementwise import _first_nan
from .vecmath import exp_scalar, sigmoid_scalar, tanh_scalar

#: Opcodes. ADD also folds add_n's terms (its accumulate is the same `_first_nan(a, b, a + b)`).
COPY, ADD, MULTIPLY, RELU, TANH, EXP, SIGMOID = range(7)
#: The opcode of each elementwise op type a group may hold (add_n: ADD, or COPY for one term).
OPCODES = {
    "add": ADD,
    "multiply": MULTIPLY,
    "relu": RELU,
    "tanh": TANH,
    "exp": EXP,
    "sigmoid": SIGMOID,
}
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


@njit(nogil=True, cache=True, error_model="numpy")
def run_program(code, registers_needed, operands, out, row_start, row_stop):
    """Rows [row_start, row_stop) of `out` from the program `code` (int64, one instruction a
    row: opcode, destination, operand, operand) over `operands`; `registers_needed` tiles of
    scratch."""
    for operand in operands:
        check_operand_rows(operand, out, row_start, row_stop)
    if (row_stop - row_start) * out.shape[1] <= NARROW:
        _run_elements(code, registers_needed, operands, out, row_start, row_stop)
    else:
        _run_tiles(code, registers_needed, operands, out, row_start, row_stop)


@njit(nogil=True, cache=True, error_model="numpy")
def _run_tiles(code, registers_needed, operands, out, row_start, row_stop):
    """`run_program` a tile at a time, each instruction a SIMD loop over the tile: up to `TILE`
    columns of a row, or, for rows at most half a tile wide, `TILE // columns` whole rows
    (consecutive rows of a C-contiguous array follow each other in memory, so they are one
    flat stretch; an operand of one row every row reads is laid out that many times, once).
    Joining rows matters: an instruction's dispatch costs ~25 ns however few its elements,
    which on 64x8 values was 576 dispatches for 512 elements (benchmarks/RESULTS.md, "Narrow
    rows joined")."""
    columns = out.shape[1]
    joined = 0 < 2 * columns <= TILE and row_stop - row_start > 1
    # no more rows to a tile than the range holds: the one-row operands are laid out that
    # many times (1,024 copies of a 1-wide bias for 64 rows cost more than the group)
    rows_a_tile = min(TILE // columns, row_stop - row_start) if joined else 1
    registers = np.empty((max(registers_needed, 1), TILE), out.dtype)
    laid_out = np.empty((MAX_OPERANDS if joined else 0, rows_a_tile * columns), out.dtype)
    for k in range(laid_out.shape[0]):
        if operands[k].shape[0] == 1:
            row = operands[k][0]
            for j in range(rows_a_tile * columns):
                laid_out[k, j] = row[j % columns]
    flat = _flat_views(operands)
    flat_out = out.reshape(-1)
    row_tiles_end = 1 if joined else columns  # joined: one tile (start 0) a block of rows
    for block in range(row_start, row_stop, rows_a_tile):
        for start in range(0, row_tiles_end, TILE):
            width = (
                min(rows_a_tile, row_stop - block) * columns
                if joined
                else min(TILE, columns - start)
            )
            base = block * columns + start
            for n in range(code.shape[0]):
                opcode, target, first, second = code[n, 0], code[n, 1], code[n, 2], code[n, 3]
                # Operands are picked here, twice, not in a helper: an inlined helper given
                # the tuple copies it, counting references of all its arrays (~100 ns a
                # call); one given the picked array made 1,998 1x1 adds 81 us against 53,
                # and a 6-op group on 512x1024 463 against 414 (interleaved A/B).
                if first >= 0:
                    a = registers[first, :width]
                elif operands[-1 - first].shape[0] != 1:
                    a = flat[-1 - first][base : base + width]
                elif joined:
                    a = laid_out[-1 - first, :width]
                else:
                    a = flat[-1 - first][start : start + width]
                if target == OUTPUT:
                    dst = flat_out[base : base + width]
                else:
                    dst = registers[target, :width]
                if opcode == ADD or opcode == MULTIPLY:
                    if second >= 0:
                        b = registers[second, :width]
                    elif operands[-1 - second].shape[0] != 1:
                        b = flat[-1 - second][base : base + width]
                    elif joined:
                        b = laid_out[-1 - second, :width]
                    else:
                        b = flat[-1 - second][start : start + width]
                    if opcode == ADD:
                        for j in range(width):
                            dst[j] = _first_nan(a[j], b[j], a[j] + b[j])
                    else:
                        for j in range(width):
                            dst[j] = _first_nan(a[j], b[j], a[j] * b[j])
                elif opcode == RELU:
                    for j in range(width):
                        value = a[j]
                        dst[j] = value if not value <= 0 else 0  # as kernels.elementwise
                elif opcode == TANH:
                    for j in range(width):
                        dst[j] = tanh_scalar(a[j])
                elif opcode == EXP:
                    for j in range(width):
                        dst[j] = exp_scalar(a[j])
                elif opcode == SIGMOID:
                    for j in range(width):
                        dst[j] = sigmoid_scalar(a[j])
                else:  # COPY
                    for j in range(width):
                        dst[j] = a[j]


@njit(nogil=True, cache=True, inline="always")
def _flat_views(operands):
    """The operands as 1-D views (each C-contiguous: `run_program`'s contract), a tuple of
    `MAX_OPERANDS` like theirs."""
    return (
        operands[0].reshape(-1),
        operands[1].reshape(-1),
        operands[2].reshape(-1),
        operands[3].reshape(-1),
        operands[4].reshape(-1),
        operands[5].reshape(-1),
        operands[6].reshape(-1),
        operands[7].reshape(-1),
    )


@njit(nogil=True, cache=True, error_model="numpy")
def _run_elements(code, registers_needed, operands, out, row_start, row_stop):
    """`run_program` one element at a time, for row ranges of at most `NARROW` elements:
    registers hold one value each. Each opcode is the same scalar arithmetic as the tile
    loop's body, on the same types (the zero relu gives is of the output's dtype: no value is
    converted between float32 and float64), so the bits are the same."""
    values = np.empty(max(registers_needed, 1), out.dtype)
    zero = np.zeros(1, out.dtype)[0]
    for row in range(row_start, row_stop):
        for column in range(out.shape[1]):
            for n in range(code.shape[0]):
                opcode, target, first, second = code[n, 0], code[n, 1], code[n, 2], code[n, 3]
                if first >= 0:
                    a = values[first]
                else:
                    operand = operands[-1 - first]
                    a = operand[row if operand.shape[0] != 1 else 0, column]
                if opcode == ADD or opcode == MULTIPLY:
                    if second >= 0:
                        b = values[second]
                    else:
                        operand = operands[-1 - second]
                        b = operand[row if operand.shape[0] != 1 else 0, column]
                    result = _first_nan(a, b, a + b if opcode == ADD else a * b)
                elif opcode == RELU:
                    result = a if not a <= 0 else zero
                elif opcode == TANH:
                    result = tanh_scalar(a)
                elif opcode == EXP:
                    result = exp_scalar(a)
                elif opcode == SIGMOID:
                    result = sigmoid_scalar(a)
                else:  # COPY
                    result = a
                if target == OUTPUT:
                    out[row, column] = result
                else:
                    values[target] = result
