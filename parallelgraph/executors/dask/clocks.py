"""Worker clocks and trace records: a traced run's timings, put on the session's time base.

Workers time each op and shard with their own `perf_counter_ns` and keep the records under the
run's token (`worker.py`); after a traced run one `client.run` collects them, together with
the workers' incoming-transfer log (Dask's `transfer_incoming_log`, wall-clock times converted on
the worker). Worker clocks are put on the session's base with an offset estimated once per
worker from the fastest of a few round trips (zero when zero lies within the round trip, e.g.
processes of one machine, which share CLOCK_MONOTONIC). Lanes are "worker-N/T" (worker N's T-th
task thread; N numbers the workers by sorted address, as "worker:N" does), "worker-N/intra-op-I"
(its intra-op helpers) and "worker-N/transfer" (data arriving at worker N, as "copy" events), so
`plot`, `overlap` and `explain` work unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...trace.model import EventKind
from .worker import clock, collect_timings, probe_clock

#: Where trace records go: the session's recorder.
Record = Callable[[tuple[Any, ...]], None]


def clock_offsets(
    client: Any, addresses: Sequence[str], known: dict[str, int], probes: int
) -> dict[str, int]:
    """ns to add to each worker's perf_counter_ns to get this process's, estimated once per
    worker from the fastest of `probes` round trips; 0 when 0 is within that trip. Workers not
    in `known` are probed and added to it; returns `known`."""
    unknown = [a for a in addresses if a not in known]
    best: dict[str, tuple[int, int]] = {}
    for _ in range(probes if unknown else 0):
        sent = clock()
        stamps = client.run(probe_clock, workers=unknown, on_error="ignore")
        back = clock()
        for address, stamp in stamps.items():
            if isinstance(stamp, int) and back - sent < best.get(address, (1 << 62, 0))[0]:
                best[address] = (back - sent, (sent + back) // 2 - stamp)
    for address, (round_trip, offset) in best.items():
        known[address] = 0 if abs(offset) <= round_trip // 2 else offset
    return known


def collect_records(
    client: Any,
    tokens: list[str],
    names: dict[str, str],
    workers: list[str],
    started: int,
    record: Record,
    known: dict[str, int],
    probes: int,
) -> None:
    """Take the run's records from every worker and pass them to `record` on this
    process's clock: the last attempt's ops and shards, and transfers since `started`.
    `names` maps the run's Dask keys to op names; `known` and `probes` as in `clock_offsets`."""
    reports = client.run(collect_timings, tokens, list(names), on_error="ignore")
    reports = {a: r for a, r in reports.items() if isinstance(r, dict)}
    order = list(workers) + sorted(set(reports) - set(workers))
    offsets = clock_offsets(client, list(reports), known, probes)
    for address, report in reports.items():
        prefix, offset = f"worker-{order.index(address)}", offsets.get(address, 0)
        for kind, index, lane, start, end, *extra in report["records"][tokens[-1]]:
            lane = lane.replace("/", "-") if lane.startswith("intra-op") else lane
            record((kind, index, f"{prefix}/{lane}", start + offset, end + offset, *extra))
        wall_to_perf = report["perf"] + offset - int(report["wall"] * 1e9)
        for start, stop, moved in report["transfers"]:
            begin = wall_to_perf + int(start * 1e9)
            if begin < started:
                continue  # an earlier run's transfer of a cached source
            moved_names = [names[key] for key in moved]
            name = moved_names[0] + (f" +{len(moved) - 1}" if len(moved) > 1 else "")
            end = max(begin, wall_to_perf + int(stop * 1e9))
            record((EventKind.COPY, name, f"{prefix}/transfer", begin, end, sum(moved.values())))
