"""conv2d and 2-D pooling kernels over a range of *image rows* (row r = n * OH + oh).

The ops (`parallelgraph.ops.nn`) index both data formats through the same kernels: `x` and
`out` are the C-contiguous arrays as given, NHWC (N, H, W, C) or, with `nchw` True, NCHW
(N, C, H, W); filters are always HWIO (kh, kw, C // groups, C_out). A kernel writes only the
output rows of its range, so shards never touch the same memory.

conv2d is computed as im2col + matmul, one *block* of image rows at a time: `im2col_rows`
writes the block's patch matrix (one row per output pixel, kh * kw * C_in/groups columns in
(i, j, c) order, zeros where the window hangs over the padding), which a matmul row kernel
(`kernels.matmul`) multiplies by the filter matrix (the HWIO filters reshaped to
(kh * kw * C_in/groups, C_out/groups)). With several groups the product goes to a block
buffer that `scatter_rows` copies into place. The op fixes the blocks by shape only (see
`ops.nn.Conv2D`), so an output element's arithmetic never depends on the shards.

NCHW goes the same way a block at a time (one image's run of output rows, or whole images):
`nchw_to_nhwc` copies the input rows the block reads into an NHWC scratch, `im2col_rows` and
the matmul run on it as on NHWC, and `scatter_nchw` writes the product's columns as output
planes. (Caffe's NCHW im2col, a (C_in * kh * kw, pixels) column matrix times the OIHW filter
matrix, needs no transposes, but measured slower here: its rows are output rows, 32 elements
say, too short to copy fast, and BLAS ran its 32 x 800 x 384 products 10 % slower than the
384 x 800 x 32 ones.) `im2col_rows` and `scatter_rows` also take NCHW arrays (correct, but
slow: strided).

`conv_direct_rows` is a direct loop for grouped convolutions with few input channels per
group (depthwise ones: one), where im2col would make one tiny matmul per group and block.
Every output element is the sum over (i, j, c) in that order, accumulated in the array dtype.
It skips window positions outside the input where im2col multiplies zeros: the two differ only
where a filter holds an inf or a NaN (0 * inf is NaN), beside the padding. With NCHW it works
a channel plane at a time (`_direct_nchw`: a run of output rows accumulates each tap's shifted
input, see "NCHW: a channel plane at a time" below), each element summed in the same (i, j, c)
order: the same bits as NHWC.

Pooling (`max_pool_rows`, `avg_pool_rows`) reads each window directly. Windows only count
positions inside the input (the padding is never a value): max pool is the largest of them
and NaN when any is NaN (NumPy's np.max rule); avg pool is their float64 sum divided by how
many there are (TensorFlow's SAME rule), cast to the dtype. NCHW pools go a channel plane at
a time too, a run of output rows per window position, in the same (h, w) order per element:
the same bits as NHWC.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bounds import check_range

__all__ = [
    "avg_pool_rows",
    "conv_direct_rows",
    "im2col_rows",
    "max_pool_rows",
    "nchw_to_nhwc",
    "scatter_nchw",
    "scatter_rows",
]


@njit(nogil=True, cache=True, inline="always")
def _dims(x, nchw):
    """(N, H, W, C) of a 4-D array in either format."""
    if nchw:
        return x.shape[0], x.shape[2], x.shape[3], x.shape[1]
    return x.shape[0], x.shape[1], x.shape[2], x.shape[3]


@njit(nogil=True, cache=True)
def im2col_rows(x, nchw, geometry, out_h, out_w, c0, cig, patches, row_start, row_stop):
    """Patch matrix of image rows [row_start, row_stop): for r = n * out_h + oh,
    patches[(r - row_start) * out_w + ow, (i * kw + j) * cig + c] =
    x[n, oh * sh - pt + i * dh, ow * sw - pl + j * dw, c0 + c], 0 outside the input.

    geometry: (kh, kw, sh, sw, dh, dw, pt, pl).
    """
    kh, kw, sh, sw, dh, dw, pt, pl = geometry
    n_size, height, width, channels = _dims(x, nchw)
    check_range(row_start, row_stop, n_size * out_h)
    if c0 < 0 or cig < 0 or c0 + cig > channels:
        raise IndexError("im2col_rows: channel range out of bounds")
    if patches.shape[0] < (row_stop - row_start) * out_w or patches.shape[1] != kh * kw * cig:
        raise IndexError("im2col_rows: patch buffer too small")
    for r in range(row_start, row_stop):
        n = r // out_h
        oh = r - n * out_h
        for ow in range(out_w):
            prow = patches[(r - row_start) * out_w + ow]
            for i in range(kh):
                h = oh * sh - pt + i * dh
                for j in range(kw):
                    w = ow * sw - pl + j * dw
                    base = (i * kw + j) * cig
                    if h < 0 or h >= height or w < 0 or w >= width:
                        for c in range(cig):
                            prow[base + c] = 0
                    elif nchw:
                        for c in range(cig):
                            prow[base + c] = x[n, c0 + c, h, w]
                    else:
                        src = x[n, h, w]
                        for c in range(cig):
                            prow[base + c] = src[c0 + c]


@njit(nogil=True, cache=True)
def scatter_rows(block, out, nchw, c0, out_h, out_w, row_start, row_stop):
    """out[n, oh, ow, c0 + q] (NCHW: out[n, c0 + q, oh, ow]) = block[(r - row_start) * out_w +
    ow, q] for image rows r = n * out_h + oh in [row_start, row_stop)."""
    n_size, height, width, channels = _dims(out, nchw)
    check_range(row_start, row_stop, n_size * out_h)
    cols = block.shape[1]
    if height != out_h or width != out_w or c0 < 0 or c0 + cols > channels:
        raise IndexError("scatter_rows: block does not fit the output")
    if block.shape[0] < (row_stop - row_start) * out_w:
        raise IndexError("scatter_rows: block too small")
    for r in range(row_start, row_stop):
        n = r // out_h
        oh = r - n * out_h
        for ow in range(out_w):
            src = block[(r - row_start) * out_w + ow]
            if nchw:
                for q in range(cols):
                    out[n, c0 + q, oh, ow] = src[q]
            else:
                dst = out[n, oh, ow]
                for q in range(cols):
                    dst[c0 + q] = src[q]


@njit(nogil=True, cache=True)
def nchw_to_nhwc(x, n0, n1, h0, h1, c0, cig, buf):
    """buf[n - n0, h - h0, w, c] = x[n, c0 + c, h, w] for images [n0, n1) and rows [h0, h1) of
    NCHW x: the NHWC copy of the input a block of NCHW output rows reads."""
    n_size, channels, height, width = x.shape
    if n0 < 0 or n1 < n0 or n1 > n_size or h0 < 0 or h1 < h0 or h1 > height:
        raise IndexError("nchw_to_nhwc: image or row range out of bounds")
    if c0 < 0 or cig < 0 or c0 + cig > channels:
        raise IndexError("nchw_to_nhwc: channel range out of bounds")
    if buf.shape != (n1 - n0, h1 - h0, width, cig):
        raise IndexError("nchw_to_nhwc: buffer does not fit")
    for n in range(n0, n1):
        for h in range(h0, h1):
            dst = buf[n - n0, h - h0]  # (width, cig): one row, in L1 while it fills
            for c in range(cig):
                src = x[n, c0 + c, h]
                for w in range(width):
                    dst[w, c] = src[w]


@njit(nogil=True, cache=True)
def scatter_nchw(block, out, n0, n1, c0, oh0, oh1):
    """out[n, c0 + q, oh, ow] = block[((n - n0) * (oh1 - oh0) + oh - oh0) * OW + ow, q] for
    images [n0, n1) and rows [oh0, oh1) of NCHW out: a block's product, written as planes."""
    n_size, channels, out_h, out_w = out.shape
    if n0 < 0 or n1 < n0 or n1 > n_size or oh0 < 0 or oh1 < oh0 or oh1 > out_h:
        raise IndexError("scatter_nchw: image or row range out of bounds")
    cols = block.shape[1]
    size = (oh1 - oh0) * out_w
    if c0 < 0 or c0 + cols > channels or block.shape[0] < (n1 - n0) * size:
        raise IndexError("scatter_nchw: block does not fit the output")
    flat = out.reshape(n_size, channels, out_h * out_w)
    for n in range(n0, n1):
        rows = block[(n - n0) * size :]
        # 16 pixels at a time: their block rows stay in L1 while each plane takes its 16
        # (a whole column at a time re-read every row from L2: 3 times slower with 64 columns)
        for p0 in range(0, size, 16):
            p1 = min(p0 + 16, size)
            for q in range(cols):
                dst = flat[n, c0 + q, oh0 * out_w :]
                for p in range(p0, p1):
                    dst[p] = rows[p, q]


@njit(nogil=True, cache=True, inline="always")
def _valid(out_size, stride, offset, size):
    """[lo, hi): the output positions o whose input position o * stride + offset is inside
    [0, size); the others fall on the padding."""
    if stride == 1:  # no division (the NCHW kernels call this once a tap)
        lo, hi = max(0, -offset), min(out_size, size - offset)
    else:
        lo = max(0, -(offset // stride))  # ceil(-offset / stride)
        hi = min(out_size, -((offset - size) // stride))  # ceil((size - offset) / stride)
    return lo, max(lo, hi)


# -- NCHW: a channel plane at a time ----------------------------------------------------------
# The NCHW pools and direct conv2d are sequences of *taps*: for one window position (i, j),
# one channel plane and a run of output rows, out-row element (oh, ow) (op)= plane[oh * sh +
# row_off, ow * sw + col_off] where that is inside the plane (`_tap_rows`). Done row by row,
# the inner loop is one output row (say 32 elements), too short for LLVM's vector loop (~8 ns
# a row, mostly its scalar remainder). Where input rows are as far apart in memory as output
# rows times the column step (stride 1 with SAME padding), the whole run is one loop over a
# flat range, and a column mask (`_column_masks`: is column ow's input inside the plane?)
# selects, element by element, the new value or the old one: the padding columns, which read
# the neighbouring row's values, keep what they had. A select, not a branch, so that it
# vectorizes; each element still gets exactly the operations of the row by row loop, in the
# same order. With strides above 1, `_plane_source` first splits the plane's rows into its
# sh x sw *phases* (rows p, p + sh, ...; columns q, q + sw, ...): a tap then reads one phase
# with steps of 1, as a stride-1 tap (for SAME padding, whose output is as wide as a phase).
ADD_PRODUCT, ADD, MAXIMUM = 1, 2, 3


@njit(nogil=True, cache=True, inline="always")
def _apply(op, dst, src, mask, masked, step, count, factor):
    """dst[k] (op)= src[k * step] for k < count, only where mask[k] if `masked` (elsewhere
    dst[k] stays); views that start at the first element."""
    if step == 1:  # its own loops: a runtime step of 1 would not vectorize as well
        _apply_step(op, dst, src, mask, masked, 1, count, factor)
    else:
        _apply_step(op, dst, src, mask, masked, step, count, factor)


@njit(nogil=True, cache=True, inline="always")
def _apply_step(op, dst, src, mask, masked, step, count, factor):
    if op == ADD_PRODUCT:
        if masked:
            for k in range(count):
                old = dst[k]
                dst[k] = old + src[k * step] * factor if mask[k] else old
        else:
            for k in range(count):
                dst[k] += src[k * step] * factor
    elif op == ADD:
        if masked:
            for k in range(count):
                old = dst[k]
                dst[k] = old + src[k * step] if mask[k] else old
        else:
            for k in range(count):
                dst[k] += src[k * step]
    else:  # the greater or a NaN (once NaN, nothing is greater)
        for k in range(count):
            value, best = src[k * step], dst[k]
            take = (value > best) | (value != value)
            dst[k] = value if take & (mask[k] | (not masked)) else best


@njit(nogil=True, cache=True, inline="always")
def _fill(dst, start, stop):
    """dst[start:stop] = 0 (a loop: Numba's slice assignment costs more on short ranges)."""
    for k in range(start, stop):
        dst[k] = 0


@njit(nogil=True, cache=True)
def _column_masks(out_w, sw, col_offs, width, rows):
    """masks[t, r * out_w + ow]: whether column ow's input ow * sw + col_offs[t] is inside
    [0, width), for `rows` rows (a tap's `mask`)."""
    masks = np.empty((len(col_offs), rows * out_w), np.bool_)
    for t in range(len(col_offs)):
        lo, hi = _valid(out_w, sw, col_offs[t], width)
        for r in range(rows):
            for ow in range(out_w):
                masks[t, r * out_w + ow] = lo <= ow < hi
    return masks


@njit(nogil=True, cache=True)
def _phases_fit(height, width, sh, sw, out_w):
    """Whether taps should read phases (section comment): strides above 1 that rule out flat
    runs on the plane itself, and an output as wide as a phase (then they allow them)."""
    return sh * width != sw * out_w and (sh > 1 or sw > 1) and -(-width // sw) == out_w


@njit(nogil=True, cache=True, inline="always")
def _phases_size(height, width, sh, sw):
    """Elements enough for `_plane_source`'s phases of any rows of a plane."""
    return (height + 2 * sh) * (width + sw)


@njit(nogil=True, cache=True, inline="always")
def _plane_source(flat, height, width, sh, sw, phased, h_lo, h_hi, buf):
    """What the taps of input rows [h_lo, h_hi) read, and its layout (h_base, phase width,
    phase size; 0, 0, 0 for the plane itself): `flat` (the plane, flat), or with `phased`
    those rows' phases in `buf`, phase (p, q) at (p * sw + q) * size, its row r, column c
    being plane[h_base + p + r * sh, q + c * sw] (0 beyond the plane)."""
    if not phased:
        return flat, (0, 0, 0)
    h_base = h_lo // sh * sh
    wq = -(-width // sw)
    hq = max(0, -(-(h_hi - h_base) // sh))
    size = hq * wq
    if buf.shape[0] < sh * sw * size:
        raise IndexError("_plane_source: buffer too small")
    for r in range(hq):
        for p in range(sh):
            h = h_base + p + r * sh
            if h >= height:
                continue  # (filled below: a fill here, though never run, slowed it 4x)
            row = flat[h * width :]
            base = p * sw * size + r * wq  # row r of phase (p, 0); phase (p, q): + q * size
            if sw == 2:  # one pass over the row (the usual stride)
                even, odd = buf[base:], buf[base + size :]
                for c in range(width // 2):
                    even[c] = row[2 * c]
                    odd[c] = row[2 * c + 1]
            else:
                for q in range(sw):
                    part = buf[base + q * size :]
                    for c in range(width // sw):
                        part[c] = row[q + c * sw]
    # the phases' last columns (where sw does not divide the width), and rows past the plane
    # (never read as values: zeros only so that the buffer is never garbage)
    for r in range(hq):
        for p in range(sh):
            h = h_base + p + r * sh
            for q in range(sw):
                base = (p * sw + q) * size + r * wq
                if h >= height:
                    _fill(buf, base, base + wq)
                elif width % sw:
                    w = width // sw * sw + q
                    buf[base + wq - 1] = flat[h * width + w] if w < width else 0
    return buf[: sh * sw * size], (h_base, wq, size)


@njit(nogil=True, cache=True, inline="always")
def _tap(row_off, col_off, sh, sw, width, layout):
    """(start, pitch, step): input (oh * sh + row_off, ow * sw + col_off) is element start + oh *
    pitch + ow * step of `_plane_source`'s array with that layout."""
    h_base, wq, size = layout
    if size == 0:
        return row_off * width + col_off, sh * width, sw
    p, q = row_off % sh, col_off % sw
    start = (p * sw + q) * size + (row_off - p - h_base) // sh * wq + (col_off - q) // sw
    return start, wq, 1


@njit(nogil=True, cache=True)
def _row_by_row(op, dst, src, oh0, rows, out_w, cols, address, factor, mask):
    """`_tap_rows` one output row at a time (a function of its own: inlined, its loops slowed
    the flat run's)."""
    first, last = rows
    lo, hi = cols
    start, pitch, step = address
    for oh in range(first, last):
        base = (oh - oh0) * out_w
        row = src[start + oh * pitch + lo * step :]
        _apply(op, dst[base + lo :], row, mask, False, step, hi - lo, factor)


@njit(nogil=True, cache=True, inline="always")
def _tap_rows(op, dst, src, oh0, oh1, out_w, rows, cols, address, factor, mask):
    """One tap over output rows [oh0, oh1) (section comment): dst holds them, flat (out_w
    wide); for the rows [first, last) = rows and columns [lo, hi) = cols whose input is
    inside the plane, dst[(oh - oh0) * out_w + ow] (op)= src[start + oh * pitch + ow * step]
    ((start, pitch, step) = address), the others as they were. op: ADD_PRODUCT (+= value *
    factor), ADD (+= value) or MAXIMUM (NaN wins). mask: the tap's `_column_masks` row, at
    least (oh1 - oh0) * out_w long."""
    first, last = rows
    lo, hi = cols
    start, pitch, step = address
    size = (oh1 - oh0) * out_w
    if lo == hi or first >= last:
        first = last = oh0  # nothing inside
    if min(dst.shape[0], mask.shape[0]) < size or first < oh0 or last > oh1:
        raise IndexError("_tap_rows: buffers do not fit the rows")
    if first < last and (
        start + first * pitch + lo * step < 0
        or start + (last - 1) * pitch + (hi - 1) * step >= src.shape[0]
    ):
        raise IndexError("_tap_rows: input positions out of bounds")
    if first == last:
        return
    if pitch != step * out_w:
        _row_by_row(op, dst, src, oh0, (first, last), out_w, (lo, hi), address, factor, mask)
        return
    # flat: element d (counted from oh0's row) reads src[step * d + origin]
    origin = start + oh0 * pitch
    k0, k1 = _valid((last - oh0) * out_w, step, origin, src.shape[0])  # the others: padding
    k0 = max(k0, (first - oh0) * out_w)
    k1 = max(k0, k1)
    masked = lo > 0 or hi < out_w
    _apply(op, dst[k0:], src[step * k0 + origin :], mask[k0:], masked, step, k1 - k0, factor)


@njit(nogil=True, cache=True, inline="always")
def _input_rows(oh0, oh1, sh, row_offs, height):
    """[h_lo, h_hi): the input rows that output rows [oh0, oh1) read, for row offsets
    row_offs[0] <= ... (the window's); clipped to the plane."""
    return max(0, oh0 * sh + row_offs[0]), min(height, (oh1 - 1) * sh + row_offs[-1] + 1)


@njit(nogil=True, cache=True)
def _direct_nchw(x, filters, out, geometry, groups, row_start, row_stop):
    """`conv_direct_rows` for C-contiguous NCHW (checked there): a channel plane at a time,
    every element summed over (i, j, c) in order, positions outside the input skipped."""
    kh, kw, sh, sw, dh, dw, pt, pl = geometry
    c_out, out_h, out_w = out.shape[1], out.shape[2], out.shape[3]
    height, width = x.shape[2], x.shape[3]
    cig = filters.shape[2]
    cog = c_out // groups
    planes = x.reshape(x.shape[0], x.shape[1], height * width)
    row_offs, col_offs = np.arange(kh) * dh - pt, np.arange(kw) * dw - pl
    masks = _column_masks(out_w, sw, col_offs, width, min(out_h, row_stop - row_start))
    phased = _phases_fit(height, width, sh, sw, out_w)
    plane_size = _phases_size(height, width, sh, sw) if phased else 0
    buf = np.empty(cig * plane_size, x.dtype)
    sources = [buf[:0]] * cig  # the group's planes, or their phases
    layouts = [(0, 0, 0)] * cig
    r = row_start
    while r < row_stop:  # one image's run of rows at a time
        n = r // out_h
        oh0 = r - n * out_h
        oh1 = min(out_h, oh0 + row_stop - r)
        h_lo, h_hi = _input_rows(oh0, oh1, sh, row_offs, height)
        for group in range(groups):
            for c in range(cig):
                sources[c], layouts[c] = _plane_source(
                    planes[n, group * cig + c], height, width, sh, sw, phased, h_lo, h_hi,
                    buf[c * plane_size : (c + 1) * plane_size],
                )  # fmt: skip
            for co in range(group * cog, (group + 1) * cog):
                dst = out[n, co].reshape(out_h * out_w)[oh0 * out_w : oh1 * out_w]
                dst[:] = 0
                for i in range(kh):
                    rows = _valid(oh1, sh, row_offs[i], height)
                    rows = (max(rows[0], oh0), max(rows[0], oh0, rows[1]))
                    for j in range(kw):
                        cols = _valid(out_w, sw, col_offs[j], width)
                        for c in range(cig):
                            address = _tap(row_offs[i], col_offs[j], sh, sw, width, layouts[c])
                            _tap_rows(
                                ADD_PRODUCT, dst, sources[c], oh0, oh1, out_w, rows, cols,
                                address, filters[i, j, c, co], masks[j],
                            )  # fmt: skip
        r += oh1 - oh0


@njit(nogil=True, cache=True)
def conv_direct_rows(x, filters, out, nchw, geometry, groups, row_start, row_stop):
    """Grouped conv2d of image rows [row_start, row_stop) by a direct loop: out[.., co] =
    sum over (i, j, c) in order of x[.., g * cig + c] * filters[i, j, c, co], g = co // cog;
    window positions outside the input are skipped."""
    kh, kw, sh, sw, dh, dw, pt, pl = geometry
    n_size, height, width, channels = _dims(x, nchw)
    o_n, out_h, out_w, c_out = _dims(out, nchw)
    check_range(row_start, row_stop, o_n * out_h)
    cig = filters.shape[2]
    if groups < 1 or o_n != n_size or cig * groups != channels or c_out % groups != 0:
        raise IndexError("conv_direct_rows: shapes do not match")
    if filters.shape[0] != kh or filters.shape[1] != kw or filters.shape[3] != c_out:
        raise IndexError("conv_direct_rows: filters do not match the geometry")
    if nchw:
        _direct_nchw(x, filters, out, geometry, groups, row_start, row_stop)
        return
    cog = c_out // groups
    acc = np.empty(c_out, out.dtype)
    depthwise = cig == 1 and cog == 1
    for r in range(row_start, row_stop):
        n = r // out_h
        oh = r - n * out_h
        for ow in range(out_w):
            acc[:] = 0
            for i in range(kh):
                h = oh * sh - pt + i * dh
                if h < 0 or h >= height:
                    continue
                for j in range(kw):
                    w = ow * sw - pl + j * dw
                    if w < 0 or w >= width:
                        continue
                    if depthwise:  # one vector loop over the channels
                        src = x[n, h, w]
                        taps = filters[i, j, 0]
                        for co in range(c_out):
                            acc[co] += src[co] * taps[co]
                        continue
                    for g in range(groups):
                        for c in range(cig):
                            value = x[n, h, w, g * cig + c]
                            taps = filters[i, j, c]
                            for q in range(g * cog, (g + 1) * cog):
                                acc[q] += value * taps[q]
            dst = out[n, oh, ow]
            for co in range(c_out):
                dst[co] = acc[co]


@njit(nogil=True, cache=True, inline="always")
def _window(o, stride, pad, k, size):
    """[start, stop) of the input positions of output position `o`'s window."""
    start = o * stride - pad
    return max(start, 0), min(start + k, size)


@njit(nogil=True, cache=True)
def _pool_check(x, out, nchw, row_start, row_stop):
    n_size, height, width, channels = _dims(x, nchw)
    o_n, out_h, out_w, o_c = _dims(out, nchw)
    check_range(row_start, row_stop, o_n * out_h)
    if o_n != n_size or o_c != channels:
        raise IndexError("pool: x and out do not match")
    return height, width, channels, out_h, out_w


@njit(nogil=True, cache=True)
def _pool_nchw(x, out, geometry, row_start, row_stop, is_max):
    """Max or avg pool of C-contiguous NCHW image rows [row_start, row_stop) (checked by the
    caller), a channel plane at a time (`_tap_rows`), each element's window in (h, w) order
    as the NHWC loops."""
    kh, kw, sh, sw, pt, pl = geometry
    channels, height, width = x.shape[1], x.shape[2], x.shape[3]
    out_h, out_w = out.shape[2], out.shape[3]
    planes = x.reshape(x.shape[0], channels, height * width)
    rows = min(out_h, row_stop - row_start)
    row_offs, col_offs = np.arange(kh) - pt, np.arange(kw) - pl
    masks = _column_masks(out_w, sw, col_offs, width, rows)
    phased = _phases_fit(height, width, sh, sw, out_w)
    buf = np.empty(_phases_size(height, width, sh, sw) if phased else 0, x.dtype)
    acc = np.empty(rows * out_w)  # avg: float64 sums
    counts = np.empty(out_w)  # avg: each window's columns inside the input
    for ow in range(out_w):
        w0, w1 = _window(ow, sw, pl, kw, width)
        counts[ow] = w1 - w0
    r = row_start
    while r < row_stop:  # one image's run of rows at a time
        n = r // out_h
        oh0 = r - n * out_h
        oh1 = min(out_h, oh0 + row_stop - r)
        h_lo, h_hi = _input_rows(oh0, oh1, sh, row_offs, height)
        for c in range(channels):
            src, layout = _plane_source(
                planes[n, c], height, width, sh, sw, phased, h_lo, h_hi, buf
            )
            dst = out[n, c].reshape(out_h * out_w)[oh0 * out_w : oh1 * out_w]
            if is_max:
                dst[:] = -np.inf
            else:
                acc[:] = 0.0
            for i in range(kh):
                valid = _valid(oh1, sh, row_offs[i], height)
                valid = (max(valid[0], oh0), max(valid[0], oh0, valid[1]))
                for j in range(kw):
                    cols = _valid(out_w, sw, col_offs[j], width)
                    address = _tap(row_offs[i], col_offs[j], sh, sw, width, layout)
                    if is_max:
                        _tap_rows(
                            MAXIMUM, dst, src, oh0, oh1, out_w, valid, cols, address, 0.0,
                            masks[j],
                        )  # fmt: skip
                    else:
                        _tap_rows(
                            ADD, acc, src, oh0, oh1, out_w, valid, cols, address, 0.0, masks[j]
                        )
            if not is_max:
                for oh in range(oh0, oh1):
                    h0, h1 = _window(oh, sh, pt, kh, height)
                    base = (oh - oh0) * out_w
                    for ow in range(out_w):
                        dst[base + ow] = acc[base + ow] / ((h1 - h0) * counts[ow])
        r += oh1 - oh0


@njit(nogil=True, cache=True)
def max_pool_rows(x, out, nchw, geometry, row_start, row_stop):
    """Max over each window's positions inside the input (NaN if any is NaN), for image rows
    [row_start, row_stop) of out. geometry: (kh, kw, sh, sw, pt, pl)."""
    kh, kw, sh, sw, pt, pl = geometry
    height, width, channels, out_h, out_w = _pool_check(x, out, nchw, row_start, row_stop)
    if nchw:
        _pool_nchw(x, out, geometry, row_start, row_stop, True)
        return
    for r in range(row_start, row_stop):
        n = r // out_h
        oh = r - n * out_h
        h0, h1 = _window(oh, sh, pt, kh, height)
        for ow in range(out_w):
            w0, w1 = _window(ow, sw, pl, kw, width)
            dst = out[n, oh, ow]
            dst[:] = -np.inf
            for h in range(h0, h1):
                for w in range(w0, w1):
                    src = x[n, h, w]
                    for c in range(channels):
                        value = src[c]
                        # once NaN, nothing is greater: NaN stays
                        if value > dst[c] or value != value:
                            dst[c] = value


@njit(nogil=True, cache=True)
def avg_pool_rows(x, out, nchw, geometry, row_start, row_stop):
    """Mean over each window's positions inside the input (float64 sum / their count), for
    image rows [row_start, row_stop) of out. geometry: (kh, kw, sh, sw, pt, pl)."""
    kh, kw, sh, sw, pt, pl = geometry
    height, width, channels, out_h, out_w = _pool_check(x, out, nchw, row_start, row_stop)
    if nchw:
        _pool_nchw(x, out, geometry, row_start, row_stop, False)
        return
    acc = np.empty(channels)
    for r in range(row_start, row_stop):
        n = r // out_h
        oh = r - n * out_h
        h0, h1 = _window(oh, sh, pt, kh, height)
        for ow in range(out_w):
            w0, w1 = _window(ow, sw, pl, kw, width)
            count = (h1 - h0) * (w1 - w0)
            acc[:] = 0.0
            for h in range(h0, h1):
                for w in range(w0, w1):
                    src = x[n, h, w]
                    for c in range(channels):
                        acc[c] += src[c]
            dst = out[n, oh, ow]
            for c in range(channels):
                dst[c] = acc[c] / count
