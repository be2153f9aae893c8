"""A new run knob is one field of `Config` (issue #43): its validation, its command-line flag,
its dashboard control, its run-info check and its label follow from the field alone. The test
adds two knobs to a subclass of Config and asks every part for them."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from parallelgraph.cli import OneLineParser, add_config_arguments, config_from_args
from parallelgraph.config import Config, counted, knob, run_knob_fields
from parallelgraph.trace.run_info import config_checks


@dataclass(frozen=True, init=False)
class TurboConfig(Config):
    turbo: bool = field(
        default=False,
        metadata={**knob("checkbox", "turbo", "go faster"), "help": "go faster"},
    )
    lanes: int = field(
        default=2,
        metadata={
            **knob("slider", "lanes", "lanes to use", range=(1, 4)),
            **counted(1, 16, "--lanes", "lanes to use", lambda: "sixteen is plenty"),
        },
    )


def test_validation_follows_the_fields():
    assert TurboConfig(turbo=True, lanes=3).lanes == 3
    with pytest.raises(ValueError, match=r"Config\.turbo must be True or False, got 'yes'"):
        TurboConfig(turbo="yes")
    with pytest.raises(ValueError, match=r"Config\.lanes must be an int >= 1, got 0"):
        TurboConfig(lanes=0)
    with pytest.raises(ValueError, match=r"at most 16 \(sixteen is plenty\), got 17"):
        TurboConfig(lanes=17)


def test_the_command_line_gets_its_flags():
    parser = OneLineParser(prog="pg")
    add_config_arguments(parser, TurboConfig)
    config = config_from_args(parser.parse_args(["--turbo", "--lanes", "4", "--inter", "2"]),
                              TurboConfig)  # fmt: skip
    assert (config.turbo, config.lanes, config.inter_op_threads) == (True, 4, 2)
    assert config_from_args(parser.parse_args([]), TurboConfig) == TurboConfig()
    with pytest.raises(SystemExit):
        parser.parse_args(["--lanes", "99"])
    assert "--no-turbo" in parser.format_help() and "lanes to use" in parser.format_help()


def test_the_dashboard_and_the_run_info_know_it():
    names = [f.name for f in run_knob_fields(TurboConfig)]
    assert names[-2:] == ["turbo", "lanes"]
    checks = config_checks(TurboConfig)
    assert checks["turbo"][0](True) and not checks["turbo"][0](1)
    assert checks["lanes"][0](1) and not checks["lanes"][0](0)
