"""The peers' side of benchmarks/architectures.py: the seven architectures of `pg.models` as
PyTorch `nn.Module`s (eager), and those modules exported to ONNX Runtime.

Each module is built from parallelgraph's own variable values (a dict of full variable names,
"attention/head0/q/w", to arrays), so it has the same shapes and the same structure branch by
branch (each head its own q, k, v Linear; each inception branch its own convolutions; each
expert, member and tower its own MLP), and its output can be checked against parallelgraph's
before anything is timed. Images are NCHW in PyTorch (its default; `channels_last` is a
variant) and NHWC in parallelgraph: `TorchCase` converts the input once, outside the timing,
and the output back for the check.

Neither torch nor onnxruntime is a dependency of parallelgraph: `versions()` says what is
importable, and the main script prints "not installed" for what is not.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: The arrays each architecture's forward takes, by parallelgraph op name, in order.
INPUTS: dict[str, tuple[str, ...]] = {
    "attention": ("x",),
    "inception": ("x",),
    "resnet": ("x",),
    "wide_and_deep": ("wide_features", "ids"),
    "two_tower": ("user", "item"),
    "mixture_of_experts": ("x",),
    "ensemble": ("x",),
}
#: Architectures on NHWC images (converted to NCHW for PyTorch and ONNX Runtime).
IMAGES = ("inception", "resnet")


def versions() -> dict[str, str | None]:
    """torch's and onnxruntime's versions (None: not importable)."""
    found: dict[str, str | None] = {}
    for module in ("torch", "onnxruntime", "onnx"):
        try:
            found[module] = __import__(module).__version__
        except Exception:  # noqa: BLE001  (any import failure means "not installed")
            found[module] = None
    return found


# -- the modules --------------------------------------------------------------------------------
def _modules() -> Any:
    """The nn.Module classes (defined on first use: torch is imported only when installed)."""
    import torch
    from torch import nn
    from torch.nn import functional

    def tensor(array: np.ndarray) -> Any:
        return torch.from_numpy(np.ascontiguousarray(array))

    def linear(weights: dict[str, np.ndarray], prefix: str) -> nn.Linear:
        w, b = weights[f"{prefix}/w"], weights[f"{prefix}/b"]
        layer = nn.Linear(w.shape[0], w.shape[1])
        layer.weight.data = tensor(w.T)
        layer.bias.data = tensor(b)
        return layer

    class MLP(nn.Module):
        """pg.models.mlp: dense{i} layers, relu between them, the last one linear."""

        def __init__(self, weights: dict[str, np.ndarray], prefix: str):
            super().__init__()
            count = 0
            while f"{prefix}/dense{count}/w" in weights:
                count += 1
            self.layers = nn.ModuleList(linear(weights, f"{prefix}/dense{i}") for i in range(count))

        def forward(self, x: Any) -> Any:
            for index, layer in enumerate(self.layers):
                x = layer(x)
                if index < len(self.layers) - 1:
                    x = functional.relu(x)
            return x

    def conv(weights: dict[str, np.ndarray], prefix: str) -> nn.Conv2d:
        """A SAME, stride-1, bias-free convolution of HWIO `prefix/filters`."""
        filters = weights[f"{prefix}/filters"]
        size, _, inputs, outputs = filters.shape
        layer = nn.Conv2d(inputs, outputs, size, padding=size // 2, bias=False)
        layer.weight.data = tensor(filters.transpose(3, 2, 0, 1))
        return layer

    def norm(weights: dict[str, np.ndarray], prefix: str) -> nn.BatchNorm2d:
        mean = weights[f"{prefix}/mean"]
        layer = nn.BatchNorm2d(mean.shape[0], eps=1e-5)  # pg.batch_norm's epsilon
        layer.running_mean.data = tensor(mean)
        layer.running_var.data = tensor(weights[f"{prefix}/variance"])
        layer.bias.data = tensor(weights[f"{prefix}/offset"])
        layer.weight.data = tensor(weights[f"{prefix}/scale"])
        return layer.eval()

    class Attention(nn.Module):
        def __init__(self, weights: dict[str, np.ndarray], heads: int, **_: int):
            super().__init__()
            head = "attention/head{}/{}"
            self.q = nn.ModuleList(linear(weights, head.format(i, "q")) for i in range(heads))
            self.k = nn.ModuleList(linear(weights, head.format(i, "k")) for i in range(heads))
            self.v = nn.ModuleList(linear(weights, head.format(i, "v")) for i in range(heads))
            self.out = linear(weights, "attention/out")
            self.scale = 1.0 / math.sqrt(weights["attention/head0/q/w"].shape[1])

        def forward(self, x: Any) -> Any:
            outputs = []
            for q, k, v in zip(self.q, self.k, self.v):
                scores = torch.matmul(q(x), k(x).transpose(-1, -2)) * self.scale
                outputs.append(torch.matmul(torch.softmax(scores, dim=-1), v(x)))
            merged = torch.cat(outputs, dim=-1) if len(outputs) > 1 else outputs[0]
            return self.out(merged)

    class Inception(nn.Module):
        def __init__(self, weights: dict[str, np.ndarray], branches: int, **_: int):
            super().__init__()
            from parallelgraph.models.architectures import INCEPTION_BRANCHES

            self.branches = nn.ModuleList()
            for index in range(branches):
                label, layers = INCEPTION_BRANCHES[min(index, len(INCEPTION_BRANCHES) - 1)]
                if index >= len(INCEPTION_BRANCHES):
                    label, layers = f"branch_3x3_{index}", INCEPTION_BRANCHES[1][1]
                steps: list[nn.Module] = []
                for step, (kind, size) in enumerate(layers):
                    if kind == "pool":  # SAME padding of a max pool: -inf, as torch pads
                        steps.append(nn.MaxPool2d(size, 1, padding=size // 2))
                    else:
                        prefix = f"inception/{label}/conv{size}x{size}_{step}"
                        steps += [conv(weights, prefix), nn.ReLU()]
                self.branches.append(nn.Sequential(*steps))

        def forward(self, x: Any) -> Any:
            outputs = [branch(x) for branch in self.branches]
            return torch.cat(outputs, dim=1) if len(outputs) > 1 else outputs[0]

    class ResNet(nn.Module):
        def __init__(self, weights: dict[str, np.ndarray], **_: int):
            super().__init__()
            self.conv1, self.bn1 = (
                conv(weights, "resnet/main/conv1"),
                norm(weights, "resnet/main/conv1/bn"),
            )
            self.conv2, self.bn2 = (
                conv(weights, "resnet/main/conv2"),
                norm(weights, "resnet/main/conv2/bn"),
            )
            self.projection = None
            if "resnet/shortcut/projection/filters" in weights:
                self.projection = nn.Sequential(
                    conv(weights, "resnet/shortcut/projection"),
                    norm(weights, "resnet/shortcut/projection/bn"),
                )

        def forward(self, x: Any) -> Any:
            y = self.bn2(self.conv2(functional.relu(self.bn1(self.conv1(x)))))
            shortcut = x if self.projection is None else self.projection(x)
            return functional.relu(y + shortcut)

    class WideAndDeep(nn.Module):
        def __init__(self, weights: dict[str, np.ndarray], **_: int):
            super().__init__()
            self.wide = linear(weights, "wide_and_deep/wide/linear")
            self.embeddings = nn.Embedding.from_pretrained(
                tensor(weights["wide_and_deep/deep/embeddings"])
            )
            self.deep = MLP(weights, "wide_and_deep/deep/mlp")

        def forward(self, wide: Any, ids: Any) -> Any:
            flat = self.embeddings(ids).reshape(ids.shape[0], -1)
            return torch.sigmoid(self.wide(wide) + self.deep(flat))

    class TwoTower(nn.Module):
        def __init__(self, weights: dict[str, np.ndarray], **_: int):
            super().__init__()
            self.user = MLP(weights, "two_tower/user_tower")
            self.item = MLP(weights, "two_tower/item_tower")

        def forward(self, user: Any, item: Any) -> Any:
            return (self.user(user) * self.item(item)).sum(dim=-1)

    class MixtureOfExperts(nn.Module):
        def __init__(self, weights: dict[str, np.ndarray], experts: int, top: int = 0, **_: int):
            super().__init__()
            self.gate = linear(weights, "moe/gate/logits")
            self.experts = nn.ModuleList(MLP(weights, f"moe/expert{i}/mlp") for i in range(experts))
            self.top = top if 0 < top < experts else 0

        def forward(self, x: Any) -> Any:
            gates = torch.softmax(self.gate(x), dim=-1)
            if self.top:
                values = torch.topk(gates, self.top, dim=-1).values
                kept = torch.where(gates >= values[:, self.top - 1 : self.top], gates, 0.0)
                gates = kept / kept.sum(dim=-1, keepdim=True)
            total = None
            for index, expert in enumerate(self.experts):
                output = expert(x) * gates[:, index : index + 1]
                total = output if total is None else total + output
            return total

    class Ensemble(nn.Module):
        def __init__(self, weights: dict[str, np.ndarray], members: int, **_: int):
            super().__init__()
            self.members = nn.ModuleList(
                MLP(weights, f"ensemble/member{i}") for i in range(members)
            )

        def forward(self, x: Any) -> Any:
            total = None
            for member in self.members:
                output = member(x)
                total = output if total is None else total + output
            return total * (1.0 / len(self.members))

    return {
        "attention": Attention,
        "inception": Inception,
        "resnet": ResNet,
        "wide_and_deep": WideAndDeep,
        "two_tower": TwoTower,
        "mixture_of_experts": MixtureOfExperts,
        "ensemble": Ensemble,
    }


# -- cases to time ------------------------------------------------------------------------------
@dataclass
class PeerCase:
    """One peer setting: `step()` runs one forward and returns its seconds."""

    label: str
    step: Callable[[], float]
    #: The forward's output in parallelgraph's layout (for the check).
    output: Callable[[], np.ndarray]
    notes: list[str] = field(default_factory=list)


def _to_peer_layout(name: str, arrays: list[np.ndarray]) -> list[np.ndarray]:
    if name in IMAGES:  # NHWC -> NCHW
        return [np.ascontiguousarray(a.transpose(0, 3, 1, 2)) for a in arrays]
    return [np.ascontiguousarray(a) for a in arrays]


def _to_pg_layout(name: str, array: np.ndarray) -> np.ndarray:
    return array.transpose(0, 2, 3, 1) if name in IMAGES else array


def torch_module(name: str, params: dict[str, int], weights: dict[str, np.ndarray]) -> Any:
    """The eval-mode nn.Module of architecture `name` with parallelgraph's weights."""
    return _modules()[name](weights, **params).eval()


def torch_cases(
    name: str,
    params: dict[str, int],
    weights: dict[str, np.ndarray],
    inputs: list[np.ndarray],
    threads: tuple[int, ...] = (1, 2),
) -> list[PeerCase]:
    """PyTorch eager under inference_mode at each intra-op thread count (set before every step;
    eager runs one op at a time, so its inter-op pool plays no part), and for the image
    architectures also in channels_last memory format."""
    import torch

    module = torch_module(name, params, weights)
    args = [torch.from_numpy(a) for a in _to_peer_layout(name, inputs)]
    variants = [("", module, args)]
    if name in IMAGES:
        last = torch_module(name, params, weights).to(memory_format=torch.channels_last)
        last_args = [a.contiguous(memory_format=torch.channels_last) for a in args]
        variants.append((" channels_last", last, last_args))
    cases = []
    for count in threads:
        for suffix, model, model_args in variants:

            def step(
                model: Any = model, model_args: list = model_args, count: int = count
            ) -> float:
                torch.set_num_threads(count)
                with torch.inference_mode():
                    start = time.perf_counter()
                    model(*model_args)
                    return time.perf_counter() - start

            def output(model: Any = model, model_args: list = model_args) -> np.ndarray:
                with torch.inference_mode():
                    return _to_pg_layout(name, model(*model_args).numpy())

            cases.append(
                PeerCase(f"{count} thread{'s' if count > 1 else ''}{suffix}", step, output)
            )
    return cases


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """fd 2 to /dev/null inside the block (Kineto prints "profiler_start/stop" lines there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def torch_profile(
    name: str,
    params: dict[str, int],
    weights: dict[str, np.ndarray],
    inputs: list[np.ndarray],
    threads: int = 1,
    runs: int = 3,
    limit: int = 6,
) -> list[tuple[str, int, float]]:
    """PyTorch's profiler over `runs` forwards at `threads` (the image architectures in
    channels_last, their faster layout here): the `limit` aten ops with the most self CPU
    time, as (name, calls per run, self ms per run)."""
    import torch

    module = torch_module(name, params, weights)
    args = [torch.from_numpy(a) for a in _to_peer_layout(name, inputs)]
    if name in IMAGES:
        module = module.to(memory_format=torch.channels_last)
        args = [a.contiguous(memory_format=torch.channels_last) for a in args]
    torch.set_num_threads(threads)
    with torch.inference_mode(), _quiet_stderr():
        module(*args)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(runs):
                module(*args)
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:limit]
    return [(e.key, e.count // runs, e.self_cpu_time_total / 1e3 / runs) for e in rows]


def ort_cases(
    name: str,
    params: dict[str, int],
    weights: dict[str, np.ndarray],
    inputs: list[np.ndarray],
    directory: str,
) -> list[PeerCase]:
    """ONNX Runtime on the PyTorch module exported (`torch.onnx.export`, dynamo=False) to
    `directory`: ORT_ENABLE_ALL, intra-op 1 and 2 threads, ORT_SEQUENTIAL and ORT_PARALLEL
    (2 inter-op threads); thread spinning as ORT ships it (on)."""
    import onnxruntime as ort
    import torch

    module = torch_module(name, params, weights)
    peer_inputs = _to_peer_layout(name, inputs)
    names = [f"input{i}" for i in range(len(peer_inputs))]
    path = os.path.join(directory, f"{name}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy exporter's deprecation notice
        torch.onnx.export(
            module,
            tuple(torch.from_numpy(a) for a in peer_inputs),
            path,
            dynamo=False,
            input_names=names,
            output_names=["output"],
            opset_version=17,
        )
    feeds = dict(zip(names, peer_inputs))
    cases = []
    for mode, inter in (("sequential", 1), ("parallel", 2)):
        for intra in (1, 2):
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.intra_op_num_threads = intra
            options.inter_op_num_threads = inter
            options.execution_mode = (
                ort.ExecutionMode.ORT_PARALLEL
                if mode == "parallel"
                else ort.ExecutionMode.ORT_SEQUENTIAL
            )
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

            def step(session: Any = session) -> float:
                start = time.perf_counter()
                session.run(None, feeds)
                return time.perf_counter() - start

            def output(session: Any = session) -> np.ndarray:
                return _to_pg_layout(name, session.run(None, feeds)[0])

            label = f"{mode} inter {inter} intra {intra}" if inter > 1 else f"{mode} intra {intra}"
            cases.append(PeerCase(label, step, output))
    return cases


def temporary_directory() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="pg-architectures-")
