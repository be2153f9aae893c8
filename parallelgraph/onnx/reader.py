"""Reading an ONNX model: the file (or bytes, or ModelProto) checked before anything is built.

Every problem is one `GraphError` naming the file and what is wrong with it: a file that is not
there, a truncated or corrupt one (protobuf cannot parse it, or onnx's checker refuses it),
external data that is missing, an opset older than parallelgraph reads, a graph whose nodes
use a value before it is made (a cycle, or a graph out of order), a value nothing makes, an
input dtype we do not compute in, a symbolic dimension `shapes=` does not bind, an initializer
whose shape contradicts its declared type, a model larger than the machine's memory. Nothing is
written anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dtypes import Shape
from ..errors import GraphError
from ..ops.builder import physical_memory

#: The oldest opset whose operator signatures the converters read (Slice's bounds and Split's
#: sizes as inputs, Softmax on one axis: opset 11 and 13 changed them).
OLDEST_OPSET = 11
#: ONNX element types -> NumPy dtypes parallelgraph computes in.
DTYPES = {1: np.float32, 11: np.float64, 6: np.int32, 7: np.int64, 9: np.bool_}
ONNX_TYPE_NAMES = {
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    8: "string",
    10: "float16",
    12: "uint32",
    13: "uint64",
    16: "bfloat16",
}


@dataclass(frozen=True)
class Input:
    """A graph input: its name, NumPy dtype and static shape (symbolic dims bound)."""

    name: str
    dtype: np.dtype
    shape: Shape


def describe_source(source: object) -> str:
    if isinstance(source, (str, os.PathLike)):
        return f"ONNX model {os.fspath(source)!r}"
    return "ONNX model (in memory)"


def load(source: object) -> Any:
    """The ModelProto of `source` (a path, bytes or a ModelProto), checked."""
    import onnx
    from google.protobuf.message import DecodeError

    what = describe_source(source)
    if isinstance(source, onnx.ModelProto):
        model = source
    elif isinstance(source, (bytes, bytearray)):
        try:
            model = onnx.load_from_string(bytes(source))
        except (DecodeError, ValueError, RuntimeError) as problem:
            raise GraphError(f"{what}: not a readable ONNX model ({problem})") from None
    elif isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise GraphError(f"{what}: no such file")
        if os.path.getsize(path) > physical_memory():
            raise GraphError(
                f"{what}: {os.path.getsize(path) / 2**30:.1f} GiB, more than this machine's "
                f"{physical_memory() / 2**30:.1f} GiB of memory"
            )
        try:
            model = onnx.load(path, load_external_data=True)
        except FileNotFoundError as missing:
            raise GraphError(
                f"{what}: its external data is missing ({missing.filename or missing})"
            ) from None
        except onnx.checker.ValidationError as problem:  # an external data file not there
            raise GraphError(
                f"{what}: its external data is missing or unreadable ({problem})"
            ) from None
        except (DecodeError, ValueError, RuntimeError, OSError) as problem:
            raise GraphError(
                f"{what}: not a readable ONNX model (truncated or corrupt: "
                f"{type(problem).__name__}: {problem})"
            ) from None
    else:
        raise GraphError(
            f"from_onnx takes a path, bytes or an onnx.ModelProto, not {type(source).__name__}"
        )
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as problem:
        first = str(problem).strip().splitlines()[0] if str(problem).strip() else "invalid"
        raise GraphError(f"{what}: onnx's checker refuses it: {first}") from None
    opset = default_opset(model)
    if opset < OLDEST_OPSET:
        raise GraphError(
            f"{what}: opset {opset}; parallelgraph reads opset {OLDEST_OPSET} and later "
            "(onnx.version_converter.convert_version(model, 17) updates it)"
        )
    return model


def default_opset(model: Any) -> int:
    """The model's opset of the default (ai.onnx) domain."""
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return 1


def initializers(model: Any, what: str) -> dict[str, np.ndarray]:
    """The initializers as arrays, each checked against a declared type of the same name."""
    from onnx import numpy_helper

    declared = {v.name: v for v in list(model.graph.input) + list(model.graph.value_info)}
    arrays = {}
    for tensor in model.graph.initializer:
        array = numpy_helper.to_array(tensor)
        info = declared.get(tensor.name)
        if info is not None and info.type.tensor_type.HasField("shape"):
            dims = [
                d.dim_value if d.HasField("dim_value") else None
                for d in info.type.tensor_type.shape.dim
            ]
            if len(dims) != array.ndim or any(
                d is not None and d != n for d, n in zip(dims, array.shape)
            ):
                raise GraphError(
                    f"{what}: initializer {tensor.name!r} has shape {list(array.shape)}, but "
                    f"the graph declares {dims}"
                )
        arrays[tensor.name] = array
    for node in model.graph.node:  # Constant nodes' values are known too
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            for attribute in node.attribute:
                if attribute.name == "value":
                    arrays[node.output[0]] = numpy_helper.to_array(attribute.t)
    return arrays


def graph_inputs(
    model: Any, known: Mapping[str, np.ndarray], shapes: Mapping[str, Any] | None, what: str
) -> list[Input]:
    """The inputs the caller feeds (those no initializer gives), with static shapes: each
    symbolic dimension bound by `shapes` (by input name, a tuple, or by dimension name, an int)
    or refused naming the input and the dimension."""
    shapes = dict(shapes or {})
    inputs = []
    for info in model.graph.input:
        if info.name in known:
            continue
        tensor = info.type.tensor_type
        if tensor.elem_type not in DTYPES:
            type_name = ONNX_TYPE_NAMES.get(tensor.elem_type, f"type {tensor.elem_type}")
            raise GraphError(
                f"{what}: input {info.name!r} is {type_name}; parallelgraph computes in "
                "float32, float64, int32, int64 and bool"
            )
        given = shapes.pop(info.name, None)
        dims = list(tensor.shape.dim)
        if given is not None:
            shape = tuple(int(d) for d in given)
            if len(shape) != len(dims):
                raise GraphError(
                    f"{what}: shapes[{info.name!r}] = {list(shape)} has {len(shape)} axes; the "
                    f"input has {len(dims)}"
                )
        else:
            shape = tuple(
                _bind(dim, axis, info.name, shapes, what) for axis, dim in enumerate(dims)
            )
        inputs.append(Input(info.name, np.dtype(DTYPES[tensor.elem_type]), shape))
    names = {d.dim_param for i in model.graph.input for d in i.type.tensor_type.shape.dim}
    unused = [key for key in shapes if key not in names]
    if unused:
        raise GraphError(
            f"{what}: shapes= names {unused}, which are neither inputs nor symbolic dimensions "
            f"(inputs: {[i.name for i in inputs]})"
        )
    return inputs


def _bind(dim: Any, axis: int, name: str, shapes: Mapping[str, Any], what: str) -> int:
    if dim.HasField("dim_value") and dim.dim_value >= 0:
        return int(dim.dim_value)
    label = dim.dim_param or "?"
    if dim.dim_param and dim.dim_param in shapes:
        return int(shapes[dim.dim_param])
    raise GraphError(
        f"{what}: input {name!r} axis {axis} is symbolic ({label!r}): bind it with "
        f"from_onnx(..., shapes={{{name!r}: (...)}}) or shapes={{{label!r}: n}}"
    )


def check_order(
    model: Any, known: Mapping[str, np.ndarray], inputs: list[Input], what: str
) -> None:
    """Every node's inputs are made before it (ONNX requires topological order); else name the
    node and the value: made later (a cycle, or out of order) or never."""
    made = set(known) | {i.name for i in inputs} | {""}
    later = {output for node in model.graph.node for output in node.output}
    for node in model.graph.node:
        for name in node.input:
            if name not in made:
                how = (
                    "only by a later node (a cycle, or nodes out of order)"
                    if name in later
                    else "by no node, initializer or input"
                )
                raise GraphError(
                    f"{what}: node {node.name or node.op_type!r} ({node.op_type}) reads "
                    f"{name!r}, which is made {how}"
                )
        made.update(node.output)
    for output in model.graph.output:
        if output.name not in made:
            raise GraphError(f"{what}: output {output.name!r} is made by no node")
