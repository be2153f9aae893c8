"""The planner's cost model against the kernels' measured times, op by op.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/cost_model.py [ROWS COLS]

The planner decides two things from `plan.estimated_ns` (an op's FLOPs at its OpDef's
`flops_per_ns` plus its bytes at `plan.BYTES_PER_NS`): how many shards an op gets (a shard
should carry `MIN_SHARD_NS`) and whether it is worth waking another worker for
(`costs.INEXPENSIVE_NS`). An estimate many times too long splits microsecond ops into shards
whose hand-offs cost more than they save, and wakes threads for them. For each op kind on
ROWS x COLS float32 (default 256 x 1024; 64 x 128 is the seed graph's small size), one thread,
traced, 9 runs: the estimate, the median measured time, their ratio and the shards planned.
Results: benchmarks/RESULTS.md, "Cost model".
"""

from __future__ import annotations

import statistics
import sys

import parallelgraph as pg
from parallelgraph.plan import estimated_ns


def main(rows: int, cols: int) -> None:
    g = pg.Graph("cost-model")
    with g.as_default():
        x = pg.random_normal((rows, cols), seed=1)
        y = pg.random_normal((rows, cols), seed=2)
        w = pg.variable((cols, cols), name="w")
        outs = [pg.add(x, y), pg.multiply(x, y), pg.relu(x), pg.tanh(x), pg.matmul(x, w)]
        total = pg.add_n([pg.reduce_sum(o) for o in outs])
    times: dict[str, list[int]] = {}
    with pg.Session(g, pg.Config(inter_op_threads=1, intra_op_threads=1)) as session:
        session.run(total)  # compiles, first touch
        plan = session.plan_for(total)
        for _ in range(9):
            _, trace = session.run(total, trace=True)
            for event in trace.ops():
                times.setdefault(event.name, []).append(event.duration_ns)
    print(f"{rows} x {cols} float32, one thread, medians of 9 traced runs")
    print("| op | estimate us | measured us | estimate / measured | shards |")
    print("|---|---|---|---|---|")
    seen = set()
    for step in plan.steps:
        kind = step.op.type if step.op.shape == (rows, cols) else f"{step.op.type} (to a scalar)"
        if kind in seen or step.op.name not in times:
            continue
        seen.add(kind)
        measured = statistics.median(times[step.op.name])
        estimate = estimated_ns(step.definition, step.cost)
        print(
            f"| {kind} | {estimate / 1e3:.1f} | {measured / 1e3:.1f} | "
            f"{estimate / measured:.2f} | {len(step.shards)} |"
        )


if __name__ == "__main__":
    main(*(int(value) for value in sys.argv[1:3])) if len(sys.argv) >= 3 else main(256, 1024)
