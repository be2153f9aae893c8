# %% [markdown]
# # 07 · Real models: which branches run side by side, and which pool helps?
#
# The seed question was about two hand-made networks: *"TensorFlow does not run my two
# independent subnetworks in parallel — why, and how can I?"* The same question comes up about
# the models people actually train, because most of them are built of independent branches:
#
# | architecture | its independent branches |
# |---|---|
# | multi-head **attention** | the heads (q, k, v, softmax, weighted sum), joined by a concat |
# | **Inception** block | 1x1, 3x3, 5x5 and pool branches, concatenated |
# | **ResNet** block | the main path and the (projection) shortcut |
# | **Wide & Deep** | a linear model and a deep MLP over embeddings |
# | **two-tower** retrieval | a user MLP and an item MLP |
# | **mixture of experts** | the experts (and the gate beside them) |
# | **ensemble** | the member networks |
#
# `pg.models` builds all seven, each branch in a scope of its own (`head0`, `branch_3x3`,
# `expert2`, ...), so the timeline colours it, `trace.overlap` measures it and `explain()` talks
# about it. This notebook asks, for each of them:
#
# 1. do the branches run side by side (**inter-op** threads), or does it pay more to split each
#    op (**intra-op** threads), or both, or neither — measured, with confidence intervals;
# 2. on a GPU, do the branches gain from **CUDA streams**?
#
# It runs top to bottom in well under a minute on a 2-core laptop CPU.

# %%
import io
import os
from pathlib import Path

from IPython.display import Image, display
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

import parallelgraph as pg
from parallelgraph.lab import (
    Speedup,
    busy_note,
    cpu_count,
    gpu_available,
    length,
    measure_interleaved,
    median,
    merge,
    simulated,
    speedup,
    speedup_text,
)

HAVE_GPU = gpu_available() and not simulated()
CORES = cpu_count()
print(f"{CORES} CPU cores; NVIDIA GPU usable: {HAVE_GPU}")
print("architectures:", ", ".join(pg.models.ARCHITECTURES))

# %% [markdown]
# ## 1. One model by hand: attention heads
#
# The builders work on your own tensors. Four-head self-attention on a random
# (batch, time, width) input is two lines; each head lands in its own scope under `attention/`,
# and the output projection that joins them in `attention/out`. `pg.models.branch_scopes`
# lists the scopes `explain()` compares by default.

# %%
g = pg.Graph("attention-by-hand")
with g.as_default():
    x = pg.random_normal((8, 128, 256), seed=1, name="x")  # (batch, time, width)
    y = pg.models.attention(x, heads=4)  # heads in attention/head0 .. head3

scopes = pg.models.branch_scopes(g)
for scope in scopes:
    ops = [op.name for op in g.ops if op.scope == scope or op.scope.startswith(scope + "/")]
    print(f"{scope:18} {len(ops):2} ops, e.g. {', '.join(ops[:3])}")

# %% [markdown]
# Run it with one inter-op thread and with two (intra-op stays at 1, so each op uses one
# thread), 7 times each, interleaved, and draw the median runs on one time axis. With one
# thread the heads take turns on a single lane; with two, two heads run at a time. (Timelines
# colour top-level scopes, so all heads share the `attention` colour: the ops of `head0` are
# highlighted and the others faded, to show where one head ran.)

# %%
sessions = {
    f"inter-op {inter}": pg.Session(g, pg.Config(inter_op_threads=inter, intra_op_threads=1))
    for inter in (1, 2)
}
runs = measure_interleaved(sessions, y, repeats=7, warmup=1)
for session in sessions.values():
    session.close()
by_hand = speedup_text(runs["inter-op 1"].makespans_ms, runs["inter-op 2"].makespans_ms)
for label, run in runs.items():
    overlap = run.median_overlap("attention/head0", "attention/head1")
    print(f"{label}: median {run.median_ms:6.2f} ms, head0/head1 overlap {overlap:.2f}")
print(f"inter-op 2 against inter-op 1: {by_hand}")
pg.plot.compare(
    [run.median_trace() for run in runs.values()],
    labels=list(runs),
    title=f"4-head attention, inter-op 2 against 1, medians of 7 runs: {by_hand}",
    highlight="attention/head0/*",
)

# %% [markdown]
# `explain()` compares the heads pairwise: with one inter-op thread it names that as the cause;
# with two it says which heads overlapped, why the others did not (usually: both workers were
# busy with other heads — four heads on two threads cannot all run at once), and how far the
# run was from the best any schedule could do on those lanes.

# %%
runs["inter-op 1"].median_trace().explain()

# %%
runs["inter-op 2"].median_trace().explain()

# %% [markdown]
# ## 2. All seven architectures, both pools, measured
#
# Now every architecture as a preset (`pg.models.preset(name, size)`: random inputs,
# initialized variables), each under inter-op {1, 2} x intra-op {1, 2} with `pg.sweep`:
# 10 shuffled, interleaved rounds per architecture, the median of each setting with its
# bootstrap 95% confidence interval, and each speed-up against inter 1 / intra 1 called
# *faster* or *slower* only when its interval excludes 1.0 (otherwise *within noise*).
#
# **Sizes.** A branch is worth handing to another thread only when its ops take well over the
# ~0.1 ms a hand-off costs, so we use the `medium` size wherever one run stays under ~100 ms
# (its matmuls and convolutions take 0.1 ms to a few ms), and `small` for ResNet, whose
# `medium` 3x3 convolutions took ~140 ms a run on our 2-core machine (its `small` ones still
# take ~1 ms each).
#
# Two more columns explain the speed-ups, both read off the traces:
# - **work/path**: the work of a one-thread run over its critical path — the most that *any*
#   number of inter-op threads could gain (a graph whose branches are unequal, or joined by a
#   long chain, offers little);
# - **at once**: at inter 2 / intra 1, how many branches were running on average while any
#   was (their busy time over the time any of them was busy): 1.0 means they took turns, 2.0
#   that two ran side by side all along — the most two inter-op threads allow.

# %%
SIZES = {
    "attention": "medium",
    "inception": "medium",
    "resnet": "small",
    "wide_and_deep": "medium",
    "two_tower": "medium",
    "mixture_of_experts": "medium",
    "ensemble": "medium",
}
SETTINGS = {  # label -> (inter, intra); the first is the baseline
    "inter 1/intra 1": (1, 1),
    "inter 2/intra 1": (2, 1),
    "inter 1/intra 2": (1, 2),
    "inter 2/intra 2": (2, 2),
}
COMPARED = list(SETTINGS)[1:]
REPEATS = 10

presets, sweeps = {}, {}
for name, size in SIZES.items():
    presets[name] = preset = pg.models.preset(name, size)
    sweeps[name] = pg.sweep(
        lambda preset=preset: preset,  # the build function: the same preset for every cell
        {"inter": [1, 2], "intra": [1, 2]},
        repeats=REPEATS,
        seed=7,
        progress=False,
        noise_check=False,  # no 5 extra runs: the intervals show the noise, the note its cause
    )


def setting_of(cell):
    return f"inter {cell['inter']}/intra {cell['intra']}"


samples, gains, medians = {}, {}, {}  # name -> setting -> runs (ms) / Speedup / median ms
for name, result in sweeps.items():
    samples[name] = {setting_of(cell): result.values_ms(i) for i, cell in enumerate(result.cells)}
    rows = {setting_of(row.params): row for row in result.rows()}
    medians[name] = {setting: rows[setting].median_ms for setting in SETTINGS}
    gains[name] = {  # the sweep's own speed-ups, by the one rule (stats)
        s: Speedup(rows[s].speedup, *rows[s].speedup_ci, runs=rows[s].n) for s in COMPARED
    }


def parallelism(trace):
    """Work over critical path of a run: the most any number of inter-op threads could gain."""
    return trace.work_s() * 1e9 / trace.critical_path().length_ns


def at_once(trace, scopes):
    """How many of `scopes` ran on average while any of them ran."""
    busy = [trace.busy_intervals(scope) for scope in scopes]
    anyone = length(merge(interval for intervals in busy for interval in intervals))
    return sum(length(intervals) for intervals in busy) / anyone if anyone else 0.0


head = f"{'architecture':19} {'size':6} {'branches':>8} {'work/path':>9} {'at once':>7}"
print(head + "  median ms:" + "".join(f"{s:>16}" for s in SETTINGS))
for name, result in sweeps.items():
    scopes = presets[name].scopes
    bound = parallelism(result.median_trace(inter=1, intra=1))
    together = at_once(result.median_trace(inter=2, intra=1), scopes)
    line = f"{name:19} {SIZES[name]:6} {len(scopes):8} {bound:8.1f}x {together:7.2f}"
    print(line + " " * 11 + "".join(f"{medians[name][s]:16.2f}" for s in SETTINGS))
print(f"\nspeed-up against inter 1/intra 1, {REPEATS} runs each:")
print(f"{'architecture':19}" + "".join(f"  {s:40}" for s in COMPARED))
for name in sweeps:
    print(f"{name:19}" + "".join(f"  {gains[name][s].text():40}" for s in COMPARED))
busy = {
    name: result.machine.other_cores
    for name, result in sweeps.items()
    if busy_note(result.machine) is not None
}
if busy:  # nothing is said on a quiet machine
    print(
        f"\nBusy machine: other processes kept cores busy (on average, of {CORES}) while these "
        "ran: "
        + ", ".join(f"{name} {cores:.1f}" for name, cores in busy.items())
        + ".\nTheir intervals are wider and their verdicts weaker; rerun on a quiet machine or "
        "with more repeats."
    )

# %% [markdown]
# ## Which pool helped, architecture by architecture
#
# The words below are computed from the runs, not written in advance: a pool *helped* only
# when its speed-up's interval lies above 1.0. When both helped, the two settings are compared
# with each other directly (a speed-up of one's runs against the other's, with its own
# interval), and so is using both pools against the better single one — two intervals that
# merely overlap prove nothing either way.

# %%
POOL = {
    "inter 2/intra 1": "inter-op threads (branches side by side)",
    "inter 1/intra 2": "intra-op threads (each op split in shards)",
}


def which_pool(name):
    """One sentence per architecture, following the measured intervals."""
    runs, gain = samples[name], gains[name]
    helped = [s for s in POOL if gain[s].verdict == "faster"]
    if not helped and gain["inter 2/intra 2"].verdict == "faster":
        words = "neither pool alone helped beyond noise, both together did"
    elif not helped:
        words = "neither pool helped beyond noise"
    elif len(helped) == 1:
        other = next(s for s in POOL if s not in helped)
        words = f"{POOL[helped[0]]} helped; {POOL[other]}: {gain[other].verdict}"
    else:
        inter_vs_intra = speedup(runs["inter 1/intra 2"], runs["inter 2/intra 1"])
        words = {
            "faster": "both pools helped, inter-op threads more",
            "slower": "both pools helped, intra-op threads more",
        }.get(inter_vs_intra.verdict, "both pools helped, and the runs do not tell them apart")
        words += f" (inter 2 against intra 2: {inter_vs_intra})"
    if helped:
        best = min(helped, key=lambda s: median(runs[s]))
        both = speedup(runs[best], runs["inter 2/intra 2"])
        verb = {"faster": "beats", "slower": "loses to"}.get(both.verdict, "does not beat")
        words += f"; using both {verb} {best} alone ({both})"
    slower = [s for s in COMPARED if gain[s].verdict == "slower"]
    if slower:
        words += f"; slower than one thread beyond noise: {', '.join(slower)}"
    return words


for name in sweeps:
    print(f"{name} ({SIZES[name]}): {which_pool(name)}.")

# %% [markdown]
# The same speed-ups as a picture: bars go up from 1.0 when a setting was faster and down when
# it was slower; the whiskers are the 95% intervals, and pale bars are *within noise*. (With
# the environment variable `PG_WRITE_DOCS=1` this cell also writes the picture to
# `docs/architectures.png` in the checkout, for the README; otherwise it writes nothing.)

# %%
COLORS = {"inter 2/intra 1": "#1f77b4", "inter 1/intra 2": "#ff7f0e", "inter 2/intra 2": "#2ca02c"}
figure = Figure(figsize=(9.5, 3.8), layout="constrained")
FigureCanvasAgg(figure)
ax = figure.subplots()
width = 0.27
for j, setting in enumerate(COMPARED):
    for i, name in enumerate(sweeps):
        gain, x = gains[name][setting], i + (j - 1) * width
        alpha = 1.0 if gain.conclusive else 0.35
        ax.bar(x, gain.ratio - 1.0, width, bottom=1.0, color=COLORS[setting], alpha=alpha)
        if gain.conclusive or gain.verdict == "within noise":  # an interval exists
            whisker = [[gain.ratio - gain.low], [gain.high - gain.ratio]]
            ax.errorbar(x, gain.ratio, yerr=whisker, color="black", capsize=2, linewidth=0.8)
ax.axhline(1.0, color="black", linewidth=0.8)
ax.set_xticks(range(len(sweeps)), [f"{name}\n({SIZES[name]})" for name in sweeps], fontsize=8)
ax.set_ylabel("speed-up over inter 1/intra 1")
ax.set_title(
    f"Which pool helps which architecture ({CORES} CPU cores, medians of {REPEATS} runs, "
    "95% CIs; pale: within noise)" + (" — busy machine" if busy else ""),
    fontsize=9,
)
ax.legend(
    handles=[Patch(color=COLORS[setting], label=setting) for setting in COMPARED],
    fontsize=8,
    loc="upper right",
)
png = io.BytesIO()
figure.savefig(png, format="png", dpi=90)
if os.environ.get("PG_WRITE_DOCS") == "1":
    docs = Path(pg.__file__).resolve().parent.parent / "docs"
    if not docs.is_dir():
        raise FileNotFoundError(f"PG_WRITE_DOCS=1 but {docs} is no folder: run from a checkout")
    (docs / "architectures.png").write_bytes(png.getvalue())
    print(f"wrote {docs / 'architectures.png'}")
display(Image(png.getvalue()))

# %% [markdown]
# Timelines of two of them, the median run of each setting: the ensemble, whose members are
# equal, independent MLPs (inter-op threads have whole branches to run side by side), and Wide &
# Deep, whose `wide` branch is one small dense layer beside a deep tower (little to overlap:
# see its work/path in the titles).

# %%
for name in ("ensemble", "wide_and_deep"):
    result = sweeps[name]
    traces = [result.median_trace(inter=i, intra=j) for i, j in SETTINGS.values()]
    display(
        pg.plot.compare(
            traces,
            labels=list(SETTINGS),
            title=f"{presets[name].description}, work/path "
            f"{parallelism(traces[0]):.1f}x\n"
            + "\n".join(f"{s}: {gains[name][s]}" for s in COMPARED),
        )
    )

# %% [markdown]
# ## 3. CUDA streams
#
# On a GPU the branches overlap only on **different CUDA streams** (notebooks 01 and 03):
# `pg.Config(streams=1)` is TensorFlow 1.x's one compute stream, and
# `pg.Config(streams=4, stream_policy="branches")` gives each branch scope — each head, expert
# or member — a stream of its own, round robin over the four. Whether that pays depends on the
# kernels: branches overlap usefully when each kernel leaves part of the GPU free and runs
# longer than it takes to launch.
#
# **With a GPU** the next cell measures the attention preset (`medium`, 8 heads) on 1 stream
# against 4, by GPU event timing. **Without one** it says so, and shows instead what the plan
# of a GPU session would do — which stream each branch gets — computed by the very planner a
# GPU session uses, given a GPU (`parallelgraph.plan.build_plan(..., gpu_available=True)`: pure
# Python, no CUDA). That part is exact; how much time the streams would save is *not* predicted
# here: a CPU trace holds no kernel times, and `pg.simulate` replays streams only from GPU
# traces.

# %%
GPU_ARCHITECTURE = "attention"
if HAVE_GPU:
    gpu_preset = pg.models.preset(GPU_ARCHITECTURE, "medium", device="gpu:0")
    stream_sessions = {
        "1 stream": pg.Session(gpu_preset.graph, pg.Config(streams=1, stream_policy="single")),
        "4 streams (branches)": pg.Session(
            gpu_preset.graph, pg.Config(streams=4, stream_policy="branches")
        ),
    }
    stream_runs = measure_interleaved(stream_sessions, gpu_preset.fetch, repeats=20, warmup=2)
    for session in stream_sessions.values():
        session.close()
    streams_gain = speedup_text(
        stream_runs["1 stream"].makespans_ms, stream_runs["4 streams (branches)"].makespans_ms
    )
    print(f"measured on the GPU: {gpu_preset.description}")
    for name, run in stream_runs.items():
        overlap = run.median_overlap(*gpu_preset.scopes[:2])
        print(f"  {name:22} median {run.median_ms:8.3f} ms, head0/head1 overlap {overlap:.2f}")
    print(f"  4 streams against 1: {streams_gain}")
    stream_figure = pg.plot.compare(
        [run.median_trace() for run in stream_runs.values()],
        labels=list(stream_runs),
        title=f"{GPU_ARCHITECTURE} on the GPU, medians of 20 runs: 4 streams against 1: "
        + streams_gain,
    )
else:
    from parallelgraph.lab import build_plan

    print(
        "No usable NVIDIA GPU here: nothing is measured on a GPU. What a GPU session's plan "
        "would do with\npg.Config(streams=4, stream_policy='branches'), from the planner itself "
        "(exact; no times):"
    )
    config = pg.Config(streams=4, stream_policy="branches").resolved()
    for name in SIZES:
        gpu_preset = pg.models.preset(name, "small", device="gpu:0")
        plan = build_plan(gpu_preset.graph, [gpu_preset.fetch.op], [], config, gpu_available=True)
        stream_of = {}
        for step in plan.steps:
            for scope in gpu_preset.scopes:
                if step.op.scope == scope or step.op.scope.startswith(scope + "/"):
                    stream_of.setdefault(scope.split("/")[-1], set()).add(step.stream)
        events = sum(len(step.waits) for step in plan.steps)
        assigned = ", ".join(f"{b}->{'/'.join(map(str, sorted(s)))}" for b, s in stream_of.items())
        print(f"  {name:19} {plan.streams} streams, {events:2} cross-stream waits: {assigned}")
    stream_figure = None
stream_figure

# %% [markdown]
# Without a GPU, the nearest *measured* evidence is in `pg.recorded`: the two-network graph of
# notebooks 01 and 03 — two independent MLP branches, the shape of the two-tower model — run on
# an NVIDIA H200 (benchmarks/gpu_streams.py). Its medians, of 20 runs each (the record keeps
# medians only, so no interval can be given for their ratio): streams pay for `narrow`
# kernels that leave the GPU room, nothing for `small` ones that are launch-bound, and nothing
# for `large` ones that fill the GPU alone, however well they overlap. None of this notebook's
# architectures was recorded on a GPU: how their branches fare there is for a GPU run to say.

# %%
recorded = pg.recorded.h200_medians()
print(f"{recorded['device']}, two-network graph, prepared launches: median ms (overlap)")
for size in ("narrow", "small", "large"):
    cells = [
        f"{row['streams']} stream(s) {row['median_ms']:.3f} ({row['overlap']:.2f})"
        for row in recorded["rows"]
        if row["size"] == size and row["launch"] == "prepared"
    ]
    print(f"  {size:7} " + ", ".join(cells))

# %% [markdown]
# ## What to take away
#
# The seed's answer holds for real models, with one refinement. Independent branches *can* run
# side by side — but only when the executor has a second inter-op thread (on a GPU: a second
# stream), and they *gain* only when they are big enough, equal enough and not fighting over the
# same cores. The summary below is computed from this run's table:

# %%
verdicts = {name: which_pool(name) for name in sweeps}
for pool, setting in (("inter-op", "inter 2/intra 1"), ("intra-op", "inter 1/intra 2")):
    helped = [name for name in sweeps if gains[name][setting].verdict == "faster"]
    print(f"{pool} threads helped beyond noise: {', '.join(helped) or 'none'}")
both = [name for name in sweeps if gains[name]["inter 2/intra 2"].verdict == "faster"]
print(f"both pools together helped beyond noise: {', '.join(both) or 'none'}")
neither = [name for name, words in verdicts.items() if words.startswith("neither pool helped")]
print(f"no setting helped beyond noise: {', '.join(neither) or 'none'}")
if busy:
    print("(measured on a busy machine: rerun on a quiet one before drawing conclusions)")

# %% [markdown]
# How to read it, whatever this machine measured:
#
# - **work/path** bounds what inter-op threads can do: where it is low (Wide & Deep's single
#   wide layer beside its deep tower, ResNet's short shortcut beside the main path) there is
#   little to overlap, whatever the thread count; where it is near the number of branches
#   (ensembles, experts, towers of equal size), two inter-op threads can at best halve the time
#   on 2 cores — if no other program wants those cores.
# - **Overlap is not speed-up**: branches that run side by side on two cores share the memory
#   bandwidth and the caches; bandwidth-bound ops (attention's softmax, element-wise layers)
#   gain less than the overlap suggests.
# - **Intra-op threads** help where single ops are big (convolutions, large matmuls) and the
#   graph is a chain; on a small machine both pools compete for the same cores, so using both
#   seldom beats the better one alone.
# - On a **GPU** the knob is the stream count, with the same caveats in GPU terms: the plan
#   above gives every branch its stream; whether that pays is for measured runs to say
#   (notebook 03).
#
# To explore one architecture interactively: `pg.dashboard(preset="attention")` (sliders for
# heads, width and batch, and the thread and stream knobs).
