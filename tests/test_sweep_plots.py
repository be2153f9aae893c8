"""Sweep pictures: a heatmap names its graph and baseline, and its title is never clipped."""

from __future__ import annotations

import pytest

import parallelgraph as pg


@pytest.fixture(scope="module")
def result():
    grid = {"graph": ["wide", "chain"], "size": ["tiny"], "inter": [1, 2], "intra": [1, 2]}
    build = lambda graph, size: pg.presets.build_preset(graph, size)  # noqa: E731
    return pg.sweep(build, grid, repeats=2, seed=1, progress=False, noise_check=False)


def test_heatmap_title_names_the_graph_and_fits_the_figure(result):
    figure = result.heatmap("inter", "intra", graph="wide")
    title = figure._suptitle.get_text()
    assert "graph=wide" in title and "size=tiny" in title
    assert "speed-up vs inter 1, intra 1" in title and "within noise" in title
    figure.canvas.draw()
    box = figure._suptitle.get_window_extent()
    width, height = figure.canvas.get_width_height()
    assert 0 <= box.x0 and box.x1 <= width and box.y1 <= height, "the title is clipped"
    custom = result.heatmap("inter", "intra", graph="chain", title="my chain")
    assert custom._suptitle.get_text() == "my chain"
