"""Config: defaults, TensorFlow aliases, resolution of 0, and clear errors."""

import pytest

import parallelgraph as pg
from parallelgraph.config import cpu_count


def test_defaults_and_aliases():
    config = pg.Config()
    assert (config.inter_op_threads, config.intra_op_threads, config.executor) == (0, 0, "threads")
    assert (config.streams, config.stream_policy, config.soft_placement) == (1, "branches", True)
    assert config.matmul_kernel == "blas"
    tf = pg.Config(
        inter_op_parallelism_threads=2, intra_op_parallelism_threads=3, allow_soft_placement=False
    )
    assert (tf.inter_op_threads, tf.intra_op_threads, tf.soft_placement) == (2, 3, False)


def test_zero_means_one_per_core():
    resolved = pg.Config().resolved()
    assert resolved.inter_op_threads == resolved.intra_op_threads == cpu_count() >= 1
    assert pg.Config(inter_op_threads=3).resolved().inter_op_threads == 3


def test_replace_keeps_the_rest():
    config = pg.Config(inter_op_threads=2, matmul_kernel="numba")
    changed = config.replace(intra_op_parallelism_threads=4)
    assert (changed.inter_op_threads, changed.intra_op_threads) == (2, 4)
    assert changed.matmul_kernel == "numba" and config.intra_op_threads == 0


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"inter_op_threads": -1}, "inter_op_threads must be an int >= 0, got -1"),
        ({"intra_op_threads": 1.5}, "intra_op_threads must be an int >= 0, got 1.5"),
        ({"inter_op_threads": True}, "inter_op_threads must be an int"),
        ({"streams": 0}, "streams must be an int >= 1"),
        ({"executor": "magic"}, "executor must be one of"),
        ({"stream_policy": "random"}, "stream_policy must be one of"),
        ({"matmul_kernel": "mkl"}, "matmul_kernel must be one of"),
        ({"soft_placement": "yes"}, "soft_placement must be True or False"),
    ],
)
def test_bad_values_raise_clear_value_errors(settings, message):
    with pytest.raises(ValueError, match=message):
        pg.Config(**settings)


def test_unknown_and_duplicate_settings():
    with pytest.raises(TypeError, match="unknown setting 'inter_threads'"):
        pg.Config(inter_threads=2)
    with pytest.raises(TypeError, match="twice"):
        pg.Config(inter_op_threads=1, inter_op_parallelism_threads=2)
