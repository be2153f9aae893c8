"""Scope colours: a process-wide map, so a scope keeps its colour in every plot (see the package
docstring).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..scopes import enclosing_scopes
from ..trace.model import Trace

PALETTE = (
    "#4C72B0",
    "#DD8452",
    "#55A868",
    "#C44E52",
    "#8172B3",
    "#937860",
    "#DA8BC3",
    "#8C8C8C",
    "#CCB974",
    "#64B5CD",
    "#A6C8E8",
    "#F2B98C",
    "#9ED39B",
    "#E59A9C",
    "#C2B3DE",
    "#C9AE9F",
    "#F0C0DF",
    "#5A5A8F",
    "#8F8F3A",
    "#3A8F8F",
)


UNKNOWN_COLOR = "#999999"


#: Scopes past the palette share this colour (and one legend entry), never a repeated one.
OTHER_COLOR = "#c8c8c8"


#: Memory panel: one colour per device (the first one a neutral grey).
DEVICE_COLORS = ("#4d4d4d", "#3b75af", "#c0504d", "#5a9b5a", "#8064a2")


#: Scopes named in the legend; the rest are counted in one last entry.
MAX_LEGEND_SCOPES = 20


class ScopeColors:
    """The process-wide scope -> colour map (see the module docstring: a scope keeps its
    colour; when the palette is full, the scope drawn least recently and absent from the plot
    being drawn gives its colour up). Thread-safe: a dashboard draws from worker threads."""

    def __init__(self, palette: Sequence[str] = PALETTE):
        self.palette = tuple(palette)
        self._colors: dict[str, str] = {}  # in order of last use, least recent first
        self._lock = threading.Lock()

    def assign(self, scopes: Sequence[str]) -> dict[str, str]:
        """The colours of `scopes` (drawn together), giving new ones the next free colour."""
        wanted = list(dict.fromkeys(scopes))
        with self._lock:
            result = {scope: self._colors[scope] for scope in wanted if scope in self._colors}
            taken = set(self._colors.values())
            free = [color for color in self.palette if color not in taken]
            for scope in wanted:
                if scope in result:
                    continue
                if free:
                    color = free.pop(0)
                else:
                    victim = next((s for s in self._colors if s not in result), None)
                    if victim is None:  # every colour is in this plot already
                        result[scope] = OTHER_COLOR
                        continue
                    color = self._colors.pop(victim)
                self._colors[scope] = result[scope] = color
            for scope in wanted:  # now the most recently used
                if scope in self._colors:
                    self._colors[scope] = self._colors.pop(scope)
        return {scope: result[scope] for scope in wanted}

    def known(self) -> dict[str, str]:
        """The scopes with a colour now, least recently drawn first."""
        with self._lock:
            return dict(self._colors)

    def reset(self) -> None:
        with self._lock:
            self._colors.clear()


#: The colours of every plot in this process (`gantt`, `compare`, the dashboard).
SCOPE_COLORS = ScopeColors()


def scope_colors(traces: Sequence[Trace]) -> dict[str, str]:
    """One colour per branch of `traces` (`trace.branches.branch_scopes`: the top-level scopes,
    or the heads of a model built in one scope), and per top-level scope outside them, the same
    in every plot of this process (`SCOPE_COLORS`); a plot's scopes past the palette's 20
    colours are all grey (`OTHER_COLOR`), so no two scopes of one plot look alike."""
    from ..scopes import branch_finder
    from ..trace.branches import branch_scopes

    keys = []
    for trace in traces:
        branch_of = branch_finder(branch_scopes(trace))
        for scope in dict.fromkeys(e.scope for e in trace.ops(nested=True)):
            keys.append(branch_of(scope) or scope.split("/", 1)[0])
    return SCOPE_COLORS.assign(keys)


def color_key(scope: str, colors: Mapping[str, str]) -> str:
    """The key of `colors` an op of `scope` is drawn in: the longest that is its scope or a
    scope above it, else its top-level scope."""
    top = scope.split("/", 1)[0]
    inside = (key for key in enclosing_scopes(scope) if key in colors and len(key) > len(top))
    return next(inside, top)  # innermost first: the longest; not every key compared


def relative_luminance(color: Any) -> float:
    """WCAG 2's relative luminance of a matplotlib colour (0 black, 1 white): what the eye
    reads as light or dark, the sRGB channels made linear and weighted (green the most)."""
    from matplotlib.colors import to_rgb

    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(color)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(first: Any, second: Any) -> float:
    """WCAG 2's contrast ratio of two colours, 1 (alike) to 21 (black on white)."""
    darker, lighter = sorted((relative_luminance(first), relative_luminance(second)))
    return (lighter + 0.05) / (darker + 0.05)


def ink_on(background: Any) -> str:
    """Black or white, whichever contrasts more with `background`: the one rule for text on
    a coloured patch (bar labels, heatmap cells), so no label is dark on dark."""
    dark = contrast_ratio("black", background) >= contrast_ratio("white", background)
    return "black" if dark else "white"


def reset_scope_colors() -> None:
    """Forget the colours given so far: the next plot's scopes take the palette from its
    start."""
    SCOPE_COLORS.reset()
