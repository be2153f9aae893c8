"""The ipywidgets dashboard: `pg.dashboard(build, batch=(8, 2048), ...)`.

- `dashboard`: the `Dashboard` (controls, runs you can stop, the timeline and explain()), its
  settings model (`Settings`, `Knobs`), the `Runner` and the report rendering.
- `viewer`: the viewer features beside the timeline (search, top-ops table, save trace, the
  busy-machine note, the live timeline).

Nothing here imports ipywidgets until a dashboard is made.
"""

from .dashboard import (
    Built,
    Dashboard,
    GraphSource,
    Knobs,
    Result,
    Runner,
    Settings,
    figure_for,
    figure_png,
    preset_graph,
    run,
    summary_html,
    summary_rows,
)

__all__ = [
    "Built",
    "Dashboard",
    "GraphSource",
    "Knobs",
    "Result",
    "Runner",
    "Settings",
    "figure_for",
    "figure_png",
    "preset_graph",
    "run",
    "summary_html",
    "summary_rows",
]
