"""Neural-network ops: conv2d, max_pool2d and avg_pool2d (TensorFlow 1.x names and arguments).

Layout. `x` is NHWC, or NCHW with ``data_format="NCHW"``; filters are HWIO
(kh, kw, in_channels // groups, out_channels) in both, as TensorFlow. Strides, dilations and
window sizes are an int, a pair (h, w) or TensorFlow's 4-element form; padding is "VALID",
"SAME" (TensorFlow's rule: total = max((ceil(in / s) - 1) * s + (k - 1) * d + 1 - in, 0), the
odd one at the bottom/right) or explicit ((top, bottom), (left, right)) (or the 4-pair form).
Unlike TensorFlow's CPU kernel, strides and dilations above 1 may be combined.

Shards. conv2d works in *blocks* of whole output image rows (row r = n * OH + oh): block b is
image rows [b * B, (b + 1) * B), and the op's rows (`rows`, what the plan cuts shards from) are
these blocks. B is a function of the shapes only (`block_rows`), so every shard setting
computes the same blocks: the same im2col patch matrices multiplied by the same filter matrix
in calls of the same shapes. BLAS may round a product differently for a different number of
rows (kernels/matmul.py), but never differently for the same call, so each element's bits are
fixed by the shapes, whatever the executor, the thread counts and the merging of shards.
Whole image rows (not pixels) make the blocks: a block is a run of contiguous output rows in
NHWC, its patch rows never straddle images, and the block's size in bytes stays bounded
(`BLOCK_BYTES`) however large the batch, so the patch matrix is never N*OH*OW*kh*kw*C_in.
Pools shard plain image rows (a direct kernel has no blocks).

NCHW (ONNX's layout) blocks never straddle images (`nchw_blocks`): a block is either whole
images or a run of `block_rows` rows of one image, so that its output is a (C_out, pixels)
slice of each image's planes. A 1x1 convolution without stride or padding multiplies the
(C_out, C_in) filter matrix by x's own (C_in, pixels) slice: out's slice, no copy at all
(BLAS writes it in place, a strided view; the Numba matmul, which wants a contiguous output,
writes whole images in place and a run of rows through a buffer). Any other takes the NHWC
way on a copy: the input rows the block reads, transposed to NHWC (`kernels.conv.
nchw_to_nhwc`), then im2col and the same matmul as NHWC (the same shapes: the block's pixels
are as many), and the product's columns written back as planes (`scatter_nchw`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import kernels
from ..dtypes import Shape, num_elements
from ..graph import Tensor
from .builder import as_tensor, build
from .registry import Arrays, Bounds, Cost, OpDef, ShapeError, register

__all__ = ["avg_pool2d", "conv2d", "max_pool2d"]

#: A block is the fewest image rows that give at least BLOCK_PIXELS output pixels (matmul rows:
#: BLAS runs a 392 x 2304 x 256 product at ~130 GFLOP/s where 112 rows ran ~115 on the
#: AVX-512 dev VM), but its patch matrix holds at most BLOCK_BYTES (at least one image row):
#: im2col writes it and the matmul reads it back at once, from the L2 cache.
BLOCK_PIXELS = 384
BLOCK_BYTES = 4 << 20
#: A 1x1 convolution without stride or padding multiplies x's own rows (no patch matrix): its
#: blocks are longer, fewer calls (25088 x 64 x 256: 106 GFLOP/s in blocks of 392, 113 in 1568).
POINTWISE_PIXELS = 1536
#: Grouped convolutions with fewer input channels per group than this run the direct kernel
#: (depthwise ones: one): im2col would make one tiny matmul per group and block.
DIRECT_MAX_CHANNELS = 8


class Geometry(NamedTuple):
    """Everything a conv2d or pool kernel needs, from the op's shapes and attributes."""

    n: int
    h: int
    w: int
    c: int
    oh: int
    ow: int
    co: int
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    pads: tuple[int, int, int, int]  # top, bottom, left, right
    groups: int
    nchw: bool

    @property
    def cig(self) -> int:
        return self.c // self.groups

    @property
    def cog(self) -> int:
        return self.co // self.groups

    @property
    def taps(self) -> tuple[int, ...]:
        """(kh, kw, sh, sw, dh, dw, pt, pl): the conv kernels' `geometry`."""
        return (self.kh, self.kw, self.sh, self.sw, self.dh, self.dw, self.pads[0], self.pads[2])

    @property
    def window(self) -> tuple[int, ...]:
        """(kh, kw, sh, sw, pt, pl): the pool kernels' `geometry`."""
        return (self.kh, self.kw, self.sh, self.sw, self.pads[0], self.pads[2])


# -- arguments --------------------------------------------------------------------------------
def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _format(data_format: object) -> bool:
    """True for NCHW."""
    if data_format not in ("NHWC", "NCHW"):
        raise ShapeError(f'data_format must be "NHWC" or "NCHW", got {data_format!r}')
    return data_format == "NCHW"


def _pair(value: object, what: str, nchw: bool) -> tuple[int, int]:
    """(h, w) from an int, a pair or TensorFlow's 4-element form (batch and channel entries 1);
    each at least 1."""
    if _is_int(value):
        pair = (value, value)
    elif isinstance(value, Sequence) and not isinstance(value, str) and len(value) in (2, 4):
        pair = tuple(value)
        if len(pair) == 4:
            other = (pair[0], pair[1]) if nchw else (pair[0], pair[3])
            if other != (1, 1):
                layout = "[1, 1, h, w]" if nchw else "[1, h, w, 1]"
                raise ShapeError(f"{what} {list(value)}: the 4-element form is {layout}")
            pair = pair[2:] if nchw else pair[1:3]
    else:
        raise ShapeError(f"{what} must be an int, a pair (h, w) or 4 ints, got {value!r}")
    if not all(_is_int(v) and v >= 1 for v in pair):
        raise ShapeError(f"{what} must be ints >= 1, got {value!r}")
    return int(pair[0]), int(pair[1])


def _padding(padding: object, nchw: bool) -> str | tuple[tuple[int, int], tuple[int, int]]:
    """ "VALID", "SAME" or ((top, bottom), (left, right)) from any accepted form."""
    if isinstance(padding, str):
        if padding.upper() not in ("VALID", "SAME"):
            raise ShapeError(f'padding must be "VALID", "SAME" or explicit pairs, got {padding!r}')
        return padding.upper()
    pairs = None
    if isinstance(padding, Sequence) and len(padding) in (2, 4):
        pairs = [tuple(p) if isinstance(p, Sequence) and len(p) == 2 else None for p in padding]
    if pairs is None or None in pairs or not all(_is_int(v) and v >= 0 for p in pairs for v in p):
        raise ShapeError(
            f'padding must be "VALID", "SAME" or ((top, bottom), (left, right)) of ints >= 0, '
            f"got {padding!r}"
        )
    if len(pairs) == 4:
        spatial, other = ((2, 3), (0, 1)) if nchw else ((1, 2), (0, 3))
        if any(pairs[i] != (0, 0) for i in other):
            raise ShapeError(f"padding {padding!r}: only the spatial axes may be padded")
        pairs = [pairs[i] for i in spatial]
    return tuple((int(a), int(b)) for a, b in pairs)  # type: ignore[return-value]


def _output_size(size: int, k: int, stride: int, dilation: int, pad: Any, what: str) -> tuple:
    """(output size, pad before, pad after) along one axis; `pad`: "VALID", "SAME" or a pair."""
    span = (k - 1) * dilation + 1
    if pad == "SAME":
        out = -(-size // stride)
        total = max((out - 1) * stride + span - size, 0)
        return out, total // 2, total - total // 2
    before, after = (0, 0) if pad == "VALID" else pad
    if size + before + after < span:
        window = f"{k}" if dilation == 1 else f"{k} with dilation {dilation}: {span}"
        raise ShapeError(
            f"the {what} window ({window}) is larger than the padded input "
            f"({size} + {before} + {after})"
        )
    return (size + before + after - span) // stride + 1, before, after


def _output_hw(
    hw: tuple[int, int],
    window: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    padding: Any,
    what: str,
) -> tuple[int, int, tuple[int, int, int, int]]:
    """(out height, out width, (top, bottom, left, right) pads) of a window over `hw`;
    `padding`: "VALID", "SAME" or ((top, bottom), (left, right))."""
    pad_h = padding if isinstance(padding, str) else padding[0]
    pad_w = padding if isinstance(padding, str) else padding[1]
    oh, pt, pb = _output_size(hw[0], window[0], strides[0], dilations[0], pad_h, f"{what} height")
    ow, pl, pr = _output_size(hw[1], window[1], strides[1], dilations[1], pad_w, f"{what} width")
    return oh, ow, (pt, pb, pl, pr)


def _input(x: Any, what: str = "x") -> None:
    if x.ndim != 4:
        raise ShapeError(f"{what} must be 4-D (a batch of images), got shape {list(x.shape)}")
    if x.dtype.kind != "f":
        raise ShapeError(f"{what} must be float32 or float64, not {x.dtype.name}")


def _geometry(op: Any) -> Geometry:
    return op.attrs["geometry"]


def _spatial(shape: Shape, nchw: bool) -> tuple[int, int, int, int]:
    """(N, H, W, C) of a 4-D shape."""
    return (shape[0], shape[2], shape[3], shape[1]) if nchw else tuple(shape)  # type: ignore


def _shape(n: int, h: int, w: int, c: int, nchw: bool) -> Shape:
    return (n, c, h, w) if nchw else (n, h, w, c)


def _padded_windows(x: np.ndarray, g: Geometry, fill: float) -> np.ndarray:
    """float64 NHWC x padded with `fill`, for the NumPy references."""
    x = x.astype(np.float64)
    if g.nchw:
        x = x.transpose(0, 2, 3, 1)
    pt, pb, pl, pr = g.pads
    return np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill)


def _from_nhwc(value: np.ndarray, g: Geometry, dtype: np.dtype) -> np.ndarray:
    return np.ascontiguousarray(value.transpose(0, 3, 1, 2) if g.nchw else value).astype(dtype)


# -- conv2d -----------------------------------------------------------------------------------
def block_rows(g: Geometry, itemsize: int) -> int:
    """Image rows per block (module docstring): a function of the shapes only."""
    width = max(g.ow, 1)
    if _path(g) == "pointwise":
        return -(-POINTWISE_PIXELS // width)
    row_bytes = max(1, width * g.kh * g.kw * g.cig * itemsize)
    return max(1, min(BLOCK_BYTES // row_bytes, -(-BLOCK_PIXELS // width)))


def nchw_blocks(g: Geometry, itemsize: int) -> tuple[int, int, int]:
    """(images a block, image rows a block, blocks an image) of an NCHW im2col or pointwise
    conv (module docstring): whole images when `block_rows` holds one, else runs of
    `block_rows` rows of one image (the last one of each image shorter)."""
    rows, oh = block_rows(g, itemsize), max(g.oh, 1)
    if rows >= oh:
        return rows // oh, oh, 1
    return 1, rows, -(-oh // rows)


def _path(g: Geometry) -> str:
    """ "direct" (grouped, few channels a group), "pointwise" (a 1x1 conv without stride or
    padding: x's rows (NHWC) or image slices (NCHW) are the patches) or "im2col"."""
    if g.groups > 1 and g.cig < DIRECT_MAX_CHANNELS:
        return "direct"
    if (g.kh, g.kw, g.sh, g.sw, g.pads, g.groups) == (1, 1, 1, 1, (0,) * 4, 1):
        return "pointwise"
    return "im2col"


def _numba_matmul(config: Any) -> bool:
    """Whether `Config.matmul_kernel` names the pure Numba matmul (else: BLAS), as for matmul."""
    return getattr(config, "matmul_kernel", "blas") == "numba"


class ConvWork(NamedTuple):
    kernel: Any
    x: np.ndarray
    filters: np.ndarray  # HWIO (direct), (groups, kh*kw*cig, cog), (1, C_out, C_in) (NCHW 1x1)
    out: np.ndarray
    block: int  # image rows a block (NHWC and direct)
    nchw_blocks: tuple[int, int, int]  # `nchw_blocks` (NCHW im2col and pointwise)


@register
class Conv2D(OpDef):
    """2-D convolution (cross-correlation, as TensorFlow): im2col blocks times the filter
    matrix through `Config.matmul_kernel`'s matmul row kernel, or a direct loop for grouped
    convolutions with few channels a group (module docstring: why the bits never depend on
    the shards)."""

    type = "conv2d"
    default_name = "Conv2D"
    flops_per_ns = 50.0

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        x, filters = inputs
        _input(x)
        _input(filters, "filters")
        if x.dtype != filters.dtype:
            raise ShapeError(f"x is {x.dtype.name} but filters are {filters.dtype.name}")
        nchw = _format(attrs["data_format"])
        sh, sw = _pair(attrs["strides"], "strides", nchw)
        dh, dw = _pair(attrs["dilations"], "dilations", nchw)
        padding = _padding(attrs["padding"], nchw)
        groups = attrs["groups"]
        if not _is_int(groups) or groups < 1:
            raise ShapeError(f"groups must be an int >= 1, got {groups!r}")
        n, h, w, c = _spatial(x.shape, nchw)
        kh, kw, cig, co = filters.shape
        if min(kh, kw) < 1:
            raise ShapeError(f"filters {list(filters.shape)} have an empty window")
        if c % groups or co % groups:
            raise ShapeError(
                f"in_channels {c} and out_channels {co} must be divisible by groups {groups}"
            )
        if cig * groups != c:
            raise ShapeError(
                f"filters {list(filters.shape)} (HWIO) take {cig} input channels a group, but "
                f"x {list(x.shape)} ({'NCHW' if nchw else 'NHWC'}) has {c} channels in "
                f"{groups} group(s): {c // groups} each"
            )
        oh, ow, pads = _output_hw((h, w), (kh, kw), (sh, sw), (dh, dw), padding, "conv2d")
        attrs.update(strides=(sh, sw), dilations=(dh, dw), padding=padding, groups=int(groups))
        attrs["geometry"] = Geometry(
            n, h, w, c, oh, ow, co, kh, kw, sh, sw, dh, dw, pads, int(groups), nchw
        )
        return _shape(n, oh, ow, co, nchw), x.dtype

    def cost(self, op: Any) -> Cost:
        g, size = _geometry(op), op.dtype.itemsize
        pixels = g.n * g.oh * g.ow
        taps = g.kh * g.kw * g.cig
        # im2col writes and reads the patches: part of the bytes moved
        moved = num_elements(op.inputs[0].shape) + num_elements(op.inputs[1].shape)
        moved += pixels * g.co + (0 if _path(g) == "direct" else 2 * pixels * taps * g.groups)
        return Cost(2 * pixels * taps * g.co, moved * size)

    def rows(self, op: Any) -> int:
        """Blocks of image rows (module docstring)."""
        g = _geometry(op)
        if g.nchw and _path(g) != "direct":
            images, _, per_image = nchw_blocks(g, op.dtype.itemsize)
            return -(-g.n // images) * per_image if g.oh else 0
        return -(-g.n * g.oh // block_rows(g, op.dtype.itemsize))

    def calls_blas(self, op: Any, config: Any) -> bool:
        return _path(_geometry(op)) != "direct" and not _numba_matmul(config)

    def merges_rows(self, op: Any, work: Any, shards: Bounds, groups: Bounds) -> bool:
        """Always: a call computes each of its blocks on its own, as the shards would."""
        return True

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> ConvWork:
        g = _geometry(op)
        x, filters = np.ascontiguousarray(args[0]), args[1]
        if _path(g) == "direct":
            kernel, matrices = None, np.ascontiguousarray(filters)
        else:
            numba = _numba_matmul(config)
            kernel = kernels.matmul.matmul_rows_numba if numba else kernels.matmul.matmul_rows_blas
            if g.nchw and _path(g) == "pointwise":  # (1, C_out, C_in): the left operand
                matrices = np.ascontiguousarray(filters.reshape(g.c, g.co).T)[None]
            else:  # (groups, kh*kw*cig, cog): group g's filters as the right operand
                split = filters.reshape(g.kh, g.kw, g.cig, g.groups, g.cog)
                split = split.transpose(3, 0, 1, 2, 4)
                matrices = np.ascontiguousarray(split).reshape(g.groups, -1, g.cog)
        out = np.empty(op.shape, op.dtype)
        size = op.dtype.itemsize
        return ConvWork(kernel, x, matrices, out, block_rows(g, size), nchw_blocks(g, size))

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        g = _geometry(op)
        path = _path(g)
        if g.nchw and path != "direct":
            if row_start < row_stop and work.out.size:
                self._compute_nchw(g, work, row_start, row_stop)
            return
        total = g.n * g.oh
        first, last = row_start * work.block, min(row_stop * work.block, total)
        if first >= last or work.out.size == 0:
            return
        if path == "direct":
            kernels.conv.conv_direct_rows(
                work.x, work.filters, work.out, g.nchw, g.taps, g.groups, first, last
            )
            return
        kernel, ow, cog = work.kernel, g.ow, g.cog
        pixels = work.block * ow
        direct_out = g.groups == 1  # the product's rows are out's rows
        out2d = work.out.reshape(-1, g.co)
        if path == "pointwise":
            x2d = work.x.reshape(g.n * g.h * g.w, g.c)  # (-1 fails with 0 channels)
        else:
            patches = np.empty((pixels, work.filters.shape[1]), op.dtype)
        product = None if direct_out else np.empty((pixels, cog), op.dtype)
        for start in range(first, last, work.block):
            stop = min(start + work.block, last)
            m, p0 = (stop - start) * ow, start * ow
            for group in range(g.groups):
                if path == "pointwise":
                    a = x2d[p0 : p0 + m]
                else:
                    a = patches[:m]
                    kernels.conv.im2col_rows(
                        work.x, g.nchw, g.taps, g.oh, ow, group * g.cig, g.cig, a, start, stop
                    )
                target = out2d[p0 : p0 + m] if direct_out else product[:m]
                kernel(a, work.filters[group], target, 0, m)
                if not direct_out:
                    kernels.conv.scatter_rows(
                        target, work.out, g.nchw, group * cog, g.oh, ow, start, stop
                    )

    @staticmethod
    def _compute_nchw(g: Geometry, work: Any, block_start: int, block_stop: int) -> None:
        """NCHW blocks [block_start, block_stop) (module docstring)."""
        if _path(g) == "pointwise":
            Conv2D._pointwise_nchw(g, work, block_start, block_stop)
            return
        images, rows, per_image = work.nchw_blocks
        dtype, ow = work.out.dtype, g.ow
        # the most input rows a block reads, and the most pixels it has
        reach = min(g.h, (min(rows, g.oh) - 1) * g.sh + (g.kh - 1) * g.dh + 1)
        pixels = images * min(rows, g.oh) * ow
        scratch = np.empty(images * reach * g.w * g.cig, dtype)
        patches = np.empty((pixels, work.filters.shape[1]), dtype)
        product = np.empty((pixels, g.cog), dtype)
        for block in range(block_start, block_stop):
            first, piece = divmod(block, per_image)
            n0, n1 = first * images, min((first + 1) * images, g.n)
            oh0, oh1 = piece * rows, min((piece + 1) * rows, g.oh)
            h0 = max(0, oh0 * g.sh - g.pads[0])  # the input rows the block reads
            h1 = max(h0, min(g.h, (oh1 - 1) * g.sh - g.pads[0] + (g.kh - 1) * g.dh + 1))
            m = (n1 - n0) * (oh1 - oh0) * ow
            shape = (n1 - n0, h1 - h0, g.w, g.cig)
            x = scratch[: num_elements(shape)].reshape(shape)
            # row 0 of x is input row h0: the padding above shrinks by as much
            taps = (*g.taps[:6], g.pads[0] + h0 - oh0 * g.sh, g.pads[2])
            for group in range(g.groups):
                kernels.conv.nchw_to_nhwc(work.x, n0, n1, h0, h1, group * g.cig, g.cig, x)
                kernels.conv.im2col_rows(
                    x, False, taps, oh1 - oh0, ow, 0, g.cig, patches[:m], 0, shape[0] * (oh1 - oh0)
                )
                work.kernel(patches[:m], work.filters[group], product[:m], 0, m)
                kernels.conv.scatter_nchw(product[:m], work.out, n0, n1, group * g.cog, oh0, oh1)

    @staticmethod
    def _pointwise_nchw(g: Geometry, work: Any, block_start: int, block_stop: int) -> None:
        """out[n][:, pixels] = filters (C_out, C_in) @ x[n][:, pixels], per image of a block."""
        images, rows, per_image = work.nchw_blocks
        x3 = work.x.reshape(g.n, g.c, g.h * g.w)  # H * W == OH * OW
        out3 = work.out.reshape(g.n, g.co, g.oh * g.ow)
        blas = work.kernel is kernels.matmul.matmul_rows_blas
        product = None if blas else np.empty(g.co * min(rows, g.oh) * g.ow, work.out.dtype)
        for block in range(block_start, block_stop):
            first, piece = divmod(block, per_image)
            p0, p1 = piece * rows * g.ow, min((piece + 1) * rows, g.oh) * g.ow
            for n in range(first * images, min((first + 1) * images, g.n)):
                target = out3[n, :, p0:p1]
                if blas or target.flags.c_contiguous:
                    work.kernel(work.filters[0], x3[n, :, p0:p1], target, 0, g.co)
                else:  # the Numba matmul wants a contiguous output
                    buffer = product[: g.co * (p1 - p0)].reshape(g.co, p1 - p0)
                    work.kernel(work.filters[0], x3[n, :, p0:p1], buffer, 0, g.co)
                    target[...] = buffer

    def finish(self, op: Any, work: Any) -> np.ndarray:
        return work.out

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        g = _geometry(op)
        return kernels.gpu.conv2d_launches(inputs[0], inputs[1], out, g.taps, g.groups, g.nchw)

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        """float64: for each tap (i, j), the strided slice of the padded input times the tap's
        (cig, cog) matrices, group by group."""
        g = _geometry(op)
        x = _padded_windows(args[0], g, 0.0)
        filters = args[1].astype(np.float64)
        out = np.zeros((g.n, g.oh, g.ow, g.co))
        for i in range(g.kh):
            for j in range(g.kw):
                rows = slice(i * g.dh, i * g.dh + (g.oh - 1) * g.sh + 1, g.sh)
                cols = slice(j * g.dw, j * g.dw + (g.ow - 1) * g.sw + 1, g.sw)
                window = x[:, rows, cols, :]
                for k in range(g.groups):
                    ins, outs = slice(k * g.cig, (k + 1) * g.cig), slice(k * g.cog, (k + 1) * g.cog)
                    out[..., outs] += window[..., ins] @ filters[i, j, :, outs]
        return _from_nhwc(out, g, op.dtype)


# -- pooling ----------------------------------------------------------------------------------
class _Pool(OpDef):
    """A window op over image rows; subclasses name the kernel and the reference."""

    blas_free = True  # kernels.conv's pool kernels
    flops_per_ns = 2.0
    kernel_name: str

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        (x,) = inputs
        _input(x)
        nchw = _format(attrs["data_format"])
        kh, kw = _pair(attrs["ksize"], "ksize", nchw)
        sh, sw = _pair(attrs["strides"], "strides", nchw)
        padding = _padding(attrs["padding"], nchw)
        n, h, w, c = _spatial(x.shape, nchw)
        oh, ow, pads = _output_hw((h, w), (kh, kw), (sh, sw), (1, 1), padding, self.type)
        pt, pb, pl, pr = pads
        if max(pt, pb) >= kh or max(pl, pr) >= kw:  # a window with no input position in it
            raise ShapeError(
                f"padding {pads} (top, bottom, left, right) must be smaller than "
                f"the window {kh}x{kw}"
            )
        attrs.update(ksize=(kh, kw), strides=(sh, sw), padding=padding)
        attrs["geometry"] = Geometry(n, h, w, c, oh, ow, c, kh, kw, sh, sw, 1, 1, pads, 1, nchw)
        return _shape(n, oh, ow, c, nchw), x.dtype

    def cost(self, op: Any) -> Cost:
        g = _geometry(op)
        n_out = num_elements(op.shape)
        moved = num_elements(op.inputs[0].shape) + n_out
        return Cost(n_out * g.kh * g.kw, moved * op.dtype.itemsize)

    def rows(self, op: Any) -> int:
        g = _geometry(op)
        return g.n * g.oh

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        return np.ascontiguousarray(args[0]), np.empty(op.shape, op.dtype)

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        g = _geometry(op)
        kernel = getattr(kernels.conv, self.kernel_name)
        kernel(work[0], work[1], g.nchw, g.window, row_start, row_stop)

    def finish(self, op: Any, work: Any) -> np.ndarray:
        return work[1]

    def merges_rows(self, op: Any, work: Any, shards: Bounds, groups: Bounds) -> bool:
        return True  # each output element is its own window's

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        g = _geometry(op)
        average = self.type == "avg_pool2d"
        return kernels.gpu.pool2d_launches(inputs[0], out, g.window, g.nchw, average)

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        """float64 over the padded input, the padding masked out."""
        g = _geometry(op)
        x = _padded_windows(args[0], g, np.nan)
        inside = ~np.isnan(_padded_windows(np.zeros(args[0].shape), g, np.nan))
        values, counts = [], np.zeros((g.oh, g.ow, 1))
        for i in range(g.kh):
            for j in range(g.kw):
                rows = slice(i, i + (g.oh - 1) * g.sh + 1, g.sh)
                cols = slice(j, j + (g.ow - 1) * g.sw + 1, g.sw)
                mask = inside[0, rows, cols, :1]
                values.append((x[:, rows, cols, :], mask))
                counts += mask
        return _from_nhwc(self.combine(values, counts), g, op.dtype)


@register
class MaxPool2D(_Pool):
    type = "max_pool2d"
    default_name = "MaxPool"
    kernel_name = "max_pool_rows"

    @staticmethod
    def combine(values: list, counts: np.ndarray) -> np.ndarray:
        best = np.full(values[0][0].shape, -np.inf)
        for value, mask in values:
            taken = np.where(mask, value, -np.inf)
            best = np.where(np.isnan(taken) | (taken > best), taken, best)
        return best


@register
class AvgPool2D(_Pool):
    type = "avg_pool2d"
    default_name = "AvgPool"
    kernel_name = "avg_pool_rows"

    @staticmethod
    def combine(values: list, counts: np.ndarray) -> np.ndarray:
        total = sum(np.where(mask, value, 0.0) for value, mask in values)
        return total / counts


# -- builders ---------------------------------------------------------------------------------
Ints = int | Sequence[int]


def conv2d(
    x: object,
    filters: object,
    strides: Ints = 1,
    padding: str | Sequence[Sequence[int]] = "VALID",
    dilations: Ints = 1,
    groups: int = 1,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """2-D convolution (cross-correlation) of `x` with HWIO `filters`, as `tf.nn.conv2d`.

    x: [N, H, W, C] (or [N, C, H, W] with data_format="NCHW"); filters: [kh, kw, C // groups,
    C_out]. strides, dilations: an int, (h, w) or [1, h, w, 1] ([1, 1, h, w] for NCHW).
    padding: "VALID", "SAME" or ((top, bottom), (left, right)). groups splits the channels
    (groups == C: depthwise). Float32 or float64.

    >>> import numpy as np, parallelgraph as pg
    >>> g = pg.Graph()
    >>> with g.as_default():
    ...     y = pg.conv2d(np.ones((1, 5, 5, 2)), np.ones((3, 3, 2, 4)), strides=2, padding="SAME")
    >>> with pg.Session(g) as sess:
    ...     sess.run(y)[0, :, :, 0]
    array([[ 8., 12.,  8.],
           [12., 18., 12.],
           [ 8., 12.,  8.]])
    """
    attrs = dict(strides=strides, padding=padding, dilations=dilations, groups=groups)
    attrs["data_format"] = data_format
    return build("conv2d", (as_tensor(x), as_tensor(filters)), attrs, name)


def max_pool2d(
    x: object,
    ksize: Ints,
    strides: Ints,
    padding: str | Sequence[Sequence[int]] = "VALID",
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """Max over windows, as `tf.nn.max_pool2d`; padding never wins (it is not a value), and a
    window with a NaN gives NaN. ksize, strides: an int, (h, w) or TensorFlow's 4-element form;
    explicit padding must be smaller than the window."""
    attrs = dict(ksize=ksize, strides=strides, padding=padding, data_format=data_format)
    return build("max_pool2d", (as_tensor(x),), attrs, name)


def avg_pool2d(
    x: object,
    ksize: Ints,
    strides: Ints,
    padding: str | Sequence[Sequence[int]] = "VALID",
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """Mean over windows, as `tf.nn.avg_pool2d`: over the window's positions inside the input
    only (SAME or explicit padding is not counted), summed in float64."""
    attrs = dict(ksize=ksize, strides=strides, padding=padding, data_format=data_format)
    return build("avg_pool2d", (as_tensor(x),), attrs, name)
