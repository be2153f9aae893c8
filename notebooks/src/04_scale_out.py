# %% [markdown]
# # 04 · Scale out: the same graph on a Dask cluster
#
# When one machine is not enough, nothing about the graph changes: `Config(executor="dask")`
# runs its ops as tasks on a [Dask distributed](https://distributed.dask.org) cluster, and the
# trace, the Gantt chart and `explain()` work as before. In this notebook:
#
# 1. start a **LocalCluster** with two worker processes (on a real cluster you would pass
#    `dask_address="tcp://scheduler:8786"` instead, or an existing `Client`);
# 2. run the **seed graph** on it and check the answer is bit-identical to the sequential
#    reference;
# 3. **pin** the two networks to the two workers with `pg.device("worker:N")`, the way you would
#    put them on two machines;
# 4. **plot and explain** the merged trace: one lane per worker thread, plus the data Dask moved
#    between the workers.
#
# It runs in well under a minute on a 2-core laptop.

# %%
import logging

import numpy as np
from distributed import Client, LocalCluster

import parallelgraph as pg
from parallelgraph.lab import measure_interleaved, speedup

cluster = LocalCluster(
    n_workers=2,
    threads_per_worker=1,
    processes=True,
    dashboard_address=":0",
    silence_logs=logging.ERROR,
)
client = Client(cluster)
workers = sorted(client.scheduler_info()["workers"])
print("\n".join(f"worker:{n} = {address}" for n, address in enumerate(workers)))

# %% [markdown]
# ## 1. The seed graph, unchanged
#
# The graph of notebook 01, at a size where each op takes a few milliseconds. We build it with a
# small function so that we can build it again with the networks pinned.

# %%
batch, n_in, n_hidden, n_out = 256, 512, 512, 256


def seed_graph(devices=(None, None)):
    """The seed's two networks; `devices` places net1 and net2 (None: let the session choose)."""
    g = pg.Graph("seed")
    with g.as_default():
        results = []
        for index, (scope, where) in enumerate(zip(("net1", "net2"), devices)):
            with pg.device(where), pg.scope(scope):
                data = pg.random_normal((batch, n_in), seed=index + 1)
                w1 = pg.variable((n_in, n_hidden), name="w1")
                b1 = pg.variable((n_hidden,), name="b1")
                w2 = pg.variable((n_hidden, n_out), name="w2")
                results.append(pg.matmul(pg.matmul(data, w1) + b1, w2))
        out = pg.add(*results, name="out")
    return g, out


g, out = seed_graph()
with pg.Session(g, pg.Config(executor="sequential")) as sess:
    reference = sess.run(out)

# %% [markdown]
# Now the same graph on the cluster. The session borrows our `client` (without one it would
# start, and later shut down, a LocalCluster of its own). `intra_op_threads=1`: each worker
# process runs one op at a time on one thread, so the two processes are the two "inter-op
# threads" here. The first run loads the kernels in the workers and sends the variables to
# them — once per session; later runs only send the graph and fetch the result.

# %%
dask_config = pg.Config(executor="dask", dask_client=client, intra_op_threads=1)
with pg.Session(g, dask_config) as sess:
    sess.run(out)  # warm-up
    value, dask_trace = sess.run(out, trace=True)
print("bit-identical to the sequential reference:", np.array_equal(value, reference))
print("lanes:", dask_trace.lanes)

# %% [markdown]
# ## 2. One network per worker
#
# By default Dask's scheduler decides where each op runs (usually where its inputs already
# are). To decide it ourselves — say, one network per machine — we place each scope on a
# worker with `pg.device("worker:N")`, N counting the workers in address order. The threads
# executor would run such ops on `cpu:0` (soft placement); the dask executor pins them.

# %%
pinned, pinned_out = seed_graph(devices=("worker:0", "worker:1"))
with pg.Session(pinned, dask_config) as sess:
    sess.run(pinned_out)  # warm-up
    value, pinned_trace = sess.run(pinned_out, trace=True)
assert np.array_equal(value, reference)
for scope in ("net1", "net2"):
    lanes = sorted({e.lane for e in pinned_trace.ops() if e.in_scope(scope)})
    print(f"{scope} ran on {lanes}")
print(f"net1/net2 overlap: {pinned_trace.overlap('net1', 'net2'):.2f}")

# %% [markdown]
# ## 3. The merged trace
#
# Each worker timed its ops with its own clock; the session put those times on its own clock and
# merged them into one trace. A row per worker thread (`worker-N/0`), and a `worker-N/transfer`
# row for the values Dask moved *to* worker N (here the result of one network, which the final
# `out` needs on the other worker).

# %%
pinned_trace.plot()

# %% [markdown]
# Against the threads executor on one machine (two inter-op threads): same graph, same answer.
# On one small machine the cluster should be slower: every op is a Dask task (a round trip
# through the scheduler, milliseconds each) and values travel between processes. Scaling out
# pays when the ops are big, or the machines are many. One run of each would not show it, so
# both run 6 times, interleaved (both graphs name their last op "out", which both sessions
# fetch), and the speed-up comes with its 95% bootstrap interval (six runs are the fewest one
# is computed from).

# %%
with pg.Session(g, pg.Config(inter_op_threads=2, intra_op_threads=1)) as threads_session:
    assert np.array_equal(threads_session.run(out), reference)
    with pg.Session(pinned, dask_config) as dask_session:
        both = measure_interleaved(
            {"threads, inter-op 2": threads_session, "dask, 2 pinned workers": dask_session},
            "out",
            repeats=6,
            warmup=1,
        )
for label, run in both.items():
    print(f"{label}: median makespan {run.median_ms:.2f} ms of {len(run.traces)} runs")
scaled = speedup(
    both["threads, inter-op 2"].makespans_ms, both["dask, 2 pinned workers"].makespans_ms
)
print(f"dask against threads: {scaled}")
pg.plot.compare(
    [run.median_trace() for run in both.values()],
    labels=list(both),
    title=f"dask against threads, medians of 5 runs: {scaled}",
)

# %% [markdown]
# `explain()` reads the merged trace like any other: did the networks overlap, what the
# critical path was, and where the time went.

# %%
pinned_trace.explain()

# %% [markdown]
# Closing the client and the cluster stops the worker processes. (A session that started its
# own LocalCluster closes it when the session closes.)

# %%
client.close()
cluster.close()
