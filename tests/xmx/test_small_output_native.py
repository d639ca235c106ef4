"""A GEMM with a small output (M * N < 64) and a long K runs on the compiled kernel, bit-identical to the numpy
chain it used to take (audit note: a 1 x 65536 by 65536 x 1 bf16 GEMM spent ~3.8 s in 32768 Python steps of the
numpy chain; the compiled kernel takes ~9 ms)."""

import ml_dtypes
import numpy as np
import pytest

from systolic import xmx
from systolic.xmx import native as NT

pytestmark = pytest.mark.skipif(not NT.available(), reason="no JIT (llvmlite) here")


def _operands(m, k, n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32) * np.float32(2.0) ** rng.integers(-30, 30, (m, k))
    b = rng.standard_normal((k, n)).astype(np.float32)
    a[0, 5] = np.float32(2.0 ** -130)        # a bf16 denormal (flushed on input)
    b[7, 0] = -b[6, 0]                       # cancellation
    return a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("m,k,n", [(1, 4096, 1), (2, 4096, 3)])
@pytest.mark.parametrize("special", [None, np.nan, np.inf])
def test_small_output_long_k_uses_the_compiled_kernel_same_bits(monkeypatch, m, k, n, special):
    a, b = _operands(m, k, n, seed=m * 1000 + n)
    if special is not None:
        a[0, k // 2] = special
    calls = []
    real = NT.fast_mma
    monkeypatch.setattr(NT, "fast_mma", lambda *args, **kw: calls.append(1) or real(*args, **kw))
    got = np.asarray(xmx.matmul(a, b)).view(np.uint32)
    assert calls, "the small-output GEMM did not reach the compiled kernel"
    monkeypatch.setenv("SYSTOLIC_NO_NATIVE", "1")                 # the numpy chain, the path taken before
    want = np.asarray(xmx.matmul(a, b)).view(np.uint32)
    assert np.array_equal(got, want)


def test_small_output_short_k_takes_the_kernel_once_it_is_compiled(monkeypatch):
    """With K short, a small output takes the numpy chain until the kernel its path uses is compiled (its JIT
    would cost more than the chain); after a larger GEMM of the same shape family compiled it, the kernel."""
    a, b = _operands(1, 256, 1, seed=7)
    calls = []
    real = NT.fast_mma
    monkeypatch.setattr(NT, "fast_mma", lambda *args, **kw: calls.append(1) or real(*args, **kw))
    xmx.matmul(np.ones((8, 256), a.dtype), np.ones((256, 8), b.dtype))    # M * N = 64: compiles the kernel
    assert NT.ready(2, 256)
    calls.clear()
    got = np.asarray(xmx.matmul(a, b)).view(np.uint32)
    assert calls, "the kernel was compiled, yet the small GEMM took the numpy chain"
    # "sequential" runs another kernel (the binary32 FMA chain); not compiled (its cache entry taken out for
    # this test): the numpy chain, no JIT
    monkeypatch.delitem(NT._CACHE, NT._fma32_key(), raising=False)
    assert not NT.ready(1, 256)
    seq = []
    real32 = NT.fma32_mma
    monkeypatch.setattr(NT, "fma32_mma", lambda *args, **kw: seq.append(1) or real32(*args, **kw))
    got2 = np.asarray(xmx.matmul(a, b, model="sequential")).view(np.uint32)
    assert not seq
    monkeypatch.setenv("SYSTOLIC_NO_NATIVE", "1")
    assert np.array_equal(got, np.asarray(xmx.matmul(a, b)).view(np.uint32))
    assert np.array_equal(got2, np.asarray(xmx.matmul(a, b, model="sequential")).view(np.uint32))
