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


def test_a_key_or_value_the_grid_lacks_is_named_with_the_grids_own(result):
    with pytest.raises(ValueError, match=r"'intr' is no key of the sweep's grid; did you mean "
                       r"'intra'\? its keys: \['graph', 'size', 'inter', 'intra'\]"):  # fmt: skip
        result.heatmap("inter", "intr", graph="wide")
    with pytest.raises(ValueError, match=r"'threads' is no key of the sweep's grid; its keys"):
        result.speedup_curve("threads")
    with pytest.raises(ValueError, match=r"graph='tall' is not in the grid: graph took"):
        result.heatmap("inter", "intra", graph="tall")


def test_a_heatmap_cell_of_too_few_runs_says_so_instead_of_nan(result):
    figure = result.heatmap("inter", "intra", graph="wide")
    texts = [text.get_text() for text in figure.axes[0].texts]
    assert len(texts) == 4 and not any("nan" in text for text in texts)
    assert sum("(too few runs)" in text for text in texts) == 3  # 2 runs; the baseline is 1-1
