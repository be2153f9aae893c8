"""`parallelgraph --version`: the installed distribution's version, in one line."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

import parallelgraph
from parallelgraph.cli import main, package_version


def test_version_prints_the_installed_distributions_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"parallelgraph {metadata.version('parallelgraph')}\n"


def test_version_is_one_line_from_the_command_without_a_subcommand():
    result = subprocess.run(
        [sys.executable, "-m", "parallelgraph", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.splitlines() == [f"parallelgraph {package_version()}"]


def test_without_an_installed_distribution_the_packages_own_version_is_given():
    assert package_version("no-such-distribution-of-parallelgraph") == parallelgraph.__version__
    assert package_version() == metadata.version("parallelgraph") == parallelgraph.__version__
