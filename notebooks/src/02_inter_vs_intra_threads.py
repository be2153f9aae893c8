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
from parallelgraph.presets import wide

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
# workers, `intra-op/*` rows are helpers computing shards of an op.


# %%
def traced(graph, fetch, inter, intra):
    with pg.Session(graph, pg.Config(inter_op_threads=inter, intra_op_threads=intra)) as sess:
        sess.run(fetch)  # warm-up
        return sess.run(fetch, trace=True)[1]


pg.plot.compare(
    [traced(branches.graph, branches.fetch, 1, 1), traced(branches.graph, branches.fetch, 2, 1)],
    labels=["wide: inter 1", "wide: inter 2"],
)

# %%
pg.plot.compare(
    [traced(big, product, 1, 1), traced(big, product, 1, 2)],
    labels=["matmul: intra 1", "matmul: intra 2"],
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
# settings that are faster than inter 1 / intra 1 beyond noise, and those that are not.

# %%
for graph in ("wide", "matmul"):
    rows = [r for r in result.rows() if r.params["graph"] == graph and r.verdict != "baseline"]
    faster = [
        f"inter {r.params['inter']}/intra {r.params['intra']} (x{r.speedup:.2f})"
        for r in rows
        if r.verdict == "faster"
    ]
    noise = [
        f"inter {r.params['inter']}/intra {r.params['intra']}"
        for r in rows
        if r.verdict == "within noise"
    ]
    print(
        f"{graph}: faster beyond noise: {', '.join(faster) or 'none'}; "
        f"within noise: {', '.join(noise) or 'none'}"
    )
    best = max(rows, key=lambda r: r.speedup)
    both = next(r for r in rows if r.params["inter"] == 2 and r.params["intra"] == 2)
    single = max((r for r in rows if r is not both), key=lambda r: r.speedup)
    beats = both.speedup_ci[0] > single.speedup_ci[1]
    print(
        f"  best: inter {best.params['inter']}/intra {best.params['intra']}; using both pools "
        f"{'beats' if beats else 'does not clearly beat'} the best single pool "
        f"(x{both.speedup:.2f} against x{single.speedup:.2f}) on "
        f"{pg.config.cpu_count()} cores, which both pools share."
    )
