"""Devices: a device name parsed once into what it is.

A device is spelled many ways ("gpu:0", "/gpu:0", "/device:GPU:0", "cpu", "worker:1"). `Device`
is the normalised name *and* its parts: it is a `str` ("gpu:1"), so it compares, hashes, prints
and is written to JSON exactly as the name always was, and it carries `kind` (a `DeviceKind`)
and `index`, so code asks `device.kind is DeviceKind.GPU` instead of taking the text apart.
`Device.parse(spec)` (or `Device(spec)`) is the one parser; a wrong spelling raises `GraphError`
naming the spellings that work.

>>> d = Device("/device:GPU:1")
>>> d, d.kind, d.index, d == "gpu:1"
('gpu:1', <DeviceKind.GPU: 'gpu'>, 1, True)
"""

from __future__ import annotations

import enum
import re

from .errors import GraphError

_DEVICE_PATTERN = re.compile(r"^/?(?:device:)?(cpu|gpu|worker)(?::(\d+))?$", re.IGNORECASE)


class DeviceKind(str, enum.Enum):
    """What a device is; the value is how names spell it."""

    CPU = "cpu"
    GPU = "gpu"
    WORKER = "worker"  # a Dask worker (the N-th worker of a cluster)

    def __str__(self) -> str:
        return self.value


class Device(str):
    """A normalised device name ("kind:index") that knows its `kind` and `index`."""

    kind: DeviceKind
    index: int

    def __new__(cls, spec: str) -> Device:
        if isinstance(spec, Device):
            return spec
        match = _DEVICE_PATTERN.match(spec.strip()) if isinstance(spec, str) else None
        if match is None:
            raise GraphError(
                f"unknown device {spec!r}: use 'cpu:0', 'gpu:N' (TensorFlow spellings like "
                "'/gpu:0' and '/device:GPU:0' work too) or 'worker:N'"
            )
        kind, index = DeviceKind(match.group(1).lower()), int(match.group(2) or 0)
        device = super().__new__(cls, f"{kind.value}:{index}")
        device.kind = kind
        device.index = index
        return device

    @classmethod
    def parse(cls, spec: str) -> Device:
        """The device `spec` names, in any accepted spelling."""
        return cls(spec)

    @property
    def is_gpu(self) -> bool:
        return self.kind is DeviceKind.GPU

    @property
    def is_cpu(self) -> bool:
        return self.kind is DeviceKind.CPU

    @property
    def is_worker(self) -> bool:
        return self.kind is DeviceKind.WORKER

    def __getnewargs__(self) -> tuple[str]:  # pickling (Dask) rebuilds from the name
        return (str(self),)

    def __repr__(self) -> str:
        return repr(str(self))


CPU0 = Device("cpu:0")


def split_device(name: str) -> tuple[str, int | None]:
    """Any "kind:index" device name as a trace records it, ours or a foreign profiler's, as
    (kind text, index); the index is None when there is none or it is not a number. Unlike
    `Device`, it accepts every kind ("tpu:0"), and it never raises.

    >>> split_device("tpu:1"), split_device("gpu"), split_device("cpu:x")
    (('tpu', 1), ('gpu', None), ('cpu', None))
    """
    kind, _, index = name.partition(":")
    return kind, int(index) if index.isdecimal() else None


def device_kind(name: str) -> DeviceKind | None:
    """The kind of a device name as a trace records it ("gpu:0", "gpu", "cpu"); None when the
    name is none of ours (a foreign profiler's "CUDA", "TPU:0", "")."""
    kind = split_device(name)[0].strip().lower()
    try:
        return DeviceKind(kind)
    except ValueError:
        return None


__all__ = ["CPU0", "Device", "DeviceKind", "device_kind", "split_device"]
