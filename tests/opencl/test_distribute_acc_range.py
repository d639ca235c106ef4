"""opencl.distribute: an integer accumulator value the type cannot hold is refused, not wrapped modulo 2**32
(issue 25, "a user's value is represented exactly or refused"); the boundary values themselves pass through and
come back exactly from gather."""

from __future__ import annotations

import numpy as np
import pytest

from systolic import opencl as cl
from systolic.errors import InvalidValue

NAME = "intel_sub_group_i8_i8_matrix_mad_k32"


@pytest.mark.parametrize("bad", [1 << 31, -(1 << 31) - 1, 1 << 40])
def test_int32_accumulator_out_of_range_is_refused(bad):
    acc = np.zeros((8, 16), np.int64)
    acc[3, 5] = bad
    with pytest.raises(InvalidValue, match="accumulator"):
        cl.distribute(NAME, "acc", acc, device="pvc")


def test_int32_accumulator_limits_round_trip():
    acc = np.zeros((8, 16), np.int64)
    acc[0, 0], acc[7, 15] = (1 << 31) - 1, -(1 << 31)
    per_wi = cl.distribute(NAME, "acc", acc, device="pvc")
    back = cl.gather(NAME, "acc", per_wi, device="pvc")
    assert np.array_equal(np.asarray(back, np.int64), acc)
