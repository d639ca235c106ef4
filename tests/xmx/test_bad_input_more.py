"""Bad input to the XMX Python API (audit findings 15, 16): typed errors naming the rule and the values."""

import tracemalloc

import ml_dtypes
import numpy as np
import pytest

from systolic import xmx
from systolic.errors import InvalidValue
from systolic.xmx import gemm as xmx_gemm


# ------------------------------------------------------------------ finding 15: GEMMs beyond memory
@pytest.mark.parametrize("dtype", [np.int8, ml_dtypes.bfloat16])
def test_matmul_huge_broadcast_refused_before_allocating(dtype):
    n = 1 << 18                        # 2^36 results: at least 768 GiB of arrays, more than any host here
    a = np.broadcast_to(np.ones((1, 1), dtype), (n, n))
    tracemalloc.start()
    try:
        with pytest.raises(InvalidValue) as e:
            xmx.matmul(a, a)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20                              # refused before anything of that size was allocated
    v = e.value.values
    assert (v["M"], v["K"], v["N"]) == (n, n, n)
    assert v["bytes"] >= 12 * n * n > v["budget"]
    assert "fit memory" in e.value.rule and "GiB" in str(e.value)


@pytest.mark.parametrize("dtype,need", [
    (np.int8, 4 * (8 * 32 + 32 * 16) + 12 * 8 * 16),                # K = 32 is a whole DPAS depth for int8
    (ml_dtypes.bfloat16, 8 * (8 * 32 + 32 * 16) + 32 * 8 * 16),     # and two for bf16 (16 each)
])
def test_matmul_budget_counts_the_path_bytes(monkeypatch, dtype, need):
    monkeypatch.setattr(xmx_gemm, "memory_budget", lambda: need - 1)
    a, b = np.ones((8, 32), dtype), np.ones((32, 16), dtype)
    with pytest.raises(InvalidValue) as e:
        xmx.matmul(a, b)
    assert e.value.values == {"M": 8, "K": 32, "N": 16, "bytes": need, "budget": need - 1}
    monkeypatch.setattr(xmx_gemm, "memory_budget", lambda: need)
    assert (np.asarray(xmx.matmul(a, b)) == 32).all()


@pytest.mark.parametrize("dtype", [np.int8, ml_dtypes.bfloat16])
def test_matmul_memory_error_while_computing_is_typed(monkeypatch, dtype):
    def boom(*args, **kw):
        raise MemoryError("Unable to allocate 32. GiB")
    monkeypatch.setattr(xmx_gemm.KN, "int_mma", boom)
    monkeypatch.setattr(xmx_gemm.KN, "float_mma", boom)
    with pytest.raises(InvalidValue) as e:
        xmx.matmul(np.ones((8, 32), dtype), np.ones((32, 16), dtype))
    assert e.value.values == {"M": 8, "K": 32, "N": 16}
    assert "out of memory" in str(e.value) and "32. GiB" in str(e.value)
