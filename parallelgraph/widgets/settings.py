"""The dashboard's settings model: what one run depends on, as frozen values.

- `GraphSource`: what makes the graph, a build function (called with the parameters in a fresh
  `pg.Graph` under `pg.device(...)`) or a graph already built with its fetches; `Built` is the
  graph it made. The built-in graphs are one more build function, `preset_graph`.
- `Knobs`: the run knobs, where and how the graph runs and how often. Its fields are *derived*:
  `device` and `repeats` are the dashboard's own (`DEVICE`, `REPEATS`), every other field is a
  `Config` field whose metadata makes it a run knob (`config.knob`), read as a `RunKnob`. So a
  new run knob is one field in config.py: its control, its `Knobs` field and its place in the
  Config the runner opens a session with all follow (`knobs_class`, `controls.knob_controls`).
- `Settings`: the source, its parameters and the knobs; compared to decide what a run rebuilds
  (`graph_key`, `session_key`) and which runs may be compared (`same_graph`).

Nothing here imports ipywidgets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields, make_dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..config import Config, choices_of, run_knob_fields
from ..devices import Device
from ..executors.registry import executor_spec
from ..experiments.preset_record import graph_and_fetches, tensors_in
from ..experiments.presets import Preset, build_preset
from ..graph import Graph

#: The devices the dashboard offers (ops on gpu:0 run on the CPU where no GPU is usable).
DEVICES = ("cpu", "gpu:0")
#: The most traced runs one Run may ask for: enough for a tight interval of a few-percent
#: difference; each run keeps its trace (a few hundred kB for a graph of hundreds of ops).
MAX_REPEATS = 200


def _gpu_usable() -> bool:
    """Whether ops placed on a GPU run there (numba.cuda, or its simulator when enabled)."""
    from ..executors.cuda import gpu_available

    return gpu_available()


# -- the knobs ------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunKnob:
    """One run knob as the dashboard shows it: a `Config` field's `knob` metadata (`of`), or
    one of the dashboard's own (`DEVICE`, `REPEATS`, which are not Config settings).

    `control` is "slider", "dropdown" or "checkbox"; `start` the dashboard's first value;
    `range` a slider's (low, high); `choices` a dropdown's allowed values and `menu` what it
    offers (a tuple, or a function asked when the control is made); `row` 1 or 2 of the knob
    rows; `gpu_only` greys the control unless ops run on a GPU.

    >>> RunKnob.of(next(f for f in fields(Config) if f.name == "streams")).range
    (1, 8)
    """

    name: str
    control: str
    label: str
    help: str
    start: Any
    type: Any = Any
    range: tuple[int, int] = (0, 0)
    choices: Callable[[], tuple[Any, ...]] | tuple[Any, ...] = ()
    menu: Callable[[], tuple[Any, ...]] | tuple[Any, ...] | None = None
    row: int = 2
    gpu_only: bool = False
    in_config: bool = True

    @classmethod
    def of(cls, config_field: Field) -> RunKnob:
        """The knob a Config field's metadata describes."""
        meta = config_field.metadata
        return cls(
            name=config_field.name,
            control=meta["control"],
            label=meta["label"],
            help=meta["help"],
            start=meta.get("start", config_field.default),
            type=config_field.type,
            range=tuple(meta.get("range", (0, 0))),
            choices=choices_of(config_field) or (),
            menu=meta.get("menu"),
            row=meta.get("row", 2),
            gpu_only=meta.get("gpu_only", False),
        )

    def options(self) -> tuple[Any, ...]:
        """What the knob's dropdown offers (its `menu`, else its `choices`)."""
        offered = self.choices if self.menu is None else self.menu
        return tuple(offered()) if callable(offered) else tuple(offered)


#: The dashboard's own knobs: where ops are placed, and how many traced runs a Run makes.
DEVICE = RunKnob(
    "device", "dropdown", "device", "where ops are placed", "cpu", "str", choices=DEVICES, row=1,
    in_config=False,
)  # fmt: skip
REPEATS = RunKnob(
    "repeats", "slider", "repeats", "traced runs per Run", 7, "int", range=(1, MAX_REPEATS),
    row=1, in_config=False,
)  # fmt: skip


#: The knobs `KnobsBase.label` and the trace file names word themselves.
WORDED = frozenset(
    (
        "device",
        "repeats",
        "executor",
        "inter_op_threads",
        "intra_op_threads",
        "streams",
        "stream_policy",
    )
)


def _worded(value: Any) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


class KnobsBase:
    """What every `Knobs` class does; its fields are made by `knobs_class`."""

    #: The Config class the knobs are read from and make.
    config_type: ClassVar[type[Config]]
    #: The knobs, in the order of the class's fields.
    specs: ClassVar[tuple[RunKnob, ...]]

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or self.repeats < 1:
            raise ValueError(f"repeats must be an int >= 1, got {self.repeats!r}")
        self.config()  # Config checks the thread and stream counts and the choices

    def config(self) -> Config:
        """The Config these knobs run with (every knob that is a Config setting)."""
        settings = {k.name: getattr(self, k.name) for k in self.specs if k.in_config}
        return self.config_type(**settings)

    @property
    def on_gpu(self) -> bool:
        """Whether ops are placed on a GPU (where streams and their policy matter)."""
        return Device(self.device).is_gpu

    def label(self) -> str:
        """The thread (and stream) settings in a few words, then every other knob that is
        not at its default (`changed`), as "label value"."""
        if not executor_spec(self.executor).has_thread_pools:
            text = "one thread (reference)"
        else:
            text = f"inter {self.inter_op_threads}, intra {self.intra_op_threads}"
            if self.on_gpu and _gpu_usable():  # streams only where GPU ops ran
                text += f", {self.streams} stream(s) {self.stream_policy}"
        return ", ".join([text, *(f"{k.label} {_worded(value)}" for k, value in self.changed())])

    def changed(self) -> list[tuple[RunKnob, Any]]:
        """The knobs `label` does not word itself that apply to this run (a `gpu_only` one on a
        GPU) and differ from their Config default, with their values: how a new knob shows in
        the run's label and its trace's file name with no code of its own."""
        defaults = self.config_type()
        return [
            (k, getattr(self, k.name))
            for k in self.specs
            if k.in_config
            and k.name not in WORDED
            and (self.on_gpu or not k.gpu_only)
            and getattr(self, k.name) != getattr(defaults, k.name)
        ]

    if TYPE_CHECKING:  # the fields every Knobs class has (derived from Config's metadata)
        device: str
        repeats: int
        executor: str
        inter_op_threads: int
        intra_op_threads: int
        streams: int
        stream_policy: str


def knob_specs(config_type: type[Config] = Config) -> tuple[RunKnob, ...]:
    """The run knobs of `config_type`: the device, its fields with `knob` metadata, repeats."""
    return (DEVICE, *(RunKnob.of(f) for f in run_knob_fields(config_type)), REPEATS)


def knobs_class(config_type: type[Config] = Config, name: str = "Knobs") -> type[KnobsBase]:
    """A frozen dataclass of the run knobs of `config_type` (see the module docstring): one
    field per `knob_specs` entry, defaulting to its `start`. `Knobs` is `knobs_class(Config)`."""
    specs = knob_specs(config_type)
    return make_dataclass(
        name,
        [(k.name, k.type, field(default=k.start)) for k in specs],
        bases=(KnobsBase,),
        frozen=True,
        namespace={
            "config_type": config_type,
            "specs": specs,
            "__module__": __name__,
            "__doc__": KNOBS_DOC,
        },
    )


KNOBS_DOC = """The run knobs: where and how the graph runs, and how often (`Config`'s run knobs
    and the dashboard's device and repeats; see the module docstring).

    >>> Knobs(inter_op_threads=1).config().inter_op_threads
    1
    """

Knobs = knobs_class(Config)
KNOB_NAMES = tuple(f.name for f in fields(Knobs))


# -- the graph ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Built:
    """A built graph: what to fetch, its top-level scopes (the first two are compared for
    overlap; none for graphs without independent parts) and its size in words."""

    graph: Graph
    fetch: Any
    scopes: tuple[str, ...]
    description: str


class GraphSource:
    """What makes the graph: a build function (called with the parameters in a fresh
    `pg.Graph` under `pg.device(...)`) or a graph already built with its fetches.

    Two sources are the same graph only if they are the same function or the same Graph object:
    a result is compared with a pinned one only then (and with equal parameters).
    """

    def __init__(
        self,
        build: Callable[..., Any] | None = None,
        graph: Graph | None = None,
        fetches: Any = None,
    ):
        if (build is None) == (graph is None):
            raise TypeError("give a build function or a built graph, not both")
        self.build, self.graph, self.fetches = build, graph, fetches
        self.name = getattr(build, "__name__", "build") if build else f"graph {graph.name!r}"

    def _identity(self) -> object:
        return self.build if self.build is not None else self.graph

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GraphSource) and self._identity() is other._identity()

    def __hash__(self) -> int:
        return id(self._identity())

    def __repr__(self) -> str:
        return f"<GraphSource {self.name}>"

    def make(self, params: Mapping[str, Any], device: str) -> Built:
        """Build (or take) the graph for `params`, its ops placed on `device`."""
        from ..graph import device as device_scope

        if self.graph is not None:
            return built_from(self.graph, self.fetches)
        placed = None if Device(device).is_cpu else device
        with Graph(self.name).as_default(), device_scope(placed):
            output = self.build(**params)
        if isinstance(output, Preset):  # it built its own graph
            return Built(output.graph, output.fetch, output.scopes, output.description)
        graph, fetches = graph_and_fetches(output)  # tensors, a (graph, fetches) pair, a Graph
        return built_from(graph, fetches)


def built_from(graph: Graph | None, fetches: Any) -> Built:
    """A Built for `fetches`: tensors of one graph (of `graph`, when given)."""
    tensors = tensors_in(fetches)
    if not tensors:
        raise TypeError(
            f"nothing to fetch in {fetches!r}: a build function returns what to fetch (a Tensor, "
            "or a list, tuple or dict of them)"
        )
    graphs = {id(t.graph): t.graph for t in tensors}
    if len(graphs) > 1 or (graph is not None and id(graph) not in graphs):
        raise ValueError("the fetches must be tensors of the one graph the dashboard runs")
    graph = tensors[0].graph
    scopes = tuple(dict.fromkeys(op.scope.split("/", 1)[0] for op in graph.ops if op.scope))
    return Built(graph, fetches, scopes, f"{len(graph.ops)} ops")


def preset_graph(
    preset: str = "two-networks", batch: int = 64, hidden: int = 256, dtype: str = "float32"
) -> Preset:
    """The built-in graphs as one build function (`experiments.presets` at explicit sizes:
    two-networks "small" is batch 64, hidden 256; wide/chain/random "small" is 64, 128).

    Ops go on the device of the surrounding `pg.device(...)` block, as any build function's.
    """
    size = (batch, hidden, hidden, batch) if preset == "two-networks" else (batch, hidden)
    return build_preset(preset, size, dtype, _current_device())


def _current_device() -> str | None:
    """The device of the innermost `pg.device` block of this thread (None: the default)."""
    from ..graph import _context

    devices = _context().devices
    return devices[-1] if devices and not devices[-1].is_cpu else None


# -- settings -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    """Everything one run depends on: the graph source, its parameters, the knobs.

    Frozen and compared to decide rebuilds (`graph_key`, `session_key`) and comparisons
    (`same_graph`).
    """

    source: GraphSource
    params: tuple[tuple[str, Any], ...] = ()
    knobs: Knobs = field(default_factory=Knobs)

    @classmethod
    def of(cls, source: GraphSource, params: Mapping[str, Any], knobs: Knobs) -> Settings:
        return cls(source, tuple(params.items()), knobs)

    @property
    def params_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def graph_key(self) -> tuple[Any, ...]:
        """What the graph depends on: a change rebuilds the graph (and the session)."""
        return (self.source, self.params, self.knobs.device)

    def session_key(self) -> tuple[Any, ...]:
        """What the session depends on: a change rebuilds the session (closing the old one)."""
        return (*self.graph_key(), *sorted(self.knobs.config().as_dict().items()))

    def same_graph(self, other: Settings) -> bool:
        """Same build function (or graph) and parameters: runs that may be compared."""
        return (self.source, self.params) == (other.source, other.params)

    def graph_label(self) -> str:
        """`build(batch=64, hidden=512)`, or `graph 'g'`."""
        if self.source.build is None:
            return self.source.name
        arguments = ", ".join(f"{name}={value!r}" for name, value in self.params)
        return f"{self.source.name}({arguments})"

    def label(self) -> str:
        """A short line naming the run: graph and parameters, placement, executor, knobs. A
        GPU placement where no GPU is usable says first that the run was on the CPU."""
        k = self.knobs
        device = k.device
        if k.on_gpu and not _gpu_usable():
            device = f"cpu ({k.device} asked: no usable GPU, soft placement)"
        return f"{self.graph_label()} on {device}, {k.executor}: {k.label()}"


__all__ = [
    "DEVICE",
    "DEVICES",
    "KNOB_NAMES",
    "MAX_REPEATS",
    "REPEATS",
    "Built",
    "GraphSource",
    "Knobs",
    "KnobsBase",
    "RunKnob",
    "Settings",
    "built_from",
    "knob_specs",
    "knobs_class",
    "preset_graph",
]
