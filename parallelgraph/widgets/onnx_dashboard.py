"""`pg.dashboard("model.onnx")`: the dashboard on your ONNX model, with ONNX Runtime beside it.

The model is read by `pg.from_onnx` (`shapes=`, `fallback=` as there), its inputs bound to seeded
random values (`OnnxModel.example_feeds`), and shown as a built graph: the run knobs, Run / Stop
/ Pin, the timeline and explain() of `Dashboard`. One button more, **Compare with ONNX
Runtime**, measures the same file in ONNX Runtime at inter-op 1 / intra-op 1 and at the knobs'
setting (`OnnxModel.compare_onnxruntime`: worker processes, interleaved rounds), in the
background, and shows the table, both timelines on one axis and the outputs' largest difference.
"""

from __future__ import annotations

import html
import threading
from typing import Any

from .canvas import figure_png, leave_pyplot
from .dashboard import Dashboard


class OnnxDashboard(Dashboard):
    """`Dashboard` on an ONNX file, plus the ONNX Runtime comparison (module docstring).

    Scripting: as `Dashboard`, and `compare()` (the button; `wait_compare()` waits for it),
    `comparison` (the last `onnx.compare.Comparison`), `model`, `feeds`."""

    def __init__(
        self,
        path: str,
        /,
        *,
        shapes: Any = None,
        fallback: str | None = None,
        compare_repeats: int = 10,
        **options: Any,
    ):
        from ..onnx.presets import onnx_preset

        preset, self.model, self.feeds = onnx_preset(path, shapes, fallback)
        self.compare_repeats = compare_repeats
        self.comparison: Any = None
        self._comparing: threading.Thread | None = None
        super().__init__(preset.graph, preset.fetch, **options)

    def _make_buttons(self, auto_run: bool, live: bool) -> None:
        super()._make_buttons(auto_run, live)
        w = self._widgets
        self.compare_button = w.Button(
            description="Compare with ONNX Runtime",
            icon="balance-scale",
            tooltip="the same file in ONNX Runtime at inter 1 / intra 1 and at these knobs",
            layout=w.Layout(width="auto"),
        )
        self.compare_button.add_class("pg-compare-ort")
        self.compare_button.on_click(lambda _button: self.compare())
        self.compare_text = w.HTML("")
        self.compare_picture = w.Image(
            format="png", layout=w.Layout(max_width="100%", height="auto", display="none")
        )

    def _layout(self) -> Any:
        box = super()._layout()
        w = self._widgets
        extra = w.VBox([self.compare_button, self.compare_text, self.compare_picture])
        box.children = (*box.children, extra)
        return box

    def compare(self) -> None:
        """Measure ONNX Runtime beside the model, in the background (the button)."""
        if self._comparing is not None and self._comparing.is_alive():
            return
        knobs = self.knobs().config().resolved()
        settings = list(dict.fromkeys([(1, 1), (knobs.inter_op_threads, knobs.intra_op_threads)]))
        self.compare_button.disabled = True
        self.compare_text.value = (
            f"<i>measuring parallelgraph and ONNX Runtime at {settings} "
            f"({self.compare_repeats} rounds, worker processes)…</i>"
        )

        def work() -> None:
            try:
                self.comparison = self.model.compare_onnxruntime(
                    self.feeds, settings=settings, repeats=self.compare_repeats
                )
                inter, intra = settings[-1]
                figure = self.comparison.plot(inter, intra)
                leave_pyplot(figure)  # a picture, not one more canvas for pyplot to show
                self.compare_picture.value = figure_png(figure)
                self.compare_picture.layout.display = ""
                text = html.escape(str(self.comparison))
                self.compare_text.value = f"<pre>{text}</pre>"
            except Exception as problem:  # noqa: BLE001 - shown in the widget, as every error
                self.compare_text.value = (
                    f"<b>comparison failed:</b> {html.escape(type(problem).__name__)}: "
                    f"{html.escape(str(problem))}"
                )
            finally:
                self.compare_button.disabled = False

        self._comparing = threading.Thread(target=work, name="onnx-compare", daemon=True)
        self._comparing.start()

    def wait_compare(self, timeout: float | None = None) -> Any:
        """Wait for the comparison the button started; its `Comparison` (None if it failed)."""
        if self._comparing is not None:
            self._comparing.join(timeout)
        return self.comparison

    def close(self) -> None:
        super().close()
        self.model.close()
