"""The memory panel under a timeline: live bytes of the run's op outputs over time, per device
(`parallelgraph.trace.memory` computes them).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..trace.model import Trace

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from .gantt import Window
from .colors import DEVICE_COLORS

MEMORY_INCHES = 1.1  # the memory panel under a timeline (`memory=True`)


def memory_axes(memory: object, ax: Axes | None) -> Axes | None:
    """The Axes given as `memory=`, or None; a ValueError for memory=True with an `ax` (the
    panel needs a figure of its own) and a TypeError for anything else."""
    if memory is None or isinstance(memory, bool):
        if memory and ax is not None:
            raise ValueError(
                "memory=True draws a panel of its own under the timeline, in a new figure: "
                "leave out ax=, or pass memory=<an Axes> to draw the memory track there"
            )
        return None
    from matplotlib.axes import Axes

    if not isinstance(memory, Axes):
        raise TypeError(f"memory= takes True, False or a matplotlib Axes, got {memory!r:.60}")
    if ax is None:
        raise ValueError("memory=<an Axes> goes with ax=<the timeline's Axes>: pass both")
    return memory


# -- memory ---------------------------------------------------------------------------------
def draw_memory(ax: Axes, trace: Trace, window: Window) -> None:
    """The live bytes of the trace's op outputs over time, per device, on `ax` (the panel
    under the timeline); a note instead when the trace records no output sizes."""
    from matplotlib.legend import Legend
    from matplotlib.patches import Patch

    from ..trace.memory import format_bytes, memory_profile

    profile = memory_profile(trace)
    ax.parallelgraph_memory = profile
    ax.set_xlim(window.lo, window.hi)
    ax.set_xlabel("time (ms)")
    ax.grid(axis="x", color="#d0d0d0", lw=0.6, zorder=0)
    ax.set_axisbelow(True)
    ax.tick_params(axis="y", length=0, labelsize=7)
    top, when = profile.peak()
    if not profile.known or not top:
        note = (
            "memory: this trace records no output shapes and dtypes, so no output sizes"
            if not profile.known
            else "memory: every output is empty (0 bytes)"
        )
        ax.text(0.5, 0.5, note, transform=ax.transAxes, ha="center", va="center", fontsize=8,
                color="#555555", gid="memory-note")  # fmt: skip
        ax.set_yticks([])
        ax.set_ylim(0, 1)
        return
    devices = profile.devices
    handles = []
    for number, device in enumerate(devices):
        times, values = profile.series(device)
        if not times:
            continue
        x = [window.ms(t) for t in times]
        values = [float(v) for v in values]  # a sum past int64 would be an object array to NumPy
        if values[-1]:  # what the run returns stays: draw it to the right edge
            x, values = [*x, max(window.hi, x[-1])], [*values, 0.0]
        color = DEVICE_COLORS[number % len(DEVICE_COLORS)]
        fill = ax.stairs(values[:-1], x, baseline=0, fill=True, color=color, alpha=0.18, lw=0)
        line = ax.stairs(values[:-1], x, baseline=0, color=color, lw=1.0)
        fill.set_gid(f"memory-fill {device}")
        line.set_gid(f"memory-line {device}")
        handles.append(Patch(facecolor=color, alpha=0.6, label=device))
    if len(devices) > 1:  # beside the note, not ax.legend (the layout would leave room for it)
        key = Legend(ax, handles, [h.get_label() for h in handles], loc="upper right",
                     fontsize=7, frameon=False, ncols=len(handles), handlelength=1.0)  # fmt: skip
        ax.add_artist(key)
    ax.plot([window.ms(when)], [top], marker="v", ms=4, color="#222222", lw=0, gid="memory-peak")
    returned = (
        f" · {format_bytes(profile.returned_bytes)} returned" if profile.returned_bytes else ""
    )
    note = (
        f"live bytes of op outputs (model) · peak {format_bytes(top)} at {window.ms(when):.3f} ms"
        + returned
    )
    ax.text(0.004, 0.96, note, transform=ax.transAxes, ha="left", va="top", fontsize=7,
            color="#333333", gid="memory-note")  # fmt: skip
    ticks, labels = _byte_ticks(top)
    ax.set_ylim(0, top * 1.45)
    ax.set_yticks(ticks, labels)

    def read_out(x: float, y: float) -> str:
        live = profile.live_at(window.origin + round(x * 1e6))
        return f"t = {x:.3f} ms, live {format_bytes(live)}"

    ax.format_coord = read_out


def _byte_ticks(top: int) -> tuple[list[float], list[str]]:
    """0 and one or two round values up to `top` bytes, labelled in binary units."""
    unit, size = next(
        ((u, s) for u, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)) if top >= s),
        ("B", 1),
    )
    scaled = top / size
    step = 10 ** math.floor(math.log10(scaled)) if scaled > 0 else 1
    for factor in (5, 2, 1):
        if factor * step <= scaled:
            step *= factor
            break
    ticks = [i * step for i in range(int(scaled // step) + 1)]  # 0 and 1 to 4 steps
    if len(ticks) > 3:
        ticks = [0, ticks[len(ticks) // 2], ticks[-1]]
    labels = [f"{t:g} {unit}" if t else "0" for t in ticks]
    return [t * size for t in ticks], labels
