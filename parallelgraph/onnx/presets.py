"""An ONNX file as a preset: the model with seeded random inputs bound as constants, for the
CLI (`parallelgraph run model.onnx`), the dashboard (`pg.dashboard("model.onnx")`) and sweeps."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..experiments.preset_record import Preset
from ..scopes import branch_level


def parse_shapes(specs: list[str] | None) -> dict[str, tuple[int, ...] | int]:
    """`["x=8,32", "batch=4"]` -> {"x": (8, 32), "batch": 4} (an input's shape, or a symbolic
    dimension's size)."""
    shapes: dict[str, Any] = {}
    for spec in specs or []:
        name, _, sizes = spec.partition("=")
        if not name or not sizes:
            raise ValueError(f"--shape {spec!r}: write NAME=D1,D2,... or DIM=N")
        values = tuple(int(v) for v in sizes.split(",") if v.strip())
        shapes[name] = values if "," in sizes else values[0]
    return shapes


def onnx_preset(
    path: str,
    shapes: Mapping[str, Any] | None = None,
    fallback: str | None = None,
    device: str | None = None,
    seed: int = 0,
) -> tuple[Preset, Any, dict[str, Any]]:
    """(the preset, the `OnnxModel`, the inputs bound) of an ONNX file."""
    from . import from_onnx

    model = from_onnx(path, shapes=shapes, fallback=fallback, device=device)
    feeds = model.example_feeds(seed)
    bound = model.with_inputs(feeds)
    fetches = [bound.outputs[name] for name in model.outputs]
    fetch = fetches[0] if len(fetches) == 1 else fetches
    scopes = tuple(branch_level(op.scope for op in bound.graph.ops))
    text = f"{len(bound.graph)} ops, inputs {[f'{k} {list(v.shape)}' for k, v in feeds.items()]}"
    name = os.path.basename(path)
    return Preset(name, "file", bound.graph, fetch, text, scopes), model, feeds
