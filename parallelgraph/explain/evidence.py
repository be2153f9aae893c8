"""The facts behind each statement of `explain()`: typed records, built before any wording.

`explain()` works in two steps. First each check looks at the trace and, when its cause holds,
returns one of these records with the numbers it rests on: the chain of inputs behind "a
dependency", the window and the busy share behind "every worker busy", the concurrency behind
"one at a time", the median behind "too short". Only then is the sentence written, from the
record. So a statement can be checked against its numbers (the tests run every fixture and
generated trace and check each record against facts they compute themselves), and a cause the
trace cannot settle is `Undetermined`, with the experiment that would settle it, rather than a
guess.

Times are in ns, shares in [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DependencyEvidence:
    """One branch consumed the other's results: `chain` is the path of inputs from the
    `producer` (of one branch) to the `consumer` (of the other), each a real input of the next;
    the needed ops hold `share` of the producer branch's busy time."""

    producer: str
    consumer: str
    chain: tuple[str, ...]
    count: int
    share: float


@dataclass(frozen=True)
class PlacementEvidence:
    """Ops placed on a GPU ran on the CPU (soft placement) although `streams` were asked for."""

    moved: int
    streams: int
    inter_op_threads: int | None


@dataclass(frozen=True)
class OneAtATimeEvidence:
    """Only one op could run at a time: by the run's `setting` (e.g. "inter_op_threads=1"), or
    because no two ops in the trace ran at once (`concurrency`, the share of the computing time
    with two or more ops running — an op's own intra-op threads aside — below
    `ONE_AT_A_TIME`)."""

    lanes: tuple[str, ...]
    concurrency: float
    setting: str | None


@dataclass(frozen=True)
class OneStreamEvidence:
    """GPU ops of both branches went to one stream: `share` of their time was on `lane`."""

    lane: str
    share: float
    streams: int | None
    policy: str | None


@dataclass(frozen=True)
class AllBusyEvidence:
    """Every one of `workers` was running an op for `busy_share` of `window_ns` — the time
    `when` names ("until net3 started", or "while one of them ran alone")."""

    workers: tuple[str, ...]
    window_ns: int
    busy_share: float
    when: str
    others: tuple[str, ...]


@dataclass(frozen=True)
class ShortOpsEvidence:
    """The ops are short: `short_share` of their time is in ops under the threshold, median
    `median_ns`; `one_lane` when all ran on one of several available threads."""

    median_ns: int
    short_share: float
    one_lane: bool
    gpu: bool


@dataclass(frozen=True)
class LatencyEvidence:
    """Ops started a median `median_wait_ns` after their last input ended (`ops` measured)."""

    median_wait_ns: int
    ops: int


@dataclass(frozen=True)
class Undetermined:
    """No cause the trace supports: the lanes had idle time (`idle_share` of the pair's window
    per lane) and no dependency was traced; `experiment` would settle it."""

    idle_share: tuple[tuple[str, float], ...]
    experiment: str


@dataclass(frozen=True)
class Oversubscription:
    """More threads were runnable than the run had cores: `share` of the run had more than
    `cores` runnable, `per_core` of them per core on average then. `threads` is what ran them:
    the lanes busy at once, or a recorded setting's threads per op (`setting`, its `value`)
    where the helpers record no lanes of their own."""

    threads: int
    cores: int
    per_core: float
    share: float
    setting: str | None = None
    value: int | None = None


@dataclass(frozen=True)
class Advice:
    """The one change most likely to help, and what it rests on.

    `knob` names the kind of change ("inter_op", "intra_op", "streams", "bigger_ops",
    "critical_path", "idle_gaps", "experiment", "none", "gpu"); `busy_share` is the lanes' work
    over lanes x makespan when the advice rests on it ("every lane was busy" needs at least
    `EVERY_LANE_BUSY`), else None.
    """

    text: str
    knob: str
    busy_share: float | None = None


#: "Every lane was busy" is said only when the lanes' work fills this share of lanes x makespan.
EVERY_LANE_BUSY = 0.9
