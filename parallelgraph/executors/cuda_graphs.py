"""CUDA graphs: a GPU plan's launches captured once, then each run is one graph launch.

`Config(cuda_graph=True)`. Launching a plan kernel by kernel from Python costs the host
microseconds per kernel (the scheduling loop, events, `cuda.core.launch`); on graphs of short
kernels that, not the GPU, sets the pace. A CUDA graph moves all of it into one driver call.

**What is captured.** After a plan's first run (which compiles the kernels, builds every step's
launches and puts constants and variables on the device), `capture` records the plan's GPU work
on stream 0 by stream capture (cuda.core's `GraphBuilder` on the plan's own numba stream): a fork
event that the other streams wait on (so they join the capture), then every step in the plan's
serial order (`Plan.serial_order`, a topological order) on its own stream, after waiting on the
end events of its producers on other streams, exactly as a plain run enqueues it, and at the end
each other stream joins stream 0 again. The stream policy therefore survives as parallel
branches of the graph. The graph reads and writes the plan's own device buffers, which never
move.

**A replayed run** (`CudaDevice.replay`): host values the GPU reads and that are not already on
the device (fed values; a variable after `global_variables_initializer()`) are copied into their
buffers on stream 0 first, outside the graph; then one graph launch on stream 0, one
synchronize, and the fetched values come back to the host.

**What is not replayed**: traced runs launch kernel by kernel as before, because a trace needs a
start and an end time for every kernel, which a captured graph would give only through external
event nodes (not built here); plans with CPU ops (the host takes part in every run); and any
plan where capturing failed: the error is said once (a RuntimeWarning) and that plan keeps plain
launches. The CUDA simulator cannot capture: there the option changes nothing, and the plan's
notes say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..plan import Plan
    from .cuda import CudaDevice, PlanBuffers


@dataclass
class CapturedPlan:
    """A plan's GPU work as an executable CUDA graph, and the stream it is launched on."""

    graph: Any  # cuda.core Graph
    stream: Any  # cuda.core Stream of the device's stream 0
    events: list[Any]  # the fork and join events of the capture, kept while the graph lives

    def launch(self) -> None:
        self.graph.launch(self.stream)


def can_replay(plan: Plan) -> bool:
    """Whether a plan's runs can be one graph launch: every step on the GPU."""
    return plan.uses_gpu and plan.cpu_steps == 0


def capture(device: CudaDevice, plan: Plan, buffers: PlanBuffers) -> CapturedPlan:
    """Record the plan's launches (built by its first run) as one CUDA graph; see above."""
    from numba.cuda.cudadrv.driver import _to_core_stream

    streams = device.streams
    first = _to_core_stream(streams[0])
    builder = first.create_graph_builder()
    builder.begin_building("relaxed")  # cuBLAS may allocate its workspace meanwhile
    events = []
    try:
        fork = device.cuda.event(timing=False)
        events.append(fork)
        fork.record(streams[0])
        for stream in streams[1:]:
            fork.wait(stream)
        for index in plan.serial_order:
            step = plan.steps[index]
            stream = streams[step.stream]
            for producer in step.waits:
                buffers.end_events[producer].wait(stream)
            _, launches = buffers.launches[step.index]
            for launch in launches:
                launch(stream)
            buffers.end_events[step.index].record(stream)
        for stream in streams[1:]:
            join = device.cuda.event(timing=False)
            events.append(join)
            join.record(stream)
            join.wait(streams[0])
    finally:
        builder.end_building()
    graph = builder.complete()
    graph.upload(first)
    return CapturedPlan(graph, first, events)
