"""A sweep's progress bar in a notebook leaves a line of text, not a widget a reopened notebook
cannot find (issue #40: "Error displaying widget: model not found")."""

from __future__ import annotations

import pytest

from parallelgraph.experiments import progress

pytest.importorskip("ipywidgets")


class Handle:
    def __init__(self):
        self.shown = []

    def update(self, thing):
        self.shown.append(thing)


def test_the_notebook_bar_becomes_text_when_closed(monkeypatch):
    handle = Handle()
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: handle)
    bar = progress.NotebookProgress(total=3)
    for _ in range(3):
        bar.update(1)
    assert (bar.bar.value, bar.label.value) == (3, "3 of 3 runs")
    bar.close()
    (last,) = handle.shown
    assert "sweep: 3 of 3 runs in" in last.data and last.data.startswith("<pre>")
    assert bar.box.comm is None  # the widget is closed: nothing in the saved notebook needs it


def test_a_notebook_kernel_gets_the_notebook_bar_and_a_terminal_tqdm(monkeypatch):
    handle = Handle()
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: handle)
    monkeypatch.setattr(progress, "in_jupyter_kernel", lambda: True)
    assert isinstance(progress.progress_bar(5, True), progress.NotebookProgress)
    monkeypatch.setattr(progress, "in_jupyter_kernel", lambda: False)
    bar = progress.progress_bar(5, True)
    assert type(bar).__name__ == "tqdm"
    bar.close()
    assert progress.progress_bar(5, False) is None
