# %% [markdown]
# # 01 · Two independent subnetworks: do they run in parallel?
#
# The question that started this project, as a TensorFlow 1.x user asked it:
#
# > *I build two independent networks in one graph, on one GPU, and fetch the sum of their
# > outputs. The timeline shows that the second network only starts when the first has
# > finished. Why are they not run in parallel, and how can I make them?*
#
# In this notebook we rebuild that graph and answer the question with measurements:
#
# 1. **On the GPU**: one CUDA stream against several (or, without a GPU, what happens instead);
# 2. **On the CPU**: one inter-op thread against two;
# 3. the two **timelines side by side**, the trace written as a **`.ctf.json`** file, and
#    **`explain()`**, which says in words why the networks did or did not overlap;
# 4. a **dashboard** on this very graph, to try other sizes and knobs yourself.
#
# It runs top to bottom in about half a minute on a 2-core laptop CPU.

# %%
import tempfile
from pathlib import Path

from IPython.display import display

import parallelgraph as pg
from parallelgraph.lab import (
    cpu_count,
    gpu_available,
    measure_interleaved,
    simulated,
    speedup,
    speedup_text,
)

HAVE_GPU = gpu_available() and not simulated()
print(f"{cpu_count()} CPU cores; NVIDIA GPU usable: {HAVE_GPU}")

# %% [markdown]
# ## The graph, line for line
#
# This is the seed's code with `tf.` replaced by `pg.`: two networks in their own scopes
# (`net1`, `net2`), each `matmul(matmul(x, w1) + b1, w2)` on its own random input, summed at the
# end, all placed on `gpu:0`. Nothing connects `net1` to `net2` before the final add: a scheduler
# is free to run them at the same time.

# %%
batch, n_in, n_hidden, n_out = 512, 1024, 1024, 512
g = pg.Graph("seed")
with g.as_default(), pg.device("gpu:0"):
    with pg.scope("net1"):
        data1 = pg.random_normal((batch, n_in), seed=1)
        w1 = pg.variable((n_in, n_hidden), name="w1")
        b1 = pg.variable((n_hidden,), name="b1")
        l1 = pg.add(pg.matmul(data1, w1), b1)
        w2 = pg.variable((n_hidden, n_out), name="w2")
        result1 = pg.matmul(l1, w2)
    with pg.scope("net2"):
        data2 = pg.random_normal((batch, n_in), seed=2)
        w1 = pg.variable((n_in, n_hidden), name="w1")
        b1 = pg.variable((n_hidden,), name="b1")
        l1 = pg.add(pg.matmul(data2, w1), b1)
        w2 = pg.variable((n_hidden, n_out), name="w2")
        result2 = pg.matmul(l1, w2)
    out = pg.add(result1, result2)
g

# %% [markdown]
# ## 1. One CUDA stream against several
#
# On a GPU, "at the same time" means *on different CUDA streams*: kernels queued on one stream
# run one after another. TensorFlow 1.x launched every kernel of a graph on a single compute
# stream, which is the whole answer to the seed question: the two networks could never overlap
# on the GPU, whatever the thread settings. parallelgraph lets you choose:
# `Config(streams=1, stream_policy="single")` reproduces TensorFlow's behaviour,
# `Config(streams=2, stream_policy="branches")` gives each independent chain its own stream.
#
# **Without a GPU** (the machine this notebook was written on has none) we say so plainly: with
# soft placement (on by default) the `gpu:0` ops run on the CPU, a `RuntimeWarning` says so,
# the stream setting then has nothing to act on, and `explain()` names soft placement as the
# reason. To see how the stream policies assign ops without a GPU, notebook 03 runs a tiny
# version of this graph in Numba's CUDA simulator.

# %%
stream_sessions = {
    "1 stream (single)": pg.Session(g, pg.Config(streams=1, stream_policy="single")),
    "2 streams (branches)": pg.Session(g, pg.Config(streams=2, stream_policy="branches")),
}
stream_runs = measure_interleaved(stream_sessions, out, repeats=10 if HAVE_GPU else 6, warmup=2)
for session in stream_sessions.values():
    session.close()
one_stream = stream_runs["1 stream (single)"].makespans_ms
for name, run in stream_runs.items():
    gain = "baseline" if name == "1 stream (single)" else speedup_text(one_stream, run.makespans_ms)
    print(
        f"{name:22} median {run.median_ms:8.3f} ms, "
        f"net1/net2 overlap {run.median_overlap('net1', 'net2'):.2f}, speed-up {gain}"
    )
two_streams = speedup(one_stream, stream_runs["2 streams (branches)"].makespans_ms)
if HAVE_GPU:
    traces = [run.median_trace() for run in stream_runs.values()]
    title = f"2 streams against 1, medians of {len(one_stream)} runs: {two_streams}"
    display(pg.plot.compare(traces, labels=list(stream_runs), title=title))
else:
    print(
        "No usable GPU here: both sessions ran every gpu:0 op on the CPU (soft placement, see "
        "the warning above),\nso the stream setting had nothing to act on: "
        + (
            f"the speed-up is {two_streams.verdict}, as it should be."
            if not two_streams.conclusive
            else f"the verdict '{two_streams.verdict}' is the machine or the order of the runs, "
            "not the streams (1 run in 20 crosses a 95% CI by chance)."
        )
    )
stream_runs["1 stream (single)"].median_trace().explain()

# %% [markdown]
# ## 2. One inter-op thread against two, on the CPU
#
# On the CPU the knob is the **inter-op pool**: how many *ops* may run at the same time
# (TensorFlow's `inter_op_parallelism_threads`). With one thread the ops of `net1` and `net2`
# queue behind each other; with two, each network can have a thread. The **intra-op pool**
# (`intra_op_parallelism_threads`) is the other knob: how many threads share the work of *one*
# op (a big matmul is cut into row blocks). We keep it at 1 for the comparison and add one run
# with intra-op 2 to show the difference.
#
# We place the same graph on the CPU (`pg.presets.two_networks("medium")` builds it) and
# measure the settings *interleaved* — repeat 1 of every setting, then repeat 2 of every
# setting, … — so that a machine that gets busier during the measurement slows all of them
# alike. We report medians, the middle half of the runs (IQR), and each speed-up with its 95%
# bootstrap confidence interval: it is called *faster* or *slower* only when the interval
# excludes 1.0, otherwise *within noise*.

# %%
cpu = pg.presets.two_networks("medium")  # (batch, in, hidden, out) = (512, 1024, 1024, 512)
settings = {"inter-op 1": (1, 1), "inter-op 2": (2, 1), "inter-op 1, intra-op 2": (1, 2)}
sessions = {
    name: pg.Session(cpu.graph, pg.Config(inter_op_threads=inter, intra_op_threads=intra))
    for name, (inter, intra) in settings.items()
}
runs = measure_interleaved(sessions, cpu.fetch, repeats=7, warmup=1)
for session in sessions.values():
    session.close()  # joins the session's threads

base = runs["inter-op 1"].makespans_ms
gains = {name: speedup_text(base, run.makespans_ms) for name, run in runs.items()}
gains["inter-op 1"] = "baseline"
print(f"{'setting':24} {'median ms':>9} {'IQR ms':>13} {'overlap':>7}  speed-up vs inter-op 1")
for name, run in runs.items():
    q1, q3 = run.quartiles_ms()
    overlap = run.median_overlap("net1", "net2")
    print(f"{name:24} {run.median_ms:9.2f} {q1:6.2f}-{q3:6.2f} {overlap:7.2f}  {gains[name]}")

# %% [markdown]
# Read the table (the *overlap* column does not depend on how busy the machine is; the times
# do, and the speed-up's interval and verdict say how far this run's numbers can be trusted):
#
# - **inter-op 1**: the overlap of `net1` and `net2` is 0 — one op at a time, the networks run
#   one after the other.
# - **inter-op 2**: the overlap is close to 1: each network had its own thread. On an otherwise
#   idle 2-core machine the run takes a little more than half as long (0.55-0.6 of inter-op 1
#   in our runs); if other programs keep the cores busy, the second thread has no core of its
#   own and the gain shrinks, although the networks still overlap.
# - **inter-op 1, intra-op 2**: also faster on an idle machine, for a different reason: the
#   networks still take turns (overlap 0), and each matmul is shared by two threads. Both knobs
#   spend the same two cores; which one wins depends on the graph (a single chain of ops can
#   only use intra-op threads; many small independent ops only inter-op threads).

# %% [markdown]
# ## 3. The timelines side by side
#
# One row per thread (lane), time to the right, one colour per scope. With one inter-op thread
# there is a single lane and the two colours take turns; with two, `net1` and `net2` fill a lane
# each at the same time. (Each panel is the run with the median makespan, and its heading
# compares those drawn runs alone; the title gives the table's speed-ups. The ops' shards, if
# any, are the thinner bars in the lower half of a row.)

# %%
traces = {name: run.median_trace() for name, run in runs.items()}
pg.plot.compare(
    list(traces.values()),
    labels=list(traces),
    title="speed-up against inter-op 1, medians of 7 runs:\n"
    + "\n".join(f"{name} {gains[name]}" for name in list(runs)[1:]),
)

# %% [markdown]
# The trace of a run is a file too: `trace.save` writes the Chrome trace-event format, which
# [Perfetto](https://ui.perfetto.dev) and `chrome://tracing` open (the seed's TensorFlow
# timeline was such a file: `parallelgraph explain` reads those as well).

# %%
# A temporary folder, so that running the notebook leaves no file in your checkout.
path = traces["inter-op 2"].save(Path(tempfile.mkdtemp(prefix="pg-")) / "trace.ctf.json")
print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
print(traces["inter-op 2"].summary())

# %% [markdown]
# ## 4. Why? Ask the trace
#
# `explain()` looks at a trace and says, for each pair of top-level scopes, whether they
# overlapped, and if not the first cause the trace supports (a dependency between them, soft
# placement, one CUDA stream, one inter-op thread, every worker busy, or ops too short to be
# worth handing to another thread); then how far the run was from the best any schedule could
# do (work divided by lanes, or the critical path), and the one change most likely to help.

# %%
traces["inter-op 1"].explain()

# %%
traces["inter-op 2"].explain()

# %% [markdown]
# ## 5. Try it yourself: the dashboard
#
# The dashboard runs your own graph from controls, the way ipywidgets' `interact` runs a
# function: write a function that builds the graph (it is called inside a fresh `pg.Graph`)
# and returns what to fetch, and give each parameter a range (a `(min, max)` tuple is a slider,
# a list a dropdown). Below, the seed's graph again, with its sizes as parameters. The run knobs
# (device, executor, inter-op and intra-op threads, streams, repeats) are always there.
#
# - **Run** measures in the background: the notebook stays usable, and **Stop** ends a long run
#   between two ops, keeping the runs measured so far. The status line says what ran, how it
#   ended, and how long the first run's warm-up (compilation) took — it is not in the timings.
# - Sliders act when you **release** them; after the first run every change reruns by itself
#   (untick *rerun on change* for big graphs). A size change rebuilds the graph; a thread or
#   stream change rebuilds the session (the old session's threads are shut down first).
# - **Pin** keeps a run (a few at a time): later runs of the same graph and sizes are drawn
#   below the pins on one time axis, with a speed-up per pin; a pin of other sizes is shown but
#   not compared.
# - With ipympl installed (`pip install ipympl`), the timeline pans and zooms, and hovering a
#   bar shows the op, its shapes and its duration.
#
# Things to try: pin inter-op 1, then move inter-op to 2; make the graph tiny (batch 8, hidden
# 128) and watch the ops become too short to be worth a second thread. `pg.dashboard()` without
# a function offers the built-in graphs (`wide`, `chain`, a random DAG). `dash.close()` shuts it
# down when you are done.


# %%
def seed_graph(batch=128, hidden=512):
    """The seed's two networks, with their sizes as parameters."""
    results = []
    for name, seed in (("net1", 1), ("net2", 2)):
        with pg.scope(name):
            data = pg.random_normal((batch, hidden), seed=seed)
            w1 = pg.variable((hidden, hidden), name="w1")
            b1 = pg.variable((hidden,), name="b1")
            w2 = pg.variable((hidden, batch), name="w2")
            results.append(pg.matmul(pg.add(pg.matmul(data, w1), b1), w2))
    return pg.add(*results)


dash = pg.dashboard(
    seed_graph, batch=[8, 32, 128, 512, 2048], hidden=[128, 256, 512, 1024], inter_op_threads=1
)
dash.run()
dash
