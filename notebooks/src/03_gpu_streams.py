# %% [markdown]
# # 03 · CUDA streams: which GPU op runs where, and what may overlap
#
# On a GPU, two kernels can only run at the same time if they were queued on **different CUDA
# streams**; a stream runs its kernels one after another. TensorFlow 1.x put every kernel on one
# compute stream, so the seed's two independent networks could not overlap on the GPU (notebook
# 01). parallelgraph gives each GPU op a stream from `Config(streams=N, stream_policy=...)`:
#
# | policy | which stream an op gets | for |
# |---|---|---|
# | `"single"` | stream 0, always | TensorFlow 1.x's behaviour; the reference |
# | `"branches"` | one per independent chain (up to `N`) | independent subgraphs, `net1`, `net2` |
# | `"round_robin"` | the next stream in turn, ignoring the graph | many small independent ops |
#
# When an op's input comes from another stream, the plan puts a CUDA **event** between them (the
# producer's stream records it, the consumer's waits on it): the host never waits between GPU
# ops. Overlap pays only when kernels leave part of the GPU free and run long enough: the
# `narrow` size (batch 32, input 16384, hidden 1024) is made for that; `medium` kernels are short
# and `large` ones fill a big GPU on their own.
#
# **This notebook adapts to the machine and says which case it is in:**
#
# - **an NVIDIA GPU**: it measures the policies on the `narrow` and `medium` graphs (GPU event
#   timing);
# - **no GPU**: it switches on Numba's **CUDA simulator** (`NUMBA_ENABLE_CUDASIM=1`, set in the
#   next cell before `numba.cuda` is imported) and runs the `tiny` graph. The simulator executes
#   each kernel on the CPU, synchronously at launch, one at a time: its timings are *not* GPU
#   timings and nothing overlaps in it. What it does show faithfully is the plan: which op went
#   to which stream, the events between streams, and the copies.
#
# About 30 s without a GPU (the simulator is slow), a few seconds with one.

# %%
import os
import shutil

NVIDIA = bool(shutil.which("nvidia-smi") or os.path.exists("/dev/nvidia0"))
if not NVIDIA:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # must happen before numba.cuda is imported
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")  # small grids are the point

import parallelgraph as pg
from parallelgraph.lab import gpu_available, measure_interleaved, simulated, speedup_text

if gpu_available() and not simulated():
    MODE, SIZES, REPEATS = "gpu", ("narrow", "medium"), 20
elif gpu_available():
    MODE, SIZES, REPEATS = "simulator", ("tiny",), 2
else:
    MODE, SIZES, REPEATS = "none", (), 0
print(
    {
        "gpu": "Real NVIDIA GPU: timings below are GPU event timings.",
        "simulator": "No GPU: running in Numba's CUDA simulator. Stream assignment is real, "
        "timings are not (kernels run one at a time on the CPU).",
        "none": "No GPU and no CUDA simulator (numba.cuda unusable here): nothing to run on a "
        "GPU; soft placement would run these graphs on the CPU.",
    }[MODE]
)

# %% [markdown]
# ## The policies on the two-network graph
#
# For each size: a session per (policy, streams), all measured interleaved (repeat 1 of each,
# then repeat 2 of each, …), after a warm-up run that compiles the kernels, allocates the
# device buffers and copies the variables to the GPU once. One inter-op thread is enough: for a
# GPU op, running it means *launching* it, which returns at once.

# %%
POLICIES = {
    "single, 1 stream": (1, "single"),
    "branches, 2 streams": (2, "branches"),
    "round_robin, 2 streams": (2, "round_robin"),
}
results = {}
for size in SIZES:
    preset = pg.presets.two_networks(size, device_name="gpu:0")
    sessions = {
        name: pg.Session(preset.graph, pg.Config(streams=n, stream_policy=policy))
        for name, (n, policy) in POLICIES.items()
    }
    results[size] = measure_interleaved(sessions, preset.fetch, repeats=REPEATS, warmup=1)
    for session in sessions.values():
        session.close()

gains = {}  # size -> setting -> the speed-up against one stream, by the one rule
for size, runs in results.items():
    base = runs["single, 1 stream"].makespans_ms
    gains[size] = {name: speedup_text(base, run.makespans_ms) for name, run in runs.items()}
    gains[size]["single, 1 stream"] = "baseline"
    print(f"{size}: {pg.presets.TWO_NETWORK_SIZES[size]} (batch, in, hidden, out)")
    for name, run in runs.items():
        overlap = run.median_overlap("net1", "net2")
        speedup = gains[size][name] if MODE == "gpu" else "(simulated: no speed-up)"
        print(f"  {name:24} median {run.median_ms:9.3f} ms  overlap {overlap:.2f}  {speedup}")

# %% [markdown]
# ## Which op went to which stream
#
# The trace has one lane per stream (`stream/0`, `stream/1`, …) plus a lane for each direction
# of copies. With `branches`, all of `net1` is on one stream and all of `net2` on the other; the
# final add follows one of its producers and waits for the other through an event. With
# `round_robin`, ops alternate between streams whatever their branch, so a chain hops between
# streams and pays an event at each hop.

# %%
if results:
    size = SIZES[0]
    table = {
        name: {e.name: e.lane for e in run.median_trace().ops()}
        for name, run in results[size].items()
    }
    ops = list(next(iter(table.values())))
    print(f"{'op':16}" + "".join(f"{name:>26}" for name in table))
    for op in ops:
        print(f"{op:16}" + "".join(f"{table[name][op]:>26}" for name in table))

# %% [markdown]
# The timelines, on one time axis (with the simulator the bars are simulated CPU time: look at
# the lanes, not the lengths):

# %%
if results:
    runs = results[SIZES[0]]
    title = f"speed-up against one stream, medians of {REPEATS} runs:\n" + "\n".join(
        f"{name} {gain}" for name, gain in list(gains[SIZES[0]].items())[1:]
    )
    if MODE == "simulator":
        title = "stream assignment in the CUDA simulator (bar lengths: simulated CPU time)"
    traces = [run.median_trace() for run in runs.values()]
    figure = pg.plot.compare(traces, labels=list(runs), title=title)
else:
    figure = "no GPU run to draw"
figure

# %% [markdown]
# ## Why did one stream not overlap?
#
# `explain()` recognises the single-stream case and names the fix. (It reads TensorFlow's own
# timelines too: `parallelgraph explain tf_timeline.json` gives the same cause for the seed's
# trace.)

# %%
results[SIZES[0]]["single, 1 stream"].median_trace().explain() if results else None

# %% [markdown]
# ## What it looks like on a real GPU: traces recorded on an H200
#
# Whatever this machine has, `pg.recorded` holds two-stream traces of this graph recorded on an
# NVIDIA H200 (benchmarks/gpu_streams.py, median of 20 runs). Replaying each on one stream with
# `pg.simulate` gives its TensorFlow-1.x counterpart (for `narrow` and `small` the replay is
# within 5% of the one-stream time measured there, benchmarks/RESULTS.md):
#
# - `narrow` kernels (long, thin matmuls) use few multiprocessors: two of them fit side by side,
#   and two streams take 0.55 of the one-stream time, with an overlap of 0.95;
# - `small` graphs are **launch-bound**: each kernel takes a few microseconds, about what
#   launching it from Python takes, so the streams rarely have two kernels to run at once;
# - `large` kernels fill the GPU: two streams overlap them completely and gain nothing —
#   overlap is not speed-up (measured: 7.29 ms on one stream, 7.49 ms on two).

# %%
recorded = pg.recorded.h200_trace("narrow")
replayed = pg.simulate(recorded, pg.Config(streams=1))
gain = speedup_text([replayed.makespan_ms], [recorded.makespan_ms])
pg.plot.compare(
    [replayed, recorded],
    labels=["1 stream (replayed)", "2 streams (H200)"],
    title=f"the recorded run against its one-stream replay: {gain}",
)

# %%
for size in ("narrow", "small", "large"):
    print(f"== {size}")
    print(pg.recorded.h200_trace(size).explain())
