"""What a notebook user sees of `pg`: every public callable shows its real parameters and a
docstring (Shift-Tab and help() read `inspect.signature`), `dir(pg)` is the public names and the
submodules meant as `pg.<name>`, and importing the package loads none of the heavy modules."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import parallelgraph as pg


def _is_error(thing: object) -> bool:
    return isinstance(thing, type) and issubclass(thing, Exception)


PUBLIC_CALLABLES = sorted(
    name for name in pg.__all__ if callable(getattr(pg, name)) and not _is_error(getattr(pg, name))
)


@pytest.mark.parametrize("name", PUBLIC_CALLABLES)
def test_a_public_callable_shows_its_parameters_and_a_docstring(name):
    thing = getattr(pg, name)
    parameters = list(inspect.signature(thing).parameters.values())
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    assert not parameters or not all(p.kind in variadic for p in parameters), name
    assert (thing.__doc__ or "").strip(), f"pg.{name} has no docstring"


def test_config_shows_its_fields_and_still_takes_the_aliases():
    parameters = inspect.signature(pg.Config).parameters
    assert {"inter_op_threads", "intra_op_threads", "executor", "fuse"} <= set(parameters)
    assert parameters["inter_op_threads"].default == 0
    assert pg.Config(inter_op_parallelism_threads=3).inter_op_threads == 3


def test_dashboard_shows_its_modes():
    parameters = inspect.signature(pg.dashboard).parameters
    assert list(parameters)[:4] == ["source", "fetches", "preset", "framework"]


def test_dir_is_the_public_names_and_the_submodules_to_use():
    assert dir(pg) == sorted({*pg.__all__, *pg._LAZY_SUBMODULES, "__version__"})
    for name in pg._LAZY_SUBMODULES:
        assert inspect.ismodule(getattr(pg, name))


def test_importing_the_package_loads_no_heavy_module():
    code = (
        "import sys, parallelgraph\n"
        "heavy = ['numba', 'matplotlib', 'threadpoolctl', 'ipywidgets', 'scipy', 'onnx', "
        "'dask', 'distributed', 'llvmlite']\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_the_notebooks_import_only_public_names():
    """Issue #40: what a teaching notebook calls, a user can find: every `from parallelgraph...
    import ...` in notebooks/src names a module with `__all__` holding each name."""
    import ast
    import importlib
    from pathlib import Path

    sources = sorted((Path(__file__).parent.parent / "notebooks" / "src").glob("*.py"))
    assert sources
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("parallelgraph"):
                module = importlib.import_module(node.module)
                public = set(getattr(module, "__all__", ()))
                for alias in node.names:
                    assert alias.name in public or inspect.ismodule(
                        getattr(module, alias.name, None)
                    ), f"{path.name}: {node.module}.{alias.name} is not public"


def test_the_lab_names_are_the_functions_of_their_modules():
    import importlib

    from parallelgraph import lab

    for module_name, names in lab.SOURCES.items():
        module = importlib.import_module(module_name)
        for name in names:
            assert getattr(lab, name) is getattr(module, name)
            assert (getattr(lab, name).__doc__ or "").strip() or not callable(getattr(lab, name))


def test_the_lab_lists_each_name_once_where_it_lives():
    from parallelgraph import lab

    assert sorted(lab.__all__) == sorted(n for names in lab.SOURCES.values() for n in names)
