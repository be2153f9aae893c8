"""Draw the README's "bring your own trace" pictures from the framework traces that ship with
the package (parallelgraph.recorded: real PyTorch and TensorFlow runs).

    python tools/make_trace_pictures.py   # docs/pytorch_trace.png, docs/tensorflow_replay.png,
                                          # docs/waiting_trace.png
"""

from __future__ import annotations

from pathlib import Path

import parallelgraph as pg
from parallelgraph.recorded import framework_trace

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
REAL = ROOT / "tests" / "fixtures" / "real"


def main() -> None:
    eager = framework_trace("pytorch-eager")
    figure = eager.plot(
        title="PyTorch 2.13, eager: net1 then net2 on one thread (nested ops as sub-rows)"
    )
    figure.savefig(DOCS / "pytorch_trace.png", dpi=72)
    tf1 = framework_trace("tensorflow-inter1")
    predicted = pg.simulate(tf1, pg.Config(inter_op_threads=2, intra_op_threads=1), cores=2)
    tf2 = framework_trace("tensorflow-inter2")
    figure = pg.plot.compare(
        [tf1, predicted, tf2],
        labels=["TF inter 1 (traced)", "replayed with 2 threads", "TF inter 2 (traced)"],
        branches=("net1", "net2"),
    )
    figure.savefig(DOCS / "tensorflow_replay.png", dpi=60)
    fork1 = pg.Trace.load(REAL / "torch2_fork_interop1.json")
    replayed = pg.simulate(fork1, pg.Config(inter_op_threads=2, intra_op_threads=1), cores=2)
    fork2 = pg.Trace.load(REAL / "torch2_fork_interop2.json")
    figure = pg.plot.compare(
        [fork1, replayed, fork2],
        labels=["interop 1 (traced)", "replayed with 2", "interop 2 (traced)"],
        branches=("net1", "net2"),
    )
    figure.savefig(DOCS / "waiting_trace.png", dpi=60)
    print(f"wrote {DOCS / 'pytorch_trace.png'}, tensorflow_replay.png and waiting_trace.png")


if __name__ == "__main__":
    main()
