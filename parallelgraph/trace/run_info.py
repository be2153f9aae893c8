"""What a run was, as one typed record: `RunInfo`, the hand-off that replaces the metadata dict.

Every stage that learns something about a run writes it here once — the session (its config,
graph, executor, cores, plan notes, Numba's compile time), a trace reader (the producer, the
file's header, every lane's kind, what it left out), the replay (the config it simulated and the
one it came from) — and every reader asks a field (`trace.info.cores`), never a key. The JSON
form is the `otherData.metadata` object of our trace files, unchanged:

- `RunInfo.from_json(data, source)` checks the type of every field parallelgraph reads, so a
  hand-edited or hostile file fails when it is read, in one line naming the file and the field,
  instead of later in `explain()` or `simulate()` with a TypeError. `None` stands for "absent";
  keys parallelgraph does not read go to `extra` unchecked and are written back as they came.
- `RunInfo.to_json()` writes the fields that are set, in the order of the dataclass, then
  `extra`. That order is the one every writer used for its dict (session: config .. jit, then
  fetches; replay: config .. source; a reader: source, imported, lane_kinds, notes), so files
  stay byte for byte what they were.
- `config` and `simulated_from` are `RunConfig`s: a flattened `pg.Config` kept as the mapping it
  was written as (so a new Config field needs nothing here), with typed properties for the six
  settings the analyses read. `jit` is a `JitInfo` in the same way.

Thread-safe: the records are frozen.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from ..plan_notes import PlanNote


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


_Check = tuple[Callable[[Any], bool], str]  # (is it valid, what it must be)
_INT_0: _Check = (lambda v: is_int(v) and v >= 0, "an int >= 0")
_NUMBER_0: _Check = (lambda v: _is_number(v) and v >= 0, "a number >= 0")
_STRING: _Check = (lambda v: isinstance(v, str), "a string")
_BOOL: _Check = (lambda v: isinstance(v, bool), "true or false")
_OBJECT: _Check = (lambda v: isinstance(v, dict), "an object")


@dataclass(frozen=True)
class Where:
    """Where a JSON value came from, for the one-line error about it."""

    source: str  # the file's name, or what made the dict ("Trace(metadata=...)")
    file: bool = True  # the `otherData.metadata` of a file (else a dict made in memory)

    def check(self, ok: bool, path: str, wanted: str, value: Any) -> None:
        """Raise the ValueError naming `source` and the field at `path` unless `ok`."""
        if ok:
            return
        prefix = "otherData.metadata." if self.file else "metadata."
        tail = "; the file was changed by hand or is not ours" if self.file else ""
        raise ValueError(
            f"{self.source}: {prefix}{path} must be {wanted}, got {shown(value)} "
            f"({type(value).__name__}){tail}"
        )


def _section(
    data: Any, checks: dict[str, _Check], where: Where | None, path: str
) -> Mapping[str, Any]:
    """`data` (an object) checked against `checks`, as a read-only mapping."""
    where = where or Where("metadata", file=False)
    where.check(isinstance(data, dict), path, "an object", data)
    for key, (ok, wanted) in checks.items():
        if data.get(key) is not None:
            where.check(ok(data[key]), f"{path}.{key}", wanted, data[key])
    return MappingProxyType(dict(data))


def config_checks(config_type: type | None = None) -> dict[str, _Check]:
    """What each recorded `pg.Config` setting must be, from the fields themselves: a count at
    least its `minimum`, a bool, a string; other fields (objects) are kept unchecked."""
    from ..config import Config

    checks: dict[str, _Check] = {}
    for f in fields(config_type or Config):
        if "minimum" in f.metadata:
            low = f.metadata["minimum"]
            checks[f.name] = (lambda v, low=low: is_int(v) and v >= low, f"an int >= {low}")
        elif f.type in ("bool", bool):
            checks[f.name] = _BOOL
        elif f.type in ("str", "str | None", str):
            checks[f.name] = _STRING
    return checks


_CONFIG = config_checks()
#: The Config fields recorded as they are, unchecked (objects, mappings).
_OBJECT_FIELDS = frozenset(("dask_client", "dask_placement", "dask_address"))


@dataclass(frozen=True)
class RunConfig:
    """A run's settings (`pg.Config.as_dict()`), kept as written, with typed reads.

    >>> RunConfig.from_json({"inter_op_threads": 2, "streams": 1}).inter_op_threads
    2
    """

    values: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_json(cls, data: Any, where: Where | None = None, path: str = "config") -> RunConfig:
        """The record of a JSON object; a ValueError naming `where` and the field if ill-typed."""
        return cls(_section(data, _CONFIG, where, path))

    def __reduce__(self) -> tuple[Any, ...]:  # a mappingproxy does not pickle
        return (_values_of, (type(self), self.to_json()))

    def to_json(self) -> dict[str, Any]:
        return dict(self.values)

    def __bool__(self) -> bool:
        """False when nothing was recorded (a foreign trace has no config)."""
        return bool(self.values)

    def __getattr__(self, name: str) -> Any:
        """A recorded setting by its `pg.Config` name (`config.inter_op_threads`), None where
        the run did not record it; every Config field reads so, without a line here."""
        if name in _CONFIG or name in _OBJECT_FIELDS:
            return self.values.get(name)
        raise AttributeError(f"a run's config has no setting {name!r}")


_JIT: dict[str, _Check] = {"busy_s": _NUMBER_0, "compile_s": _NUMBER_0, "compiled": _INT_0}


@dataclass(frozen=True)
class JitInfo:
    """Numba's compiler within a run (`kernels.jit_clock`): seconds busy, kernels compiled and
    seconds compiling them; absent numbers read as 0."""

    values: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_json(cls, data: Any, where: Where | None = None, path: str = "jit") -> JitInfo:
        """The record of a JSON object; a ValueError naming `where` and the field if ill-typed."""
        return cls(_section(data, _JIT, where, path))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_values_of, (type(self), self.to_json()))

    def to_json(self) -> dict[str, Any]:
        return dict(self.values)

    @property
    def busy_s(self) -> float:
        return float(self.values.get("busy_s") or 0.0)

    @property
    def compiled(self) -> int:
        return int(self.values.get("compiled") or 0)

    @property
    def compile_s(self) -> float:
        return float(self.values.get("compile_s") or 0.0)


def _config(value: Any, where: Where, path: str) -> RunConfig:
    return RunConfig.from_json(value, where, path)


def _jit(value: Any, where: Where, path: str) -> JitInfo:
    return JitInfo.from_json(value, where, path)


def _plain(check: _Check) -> Callable[[Any, Where, str], Any]:
    ok, wanted = check

    def read(value: Any, where: Where, path: str) -> Any:
        where.check(ok(value), path, wanted, value)
        return value

    return read


def _tuple_of_strings(value: Any, where: Where, path: str) -> tuple[str, ...]:
    where.check(_strings(value), path, "a list of strings", value)
    return tuple(value)


def _int_map(value: Any) -> bool:
    return isinstance(value, dict) and all(is_int(v) for v in value.values())


def _frozen_map(check: _Check) -> Callable[[Any, Where, str], Mapping[str, Any]]:
    ok, wanted = check

    def read(value: Any, where: Where, path: str) -> Mapping[str, Any]:
        where.check(ok(value), path, wanted, value)
        return MappingProxyType(dict(value))

    return read


#: How each field is read from JSON (it checks and raises); written back by `_written`.
_READERS: dict[str, Callable[[Any, Where, str], Any]] = {
    "config": _config,
    "graph": _plain(_STRING),
    "executor": _plain(_STRING),
    "cores": _plain((lambda v: is_int(v) and v >= 1, "an int >= 1")),
    "wall_ns": _plain(_NUMBER_0),
    "run": _plain(_INT_0),
    "simulated": _plain(_BOOL),
    "simulated_from": _config,
    "source": _plain(_STRING),
    "imported": _frozen_map((_OBJECT[0], "an object (the file it was read from)")),
    "lane_kinds": _frozen_map((_string_map, "an object of strings")),
    "notes": _tuple_of_strings,
    "jit": _jit,
    "recorded": _frozen_map((_int_map, "an object of ints")),
}


@dataclass(frozen=True)
class RunInfo:
    """What a run was: the fields every stage reads, `None` where not recorded (see the module
    docstring; the field order is the JSON key order).

    >>> info = RunInfo.from_json({"source": "pytorch", "notes": ["Left out 3 events"]}, "t.json")
    >>> info.source, info.notes, info.to_json()["notes"]
    ('pytorch', ('Left out 3 events',), ['Left out 3 events'])
    """

    config: RunConfig | None = None  # the settings of the run (pg.Config.as_dict())
    graph: str | None = None  # the graph's name
    executor: str | None = None  # the executor's registry name
    cores: int | None = None  # CPUs of the machine that ran it
    wall_ns: int | float | None = None  # the run's wall time as the session measured it
    run: int | None = None  # which run of its session (0: the first)
    simulated: bool | None = None  # True for `pg.simulate`'s prediction
    simulated_from: RunConfig | None = None  # the config of the trace it was predicted from
    source: str | None = None  # the producer: None or "parallelgraph" for ours
    imported: Mapping[str, Any] | None = None  # the file it was read from, and its header
    lane_kinds: Mapping[str, str] | None = None  # every lane's kind, by a foreign reader
    notes: tuple[str, ...] | None = None  # plan notes (PlanNote text) or a reader's notes
    jit: JitInfo | None = None  # Numba's compiler within the run
    #: the settings a foreign file says its run had, by the tool's names (intra_op_num_threads)
    recorded: Mapping[str, int] | None = None
    fetches: tuple[str, ...] | None = None  # the ops whose values the run returned
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_json(cls, data: Any, source: str = "trace file", *, file: bool = True) -> RunInfo:
        """The record of a JSON object; a ValueError naming `source`, the field and what it
        must be for an ill-typed field (`file=False`: a dict made in memory, not a file)."""
        where = Where(source, file)
        where.check(isinstance(data, dict), "(itself)", "an object", data)
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            reader = _READERS.get(key)
            if key == "note_kinds":  # read with the notes they type (below)
                continue
            if key == "fetches":  # the memory model ignores an ill-typed list: so do we
                if _strings(value):
                    known[key] = tuple(value)
                else:
                    extra[key] = value
            elif reader is None:
                extra[key] = value
            elif value is not None:
                known[key] = reader(value, where, key)
            else:
                extra[key] = None  # written back as null, read as not recorded
        if "notes" in known:
            known["notes"] = _typed_notes(known["notes"], data.get("note_kinds"))
        elif "note_kinds" in data:
            extra["note_kinds"] = data["note_kinds"]
        return cls(**known, extra=MappingProxyType(extra))

    def to_json(self) -> dict[str, Any]:
        """The JSON object (`otherData.metadata`): set fields in order, then `extra`."""
        out: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name == "extra" or value is None:
                continue
            out[item.name] = _written(value)
            if item.name == "notes" and any(isinstance(note, PlanNote) for note in value):
                out["note_kinds"] = [
                    note.record() if isinstance(note, PlanNote) else None for note in value
                ]
        for key, value in self.extra.items():
            out[key] = _written(value)
        return out

    def __reduce__(self) -> tuple[Any, ...]:  # through JSON: a mappingproxy does not pickle
        return (_info_of, (self.to_json(),))

    @property
    def settings(self) -> RunConfig:
        """`config`, or an empty RunConfig when the trace records none."""
        return self.config if self.config is not None else RunConfig()


def _typed_notes(notes: tuple[str, ...], kinds: Any) -> tuple[str, ...]:
    """The notes with their records (`note_kinds`, one per note, None for a reader's note)
    made PlanNotes again; as they are where the file has no records that fit."""
    if not (isinstance(kinds, list) and len(kinds) == len(notes)):
        return notes
    return tuple(
        text if record is None else PlanNote.from_record(text, record)
        for text, record in zip(notes, kinds)
    )


def _values_of(kind: type, values: dict[str, Any]) -> Any:
    return kind(MappingProxyType(values))


def _info_of(data: dict[str, Any]) -> RunInfo:
    return RunInfo.from_json(data, "pickle", file=False)


def _written(value: Any) -> Any:
    if isinstance(value, (RunConfig, JitInfo)):
        return value.to_json()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, MappingProxyType):
        return dict(value)
    return value


class Metadata(dict):  # type: ignore[type-arg]
    """`trace.metadata`: the JSON object of `trace.info`, a plain dict kept in sync with it.

    Why a dict kept in sync rather than a read-only view: users, notebooks and tests read it
    as a dict (`json.dumps` it, compare it with `==`, set a top-level key such as "jit" to try
    a what-if), and a dict it stays. Each top-level write is checked as a file's metadata is
    and replaces `info` (an ill-typed value is refused, the dict left as it was). A value
    changed inside a nested object (`metadata["config"]["streams"] = 2`) is not seen: set the
    top-level key. A dict given by a user keeps its key order, so it is written back as given.
    """

    __slots__ = ("info",)

    def __init__(self, data: Mapping[str, Any], info: RunInfo):
        super().__init__(data)
        self.info = info

    @classmethod
    def of(
        cls, value: Mapping[str, Any] | RunInfo | None, source: str, *, file: bool = False
    ) -> Metadata:
        """The metadata of a RunInfo (its JSON), or of a dict (checked: `source` names it in
        the error, `file=True` for a file's `otherData.metadata`)."""
        if isinstance(value, Metadata):
            return cls(value, value.info)
        if isinstance(value, RunInfo):
            return cls(value.to_json(), value)
        data = {} if value is None else dict(value) if isinstance(value, Mapping) else value
        return cls(data, RunInfo.from_json(data, source, file=file))  # raises for a non-object

    def _replace(self, data: dict[str, Any]) -> None:
        info = RunInfo.from_json(data, "trace.metadata", file=False)  # raises before changing
        super().clear()
        super().update(data)
        self.info = info

    def __setitem__(self, key: str, value: Any) -> None:
        data = {**self, key: value}
        if key == "notes":  # new sentences: the old notes' records do not describe them
            data.pop("note_kinds", None)
        self._replace(data)

    def __delitem__(self, key: str) -> None:
        data = dict(self)
        del data[key]
        self._replace(data)

    def pop(self, key: str, *default: Any) -> Any:
        data = dict(self)
        value = data.pop(key, *default)
        self._replace(data)
        return value

    def popitem(self) -> tuple[str, Any]:
        data = dict(self)
        item = data.popitem()
        self._replace(data)
        return item

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        data = dict(self)
        data.update(*args, **kwargs)
        self._replace(data)

    def clear(self) -> None:
        self._replace({})

    def __ior__(self, other: Any) -> Metadata:  # type: ignore[override,misc]
        self.update(other)
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_metadata_of, (dict(self),))


def _metadata_of(data: dict[str, Any]) -> Metadata:
    return Metadata.of(data, "pickle")
