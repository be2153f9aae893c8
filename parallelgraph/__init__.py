"""parallelgraph: build a dataflow graph, run it with inter-op and intra-op thread pools, and
see on a timeline which ops ran at the same time, where, and why the rest waited.

>>> import parallelgraph as pg
>>> g = pg.Graph()
>>> with g.as_default(), pg.scope("net1"):
...     y = pg.matmul(pg.random_normal((4, 3), seed=1), pg.variable((3, 2), name="w"))
>>> with pg.Session(g, pg.Config(inter_op_threads=2)) as sess:
...     sess.run(y).shape
(4, 2)

Importing this package is cheap: Numba, matplotlib and threadpoolctl load on first use.
"""

from .config import Config
from .errors import GraphError, OpError
from .experiments.sweeps import sweep  # the real functions: Shift-Tab shows their parameters
from .graph import Graph, Op, Tensor, device, get_default_graph, reset_default_graph, scope
from .ops import *  # noqa: F403 - the builders: `ops.__all__`, listed once there
from .ops import __all__ as _OP_BUILDERS
from .session import Session, global_variables_initializer
from .trace import Trace, TraceEvent
from .trace.replay import simulate

__version__ = "0.1.0"

#: `pg.<name>` -> the module it names, imported on first use
_LAZY_SUBMODULES = {
    "plot": "plot",
    "presets": "experiments.presets",
    "analysis": "trace.analysis",
    "measure": "experiments.measure",
    "widgets": "widgets",
    "sweeps": "experiments.sweeps",
    "replay": "trace.replay",
    "recorded": "recorded",
    "models": "models",
    "lab": "lab",
}


def dashboard(
    source: object = None,
    fetches: object = None,
    /,
    *,
    preset: str | None = None,
    framework: str | None = None,
    **options: object,
) -> object:
    """The ipywidgets dashboard for your graph: `pg.dashboard(build, batch=(8, 2048), ...)`
    (parameters become controls as in `interact`), `pg.dashboard(graph, fetches)`, or
    `pg.dashboard(preset="wide")`; see `parallelgraph.widgets`. With `framework="pytorch"`
    (or another framework) the dashboard runs your own program: `build(setting)` returns its
    step, each setting in a warm worker process; see `parallelgraph.frameworks.dashboard`.
    `pg.dashboard("model.onnx", shapes=..., fallback=...)` runs your ONNX model, with ONNX
    Runtime beside it on a button; see `parallelgraph.widgets.onnx_dashboard`."""
    given = [part for part in (source, fetches) if part is not None]
    try:
        if isinstance(source, str) and source.endswith(".onnx"):
            from .widgets.onnx_dashboard import OnnxDashboard

            return OnnxDashboard(*given, **options)  # type: ignore[arg-type]
        if framework is not None:
            from .frameworks.dashboard import FrameworkDashboard

            return FrameworkDashboard(*given, framework, **options)  # type: ignore[arg-type]
        from .widgets.dashboard import Dashboard

        if preset is not None:
            options["preset"] = preset
        return Dashboard(*given, **options)  # type: ignore[arg-type]
    except ModuleNotFoundError as missing:
        if missing.name not in ("ipywidgets", "ipympl", "IPython"):
            raise
        raise ModuleNotFoundError(
            f"pg.dashboard needs {missing.name}, which is not installed: "
            "pip install 'parallelgraph[lab]' (ipywidgets, ipympl and JupyterLab)",
            name=missing.name,
        ) from None


def from_onnx(
    source: object,
    shapes: object = None,
    fallback: str | None = None,
    device: str | None = None,
    name: str | None = None,
) -> object:
    """Read an ONNX model into a graph you can run, trace and explain; see `parallelgraph.onnx`.

    >>> model = pg.from_onnx("model.onnx", shapes={"x": (8, 32)})     # doctest: +SKIP
    >>> outputs = model.run({"x": x}, pg.Config(inter_op_threads=2))  # doctest: +SKIP
    """
    from .onnx import from_onnx as read

    return read(source, shapes, fallback, device, name)  # type: ignore[arg-type]


def __dir__() -> list[str]:
    """What a user finds in `dir(pg)` and Tab completion: the public names and the submodules
    meant to be used as `pg.<name>`, not every module that importing happened to load."""
    return sorted({*__all__, *_LAZY_SUBMODULES, "__version__"})


def __getattr__(name: str) -> object:
    """`pg.plot.gantt(...)`, `pg.presets.two_networks(...)`: imported on first use."""
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{_LAZY_SUBMODULES[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    *_OP_BUILDERS,
    "Config",
    "Graph",
    "GraphError",
    "Op",
    "OpError",
    "Session",
    "Tensor",
    "Trace",
    "TraceEvent",
    "dashboard",
    "device",
    "from_onnx",
    "get_default_graph",
    "global_variables_initializer",
    "reset_default_graph",
    "scope",
    "simulate",
    "sweep",
]
