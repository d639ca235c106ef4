"""The GEMM memory guard (systolic.host.refuse_beyond_memory) as both engines' matmul use it: a GEMM whose
arrays cannot fit is refused before anything is allocated (np.broadcast_to views of one element, so only the
shapes say what the path will materialise), and what the guard charges is a lower bound of what the path
really allocates (tracemalloc peak of real calls), so it never refuses a GEMM that would fit."""

import tracemalloc

import ml_dtypes
import numpy as np
import pytest

from systolic import amx, host, xmx
from systolic.amx import gemm as amx_gemm
from systolic.amx import native_matmul
from systolic.errors import InvalidValue
from systolic.jit import scratch
from systolic.xmx import gemm as xmx_gemm

#: engine -> (matmul, the gemm module that calls the guard, keyword arguments per operand dtype, the smallest
#: charge per result of its cheapest path)
ENGINES = {
    # amx: native AMX where the host has it, 5 bytes a result at M = N = K (int8 B packed, int32 C); 8 elsewhere
    "amx": (amx.matmul, amx_gemm, lambda dt: {"device": "graniterapids" if dt == np.float16 else "sapphirerapids"},
            5 if native_matmul.usable("tdpbssd", "sapphirerapids")[0] else 8),
    "xmx": (xmx.matmul, xmx_gemm, lambda dt: {}, 8),     # the integer path charges 10 bytes a result (int16 A/B, int32 C)
}


def _traced_peak(fn):
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.int8, ml_dtypes.bfloat16])
def test_huge_broadcast_refused_before_allocating(engine, dtype):
    matmul, _, kw, per_result = ENGINES[engine]
    n = 1 << 18                        # 2^36 results: at least 512 GiB of arrays, more than any host here
    a = np.broadcast_to(np.ones((1, 1), dtype), (n, n))

    def call():
        with pytest.raises(InvalidValue) as e:
            matmul(a, a, **kw(dtype))
        return e
    e, peak = _traced_peak(call)
    assert peak < 64 << 20       # refused before anything of that size (>= 2^36 bytes) was allocated; imports aside
    v = e.value.values
    assert (v["M"], v["K"], v["N"]) == (n, n, n)
    assert v["bytes"] >= per_result * n * n > v["budget"]
    assert "fit memory" in e.value.rule and "GiB" in str(e.value)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.int8, ml_dtypes.bfloat16, np.float16])
@pytest.mark.parametrize("with_c", [False, True])
def test_charge_is_a_lower_bound_of_the_path(monkeypatch, engine, dtype, with_c):
    matmul, module, kw, _ = ENGINES[engine]
    seen = []
    real = host.refuse_beyond_memory
    monkeypatch.setattr(host, "CHECK_FROM_BYTES", 0)
    monkeypatch.setattr(module, "refuse_beyond_memory", lambda *a: (seen.append(a[-1]), real(*a))[1])
    monkeypatch.setattr(scratch, "KEEP_COUNT", 0)   # the kernels' reused work buffers: allocated by the traced call
    monkeypatch.setattr(scratch, "_free", [])
    rng = np.random.default_rng(4)
    m, k, n = 256, 64, 256
    a = rng.integers(-3, 4, (m, k)).astype(dtype)
    b = rng.integers(-3, 4, (k, n)).astype(dtype)
    c = (np.zeros((m, n), np.int32 if dtype == np.int8 else np.float32)) if with_c else None
    matmul(a, b, c, **kw(dtype))                           # warm-up: imports and caches are not the GEMM's
    seen.clear()
    _, peak = _traced_peak(lambda: matmul(a, b, c, **kw(dtype)))
    assert seen and seen[0] <= peak, (seen, peak)
    monkeypatch.setattr(host, "memory_budget", lambda: seen[0] - 1)
    with pytest.raises(InvalidValue, match="fit memory"):
        matmul(a, b, c, **kw(dtype))
