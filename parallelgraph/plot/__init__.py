"""Gantt timelines of traces, drawn with matplotlib.

matplotlib is imported lazily, inside the functions, so importing parallelgraph stays cheap.
Figures are built without pyplot (a `Figure` with an Agg canvas): they work in scripts and on
servers, never pile up as open pyplot figures, and show inline in IPython as PNG. Pass `ax=`
(for example from `plt.subplots()` under `%matplotlib widget`) to draw on your own axes.

Layout. One row per lane, top to bottom: inter-op workers, intra-op helpers, GPU streams, copy
lanes, Dask workers, anything else. Each pool is a group; groups are told apart by alternating
light background bands and a thin separator line. Time runs left to right in ms from the start
of the trace (or from `time_origin`).

Bars. Op bars fill most of the row, coloured by the op's top-level scope (the legend). Shards
are thinner, darker bars in the lower part of the row of the thread that ran them: on the op's
own lane they nest inside the op's bar, on a helper lane they stand alone.
Copies are hatched. All bars of one kind are one `PolyCollection` (never one `barh` per event),
which is what makes 5,000 events draw and save in a fraction of a second. The collection
decides at draw time, from the current axes transform, which bars are wide enough (a few pixels)
to get a dark edge; thinner ones get only a hairline outline in their own colour (so an instant
still shows) and never a label. Being decided at draw time, this follows interactive zooming.

Labels. Op names (the last part of the name, without the scope) are drawn by one artist that,
at draw time, measures every candidate name in display units against the visible part of its
bar and draws only those that fit with a small margin: no clutter at any zoom level, and zooming
in with ipympl reveals more names. Text is white or black, whichever reads better on the bar.

Dependencies (`arrows=True`) are one light `quiver` from each producer's end to each of its
consumers' start (from `TraceEvent.inputs`), only between ops (or copies) that are both drawn;
the more arrows, the fainter each.

Sizes. A figure grows with what it shows: each lane a row of fixed height, and the figure as
tall as its lanes plus what its title, time axis and legend need at its width (`layout`). The
legend keeps every entry: beside the axes when it fits there, in one or two columns, else below
the time axis in as many columns as the width holds (`legend`); titles wrap to the figure's
width. The layout redoes this at every draw, so a resized canvas keeps every text inside.

A zoom window `t0`, `t1` (ms) keeps only the events that intersect it and limits the axis to it.
`compare` stacks several timelines on one shared time axis with consistent scope colours.

Colours. A top-level scope keeps its colour in every plot of the process (`SCOPE_COLORS`, a
process-wide map): the first time a scope is drawn it takes the next free palette colour, in
order of first appearance, and keeps it, so "net1" is the same colour in a trace where it comes
second, in `compare`, and in the next cell. When all 20 palette colours are taken, a new scope
takes the colour of the scope drawn least recently that is not in the plot being drawn; a plot
with more than 20 scopes draws the rest grey (`OTHER_COLOR`, one legend entry), so no two
scopes of one plot look alike. `colors=` overrides it; `reset_scope_colors()` starts afresh.

Highlight (`highlight="MatMul*"` or a list of patterns): ops whose name matches a pattern
(fnmatch, case-insensitive, against the full name, the name without its scope, or the name
without the "#N" of repeated imported names) are drawn as usual and every other bar faded
towards white, their labels grey; the title's last line says how many ops matched, or, when
none did, says so and draws everything as usual.

Memory (`memory=True`): a panel under the timeline, on the same time axis, with the live bytes
of the run's op outputs over time per device (`parallelgraph.trace.memory`, a model) and its peak;
a trace without output sizes gets the panel with a note saying so.


Modules: `gantt` (one timeline), `compare` (several on one axis), `colors`, `highlight`,
`memory_panel`, `figures` (backend glue and sizes), `layout` (margins from measured texts),
`legend` (the scope legend, beside or below),
`hover` (the op under the mouse), `sweeps` (a sweep's heatmap and speed-up curves).
"""

from __future__ import annotations

from .colors import (
    DEVICE_COLORS,
    OTHER_COLOR,
    PALETTE,
    SCOPE_COLORS,
    UNKNOWN_COLOR,
    ScopeColors,
    reset_scope_colors,
    scope_colors,
)
from .compare import compare
from .gantt import gantt, lane_group, ordered_lanes
from .highlight import FADE_KEEP, FADED_INK, Highlight, name_matcher

__all__ = [
    "DEVICE_COLORS",
    "FADED_INK",
    "FADE_KEEP",
    "OTHER_COLOR",
    "PALETTE",
    "SCOPE_COLORS",
    "UNKNOWN_COLOR",
    "Highlight",
    "ScopeColors",
    "compare",
    "gantt",
    "lane_group",
    "name_matcher",
    "ordered_lanes",
    "reset_scope_colors",
    "scope_colors",
]
