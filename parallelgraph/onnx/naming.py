"""Scopes and op names from an ONNX node, so the timeline and explain() speak of the user's own
modules.

PyTorch's two exporters say where a node came from differently:
- the TorchScript exporter (`dynamo=False`) names nodes by module path: `/head0/q/MatMul` is the
  MatMul of module `head0.q`: scope `head0/q`, op `MatMul`;
- the dynamo exporter (torch 2.x's default) names them `node_MatMul_1` and keeps the path in the
  node's `metadata_props["pkg.torch.onnx.name_scopes"]`, a list such as
  `['', 'head0', 'head0.q', 'linear']` (the root, the modules, the call): scope `head0/q`.
tf2onnx and hand-written models use `/`-separated names, read like the first. Scope parts are
made of the characters a scope may hold (`pg.scope`): anything else becomes `_`.
"""

from __future__ import annotations

import ast
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
NAME_SCOPES = "pkg.torch.onnx.name_scopes"


def _safe(part: str) -> str:
    return _UNSAFE.sub("_", part) or "_"


def scope_of(node: object) -> str:
    """The scope of an ONNX NodeProto (module docstring); "" for the root."""
    metadata = {p.key: p.value for p in getattr(node, "metadata_props", ())}
    if NAME_SCOPES in metadata:
        try:
            scopes = [s for s in ast.literal_eval(metadata[NAME_SCOPES]) if s][:-1]
        except (ValueError, SyntaxError):
            scopes = []
        return "/".join(_safe(part) for part in scopes[-1].split(".")) if scopes else ""
    name = node.name  # type: ignore[attr-defined]
    if "/" not in name.strip("/"):
        return ""
    return "/".join(_safe(part) for part in name.strip("/").split("/")[:-1] if part)


def op_name(node: object) -> str:
    """The name of the node's op inside its scope: the last part of a path-like name, else its
    op type (the graph numbers repeats: MatMul, MatMul_1, ...)."""
    name = node.name  # type: ignore[attr-defined]
    op_type = node.op_type  # type: ignore[attr-defined]
    if "/" in name:
        return _safe(name.rstrip("/").rsplit("/", 1)[-1])
    return _safe(op_type)
