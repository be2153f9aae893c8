# %% [markdown]
# # parallelgraph quick start: did my two subnetworks run in parallel?
#
# This is the question a TensorFlow user asked about two independent networks on one GPU. Here we
# build the same graph, run it with **one** and then **two inter-op threads**, and look at the
# timeline. (On a machine without a GPU, `pg.device("gpu:0")` falls back to the CPU: soft
# placement.)

# %%
import parallelgraph as pg

batch, n_in, n_hidden, n_out = 256, 512, 512, 256
g = pg.Graph("seed")
with g.as_default(), pg.device("gpu:0"):
    with pg.scope("net1"):
        data1 = pg.random_normal((batch, n_in), seed=1)
        w1 = pg.variable((n_in, n_hidden), name="w1")
        b1 = pg.variable((n_hidden,), name="b1")
        w2 = pg.variable((n_hidden, n_out), name="w2")
        result1 = pg.matmul(pg.matmul(data1, w1) + b1, w2)
    with pg.scope("net2"):
        data2 = pg.random_normal((batch, n_in), seed=2)
        w1 = pg.variable((n_in, n_hidden), name="w1")
        b1 = pg.variable((n_hidden,), name="b1")
        w2 = pg.variable((n_hidden, n_out), name="w2")
        result2 = pg.matmul(pg.matmul(data2, w1) + b1, w2)
    out = result1 + result2
g

# %% [markdown]
# Run it twice: once with one inter-op thread (ops one at a time), once with two
# (independent ops at the same time). Intra-op threads stay at 1 so each op uses one thread.

# %%
traces = {}
values = {}
for inter in (1, 2):
    config = pg.Config(inter_op_parallelism_threads=inter, intra_op_parallelism_threads=1)
    with pg.Session(g, config) as sess:
        sess.run(out)  # warm-up: first-call costs out of the way
        values[inter], traces[inter] = sess.run(out, trace=True)
    print(
        f"inter-op {inter}: {traces[inter].makespan_ms:6.1f} ms, "
        f"net1/net2 overlap {traces[inter].overlap('net1', 'net2'):.2f}"
    )
assert (values[1] == values[2]).all()  # bit-identical, whatever the thread counts

# %%
pg.plot.compare([traces[1], traces[2]], labels=["inter-op 1", "inter-op 2"])

# %% [markdown]
# Why did they not overlap with one thread? Ask the trace:

# %%
traces[1].explain()

# %% [markdown]
# The same trace opens in [Perfetto](https://ui.perfetto.dev) or `chrome://tracing`:

# %%
traces[2].save("trace.ctf.json")
print(traces[2].summary())
