"""Pictures of a sweep: an inter x intra heatmap of speed-ups, and speed-up curves with CI bands.

Both read `SweepResult.rows()` (medians, bootstrap CIs, verdicts) and draw on a new matplotlib
Figure built without pyplot (shown inline in notebooks like every parallelgraph figure). The
keys and values they are asked for are checked against the grid first (`_select`): a key the
grid lacks or a value it never held is a ValueError naming the grid's own, not a KeyError or an
empty picture. Numbers are written as the sweep's table writes them (`number_text`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..experiments.number_text import number_text, range_text
from ..experiments.stats import TOO_FEW
from .colors import ink_on
from .figures import new_figure

if TYPE_CHECKING:
    from ..experiments.sweeps import SweepResult, SweepRow


def _check_keys(result: SweepResult, free: tuple[str, ...], fixed: dict[str, Any]) -> None:
    """A ValueError for a key (free or fixed) the grid lacks, with the likely one, or for a
    fixed value the grid never held."""
    import difflib

    keys = list(result.grid)
    for key in (*free, *fixed):
        if key not in result.grid:
            close = difflib.get_close_matches(str(key), keys, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"{key!r} is no key of the sweep's grid; {hint}its keys: {keys}")
    for key, value in fixed.items():
        if value not in result.grid[key]:
            raise ValueError(f"{key}={value!r} is not in the grid: {key} took {result.grid[key]}")


def _select(result: SweepResult, free: tuple[str, ...], fixed: dict[str, Any]) -> list[SweepRow]:
    """Rows of the cells matching `fixed`; every other varying grid key must be free or fixed."""
    _check_keys(result, free, fixed)
    for key, values in result.grid.items():
        if key not in free and key not in fixed and len(values) > 1:
            raise ValueError(
                f"grid key {key!r} varies ({values}): fix it, e.g. {key}={values[0]!r}"
            )
    return [r for r in result.rows() if all(r.params.get(k) == v for k, v in fixed.items())]


def heatmap(result: SweepResult, x: str, y: str, title: str | None = None, **fixed: Any) -> Any:
    """Speed-up against the baseline for every (x, y) cell, with its 95% CI and verdict.

    Colours diverge from x1.00, which is a light neutral grey: faster cells blue, slower ones
    red, on a log scale symmetric about 1 (`speedup_norm`: x2 and x0.5 are equally strong), so
    the baseline never looks like a result. Each cell's text is black or white, whichever
    contrasts more with the cell (`colors.ink_on`). The title (default: `heatmap_title`) names
    the graph and the baseline; it is the figure's title, wrapped to the figure's width, so a
    narrow heatmap never clips it.
    """
    import numpy as np

    rows = _select(result, (x, y), fixed)
    xs, ys = list(result.grid[x]), list(result.grid[y])
    grid = np.full((len(ys), len(xs)), np.nan)
    for row in rows:
        grid[ys.index(row.params[y]), xs.index(row.params[x])] = row.speedup
    width = max(4.5, 2.0 + 1.6 * len(xs))
    figure = new_figure(len(ys) + 2, width=width, layout="constrained")
    ax = figure.add_subplot()
    image = ax.imshow(grid, cmap=SPEEDUP_CMAP, norm=speedup_norm(grid), origin="lower")
    marks = {"faster": "+", "slower": "-", "within noise": "~", "baseline": "=", TOO_FEW: "?"}
    for row in rows:
        i, j = ys.index(row.params[y]), xs.index(row.params[x])
        low, high = row.speedup_ci
        ax.text(
            j,
            i,
            f"x{number_text(row.speedup)} {marks[row.verdict]}\n({range_text(low, high)})",
            ha="center",
            va="center",
            fontsize=8,
            color=ink_on(_cell_color(image, grid[i, j], ax)),
        )
    ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    ax.set_yticks(range(len(ys)), [str(v) for v in ys])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    heading = heatmap_title(result, x, y, fixed) if title is None else title
    figure.suptitle(_wrap(heading, width, fontsize=9), fontsize=9)
    bar = figure.colorbar(image, ax=ax, label="speed-up (x1.00 neutral)")
    ticks = speedup_ticks(image.norm.vmax)
    bar.set_ticks(ticks, labels=[f"x{number_text(t)}" for t in ticks])
    bar.ax.minorticks_off()
    return figure


#: Slower red, faster blue, x1.00 a light neutral grey (ColorBrewer's RdBu: colour-blind safe).
SPEEDUP_CMAP = "RdBu"


def speedup_norm(speedups: Any) -> Any:
    """A log norm centred on 1: limits 1/r and r, r the largest factor either way (at least
    2), so x1.00 is the colour map's centre and a cell twice as fast is as strong as one
    twice as slow. NaN cells (too few runs) stay blank."""
    import numpy as np
    from matplotlib.colors import LogNorm

    finite = np.asarray(speedups, dtype=float)
    finite = finite[np.isfinite(finite) & (finite > 0)]
    reach = max(2.0, float(np.max(np.maximum(finite, 1 / finite), initial=1.0)))
    return LogNorm(vmin=1 / reach, vmax=reach)


def speedup_ticks(reach: float) -> list[float]:
    """Colour bar ticks for limits 1/reach..reach: 1 and up to three round factors each way."""
    factors = [f for f in (1.5, 2, 3, 5, 10, 20, 50, 100, 1000) if f <= reach * (1 + 1e-9)]
    return sorted({1.0, *factors[-3:], *(1 / f for f in factors[-3:])})


def _cell_color(image: Any, speedup: float, ax: Any) -> Any:
    """The colour a cell is drawn in: its colour map colour, or the axes' face where blank."""
    import math

    if not math.isfinite(speedup) or speedup <= 0:
        return ax.get_facecolor()
    return image.cmap(image.norm(speedup))


def heatmap_title(result: SweepResult, x: str, y: str, fixed: dict[str, Any]) -> str:
    """Which graph the cells are (the fixed grid values and those with one value) and what
    they are compared with (the baseline's x and y), then how to read a cell."""
    graph = {**{k: v[0] for k, v in result.grid.items() if len(v) == 1}, **fixed}
    graph.pop(x, None)
    graph.pop(y, None)
    base = result.cells[result.baseline]
    named = ", ".join(f"{key}={value}" for key, value in graph.items())
    against = f"{x} {base[x]}, {y} {base[y]}"
    return (
        f"{named + ': ' if named else ''}speed-up vs {against} "
        "(95% CI; + faster, - slower, ~ within noise)"
    )


def _wrap(text: str, width_inches: float, fontsize: float) -> str:
    """Break `text` into lines that fit `width_inches` (an average glyph is ~0.55 em)."""
    import textwrap

    return textwrap.fill(text, width=max(20, int(width_inches * 72 / (0.55 * fontsize))))


def speedup_curve(result: SweepResult, x: str, hue: str | None = None, **fixed: Any) -> Any:
    """Speed-up against `x` (threads, streams), one line per `hue` value, CI as a band."""
    rows = _select(result, (x,) + ((hue,) if hue else ()), fixed)
    figure = new_figure(4, layout="constrained")
    ax = figure.add_subplot()
    groups = sorted({row.params.get(hue) for row in rows}, key=str) if hue else [None]
    for group in groups:
        line = sorted(
            (r for r in rows if not hue or r.params.get(hue) == group), key=lambda r: r.params[x]
        )
        xs = [r.params[x] for r in line]
        ax.plot(xs, [r.speedup for r in line], marker="o", label=f"{hue}={group}" if hue else None)
        ax.fill_between(
            xs, [r.speedup_ci[0] for r in line], [r.speedup_ci[1] for r in line], alpha=0.2
        )
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlabel(x)
    ax.set_ylabel("speed-up vs baseline")
    ax.set_title("speed-up with 95% bootstrap CI", fontsize=9)
    if hue:
        ax.legend(fontsize=8)
    return figure
