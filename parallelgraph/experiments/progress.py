"""A sweep's progress bar that leaves plain text behind in a notebook.

tqdm's notebook bar is an ipywidget: once the kernel is gone, a saved notebook still holds a
reference to its widget model, and JupyterLab shows "Error displaying widget: model not found"
where the bar was. So in a Jupyter kernel the bar is an `IntProgress` shown through a display
handle, and `close()` replaces it, in the same output, with one line of text ("sweep: 40 of 40
runs in 3.2 s"), which a reopened notebook shows as it is. Elsewhere (a terminal, a script)
it is tqdm's text bar, as before.
"""

from __future__ import annotations

import time
from typing import Any


def in_jupyter_kernel() -> bool:
    """Whether this process is a Jupyter kernel (an IPython shell with a kernel app)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


class NotebookProgress:
    """An `IntProgress` with a label, replaced by a line of text when closed."""

    def __init__(self, total: int, description: str = "sweep", unit: str = "run"):
        import ipywidgets as widgets
        from IPython.display import display

        self.total, self.description, self.unit = total, description, unit
        self.count = 0
        self.started = time.perf_counter()
        self.bar = widgets.IntProgress(value=0, min=0, max=max(total, 1), description=description)
        self.label = widgets.Label(self._words())
        self.box = widgets.HBox([self.bar, self.label])
        self.handle = display(self.box, display_id=True)

    def _words(self) -> str:
        return f"{self.count} of {self.total} {self.unit}s"

    def update(self, steps: int = 1) -> None:
        self.count += steps
        self.bar.value = min(self.count, self.total)
        self.label.value = self._words()

    def close(self) -> None:
        from IPython.display import HTML

        seconds = time.perf_counter() - self.started
        words = f"{self.description}: {self._words()} in {seconds:.1f} s"
        if self.handle is not None:
            self.handle.update(HTML(f"<pre>{words}</pre>"))
        self.box.close()


def progress_bar(total: int, enabled: bool, description: str = "sweep") -> Any:
    """A bar with `update(n)` and `close()`, or None when not `enabled` (see the module
    docstring for which)."""
    if not enabled:
        return None
    if in_jupyter_kernel():
        try:
            return NotebookProgress(total, description)
        except ImportError:  # no ipywidgets: tqdm's text
            pass
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(total=total, desc=description, unit="run", leave=False)
