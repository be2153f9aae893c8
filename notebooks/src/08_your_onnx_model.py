# %% [markdown]
# # 08 · Your ONNX model on parallelgraph, with ONNX Runtime beside it
#
# The seed's question came from **TensorFlow** users: *"my two independent subnetworks do not
# run in parallel — why, and how can I make them?"* Many models now leave PyTorch as an
# **ONNX file**, and ONNX Runtime runs them. `pg.from_onnx("model.onnx")` reads such a file
# into a parallelgraph graph. Its scopes are **your modules**: `head0`, `branch_3x3`,
# `expert2` or whatever you named them. So the timeline colours your modules, and `explain()`
# says which of them ran side by side, and why the others did not. `compare_onnxruntime()`
# then runs the same file, on the same inputs, in ONNX Runtime, at the same thread settings,
# and puts the two side by side.
#
# This notebook:
#
# 1. loads a file exported from PyTorch and shows what became of it;
# 2. runs it with one and two inter-op threads, and explains the timelines;
# 3. compares it with ONNX Runtime: first the tiny fixture, then a model whose branches have
#    real work;
# 4. covers what real files bring: the dynamo exporter, a symbolic batch size, and an op type
#    parallelgraph has no converter for;
# 5. ends with what to take away.
#
# It needs `onnx` and `onnxruntime` (`pip install "parallelgraph[onnx]"`), but not torch. On a
# busy 2-core machine it runs in well under a minute.

# %%
import io
import os
import time
from functools import partial
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from IPython.display import Image, display
from onnx import TensorProto, helper, numpy_helper

import parallelgraph as pg
from parallelgraph.lab import branch_level, busy_note, measure_interleaved, median, speedup

# The models this notebook reads are the test fixtures of a parallelgraph checkout. Your own
# code would pass the path of your own file: pg.from_onnx("my_model.onnx").
FIXTURES = Path(pg.__file__).resolve().parent.parent / "tests" / "fixtures" / "onnx"
if not FIXTURES.is_dir():
    raise FileNotFoundError(f"{FIXTURES} is no folder: run this notebook from a checkout")
print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}; fixtures in {FIXTURES}")

# %% [markdown]
# ## 1. Where you start: a file exported from PyTorch
#
# The fixture `attention_heads.onnx` is self-attention written as four separate heads. Each
# head is a submodule with its own q, k and v projections, and the heads are concatenated and
# projected by `out`. It was made roughly like this (`tests/fixtures/onnx/make_fixtures.py`
# has the full script; torch is not needed here, so this cell is not run):
#
# ```python
# import math, torch
# from torch import nn
#
# class Head(nn.Module):
#     def __init__(self, width, key_width):
#         super().__init__()
#         self.q, self.k, self.v = (nn.Linear(width, key_width) for _ in range(3))
#         self.scale = 1.0 / math.sqrt(key_width)
#
#     def forward(self, x):
#         scores = self.q(x) @ self.k(x).transpose(-2, -1) * self.scale
#         return torch.softmax(scores, dim=-1) @ self.v(x)
#
# class AttentionHeads(nn.Module):
#     def __init__(self, width=32, heads=4):
#         super().__init__()
#         for i in range(heads):
#             self.add_module(f"head{i}", Head(width, width // heads))
#         self.out = nn.Linear(width, width)
#
#     def forward(self, x):
#         heads = [getattr(self, f"head{i}")(x) for i in range(4)]
#         return self.out(torch.cat(heads, dim=-1))
#
# model = AttentionHeads().eval()
# torch.onnx.export(model, (torch.randn(2, 8, 32),), "attention_heads.onnx",
#                   dynamo=False, opset_version=17, input_names=["x"], output_names=["y"])
# ```
#
# PyTorch's TorchScript exporter names each node after its module path, for example
# `/head0/q/MatMul`. `pg.from_onnx` turns that path into scope `head0/q` and op `MatMul`.

# %%
ATTENTION = FIXTURES / "attention_heads.onnx"  # your own: pg.from_onnx("my_model.onnx")
proto = onnx.load(ATTENTION)
model = pg.from_onnx(ATTENTION)
print(model)
print("inputs: ", {name: (t.shape, str(t.dtype)) for name, t in model.inputs.items()})
print("outputs:", {name: (t.shape, str(t.dtype)) for name, t in model.outputs.items()})
print("a few node names in the file:", [node.name for node in proto.graph.node[:4]])
print(
    f"{len(proto.graph.node)} ONNX nodes -> {len(model.graph)} parallelgraph ops "
    f"(a Softmax is several ops, and weights are constants); {model.folded} nodes folded"
)
scopes = branch_level(op.scope for op in model.graph.ops)
for scope in scopes:
    ops = [op.name for op in model.graph.ops if op.scope.split("/")[0] == scope]
    print(f"  {scope:6} {len(ops):2} ops, e.g. {', '.join(ops[:3])}")

# %% [markdown]
# **Folding.** When the file is read, every node whose inputs are already known is computed
# then, by onnx's reference evaluator. The exporters surround shapes with arithmetic
# (`Shape`, `Gather`, `Concat` and `Reshape` on constants), and folding leaves a static graph
# to run. This model has none of that. `nn.MultiheadAttention`, exported the same way, has
# some:

# %%
mha = pg.from_onnx(FIXTURES / "multihead_attention.onnx")
nodes = len(onnx.load(FIXTURES / "multihead_attention.onnx").graph.node)
print(f"multihead_attention.onnx: {nodes} nodes, {mha.folded} folded when read, {mha}")
mha.close()

# %% [markdown]
# ## 2. Run it: do the heads run side by side?
#
# `model.run(feeds, config, trace=True)` runs the model once. To measure it, we bind inputs
# to the model (`with_inputs`: the inputs become constants) and run it 7 times with one
# inter-op thread and 7 times with two, interleaved. Intra-op stays at 1, so each op uses one
# thread. The median runs are drawn on one time axis, and each head has its own colour.

# %%
feeds = model.example_feeds(seed=0)  # random inputs of the right shapes and dtypes
outputs, trace = model.run(feeds, pg.Config(inter_op_threads=2), trace=True)
print({name: value.shape for name, value in outputs.items()})

bound = model.with_inputs(feeds)
sessions = {
    f"inter-op {inter}": pg.Session(
        bound.graph, pg.Config(inter_op_threads=inter, intra_op_threads=1)
    )
    for inter in (1, 2)
}
runs = measure_interleaved(sessions, bound.outputs["y"], repeats=7, warmup=2)
for session in sessions.values():
    session.close()
for label, run in runs.items():
    print(
        f"{label}: median {run.median_ms:.3f} ms, head0/head1 overlap "
        f"{run.median_overlap('head0', 'head1'):.2f}"
    )
pg.plot.compare(
    [run.median_trace() for run in runs.values()],
    labels=list(runs),
    title="attention_heads.onnx (your modules head0..head3, out), inter-op 1 and 2",
)

# %% [markdown]
# `explain()` of the run with two inter-op threads compares the heads pair by pair. The line
# printed above the report lists the pairs that ran side by side in this run. At this size each op
# takes a few microseconds, and handing one to another thread costs more than that. Expect
# parallelgraph to run ops that short inline on one thread, as TensorFlow does: `explain()`
# says what happened in this run, and why.

# %%
report = runs["inter-op 2"].median_trace().explain()
side_by_side = [f"{p.scope_a}+{p.scope_b}" for p in report.pairs if p.overlapped]
print(f"modules that ran side by side: {', '.join(side_by_side) or 'none'}")
report

# %% [markdown]
# ## 3. ONNX Runtime beside it
#
# `model.compare_onnxruntime()` measures both engines on the same file and the same inputs:
#
# - parallelgraph runs the model with its inputs bound, a session a setting;
# - ONNX Runtime is run with the framework sweep of notebook 06. Each setting gets a worker
#   process of its own, and `SessionOptions` are set before the session is made:
#   `ORT_PARALLEL` with `inter_op_num_threads` where inter-op is above 1, otherwise
#   `ORT_SEQUENTIAL`, ORT's default.
# - Both are measured alike: each sample is the mean of 10 runs back to back (`steps=10`),
#   so what is timed is a warm engine, not the wake-up of threads that slept while the other
#   settings had their turn.
#
# Both engines run every setting in interleaved rounds. The table gives medians, and the last
# column gives parallelgraph's speed-up with its 95% interval, worded by the same rule as
# everywhere else. The last lines give each engine's best setting and the outputs' largest
# difference. The same is on offer outside Python: `pg.dashboard("model.onnx")` has a
# *Compare with ONNX Runtime* button, and the CLI has
# `parallelgraph run model.onnx --inter 2 --intra 1 --compare onnxruntime`.
#
# First, the fixture. Be warned: it is tiny, and ONNX Runtime runs it in tens of
# microseconds. At this size, the **fixed cost of a run** decides the times: entering the
# engine, dispatching each node, waking threads, and returning the results. The arithmetic
# of the model hardly matters. The cell after the table shows what that fixed cost is.

# %%
small = model.compare_onnxruntime(feeds, repeats=10)
print(small)
note = busy_note(small.theirs.machine)
if note:  # nothing is said on a quiet machine
    print(f"Busy machine while ONNX Runtime ran: {note}")

# %% [markdown]
# A single run after a pause would measure mostly the wake-up of idle pool threads
# (`ORT_PARALLEL`, with more threads to wake, most of all), which is why the comparison takes
# the mean of ten back-to-back runs. Here is what each engine costs when it runs **back to
# back and warm**, in this process, at inter-op 1 and 2 (intra-op 1). These numbers are the
# fixed cost of one run: ONNX Runtime's per-node dispatch is C++, and parallelgraph's is
# Python.


# %%
def back_to_back(step, steps=200):
    """The median ms of `steps` calls of `step()` back to back, after 10 warm-up calls."""
    for _ in range(10):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter_ns()
        step()
        times.append(time.perf_counter_ns() - start)
    return median(times) / 1e6


data = proto.SerializeToString()
for inter in (1, 2):
    options = ort.SessionOptions()
    options.inter_op_num_threads, options.intra_op_num_threads = inter, 1
    options.execution_mode = (
        ort.ExecutionMode.ORT_PARALLEL if inter > 1 else ort.ExecutionMode.ORT_SEQUENTIAL
    )
    ort_session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    ort_ms = back_to_back(partial(ort_session.run, None, feeds))
    del ort_session  # its threads end with it
    with pg.Session(bound.graph, pg.Config(inter_op_threads=inter, intra_op_threads=1)) as s:
        ours_ms = back_to_back(partial(s.run, bound.outputs["y"]))
    print(
        f"inter-op {inter}: ONNX Runtime {ort_ms * 1e3:4.0f} us a run "
        f"({len(proto.graph.node)} nodes, {ort_ms * 1e3 / len(proto.graph.node):.2f} us each), "
        f"parallelgraph {ours_ms * 1e3:4.0f} us a run "
        f"({len(bound.graph)} ops, {ours_ms * 1e3 / len(bound.graph):.2f} us each)"
    )

# %% [markdown]
# ### A model whose branches have real work
#
# For parallel branches to pay, each branch must have work worth handing to a thread. The next
# model is written with `onnx.helper`. It has four independent MLP branches on one input,
# each `x @ W1 -> Relu -> @ W2` with W1 of shape 256x512 and W2 of shape 512x256, for a batch
# of 512. The branches are summed at the end. The nodes are named as PyTorch's exporter would
# name them (`/branch0/fc1/MatMul`, ...), so the branches become scopes. `pg.from_onnx` also
# reads a `ModelProto` or bytes, so no file is written.

# %%
BRANCHES, BATCH, WIDTH, HIDDEN = 4, 512, 256, 512


def four_branches(seed=0):
    """Four independent MLP branches on one input, summed: a ModelProto."""
    rng = np.random.default_rng(seed)
    weights, nodes, ends = [], [], []
    for b in range(BRANCHES):
        for layer, shape in (("fc1", (WIDTH, HIDDEN)), ("fc2", (HIDDEN, WIDTH))):
            w = rng.standard_normal(shape) / np.sqrt(shape[0])
            weights.append(numpy_helper.from_array(w.astype(np.float32), f"branch{b}.{layer}"))
        fc1, fc2, p = f"branch{b}.fc1", f"branch{b}.fc2", f"/branch{b}"
        nodes += [  # named as PyTorch's exporter names a module's nodes
            helper.make_node("MatMul", ["x", fc1], [f"{p}/h"], name=f"{p}/fc1/MatMul"),
            helper.make_node("Relu", [f"{p}/h"], [f"{p}/a"], name=f"{p}/relu/Relu"),
            helper.make_node("MatMul", [f"{p}/a", fc2], [f"{p}/y"], name=f"{p}/fc2/MatMul"),
        ]
        ends.append(f"{p}/y")
    nodes.append(helper.make_node("Sum", ends, ["y"], name="/Sum"))
    graph = helper.make_graph(
        nodes,
        "four_branches",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (BATCH, WIDTH))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (BATCH, WIDTH))],
        weights,
    )
    made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(made)
    return made


big = pg.from_onnx(four_branches())
print(big, "scopes:", branch_level(op.scope for op in big.graph.ops))
big_feeds = big.example_feeds(seed=0)
large = big.compare_onnxruntime(big_feeds, repeats=12)
print(large)
note = busy_note(large.theirs.machine)
if note:
    print(f"Busy machine while ONNX Runtime ran: {note}")

# %% [markdown]
# Both runs at inter-op 2 and intra-op 1, on one time axis: one traced parallelgraph run, and
# the median sample of ONNX Runtime that its profiler traced. parallelgraph's lanes are its two
# inter-op threads. ONNX Runtime's lanes are the threads its profiler saw run nodes. The title
# gives the measured speed-up at this setting, and the one between each engine's best
# settings.
# (With the environment variable `PG_WRITE_DOCS=1`, this cell also writes the picture to
# `docs/onnx_compare.png` in the checkout, for the README. Otherwise it writes nothing.)

# %%
ours_ms, ort_ms = large.times_ms(2, 1)
ours_gain = speedup(ort_ms, ours_ms)  # parallelgraph's speed-up over ONNX Runtime
ours_best, ort_best, best_text = large.best()
figure = large.plot(2, 1)
figure.suptitle(
    f"{BRANCHES} independent MLP branches (batch {BATCH}, {WIDTH}x{HIDDEN}x{WIDTH}), "
    f"inter-op 2, intra-op 1\nparallelgraph against ONNX Runtime (ORT_PARALLEL), "
    f"medians of 12 runs: {ours_gain}\nbest against best (inter/intra: parallelgraph "
    f"{ours_best[0]}/{ours_best[1]}, ORT {ort_best[0]}/{ort_best[1]}): {best_text}",
    fontsize=10,
)
png = io.BytesIO()
figure.savefig(png, format="png", dpi=90)
if os.environ.get("PG_WRITE_DOCS") == "1":
    docs = Path(pg.__file__).resolve().parent.parent / "docs"
    if not docs.is_dir():
        raise FileNotFoundError(f"PG_WRITE_DOCS=1 but {docs} is no folder: run from a checkout")
    (docs / "onnx_compare.png").write_bytes(png.getvalue())
    print(f"wrote {docs / 'onnx_compare.png'}")
display(Image(png.getvalue()))

# %% [markdown]
# `explain()` of each run drawn above, in each engine's own words. parallelgraph's
# explanation names the branches that overlapped. ONNX Runtime's profiler trace shows **one
# node at a time**: since version 1.14, ONNX Runtime runs a CPU model's nodes one after
# another, even in `ORT_PARALLEL` mode (microsoft/onnxruntime#16158). Its inter-op threads
# have nothing to run side by side, and only `intra_op_num_threads`, which splits each node,
# is left.

# %%
ours_report, ort_report = large.explain(2, 1)
for engine, explained in (("parallelgraph", ours_report), ("ONNX Runtime", ort_report)):
    together = [f"{p.scope_a}+{p.scope_b}" for p in explained.pairs if p.overlapped]
    print(f"{engine}: branches that ran side by side: {', '.join(together) or 'none'}")
ours_report

# %%
ort_report

# %% [markdown]
# ## 4. What real files bring
#
# ### The dynamo exporter
#
# torch 2.x's default exporter (`torch.onnx.export(..., dynamo=True)`) names nodes
# `node_MatMul_1`, `node_linear`, and so on. The module path is kept in each node's metadata
# instead, under `pkg.torch.onnx.name_scopes`. `pg.from_onnx` reads the scopes from there, so
# the same module gives the same scopes. Both files hold the same seeded weights, so the two
# models give the same outputs up to float rounding:

# %%
DYNAMO = FIXTURES / "attention_heads.dynamo.onnx"
node = onnx.load(DYNAMO).graph.node[0]
metadata = {p.key: p.value for p in node.metadata_props}
print(f"first node: {node.name!r}, name_scopes {metadata['pkg.torch.onnx.name_scopes']}")
dynamo = pg.from_onnx(DYNAMO)
print("scopes:", branch_level(op.scope for op in dynamo.graph.ops))
difference = np.max(np.abs(dynamo.run(feeds)["y"] - outputs["y"]))
print(f"largest difference from the TorchScript export's output: {difference:.3g}")
dynamo.close()

# %% [markdown]
# ### A symbolic batch size
#
# Files exported with `dynamic_axes` have a named dimension (here `batch`), and parallelgraph
# plans a graph of fixed shapes. So the model is refused until the dimension is bound, with
# an error that says how to bind it. `shapes=` binds it, either by dimension name or by
# input. The fixture comes with ONNX Runtime's outputs for a recorded input, and we check
# against them:

# %%
DYNAMIC = FIXTURES / "ensemble.dynamic.onnx"
try:
    pg.from_onnx(DYNAMIC)
except pg.GraphError as error:
    print("refused:", error)
recorded = np.load(FIXTURES / "ensemble.dynamic.npz")
x = recorded["input:x"]
ensemble = pg.from_onnx(DYNAMIC, shapes={"batch": x.shape[0]})
print(ensemble, "x bound to", ensemble.inputs["x"].shape)
got = ensemble.run({"x": x})["y"]
difference = np.abs(got - recorded["output:y"]).max()
print(f"largest difference from ONNX Runtime's recorded output: {difference:.3g}")
ensemble.close()
with pg.from_onnx(DYNAMIC, shapes={"x": (64, x.shape[1])}) as wider:
    print("bound by input instead:", wider.inputs["x"].shape)

# %% [markdown]
# ### An op type parallelgraph has no converter for
#
# parallelgraph converts ONNX op types one by one into its own ops. For an op type it has no
# converter for, it refuses the model before anything runs, and lists every missing op type
# with its node count. The small "Fourier features" model below has a `sin` branch and a `cos`
# branch, concatenated. With `fallback="reference"`, such nodes run in onnx's reference
# evaluator (NumPy) instead: the results are correct, but each node runs as one shard, in
# Python, on the CPU. The model's `fallbacks` lists them, and `explain()` says so.


# %%
def fourier_features():
    """x -> (sin(x W), cos(x W)) concatenated: two branches, two op types without converter."""
    w = numpy_helper.from_array(np.random.default_rng(1).standard_normal((16, 32), np.float32), "w")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xw"], name="/proj/MatMul"),
        helper.make_node("Sin", ["xw"], ["s"], name="/sin_branch/Sin"),
        helper.make_node("Cos", ["xw"], ["c"], name="/cos_branch/Cos"),
        helper.make_node("Concat", ["s", "c"], ["y"], name="/Concat", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "fourier_features",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (8, 16))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (8, 64))],
        [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


try:
    pg.from_onnx(fourier_features())
except pg.GraphError as error:
    print("refused:", error)
features = pg.from_onnx(fourier_features(), fallback="reference")
print(features, "fallbacks:", features.fallbacks)
x = features.example_feeds(seed=0)["x"]
for _ in range(2):  # the first run loads the kernels; the second is the one explained
    values, fallback_trace = features.run({"x": x}, pg.Config(inter_op_threads=2), trace=True)
xw = x @ numpy_helper.to_array(fourier_features().graph.initializer[0])
expected = np.concatenate([np.sin(xw), np.cos(xw)], axis=-1)
print(f"largest difference from NumPy: {np.abs(values['y'] - expected).max():.3g}")
features.close()
fallback_trace.explain()

# %% [markdown]
# ## 5. What to take away
#
# The sentences below are computed from this run's measurements of the four-branch model:

# %%
for engine, pick in (("parallelgraph", 0), ("ONNX Runtime", 1)):
    one, two = large.times_ms(1, 1)[pick], large.times_ms(2, 1)[pick]
    print(f"{engine}, inter-op 2 against 1 (intra-op 1): {speedup(one, two)}")
    one, two = large.times_ms(1, 1)[pick], large.times_ms(1, 2)[pick]
    print(f"{engine}, intra-op 2 against 1 (inter-op 1): {speedup(one, two)}")
print(
    f"best settings: parallelgraph inter {ours_best[0]}, intra {ours_best[1]}; ONNX Runtime "
    f"inter {ort_best[0]}, intra {ort_best[1]}; parallelgraph's best against ORT's: {best_text}"
)
print(f"the outputs' largest difference: {large.difference:.3g}")
big.close()
bound.close()
model.close()

# %% [markdown]
# How to read it, whatever this machine measured:
#
# - **Your modules are the branches.** `pg.from_onnx` keeps the module path from either of
#   PyTorch's exporters. The timeline, `trace.overlap("head0", "head1")` and `explain()` speak
#   of `head0` and `branch2`, not of node 37.
# - **Size decides.** Branches of microsecond ops gain nothing from a second inter-op thread
#   in any engine: the hand-off costs more than the op. At the fixtures' size, both engines'
#   times are mostly the fixed cost of a run. Branches of milliseconds (the four-branch
#   model) can run side by side, and on 2 cores at most halve the time. They gain less when
#   another program wants those cores, or when the branches share memory bandwidth.
# - **ONNX Runtime on a CPU does not run independent nodes side by side** (since 1.14, even
#   with `ORT_PARALLEL`). There, its inter-op threads only add their cost. The setting that
#   can help it is `intra_op_num_threads`, which splits each node. parallelgraph offers both
#   pools, and `explain()` says which one a run was limited by.
# - **Measure, then decide.** `compare_onnxruntime()` gives both engines' medians with
#   intervals on your own file and inputs, and checks that their outputs agree.
#   `pg.dashboard("model.onnx")` and `parallelgraph run model.onnx --compare onnxruntime` do
#   the same without writing code.
