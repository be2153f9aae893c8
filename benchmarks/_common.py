"""Helpers for the benchmark scripts: interleaved repeats, medians, tables, JSON-line worker
processes, and what the machine can do (BLAS GFLOP/s, memory bandwidth)."""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor


def interleaved(
    cases: dict[str, Callable[[], object]], repeats: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Time every case `repeats` times, round-robin (so drift hits all alike); seconds."""
    for case in cases.values():
        for _ in range(warmup):
            case()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, case in cases.items():
            start = time.perf_counter()
            case()
            times[name].append(time.perf_counter() - start)
    return times


def median(values: list[float]) -> float:
    return statistics.median(values)


def spread(values: list[float]) -> str:
    """The interquartile range as a percentage of the median."""
    if len(values) < 4:
        return "-"
    q1, _, q3 = statistics.quantiles(values, n=4)
    return f"{100 * (q3 - q1) / statistics.median(values):.0f}%"


def table(header: list[str], rows: list[list[object]]) -> str:
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def alternated(
    cases: dict[str, Callable[[], float]], repeats: int, warmup: int = 1, seed: int = 0
) -> dict[str, list[float]]:
    """`warmup` untimed calls of every case, then `repeats` rounds calling each case once, in
    an order shuffled per round (so drift, and whoever runs first, hit all alike). Each case
    returns the seconds it measured itself (a worker process times its own step)."""
    order = list(cases)
    for _ in range(warmup):
        for name in order:
            cases[name]()
    rng = random.Random(seed)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        rng.shuffle(order)
        for name in order:
            times[name].append(cases[name]())
    return times


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


# -- worker processes that answer JSON lines (a framework's pools are process-wide) -------------
class LineWorker:
    """A child process that answers each JSON-line request with one JSON line.

    The child writes its replies on the channel `reply_channel()` gives it (its original
    stdout; what libraries print there goes to stderr instead). `hello` is its first line."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, quiet: bool = False):
        # quiet: the child's stderr goes to a temporary file, shown only if it dies
        self.log = tempfile.TemporaryFile("w+") if quiet else None
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
            env=env,
        )  # fmt: skip
        self.hello: dict | None = None

    def send(self, **message: object) -> None:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            code, said = self.process.wait(), ""
            if self.log is not None:
                self.log.seek(0)
                said = ": ..." + self.log.read()[-2000:]
            raise RuntimeError(f"worker {self.process.args[1:]} exited ({code}){said}")
        reply = json.loads(line)
        if self.hello is None:
            self.hello = reply
        return reply

    def request(self, **message: object) -> dict:
        self.send(**message)
        return self.read()

    def pause(self) -> None:
        """SIGSTOP the child: its threads (spinning ones too) take no CPU from others' runs."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def close(self) -> None:
        if self.process.poll() is None:
            self.resume()
        if self.process.stdin and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.log is not None:
            self.log.close()


def reply_channel():
    """In a worker: a line-buffered file on the original stdout for replies; fd 1 itself then
    points at stderr, so a library's prints cannot corrupt a reply."""
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(2, 1)
    return channel


# -- what this machine can do: BLAS GFLOP/s, memory bandwidth, the BLAS in use -----------------
def blas_gflops(threads: int, size: int = 1024, repeats: int = 5) -> float:
    """float32 GFLOP/s of NumPy's matmul with `threads` BLAS threads (best of `repeats`)."""
    import numpy as np
    import threadpoolctl

    a = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
    with threadpoolctl.threadpool_limits(threads, user_api="blas"):
        a @ a
        best = min(timed(lambda: a @ a) for _ in range(repeats))
    return 2 * size**3 / best / 1e9


def memory_gbps(threads: int, megabytes: int = 256, repeats: int = 5) -> float:
    """GB/s (read + write) of `np.copyto` of a `megabytes` float32 array, split in `threads`
    slices copied by as many threads at once (NumPy's copy releases the GIL); best of
    `repeats`."""
    import numpy as np

    count = megabytes * 2**20 // 4
    src, dst = np.ones(count, np.float32), np.zeros(count, np.float32)
    bounds = np.linspace(0, count, threads + 1).astype(int)
    parts = [(dst[a:b], src[a:b]) for a, b in itertools.pairwise(bounds)]
    with ThreadPoolExecutor(threads) as pool:

        def copy() -> None:
            list(pool.map(lambda part: np.copyto(*part), parts))

        copy()
        best = min(timed(copy) for _ in range(repeats))
    return 2 * src.nbytes / best / 1e9


def blas_description() -> str:
    """The BLAS NumPy runs here, as threadpoolctl reports it."""
    import numpy  # noqa: F401  (loads the BLAS threadpoolctl reports)
    import threadpoolctl

    rows = [
        f"{info.get('internal_api')} {info.get('version')}, kernel {info.get('architecture')}, "
        f"{info.get('num_threads')} thread(s) ({info.get('filepath')})"
        for info in threadpoolctl.threadpool_info()
        if info.get("user_api") == "blas"
    ]
    return "; ".join(rows) or "no BLAS found by threadpoolctl"


def simd_level() -> str:
    """The CPU LLVM compiles for and its widest SIMD (what every table should say it ran on)."""
    from numba.core.registry import cpu_target

    codegen = cpu_target.target_context.codegen()
    features = set(codegen._get_host_cpu_features().split(","))
    for level in ("avx512f", "avx2", "avx", "sse4.2"):
        if "+" + level in features:
            return f"{codegen._get_host_cpu_name()} (widest: {level})"
    return codegen._get_host_cpu_name()


def warm_rounds(cases: dict, repeats: int) -> dict[str, list[float]]:
    """Seconds of each case, `repeats` rounds of every case in turn, each timed call right
    after an untimed one of the same case."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, case in cases.items():
            case()
            start = time.perf_counter()
            case()
            times[name].append(time.perf_counter() - start)
    return times
