"""Chrome trace-event JSON — the format of chrome://tracing and Perfetto — out and in.

- `export`: `to_chrome` and `dump`, strict to the format (what `Trace.save` writes).
- `files`, `document`, `reader`: `load` and `from_chrome` — a file (gzip or not, or a folder
  holding one) to JSON, its events to slices, slices to a Trace.
- `producers`: one module per tool that writes traces (TensorFlow, PyTorch, JAX, Python
  tracers, generic), each knowing that tool's conventions and what its settings are called.
"""

from .export import FLOW_CATEGORY, FORMAT, dump, to_chrome
from .reader import from_chrome, load

__all__ = ["FLOW_CATEGORY", "FORMAT", "dump", "from_chrome", "load", "to_chrome"]
