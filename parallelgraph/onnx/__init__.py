"""`pg.from_onnx`: your ONNX model on parallelgraph's engine.

    model = pg.from_onnx("model.onnx", shapes={"x": (8, 32)})
    outputs, trace = model.run({"x": x}, pg.Config(inter_op_threads=2), trace=True)
    trace.explain()              # which of *your* modules ran side by side

How it reads a model, one module each: `reader` (the file checked: corrupt, opset, external
data, order, dtypes, symbolic dimensions bound by `shapes=`), `naming` (node names and PyTorch's
metadata as scopes), `folding` (every node whose inputs are known when read is computed then by
onnx's reference evaluator: the exporters' shape arithmetic leaves a static graph), `registry`
and `converters` (one small function per ONNX op type, registered by name), `fallback` (an op
type with no converter runs in onnx's reference evaluator with `fallback="reference"`, and
says so), `build` (the graph), `model` (`OnnxModel`). Needs the `onnx` package
(`pip install "parallelgraph[onnx]"`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .model import OnnxModel


def from_onnx(
    source: Any,
    shapes: Mapping[str, Any] | None = None,
    fallback: str | None = None,
    device: str | None = None,
    name: str | None = None,
) -> OnnxModel:
    """Read an ONNX model (a path, bytes or an `onnx.ModelProto`) into a parallelgraph graph.

    `shapes` binds symbolic dimensions: by input name (`{"x": (8, 32)}`) or by dimension name
    (`{"batch": 8}`). `fallback="reference"` runs op types parallelgraph has no converter for in
    onnx's reference evaluator instead of refusing the model. `device="gpu:0"` places the graph
    on the GPU (soft placement runs it on the CPU where there is none). Every problem with the
    model is a `pg.GraphError` naming it, raised before anything runs.
    """
    try:
        import onnx  # noqa: F401
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "pg.from_onnx needs the onnx package: pip install 'parallelgraph[onnx]'", name="onnx"
        ) from None
    from . import reader

    what = reader.describe_source(source)
    proto = reader.load(source)
    label = name or (
        os.path.basename(os.fspath(source))
        if isinstance(source, (str, os.PathLike))
        else proto.graph.name or "onnx"
    )
    return read_model(proto, what, label, shapes, fallback, device)


def read_model(
    proto: Any,
    what: str,
    label: str,
    shapes: Mapping[str, Any] | None,
    fallback: str | None,
    device: str | None,
    constants: Mapping[str, Any] | None = None,
) -> OnnxModel:
    """The `OnnxModel` of a loaded, checked ModelProto (inputs in `constants` bound)."""
    from . import build, reader

    arrays = reader.initializers(proto, what)
    inputs = reader.graph_inputs(proto, arrays, shapes, what)
    reader.check_order(proto, arrays, inputs, what)
    built = build.build_graph(
        proto, arrays, inputs, what, label, fallback, device, dict(constants or {})
    )
    options = {"shapes": shapes, "fallback": fallback, "device": device, "label": label}
    return OnnxModel(
        built.graph,
        built.inputs,
        built.outputs,
        what,
        built.fallbacks,
        built.folded,
        _proto=proto,
        _options=options,
    )


__all__ = ["OnnxModel", "from_onnx"]
