"""The seed's graph — two independent subnetworks, net1 and net2, summed — in each framework.

Each `build_*` is a build function for `pg.sweep(build, framework=...)`: it takes the worker's
`Setting` (its `batch` and `width` when the sweep names them) and returns the step. They are the
examples of the README and of notebook 06, and what the tests and
`benchmarks/framework_sweep.py` sweep. Each branch is MatMul -> ReLU -> MatMul on
`batch` x `width` float32 inputs, the same shape as `pg.presets` "two-networks".

The frameworks are imported inside the functions: only the worker that runs one needs it.
"""

from __future__ import annotations

from typing import Any

BATCH, WIDTH = 256, 512


def _shape(setting: Any) -> tuple[int, int]:
    return int(setting.get("batch", BATCH)), int(setting.get("width", WIDTH))


def two_branch_onnx(batch: int = BATCH, width: int = WIDTH, seed: int = 0) -> bytes:
    """The seed graph as an ONNX model (bytes), written with `onnx.helper`; node names carry
    the branch ("/net1/fc1/MatMul"), as torch's exporter writes them."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, weights, inputs, outputs = [], [], [], []
    for net in ("net1", "net2"):
        inputs.append(helper.make_tensor_value_info(f"x_{net}", TensorProto.FLOAT, [batch, width]))
        for layer in ("fc1", "fc2"):
            weight = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
            weights.append(numpy_helper.from_array(weight, f"{net}.{layer}.weight"))
        nodes += [
            helper.make_node("MatMul", [f"x_{net}", f"{net}.fc1.weight"], [f"{net}_h"],
                             name=f"/{net}/fc1/MatMul"),
            helper.make_node("Relu", [f"{net}_h"], [f"{net}_r"], name=f"/{net}/Relu"),
            helper.make_node("MatMul", [f"{net}_r", f"{net}.fc2.weight"], [f"{net}_y"],
                             name=f"/{net}/fc2/MatMul"),
        ]  # fmt: skip
    nodes.append(helper.make_node("Add", ["net1_y", "net2_y"], ["y"], name="/Add"))
    outputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, width]))
    graph = helper.make_graph(nodes, "two_branch", inputs, outputs, initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def build_onnxruntime(setting: Any) -> Any:
    """ONNX Runtime: one InferenceSession with the setting's options; step = one sess.run."""
    import numpy as np

    batch, width = _shape(setting)
    session = setting.session(two_branch_onnx(batch, width))
    rng = np.random.default_rng(1)
    feeds = {
        f"x_{net}": rng.standard_normal((batch, width)).astype(np.float32)
        for net in ("net1", "net2")
    }
    return lambda: session.run(None, feeds)


def build_pytorch(setting: Any) -> Any:
    """PyTorch: the branches as TorchScript functions run with torch.jit.fork (so inter-op
    threads can run them side by side; eager mode runs one op at a time)."""
    import torch

    batch, width = _shape(setting)
    torch.manual_seed(0)
    weights = [torch.randn(width, width) / width**0.5 for _ in range(4)]
    x1, x2 = torch.randn(batch, width), torch.randn(batch, width)

    @torch.jit.script
    def branch(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ w1) @ w2

    @torch.jit.script
    def two_branch(x1: torch.Tensor, x2: torch.Tensor, ws: list[torch.Tensor]) -> torch.Tensor:
        net1 = torch.jit.fork(branch, x1, ws[0], ws[1])
        net2 = branch(x2, ws[2], ws[3])
        return torch.jit.wait(net1) + net2

    def step() -> Any:
        with torch.no_grad():
            return two_branch(x1, x2, weights)

    return step


def build_tensorflow(setting: Any) -> Any:
    """TensorFlow 2: the graph as a tf.function (TF's executor runs independent ops on its
    inter-op pool)."""
    import tensorflow as tf

    batch, width = _shape(setting)
    tf.random.set_seed(0)
    weights = [tf.random.normal((width, width)) / width**0.5 for _ in range(4)]
    x1, x2 = tf.random.normal((batch, width)), tf.random.normal((batch, width))

    @tf.function
    def two_branch(x1: Any, x2: Any) -> Any:
        with tf.name_scope("net1"):
            net1 = tf.matmul(tf.nn.relu(tf.matmul(x1, weights[0])), weights[1])
        with tf.name_scope("net2"):
            net2 = tf.matmul(tf.nn.relu(tf.matmul(x2, weights[2])), weights[3])
        return net1 + net2

    return lambda: two_branch(x1, x2).numpy()


def build_jax(setting: Any) -> Any:
    """JAX: the jitted graph; with `devices=2` each branch's inputs live on their own CPU
    device, so XLA can run the branches side by side."""
    import jax
    import jax.numpy as jnp

    batch, width = _shape(setting)
    keys = jax.random.split(jax.random.PRNGKey(0), 6)
    devices = jax.devices()
    weights = [jax.random.normal(k, (width, width)) / width**0.5 for k in keys[:4]]
    x1, x2 = (jax.random.normal(k, (batch, width)) for k in keys[4:])

    @jax.jit
    def branch(x: Any, w1: Any, w2: Any) -> Any:
        return jnp.maximum(x @ w1, 0) @ w2

    placed = [jax.device_put(v, devices[0]) for v in (x1, weights[0], weights[1])]
    placed += [jax.device_put(v, devices[-1]) for v in (x2, weights[2], weights[3])]

    def step() -> Any:
        net1 = branch(*placed[:3])
        net2 = branch(*placed[3:])
        return (
            jax.device_put(net1, devices[0]) + jax.device_put(net2, devices[0])
        ).block_until_ready()

    return step


def build_numpy(setting: Any) -> Any:
    """NumPy: each branch on a thread of `setting.pool()` (inter threads); NumPy's matmul
    releases the GIL and uses the BLAS pool (intra threads, through threadpoolctl)."""
    import numpy as np

    batch, width = _shape(setting)
    rng = np.random.default_rng(0)
    weights = [
        (rng.standard_normal((width, width)) / width**0.5).astype(np.float32) for _ in range(4)
    ]
    x1, x2 = (rng.standard_normal((batch, width)).astype(np.float32) for _ in range(2))
    pool = setting.pool()

    def branch(x: Any, w1: Any, w2: Any) -> Any:
        return np.maximum(x @ w1, 0) @ w2

    def step() -> Any:
        net1 = pool.submit(branch, x1, weights[0], weights[1])
        net2 = pool.submit(branch, x2, weights[2], weights[3])
        return net1.result() + net2.result()

    return step


def __getattr__(name: str) -> Any:
    """`BUILDS`: each framework's example by its name, from the framework records
    (`knobs.Framework.example`), made on first use (the records import this module lazily)."""
    if name == "BUILDS":
        from .knobs import FRAMEWORKS

        return {key: f.example_build() for key, f in FRAMEWORKS.items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "build_jax",
    "build_numpy",
    "build_onnxruntime",
    "build_pytorch",
    "build_tensorflow",
    "two_branch_onnx",
]
