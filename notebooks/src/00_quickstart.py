# %% [markdown]
# # parallelgraph quick start: did my two subnetworks run in parallel?
#
# This is the question a TensorFlow user asked about two independent networks on one GPU. Here we
# build the same graph, run it with **one** and then **two inter-op threads**, and look at the
# timeline. (On a machine without a GPU, `pg.device("gpu:0")` falls back to the CPU: soft
# placement.)

# %%
import parallelgraph as pg
from parallelgraph.lab import MIN_WALL_S, LoadMonitor, load_note, measure_interleaved, speedup_text

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
one_each = speedup_text([traces[1].makespan_ms], [traces[2].makespan_ms])
print(f"inter-op 2 against inter-op 1: {one_each}")

# %% [markdown]
# The overlap is a fact about those two runs. The speed-up is not yet a fact about the
# settings: one run of each says nothing about how much a run varies, and on a busy machine one
# slow run can turn a gain into a loss. So we time several runs of each setting, *interleaved*
# (run 1 of each, then run 2 of each, ...: a machine that gets busier slows both alike), and
# give the ratio of the medians with its 95% bootstrap confidence interval. It is called
# *faster* or *slower* only when that interval excludes 1.0, otherwise *within noise*. When other
# processes kept the machine's cores busy meanwhile, a last line says so: then no interval is
# worth much, and the cure is a quiet machine or more repeats.

# %%
sessions = {
    inter: pg.Session(g, pg.Config(inter_op_threads=inter, intra_op_threads=1)) for inter in (1, 2)
}
# enough runs for an interval, and for the load check to judge: it needs MIN_WALL_S (0.25 s)
# of measuring, so on a fast machine we take more than 25 runs rather than say nothing
slowest_s = max(t.makespan_ms for t in traces.values()) / 1e3
repeats = max(25, int(2 * MIN_WALL_S / (2 * slowest_s)) + 1)
with LoadMonitor() as monitor:  # what else used the CPUs while we measured
    runs = measure_interleaved(sessions, out, repeats=repeats, warmup=1)
for session in sessions.values():
    session.close()
measured = speedup_text(runs[1].makespans_ms, runs[2].makespans_ms)
for inter, run in runs.items():
    q1, q3 = run.quartiles_ms()
    print(f"inter-op {inter}: median {run.median_ms:6.1f} ms of {repeats} runs", end=" ")
    print(f"(IQR {q1:.1f}-{q3:.1f})")
print(f"inter-op 2 against inter-op 1: {measured}")
said = load_note(monitor.load, threads_used=2)
if said:  # nothing is said on a quiet machine
    print(said)

# %% [markdown]
# The timelines of the two traced runs. Each panel's heading compares those two runs alone, one
# run each; the title gives the speed-up measured over all the runs of each:

# %%
pg.plot.compare(
    [traces[1], traces[2]],
    labels=["inter-op 1", "inter-op 2"],
    title=f"inter-op 2 against inter-op 1, medians of {repeats} runs: {measured}",
)

# %% [markdown]
# Why did they not overlap with one thread? Ask the trace:

# %%
traces[1].explain()

# %% [markdown]
# The same trace opens in [Perfetto](https://ui.perfetto.dev) or `chrome://tracing`:

# %%
traces[2].save("trace.ctf.json")
print(traces[2].summary())
