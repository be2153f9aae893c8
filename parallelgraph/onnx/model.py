"""`OnnxModel`: a model read by `pg.from_onnx`, its graph, its inputs and outputs by ONNX name,
and the short path to run it.

    model = pg.from_onnx("model.onnx")
    outputs = model.run({"x": x})                                  # {name: array}
    outputs, trace = model.run({"x": x}, pg.Config(inter_op_threads=2), trace=True)

Sessions are kept, one per Config (closed by `close()` or at the end of a `with` block), so a
second `run` with the same settings costs a run, not a session's start.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import Config
from ..errors import GraphError
from ..graph import Graph, Tensor
from ..session import Session


@dataclass
class OnnxModel:
    """A model read by `pg.from_onnx` (module docstring). Thread safety: `run` may be called
    from several threads (each session serializes its runs)."""

    graph: Graph
    #: ONNX input name -> its placeholder.
    inputs: dict[str, Tensor]
    #: ONNX output name -> its tensor.
    outputs: dict[str, Tensor]
    #: Where it came from ("model.onnx"), for messages.
    source: str = "ONNX model"
    #: Op types run by onnx's reference evaluator (`fallback="reference"`), with node counts.
    fallbacks: dict[str, int] = field(default_factory=dict)
    #: Nodes computed when the model was read (shape arithmetic, constants' transposes, ...).
    folded: int = 0
    #: The ModelProto it was read from, and how (`with_inputs` reads it again).
    _proto: Any = field(default=None, repr=False)
    _options: dict[str, Any] = field(default_factory=dict, repr=False)
    _sessions: dict[tuple, Session] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def session(self, config: Config | None = None) -> Session:
        """The model's session for `config` (made once; the model closes it)."""
        config = config or Config()
        key = tuple(sorted(config.as_dict().items(), key=lambda item: item[0]))
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                session = self._sessions[key] = Session(self.graph, config)
            return session

    def feeds(self, values: Mapping[str, Any]) -> dict[Tensor, np.ndarray]:
        """`{ONNX input name: array}` as a feed dict; every input is needed, none unknown."""
        unknown = sorted(set(values) - set(self.inputs))
        if unknown:
            raise GraphError(
                f"{self.source}: no input named {unknown}; inputs: {list(self.inputs)}"
            )
        missing = [name for name in self.inputs if name not in values]
        if missing:
            raise GraphError(
                f"{self.source}: inputs {missing} not given; inputs: {list(self.inputs)}"
            )
        return {self.inputs[name]: values[name] for name in self.inputs}

    def run(
        self,
        feeds: Mapping[str, Any],
        config: Config | None = None,
        trace: bool = False,
    ) -> Any:
        """`{output name: array}` for `{input name: array}` (and the Trace when `trace`)."""
        names = list(self.outputs)
        values = self.session(config).run(
            [self.outputs[n] for n in names], feed_dict=self.feeds(feeds), trace=trace
        )
        if trace:
            results, run_trace = values
            return dict(zip(names, results)), run_trace
        return dict(zip(names, values))

    def model_bytes(self) -> bytes:
        """The model as ONNX bytes (what ONNX Runtime is given beside it)."""
        return self._proto.SerializeToString()

    def with_inputs(self, feeds: Mapping[str, Any]) -> OnnxModel:
        """The same model with its inputs bound to `feeds` as constants: a graph that runs
        without a feed dict (what `pg.sweep` and the dashboard measure)."""
        from . import read_model

        self.feeds(feeds)  # every input given, none unknown
        options = self._options
        return read_model(
            self._proto,
            self.source,
            options["label"],
            options["shapes"],
            options["fallback"],
            options["device"],
            constants=feeds,
        )

    def compare_onnxruntime(self, feeds: Mapping[str, Any] | None = None, **options: Any) -> Any:
        """This model and ONNX Runtime on the same file and inputs, side by side
        (`onnx.compare.compare_onnxruntime`: settings, repeats, warmup, progress)."""
        from .compare import compare_onnxruntime

        return compare_onnxruntime(self, feeds, **options)

    def example_feeds(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Random inputs of the right shapes and dtypes (ints in [0, 10), bools half True)."""
        rng = np.random.default_rng(seed)
        feeds = {}
        for name, tensor in self.inputs.items():
            shape, dtype = tensor.shape, tensor.dtype
            if dtype.kind == "f":
                feeds[name] = rng.standard_normal(shape).astype(dtype)
            elif dtype.kind == "b":
                feeds[name] = rng.random(shape) < 0.5
            else:
                feeds[name] = rng.integers(0, 10, shape).astype(dtype)
        return feeds

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.close()

    def __enter__(self) -> OnnxModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        extra = (
            f", {sum(self.fallbacks.values())} node(s) in onnx's reference evaluator"
            if self.fallbacks
            else ""
        )
        return (
            f"<OnnxModel {self.source}: {len(self.graph)} ops, inputs {list(self.inputs)}, "
            f"outputs {list(self.outputs)}{extra}>"
        )
