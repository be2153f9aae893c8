"""The architectures of `pg.models`: each against its own NumPy float64 implementation (written
here from the papers' definitions, reading the session's variables), the same bits on every
executor and thread setting, branches in scopes the plan can run side by side, and the GPU
in the simulator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import erf

import parallelgraph as pg
from parallelgraph.models import ARCHITECTURES


def values_of(preset):
    """Every variable's and random input's value, by op name, and the output (sequential)."""
    named = [op for op in preset.graph.ops if op.type in ("variable", "random_normal", "constant")]
    with pg.Session(preset.graph, pg.Config(executor="sequential")) as session:
        results = session.run([op.output for op in named] + [preset.fetch])
    return {op.name: np.asarray(v, np.float64) for op, v in zip(named, results)}, results[-1]


# -- NumPy float64 implementations ---------------------------------------------------------------


def dense(p, scope, x, activation=None):
    y = x @ p[f"{scope}/w"] + p[f"{scope}/b"]
    return activation(y) if activation else y


def relu(x):
    return np.maximum(x, 0)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def mlp(p, scope, x, count, activation=relu):
    for index in range(count):
        last = index == count - 1
        x = dense(p, f"{scope}/dense{index}", x, None if last else activation)
    return x


def conv_same(x, filters, strides=1):
    """A SAME convolution, NHWC x HWIO, by its definition (padding as TensorFlow's)."""
    n, h, w, _ = x.shape
    kh, kw, _, co = filters.shape
    oh, ow = -(-h // strides), -(-w // strides)
    pad_h = max((oh - 1) * strides + kh - h, 0)
    pad_w = max((ow - 1) * strides + kw - w, 0)
    padded = np.pad(
        x, ((0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2), (0, 0))
    )
    out = np.zeros((n, oh, ow, co))
    for i in range(kh):
        for j in range(kw):
            window = padded[:, i : i + strides * oh : strides, j : j + strides * ow : strides, :]
            out += np.einsum("nhwc,cd->nhwd", window, filters[i, j])
    return out


def conv(p, scope, x, strides=1, activation=relu, normalize=False):
    y = conv_same(x, p[f"{scope}/filters"], strides)
    if normalize:
        bn = f"{scope}/bn"
        y = (y - p[f"{bn}/mean"]) / np.sqrt(p[f"{bn}/variance"] + 1e-5) * p[f"{bn}/scale"]
        y = y + p[f"{bn}/offset"]
    return activation(y) if activation else y


def max_pool_same(x, size):
    _, h, w, _ = x.shape
    pad = size - 1
    padded = np.pad(
        x,
        ((0, 0), (pad // 2, pad - pad // 2), (pad // 2, pad - pad // 2), (0, 0)),
        constant_values=-np.inf,
    )
    return np.max([padded[:, i : i + h, j : j + w] for i in range(size) for j in range(size)], 0)


def attention(p, x, heads):
    width = x.shape[-1]
    key_width = max(1, width // heads)
    outs = []
    for h in range(heads):
        s = f"attention/head{h}"
        q, k, v = (dense(p, f"{s}/{name}", x) for name in "qkv")
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(key_width)
        outs.append(softmax(scores) @ v)
    return dense(p, "attention/out", np.concatenate(outs, axis=-1))


def inception(p, x, branches):
    outs = [conv(p, "inception/branch_1x1/conv1x1_0", x)]
    outs.append(
        conv(p, "inception/branch_3x3/conv3x3_1", conv(p, "inception/branch_3x3/conv1x1_0", x))
    )
    outs.append(
        conv(p, "inception/branch_5x5/conv5x5_1", conv(p, "inception/branch_5x5/conv1x1_0", x))
    )
    outs.append(conv(p, "inception/branch_pool/conv1x1_1", max_pool_same(x, 3)))
    return np.concatenate(outs[:branches], axis=-1)


def resnet(p, x):
    y = conv(p, "resnet/main/conv1", x, normalize=True)
    y = conv(p, "resnet/main/conv2", y, activation=None, normalize=True)
    shortcut = conv(p, "resnet/shortcut/projection", x, activation=None, normalize=True)
    return relu(y + shortcut)


def wide_and_deep(p, preset):
    ids = next(op for op in preset.graph.ops if op.name == "ids").attrs["value"]
    linear = dense(p, "wide_and_deep/wide/linear", p["wide_features"])
    embedded = p["wide_and_deep/deep/embeddings"][ids].reshape(ids.shape[0], -1)
    deep = mlp(p, "wide_and_deep/deep/mlp", embedded, 3)
    return 1 / (1 + np.exp(-(linear + deep)))


def two_tower(p):
    u = mlp(p, "two_tower/user_tower", p["user"], 2)
    v = mlp(p, "two_tower/item_tower", p["item"], 2)
    return (u * v).sum(axis=-1)


def moe(p, experts, top):
    x = p["x"]
    gates = softmax(dense(p, "moe/gate/logits", x))
    if top:
        kth = -np.sort(-gates, axis=-1)[:, top - 1 : top]
        gates = np.where(gates >= kth, gates, 0)
        gates = gates / gates.sum(axis=-1, keepdims=True)
    return sum(mlp(p, f"moe/expert{i}/mlp", x, 2) * gates[:, i : i + 1] for i in range(experts))


def ensemble(p, members):
    return sum(mlp(p, f"ensemble/member{i}", p["x"], 3) for i in range(members)) / members


def reference(name, preset, p):
    size = ARCHITECTURES[name].sizes["tiny"]
    if name == "attention":
        return attention(p, p["x"], size["heads"])
    if name == "inception":
        return inception(p, p["x"], size["branches"])
    if name == "resnet":
        return resnet(p, p["x"])
    if name == "wide_and_deep":
        return wide_and_deep(p, preset)
    if name == "two_tower":
        return two_tower(p)
    if name == "mixture_of_experts":
        return moe(p, size["experts"], size["top"])
    return ensemble(p, size["members"])


NAMES = sorted(ARCHITECTURES)


@pytest.mark.parametrize("name", NAMES)
def test_each_architecture_matches_its_numpy_float64_implementation(name):
    preset = pg.models.preset(name, "tiny", dtype="float64")
    p, value = values_of(preset)
    expected = reference(name, preset, p)
    assert value.shape == expected.shape
    np.testing.assert_allclose(value, expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_every_setting_gives_the_sequential_bits(name, many_shards):
    preset = pg.models.preset(name, "tiny")
    with pg.Session(preset.graph, pg.Config(executor="sequential")) as session:
        expected = session.run(preset.fetch).tobytes()
    for inter, intra, fuse in [(2, 1, False), (1, 2, False), (2, 2, True), (3, 2, False)]:
        config = pg.Config(inter_op_threads=inter, intra_op_threads=intra, fuse=fuse)
        with pg.Session(preset.graph, config) as session:
            assert session.run(preset.fetch).tobytes() == expected, (inter, intra, fuse)


@pytest.mark.parametrize("name", NAMES)
def test_the_branches_are_scopes_the_plan_can_run_side_by_side(name):
    """Each preset names at least two branch scopes, and its plan lets that many steps be ready
    at once (the structure inter-op threads need; whether they pay is a measurement)."""
    preset = pg.models.preset(name, "small")
    assert len(preset.scopes) >= 2
    scoped = {
        scope: [op for op in preset.graph.ops if op.scope.startswith(scope)]
        for scope in preset.scopes
    }
    assert all(scoped.values()), scoped.keys()
    with pg.Session(preset.graph, pg.Config(inter_op_threads=2)) as session:
        plan = session.plan_for(preset.fetch)
    assert plan.max_concurrent_steps >= 2


@pytest.mark.parametrize("name", NAMES)
def test_each_architecture_on_the_gpu_in_the_simulator(name):
    preset = pg.models.preset(name, "tiny", device="gpu:0")
    with pg.Session(preset.graph, pg.Config(executor="sequential")) as session:
        expected = session.run(preset.fetch)
    with pg.Session(preset.graph, pg.Config(streams=2, stream_policy="branches")) as session:
        value, trace = session.run(preset.fetch, trace=True)
    assert {e.device for e in trace.ops()} == {"gpu:0"}
    np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-5)


def test_explain_compares_the_heads():
    """A model built in one scope: explain() compares the scopes one level down (the heads),
    not the one top-level scope."""
    preset = pg.models.preset("attention", "tiny")
    with pg.Session(preset.graph, pg.Config(inter_op_threads=1)) as session:
        _, trace = session.run(preset.fetch, trace=True)
    pairs = {(pair.scope_a, pair.scope_b): pair for pair in trace.explain().pairs}
    heads = ("attention/head0", "attention/head1")
    assert heads in pairs
    assert pairs[heads].overlap == 0.0 and pairs[heads].cause is not None  # one inter-op thread


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="unknown architecture"):
        pg.models.preset("transformer")
    with pytest.raises(ValueError, match="unknown size"):
        pg.models.preset("attention", "huge")
    graph = pg.Graph("bad")
    with graph.as_default(), pytest.raises(ValueError, match="batch, time, width"):
        pg.models.attention(pg.random_normal((4, 8)))


def test_gelu_reference_is_the_erf_form():
    x = np.linspace(-4, 4, 9)
    assert np.allclose(
        0.5 * x * (1 + erf(x / math.sqrt(2))), pg.ops.opdef("gelu").entry.reference(x)
    )


@pytest.mark.parametrize("name", ["attention", "inception", "mixture_of_experts", "two_tower"])
def test_the_branches_policy_gives_each_branch_one_stream_of_its_own(name):
    """A head's q, k and v (three chains forked from one input) stay on the head's stream; the
    branches spread over the streams."""
    preset = pg.models.preset(name, "tiny", device="gpu:0")
    branches = [s for s in preset.scopes if s.split("/")[-1] not in ("out", "gate")]
    config = pg.Config(streams=len(branches), stream_policy="branches")
    with pg.Session(preset.graph, config) as session:
        plan = session.plan_for(preset.fetch)
    streams = {
        branch: {s.stream for s in plan.steps if s.op.scope.startswith(branch + "/")}
        for branch in branches
    }
    assert all(len(used) == 1 for used in streams.values()), streams
    assert len(set().union(*streams.values())) == len(branches), streams
