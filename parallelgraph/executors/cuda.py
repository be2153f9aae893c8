"""The cuda executor: GPU steps launched on CUDA streams, ordered by CUDA events, timed by events.

The CPU scheduling loop stays in charge (`scheduler.Run`): for a GPU step, "running" it means
*launching* it — the inter-op worker queues the op's kernel on the step's stream and returns at
once with the output's device array, so consumers become ready while the GPU is still working.
The device keeps the order:

- a step on stream s first makes s wait on the end event of every producer on another stream
  (`Step.waits`, from the plan's stream policy) — record on the producer's stream, wait on the
  consumer's: the host never blocks between GPU ops;
- inputs that live on the host (constants, variables, feeds, CPU ops' outputs) are copied to
  device buffers on the consumer's stream; constants and variables only once per session
  (they stay on the device), feeds and CPU outputs every run; each copy is a trace event;
- a CPU step (or a fetch) that needs a GPU value waits for the producer's end event and copies
  it to the host: the only places the host synchronizes, plus once at the end of the run.

Every device buffer a plan needs (one per GPU step output, one per host value a GPU step reads)
is allocated the first time the plan runs and reused afterwards: nothing is allocated between
ops, which would serialize the device. Since the buffers stay, so do each step's kernel launches
(`OpDef.gpu_launches`, built on the step's first run and rebuilt only if its inputs are other
device arrays): a run replays them, without numba's per-call argument handling.

Timing: on a real GPU each step (and each copy) records a start and an end event on its own
stream; every stream first waits on one base event; after the run, `base.elapsed_time(event)`
puts every op and copy on the host's time base. The CUDA simulator has no timing events and runs
kernels synchronously at launch, so there the host clock around the launch (or copy) is its
time. Launches from two threads at once fail in the simulator, so there every CUDA call holds
one lock.
"""

from __future__ import annotations

import functools
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import Config
from ..plan import Plan, Step
from ..trace.model import EventKind
from .cuda_graphs import CapturedPlan, can_replay, capture
from .pools import Recorder

clock = time.perf_counter_ns


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """True if numba.cuda can run kernels here (a real GPU, or the simulator when enabled)."""
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken CUDA install means "no GPU"
        return False


def simulated() -> bool:
    """True when numba.cuda is Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1): GPU code runs,
    on the CPU, in Python; its timings say nothing about a GPU."""
    from numba import config

    return bool(config.ENABLE_CUDASIM)


@dataclass
class PlanBuffers:
    """Device memory and events of one plan, allocated on its first run."""

    outputs: dict[int, Any]  # slot -> device array written by the GPU step
    host_inputs: dict[int, Any]  # slot -> device buffer for a host value read on the GPU
    producer: dict[int, Step]  # slot -> GPU step producing it
    ops: dict[int, Any]  # slot -> the op whose value it holds
    start_events: dict[int, Any]
    end_events: dict[int, Any]
    scratch: dict[int, Any]  # step index -> float64 scratch buffer, for kernels that want one
    copy_events: dict[tuple[str, int], tuple[Any, Any]] = field(default_factory=dict)
    # ("h2d" | "d2h", slot) -> (start, end) events of that copy, made on its first use
    launches: dict[int, tuple[list[Any], list[Any]]] = field(default_factory=dict)
    # step index -> (the device inputs they were built for, the step's kernels.gpu launches)


@dataclass
class RunState:
    """Per-run bookkeeping: which host values were copied where, and the copy events."""

    copied: dict[int, tuple[int, Any]] = field(default_factory=dict)  # slot -> (stream, event)
    host_copies: dict[int, np.ndarray] = field(default_factory=dict)
    launch_times: dict[int, tuple[int, int]] = field(default_factory=dict)
    # (op name, lane, start event, end event, bytes, host start, host end) per copy this run
    copies: list[tuple[str, str, Any, Any, int, int, int]] = field(default_factory=list)
    base_event: Any = None
    base_ns: int = 0


class CudaDevice:
    """Streams, events and device buffers of one session on gpu:0.

    Thread-safe: inter-op workers may launch from several threads (in the simulator every CUDA
    call is serialized by a lock). Owns no threads.
    """

    def __init__(self, config: Config):
        from numba import cuda

        self.cuda = cuda
        self.config = config  # OpDef.gpu_launches reads its kernel choices (matmul_kernel)
        self.simulated = simulated()
        self.streams = [cuda.stream() for _ in range(max(1, config.streams))]
        # Guards the per-run copy bookkeeping everywhere, and every CUDA call in the simulator.
        self._lock = threading.RLock()
        self._plans: dict[int, PlanBuffers] = {}
        # plan id -> its CUDA graph, or the reason it has none (Config.cuda_graph)
        self._graphs: dict[int, CapturedPlan | str] = {}
        self._resident: dict[int, tuple[Any, Any]] = {}  # source op id -> (host array, device)
        self._run: RunState | None = None

    # -- per plan and per run ---------------------------------------------------------------
    def _event(self) -> Any:
        return self.cuda.event() if self.simulated else self.cuda.event(timing=True)

    def buffers(self, plan: Plan) -> PlanBuffers:
        """The plan's device buffers and events (allocated once, on first use)."""
        buffers = self._plans.get(id(plan))
        if buffers is not None:
            return buffers
        cuda = self.cuda
        gpu_steps = [step for step in plan.steps if step.on_gpu]
        host_slots = {slot for step in gpu_steps for slot in step.input_slots} - {
            step.slot for step in gpu_steps
        }
        ops_by_slot = {step.slot: step.op for step in plan.steps}
        ops_by_slot.update({slot: op for slot, op in plan.sources})
        with self._lock:
            buffers = PlanBuffers(
                outputs={s.slot: cuda.device_array(s.op.shape, s.op.dtype) for s in gpu_steps},
                host_inputs={
                    slot: cuda.device_array(ops_by_slot[slot].shape, ops_by_slot[slot].dtype)
                    for slot in host_slots
                },
                producer={step.slot: step for step in gpu_steps},
                ops=ops_by_slot,
                start_events={step.index: self._event() for step in gpu_steps},
                end_events={step.index: self._event() for step in gpu_steps},
                scratch={
                    step.index: cuda.device_array(size, np.float64)
                    for step in gpu_steps
                    if (size := step.definition.gpu_scratch_size(step.op))
                },
            )
        self._plans[id(plan)] = buffers
        # Sessions keep a bounded number of plans: when one is dropped, free its device buffers
        # (and never hand them to a later plan that happens to get the same id).
        weakref.finalize(plan, self._plans.pop, id(plan), None)
        weakref.finalize(plan, self._graphs.pop, id(plan), None)
        return buffers

    def begin_run(self, plan: Plan) -> None:
        """Start a run: a base event that every stream waits on (the time origin)."""
        self.buffers(plan)
        run = RunState()
        with self._lock:
            if not self.simulated:
                run.base_event = self.cuda.event(timing=True)
                run.base_event.record(self.streams[0])
                for stream in self.streams[1:]:
                    run.base_event.wait(stream)
            run.base_ns = clock()
        self._run = run

    def end_run(self, plan: Plan, record: Recorder | None) -> None:
        """Wait for every stream once, then turn the step events into trace records."""
        with self._lock:
            for stream in self.streams:
                stream.synchronize()
        run, self._run = self._run, None
        if record is None or run is None:
            return
        buffers = self.buffers(plan)
        for step in plan.steps:
            if not step.on_gpu or step.index not in run.launch_times:
                continue
            if self.simulated:
                start, end = run.launch_times[step.index]
            else:
                start = run.base_ns + self._elapsed_ns(run, buffers.start_events[step.index])
                end = run.base_ns + self._elapsed_ns(run, buffers.end_events[step.index])
            record((EventKind.OP, step.index, f"stream/{step.stream}", start, end, None))
        for name, lane, start_event, end_event, nbytes, host_start, host_end in run.copies:
            if not self.simulated:
                host_start = run.base_ns + self._elapsed_ns(run, start_event)
                host_end = run.base_ns + self._elapsed_ns(run, end_event)
            record((EventKind.COPY, name, lane, host_start, host_end, nbytes))

    def _copy_events(self, buffers: PlanBuffers, direction: str, slot: int) -> tuple[Any, Any]:
        """The (start, end) events of one copy, made once per plan (events are cheap to make,
        but making none during a run keeps the run free of driver allocations)."""
        events = buffers.copy_events.get((direction, slot))
        if events is None:
            events = buffers.copy_events[(direction, slot)] = (self._event(), self._event())
        return events

    @staticmethod
    def _elapsed_ns(run: RunState, event: Any) -> int:
        return int(run.base_event.elapsed_time(event) * 1e6)

    # -- launching ------------------------------------------------------------------------------
    def launch(self, plan: Plan, step: Step, values: list[Any], record: Recorder | None) -> Any:
        """Queue `step` on its stream after its cross-stream producers; return its device output."""
        buffers, run = self.buffers(plan), self._run
        assert run is not None, "launch outside begin_run/end_run"
        stream = self.streams[step.stream]
        out = buffers.outputs[step.slot]
        with self._lock:
            for producer in step.waits:
                buffers.end_events[producer].wait(stream)
            inputs = [
                self._on_device(plan, slot, values[slot], step.stream, record)
                for slot in step.input_slots
            ]
            launches = self._launches(buffers, step, inputs, out)
            start = clock()
            buffers.start_events[step.index].record(stream)
            for launch in launches:
                launch(stream)
            buffers.end_events[step.index].record(stream)
            run.launch_times[step.index] = (start, clock())
        return out

    def _launches(self, buffers: PlanBuffers, step: Step, inputs: list[Any], out: Any) -> list[Any]:
        """The step's launches, built on first use and again only if its inputs changed."""
        cached = buffers.launches.get(step.index)
        if cached is not None and all(a is b for a, b in zip(cached[0], inputs, strict=True)):
            return cached[1]
        scratch = buffers.scratch.get(step.index)
        launches = step.definition.gpu_launches(step.op, inputs, out, scratch, self.config)
        buffers.launches[step.index] = (inputs, launches)
        return launches

    def _on_device(
        self, plan: Plan, slot: int, value: Any, stream_index: int, record: Recorder | None
    ) -> Any:
        """`value` as a device array usable on the given stream (copying host values once)."""
        if not isinstance(value, np.ndarray):
            return value  # produced on the GPU; ordering is handled by events
        buffers, run = self.buffers(plan), self._run
        stream = self.streams[stream_index]
        copied = run.copied.get(slot)
        if copied is not None:
            copy_stream, event = copied
            if copy_stream != stream_index:
                event.wait(stream)
            return buffers.host_inputs[slot]
        op = buffers.ops[slot]
        resident = self._resident.get(op.id)
        if resident is not None and resident[0] is value:
            return resident[1]  # a constant or variable already on the device
        device = buffers.host_inputs[slot]
        start_event, end_event = self._copy_events(buffers, "h2d", slot)
        start = clock()
        start_event.record(stream)
        device.copy_to_device(value, stream=stream)
        end_event.record(stream)  # also what consumers on other streams wait on
        run.copied[slot] = (stream_index, end_event)
        if op.type in ("constant", "variable"):
            self._resident[op.id] = (value, device)
        if record:
            run.copies.append(
                (op.name, "copy/h2d", start_event, end_event, value.nbytes, start, clock())
            )
        return device

    # -- CUDA graphs -------------------------------------------------------------------------------
    def replay(self, plan: Plan, values: list[Any]) -> bool:
        """Run the plan as one CUDA graph launch (`cuda_graphs`), putting the fetched values in
        `values`; False, with nothing done, when this run must launch kernel by kernel (the
        option is off, the simulator, CPU steps, the plan's first run, a failed capture)."""
        if not self.config.cuda_graph or self.simulated or not can_replay(plan):
            return False
        buffers = self._plans.get(id(plan))
        if buffers is None or len(buffers.launches) < len(plan.steps):
            return False  # the first run builds the launches the graph captures
        captured = self._graphs.get(id(plan))
        if captured is None:
            captured = self._graphs[id(plan)] = self._capture(plan, buffers)
        if isinstance(captured, str):
            return False
        first = self.streams[0]
        with self._lock:
            for slot, device in buffers.host_inputs.items():
                op, value = buffers.ops[slot], values[slot]
                resident = self._resident.get(op.id)
                if resident is not None and resident[0] is value:
                    continue
                device.copy_to_device(value, stream=first)  # fed, or a new variable value
                if op.type in ("constant", "variable"):
                    self._resident[op.id] = (value, device)
            captured.launch()
            first.synchronize()
        for slot in plan.fetch_slots:
            if slot in buffers.outputs:
                values[slot] = buffers.outputs[slot].copy_to_host()
        return True

    def _capture(self, plan: Plan, buffers: PlanBuffers) -> CapturedPlan | str:
        """The plan's CUDA graph, or why it could not be captured (said once, as a warning)."""
        try:
            with self._lock:
                for stream in self.streams:
                    stream.synchronize()
                return capture(self, plan, buffers)
        except Exception as problem:  # noqa: BLE001 - any driver error: plain launches instead
            reason = f"{type(problem).__name__}: {problem}"
            warnings.warn(
                f"cuda_graph=True: capturing this plan's GPU work failed ({reason}); its runs "
                "launch kernel by kernel",
                RuntimeWarning,
                stacklevel=2,
            )
            return reason

    def to_host(self, plan: Plan, slot: int, value: Any, record: Recorder | None) -> np.ndarray:
        """A host copy of the GPU value in `slot` (waits for its producer only)."""
        if isinstance(value, np.ndarray):
            return value
        run = self._run
        if run is not None and slot in run.host_copies:
            return run.host_copies[slot]
        buffers = self.buffers(plan)
        producer = buffers.producer[slot]
        stream = self.streams[producer.stream]
        host = np.empty(value.shape, dtype=value.dtype)
        start = clock()
        buffers.end_events[producer.index].synchronize()  # outside the lock: others may launch
        with self._lock:
            start_event, end_event = self._copy_events(buffers, "d2h", slot)
            start_event.record(stream)
            value.copy_to_host(host, stream=stream)  # pageable memory: returns when copied
            end_event.record(stream)
            end_event.synchronize()
        end = clock()
        if run is not None:
            run.host_copies[slot] = host
            if record:
                run.copies.append(
                    (producer.op.name, "copy/d2h", start_event, end_event, host.nbytes, start, end)
                )
        elif record:
            record((EventKind.COPY, producer.op.name, "copy/d2h", start, end, host.nbytes))
        return host
