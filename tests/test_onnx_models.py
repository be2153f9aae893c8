"""The fixture models made by PyTorch's two exporters (tests/fixtures/onnx, MANIFEST.json):
each loads, gives ONNX Runtime's outputs (recorded beside it) to float32 tolerance, the same
bits on every setting and executor, names its branches as the user named their modules, and
runs on the GPU in the simulator."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import parallelgraph as pg
from parallelgraph.scopes import branch_level

FIXTURES = Path(__file__).parent / "fixtures" / "onnx"
MANIFEST = json.loads((FIXTURES / "MANIFEST.json").read_text())["files"]
FILES = sorted(MANIFEST)


def recorded(name):
    data = np.load(FIXTURES / name.replace(".onnx", ".npz"))
    feeds = {k.split(":", 1)[1]: data[k] for k in data.files if k.startswith("input:")}
    outputs = {k.split(":", 1)[1]: data[k] for k in data.files if k.startswith("output:")}
    return feeds, outputs


def load(name, **options):
    feeds, _ = recorded(name)
    shapes = {k: v.shape for k, v in feeds.items()} if "dynamic" in name else None
    return pg.from_onnx(FIXTURES / name, shapes=shapes, **options)


@pytest.mark.parametrize("name", FILES)
def test_each_fixture_gives_onnx_runtimes_outputs(name):
    feeds, expected = recorded(name)
    with load(name) as model:
        got = model.run(feeds)
    assert set(got) == set(expected)
    for key, want in expected.items():
        assert got[key].shape == want.shape and got[key].dtype == want.dtype, key
        np.testing.assert_allclose(got[key], want, rtol=2e-5, atol=2e-5, err_msg=key)


@pytest.mark.parametrize("name", FILES)
def test_each_fixture_names_its_branches_as_the_modules(name):
    entry = MANIFEST[name]
    with load(name) as model:
        scopes = branch_level(op.scope for op in model.graph.ops)
    modules = [b for b in entry["branches"] if b]
    for module in modules:  # the module itself, or its parts when it is the only one (bert)
        assert any(s == module or s.startswith(module + "/") for s in scopes), (module, scopes)


@pytest.mark.parametrize(
    "name",
    [
        "attention_heads.onnx",
        "inception.dynamo.onnx",
        "mixture_of_experts_top2.onnx",
        "bert_tiny.onnx",
    ],
)
def test_every_setting_gives_the_same_bits(name, many_shards):
    feeds, _ = recorded(name)
    with load(name) as model:
        reference = model.run(feeds, pg.Config(executor="sequential"))
        for inter, intra, fuse in [(2, 1, False), (1, 2, True), (2, 2, True)]:
            config = pg.Config(inter_op_threads=inter, intra_op_threads=intra, fuse=fuse)
            got = model.run(feeds, config)
            for key, value in reference.items():
                assert got[key].tobytes() == value.tobytes(), (key, inter, intra, fuse)


def test_branches_run_as_the_modules_in_the_trace():
    feeds, _ = recorded("attention_heads.onnx")
    with load("attention_heads.onnx") as model:
        _, trace = model.run(feeds, pg.Config(inter_op_threads=1), trace=True)
    pairs = {(p.scope_a, p.scope_b) for p in trace.explain().pairs}
    assert ("head0", "head1") in pairs


@pytest.mark.parametrize(
    "name", ["attention_heads.onnx", "resnet.onnx", "wide_and_deep.dynamo.onnx"]
)
def test_fixtures_on_the_gpu_in_the_simulator(name):
    feeds, expected = recorded(name)
    with load(name, device="gpu:0") as model:
        got, trace = model.run(feeds, pg.Config(streams=2), trace=True)
    assert {e.device for e in trace.ops()} == {"gpu:0"}
    for key, want in expected.items():
        np.testing.assert_allclose(got[key], want, rtol=1e-4, atol=1e-4, err_msg=key)


def test_the_dynamic_batch_needs_shapes():
    with pytest.raises(pg.GraphError, match="symbolic"):
        pg.from_onnx(FIXTURES / "ensemble.dynamic.onnx")
    x = np.random.default_rng(0).standard_normal((5, 32)).astype(np.float32)
    with pg.from_onnx(FIXTURES / "ensemble.dynamic.onnx", shapes={"batch": 5}) as model:
        assert next(iter(model.run({"x": x}).values())).shape[0] == 5
