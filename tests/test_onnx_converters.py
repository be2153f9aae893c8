"""Every ONNX converter against ONNX Runtime on one-node models written with `onnx.helper`,
plus the reader's refusals (corrupt files, cycles, opsets, external data, symbolic dimensions,
contradicting initializers, unknown op types) and the reference-evaluator fallback."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import parallelgraph as pg

RNG = np.random.default_rng(11)
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
NP = {F: np.float32, I64: np.int64, B: np.bool_}


def model_of(nodes, inputs, outputs, initializers=(), opset=17):
    """A model of `nodes`: inputs/outputs as (name, type, shape); initializers (name, array)."""
    graph = helper.make_graph(
        nodes,
        "test",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def values_for(inputs):
    feeds = {}
    for name, kind, shape in inputs:
        if kind == F:
            feeds[name] = RNG.standard_normal(shape).astype(np.float32)
        elif kind == B:
            feeds[name] = RNG.random(shape) < 0.5
        else:
            feeds[name] = RNG.integers(0, 3, shape).astype(np.int64)
    return feeds


def compare(model, inputs, rtol=1e-5, atol=1e-5, **options):
    feeds = values_for(inputs)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    loaded = pg.from_onnx(model, **options)
    with loaded:
        got = loaded.run(feeds)
        for (name, value), want in zip(got.items(), expected):
            assert value.shape == want.shape, name
            if value.dtype.kind == "f":
                np.testing.assert_allclose(value, want, rtol=rtol, atol=atol, err_msg=name)
            else:
                np.testing.assert_array_equal(value, want, err_msg=name)
    return loaded


def one(op_type, inputs, output_shape, attrs=None, initializers=(), out_type=F, opset=17, n_out=1):
    names = [name for name, *_ in inputs] + [name for name, _ in initializers]
    outputs = [f"y{k}" for k in range(n_out)]
    node = helper.make_node(op_type, names, outputs, name=f"/block/{op_type}", **(attrs or {}))
    shapes = output_shape if n_out > 1 else [output_shape]
    types = out_type if isinstance(out_type, list) else [out_type] * n_out
    return model_of(
        [node], inputs, [(o, t, s) for o, t, s in zip(outputs, types, shapes)], initializers, opset
    )


X = ("x", F, [3, 4])
Y = ("y", F, [3, 4])
CASES = {
    "Add": one("Add", [X, ("b", F, [4])], [3, 4]),
    "Sub": one("Sub", [X, Y], [3, 4]),
    "Mul": one("Mul", [X, ("c", F, [3, 1])], [3, 4]),
    "Div": one("Div", [X, Y], [3, 4]),
    "Pow": one("Pow", [("x", F, [3, 4])], [3, 4], initializers=[("p", np.float32(2.0))]),
    "Sqrt": one("Sqrt", [X], [3, 4]),
    "Abs": one("Abs", [X], [3, 4]),
    "Log": one("Log", [X], [3, 4]),
    "Exp": one("Exp", [X], [3, 4]),
    "Tanh": one("Tanh", [X], [3, 4]),
    "Sigmoid": one("Sigmoid", [X], [3, 4]),
    "Relu": one("Relu", [X], [3, 4]),
    "Erf": one("Erf", [X], [3, 4]),
    "Neg": one("Neg", [X], [3, 4]),
    "Reciprocal": one("Reciprocal", [X], [3, 4]),
    "Max": one("Max", [X, Y, ("z", F, [4])], [3, 4]),
    "Min": one("Min", [X, Y], [3, 4]),
    "Sum": one("Sum", [X, Y, ("z", F, [1, 4])], [3, 4]),
    "Mean": one("Mean", [X, Y], [3, 4]),
    "Where": one("Where", [("c", B, [3, 4]), X, Y], [3, 4]),
    "Equal": one("Equal", [("a", I64, [3, 4]), ("b", I64, [4])], [3, 4], out_type=B),
    "Greater": one("Greater", [X, Y], [3, 4], out_type=B),
    "Less": one("Less", [X, Y], [3, 4], out_type=B),
    "Not": one("Not", [("c", B, [5])], [5], out_type=B),
    "And": one("And", [("c", B, [5]), ("d", B, [5])], [5], out_type=B),
    "Or": one("Or", [("c", B, [5]), ("d", B, [5])], [5], out_type=B),
    "IsNaN": one("IsNaN", [X], [3, 4], out_type=B),
    "Cast": one("Cast", [X], [3, 4], {"to": TensorProto.INT64}, out_type=I64),
    "Clip": one(
        "Clip", [X], [3, 4], initializers=[("lo", np.float32(-0.5)), ("hi", np.float32(0.5))]
    ),
    "Gelu": one("Gelu", [X], [3, 4], opset=20),
    "LeakyRelu": one("LeakyRelu", [X], [3, 4], {"alpha": 0.2}),
    "Identity": one("Identity", [X], [3, 4]),
    "MatMul": one("MatMul", [("a", F, [2, 3, 4]), ("b", F, [4, 5])], [2, 3, 5]),
    "MatMul vector": one("MatMul", [("a", F, [4]), ("b", F, [2, 4, 5])], [2, 5]),
    "Gemm": one(
        "Gemm",
        [("a", F, [3, 4])],
        [3, 5],
        {"transB": 1, "alpha": 0.5, "beta": 2.0},
        initializers=[
            ("w", RNG.standard_normal((5, 4)).astype(np.float32)),
            ("c", np.ones(5, np.float32)),
        ],
    ),
    "Softmax": one("Softmax", [("x", F, [2, 3, 4])], [2, 3, 4], {"axis": 1}),
    "Softmax opset 11": one("Softmax", [("x", F, [2, 3, 4])], [2, 3, 4], {"axis": 1}, opset=11),
    "LogSoftmax": one("LogSoftmax", [X], [3, 4]),
    "ReduceSum": one(
        "ReduceSum", [("x", F, [2, 3, 4])], [2, 1, 4], initializers=[("axes", np.array([1]))]
    ),
    "ReduceMean": one("ReduceMean", [("x", F, [2, 3, 4])], [2, 3], {"axes": [2], "keepdims": 0}),
    "ReduceMax": one("ReduceMax", [("x", F, [2, 3, 4])], [1, 1, 1]),
    "TopK": one(
        "TopK",
        [("x", F, [3, 6])],
        [[3, 2], [3, 2]],
        {"axis": 1},
        [("k", np.array([2]))],
        out_type=[F, I64],
        n_out=2,
    ),
    "TopK smallest axis 0": one(
        "TopK",
        [("x", F, [6, 3])],
        [[2, 3], [2, 3]],
        {"axis": 0, "largest": 0},
        [("k", np.array([2]))],
        out_type=[F, I64],
        n_out=2,
    ),
    "Conv": one(
        "Conv",
        [("x", F, [1, 2, 6, 6])],
        [1, 4, 3, 3],
        {"strides": [2, 2], "pads": [1, 1, 1, 1], "kernel_shape": [3, 3]},
        [
            ("w", RNG.standard_normal((4, 2, 3, 3)).astype(np.float32)),
            ("b", np.arange(4, dtype=np.float32)),
        ],
    ),
    "Conv grouped same": one(
        "Conv",
        [("x", F, [2, 4, 5, 5])],
        [2, 4, 5, 5],
        {"group": 2, "auto_pad": "SAME_UPPER"},
        [("w", RNG.standard_normal((4, 2, 3, 3)).astype(np.float32))],
    ),
    "MaxPool": one(
        "MaxPool",
        [("x", F, [1, 2, 6, 6])],
        [1, 2, 3, 3],
        {"kernel_shape": [2, 2], "strides": [2, 2]},
    ),
    "AveragePool": one(
        "AveragePool",
        [("x", F, [1, 2, 5, 5])],
        [1, 2, 5, 5],
        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
    ),
    "GlobalAveragePool": one("GlobalAveragePool", [("x", F, [2, 3, 4, 4])], [2, 3, 1, 1]),
    "BatchNormalization": one(
        "BatchNormalization",
        [("x", F, [2, 3, 4, 4])],
        [2, 3, 4, 4],
        {"epsilon": 1e-3},
        [(n, RNG.uniform(0.5, 2, 3).astype(np.float32)) for n in ("s", "bias", "mean", "var")],
    ),
    "LayerNormalization": one(
        "LayerNormalization",
        [("x", F, [2, 3, 4])],
        [2, 3, 4],
        {"axis": -1},
        [
            ("g", RNG.standard_normal(4).astype(np.float32)),
            ("b", RNG.standard_normal(4).astype(np.float32)),
        ],
    ),
    "Reshape": one(
        "Reshape", [("x", F, [2, 3, 4])], [3, 8], initializers=[("s", np.array([3, -1]))]
    ),
    "Flatten": one("Flatten", [("x", F, [2, 3, 4])], [6, 4], {"axis": 2}),
    "Transpose": one("Transpose", [("x", F, [2, 3, 4])], [4, 2, 3], {"perm": [2, 0, 1]}),
    "Concat": one("Concat", [X, Y], [3, 8], {"axis": -1}),
    "Split": one(
        "Split",
        [("x", F, [6, 4])],
        [[2, 4], [4, 4]],
        {"axis": 0},
        [("s", np.array([2, 4]))],
        n_out=2,
    ),
    "Slice": one(
        "Slice",
        [("x", F, [5, 6])],
        [2, 3],
        initializers=[
            ("st", np.array([1, -1])),
            ("en", np.array([5, -100])),
            ("ax", np.array([0, 1])),
            ("sp", np.array([2, -2])),
        ],
    ),
    "Squeeze": one("Squeeze", [("x", F, [3, 1, 4])], [3, 4], initializers=[("a", np.array([1]))]),
    "Unsqueeze": one("Unsqueeze", [X], [1, 3, 4, 1], initializers=[("a", np.array([0, -1]))]),
    "Gather": one("Gather", [("x", F, [5, 4]), ("i", I64, [2, 3])], [5, 2, 3], {"axis": 1}),
    "GatherElements": one(
        "GatherElements", [("x", F, [3, 4]), ("i", I64, [3, 4])], [3, 4], {"axis": 0}
    ),
    "GatherElements smaller indices": one(
        "GatherElements", [("x", F, [3, 4]), ("i", I64, [2, 3])], [2, 3], {"axis": 1}
    ),
    "Sign": one("Sign", [X], [3, 4]),
    "CastLike": one("CastLike", [X, ("i", I64, [1])], [3, 4], out_type=I64),
    "Expand": one(
        "Expand", [("x", F, [3, 1])], [2, 3, 4], initializers=[("s", np.array([2, 1, 4]))]
    ),
    "Dropout": one("Dropout", [X], [3, 4]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_converter_against_onnxruntime(case):
    model = CASES[case]
    inputs = [
        (i.name, i.type.tensor_type.elem_type, [d.dim_value for d in i.type.tensor_type.shape.dim])
        for i in model.graph.input
    ]
    compare(model, inputs)


def test_shape_arithmetic_is_folded_when_read():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters write a flatten: folded,
    so the graph that runs is a reshape."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"], name="/flatten/Reshape"),
        helper.make_node("Relu", ["y"], ["z"], name="/head/Relu"),
    ]
    inits = [("zero", np.array(0)), ("axes", np.array([0])), ("minus", np.array([-1]))]
    model = model_of(nodes, [("x", F, [2, 3, 4])], [("z", F, [2, 12])], inits)
    loaded = compare(model, [("x", F, [2, 3, 4])])
    assert loaded.folded == 3  # Gather, Unsqueeze, Concat (Shape of a tensor: its converter)
    assert {op.type for op in loaded.graph.ops} == {"placeholder", "reshape", "relu"}
    assert {op.name for op in loaded.graph.ops} >= {"flatten/Reshape", "head/Relu"}


def test_symbolic_dimensions_are_bound_by_shapes_or_refused():
    model = model_of(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", F, ["batch", 4])], [("y", F, ["batch", 4])]
    )
    with pytest.raises(pg.GraphError, match=r"input 'x' axis 0 is symbolic \('batch'\)"):
        pg.from_onnx(model)
    assert pg.from_onnx(model, shapes={"batch": 3}).inputs["x"].shape == (3, 4)
    assert pg.from_onnx(model, shapes={"x": (5, 4)}).inputs["x"].shape == (5, 4)
    with pytest.raises(pg.GraphError, match="neither inputs nor symbolic"):
        pg.from_onnx(model, shapes={"batch": 3, "y": (1,)})


def test_unknown_op_types_are_listed_with_counts_or_run_by_the_reference_evaluator():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Sin", ["r"], ["s"], name="/trig/Sin"),
        helper.make_node("Sin", ["s"], ["t"], name="/trig/Sin_1"),
        helper.make_node("Cos", ["t"], ["y"], name="/trig/Cos"),
    ]
    model = model_of(nodes, [X], [("y", F, [3, 4])])
    with pytest.raises(pg.GraphError, match=r"no converter for Sin \(2 nodes\), Cos \(1 node\)"):
        pg.from_onnx(model)
    loaded = compare(model, [X], fallback="reference")
    assert loaded.fallbacks == {"Sin": 2, "Cos": 1}
    kinds = {op.name: op.type for op in loaded.graph.ops}
    assert kinds["trig/Sin"] == "onnx_reference"
    x = values_for([X])
    with loaded:
        one_run, _ = loaded.run(x, pg.Config(inter_op_threads=2), trace=True)
        assert np.array_equal(one_run["y"], loaded.run(x)["y"])


def test_the_reader_refuses_bad_files(tmp_path):
    model = CASES["Relu"]
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(model.SerializeToString()[:20])
    with pytest.raises(pg.GraphError, match=r"corrupt.onnx.*not a readable ONNX model"):
        pg.from_onnx(corrupt)
    with pytest.raises(pg.GraphError, match="no such file"):
        pg.from_onnx(tmp_path / "missing.onnx")
    old = one("Relu", [X], [3, 4], opset=9)
    with pytest.raises(pg.GraphError, match="opset 9"):
        pg.from_onnx(old)
    cycle = model_of(
        [helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])],
        [X],
        [("b", F, [3, 4])],
    )
    with pytest.raises(pg.GraphError):
        pg.from_onnx(cycle)
    half = one("Add", [X], [3, 4], initializers=[("b", np.ones((2, 2), np.float32))])
    half.graph.value_info.append(helper.make_tensor_value_info("b", F, [4]))
    with pytest.raises(pg.GraphError, match=r"initializer 'b' has shape \[2, 2\]"):
        pg.from_onnx(half)


def test_missing_external_data_is_named(tmp_path):
    weights = np.ones((3, 4), np.float32)
    model = one("Add", [X], [3, 4], initializers=[("w", weights)])
    onnx.save_model(
        model,
        tmp_path / "m.onnx",
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="m.data",
        size_threshold=0,
    )
    (tmp_path / "m.data").unlink()
    with pytest.raises(pg.GraphError, match="external data is missing"):
        pg.from_onnx(tmp_path / "m.onnx")


def test_integer_division_is_refused_or_falls_back():
    model = one("Div", [("a", I64, [4]), ("b", I64, [4])], [4], out_type=I64)
    with pytest.raises(pg.GraphError, match="Div of integers"):
        pg.from_onnx(model)
    feeds = {"a": np.array([7, -7, 9, 1]), "b": np.array([2, 2, 3, 1])}
    with pg.from_onnx(model, fallback="reference") as loaded:
        expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
        np.testing.assert_array_equal(loaded.run(feeds)["y0"], expected)


def test_feeds_are_checked_by_name():
    with pg.from_onnx(CASES["Relu"]) as loaded:
        with pytest.raises(pg.GraphError, match="no input named"):
            loaded.run({"nope": np.ones((3, 4), np.float32)})
        with pytest.raises(pg.GraphError, match="not given"):
            loaded.run({})


def test_explain_says_which_ops_ran_in_the_reference_evaluator():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Sin", ["r"], ["y"], name="/trig/Sin"),
    ]
    model = model_of(nodes, [X], [("y", F, [3, 4])])
    with pg.from_onnx(model, fallback="reference") as loaded:
        _, trace = loaded.run(values_for([X]), trace=True)
    notes = trace.explain().notes
    assert any("ran in onnx's reference evaluator" in note and "Sin" in note for note in notes)


def test_gather_elements_of_known_values_folds_past_64_positions():
    """onnx's reference evaluator gets GatherElements wrong past 64 positions (a BERT's 128
    position ids); folding it with NumPy gives ONNX Runtime's value."""
    positions = np.arange(128, dtype=np.int64).reshape(1, 128)
    nodes = [
        helper.make_node("GatherElements", ["table", "ids"], ["picked"], axis=1),
        helper.make_node("Add", ["x", "picked"], ["y"]),
    ]
    model = model_of(
        nodes,
        [("x", I64, [1, 128])],
        [("y", I64, [1, 128])],
        [("table", positions * 3), ("ids", positions[:, ::-1].copy())],
    )
    loaded = compare(model, [("x", I64, [1, 128])])
    assert loaded.folded == 1
