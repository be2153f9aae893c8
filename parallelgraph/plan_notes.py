"""Plan notes: what the planner decided that a user should know, as typed records.

A `PlanNote` is the sentence a user reads *and* what it is about: it is a `str` (so it prints,
compares and is written to a trace's JSON metadata exactly as the sentence always was), and it
carries `kind` (a `NoteKind`), `op` (the op's name, or None) and `device` (the `Device` the op
was placed on, or None). Readers filter by `note.kind` instead of searching the text, so the
wording can change without breaking them.

The sentences are written here and only here (`PlanNote.moved`, `PlanNote.about`). A saved
trace keeps each note's sentence in its metadata's "notes" (what people and other tools read)
and its kind, op and device in "note_kinds" beside it (`PlanNote.record`), so a trace read back
has typed notes again without its words being read (`PlanNote.from_record`). Only a file
written before "note_kinds" existed is typed from its wording, by `PlanNote.parse`, the one
place that knows it; a note we did not write (another tool's reader) is `NoteKind.OTHER`.
`soft_placement_warning` is the one warning for moved ops.

This module is a leaf (it imports only `devices`), so explain() can read notes without
importing the planner or the op registry.

>>> note = PlanNote.moved("net1/MatMul", "gpu:0", NoteKind.SOFT_PLACEMENT)
>>> note, note.kind is NoteKind.SOFT_PLACEMENT, note.op, note.device.is_gpu
('net1/MatMul: placed on gpu:0, ran on cpu:0 (soft placement)', True, 'net1/MatMul', True)
>>> PlanNote.parse(str(note)) == note and PlanNote.parse(str(note)).op
'net1/MatMul'
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from typing import Any

from .devices import Device


class NoteKind(str, enum.Enum):
    """What a plan note is about."""

    #: An op placed on a device this session cannot use ran on cpu:0 (`soft_placement=True`).
    SOFT_PLACEMENT = "soft placement"
    #: An op placed on a GPU ran on cpu:0 because the executor runs no GPU steps (sequential).
    CPU_ONLY = "cpu only"
    #: GPU matmuls ran a different kernel than `matmul_kernel` asked for.
    GPU_KERNEL = "gpu kernel"
    #: What `cuda_graph=True` did for this plan.
    CUDA_GRAPH = "cuda graph"
    #: A note we did not write (another tool's reader), or one whose wording we do not know.
    OTHER = "other"

    def __str__(self) -> str:
        return self.value


_MOVED = re.compile(r"^(?P<op>.+): placed on (?P<device>\S+), ran on cpu:0 \((?P<why>.+)\)$")
_PREFIXES = {"matmul_kernel='blas'": NoteKind.GPU_KERNEL, "cuda_graph=True:": NoteKind.CUDA_GRAPH}


class PlanNote(str):
    """A plan note: the sentence (this `str`) and its `kind`, `op` and `device`. Immutable."""

    kind: NoteKind
    op: str | None
    device: Device | None

    def __new__(
        cls,
        text: str,
        kind: NoteKind = NoteKind.OTHER,
        op: str | None = None,
        device: str | None = None,
    ) -> PlanNote:
        note = super().__new__(cls, text)
        object.__setattr__(note, "kind", NoteKind(kind))
        object.__setattr__(note, "op", op)
        object.__setattr__(note, "device", None if device is None else Device(device))
        return note

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a PlanNote is immutable: cannot set {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:  # pickling (Dask) keeps the kind
        return (PlanNote, (str(self), self.kind, self.op, self.device))

    def __repr__(self) -> str:
        return repr(str(self))

    @property
    def text(self) -> str:
        """The sentence, as a plain str."""
        return str(self)

    def record(self) -> dict[str, str | None]:
        """What a saved trace keeps beside the sentence (`note_kinds` in its metadata), so the
        note comes back typed without reading its words."""
        device = None if self.device is None else str(self.device)
        return {"kind": self.kind.value, "op": self.op, "device": device}

    @classmethod
    def from_record(cls, text: str, record: Any) -> PlanNote:
        """The note of a sentence and its `record()`; `parse`'s reading of the words where the
        record is not one (a hand-edited file)."""
        kinds = {kind.value for kind in NoteKind}
        if not (isinstance(record, dict) and record.get("kind") in kinds):
            return cls.parse(text)
        op, device = record.get("op"), record.get("device")
        try:
            return cls(
                text,
                NoteKind(record["kind"]),
                op if isinstance(op, str) else None,
                device if isinstance(device, str) else None,
            )
        except ValueError:  # a device name that is not one
            return cls.parse(text)

    @classmethod
    def moved(cls, op: str, device: str, kind: NoteKind, why: str | None = None) -> PlanNote:
        """An op placed on `device` that ran on cpu:0; `why` defaults to the kind's words
        ("soft placement")."""
        text = f"{op}: placed on {device}, ran on cpu:0 ({why or kind.value})"
        return cls(text, kind, op, device)

    @classmethod
    def about(cls, kind: NoteKind, text: str) -> PlanNote:
        """A note about the whole plan (no op, no device)."""
        return cls(text, kind)

    @classmethod
    def parse(cls, note: str) -> PlanNote:
        """The typed note of `note`: itself when it is one, else typed from its wording (a
        note read back from a saved trace); `NoteKind.OTHER` when the wording is not ours."""
        if isinstance(note, PlanNote):
            return note
        match = _MOVED.match(note)
        if match is not None:
            why = match["why"]
            kind = NoteKind.SOFT_PLACEMENT if why == NoteKind.SOFT_PLACEMENT.value else None
            try:
                device = Device(match["device"])
            except ValueError:
                device = None
            if device is not None:
                return cls(note, kind or NoteKind.CPU_ONLY, match["op"], device)
        for prefix, kind in _PREFIXES.items():
            if note.startswith(prefix):
                return cls(note, kind)
        return cls(note)


def plan_notes(notes: Iterable[str], kind: NoteKind | None = None) -> tuple[PlanNote, ...]:
    """`notes` (PlanNotes, or a trace's metadata "notes" as text) typed; only those of `kind`
    when given."""
    typed = (PlanNote.parse(note) for note in notes if isinstance(note, str))
    return tuple(note for note in typed if kind is None or note.kind is kind)


def soft_placement_warning(notes: Iterable[str]) -> str | None:
    """The one warning for ops soft placement moved to cpu:0, or None when none moved."""
    moved = plan_notes(notes, NoteKind.SOFT_PLACEMENT)
    if not moved:
        return None
    return (
        f"soft placement: {len(moved)} op(s) placed on a device this session cannot use "
        f"ran on cpu:0 (first: {moved[0]})"
    )


__all__ = ["NoteKind", "PlanNote", "plan_notes", "soft_placement_warning"]
