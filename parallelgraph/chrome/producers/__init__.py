"""One small module per tool that writes trace-event JSON, each knowing its tool's conventions.

Tried in this order; the first whose `detect` says yes converts the file:

| module | `Trace.source` | recognised by |
|---|---|---|
| `parallelgraph` | parallelgraph | `otherData.format` is ours |
| `tensorflow` | tensorflow | "... Compute" device processes with "Op" events |
| `pytorch` | pytorch | Kineto categories (cpu_op, user_annotation, kernel...) |
| `tf_profiler` | tf_profiler | "/host:CPU" with TF op events (`long_name` "net1/MatMul:MatMul") |
| `jax` | jax | XLA's processes ("/host:CPU", "/device:...") and TraceMe events |
| `onnxruntime` | onnxruntime | lists of `Session` spans and `Node` "*_kernel_time" events |
| `paddle` | paddle | tids "<tid>(Python)"/"<tid>(C++)" with Paddle's categories (Operator...) |
| `ray` | ray | tids "worker:<hex>"/"driver:<hex>" with Ray's categories (task::NAME...) |
| `pyspy` | py-spy | B/E events with cat "py-spy" (sampled stacks) |
| `python` | python | viztracer's and other Python tracers' "file.py:line" events |
| `generic` | trace-event | anything else |

`xla` holds what JAX's and TensorFlow 2's files share (both are XLA's profiler's trace viewer
JSON): device processes, stream threads, hashed thread names. See `base` for what a module
defines, and each module's docstring for its rules: which events
are ops and which are the profiler's own, what a scope is, which lanes are threads or streams,
and what its users call the settings `explain()` advises on (`SettingWords`).
"""

from __future__ import annotations

from ..document import Document
from . import (
    generic,
    jax,
    onnxruntime,
    paddle,
    parallelgraph,
    pyspy,
    python,
    pytorch,
    ray,
    tensorflow,
    tf_profiler,
)
from .base import Producer, SettingWords

PRODUCERS: tuple[Producer, ...] = (
    parallelgraph.PRODUCER,
    tensorflow.PRODUCER,
    pytorch.PRODUCER,
    tf_profiler.PRODUCER,  # before jax: TF2's files also have XLA's "/host:CPU" process
    jax.PRODUCER,
    onnxruntime.PRODUCER,
    paddle.PRODUCER,
    ray.PRODUCER,
    pyspy.PRODUCER,
    python.PRODUCER,
    generic.PRODUCER,
)


def detect_producer(document: Document) -> Producer:
    """The first producer that recognises `document` (the generic one always does)."""
    return next(producer for producer in PRODUCERS if producer.detect(document))


def knobs_for(source: str, executor: str | None = None) -> SettingWords:
    """The words for `Trace.source`'s settings (the generic ones for an unknown source); for
    our own traces, those of the `executor` that ran them (a cluster's workers)."""
    from ...executors.registry import find_executor  # reading a trace loads no executor

    spec = find_executor(executor)
    if source == "parallelgraph" and spec is not None and spec.distributed:
        return parallelgraph.DASK_KNOBS
    return next((p.knobs for p in PRODUCERS if p.name == source), generic.KNOBS)
