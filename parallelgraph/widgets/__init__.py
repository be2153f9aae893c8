"""The ipywidgets dashboard: `pg.dashboard(build, batch=(8, 2048), ...)`.

One module per job (the `dashboard` module's docstring tells the whole design):

- `settings`: the settings model — `GraphSource` and `Built` (what makes the graph), `Knobs`
  (the run knobs, derived from `Config`'s field metadata), `Settings` (one run's all);
- `runner`: `Runner` and `run(settings) -> Result`, the pure function behind the dashboard;
- `report`: what the output area says (summary table, timeline figure, status words);
- `controls`: the widgets of the parameters (interact's abbreviations) and of the run knobs;
- `canvas`: where the timeline is drawn (a PNG, or an ipympl canvas);
- `background`: the run thread (Stop, `wait()`, kernel interrupts);
- `dashboard`: the `Dashboard` that puts them together;
- `viewer`: the viewer features beside the timeline (search, top-ops table, save trace, the
  busy-machine note, the live timeline).

Nothing here imports ipywidgets until a dashboard is made.
"""

from .canvas import figure_png
from .dashboard import Dashboard
from .report import figure_for, summary_html, summary_rows
from .runner import Result, Runner, run
from .settings import Built, GraphSource, Knobs, Settings, preset_graph

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
