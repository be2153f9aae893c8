"""Run knobs derived from Config: a field with `knob` metadata is a dashboard control, a Knobs
field and a Config setting of the session the runner opens, with nothing else written."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import pytest

from parallelgraph.config import Config, knob, run_knob_fields
from parallelgraph.executors.registry import EXECUTOR_NAMES, find_executor, usable_executors
from parallelgraph.widgets.controls import knob_controls, knob_rows
from parallelgraph.widgets.runner import Runner
from parallelgraph.widgets.settings import (
    KNOB_NAMES,
    GraphSource,
    Knobs,
    Settings,
    knob_specs,
    knobs_class,
    preset_graph,
)

ipywidgets = pytest.importorskip("ipywidgets")


@dataclass(frozen=True, init=False)
class ConfigWithAKnob(Config):
    """A Config with one more run knob: one field, as a new knob in config.py would be."""

    replay: bool = field(
        default=False, metadata=knob("checkbox", "replay", "replay the plan as one launch")
    )
    chunks: int = field(
        default=2, metadata=knob("slider", "chunks", "pieces per op", range=(1, 6), row=1)
    )


def test_a_new_config_field_with_knob_metadata_becomes_a_control_a_knob_and_a_setting():
    knobs_type = knobs_class(ConfigWithAKnob)
    names = [f.name for f in fields(knobs_type)]
    assert names[0] == "device" and names[-1] == "repeats"
    assert {"replay", "chunks"} <= set(names) and set(KNOB_NAMES) < set(names)
    knobs = knobs_type(replay=True, chunks=5, inter_op_threads=1)
    config = knobs.config()
    assert isinstance(config, ConfigWithAKnob)
    assert (config.replay, config.chunks, config.inter_op_threads) == (True, 5, 1)
    assert knobs_type().chunks == 2 and knobs_type().replay is False  # the field's defaults
    # ... and it is named where a run is named: its label and its trace's file name
    assert knobs.label() == "inter 1, intra 1, replay on, chunks 5"
    assert knobs_type().label() == "inter 2, intra 1"  # at their defaults, nothing is added
    from datetime import datetime

    from parallelgraph.widgets.viewer import trace_file_name

    settings = Settings(GraphSource(preset_graph), (("batch", 8),), knobs)
    assert "replayTrue-chunks5" in trace_file_name(settings, datetime(2026, 12, 2))

    controls = knob_controls(knobs)
    assert isinstance(controls["replay"], ipywidgets.Checkbox) and controls["replay"].value
    assert controls["replay"].description == "replay"
    assert controls["replay"].tooltip == "replay the plan as one launch"
    slider = controls["chunks"]
    assert isinstance(slider, ipywidgets.IntSlider)
    assert (slider.min, slider.max, slider.value) == (1, 6, 5)
    assert not slider.continuous_update
    assert "pg-chunks" in slider._dom_classes
    first_row, second_row = knob_rows(knobs_type.specs, controls)
    assert slider in first_row.children and controls["replay"] in second_row.children
    # and the plain Config's knobs are not changed by a subclass's
    assert "chunks" not in KNOB_NAMES and "replay" not in {f.name for f in run_knob_fields()}


def test_knob_metadata_is_checked_and_choices_are_written_once():
    with pytest.raises(ValueError, match="a knob's control"):
        knob("spinner", "x", "y")
    specs = {spec.name: spec for spec in knob_specs()}
    assert specs["stream_policy"].options() == ("single", "branches", "round_robin")
    assert specs["executor"].choices == EXECUTOR_NAMES  # the registry's, as Config validates
    assert set(specs["executor"].options()) == set(usable_executors())
    with pytest.raises(ValueError, match="stream_policy must be one of"):
        Config(stream_policy="everywhere")


def _another_value(spec, value):
    """A value of the knob other than `value` (no executor that starts a cluster)."""
    if spec.control == "checkbox":
        return not value
    if spec.control == "slider":
        return value + 1 if value < spec.range[1] else value - 1
    others = [o for o in spec.options() if o != value]
    local = [o for o in others if not getattr(find_executor(o), "distributed", False)]
    return (local or others)[0]


def test_every_config_knob_has_a_control_that_reaches_the_session_the_runner_opens():
    from parallelgraph.widgets.dashboard import Dashboard

    dashboard = Dashboard(preset="two-networks", batch=8, hidden=16, repeats=1)
    try:
        config_knobs = [spec for spec in Knobs.specs if spec.in_config]
        assert {spec.name for spec in config_knobs} == {f.name for f in run_knob_fields()}
        chosen = {}
        for spec in config_knobs:
            control = dashboard.controls[spec.name]
            chosen[spec.name] = control.value = _another_value(spec, control.value)
        settings = dashboard.settings()
        assert isinstance(settings, Settings)
        config = settings.knobs.config()
        assert {name: getattr(config, name) for name in chosen} == chosen
        with Runner(warmup=False) as runner:
            runner.prepare(settings)
            opened = runner.session.config
            assert {name: getattr(opened, name) for name in chosen} == chosen
    finally:
        dashboard.close()


def test_settings_of_a_subclassed_config_rebuild_the_session_when_its_knob_changes():
    knobs_type = knobs_class(ConfigWithAKnob)
    source = GraphSource(preset_graph)
    params = {"preset": "two-networks", "batch": 8, "hidden": 16}
    one = Settings.of(source, params, knobs_type(chunks=1))
    two = Settings.of(source, params, knobs_type(chunks=3))
    assert one.graph_key() == two.graph_key() and one.session_key() != two.session_key()
