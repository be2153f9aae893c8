"""Tune the threads of your own framework: TensorFlow, PyTorch, ONNX Runtime, JAX or NumPy.

`pg.sweep(build, framework="pytorch", inter=[1, 2], intra=[1, 2])` measures the user's own
program: `build(setting)` builds the model and returns `step`, one inference or training step;
every setting runs in a worker process of its own, its knobs set before the framework starts
(`knobs`), warmed up, and timed in interleaved rounds with the statistics of `pg.sweep`
(`sweep`). With `trace=True` one step per setting is traced with the framework's own profiler
and explained in the framework's words; `result.verify()` then runs the setting the advice asks
for and says what it measured against what the replay predicted (`verify`).

Modules: `knobs` (each framework's knobs, how they are applied and read back), `worker` (the
worker process), `pool` (starting, asking and always ending workers), `sweep` (the measured
rounds), `verify` (advice checked by measurement).
"""

from .knobs import FRAMEWORKS, Framework, Setting, framework
from .pool import FrameworkError, WorkerLost
from .verify import Verification

__all__ = [
    "FRAMEWORKS",
    "Framework",
    "FrameworkError",
    "Setting",
    "Verification",
    "WorkerLost",
    "framework",
]
