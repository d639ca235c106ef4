"""Signalling NaNs in A, B or C are legitimate inputs: the XMX GEMM paths widen them to binary64 on purpose, and
numpy's cast flags that as 'invalid value encountered in cast'. No RuntimeWarning may reach the caller (it did,
from README's commands, on the device's CPU)."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

from systolic.xmx import matmul


def _with_snans(shape, rng, bits, dtype):
    x = rng.standard_normal(shape).astype(np.float32).astype(dtype)
    flat = x.view(np.uint16 if np.dtype(dtype).itemsize == 2 else np.uint32).reshape(-1)
    flat[:: 7] = bits                                    # signalling NaN payloads (quiet bit clear)
    return x


@pytest.mark.parametrize("model", ["stage", "sequential"])
@pytest.mark.parametrize("dtype, snan", [(ml_dtypes.bfloat16, 0x7F81), (np.float16, 0x7C01)])
def test_no_runtime_warning_from_signalling_nans(model, dtype, snan):
    rng = np.random.default_rng(3)
    a, b = _with_snans((9, 64), rng, snan, dtype), _with_snans((64, 40), rng, snan, dtype)
    c = rng.standard_normal((9, 40)).astype(np.float32)
    c.view(np.uint32).reshape(-1)[::5] = 0x7F800001      # binary32 signalling NaN in C
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        d = matmul(a, b, c, device="pvc", model=model)
    assert d.shape == (9, 40) and np.isnan(d).any()
