"""systolic.types.from_dtype on what is not a dtype (audit finding 16): InvalidValue naming the rule and the value."""

import numpy as np
import pytest

from systolic import types as T
from systolic.errors import InvalidValue


@pytest.mark.parametrize("dtype", ["bogus", "int77", 3.5])
def test_from_dtype_not_a_dtype(dtype):
    with pytest.raises(InvalidValue) as e:
        T.from_dtype(dtype)
    assert e.value.values == {"dtype": repr(dtype)}
    assert e.value.rule == "from_dtype: a numpy or ml_dtypes dtype"


def test_from_dtype_dtype_without_element_type():
    with pytest.raises(InvalidValue) as e:
        T.from_dtype(np.complex64)
    assert e.value.values == {"dtype": "complex64"}
    assert "all_types" in e.value.rule
