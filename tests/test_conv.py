"""conv2d, max_pool2d and avg_pool2d: against float64 NumPy references written here (strided
windows of the padded input, einsum), on generated shapes; the same bits on every executor and
thread setting; build-time errors; the GPU kernels in the CUDA simulator (tiny shapes)."""

import itertools

import numpy as np
import pytest

import parallelgraph as pg
from parallelgraph.ops import nn, opdef

RNG = np.random.default_rng(11)
TOLERANCE = {"float32": 1e-4, "float64": 1e-10}
THREADS = [(1, 1), (2, 1), (1, 2), (2, 2)]


# -- references, independent of parallelgraph.ops.nn ------------------------------------------
def pads_for(size, k, stride, dilation, padding):
    """(before, after) along one axis, TensorFlow's rule."""
    if padding == "VALID":
        return 0, 0
    if padding == "SAME":
        span = dilation * (k - 1) + 1
        out = (size + stride - 1) // stride
        total = max(0, (out - 1) * stride + span - size)
        return total // 2, total - total // 2
    return padding


def windows(x_nhwc, k, stride, dilation, pads, fill):
    """(n, oh, ow, c, kh, kw) float64 windows of x padded with `fill`."""
    (pt, pb), (pl, pr) = pads
    xp = np.pad(
        x_nhwc.astype(np.float64), ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill
    )
    span = [d * (kk - 1) + 1 for kk, d in zip(k, dilation)]
    view = np.lib.stride_tricks.sliding_window_view(xp, span, axis=(1, 2))
    return view[:, :: stride[0], :: stride[1], :, :: dilation[0], :: dilation[1]]


def conv_reference(x, filters, strides, padding, dilations, groups, nchw):
    x = x.transpose(0, 2, 3, 1) if nchw else x
    kh, kw, cig, co = filters.shape
    pads = [
        pads_for(x.shape[1 + a], filters.shape[a], strides[a], dilations[a], padding[a])
        for a in (0, 1)
    ]
    win = windows(x, (kh, kw), strides, dilations, pads, 0.0)
    n, oh, ow = win.shape[:3]
    win = win.reshape(n, oh, ow, groups, cig, kh, kw)
    taps = filters.astype(np.float64).reshape(kh, kw, cig, groups, co // groups)
    out = np.einsum("nhwgcij,ijcgo->nhwgo", win, taps).reshape(n, oh, ow, co)
    return out.transpose(0, 3, 1, 2) if nchw else out


def pool_reference(x, ksize, strides, padding, nchw, kind):
    x = x.transpose(0, 2, 3, 1) if nchw else x
    pads = [pads_for(x.shape[1 + a], ksize[a], strides[a], 1, padding[a]) for a in (0, 1)]
    if kind == "max":
        out = windows(x, ksize, strides, (1, 1), pads, -np.inf).max(axis=(4, 5))
    else:
        total = windows(x, ksize, strides, (1, 1), pads, 0.0).sum(axis=(4, 5))
        count = windows(np.ones_like(x[..., :1]), ksize, strides, (1, 1), pads, 0.0).sum(
            axis=(4, 5)
        )
        out = total / count
    return out.transpose(0, 3, 1, 2) if nchw else out


# -- cases ------------------------------------------------------------------------------------
def conv_case(
    n, h, w, c, kh, kw, co, strides=1, padding="VALID", dilations=1, groups=1, nchw=False
):
    return dict(
        x=(n, h, w, c), k=(kh, kw, co), strides=strides, padding=padding, dilations=dilations,
        groups=groups, nchw=nchw,
    )  # fmt: skip


CONV_CASES = [
    conv_case(1, 5, 5, 2, 3, 3, 4),
    conv_case(3, 7, 9, 3, 3, 3, 5, strides=2, padding="SAME"),
    conv_case(1, 11, 8, 4, 3, 2, 6, strides=3, padding="SAME", nchw=True),
    conv_case(2, 9, 7, 4, 3, 3, 4, dilations=2, padding="SAME", groups=2),
    conv_case(1, 9, 9, 3, 2, 3, 2, strides=(2, 1), dilations=(1, 2), padding=((1, 0), (2, 3))),
    conv_case(3, 6, 5, 6, 3, 3, 6, groups=6, padding="SAME", nchw=True),  # depthwise
    conv_case(1, 6, 5, 4, 3, 3, 8, groups=4, strides=2, padding="SAME"),  # depthwise x2
    conv_case(3, 5, 7, 3, 1, 1, 5),  # 1x1: x's rows are the patches
    conv_case(1, 5, 7, 3, 1, 1, 5, nchw=True),
    conv_case(2, 6, 6, 4, 1, 1, 3, strides=2),
    conv_case(1, 5, 5, 3, 5, 5, 2),  # output 1x1
    conv_case(3, 4, 6, 2, 3, 3, 3, strides=3, padding="SAME"),
    conv_case(1, 13, 11, 16, 3, 3, 6, groups=2, padding=((0, 2), (1, 1)), nchw=True),
    conv_case(1, 4, 4, 16, 3, 3, 16, groups=16, dilations=2, padding="SAME"),
    conv_case(2, 3, 3, 5, 4, 4, 3, padding="SAME"),  # window bigger than the input
    # NCHW: flat runs with column masks (stride 1, SAME), phases (strides above 1, SAME, even
    # and odd widths), row by row (VALID), a pointwise conv and a depthwise one with phases
    conv_case(2, 7, 6, 3, 5, 5, 4, padding="SAME", nchw=True),
    conv_case(1, 6, 7, 2, 3, 3, 3, dilations=(2, 1), padding="SAME", nchw=True),
    conv_case(2, 8, 10, 3, 3, 3, 4, strides=2, padding="SAME", nchw=True),
    conv_case(1, 9, 11, 2, 3, 2, 3, strides=(3, 2), padding="SAME", nchw=True),
    conv_case(2, 7, 8, 3, 3, 3, 2, strides=(1, 2), padding="VALID", nchw=True),
    conv_case(2, 4, 5, 12, 1, 1, 7, nchw=True),
    conv_case(2, 8, 9, 4, 3, 3, 4, groups=4, strides=2, padding="SAME", nchw=True),
]


def random_conv_cases(count, seed=5):
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        groups = int(rng.choice([1, 1, 2, 3]))
        c = groups * int(rng.choice([1, 2, 3, 8, 9]))
        kh, kw = (int(v) for v in rng.integers(1, 4, 2))
        strides = tuple(int(v) for v in rng.integers(1, 4, 2))
        dilations = tuple(int(v) for v in rng.integers(1, 3, 2))
        padding = str(rng.choice(["VALID", "SAME", "EXPLICIT"]))
        if padding == "EXPLICIT":
            padding = tuple(tuple(int(v) for v in rng.integers(0, 3, 2)) for _ in range(2))
        h, w = (int(v) for v in rng.integers(1, 12, 2))
        span_h, span_w = dilations[0] * (kh - 1) + 1, dilations[1] * (kw - 1) + 1
        extra_h = 0 if padding == "SAME" else (0 if isinstance(padding, str) else sum(padding[0]))
        extra_w = 0 if padding == "SAME" else (0 if isinstance(padding, str) else sum(padding[1]))
        if padding != "SAME" and (h + extra_h < span_h or w + extra_w < span_w):
            continue
        co = groups * int(rng.integers(1, 4))
        n = int(rng.choice([1, 3]))
        case = conv_case(
            n, h, w, c, kh, kw, co, strides, padding, dilations, groups, bool(rng.integers(2))
        )
        cases.append(case)
    return cases


ALL_CONV_CASES = CONV_CASES + random_conv_cases(12)


def pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


def conv_inputs(case, dtype):
    n, h, w, c = case["x"]
    kh, kw, co = case["k"]
    x = RNG.standard_normal((n, c, h, w) if case["nchw"] else (n, h, w, c)).astype(dtype)
    filters = RNG.standard_normal((kh, kw, c // case["groups"], co)).astype(dtype)
    return x, filters


def build_conv(case, x, filters, device=None):
    graph = pg.Graph()
    with graph.as_default(), pg.device(device):
        y = pg.conv2d(
            x, filters, strides=case["strides"], padding=case["padding"],
            dilations=case["dilations"], groups=case["groups"],
            data_format="NCHW" if case["nchw"] else "NHWC",
        )  # fmt: skip
    return graph, y


def conv_expected(case, x, filters):
    padding = case["padding"]
    padding = (padding, padding) if isinstance(padding, str) else padding
    strides, dilations = pair(case["strides"]), pair(case["dilations"])
    return conv_reference(x, filters, strides, padding, dilations, case["groups"], case["nchw"])


def close(value, expected, dtype):
    """Within the dtype's tolerance, relative to the output's scale."""
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(
        value, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype] * scale
    )


def run(graph, fetches, config=None):
    with pg.Session(graph, config or pg.Config(executor="sequential")) as session:
        return session.run(fetches)


# -- conv2d against the reference -------------------------------------------------------------
@pytest.mark.parametrize("kernel", ["blas", "numba"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv2d_matches_the_float64_reference(dtype, kernel):
    config = pg.Config(executor="sequential", matmul_kernel=kernel)
    for case in ALL_CONV_CASES:
        x, filters = conv_inputs(case, dtype)
        graph, y = build_conv(case, x, filters)
        value = run(graph, y, config)
        expected = conv_expected(case, x, filters)
        assert value.shape == y.shape == expected.shape and value.dtype == np.dtype(dtype), case
        close(value, expected, dtype)
        # the op's own reference agrees with this file's
        close(opdef("conv2d").reference(y.op, [x, filters]), expected, dtype)


@pytest.mark.parametrize("kernel", ["blas", "numba"])
def test_conv2d_batch_zero_and_zero_channels(kernel):
    cases = [
        ((0, 5, 5, 2), (3, 3, 2, 4)),
        ((2, 5, 5, 0), (3, 3, 0, 3)),
        ((2, 5, 5, 0), (1, 1, 0, 3)),
    ]
    config = pg.Config(executor="sequential", matmul_kernel=kernel)
    for (n, h, w, c), filters in cases:
        for fmt, shape in (("NHWC", (n, h, w, c)), ("NCHW", (n, c, h, w))):
            graph = pg.Graph()
            with graph.as_default():
                y = pg.conv2d(np.ones(shape), np.ones(filters), padding="SAME", data_format=fmt)
            value = run(graph, y, config)
            assert value.shape == y.shape
            np.testing.assert_array_equal(value, np.zeros(y.shape))


def test_conv2d_accepts_tensorflow_four_element_forms():
    x = RNG.standard_normal((1, 7, 8, 3))
    filters = RNG.standard_normal((3, 3, 3, 2))
    graph = pg.Graph()
    with graph.as_default():
        short = pg.conv2d(x, filters, strides=(2, 1), padding=((1, 1), (0, 2)), dilations=(1, 2))
        long = pg.conv2d(
            x, filters, strides=[1, 2, 1, 1], padding=[[0, 0], [1, 1], [0, 2], [0, 0]],
            dilations=[1, 1, 2, 1],
        )  # fmt: skip
        nchw = pg.conv2d(
            np.ascontiguousarray(x.transpose(0, 3, 1, 2)), filters, strides=[1, 1, 2, 1],
            padding=[[0, 0], [0, 0], [1, 1], [0, 2]], dilations=[1, 1, 1, 2], data_format="NCHW",
        )  # fmt: skip
    a, b, c = run(graph, [short, long, nchw])
    assert a.tobytes() == b.tobytes()
    np.testing.assert_allclose(c.transpose(0, 2, 3, 1), a, rtol=1e-12, atol=1e-12)


def test_conv2d_same_padding_puts_the_odd_pad_at_the_bottom_right():
    # 4 wide, 2-wide window, stride 1: total pad 1, all of it after (TensorFlow)
    x = np.arange(1.0, 5.0).reshape(1, 1, 4, 1)
    graph = pg.Graph()
    with graph.as_default():
        y = pg.conv2d(x, np.ones((1, 2, 1, 1)), padding="SAME")
    np.testing.assert_array_equal(run(graph, y).ravel(), [3.0, 5.0, 7.0, 4.0])


# -- pooling ----------------------------------------------------------------------------------
POOL_CASES = [
    dict(x=(1, 5, 5, 2), ksize=2, strides=2, padding="VALID"),
    dict(x=(3, 7, 9, 3), ksize=3, strides=2, padding="SAME"),
    dict(x=(1, 8, 11, 4), ksize=(3, 2), strides=(1, 3), padding="SAME"),
    dict(x=(2, 6, 6, 1), ksize=3, strides=3, padding=((1, 1), (2, 0))),
    dict(x=(1, 4, 4, 5), ksize=4, strides=1, padding="VALID"),  # output 1x1
    dict(x=(3, 5, 5, 2), ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="SAME"),
]


def build_pools(case, x, nchw, device=None):
    fmt = "NCHW" if nchw else "NHWC"
    args = dict(ksize=case["ksize"], strides=case["strides"], padding=case["padding"])
    if nchw and isinstance(case["ksize"], list):  # the 4-element form follows the layout
        args["ksize"], args["strides"] = [1, 1, 3, 3], [1, 1, 1, 1]
    graph = pg.Graph()
    with graph.as_default(), pg.device(device):
        fetches = [
            pg.max_pool2d(x, data_format=fmt, **args),
            pg.avg_pool2d(x, data_format=fmt, **args),
        ]
    return graph, fetches


def pool_expected(case, x, nchw, kind):
    ksize = pair(case["ksize"]) if not isinstance(case["ksize"], list) else (3, 3)
    strides = pair(case["strides"]) if not isinstance(case["strides"], list) else (1, 1)
    padding = case["padding"]
    padding = (padding, padding) if isinstance(padding, str) else padding
    return pool_reference(x, ksize, strides, padding, nchw, kind)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("nchw", [False, True])
def test_pools_match_the_float64_reference(dtype, nchw):
    for case in POOL_CASES:
        n, h, w, c = case["x"]
        x = RNG.standard_normal((n, c, h, w) if nchw else (n, h, w, c)).astype(dtype)
        graph, (max_y, avg_y) = build_pools(case, x, nchw)
        got_max, got_avg = run(graph, [max_y, avg_y])
        # max picks one of the values: exact
        np.testing.assert_array_equal(got_max, pool_expected(case, x, nchw, "max").astype(dtype))
        close(got_avg, pool_expected(case, x, nchw, "avg"), dtype)
        for y, got in ((max_y, got_max), (avg_y, got_avg)):
            close(opdef(y.op.type).reference(y.op, [x]), got, dtype)


def test_max_pool_propagates_nan_and_avg_counts_only_the_input():
    x = np.array([[1.0, np.nan, 2.0], [-np.inf, 3.0, 4.0], [5.0, 6.0, np.inf]]).reshape(1, 3, 3, 1)
    graph = pg.Graph()
    with graph.as_default():
        m = pg.max_pool2d(x, 2, 1, "VALID")
        a = pg.avg_pool2d(np.arange(9.0).reshape(1, 3, 3, 1), 2, 2, "SAME")
        lone = pg.max_pool2d(np.full((1, 2, 2, 1), -np.inf), 2, 2, "SAME")
    got_m, got_a, got_lone = run(graph, [m, a, lone])
    np.testing.assert_array_equal(got_m[0, :, :, 0], [[np.nan, np.nan], [6.0, np.inf]])
    # SAME, 3 -> 2 windows: [0,1]x[0,1], [0,1]x[2], [2]x[0,1], [2]x[2]
    np.testing.assert_array_equal(got_a[0, :, :, 0], [[2.0, 3.5], [6.5, 8.0]])
    assert got_lone.ravel().tolist() == [-np.inf]


# -- the same bits on every executor and thread setting ---------------------------------------
@pytest.fixture
def small_blocks(monkeypatch):
    """One image row a conv2d block, so that tiny shapes have many blocks (rows) to shard."""
    monkeypatch.setattr(nn, "BLOCK_PIXELS", 1)
    monkeypatch.setattr(nn, "POINTWISE_PIXELS", 1)


BITS_CASES = [
    conv_case(3, 9, 8, 8, 3, 3, 16, padding="SAME"),
    conv_case(3, 9, 8, 8, 3, 3, 16, strides=2, padding="SAME", nchw=True),
    conv_case(2, 7, 9, 16, 3, 3, 8, groups=2, dilations=2, padding="SAME"),
    conv_case(2, 7, 9, 8, 3, 3, 8, groups=8, padding="SAME"),
    conv_case(3, 6, 7, 24, 1, 1, 40),
    conv_case(2, 7, 9, 8, 3, 3, 8, padding="SAME", nchw=True),
    conv_case(3, 5, 6, 24, 1, 1, 40, nchw=True),
    conv_case(2, 7, 9, 8, 3, 3, 8, groups=8, strides=2, padding="SAME", nchw=True),
]


def bits_graph(case):
    """conv2d of the case and both pools of its input, in one graph."""
    x, filters = conv_inputs(case, "float32")
    graph, y = build_conv(case, x, filters)
    fmt = "NCHW" if case["nchw"] else "NHWC"
    with graph.as_default():
        source = y.op.inputs[0]
        pooled = [
            pg.max_pool2d(source, 3, 2, "SAME", fmt),
            pg.avg_pool2d(source, 2, 1, "VALID", fmt),
        ]
    return graph, [y, *pooled]


@pytest.mark.parametrize("kernel", ["blas", "numba"])
def test_every_thread_setting_gives_the_same_bits(kernel, many_shards, small_blocks):
    for case in BITS_CASES:
        graph, outputs = bits_graph(case)
        config = pg.Config(executor="sequential", matmul_kernel=kernel)
        with pg.Session(graph, config) as session:
            plan = session.plan_for(outputs)
            assert all(len(step.shards) > 1 for step in plan.steps)  # the fixtures made shards
            want = [v.tobytes() for v in session.run(outputs)]
        for inter, intra in THREADS:
            config = pg.Config(inter_op_threads=inter, intra_op_threads=intra, matmul_kernel=kernel)
            with pg.Session(graph, config) as session:
                got = [v.tobytes() for v in session.run(outputs)]
            assert got == want, (case, inter, intra)


@pytest.mark.parametrize("kernel", ["blas", "numba"])
def test_nchw_blocks_of_whole_images_give_the_same_bits(kernel, many_shards, monkeypatch):
    """Blocks of 2 whole images (one matmul for both, then a plane each), 3 blocks to shard."""
    monkeypatch.setattr(nn, "BLOCK_PIXELS", 2 * 5 * 6)
    monkeypatch.setattr(nn, "POINTWISE_PIXELS", 2 * 5 * 6)
    for case in [
        conv_case(5, 5, 6, 8, 3, 3, 8, padding="SAME", nchw=True),
        conv_case(5, 5, 6, 8, 1, 1, 8, nchw=True),
    ]:
        x, filters = conv_inputs(case, "float32")
        graph, y = build_conv(case, x, filters)
        assert nn.nchw_blocks(y.op.attrs["geometry"], 4) == (2, 5, 1)
        want = None
        for inter, intra in [(1, 1), *THREADS]:
            config = pg.Config(inter_op_threads=inter, intra_op_threads=intra, matmul_kernel=kernel)
            with pg.Session(graph, config) as session:
                assert len(session.plan_for([y]).steps[0].shards) > 1
                got = session.run(y)
            want = got.tobytes() if want is None else want
            assert got.tobytes() == want, (case, inter, intra)
        close(got, conv_expected(case, x, filters), "float32")


def test_nchw_blocks_are_whole_images_or_runs_of_one_image(monkeypatch):
    conv = opdef("conv2d")
    for pixels, (oh, ow), want in [
        (384, (56, 56), (1, 7, 8)),  # 7 rows of 56
        (384, (7, 7), (7, 7, 1)),  # 7 whole 7x7 images
        (384, (32, 32), (1, 12, 3)),  # 12, 12 and 8 rows
        (1, (5, 4), (1, 1, 5)),
    ]:
        monkeypatch.setattr(nn, "BLOCK_PIXELS", pixels)
        x = pg.placeholder((10, 4, oh, ow), "float32")
        y = pg.conv2d(x, np.zeros((3, 3, 4, 8), np.float32), padding="SAME", data_format="NCHW")
        images, rows, per_image = nn.nchw_blocks(y.op.attrs["geometry"], 4)
        assert (images, rows, per_image) == want
        assert conv.rows(y.op) == -(-10 // images) * per_image


def test_nchw_pools_and_depthwise_conv_give_the_nhwc_bits():
    """The NCHW kernels add, compare and multiply each element's window in the NHWC kernels'
    order: the same bits (NaNs aside: which NaN an addition of two keeps is the compiler's
    choice), with NaN, inf and -0.0 beside the padding (a flat run reads the neighbouring
    row there: it must not count)."""
    rng = np.random.default_rng(3)
    for (n, h, w, c), k, stride, padding in [
        ((2, 7, 8, 3), 3, 1, "SAME"),
        ((2, 8, 9, 2), 3, 2, "SAME"),
        ((1, 9, 12, 2), (2, 4), (3, 2), "SAME"),
        ((2, 7, 7, 3), 2, 1, "VALID"),
    ]:
        x = rng.standard_normal((n, h, w, c))
        x[0, :, -1, 0], x[0, 2, 0, 1], x[-1, 0, :, -1] = np.nan, np.inf, -np.inf
        x[-1, 3, -1, 0], x[0, 1, :, 0] = -0.0, 0.0
        kh, kw = pair(k)
        filters = rng.standard_normal((kh, kw, 1, c))
        filters[0, 0, 0, 0] = np.inf  # beside the padding: skipped, not 0 * inf
        layouts = {}
        for fmt in ("NHWC", "NCHW"):
            data = x if fmt == "NHWC" else np.ascontiguousarray(x.transpose(0, 3, 1, 2))
            graph = pg.Graph()
            with graph.as_default():
                args = dict(padding=padding, data_format=fmt)
                outputs = [
                    pg.max_pool2d(data, k, stride, **args),
                    pg.avg_pool2d(data, k, stride, **args),
                    pg.conv2d(data, filters, stride, groups=c, **args),
                ]
            values = run(graph, outputs)
            if fmt == "NCHW":
                values = [v.transpose(0, 2, 3, 1) for v in values]
            layouts[fmt] = values
        for a, b in zip(layouts["NHWC"], layouts["NCHW"]):
            nan = np.isnan(a)
            assert (nan == np.isnan(b)).all() and nan.any(), (x.shape, k, stride, padding)
            assert a[~nan].tobytes() == b[~nan].tobytes(), (x.shape, k, stride, padding)


def test_nchw_kernels_refuse_ranges_outside_their_arrays():
    from parallelgraph.kernels import conv as kernels

    x = np.zeros((2, 3, 5, 5), np.float32)
    for n0, n1, h0, h1, c0, cig in [(1, 3, 0, 5, 0, 3), (0, 1, 2, 6, 0, 3), (0, 1, 0, 5, 1, 3)]:
        buf = np.zeros((n1 - n0, h1 - h0, 5, cig), np.float32)
        with pytest.raises(IndexError):
            kernels.nchw_to_nhwc(x, n0, n1, h0, h1, c0, cig, buf)
    with pytest.raises(IndexError):  # the buffer has one row too few
        kernels.nchw_to_nhwc(x, 0, 1, 0, 5, 0, 3, np.zeros((1, 4, 5, 3), np.float32))
    block = np.zeros((25, 3), np.float32)
    for n0, n1, c0, oh0, oh1 in [
        (1, 3, 0, 0, 5),
        (0, 1, 1, 0, 5),
        (0, 2, 0, 0, 5),
        (0, 1, 0, 3, 6),
    ]:
        with pytest.raises(IndexError):
            kernels.scatter_nchw(block, x, n0, n1, c0, oh0, oh1)
    out = np.zeros((2, 3, 5, 5), np.float32)
    with pytest.raises(IndexError):
        kernels.max_pool_rows(x, out, True, (3, 3, 1, 1, 1, 1), 0, 11)
    with pytest.raises(IndexError):
        kernels.conv_direct_rows(
            x, np.zeros((3, 3, 1, 3), np.float32), out, True, (3, 3, 1, 1, 1, 1, 1, 1), 3, 0, 11
        )


def test_default_blocks_depend_on_shapes_only_and_bound_the_patch_memory():
    x = pg.placeholder((64, 56, 56, 64), "float32")
    y = pg.conv2d(x, np.zeros((3, 3, 64, 64), np.float32), padding="SAME", name="c")
    geometry = y.op.attrs["geometry"]
    rows = nn.block_rows(geometry, 4)
    assert rows * 56 >= nn.BLOCK_PIXELS and rows * 56 * 576 * 4 <= nn.BLOCK_BYTES
    assert opdef("conv2d").rows(y.op) == -(-64 * 56 // rows)
    huge = pg.conv2d(pg.placeholder((1, 8, 400, 4096), "float64"), np.zeros((3, 3, 4096, 1)))
    assert nn.block_rows(huge.op.attrs["geometry"], 8) == 1  # one image row, whatever its size


def test_conv_calls_blas_only_through_its_blas_matmul():
    conv = opdef("conv2d")
    graph = pg.Graph()
    with graph.as_default():
        dense = pg.conv2d(np.zeros((1, 4, 4, 4)), np.zeros((3, 3, 4, 4)))
        depthwise = pg.conv2d(np.zeros((1, 4, 4, 4)), np.zeros((3, 3, 1, 4)), groups=4)
    assert conv.calls_blas(dense.op, pg.Config(matmul_kernel="blas"))
    assert not conv.calls_blas(dense.op, pg.Config(matmul_kernel="numba"))
    assert not conv.calls_blas(depthwise.op, pg.Config(matmul_kernel="blas"))


# -- build-time errors ------------------------------------------------------------------------
def conv_error(x_shape, f_shape, dtype="float32", **kwargs):
    graph = pg.Graph()
    with graph.as_default(), pg.scope("block1"):
        x = pg.placeholder(x_shape, dtype)
        with pytest.raises(pg.GraphError) as caught:
            pg.conv2d(x, pg.placeholder(f_shape, dtype), name="conv", **kwargs)
    return str(caught.value)


@pytest.mark.parametrize(
    "x_shape, f_shape, kwargs, words",
    [
        ((1, 5, 5, 3), (3, 3, 4, 8), {}, "4 input channels a group"),
        ((1, 5, 5, 4), (3, 3, 1, 6), {"groups": 4}, "divisible by groups 4"),
        ((1, 5, 5, 4), (3, 3, 4, 8), {"groups": 2}, "2 each"),
        ((1, 4, 4, 2), (5, 5, 2, 3), {}, "larger than the padded input"),
        ((1, 4, 4, 2), (3, 3, 2, 3), {"dilations": 2}, "larger than the padded input"),
        ((1, 5, 5, 2), (3, 3, 2, 3), {"strides": 0}, "strides must be ints >= 1"),
        ((1, 5, 5, 2), (3, 3, 2, 3), {"dilations": (1, -1)}, "dilations must be ints >= 1"),
        ((1, 5, 5, 2), (3, 3, 2, 3), {"strides": [2, 1, 1, 1]}, "4-element form"),
        ((1, 5, 5, 2), (3, 3, 2, 3), {"padding": "FULL"}, "padding must be"),
        ((1, 5, 5, 2), (3, 3, 2, 3), {"padding": ((1, -1), (0, 0))}, "padding must be"),
        ((1, 5, 5, 2), (3, 3, 2, 3), {"data_format": "NWHC"}, "data_format"),
        ((1, 5, 5, 2), (3, 3, 2, 3), {"groups": 0}, "groups must be"),
        ((5, 5, 2), (3, 3, 2, 3), {}, "must be 4-D"),
        ((1, 5, 5, 2), (3, 3, 2), {}, "filters must be 4-D"),
    ],
)
def test_bad_conv2d_is_refused_when_built(x_shape, f_shape, kwargs, words):
    message = conv_error(x_shape, f_shape, **kwargs)
    assert words in message
    assert "conv2d" in message and "'conv'" in message and "block1" in message
    assert str(list(x_shape)) in message and str(list(f_shape)) in message


def test_bad_dtypes_and_pools_are_refused_when_built():
    assert "float32 or float64, not int32" in conv_error((1, 5, 5, 2), (3, 3, 2, 3), "int32")
    graph = pg.Graph()
    with graph.as_default():
        with pytest.raises(pg.GraphError, match="x is float32 but filters are float64"):
            pg.conv2d(np.zeros((1, 5, 5, 2), np.float32), np.zeros((3, 3, 2, 3)))
        x = pg.placeholder((1, 5, 5, 2))
        for call, words in [
            (lambda: pg.max_pool2d(x, 6, 1), "larger than the padded input"),
            (lambda: pg.avg_pool2d(x, 2, 1, ((2, 0), (0, 0))), "smaller than the window"),
            (lambda: pg.max_pool2d(x, [2, 2, 2, 1], 1), "4-element form"),
            (lambda: pg.avg_pool2d(x, 2, 0), "strides must be ints >= 1"),
            (lambda: pg.max_pool2d(pg.placeholder((5, 5, 2)), 2, 1), "must be 4-D"),
            (lambda: pg.max_pool2d(pg.placeholder((1, 5, 5, 2), "int64"), 2, 1), "int64"),
        ]:
            with pytest.raises(pg.GraphError, match=words) as caught:
                call()
            assert "pool2d" in str(caught.value)


# -- GPU (numba.cuda; the CUDA simulator where there is no GPU) -------------------------------
GPU_CONV_CASES = [
    conv_case(1, 5, 5, 2, 3, 3, 3, strides=2, padding="SAME"),
    conv_case(1, 5, 4, 2, 3, 3, 2, dilations=2, padding="SAME", nchw=True),
    conv_case(1, 5, 5, 4, 3, 2, 4, groups=2, padding=((1, 0), (0, 1))),
    conv_case(1, 4, 5, 3, 3, 3, 3, groups=3, padding="SAME"),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_kernels_match_the_cpu(dtype):
    for case in GPU_CONV_CASES:
        x, filters = conv_inputs(case, dtype)
        graph, y = build_conv(case, x, filters, device="gpu:0")
        with graph.as_default(), pg.device("gpu:0"):
            nchw = "NCHW" if case["nchw"] else "NHWC"
            pools = [pg.max_pool2d(y, 2, 2, "SAME", data_format=nchw)]
            pools.append(pg.avg_pool2d(y, (3, 2), 1, "SAME", data_format=nchw))
        with pg.Session(graph) as session:
            got, trace = session.run([y, *pools], trace=True)
        assert {e.device for e in trace.ops()} == {"gpu:0"}
        want = run(graph, [y, *pools])
        for value, expected in zip(got, want):
            assert value.dtype == expected.dtype and value.shape == expected.shape
            close(value, expected, dtype)


def test_gpu_launchers_refuse_host_arrays_and_misfits():
    from numba import cuda

    from parallelgraph.kernels import gpu

    taps = (3, 3, 1, 1, 1, 1, 0, 0)
    x = np.zeros((1, 5, 5, 2), np.float32)
    with pytest.raises(TypeError, match="device arrays"):
        gpu.conv2d_launches(x, np.zeros((3, 3, 2, 2), np.float32), x, taps, 1, False)
    device_x, out = cuda.to_device(x), cuda.device_array((1, 3, 3, 2), np.float32)
    with pytest.raises(ValueError, match="conv2d filters"):
        gpu.conv2d_launches(
            device_x, cuda.to_device(np.zeros((3, 3, 1, 2), np.float32)), out, taps, 1, False
        )
    with pytest.raises(ValueError, match="one dtype"):
        gpu.pool2d_launches(
            device_x, cuda.device_array((1, 3, 3, 2)), (2, 2, 2, 2, 0, 0), False, True
        )
    empty = cuda.device_array((0, 3, 3, 2), np.float32)
    assert gpu.pool2d_launches(cuda.to_device(x[:0]), empty, (2, 2, 2, 2, 0, 0), False, True) == []


def test_nchw_and_nhwc_agree():
    for case in [c for c in ALL_CONV_CASES if not c["nchw"]][:6]:
        x, filters = conv_inputs(case, "float64")
        graph_a, a = build_conv(case, x, filters)
        flipped = dict(case, nchw=True)
        graph_b, b = build_conv(flipped, np.ascontiguousarray(x.transpose(0, 3, 1, 2)), filters)
        value_a, value_b = run(graph_a, a), run(graph_b, b)
        np.testing.assert_allclose(value_b.transpose(0, 2, 3, 1), value_a, rtol=1e-12, atol=1e-12)


def test_combinations_of_strides_and_dilations_cover_output_size_one():
    for stride, dilation in itertools.product([1, 2, 3], [1, 2]):
        x = RNG.standard_normal((1, 5, 5, 1))
        filters = RNG.standard_normal((3, 3, 1, 1))
        graph = pg.Graph()
        with graph.as_default():
            y = pg.conv2d(x, filters, strides=stride, dilations=dilation)
        expected = conv_reference(
            x, filters, (stride,) * 2, ("VALID",) * 2, (dilation,) * 2, 1, False
        )
        close(run(graph, y), expected, "float64")
