"""The converters, one small function per ONNX op type (`registry.converter`): importing this
package registers them all."""

from . import elementwise, math, nn, shape

__all__ = ["elementwise", "math", "nn", "shape"]
