"""The thread knobs of each framework, and how a worker process sets them before it starts.

A framework's pools are fixed early: TensorFlow's by its first op, PyTorch's inter-op pool by
its first parallel work, JAX's XLA flags when it is imported, OpenMP's when the library loads.
So a setting is applied in three steps, each the earliest the framework allows:

1. `environment(setting)`: variables the worker process starts with (XLA_FLAGS, OMP_NUM_THREADS);
2. `Framework.start(setting)`, in the worker before the user's build function is even unpickled
   (unpickling may import the framework): import it and call its setters
   (`tf.config.threading.set_*`, `torch.set_num_*`), pin the process to `cores` CPUs;
3. the `Setting` handed to `build(setting)`: what a program creates itself —
   ONNX Runtime's `SessionOptions`, TF1's `ConfigProto`, a thread pool for NumPy.

Then `read_back` asks the framework what it actually uses, so a sweep shows the settings that
took effect, not the ones asked for.

Knobs every framework has: `inter` and `intra` (in each framework's meaning, below), `cores`
(the CPUs the worker may use: `os.sched_setaffinity`), `blas` (threads of the BLAS/OpenMP pools
under it, through threadpoolctl). Framework-specific: ONNX Runtime's `mode` ("sequential" or
"parallel"; by default "parallel" exactly when inter > 1, since ORT_SEQUENTIAL ignores the
inter-op pool), JAX's `devices` (CPU devices, XLA's way to run branches side by side). Every
other grid key is the user's own and reaches `build` as `setting["key"]` or `setting.key`.
"""

from __future__ import annotations

import glob
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

#: Knobs of every framework.
COMMON_KNOBS = ("inter", "intra", "cores", "blas")


class Setting(Mapping[str, Any]):
    """What `build(setting)` receives in the worker: the framework's knobs (`inter`, `intra`,
    ...: None where the sweep left them to the framework) and the user's own grid values
    (`setting["batch"]` or `setting.batch`), plus helpers for what the program creates itself.
    """

    def __init__(self, framework: str, values: Mapping[str, Any], profiling: str | None = None):
        self.framework = framework
        self._values = dict(values)
        #: Where a traced build writes its profile (ONNX Runtime sessions), else None.
        self.profiling = profiling
        self._made: list[Any] = []  # sessions, options, pools made through the helpers
        #: The keys the program read (`setting.inter`, `setting["intra"]`): a knob the framework
        #: cannot read back counts as applied when the build read it and applied it itself.
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self._values[key]

    def __iter__(self) -> Any:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in KNOWN_KNOBS:
            self.read.add(name)
            return self._values.get(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(
                f"this setting has no {name!r}: it has {sorted(self._values)}"
            ) from None

    def __repr__(self) -> str:
        return f"Setting({self.framework}, {self._values})"

    # -- helpers for what the program creates ---------------------------------------------------
    def session_options(self) -> Any:
        """ONNX Runtime: `SessionOptions` with this setting's threads and execution mode (and
        profiling on when the sweep traces this build)."""
        ort = _only(self, "onnxruntime", "session_options")
        options = ort.SessionOptions()
        if self.inter is not None:
            options.inter_op_num_threads = int(self.inter)
        if self.intra is not None:
            options.intra_op_num_threads = int(self.intra)
        options.execution_mode = (
            ort.ExecutionMode.ORT_PARALLEL
            if _ort_mode(self) == "parallel"
            else ort.ExecutionMode.ORT_SEQUENTIAL
        )
        if self.profiling:
            options.enable_profiling = True
            options.profile_file_prefix = os.path.join(self.profiling, "ort_profile")
        self._made.append(options)
        return options

    def session(self, model: Any, **kwargs: Any) -> Any:
        """ONNX Runtime: an `InferenceSession` of `model` (a path, bytes, or the
        `onnx.ModelProto` users hold) with `session_options()`; CPU provider unless
        `providers=` says otherwise."""
        ort = _only(self, "onnxruntime", "session")
        if hasattr(model, "SerializeToString"):  # ORT takes paths and bytes only
            model = model.SerializeToString()
        elif isinstance(model, os.PathLike):
            model = os.fspath(model)
        kwargs.setdefault("providers", ["CPUExecutionProvider"])
        session = ort.InferenceSession(model, sess_options=self.session_options(), **kwargs)
        self._made.append(session)
        return session

    def config_proto(self) -> Any:
        """TensorFlow 1 (`tf.compat.v1.Session(config=...)`): a ConfigProto with the threads."""
        tf = _only(self, "tensorflow", "config_proto")
        config = tf.compat.v1.ConfigProto()
        if self.inter is not None:
            config.inter_op_parallelism_threads = int(self.inter)
        if self.intra is not None:
            config.intra_op_parallelism_threads = int(self.intra)
        self._made.append(config)
        return config

    def pool(self) -> ThreadPoolExecutor:
        """NumPy (or any Python program): a thread pool of `inter` threads for independent
        work (`pool.submit(branch1)`); NumPy's own ops release the GIL.

        Its threads are started here, all of them: a ThreadPoolExecutor starts one only when a
        task finds none idle, so branches of microseconds ran on one thread whatever `inter`
        said (and the read-back counted one). Each start task waits for the others at a barrier,
        which only `inter` threads at once can pass."""
        workers = int(self.inter or 1)
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="inter")
        if workers > 1:
            started = threading.Barrier(workers)
            for task in [pool.submit(started.wait, 10.0) for _ in range(workers)]:
                task.result()
        self._made.append(pool)
        return pool

    def made(self, kind: str) -> list[Any]:
        return [thing for thing in self._made if type(thing).__name__ == kind]


def _only(setting: Setting, framework: str, helper: str) -> Any:
    if setting.framework != framework:
        raise TypeError(
            f"setting.{helper}() is for {framework}; this sweep runs {setting.framework}"
        )
    import importlib

    return importlib.import_module(framework)


def _ort_mode(setting: Setting) -> str:
    mode = setting._values.get("mode")
    if mode is None:
        return "parallel" if (setting.inter or 1) > 1 else "sequential"
    return str(mode)


@dataclass(frozen=True)
class Framework:
    """One framework: its knobs and how a worker applies, reads back and profiles them."""

    name: str  # what users pass: "onnxruntime"
    title: str  # how it is written: "ONNX Runtime"
    module: str  # imported in the worker before the build function is unpickled
    extra_knobs: tuple[str, ...] = ()
    #: variables the worker starts with (those of `common_environment` are added)
    environment: Callable[[Mapping[str, Any]], dict[str, str]] = lambda setting: {}
    apply: Callable[[Any, Mapping[str, Any]], None] = lambda module, setting: None
    read_back: Callable[[Any, Setting], dict[str, Any]] = lambda module, setting: {}
    #: trace one call of `step` into the folder; returns the trace file's path
    profile: Callable[[Any, Callable[[], Any], Setting, str], str] | None = None
    #: Profiling is chosen when the program makes its session (ONNX Runtime): a traced step
    #: needs a build of its own, profiled from its creation; else the warm step is traced.
    profiles_from_start: bool = False
    #: What the words of explain()'s advice mean as a setting: kind -> change(setting, cores)
    advice: dict[str, Callable[[dict[str, Any], int], dict[str, Any]]] = field(default_factory=dict)
    #: Accepted values of the framework-specific knobs, when they are not whole numbers.
    choices: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: Other names users call it by ("torch", "tf").
    aliases: tuple[str, ...] = ()
    #: A setting the framework refuses, in words (checked before any worker starts), or None.
    check: Callable[[Mapping[str, Any]], str | None] = lambda setting: None
    #: The knobs the framework dashboard shows as sliders.
    sliders: tuple[str, ...] = ("inter", "intra")
    #: The seed graph's build function for it, by name in `frameworks.examples`.
    example: str = ""

    @property
    def knobs(self) -> tuple[str, ...]:
        return (*COMMON_KNOBS, *self.extra_knobs)

    def example_build(self) -> Callable[[Setting], Callable[[], Any]]:
        """The seed graph's build function in this framework (`frameworks.examples`)."""
        from . import examples

        return getattr(examples, self.example)

    def start(self, setting: Mapping[str, Any]) -> Any:
        """In the worker: import the framework and apply the setting's process-wide knobs."""
        import importlib

        if setting.get("cores") is not None:
            os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: int(setting["cores"])])
        module = importlib.import_module(self.module)
        self.apply(module, setting)
        return module


# -- the knobs under every framework --------------------------------------------------------------
def common_environment(setting: Mapping[str, Any]) -> dict[str, str]:
    """OpenMP and BLAS read their thread counts when they load: set them from `blas`."""
    if setting.get("blas") is None:
        return {}
    n = str(int(setting["blas"]))
    return {"OMP_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n, "MKL_NUM_THREADS": n}


def common_read_back(setting: Mapping[str, Any]) -> dict[str, Any]:
    """The CPUs the worker may use, its OS threads now (the framework's pools among them) and
    the BLAS/OpenMP pools' threads (threadpoolctl)."""
    out: dict[str, Any] = {"cores": len(os.sched_getaffinity(0))}
    if os.path.isdir("/proc/self/task"):
        out["os_threads"] = len(os.listdir("/proc/self/task"))
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - a dependency
        return out
    pools = {f"{info['internal_api']}": info["num_threads"] for info in threadpool_info()}
    if pools:
        out["blas"] = pools
    return out


def unapplied(asked: Mapping[str, Any], read_back: Mapping[str, Any]) -> dict[str, str]:
    """The knobs of `asked` (those set, not None) that the read-back does not confirm, each
    with what was read back: "not read back" where the framework said nothing of it and the
    build did not read it either (a NumPy build that made no `setting.pool()` and never looked
    at `setting.inter`, an ONNX Runtime build that made its own session), else the value the
    framework reported instead. Such a setting was not measured: a sweep keeps it out of its
    verdicts and says so."""
    missing = {}
    for key, want in asked.items():
        if want is None or key not in KNOWN_KNOBS:
            continue
        got = read_back.get(key)
        if key == "blas" and isinstance(got, Mapping):  # every BLAS/OpenMP pool found
            wrong = {pool: n for pool, n in got.items() if n != want}
            if wrong:
                missing[key] = f"reported {wrong}"
        elif key == "cores":
            if got is not None and got != want:
                missing[key] = f"reported {got}"
        elif got is None:
            if key not in read_back.get("read_by_build", ()):
                missing[key] = "not read back"
        elif got != want:
            missing[key] = f"reported {got!r}"
    return missing


def unapplied_text(asked: Mapping[str, Any], read_back: Mapping[str, Any]) -> str:
    """'inter=2 (not read back), intra=2 (reported 1)', or '' when every knob was applied."""
    return ", ".join(
        f"{key}={asked[key]} ({why})" for key, why in unapplied(asked, read_back).items()
    )


def _thread_advice(
    inter: str, intra: str
) -> dict[str, Callable[[dict[str, Any], int], dict[str, Any]]]:
    """Advice kinds as settings: "inter_op" more of `inter`; "intra_op" and "critical_path"
    (whose words are the framework's intra-op knob: make the path's ops use more threads)
    more of `intra`."""
    return {
        "inter_op": _doubled(inter),
        "intra_op": _doubled(intra),
        "critical_path": _doubled(intra),
    }


def _doubled(key: str) -> Callable[[dict[str, Any], int], dict[str, Any]]:
    """Advice 'more threads of `key`': twice what the run had (at least 2), at most the cores."""

    def change(setting: dict[str, Any], cores: int) -> dict[str, Any]:
        now = setting.get(key) or 1
        return {**setting, key: max(2, min(2 * int(now), cores))}

    return change


# -- NumPy ----------------------------------------------------------------------------------------
#: The worker's BLAS limits: they hold while the threadpoolctl object lives (the process's life).
_BLAS_LIMITS: list[Any] = []


def _numpy_apply(module: Any, setting: Mapping[str, Any]) -> None:
    if setting.get("intra") is not None:
        from threadpoolctl import threadpool_limits

        _BLAS_LIMITS.append(threadpool_limits(limits=int(setting["intra"])))


def _numpy_read_back(module: Any, setting: Setting) -> dict[str, Any]:
    pools = setting.made("ThreadPoolExecutor")
    from threadpoolctl import threadpool_info

    blas = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    return {
        "inter": pools[-1]._max_workers if pools else None,
        "intra": blas[0] if blas else None,
    }


def _viztracer_profile(module: Any, step: Callable[[], Any], setting: Setting, folder: str) -> str:
    try:
        from viztracer import VizTracer
    except ImportError:
        raise RuntimeError(
            "NumPy has no profiler of its own: trace=True records the step with viztracer "
            "(pip install viztracer in the environment the sweep runs in)"
        ) from None
    path = os.path.join(folder, "viztracer.json")
    with VizTracer(output_file=path, verbose=0):
        step()
    return path


# -- PyTorch --------------------------------------------------------------------------------------
def _torch_apply(torch: Any, setting: Mapping[str, Any]) -> None:
    if setting.get("intra") is not None:
        torch.set_num_threads(int(setting["intra"]))
    if setting.get("inter") is not None:
        torch.set_num_interop_threads(int(setting["inter"]))


def _torch_read_back(torch: Any, setting: Setting) -> dict[str, Any]:
    return {"inter": torch.get_num_interop_threads(), "intra": torch.get_num_threads()}


def _torch_profile(torch: Any, step: Callable[[], Any], setting: Setting, folder: str) -> str:
    path = os.path.join(folder, "torch.json")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        step()
    profile.export_chrome_trace(path)
    return path


# -- TensorFlow -----------------------------------------------------------------------------------
def _tf_environment(setting: Mapping[str, Any]) -> dict[str, str]:
    return {"TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2")}


def _tf_apply(tf: Any, setting: Mapping[str, Any]) -> None:
    if setting.get("inter") is not None:
        tf.config.threading.set_inter_op_parallelism_threads(int(setting["inter"]))
    if setting.get("intra") is not None:
        tf.config.threading.set_intra_op_parallelism_threads(int(setting["intra"]))


def _tf_read_back(tf: Any, setting: Setting) -> dict[str, Any]:
    threading = tf.config.threading
    out = {
        "inter": threading.get_inter_op_parallelism_threads(),
        "intra": threading.get_intra_op_parallelism_threads(),
    }
    protos = setting.made("ConfigProto")
    if protos:
        out["config_proto"] = {
            "inter": protos[-1].inter_op_parallelism_threads,
            "intra": protos[-1].intra_op_parallelism_threads,
        }
    return out


def _tf_profile(tf: Any, step: Callable[[], Any], setting: Setting, folder: str) -> str:
    """TF2 writes an .xplane.pb; TensorBoard's profile plugin (xprof) turns it into the JSON
    its trace viewer shows, which `Trace.load` reads."""
    try:
        from xprof.convert import raw_to_tool_data
    except ImportError:
        raise RuntimeError(
            "tracing TensorFlow 2 needs xprof to turn its .xplane.pb into a trace "
            "(pip install xprof in the environment the sweep runs in)"
        ) from None
    tf.profiler.experimental.start(folder)
    try:
        step()
    finally:
        tf.profiler.experimental.stop()
    xplanes = glob.glob(os.path.join(folder, "plugins", "profile", "*", "*.xplane.pb"))
    data, _ = raw_to_tool_data.xspace_to_tool_data(xplanes[:1], "trace_viewer", {})
    path = os.path.join(folder, "tensorflow.trace.json")
    with open(path, "wb") as handle:
        handle.write(data if isinstance(data, bytes) else data.encode())
    return path


# -- ONNX Runtime ---------------------------------------------------------------------------------
def _ort_read_back(ort: Any, setting: Setting) -> dict[str, Any]:
    """What the session reports it was made with (the last made through the helpers)."""
    sessions = setting.made("InferenceSession")
    options = (
        sessions[-1].get_session_options()
        if sessions
        else next(iter(setting.made("SessionOptions")[-1:]), None)
    )
    if options is None:
        return {"note": "no session made through setting.session() or setting.session_options()"}
    return {
        "inter": options.inter_op_num_threads,
        "intra": options.intra_op_num_threads,
        "mode": "parallel"
        if options.execution_mode == ort.ExecutionMode.ORT_PARALLEL
        else "sequential",
    }


def _ort_profile(ort: Any, step: Callable[[], Any], setting: Setting, folder: str) -> str:
    """The traced build's sessions profile from their creation (setting.profiling is set);
    `end_profiling()` writes the file."""
    step()
    for session in setting.made("InferenceSession"):
        session.end_profiling()
    files = sorted(glob.glob(os.path.join(folder, "ort_profile*.json")))
    if not files:
        raise RuntimeError(
            "no ONNX Runtime profile was written: make the session with setting.session(model) "
            "or with sess_options=setting.session_options()"
        )
    return files[-1]


# -- JAX ------------------------------------------------------------------------------------------
def _jax_environment(setting: Mapping[str, Any]) -> dict[str, str]:
    flags = [os.environ.get("XLA_FLAGS", "")]
    if setting.get("devices") is not None:
        flags.append(f"--xla_force_host_platform_device_count={int(setting['devices'])}")
    if setting.get("intra") is not None and int(setting["intra"]) == 1:
        flags.append("--xla_cpu_multi_thread_eigen=false")
    return {"XLA_FLAGS": " ".join(f for f in flags if f), "JAX_PLATFORMS": "cpu"}


def _jax_read_back(jax: Any, setting: Setting) -> dict[str, Any]:
    flags = os.environ.get("XLA_FLAGS", "")
    return {
        "devices": jax.device_count(),
        "intra": 1 if "--xla_cpu_multi_thread_eigen=false" in flags else "XLA's default",
        "XLA_FLAGS": flags,
    }


def _jax_profile(jax: Any, step: Callable[[], Any], setting: Setting, folder: str) -> str:
    with jax.profiler.trace(folder):
        step()
    files = glob.glob(os.path.join(folder, "**", "*.trace.json.gz"), recursive=True)
    files = [f for f in files if not f.endswith("perfetto_trace.json.gz")]
    if not files:
        raise RuntimeError(f"jax.profiler.trace wrote no .trace.json.gz under {folder}")
    return files[0]


def _check_jax(setting: Mapping[str, Any]) -> str | None:
    if setting.get("inter") is not None:
        return "JAX has no inter-op thread setting: sweep devices (XLA's CPU devices) instead"
    if setting.get("intra") not in (None, 1):
        return "JAX offers XLA's intra-op threads on or off: intra=1 (off) or leave it out"
    return None


FRAMEWORKS: dict[str, Framework] = {
    "numpy": Framework(
        name="numpy",
        example="build_numpy",
        title="NumPy",
        module="numpy",
        apply=_numpy_apply,
        read_back=_numpy_read_back,
        profile=_viztracer_profile,
        advice=_thread_advice("inter", "intra"),
    ),
    "pytorch": Framework(
        name="pytorch",
        example="build_pytorch",
        aliases=("torch",),
        title="PyTorch",
        module="torch",
        apply=_torch_apply,
        read_back=_torch_read_back,
        profile=_torch_profile,
        advice=_thread_advice("inter", "intra"),
    ),
    "tensorflow": Framework(
        name="tensorflow",
        example="build_tensorflow",
        aliases=("tf",),
        title="TensorFlow",
        module="tensorflow",
        environment=_tf_environment,
        apply=_tf_apply,
        read_back=_tf_read_back,
        profile=_tf_profile,
        advice=_thread_advice("inter", "intra"),
    ),
    "onnxruntime": Framework(
        name="onnxruntime",
        example="build_onnxruntime",
        aliases=("ort", "onnx"),
        title="ONNX Runtime",
        module="onnxruntime",
        extra_knobs=("mode",),
        read_back=_ort_read_back,
        profile=_ort_profile,
        profiles_from_start=True,
        # ONNX Runtime's inter-op advice is in intra's words (its CPU nodes run one at a time)
        advice=_thread_advice("intra", "intra"),
        choices={"mode": ("sequential", "parallel")},
    ),
    "jax": Framework(
        name="jax",
        example="build_jax",
        check=_check_jax,
        sliders=("devices",),
        title="JAX",
        module="jax",
        extra_knobs=("devices",),
        environment=_jax_environment,
        read_back=_jax_read_back,
        profile=_jax_profile,
        advice={"inter_op": _doubled("devices")},
    ),
}
ALIASES = {alias: f.name for f in FRAMEWORKS.values() for alias in f.aliases}
KNOWN_KNOBS = frozenset(k for f in FRAMEWORKS.values() for k in f.knobs)


def framework(name: str) -> Framework:
    """The Framework called `name` (or one of its aliases), or a ValueError listing them."""
    if not isinstance(name, str) or ALIASES.get(name.lower(), name.lower()) not in FRAMEWORKS:
        raise ValueError(f"framework={name!r}: one of {sorted(FRAMEWORKS)} (or {sorted(ALIASES)})")
    return FRAMEWORKS[ALIASES.get(name.lower(), name.lower())]


#: The name a profiled step's scratch folder starts with (the parent removes it after loading).
PROFILE_PREFIX = "pg-profile-"


def scratch_folder() -> str:
    """A fresh folder for one profiled step's files."""
    return tempfile.mkdtemp(prefix=PROFILE_PREFIX)


__all__ = ["FRAMEWORKS", "Framework", "Setting", "framework"]
