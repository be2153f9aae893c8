"""Arrays in the other byte order ('>f4', what `np.load` gives for a file written on a
big-endian machine) are values like any other: a constant, a variable's initial value, a feed and
a dtype named so compute in the machine's own order, with the same results as native arrays."""

from __future__ import annotations

import numpy as np
import pytest

import parallelgraph as pg

SWAPPED = ">" if np.little_endian else "<"


@pytest.mark.parametrize("dtype", ["f4", "f8", "i4", "i8"])
def test_a_constant_of_the_other_byte_order_runs_as_its_native_twin(dtype):
    values = np.arange(12).reshape(3, 4).astype(SWAPPED + dtype)
    graph = pg.Graph()
    with graph.as_default():
        constant = pg.constant(values)
        doubled = constant + constant
    assert constant.dtype == np.dtype(dtype) and constant.dtype.isnative
    with pg.Session(graph) as session:
        result = session.run(doubled)
    assert result.dtype.isnative and np.array_equal(result, values.astype(dtype) * 2)


def test_feeds_variables_and_dtypes_of_the_other_byte_order_are_native():
    graph = pg.Graph()
    with graph.as_default():
        fed = pg.placeholder((2, 3), dtype=np.dtype(SWAPPED + "f4"))
        weights = pg.variable((3, 2), dtype=SWAPPED + "f4", init=np.ones((3, 2), SWAPPED + "f4"))
        out = pg.matmul(fed, weights)
    assert fed.dtype.isnative and weights.dtype.isnative
    value = np.arange(6, dtype=SWAPPED + "f4").reshape(2, 3)
    with pg.Session(graph) as session:
        result = session.run(out, feed_dict={fed: value})
    np.testing.assert_array_equal(result, value.astype(np.float32) @ np.ones((3, 2), np.float32))
