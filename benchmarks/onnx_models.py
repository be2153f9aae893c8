"""The architectures as PyTorch modules, written the way a user would (each independent branch a
named submodule), for `pg.from_onnx`: the committed ONNX fixtures (tests/fixtures/onnx/, made by
its make_fixtures.py at size "small") and the ONNX benchmark (benchmarks/onnx_vs_ort.py, size
"medium"). Needs torch (and transformers for `bert_tiny`): run it in the throwaway torch venv,
never in the project's own environment.

    build(name, size="medium") -> (module in eval mode, example inputs as a tuple of tensors)
    export(name, size="medium", folder=".", dynamo=False) -> path of the written .onnx file

Weights and inputs are seeded (`SEED`), so a module and its inputs are the same on every call.
BatchNorm layers get random affine parameters and running statistics (an eval-mode BatchNorm
with the default mean 0 / variance 1 would be nearly the identity and test nothing).

Sizes ("small": the fixtures; "medium": the benchmark):

    attention_heads      (2, 8, 32) 4 heads          | (16, 128, 256) 8 heads
    multihead_attention  (2, 8, 32) 4 heads          | (16, 128, 256) 8 heads
    inception            1x16x12x12, branch width 8  | 16x32x32x32, branch width 32
    resnet               1x3x16x16, 8/16 channels    | 8x3x32x32, 16/32 channels
    wide_and_deep        (4, 20) + ids (4, 5)        | (1024, 1000) + ids (1024, 26)
    mixture_of_experts   (8, 32), 4 experts of 64    | (1024, 256), 4 experts of 512
    mixture_of_experts_top2  the same, top-2 gates (torch.topk)
    ensemble             (8, 32), 3 MLPs of 32       | (1024, 256), 3 MLPs of 256
    bert_tiny            ids (1, 8), hidden 32       | ids (8, 128), hidden 256 (transformers)
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

SEED = 1234
SIZES = ("small", "medium")


class Head(nn.Module):
    """One attention head: softmax(q k^T / sqrt(d)) v with its own q, k, v projections."""

    def __init__(self, width: int, key_width: int):
        super().__init__()
        self.q = nn.Linear(width, key_width)
        self.k = nn.Linear(width, key_width)
        self.v = nn.Linear(width, key_width)
        self.scale = 1.0 / math.sqrt(key_width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(self.q(x), self.k(x).transpose(-2, -1)) * self.scale
        return torch.matmul(torch.softmax(scores, dim=-1), self.v(x))


class AttentionHeads(nn.Module):
    """Self-attention written as separate heads `head0`, `head1`, ..., concatenated, `out`."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        for index in range(heads):
            self.add_module(f"head{index}", Head(width, width // heads))
        self.out = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outputs = [getattr(self, f"head{index}")(x) for index in range(self.heads)]
        return self.out(torch.cat(outputs, dim=-1))


class MultiheadSelfAttention(nn.Module):
    """`nn.MultiheadAttention` used for self-attention, as users export it."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attention(x, x, x, need_weights=False)[0]


class ConvBN(nn.Sequential):
    """Convolution (no bias), BatchNorm, ReLU: the Inception-with-BN layer."""

    def __init__(self, channels: int, out: int, kernel: int, stride: int = 1):
        super().__init__(
            nn.Conv2d(channels, out, kernel, stride, kernel // 2, bias=False),
            nn.BatchNorm2d(out),
            nn.ReLU(),
        )


class Inception(nn.Module):
    """GoogLeNet's Inception block (NCHW): 1x1, 1x1 -> 3x3, 1x1 -> 5x5 and 3x3 max pool -> 1x1
    branches of `width` channels, concatenated along the channels."""

    def __init__(self, channels: int, width: int):
        super().__init__()
        self.branch_1x1 = ConvBN(channels, width, 1)
        self.branch_3x3 = nn.Sequential(ConvBN(channels, width, 1), ConvBN(width, width, 3))
        self.branch_5x5 = nn.Sequential(ConvBN(channels, width, 1), ConvBN(width, width, 5))
        self.branch_pool = nn.Sequential(nn.MaxPool2d(3, 1, 1), ConvBN(channels, width, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        branches = (self.branch_1x1, self.branch_3x3, self.branch_5x5, self.branch_pool)
        return torch.cat([branch(x) for branch in branches], dim=1)


class BasicBlock(nn.Module):
    """A ResNet basic block: relu(main(x) + shortcut(x)); the shortcut is a 1x1 convolution with
    BatchNorm where the channels or the stride change (work beside the main path)."""

    def __init__(self, channels: int, out: int, stride: int = 1):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(channels, out, 3, stride, 1, bias=False),
            nn.BatchNorm2d(out),
            nn.ReLU(),
            nn.Conv2d(out, out, 3, 1, 1, bias=False),
            nn.BatchNorm2d(out),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or channels != out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(channels, out, 1, stride, bias=False), nn.BatchNorm2d(out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.main(x) + self.shortcut(x))


class SmallResNet(nn.Module):
    """Stem conv, two basic blocks (the second with stride 2 and a projection shortcut), global
    average pool, a linear head."""

    def __init__(self, channels: int, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, channels, 3, 1, 1, bias=False), nn.BatchNorm2d(channels), nn.ReLU()
        )
        self.block1 = BasicBlock(channels, channels)
        self.block2 = BasicBlock(channels, 2 * channels, stride=2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(2 * channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block2(self.block1(self.stem(x)))
        return self.head(torch.flatten(self.pool(y), 1))


def mlp(sizes: list[int]) -> nn.Sequential:
    """Linear layers of the given widths with ReLU between them (none after the last)."""
    layers: list[nn.Module] = []
    for index, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(a, b))
        if index < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Deep(nn.Module):
    """Wide & Deep's deep tower: embeddings of the ids, flattened, through an MLP to 1."""

    def __init__(self, vocabulary: int, dim: int, fields: int, hidden: tuple[int, ...]):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, dim)
        self.mlp = mlp([fields * dim, *hidden, 1])

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.flatten(self.embedding(ids), 1))


class WideAndDeep(nn.Module):
    """sigmoid(wide(features) + deep(ids)): a linear model beside an embedding MLP."""

    def __init__(self, features: int, vocabulary: int, dim: int, fields: int, hidden: tuple):
        super().__init__()
        self.wide = nn.Linear(features, 1)
        self.deep = Deep(vocabulary, dim, fields, tuple(hidden))

    def forward(self, wide: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.wide(wide) + self.deep(ids))


class MixtureOfExperts(nn.Module):
    """A dense mixture of experts: a softmax `gate` weighs the outputs of every expert
    (`expert<i>`, width -> hidden -> width). With `top`, each row keeps its `top` largest gates
    (torch.topk), the others 0, renormalized, as a sparse MoE would route."""

    def __init__(self, width: int, experts: int, hidden: int, top: int = 0):
        super().__init__()
        self.experts, self.top = experts, top
        self.gate = nn.Linear(width, experts)
        for index in range(experts):
            self.add_module(f"expert{index}", mlp([width, hidden, width]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gates = torch.softmax(self.gate(x), dim=-1)
        if self.top:
            values, _ = torch.topk(gates, self.top, dim=-1)
            kept = torch.where(gates >= values[:, self.top - 1 :], gates, torch.zeros_like(gates))
            gates = kept / kept.sum(dim=-1, keepdim=True)
        weighted = [
            getattr(self, f"expert{index}")(x) * gates[:, index : index + 1]
            for index in range(self.experts)
        ]
        out = weighted[0]
        for term in weighted[1:]:
            out = out + term
        return out


class Ensemble(nn.Module):
    """`members` MLPs (`member<i>`) on the same input, their outputs averaged."""

    def __init__(self, width: int, members: int, hidden: int, outputs: int = 10):
        super().__init__()
        self.members = members
        for index in range(members):
            self.add_module(f"member{index}", mlp([width, hidden, hidden, outputs]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outputs = [getattr(self, f"member{index}")(x) for index in range(self.members)]
        return torch.stack(outputs).mean(dim=0)


def _bert(
    hidden: int, layers: int, heads: int, intermediate: int, vocabulary: int, positions: int
) -> nn.Module:
    from transformers import BertConfig, BertModel  # only this model needs transformers

    config = BertConfig(
        vocab_size=vocabulary,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=positions,
    )
    return BertModel(config)


class ByKeyword(nn.Module):
    """Calls a transformers model (as submodule `attribute`, e.g. `bert` like transformers' own
    task models) with its inputs by keyword and returns the named outputs as a tuple. Needed
    for the TorchScript exporter: it passes every forward parameter positionally (the defaults
    filled in), which transformers' forward wrappers reject ("BertModel.forward() got multiple
    values for argument 'use_cache'")."""

    def __init__(self, attribute: str, module: nn.Module, inputs, outputs):
        super().__init__()
        self.attribute, self.inputs, self.outputs = attribute, tuple(inputs), tuple(outputs)
        self.add_module(attribute, module)

    def forward(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        result = getattr(self, self.attribute)(**dict(zip(self.inputs, args)))
        return tuple(result[name] for name in self.outputs)


@dataclass(frozen=True)
class Spec:
    """A model: its factory per size, and its inputs as (name, shape, dtype, id range)."""

    description: str
    make: Callable[[dict], nn.Module]
    sizes: dict[str, dict]
    #: size -> [(input name, shape, "float32" | "int64" | "mask", high for int64 ids)]
    inputs: Callable[[dict], list[tuple[str, tuple[int, ...], str, int]]]
    outputs: tuple[str, ...] = ("y",)
    #: For the TorchScript exporter, wrap the module in `ByKeyword` under this attribute.
    torchscript_wrapper: str = ""


def _x(shape_key: str = "shape"):
    return lambda s: [("x", tuple(s[shape_key]), "float32", 0)]


MODELS: dict[str, Spec] = {
    "attention_heads": Spec(
        "self-attention as separate heads (head<i>: q/k/v Linear, softmax), concat, out",
        lambda s: AttentionHeads(s["shape"][-1], s["heads"]),
        {"small": dict(shape=(2, 8, 32), heads=4), "medium": dict(shape=(16, 128, 256), heads=8)},
        _x(),
    ),
    "multihead_attention": Spec(
        "nn.MultiheadAttention(batch_first=True) self-attention",
        lambda s: MultiheadSelfAttention(s["shape"][-1], s["heads"]),
        {"small": dict(shape=(2, 8, 32), heads=4), "medium": dict(shape=(16, 128, 256), heads=8)},
        _x(),
    ),
    "inception": Spec(
        "Inception block with BatchNorm (NCHW): 1x1, 1x1->3x3, 1x1->5x5, maxpool->1x1, concat",
        lambda s: Inception(s["shape"][1], s["width"]),
        {
            "small": dict(shape=(1, 16, 12, 12), width=8),
            "medium": dict(shape=(16, 32, 32, 32), width=32),
        },
        _x(),
    ),
    "resnet": Spec(
        "small ResNet: stem, basic block, basic block (stride 2, projection), avg pool, linear",
        lambda s: SmallResNet(s["channels"]),
        {
            "small": dict(shape=(1, 3, 16, 16), channels=8),
            "medium": dict(shape=(8, 3, 32, 32), channels=16),
        },
        _x(),
    ),
    "wide_and_deep": Spec(
        "Wide & Deep: linear on float features + MLP on nn.Embedding of int64 ids, sigmoid",
        lambda s: WideAndDeep(s["features"], s["vocabulary"], s["dim"], s["fields"], s["hidden"]),
        {
            "small": dict(batch=4, features=20, fields=5, vocabulary=50, dim=8, hidden=(32, 16)),
            "medium": dict(
                batch=1024, features=1000, fields=26, vocabulary=10000, dim=16, hidden=(512, 256)
            ),
        },
        lambda s: [
            ("wide", (s["batch"], s["features"]), "float32", 0),
            ("ids", (s["batch"], s["fields"]), "int64", s["vocabulary"]),
        ],
    ),
    "mixture_of_experts": Spec(
        "dense mixture of experts: softmax gate, expert<i> MLPs, gate-weighted sum",
        lambda s: MixtureOfExperts(s["shape"][-1], s["experts"], s["hidden"]),
        {
            "small": dict(shape=(8, 32), experts=4, hidden=64),
            "medium": dict(shape=(1024, 256), experts=4, hidden=512),
        },
        _x(),
    ),
    "mixture_of_experts_top2": Spec(
        "mixture of experts, each row's top-2 gates kept (torch.topk) and renormalized",
        lambda s: MixtureOfExperts(s["shape"][-1], s["experts"], s["hidden"], top=2),
        {
            "small": dict(shape=(8, 32), experts=4, hidden=64),
            "medium": dict(shape=(1024, 256), experts=4, hidden=512),
        },
        _x(),
    ),
    "ensemble": Spec(
        "3 MLP members (member<i>) on one input, torch.stack(...).mean(0)",
        lambda s: Ensemble(s["shape"][-1], s["members"], s["hidden"]),
        {
            "small": dict(shape=(8, 32), members=3, hidden=32),
            "medium": dict(shape=(1024, 256), members=3, hidden=256),
        },
        _x(),
    ),
    "bert_tiny": Spec(
        "transformers BertModel (random weights), input_ids + attention_mask",
        lambda s: _bert(**{k: v for k, v in s.items() if k not in ("batch", "seq")}),
        {
            "small": dict(
                batch=1,
                seq=8,
                hidden=32,
                layers=2,
                heads=4,
                intermediate=64,
                vocabulary=100,
                positions=32,
            ),
            "medium": dict(
                batch=8,
                seq=128,
                hidden=256,
                layers=4,
                heads=4,
                intermediate=1024,
                vocabulary=1000,
                positions=128,
            ),
        },
        lambda s: [
            ("input_ids", (s["batch"], s["seq"]), "int64", s["vocabulary"]),
            ("attention_mask", (s["batch"], s["seq"]), "mask", 0),
        ],
        ("last_hidden_state", "pooler_output"),
        torchscript_wrapper="bert",
    ),
}


def _randomize_batchnorm(module: nn.Module, generator: torch.Generator) -> None:
    for layer in module.modules():
        if isinstance(layer, nn.modules.batchnorm._BatchNorm):
            n = layer.num_features
            with torch.no_grad():
                layer.weight.copy_(1.0 + 0.2 * torch.randn(n, generator=generator))
                layer.bias.copy_(0.2 * torch.randn(n, generator=generator))
                layer.running_mean.copy_(0.2 * torch.randn(n, generator=generator))
                layer.running_var.copy_(0.5 + torch.rand(n, generator=generator))


def _inputs(spec: Spec, size: dict, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    tensors = []
    for _name, shape, dtype, high in spec.inputs(size):
        if dtype == "float32":
            tensors.append(torch.randn(shape, generator=generator, dtype=torch.float32))
        elif dtype == "mask":  # int64 attention mask: all ones but the last position of row 0
            mask = torch.ones(shape, dtype=torch.int64)
            if shape[-1] > 1:
                mask[0, -1] = 0
            tensors.append(mask)
        else:
            tensors.append(torch.randint(0, high, shape, generator=generator, dtype=torch.int64))
    return tuple(tensors)


def input_names(name: str, size: str = "medium") -> list[str]:
    spec = MODELS[name]
    return [entry[0] for entry in spec.inputs(spec.sizes[size])]


def output_names(name: str) -> list[str]:
    return list(MODELS[name].outputs)


def build(name: str, size: str = "medium") -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The module `name` at a named size, in eval mode, seeded, with its example inputs."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose from {sorted(MODELS)}")
    spec = MODELS[name]
    if size not in spec.sizes:
        raise ValueError(f"unknown size {size!r} for {name}; choose from {sorted(spec.sizes)}")
    torch.manual_seed(SEED)
    model = spec.make(spec.sizes[size])
    generator = torch.Generator().manual_seed(SEED + 1)
    _randomize_batchnorm(model, generator)
    return model.eval(), _inputs(spec, spec.sizes[size], generator)


def branches(model: nn.Module) -> list[str]:
    """The names of the module's top-level submodules (its branches, heads, towers)."""
    return [child for child, _ in model.named_children()]


def export(
    name: str,
    size: str = "medium",
    folder: str | os.PathLike = ".",
    dynamo: bool = False,
    dynamic_batch: bool = False,
    stem: str | None = None,
    optimize: bool = True,
    fold_batchnorm: bool = True,
) -> Path:
    """Export `build(name, size)` to `folder/<stem>.onnx` (stem: `name`, `name.dynamo` for the
    dynamo exporter) and return the path. Shapes are static but with `dynamic_batch`.

    dynamo=False: the TorchScript exporter at opset 17 (eval mode: it folds each BatchNorm into
    the convolution before it; fold_batchnorm=False exports with TrainingMode.PRESERVE, which
    keeps BatchNormalization nodes). dynamic_batch (TorchScript only): axis 0 of every input
    and output is the symbolic "batch". Models with `Spec.torchscript_wrapper` (BERT) are
    wrapped in `ByKeyword` for this exporter only: their node names gain that prefix
    (`/bert/encoder/...`).

    dynamo=True: the torch.export-based exporter at its default opset, weights inside the file;
    optimize=False skips its onnxscript optimizer (no constant folding, BatchNorm not fused).
    """
    model, inputs = build(name, size)
    spec = MODELS[name]
    stem = stem or (f"{name}.dynamo" if dynamo else name)
    path = Path(folder) / f"{stem}.onnx"
    names = input_names(name, size)
    kwargs = dict(input_names=names, output_names=output_names(name))
    if dynamo:
        if dynamic_batch or not fold_batchnorm:
            raise ValueError("dynamic_batch and fold_batchnorm are TorchScript exporter options")
        torch.onnx.export(
            model,
            inputs,
            str(path),
            dynamo=True,
            external_data=False,
            optimize=optimize,
            **kwargs,
        )
    else:
        if not optimize:
            raise ValueError("optimize is a dynamo exporter option")
        axes = None
        if dynamic_batch:
            axes = {n: {0: "batch"} for n in [*names, *output_names(name)]}
        if spec.torchscript_wrapper:
            model = ByKeyword(spec.torchscript_wrapper, model, names, output_names(name)).eval()
        mode = torch.onnx.TrainingMode.EVAL if fold_batchnorm else torch.onnx.TrainingMode.PRESERVE
        torch.onnx.export(
            model,
            inputs,
            str(path),
            dynamo=False,
            opset_version=17,
            dynamic_axes=axes,
            training=mode,
            **kwargs,
        )
    return path
