"""Our own files (`Trace.save`): every field comes back from the events' `args`.

Recognised by `otherData.format`; the trace's metadata (config, source, lane kinds) comes back
from `otherData.metadata`, and times are shifted back by `otherData.origin_ns`, which is what
makes `load` the exact inverse of `save`.
"""

from __future__ import annotations

from ..document import Document
from ..export import FORMAT
from . import generic
from .base import Converted, Producer, Setting, SettingWords

KNOBS = SettingWords(
    tool="parallelgraph",
    inter_op="raise inter_op_threads {change}: independent scopes could then run side by side.",
    intra_op="raise intra_op_threads {change}: one op's shards then run on several threads.",
    inter_op_setting=Setting("inter_op_threads", "inter_op_threads"),
    intra_op_setting=Setting("intra_op_threads", "intra_op_threads", to_cores=True),
    streams=(
        "Config(streams=2, stream_policy='branches'): independent chains then get their own "
        "CUDA streams and can run side by side on the GPU."
    ),
    one_at_a_time="one inter-op thread (inter_op_threads=1)",
    bigger_ops=(
        "make ops bigger: Config(fuse=True) runs each group of elementwise ops, and a matmul "
        "with its bias and activation, as one step (pg.sweep(build, {'fuse': [False, True]}) "
        "measures what it gains); or batch the work, or use fewer inter-op threads: tiny ops "
        "cost more to hand off than to run."
    ),
    bigger_ops_fused=(
        "make ops bigger (batch the work) or use fewer inter-op threads: tiny ops cost more "
        "to hand off than to run (this run had Config(fuse=True): what fusion can join is "
        "joined)."
    ),
    experiment=(
        "sweep the settings (pg.sweep(build, {'inter': [1, 2], 'intra': [1, 2]})) and read "
        "its verdicts, or trace two settings and compare them with pg.plot.compare."
    ),
)


#: The same words for a run of the Dask executor: its "threads" are a cluster's workers.
DASK_KNOBS = SettingWords(
    tool="parallelgraph on Dask",
    inter_op=(
        "more Dask workers: Config(executor='dask', inter_op_threads=N) starts a LocalCluster "
        "of N worker processes (one thread each); on your own cluster (dask_address), start "
        "more workers: independent scopes then run on different workers."
    ),
    intra_op=(
        "raise intra_op_threads: each worker then splits one op's shards over more threads "
        "(keep workers x intra-op threads within the cores)."
    ),
    streams=KNOBS.streams,
    one_at_a_time="one Dask worker (inter_op_threads=1)",
    bigger_ops=(
        "make ops bigger (batch the work): every task costs a round trip through the Dask "
        "scheduler, about a millisecond, whatever it computes."
    ),
    experiment=(
        "run it again with Config(executor='dask', inter_op_threads=2) and with the threads "
        "executor, trace both and compare them with pg.plot.compare."
    ),
)


def detect(document: Document) -> bool:
    other = document.header.get("otherData")
    return isinstance(other, dict) and other.get("format") == FORMAT


def convert(document: Document) -> Converted:
    converted = generic.convert(document, ours=True)
    origin = document.header["otherData"].get("origin_ns", 0)
    if isinstance(origin, int) and not isinstance(origin, bool):
        for draft in converted.drafts:
            draft.start, draft.end = draft.start + origin, draft.end + origin
    return converted


PRODUCER = Producer("parallelgraph", detect, convert, KNOBS)
