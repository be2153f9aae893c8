"""The fused program's interpreter: the source `kernels.codegen` compiles with the op table.

These functions are written here as plain Python (so they read and lint as code) and are
compiled only as part of the generated kernel module (`kernels.codegen`), after the opcode
dispatch `apply_tile` / `apply_element` that the op table generates: a change of the table
then makes a new module, which Numba compiles afresh, where a kernel cached beside this file
would keep calling the dispatch it was compiled with. `kernels.program` documents the program
and hands out the compiled `run_program`.

`apply_tile` and `apply_element`, the one pair of names used here and defined there, are the
generated dispatch: `if opcode == 1: <the add loop> elif opcode == 2: ...`, each branch one
entry's scalar (`kernels.codegen.dispatch_source`).
"""

from __future__ import annotations

import numpy as np

from .bounds import check_program_operand
from .program import BINARY_END, COPY, MAX_OPERANDS, NARROW, OUTPUT, TILE
from .vector_width import prefer_wide_vectors


def run_program(code, registers_needed, operands, out, row_start, row_stop):
    """Rows [row_start, row_stop) of `out` from the program `code` (int64, one instruction a
    row: opcode, destination, operand, operand) over `operands`; `registers_needed` tiles of
    scratch."""
    for operand in operands:
        check_program_operand(operand, out, row_start, row_stop)
    if (row_stop - row_start) * out.shape[1] <= NARROW:
        _run_elements(code, registers_needed, operands, out, row_start, row_stop)
    else:
        _run_tiles(code, registers_needed, operands, out, row_start, row_stop)


def _run_tiles(code, registers_needed, operands, out, row_start, row_stop):
    """`run_program` a tile at a time, each instruction a SIMD loop over the tile: up to `TILE`
    columns of a row, or, for rows at most half a tile wide, `TILE // columns` whole rows
    (consecutive rows of a C-contiguous array follow each other in memory, so they are one
    flat stretch; an operand of one row every row reads is laid out that many times, once).
    Joining rows matters: an instruction's dispatch costs ~25 ns however few its elements,
    which on 64x8 values was 576 dispatches for 512 elements (benchmarks/RESULTS.md, "Narrow
    rows joined")."""
    prefer_wide_vectors()  # each instruction's loop at the CPU's widest vectors
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
    # operands of width 1 (a softmax's row max) are splatted, a value a row, into a tile each
    splatted = 0
    for k in range(MAX_OPERANDS):
        if operands[k].shape[1] != columns:
            splatted = MAX_OPERANDS
    splats = np.empty((splatted, TILE), out.dtype)
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
            for k in range(splatted):
                if operands[k].shape[1] != columns:
                    _splat(operands[k], splats[k], block, width if not joined else columns, width)
            for n in range(code.shape[0]):
                opcode, target, first, second = code[n, 0], code[n, 1], code[n, 2], code[n, 3]
                # Operands are picked here, twice, not in a helper: an inlined helper given
                # the tuple copies it, counting references of all its arrays (~100 ns a
                # call); one given the picked array made 1,998 1x1 adds 81 us against 53,
                # and a 6-op group on 512x1024 463 against 414 (interleaved A/B).
                if first >= 0:
                    a = registers[first, :width]
                elif operands[-1 - first].shape[1] != columns:
                    a = splats[-1 - first, :width]
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
                b = a
                if opcode < BINARY_END and opcode != COPY:
                    if second >= 0:
                        b = registers[second, :width]
                    elif operands[-1 - second].shape[1] != columns:
                        b = splats[-1 - second, :width]
                    elif operands[-1 - second].shape[0] != 1:
                        b = flat[-1 - second][base : base + width]
                    elif joined:
                        b = laid_out[-1 - second, :width]
                    else:
                        b = flat[-1 - second][start : start + width]
                apply_tile(opcode, a, b, dst, width)  # noqa: F821 - generated


def _splat(x, tile, first_row, row_width, width):
    """tile[:width] = each row's value of the width-1 operand x, repeated across its row: the
    rows first_row, first_row + 1, ... of `row_width` elements each in the tile."""
    for r in range(width // row_width if row_width else 0):
        value = x[first_row + r, 0]
        for j in range(r * row_width, (r + 1) * row_width):
            tile[j] = value


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


def _run_elements(code, registers_needed, operands, out, row_start, row_stop):
    """`run_program` one element at a time, for row ranges of at most `NARROW` elements:
    registers hold one value each. Each opcode is the same scalar function as the tile loop's
    body (`apply_element` and `apply_tile` call one entry's scalar), on the same types, so the
    bits are the same."""
    values = np.empty(max(registers_needed, 1), out.dtype)
    for row in range(row_start, row_stop):
        for column in range(out.shape[1]):
            for n in range(code.shape[0]):
                opcode, target, first, second = code[n, 0], code[n, 1], code[n, 2], code[n, 3]
                if first >= 0:
                    a = values[first]
                else:
                    operand = operands[-1 - first]
                    a = operand[row if operand.shape[0] != 1 else 0, column % operand.shape[1]]
                b = a
                if opcode < BINARY_END and opcode != COPY:
                    if second >= 0:
                        b = values[second]
                    else:
                        operand = operands[-1 - second]
                        b = operand[row if operand.shape[0] != 1 else 0, column % operand.shape[1]]
                if target == OUTPUT:
                    apply_element(opcode, a, b, out[row], column)  # noqa: F821 - generated
                else:
                    apply_element(opcode, a, b, values, target)  # noqa: F821 - generated
