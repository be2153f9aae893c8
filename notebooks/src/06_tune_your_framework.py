# %% [markdown]
# # 06 · Tune the threads of your own framework
#
# The person who asked *"what do `inter_op_parallelism_threads` and
# `intra_op_parallelism_threads` mean — my experiments gave inconsistent results"* was tuning
# **TensorFlow**. Measuring a framework's thread settings honestly is hard by hand: TensorFlow's
# pools are fixed by the first op of a process, `torch.set_num_interop_threads` must come
# before any parallel work, JAX reads its XLA flags when it is imported, ONNX Runtime's options
# belong to each session, and BLAS/OpenMP pools sit under all of them. One process per setting,
# warmed up, timed in rounds interleaved with the other settings, with honest statistics — that
# is what `pg.sweep(build, framework=...)` does:
#
# - you write `build(setting)`: build the model with `setting`'s knobs and return `step`, one
#   inference or training step;
# - parallelgraph starts one worker process per setting, sets the framework's knobs **before**
#   the framework starts, reads back what the framework says it uses, warms up, and times
#   `step()` in interleaved rounds (the function travels by value, so a notebook cell is fine);
# - with `trace=True` it traces one step per setting with the framework's own profiler, and
#   `explain()` reads it in the framework's words; `verify()` then **runs** the advised setting
#   and says whether it helped.
#
# Here on ONNX Runtime (a small install: `pip install onnxruntime onnx`), then on PyTorch and
# TensorFlow 2 — live if they are installed, else the sweeps recorded on a 2-core machine.

# %%
import importlib.util

import parallelgraph as pg
from parallelgraph.frameworks.examples import two_branch_onnx

# %% [markdown]
# ## The seed graph on ONNX Runtime
#
# Two independent subnetworks, `net1` and `net2` (MatMul → ReLU → MatMul each), summed: the
# model is written with `onnx.helper` by `two_branch_onnx`. `setting.session(model)` makes the
# `InferenceSession` with the setting's `SessionOptions` (inter- and intra-op threads, and the
# execution mode: `ORT_PARALLEL` exactly when `inter > 1`, since `ORT_SEQUENTIAL` ignores the
# inter-op pool).


# %%
def build(setting):
    import numpy as np

    session = setting.session(two_branch_onnx(setting.batch, 512))
    rng = np.random.default_rng(0)
    feeds = {
        name: rng.standard_normal((setting.batch, 512)).astype(np.float32)
        for name in ("x_net1", "x_net2")
    }
    return lambda: session.run(None, feeds)


result = pg.sweep(
    build, framework="onnxruntime", inter=[1, 2], intra=[1, 2], batch=[128], repeats=10,
    trace=True, progress=False,
)  # fmt: skip
result

# %% [markdown]
# Every row is a median of 10 steps with its 95% bootstrap interval; a verdict ("faster",
# "slower") is given only when the speed-up's interval excludes 1.0, and the note under the
# table says when the machine was noisy or busy. What each worker's ONNX Runtime reported it
# used — the knobs did take effect, and the pools' OS threads show it:

# %%
for index, cell in enumerate(result.cells):
    print(cell, "->", result.read_back[index])

# %%
result.heatmap()

# %% [markdown]
# ## Why, from ONNX Runtime's own trace — and the advice, measured
#
# One step per setting was traced with ONNX Runtime's profiler (`enable_profiling`). The
# baseline's trace, explained in ONNX Runtime's words:

# %%
print(result.explain())

# %%
result.median_trace(inter=1, intra=1).plot()

# %% [markdown]
# The advice is only a reading of the trace. `verify()` turns it into a setting, starts two
# fresh workers — the traced setting and the advised one — and times them interleaved. It says
# what it measured, with its interval, against what the replay of the trace predicted:

# %%
print(result.verify(repeats=10))

# %% [markdown]
# ## PyTorch and TensorFlow 2
#
# The same graph, written in each framework (`parallelgraph.frameworks.examples`; a build
# function in a module of your own works as well as one in a cell). PyTorch runs eager ops one
# at a time on the calling thread, so the branches are forked (`torch.jit.fork`, inside
# TorchScript) to give the inter-op pool something to run side by side; TensorFlow's executor
# runs a `tf.function`'s independent ops on its inter-op pool by itself.


# %%
import inspect

from parallelgraph.frameworks import examples

print(inspect.getsource(examples.build_pytorch))
print(inspect.getsource(examples.build_tensorflow))

# %% [markdown]
# Swept live where the framework is installed (TensorFlow's traces also need `xprof`, which
# turns its `.xplane.pb` into the trace viewer's JSON); otherwise the sweep, explanation and
# verification recorded on a 2-core machine are shown (`parallelgraph.recorded`).

# %%
from parallelgraph.recorded import framework_sweep

for name, build_fn, module in (
    ("pytorch", examples.build_pytorch, "torch"),
    ("tensorflow", examples.build_tensorflow, "tensorflow"),
):
    if importlib.util.find_spec(module) is not None:
        swept = pg.sweep(
            build_fn, framework=name, inter=[1, 2], intra=[1, 2], batch=[128], width=[512],
            repeats=10,
            trace=importlib.util.find_spec("xprof") is not None or name != "tensorflow",
            progress=False,
        )  # fmt: skip
        print(f"== {name}, measured now\n{swept}")
        if swept.traces:
            print(swept.explain())
            print(swept.verify(repeats=10))
    else:
        recorded = framework_sweep(name)
        print(f"== {name}: not installed here; recorded {recorded.when} ({recorded.versions})")
        print(recorded.result)
        print(recorded.explanation)
        print(recorded.verification)
        print()

# %% [markdown]
# ## What it costs, and what it cannot do
#
# A worker starts in 0.5-4 s (the framework's import dominates) and all start together; a
# timed step costs what the same step costs in a bare loop (`perf_counter_ns` around `step()`
# and nothing else inside the timed span), the round trip to the worker is outside it:
# `benchmarks/framework_sweep.py` has the numbers. Only one worker runs at a time, and a short
# pause after each one's turn lets its pool threads stop spinning before the next starts.
#
# The replay's prediction is a model of parallelgraph's own executor applied to the framework's
# trace: it knows program order and the ops' measured times, not how a framework splits one op
# over intra-op threads — so for intra-op advice the measurement, not the prediction, is the
# answer. That is why `verify()` exists.
