"""Sweep pictures: a heatmap names its graph and baseline, and its title is never clipped."""

from __future__ import annotations

import pytest

import parallelgraph as pg
from parallelgraph.experiments.sweeps import SweepResult, SweepRun


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


def measured(factors: list[float]) -> SweepResult:
    """A hand-made sweep of inter 1-3 x intra 1-2, each cell `factor` times as fast as the
    first (the baseline), eight runs a cell."""
    cells = [{"inter": inter, "intra": intra} for intra in (1, 2) for inter in (1, 2, 3)]
    runs = [
        SweepRun(cell, round, cell, 10 / factor * (1 + 0.01 * round), 0.0)
        for cell, factor in enumerate(factors)
        for round in range(8)
    ]
    return SweepResult(grid={"inter": [1, 2, 3], "intra": [1, 2]}, cells=cells, measurements=runs)


def cell_faces_and_inks(figure) -> list[tuple[tuple, str, str]]:
    """(face colour, label colour, label) of every cell with a label."""
    ax = figure.axes[0]
    image = ax.images[0]
    faces = image.to_rgba(image.get_array())
    found = []
    for text in ax.texts:
        x, y = (round(v) for v in text.get_position())
        found.append((tuple(faces[y, x]), text.get_color(), text.get_text()))
    return found


@pytest.mark.parametrize("factors", [[1, 4, 0.25, 1.05, 12, 0.08], [1, 1.1, 0.9, 1.2, 1.3, 0.95]])
def test_heatmap_colours_diverge_from_a_neutral_baseline_and_labels_contrast(factors):
    from matplotlib.colors import to_rgb

    from parallelgraph.plot.colors import contrast_ratio, relative_luminance

    figure = measured(factors).heatmap("inter", "intra")
    cells = cell_faces_and_inks(figure)
    assert len(cells) == 6
    baseline = next(face for face, _, text in cells if text.startswith("x1.00 ="))
    image = figure.axes[0].images[0]
    assert baseline == pytest.approx(image.cmap(0.5))  # the colour map's centre
    r, g, b = to_rgb(baseline)
    assert relative_luminance(baseline) > 0.85 and max(r, g, b) - min(r, g, b) < 0.02  # neutral
    for face, ink, text in cells:
        assert contrast_ratio(face, ink) >= 4.5, (text, face, ink)  # WCAG AA for small text
    faster = [face for face, _, text in cells if " +" in text.split("\n")[0]]
    slower = [face for face, _, text in cells if " -" in text.split("\n")[0]]
    assert all(f[2] > f[0] for f in faster) and all(f[0] > f[2] for f in slower)  # blue, red
    twice = image.norm(2.0), image.norm(0.5)
    assert twice[0] - 0.5 == pytest.approx(0.5 - twice[1])  # x2 as strong as x0.5


def test_dark_cells_get_white_labels_and_light_ones_black():
    figure = measured([1, 4, 0.25, 1.05, 12, 0.08]).heatmap("inter", "intra")
    inks = {text.split()[0]: ink for _, ink, text in cell_faces_and_inks(figure)}
    assert inks["x12.0"] == inks["x0.0800"] == "white"  # the darkest blue and red
    assert inks["x1.00"] == inks["x1.05"] == "black"
