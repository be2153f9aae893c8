# %% [markdown]
# # Inter-op or intra-op threads? Measuring it so the answer survives noise
#
# The second question parallelgraph was born from: *"What do `inter_op_parallelism_threads`
# and `intra_op_parallelism_threads` mean? My experiments gave inconsistent results."*
#
# - **inter-op threads** run *different ops* at the same time — they help when the graph has
#   independent ops (many branches), and do nothing for a chain;
# - **intra-op threads** split *one op* into shards — they help big ops (a large matmul), and
#   do nothing for ops too small to split.
#
# Both pools share the same cores. Below: two graphs that each need one of the pools, their
# timelines, then a sweep with repeats and confidence intervals, and the conclusion it supports.

# %%
import warnings

import numpy as np

import parallelgraph as pg
from parallelgraph.lab import Speedup, fastest_text, median, speedup, speedup_text, wide

warnings.simplefilter("ignore", RuntimeWarning)  # the sweep table repeats its noise note

branches = wide("medium", branches=6)  # 6 independent tanh(x @ w) branches of [256 x 512]

big = pg.Graph("one-big-matmul")
with big.as_default():
    a = pg.constant(np.random.default_rng(0).standard_normal((1024, 1024)).astype("float32"))
    product = pg.matmul(a, pg.variable((1024, 1024), name="w"))
print(branches.description, "| one 1024 x 1024 x 1024 matmul")

# %% [markdown]
# ## What each pool does, on a timeline
#
# The wide graph with 1 and 2 inter-op threads (one thread per op), and the big matmul with 1
# and 2 intra-op threads (one op at a time). Look at the lanes: `inter-op/*` rows are op
# workers, `intra-op/*` rows are helpers computing shards of an op. These are one run each:
# they show *how* a pool is used, and their speed-up is no conclusion yet (the sweep below
# measures it).


# %%
def traced(graph, fetch, inter, intra):
    with pg.Session(graph, pg.Config(inter_op_threads=inter, intra_op_threads=intra)) as sess:
        sess.run(fetch)  # warm-up
        return sess.run(fetch, trace=True)[1]


def one_run_each(first, second, labels):
    """Two traced runs on one time axis, titled with their speed-up by the one rule."""
    gain = speedup_text([first.makespan_ms], [second.makespan_ms])
    return pg.plot.compare(
        [first, second], labels=labels, title=f"{labels[1]} against {labels[0]}: {gain}"
    )


one_run_each(
    traced(branches.graph, branches.fetch, 1, 1),
    traced(branches.graph, branches.fetch, 2, 1),
    ["wide: inter 1", "wide: inter 2"],
)

# %%
one_run_each(
    traced(big, product, 1, 1), traced(big, product, 1, 2), ["matmul: intra 1", "matmul: intra 2"]
)

# %% [markdown]
# ## A sweep with repeats and confidence intervals
#
# One run proves little on a shared machine. `pg.sweep` runs every cell of the grid many times
# in shuffled, interleaved rounds (so a slow minute hurts every cell alike), keeps every
# measurement, and reports the median with a bootstrap 95% confidence interval. A speed-up is
# called *faster* or *slower* only when its interval excludes 1.0; otherwise it is *within
# noise*. The `predicted ms` column is what replaying the inter 1 / intra 1 trace under each
# setting predicts (`pg.simulate`).


# %%
def build(graph):
    return (branches.graph, branches.fetch) if graph == "wide" else (big, product)


result = pg.sweep(
    build, {"graph": ["wide", "matmul"], "inter": [1, 2], "intra": [1, 2]}, repeats=10, seed=1
)
result

# %%
result.heatmap("inter", "intra", graph="wide")

# %%
result.heatmap("inter", "intra", graph="matmul")

# %% [markdown]
# ## What the measurements support
#
# The conclusion is computed from the table, not written in advance: for each graph, the
# settings that are faster than inter 1 / intra 1 beyond noise, and those that are not; then
# the ranking, with its own uncertainty: is the fastest setting told apart from the next one,
# and does using both pools beat the better single pool? Each comparison is a speed-up of the
# runs themselves, with its CI (`parallelgraph.experiments.stats`), never two intervals eyeballed.


# %%
def name(cell):
    return f"inter {cell['inter']}/intra {cell['intra']}"


for graph in ("wide", "matmul"):
    rows = [r for r in result.rows() if r.params["graph"] == graph and r.verdict != "baseline"]
    faster = [
        f"{name(r.params)} {Speedup(r.speedup, *r.speedup_ci)}"
        for r in rows
        if r.verdict == "faster"
    ]
    noise = [name(r.params) for r in rows if r.verdict == "within noise"]
    print(f"{graph}: faster beyond noise: {'; '.join(faster) or 'none'}")
    print(f"  within noise: {', '.join(noise) or 'none'}")
    samples = {
        name(cell): result.values_ms(index)
        for index, cell in enumerate(result.cells)
        if cell["graph"] == graph
    }
    print(f"  {fastest_text(samples)}")
    single = min(("inter 2/intra 1", "inter 1/intra 2"), key=lambda n: median(samples[n]))
    both = speedup(samples[single], samples["inter 2/intra 2"])
    print(
        f"  both pools against the better single pool ({single}): {both}: using both "
        f"{'beats it' if both.verdict == 'faster' else 'does not beat it'} on "
        f"{pg.config.cpu_count()} cores, which both pools share."
    )
