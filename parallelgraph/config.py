"""Session configuration: how many threads, which executor, which kernels.

`Config` is a frozen value; `config.replace(...)` makes a changed copy (the dashboard and sweeps
do this). TensorFlow 1.x names are accepted as aliases: `inter_op_parallelism_threads`,
`intra_op_parallelism_threads`, `allow_soft_placement`. As in TensorFlow, 0 threads means "one
per core"; `resolved()` turns those zeros into numbers.

The two pools, in one sentence each:
- `inter_op_threads`: how many *ops* may run at the same time (the calling thread is one of them).
- `intra_op_threads`: how many threads may work on the shards of *one* op (the op's own thread
  plus `intra_op_threads - 1` helpers from a pool that all running ops share).

Run knobs. A field whose metadata names a `control` (made by `knob(...)`) is a run knob: the
dashboard (`parallelgraph.widgets`) makes its control, its `Knobs` value and the Config it runs
from that metadata alone, the way `interact` makes a control from a parameter. A new run knob
is one field here:

    fuse: bool = field(default=False, metadata=knob("checkbox", "fuse", "one step per chain"))

Field metadata also carries a setting's `choices` (validated here, offered in menus), a count's
bounds (`counted`), its command-line flag and help (`cli_fields`, `flag_of`: the CLI makes
`parallelgraph run`'s flags from them), so each is written once; a bool field is validated as
one by its type. The executors' names come from `executors.registry` (read
lazily: the registry is a leaf, but `executors/` is the package that imports this one).
"""

from __future__ import annotations

import inspect
import numbers
import os
from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any

STREAM_POLICIES = ("single", "branches", "round_robin")
MATMUL_KERNELS = ("blas", "numba")
#: The most threads one pool may have. Far above any useful count (threads beyond the cores only
#: contend), low enough that a typo (100000) is refused before thousands of threads start.
MAX_THREADS = 1024
#: The most CUDA streams a config may ask for: like MAX_THREADS, far above any useful count (a
#: GPU runs a few dozen kernels at once at most), low enough that a typo (10**8) is refused
#: before the executor or the simulator makes a stream object per stream.
MAX_STREAMS = 1024

ALIASES = {
    "inter_op_parallelism_threads": "inter_op_threads",
    "intra_op_parallelism_threads": "intra_op_threads",
    "allow_soft_placement": "soft_placement",
}


def __getattr__(name: str) -> Any:
    if name == "EXECUTORS":  # every Config.executor value, from the executor registry
        return _executor_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _executor_names() -> tuple[str, ...]:
    from .executors.registry import EXECUTOR_NAMES

    return EXECUTOR_NAMES


def _usable_executors() -> tuple[str, ...]:
    """The executors a menu offers: those that can be made here (dask needs distributed)."""
    from .executors.registry import usable_executors

    return usable_executors()


def knob(control: str, label: str, help: str, **details: Any) -> dict[str, Any]:
    """Field metadata that makes a `Config` field a run knob of the dashboard.

    `control`: "slider" (an int; `range=(low, high)`, widened to hold the starting value),
    "dropdown" (the field's `choices`) or "checkbox" (a bool); `label` names the control and
    `help` is its tooltip. Optional details: `start`, the dashboard's first value where it is
    not the field's default; `row`, 1 (beside device and executor) or 2 (the default, with the
    thread counts); `gpu_only`, greyed unless ops run on a GPU; `choices` (a tuple, or a
    function returning one, asked when needed) and `menu` (what a menu offers, when fewer).

    >>> knob("slider", "streams", "CUDA streams", range=(1, 8))["control"]
    'slider'
    """
    if control not in ("slider", "dropdown", "checkbox"):
        raise ValueError(f"a knob's control is 'slider', 'dropdown' or 'checkbox', not {control!r}")
    return {"control": control, "label": label, "help": help, **details}


def counted(
    minimum: int, maximum: int, flag: str, help: str, too_many: Callable[[], str]
) -> dict[str, Any]:
    """Field metadata of a whole-number setting: its bounds (validated by `Config`, and by the
    CLI's flag), why the maximum (`too_many()`, words for the error) and its flag and help."""
    return {"minimum": minimum, "maximum": maximum, "too_many": too_many, "flag": flag,
            "help": help}  # fmt: skip


def _threads_words() -> str:
    return f"this machine has {cpu_count()} cores; 0 means one per core"


def _streams_words() -> str:
    return "a GPU runs a few dozen kernels at once at most"


def cli_fields(config_type: type[Config] | None = None) -> tuple[Field, ...]:
    """The fields of `config_type` (default: `Config`) the command line sets: all but those
    whose metadata says `flag=None` (objects, mappings)."""
    return tuple(f for f in fields(config_type or Config) if f.metadata.get("flag", "") is not None)


def flag_of(f: Field) -> str:
    """A field's command-line flag: its metadata's `flag`, else --its-name."""
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def choices_of(f: Field) -> tuple[Any, ...] | None:
    """The values a field allows (its metadata's `choices`, asked if a function), or None."""
    choices = f.metadata.get("choices")
    return tuple(choices()) if callable(choices) else choices


def run_knob_fields(config_type: type[Config] | None = None) -> tuple[Field, ...]:
    """The fields of `config_type` (default: `Config`) that are run knobs (`knob` metadata),
    in declaration order."""
    return tuple(f for f in fields(config_type or Config) if "control" in f.metadata)


def cpu_count() -> int:
    """Cores this process may use (affinity-aware where the OS tells)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True, init=False)
class Config:
    """How a Session runs a graph.

    >>> Config(inter_op_threads=2, intra_op_threads=1).inter_op_threads
    2
    >>> Config(inter_op_parallelism_threads=2).inter_op_threads   # TensorFlow's name
    2
    """

    inter_op_threads: int = field(
        default=0,
        metadata={
            **knob("slider", "inter-op", "ops running at the same time", range=(1, 8), start=2),
            **counted(0, MAX_THREADS, "--inter", "inter-op threads (0 = cores)", _threads_words),
        },
    )
    intra_op_threads: int = field(
        default=0,
        metadata={
            **knob("slider", "intra-op", "threads working on one op", range=(1, 8), start=1),
            **counted(0, MAX_THREADS, "--intra", "intra-op threads (0 = cores)", _threads_words),
        },
    )
    executor: str = field(
        default="threads",
        metadata=knob(
            "dropdown",
            "executor",
            "what runs the plan",
            row=1,
            choices=_executor_names,
            menu=_usable_executors,
        ),
    )
    streams: int = field(
        default=1,
        metadata={
            **knob("slider", "streams", "CUDA streams (GPU ops)", range=(1, 8), gpu_only=True),
            **counted(1, MAX_STREAMS, "--streams", "CUDA streams", _streams_words),
        },
    )
    stream_policy: str = field(
        default="branches",
        metadata=knob(
            "dropdown",
            "policy",
            "which GPU op goes on which stream",
            choices=STREAM_POLICIES,
            gpu_only=True,
        ),
    )
    soft_placement: bool = field(
        default=True, metadata={"help": "ops on a device this session cannot use run on cpu:0"}
    )
    matmul_kernel: str = field(
        default="blas",
        metadata={"choices": MATMUL_KERNELS, "help": "NumPy's BLAS, or the Numba GEMM"},
    )
    #: Run matmul -> add(bias) [-> relu | tanh | sigmoid] as one step, and each group of
    #: elementwise ops as one step and one kernel, where nothing else needs the intermediate
    #: values (see `parallelgraph.ops.fused`, `parallelgraph.ops.fused_elementwise`); outputs
    #: stay bit-identical.
    fuse: bool = field(
        default=False, metadata={"help": "fuse elementwise groups and matmul epilogues"}
    )
    #: GPU plans: replay each untraced run's GPU work as one CUDA graph, captured after the
    #: plan's first run (see `parallelgraph.executors.cuda_graphs`); plain launches where that
    #: cannot be done, and the plan's notes say why.
    cuda_graph: bool = field(default=False, metadata={"help": "replay GPU work as one CUDA graph"})
    #: executor="dask": a scheduler address ("tcp://host:8786"), or an existing
    #: `distributed.Client`; with neither, the session starts and owns a LocalCluster.
    dask_address: str | None = field(
        default=None,
        metadata={
            "flag": "--address",
            "help": "executor dask: scheduler address (default: a LocalCluster)",
        },
    )
    dask_client: Any = field(default=None, metadata={"flag": None})  # an object: no flag
    #: executor="dask": pin top-level scopes to workers, e.g. {"net1": 0, "net2": 1} (the N-th
    #: worker by address), like a `pg.device("worker:N")` scope; None lets Dask choose.
    dask_placement: dict[str, int] | None = field(default=None, metadata={"flag": None})

    def __init__(self, **settings: Any):
        names = {f.name for f in fields(self)}
        chosen: dict[str, Any] = {}
        for key, value in settings.items():
            name = ALIASES.get(key, key)
            if name not in names:
                known = sorted(names | set(ALIASES))
                raise TypeError(f"Config got an unknown setting {key!r}; known: {known}")
            if name in chosen:
                raise TypeError(f"Config got {name!r} twice (once through an alias)")
            chosen[name] = value
        for f in fields(self):
            object.__setattr__(self, f.name, chosen.get(f.name, f.default))
        self._validate()

    def _validate(self) -> None:
        for f in fields(self):
            if "minimum" in f.metadata:
                self._validate_count(f)
            elif f.type in ("bool", bool) and not isinstance(getattr(self, f.name), bool):
                raise ValueError(
                    f"Config.{f.name} must be True or False, got {getattr(self, f.name)!r}"
                )
        for f in fields(self):
            allowed = choices_of(f)
            if allowed is not None and getattr(self, f.name) not in allowed:
                raise ValueError(
                    f"Config.{f.name} must be one of {allowed}, got {getattr(self, f.name)!r}"
                )
        placement = self.dask_placement
        if placement is not None and not (
            isinstance(placement, dict)
            and all(
                isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in placement.items()
            )
        ):
            raise ValueError(
                f"Config.dask_placement must map scope names to worker numbers, got {placement!r}"
            )
        address = self.dask_address
        if address is not None and (
            not isinstance(address, str) or not address.strip() or address != address.strip()
        ):
            raise ValueError(
                f"Config.dask_address must be a scheduler address like 'tcp://host:8786', "
                f"got {address!r}"
            )

    def _validate_count(self, f: Field) -> None:
        """A whole-number field within its metadata's `minimum` and `maximum` (`counted`)."""
        name, minimum, maximum = f.name, f.metadata["minimum"], f.metadata["maximum"]
        value = getattr(self, name)
        if isinstance(value, numbers.Integral) and not isinstance(value, (bool, int)):
            value = int(value)  # NumPy's ints (a sweep over np.arange) are counts too
            object.__setattr__(self, name, value)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"Config.{name} must be an int >= {minimum}, got {value!r}")
        if value > maximum:
            raise ValueError(
                f"Config.{name} must be at most {maximum} ({f.metadata['too_many']()}), got {value}"
            )

    def replace(self, **changes: Any) -> Config:
        """A copy with some settings changed (aliases accepted)."""
        settings = {f.name: getattr(self, f.name) for f in fields(self)}  # shallow: keeps Clients
        named = [ALIASES.get(k, k) for k in changes]
        twice = sorted({name for name in named if named.count(name) > 1})
        if twice:
            raise TypeError(f"Config.replace got {twice[0]!r} twice (once through an alias)")
        changed = {**settings, **{ALIASES.get(k, k): v for k, v in changes.items()}}
        return type(self)(**changed)  # a subclass's copy keeps its own fields

    def resolved(self) -> Config:
        """A copy where 0 threads is replaced by the number of cores, as TensorFlow does."""
        cores = cpu_count()
        return self.replace(
            inter_op_threads=self.inter_op_threads or cores,
            intra_op_threads=self.intra_op_threads or cores,
        )

    def as_dict(self) -> dict[str, Any]:
        """The settings as plain JSON-able values (a Dask client becomes its repr)."""
        settings = {f.name: getattr(self, f.name) for f in fields(self)}
        if settings["dask_client"] is not None:
            settings["dask_client"] = repr(settings["dask_client"])
        return settings


def _signature_of_fields(config_type: type) -> inspect.Signature:
    """Config's parameters as its fields say them (name, type, default), keyword-only: what
    `inspect.signature`, Shift-Tab and help() show for `Config(...)`, whose own `__init__`
    takes `**settings` to accept the TensorFlow-style aliases too (`ALIASES`)."""
    parameters = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=f.default if f.default is not MISSING else None,
            annotation=f.type,
        )
        for f in fields(config_type)
    ]
    return inspect.Signature(parameters, return_annotation=None)


Config.__signature__ = _signature_of_fields(Config)  # type: ignore[attr-defined]
