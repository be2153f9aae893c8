# %% [markdown]
# # 05 · Your own trace: TensorFlow, PyTorch, JAX, Python profilers
#
# Your model does not have to live in parallelgraph to be explained by it. `pg.Trace.load`
# reads the trace files the tools you already use write — `.json` or `.json.gz`, or the folder a
# profiler wrote them into — and `explain()`, `plot()`, `pg.plot.compare` and `pg.simulate`
# work on them as on our own runs:
#
# - **TensorFlow 1.x / `tf.compat.v1`**: `sess.run(..., options=RunOptions(trace_level=
#   FULL_TRACE), run_metadata=md)`, then write
#   `timeline.Timeline(md.step_stats).generate_chrome_trace_format()`;
# - **PyTorch**: `with torch.profiler.profile() as p: ...`, then `p.export_chrome_trace("t.json")`,
#   or `tensorboard_trace_handler(dir, use_gzip=True)`;
# - **JAX**: `with jax.profiler.trace("dir"): ...` writes
#   `dir/plugins/profile/<run>/<host>.trace.json.gz` (load the file or the folder);
# - **viztracer**: `viztracer -o trace.json.gz prog.py`.
#
# Each tool has its own conventions — what an op is, what a scope is, which events are the
# profiler's own, which thread is which — and parallelgraph reads each by its rules
# (`parallelgraph.chrome.producers`), says what it left out, and gives its advice in that tool's
# words. The traces below were written by TensorFlow 2.21 and PyTorch 2.13 on a 2-core machine
# (`tests/fixtures/real`, where the scripts that made them are) and ship with the package.

# %%
import parallelgraph as pg
from parallelgraph.lab import median, speedup_text
from parallelgraph.recorded import framework_runs, framework_trace

runs = framework_runs()
tf1 = framework_trace("tensorflow-inter1")
print(tf1.source, tf1, tf1.lanes)

# %% [markdown]
# ## The seed's question, on TensorFlow's own timeline
#
# The seed graph (two independent networks, `net1` and `net2`) run by a TensorFlow Session with
# `inter_op_parallelism_threads=1`. Did the branches overlap — and if not, why?

# %%
print(tf1.explain())

# %% [markdown]
# Nothing in that run ever ran at the same time as anything else: one inter-op thread. (The two
# branches share a shape constant — TensorFlow's optimiser merged their two identical ones — but
# a constant that takes microseconds is no reason they could not overlap, and `explain()` does
# not call it one.) The timeline, one row per lane:

# %%
tf1.plot()

# %% [markdown]
# ## What would two inter-op threads do? Replay, then compare with TensorFlow's own run
#
# `pg.simulate` replays the measured op times under another thread count. The same graph was
# also run by TensorFlow with `inter_op_parallelism_threads=2`: here are both, on one time axis.

# %%
predicted = pg.simulate(tf1, pg.Config(inter_op_threads=2, intra_op_threads=1), cores=2)
tf2 = framework_trace("tensorflow-inter2")
timings = {
    name: runs[name]["timings_ms"]["all"] for name in ("tensorflow-inter1", "tensorflow-inter2")
}
measured = speedup_text(timings["tensorflow-inter1"], timings["tensorflow-inter2"])
replay = speedup_text([tf1.makespan_ms], [predicted.makespan_ms])
print(
    f"TensorFlow, medians of 15 runs: inter 1 {median(timings['tensorflow-inter1']):.1f}"
    f" ms, inter 2 {median(timings['tensorflow-inter2']):.1f} ms: inter 2 {measured}"
)
print(f"replay of the inter-1 trace with 2 threads: {predicted.makespan_ms:.1f} ms, {replay}")
pg.plot.compare(
    [tf1, predicted, tf2],
    labels=["TF inter 1 (traced)", "replayed with 2", "TF inter 2 (traced)"],
    branches=("net1", "net2"),
    title=f"TensorFlow inter 2 against inter 1, 15 runs each: {measured}\n"
    f"the replay against the traced inter-1 run: {replay}",
)

# %% [markdown]
# ## PyTorch: eager mode, nested ops
#
# PyTorch's profiler records ops inside ops (`aten::linear` holds its `aten::addmm`): the
# timeline draws them as sub-rows of their thread, and every total counts nested time once.
# `record_function("net1")` labels are the scopes.

# %%
eager = framework_trace("pytorch-eager")
print(eager.explain())
eager.plot()

# %% [markdown]
# ## PyTorch with `torch.jit.fork`: comparing threads when there are no scopes to compare
#
# With two inter-op threads, the forked branches run on PyTorch's pool threads
# (`PTThreadPool`). A branch can be named by its scope, by its lane (`"lane:NAME"`) or by an
# op-name pattern (`"op:aten::addmm*"`), so two threads can be compared even without
# `record_function`:

# %%
fork = framework_trace("pytorch-fork")
pool = [lane for lane in fork.lanes if "PTThreadPool" in lane]
print(
    "overlap of the two pool threads:", round(fork.overlap(f"lane:{pool[0]}", f"lane:{pool[1]}"), 2)
)
print(fork.explain(*(f"lane:{lane}" for lane in pool)))
fork.plot()

# %% [markdown]
# ## Your own
#
# ```python
# trace = pg.Trace.load("worker0.pt.trace.json.gz")   # or a TF timeline, a JAX folder, viztracer
# print(trace.explain())                              # top-level scopes, else threads
# print(trace.explain("lane:cpu/PTThreadPool 1234", "lane:cpu/PTThreadPool 1235"))
# trace.plot(t0=10, t1=20)                            # zoom, in ms
# pg.simulate(trace, pg.Config(inter_op_threads=2))   # what-if
# ```
#
# From the command line: `parallelgraph explain worker0.pt.trace.json.gz`.
