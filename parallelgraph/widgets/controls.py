"""The dashboard's controls: one widget per parameter of the build function, one per run knob.

- **Parameters** become widgets by the abbreviations `interact` uses (its own
  `widget_from_abbrev`: a (min, max) tuple is a slider, a list a dropdown, a bool a checkbox,
  a widget itself; the signature's default is the starting value), `param_controls`. The
  built-in graphs' sizes are on a power-of-two scale (`preset_controls`).
- **Run knobs** are made from their `RunKnob` records (`knob_controls`), that is from `Config`'s
  field metadata and the dashboard's own device and repeats: a slider, a dropdown or a checkbox
  with the record's label, tooltip and range, in the record's row (`knob_rows`). A new run knob
  in config.py gets its control here without a line of this module changing.

Every slider has `continuous_update=False` (a drag sends one change), and every control a CSS
class named after it ("pg-inter-op-threads", "pg-param-batch") that the browser tests find.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ..dtypes import FLOAT_DTYPES
from ..experiments.presets import GRAPH_PRESETS
from .settings import KnobsBase, RunKnob

BATCHES = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
HIDDENS = (16, 32, 64, 128, 256, 512, 1024, 2048)
WIDE = {"description_width": "initial"}


class Controls(dict):
    """The dashboard's widgets by name; a wrong name says which names there are."""

    def __missing__(self, name: Any) -> Any:
        raise KeyError(f"no control {name!r}; the controls: {sorted(self)}")


# -- the build function's parameters --------------------------------------------------------
def preset_controls() -> dict[str, Any]:
    """The built-in graphs' controls: sizes on a power-of-two scale, as before."""
    import ipywidgets as w

    return {
        "preset": list(GRAPH_PRESETS),
        "batch": w.SelectionSlider(options=BATCHES, value=64),
        "hidden": w.SelectionSlider(options=HIDDENS, value=256),
        "dtype": list(FLOAT_DTYPES),
    }


def param_controls(
    build: Callable[..., Any],
    abbreviations: dict[str, Any],
    values: dict[str, Any],
    reserved: Sequence[str] = (),
) -> dict[str, Any]:
    """A widget per parameter of `build`, by interact's abbreviations; `values` start them;
    a parameter named like one of `reserved` (the run knobs) is refused."""
    from ipywidgets.widgets.interaction import fixed, interactive

    signature = inspect.signature(build)
    named = {
        name: p.default
        for name, p in signature.parameters.items()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    }
    extra = sorted(set(abbreviations) - set(named))
    if extra and not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        raise TypeError(f"{build.__name__}() has no parameter(s) {extra}")
    controls: dict[str, Any] = {}
    for name, default in {**named, **{e: inspect.Parameter.empty for e in extra}}.items():
        if name in reserved:
            raise TypeError(f"{build.__name__}() parameter {name!r} is a run knob's name")
        abbrev = abbreviations.get(name, default)
        if abbrev is inspect.Parameter.empty:
            raise TypeError(
                f"{build.__name__}() parameter {name!r} needs a control or a default: "
                f"pg.dashboard({build.__name__}, {name}=(low, high))"
            )
        if isinstance(abbrev, (list, tuple, dict)) and not abbrev:
            raise ValueError(f"{build.__name__}() parameter {name}={abbrev!r}: no values")
        try:
            widget = interactive.widget_from_abbrev(abbrev, default)
        except ValueError as problem:  # (64, 8), (nan, nan): interact's words, our name
            raise ValueError(f"{build.__name__}() parameter {name}={abbrev!r}: {problem}") from None
        if widget is None or isinstance(widget, fixed):  # a value to pass as it is
            controls[name] = fixed(abbrev.value if isinstance(abbrev, fixed) else abbrev)
            continue
        widget.description = widget.description or name
        if name in values:
            widget.value = values[name]
        if hasattr(widget, "continuous_update"):
            widget.continuous_update = False
        widget.style = {"description_width": "initial"}
        widget.add_class(f"pg-param-{name.replace('_', '-')}")
        controls[name] = widget
    return controls


# -- the run knobs --------------------------------------------------------------------------
def knob_controls(start: KnobsBase) -> dict[str, Any]:
    """A widget per run knob of `start`'s class (`start.specs`), holding `start`'s values."""
    controls = {spec.name: knob_control(spec, getattr(start, spec.name)) for spec in start.specs}
    for name, control in controls.items():
        control.add_class(f"pg-{name.replace('_', '-')}")
    return controls


def knob_control(spec: RunKnob, value: Any) -> Any:
    """The widget of one run knob: its control kind, label and tooltip from `spec`."""
    import ipywidgets as w

    if spec.control == "slider":
        low, high = spec.range
        return w.IntSlider(
            value=value,
            min=min(low, value),  # 0 threads (one per core) if asked for
            max=max(high, value),
            description=spec.label,
            continuous_update=False,
            style=WIDE,
            tooltip=spec.help,
        )
    if spec.control == "dropdown":
        return w.Dropdown(
            options=spec.options(),
            value=value,
            description=spec.label,
            style=WIDE,
            tooltip=spec.help,
            layout=w.Layout(width="200px"),
        )
    return w.Checkbox(value=value, description=spec.label, tooltip=spec.help, indent=False)


def knob_rows(specs: Sequence[RunKnob], controls: dict[str, Any]) -> list[Any]:
    """The knobs' controls as rows of `HBox`es, by each knob's `row` (1: device, executor,
    repeats; 2: threads and streams), in the order of `specs`."""
    import ipywidgets as w

    rows = sorted({spec.row for spec in specs})
    return [w.HBox([controls[s.name] for s in specs if s.row == row]) for row in rows]


__all__ = [
    "BATCHES",
    "HIDDENS",
    "Controls",
    "knob_control",
    "knob_controls",
    "knob_rows",
    "param_controls",
    "preset_controls",
]
