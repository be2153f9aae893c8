"""The examples in docstrings and the README's seed example run as written."""

import doctest
import importlib
import re
from pathlib import Path

import numpy as np
import pytest

import parallelgraph as pg

PACKAGE = Path(__file__).parent.parent / "parallelgraph"
#: every module of the package whose docstrings hold an example (found, so none is forgotten)
MODULES = sorted(
    ".".join(("parallelgraph", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(
        ".__init__"
    )
    for path in PACKAGE.rglob("*.py")
    if re.search(r"^\s*>>> ", path.read_text(encoding="utf-8"), re.M)
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name.startswith("parallelgraph.widgets"):
        pytest.importorskip("ipywidgets")
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"pg": pg}, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_readme_seed_example_runs(tmp_path, monkeypatch, no_gpu):
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    code = re.search(r"## The seed example, in parallelgraph\n\n```python\n(.*?)```", readme, re.S)
    source = code.group(1).replace("512, 1024, 1024, 512", "16, 32, 32, 8")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    with pytest.warns(RuntimeWarning, match="soft placement"):
        exec(compile(source, "README.md", "exec"), namespace)
    assert namespace["value"].shape == (16, 8)
    assert (tmp_path / "trace.ctf.json").exists()
    assert 0.0 <= namespace["trace"].overlap("net1", "net2") <= 1.0
    assert np.isfinite(namespace["value"]).all()


def test_import_is_light():
    import subprocess
    import sys

    code = "import sys, parallelgraph; print('numba' in sys.modules, 'matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.split() == ["False", "False"]


def test_lazy_submodules_are_reachable_from_the_package():
    assert pg.plot.gantt and pg.plot.compare and pg.presets.two_networks and pg.analysis
    with pytest.raises(AttributeError):
        pg.not_a_module  # noqa: B018


def test_readme_dashboard_example_runs():
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    code = re.search(r"the ipywidgets `interact` way:\n\n```python\n(.*?)```", readme, re.S)
    namespace: dict = {"pg": pg}
    exec(compile(code.group(1), "README.md", "exec"), namespace)
    dash = namespace["dash"]
    try:
        dash.controls["batch"].value = 16
        dash.run()
        dash.wait(timeout=120)
        assert dash.result.params["batch"] == 16 and "done" in dash.status
        assert {"net1", "net2", "net3"} <= set(dash.result.trace.scopes())
    finally:
        dash.close()


def test_readme_op_table_is_the_registrys():
    """The README's table of ops is what tools/op_table.py makes from the registry now."""
    import importlib.util

    root = Path(__file__).parent.parent
    spec = importlib.util.spec_from_file_location("op_table", root / "tools/op_table.py")
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    readme = (root / "README.md").read_text()
    assert maker.render() in readme, "README's op table is stale: run python tools/op_table.py"
