"""First runs: what a fresh process pays before the seed graph runs at its steady speed.

    python benchmarks/first_run.py [--processes 5] [--size medium] [--cold]

Each process (a fresh interpreter, so nothing is loaded yet) imports parallelgraph, creates a
Session for the seed graph (two networks, inter-op 2, intra-op 1) and times: the import, the
Session's creation (which starts Numba: `Session.numba_start_s`), the first traced run, and
the median of five later runs. The first run's trace says how long Numba's compiler held it up
(`trace.metadata["jit"]`). `--cold` gives every process an empty Numba cache directory of its
own, so the first run compiles every kernel the graph needs: the first run ever on a machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from _common import table

ONE_PROCESS = """
import json, statistics, sys, time
start = time.perf_counter()
import parallelgraph as pg
imported = time.perf_counter()
preset = pg.presets.two_networks(sys.argv[1])
created = time.perf_counter()
session = pg.Session(preset.graph, pg.Config(inter_op_threads=2, intra_op_threads=1))
ready = time.perf_counter()
_, first = session.run(preset.fetch, trace=True)
first_s = time.perf_counter() - ready
steady = []
for _ in range(5):
    begin = time.perf_counter()
    session.run(preset.fetch)
    steady.append(time.perf_counter() - begin)
session.close()
print(json.dumps({
    "import_s": imported - start,
    "session_s": ready - created,
    "numba_start_s": session.numba_start_s,
    "first_s": first_s,
    "steady_s": statistics.median(steady),
    "jit": first.info.jit.to_json(),
}))
"""


def one_process(size: str, cache_dir: str | None) -> dict:
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    done = subprocess.run(
        [sys.executable, "-c", ONE_PROCESS, size], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr.strip().splitlines()[-1])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=5, help="fresh processes (default 5)")
    parser.add_argument("--size", default="medium", help="seed graph size (default medium)")
    parser.add_argument("--cold", action="store_true", help="an empty Numba cache per process")
    args = parser.parse_args()
    if args.processes < 1:
        parser.error("--processes must be at least 1")
    rows = []
    for number in range(1, args.processes + 1):
        with tempfile.TemporaryDirectory() as cold:
            facts = one_process(args.size, cold if args.cold else None)
        jit = facts["jit"]
        rows.append(
            [
                number,
                f"{facts['import_s'] * 1e3:.0f}",
                f"{facts['session_s'] * 1e3:.0f}",
                f"{facts['first_s'] * 1e3:.1f}",
                f"{facts['steady_s'] * 1e3:.1f}",
                f"{(facts['first_s'] - facts['steady_s']) * 1e3:+.1f}",
                f"{jit['busy_s'] * 1e3:.1f}",
                f"{jit['compiled']} in {jit['compile_s']:.2f} s",
            ]
        )
    cache = "an empty Numba cache each (cold)" if args.cold else "Numba's cache as it is (warm)"
    print(f"## First runs: seed graph {args.size}, inter 2 / intra 1, {cache}\n")
    header = [
        "process",
        "import ms",
        "Session() ms",
        "first run ms",
        "steady ms",
        "first - steady ms",
        "jit busy in first ms",
        "kernels compiled",
    ]
    print(table(header, rows))


if __name__ == "__main__":
    main()
