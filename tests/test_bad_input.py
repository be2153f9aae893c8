"""Bad input, table-driven: every malformed case gets a clear, specific error before any work
runs — GraphError/ValueError/TypeError in Python, a one-line message and exit code 2 from the
CLI."""

import numpy as np
import pytest
from helpers import FailingOp

import parallelgraph as pg
from parallelgraph.cli import main


def graph_with_placeholder():
    g = pg.Graph("bad")
    with g.as_default(), pg.scope("s"):
        x = pg.placeholder((2, 3), name="x")
        y = pg.relu(x @ pg.variable((3, 2), name="w"))
    return g, x, y


def build(thunk):
    g = pg.Graph("bad")
    with g.as_default(), pg.scope("s"):
        thunk()


def run_with(feed=None, fetch=None, config=None):
    g, x, y = graph_with_placeholder()
    feed = {x: np.ones((2, 3))} if feed is None else feed(x)
    with pg.Session(g, config) as sess:
        sess.run(y if fetch is None else fetch(g, y), feed)


def edited_into_a_cycle():
    g = pg.Graph("cycle")
    with g.as_default():
        a = pg.relu(pg.constant(np.ones((2, 2))))
        b = pg.tanh(a)
    object.__setattr__(a.op, "inputs", (b,))  # an edit no builder can make
    with pg.Session(g) as sess:
        sess.run(b)


PYTHON_CASES = [
    # shapes and dtypes at build time
    (
        "matmul inner dims",
        lambda: build(
            lambda: pg.matmul(pg.constant(np.ones((2, 3))), pg.constant(np.ones((2, 3))))
        ),
        pg.GraphError,
        r"'s'.*inner dimensions differ: \[2, 3\] @ \[2, 3\]",
    ),
    (
        "matmul 1-D",
        lambda: build(lambda: pg.matmul(pg.constant(np.ones(3)), pg.constant(np.ones((3, 3))))),
        pg.GraphError,
        "needs operands of 2 or more axes",
    ),
    (
        "add shapes",
        lambda: build(lambda: pg.constant(np.ones((2, 3))) + pg.constant(np.ones((2, 4)))),
        pg.GraphError,
        r"\[2, 3\] and \[2, 4\] do not broadcast",
    ),
    (
        "mixed dtypes",
        lambda: build(lambda: pg.constant(np.ones(2, "f4")) * pg.constant(np.ones(2))),
        pg.GraphError,
        r"dtypes differ \(float32, float64\)",
    ),
    (
        "float16 dtype",
        lambda: build(lambda: pg.placeholder((2,), dtype="float16")),
        pg.GraphError,
        "unsupported dtype 'float16'",
    ),
    (
        "unknown dtype",
        lambda: build(lambda: pg.random_normal((2,), dtype="float128x")),
        pg.GraphError,
        "unsupported dtype",
    ),
    (
        "negative dim",
        lambda: build(lambda: pg.variable((3, -2), name="w")),
        pg.GraphError,
        "non-negative ints",
    ),
    (
        "None dim",
        lambda: build(lambda: pg.placeholder((None, 3))),
        pg.GraphError,
        r"unknown \(None\) dimension",
    ),
    (
        "string shape",
        lambda: build(lambda: pg.placeholder("3x3")),
        pg.GraphError,
        "expected a tuple of ints",
    ),
    (
        "reduce axis",
        lambda: build(lambda: pg.reduce_mean(pg.constant(np.ones((2, 2))), axis=-3)),
        pg.GraphError,
        r"axis -3 is out of range for shape \[2, 2\]",
    ),
    (
        "reduce axis type",
        lambda: build(lambda: pg.reduce_sum(pg.constant(np.ones((2, 2))), axis="0")),
        pg.GraphError,
        "axis must be None or an int",
    ),
    (
        "add_n shapes",
        lambda: build(lambda: pg.add_n([pg.constant(np.ones(2)), pg.constant(np.ones(3))])),
        pg.GraphError,
        "add_n needs equal shapes",
    ),
    ("add_n empty", lambda: build(lambda: pg.add_n([])), pg.GraphError, "non-empty list"),
    (
        "variable init shape",
        lambda: build(lambda: pg.variable((2, 2), name="w", init=np.ones(3))),
        pg.GraphError,
        r"initial value has shape \[3\]",
    ),
    (
        "variable init name",
        lambda: build(lambda: pg.variable((2,), name="w", init="he")),
        pg.GraphError,
        "unknown init 'he'",
    ),
    (
        "negative stddev",
        lambda: build(lambda: pg.random_normal((2,), stddev=-1)),
        pg.GraphError,
        "stddev must be >= 0",
    ),
    (
        "too big for memory",
        lambda: build(lambda: pg.random_normal((10**6, 10**6))),
        pg.GraphError,
        r"needs \d+\.\d GiB, more than this machine's",
    ),
    (
        "bad op name",
        lambda: build(lambda: pg.constant([1.0], name="a b")),
        pg.GraphError,
        "may only hold letters",
    ),
    ("bad scope", lambda: pg.scope("a b").__enter__(), pg.GraphError, "bad scope name"),
    (
        "unknown device",
        lambda: pg.device("tpu:0").__enter__(),
        pg.GraphError,
        "unknown device 'tpu:0'",
    ),
    (
        "non-tensor operand",
        lambda: build(lambda: pg.tanh({"a": 1})),
        pg.GraphError,
        "must be a Tensor, a number or an array",
    ),
    ("edited into a cycle", edited_into_a_cycle, pg.GraphError, "edited into a cycle"),
    # arguments refused where they are given, not when a run first uses them
    (
        "ragged constant",
        lambda: build(lambda: pg.constant([[1, 2], [3]])),
        pg.GraphError,
        r"cannot build constant op 'Const' in scope 's': bad value",
    ),
    (
        "ragged variable init",
        lambda: build(lambda: pg.variable((2,), name="w", init=[[1], [2, 3]])),
        pg.GraphError,
        r"variable op 'w' in scope 's': bad value",
    ),
    (
        "tensor inside a constant",
        lambda: build(lambda: pg.constant([pg.constant(1.0)])),
        pg.GraphError,
        "has no value until a Session runs it",
    ),
    *[
        (
            f"random_normal seed {seed!r}",
            lambda seed=seed: build(lambda: pg.random_normal((2,), seed=seed)),
            pg.GraphError,
            r"random_normal op 'RandomNormal' in scope 's': seed must be an int or None",
        )
        for seed in ("abc", float("nan"), [1], 1.5, True)
    ],
    (
        "variable seed",
        lambda: build(lambda: pg.variable((2,), name="w", seed="abc")),
        pg.GraphError,
        r"variable op 'w' in scope 's': seed must be an int or None, got 'abc'",
    ),
    (
        "random_normal mean",
        lambda: build(lambda: pg.random_normal((2,), mean="zero")),
        pg.GraphError,
        "mean must be a finite number, got 'zero'",
    ),
    (
        "random_normal stddev inf",
        lambda: build(lambda: pg.random_normal((2,), stddev=float("inf"))),
        pg.GraphError,
        "stddev must be a finite number",
    ),
    (
        "numpy ufunc on a tensor",
        lambda: build(lambda: np.add(np.ones(3), pg.constant(np.ones(3)))),
        TypeError,
        "does not support ufuncs",
    ),
    (
        "tensor as an array",
        lambda: build(lambda: np.asarray(pg.constant(np.ones(3)))),
        TypeError,
        "has no value until a Session runs it",
    ),
    # feeds and fetches at run time, before anything runs
    (
        "missing feed",
        lambda: run_with(feed=lambda x: {}),
        pg.GraphError,
        r"placeholder 's/x'.*needs a value",
    ),
    (
        "feed shape",
        lambda: run_with(feed=lambda x: {x: np.ones((3, 2))}),
        pg.GraphError,
        r"shape \[3, 2\] does not match the tensor's shape \[2, 3\]",
    ),
    (
        "feed dtype",
        lambda: run_with(feed=lambda x: {x: np.full((2, 3), "a")}),
        pg.GraphError,
        "dtype <U1 cannot become float32",
    ),
    (
        "feed key name",
        lambda: run_with(feed=lambda x: {"s/nothing": 1.0}),
        pg.GraphError,
        "has no op named 's/nothing'",
    ),
    ("feed key type", lambda: run_with(feed=lambda x: {3: 1.0}), pg.GraphError, "cannot fetch 3"),
    (
        "fetch output 1",
        lambda: run_with(fetch=lambda g, y: "s/Relu:1"),
        pg.GraphError,
        r"'s/Relu' \(relu, scope 's', device cpu:0\) has one output",
    ),
    (
        "fetch type",
        lambda: run_with(fetch=lambda g, y: [y, "s/x", 5]),
        pg.GraphError,
        "cannot fetch 5",
    ),
    (
        "fetch other graph",
        lambda: run_with(fetch=lambda g, y: pg.constant([1.0])),
        pg.GraphError,
        "belongs to graph",
    ),
    (
        "missing device without soft placement",
        lambda: _run_on_missing_device(),
        pg.GraphError,
        r"'s/Relu' \(relu, scope 's', device cpu:1\) is placed on cpu:1",
    ),
    # configs
    (
        "negative threads",
        lambda: pg.Config(inter_op_threads=-2),
        ValueError,
        "inter_op_threads must be an int >= 0",
    ),
    (
        "float threads",
        lambda: pg.Config(intra_op_parallelism_threads=2.5),
        ValueError,
        "intra_op_threads must be an int",
    ),
    ("zero streams", lambda: pg.Config(streams=0), ValueError, "streams must be an int >= 1"),
    (
        "too many inter-op threads",
        lambda: pg.Config(inter_op_threads=100_000),
        ValueError,
        "inter_op_threads must be at most 1024",
    ),
    (
        "too many intra-op threads",
        lambda: pg.Config(intra_op_parallelism_threads=5000),
        ValueError,
        "intra_op_threads must be at most 1024",
    ),
    (
        "sweep with no repeats",
        lambda: pg.sweep("two-networks", {"size": ["tiny"]}, repeats=0),
        ValueError,
        "need repeats >= 1",
    ),
    ("unknown executor", lambda: pg.Config(executor="mpi"), ValueError, "executor must be one of"),
    (
        "unknown policy",
        lambda: pg.Config(stream_policy="random"),
        ValueError,
        "stream_policy must be one of",
    ),
    (
        "unknown kernel",
        lambda: pg.Config(matmul_kernel="cublas"),
        ValueError,
        "matmul_kernel must be one of",
    ),
    ("unknown setting", lambda: pg.Config(threads=2), TypeError, "unknown setting 'threads'"),
    (
        "session config type",
        lambda: pg.Session(pg.Graph(), config={"inter_op_threads": 1}),
        TypeError,
        "takes a pg.Config",
    ),
    # trace files
    (
        "truncated trace",
        lambda: _load('{"traceEvents": [{"ph": "X", "ts": 1'),
        ValueError,
        "not valid JSON",
    ),
    ("garbage trace", lambda: _load("\x00\x01garbage"), ValueError, "not valid JSON"),
    ("trace without events", lambda: _load('{"meta": 1}'), ValueError, "traceEvents"),
    (
        "event without ts",
        lambda: _load('[{"ph": "X", "name": "a", "dur": 1}]'),
        ValueError,
        "event 0",
    ),
]


def _run_on_missing_device():
    g = pg.Graph("placed")
    with g.as_default(), pg.scope("s"), pg.device("cpu:1"):
        y = pg.relu(pg.constant(np.ones((2, 2))))
    with pg.Session(g, pg.Config(allow_soft_placement=False)) as sess:
        sess.run(y)


_TMP = {}


def _load(content):
    path = _TMP["dir"] / "bad_trace.json"
    path.write_text(content)
    pg.Trace.load(path)


@pytest.mark.parametrize(
    "name, action, error, message", PYTHON_CASES, ids=[c[0] for c in PYTHON_CASES]
)
def test_python_api_refuses_bad_input_before_running(name, action, error, message, tmp_path):
    _TMP["dir"] = tmp_path
    FailingOp.calls.clear()
    with pytest.raises(error, match=message):
        action()
    assert not FailingOp.calls


CLI_CASES = [
    (["run", "--inter", "-1"], "must be >= 0"),
    (["run", "--streams", "0"], "must be >= 1"),
    (["run", "--preset", "nope"], "invalid choice"),
    (["run", "--size", "huge"], "invalid choice"),
    (["run", "--executor", "mpi"], "invalid choice"),
    (["run", "--inter", "100000"], "must be at most 1024"),
    (["run", "--intra", "x"], "must be an integer, got 'x'"),
    (["run", "--repeats", "0"], "must be >= 1, got 0"),
    (["demo", "--repeats", "0"], "must be >= 1, got 0"),
    (["run", "--bogus"], "unrecognized arguments: --bogus"),
    ([], "the following arguments are required: command"),
    (["sweep", "--inter", "1,5000"], "at most 1024"),
    (["sweep", "--inter", "1,two"], "comma-separated integers"),
    (["sweep", "--intra", "0"], "thread counts >= 1"),
    (["plot", "/no/such/trace.json"], "No such file"),
    (["explain", "/no/such/trace.json"], "No such file"),
    (["compare", "only-one.json"], "at least two trace files"),
    (["frobnicate"], "invalid choice"),
]


@pytest.mark.parametrize("argv, message", CLI_CASES, ids=[" ".join(c[0]) for c in CLI_CASES])
def test_cli_exits_non_zero_with_one_line(argv, message, capsys):
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse errors
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err  # one line: no usage block, no traceback


def test_the_table_has_at_least_30_cases():
    assert len(PYTHON_CASES) + len(CLI_CASES) >= 30
