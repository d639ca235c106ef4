"""The JIT kernels at every vector width the host may pick (systolic.jit.vector_bits): SSE (128, hosts without AVX),
AVX2 (256) and AVX-512 (512).

The width is forced with SYSTOLIC_VECTOR_BITS, so every construction runs on any x86-64 host (LLVM splits 512-bit
vectors where the CPU has no AVX-512) and the path a host does not pick by itself stays tested. Oracles: the numpy
paths (themselves property-tested against the spec paths) and the exact Fraction oracle of tests/xmx/oracle.py.
"""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic import amx, jit
from systolic.amx import gemm_jit
from systolic.amx import native_gemm as NG
from systolic.xmx import kernels as KN
from systolic.xmx import models as M
from systolic.xmx import native

pytestmark = pytest.mark.skipif(not native.available(), reason="llvmlite cannot JIT on this machine")

WIDTHS = [128, 256, 512]


def adversarial(rng, shape, bits, tiny_rate):
    mant, e = np.frexp(rng.standard_normal(shape))
    x = np.ldexp(np.round(mant * (1 << bits)) / (1 << bits), e)
    pick = rng.random(shape) < tiny_rate
    x = np.where(pick, x * np.ldexp(1.0, rng.integers(-60, 40, shape)), x)
    zero = rng.random(shape) < 0.05
    x = np.where(zero, np.where(rng.random(shape) < 0.5, 0.0, -0.0), x)
    return x.astype(np.float32)


@pytest.mark.parametrize("width", WIDTHS)
def test_vector_bits_follows_the_switch(monkeypatch, width):
    monkeypatch.setenv("SYSTOLIC_VECTOR_BITS", str(width))
    assert jit.vector_bits() == width
    # the AMX float chain kernel is built with at least 8 lanes (at 128 bits LLVM splits them into SSE pairs)
    assert gemm_jit.group() == max(8, width // 32) * gemm_jit.U_FAST


def test_vector_bits_rejects_other_widths(monkeypatch):
    from systolic.errors import InvalidValue
    monkeypatch.setenv("SYSTOLIC_VECTOR_BITS", "384")
    with pytest.raises(InvalidValue, match="SYSTOLIC_VECTOR_BITS"):
        jit.vector_bits()


@pytest.mark.parametrize("width", WIDTHS)
@settings(max_examples=12, deadline=None)
@given(st.integers(1, 20), st.integers(1, 40), st.sampled_from([1, 2, 4]), st.integers(1, 6),
       st.sampled_from(["stage", "sequential"]), st.floats(0, 0.5), st.integers(0, 2 ** 32 - 1))
def test_xmx_kernels_equal_numpy_path(width, m, n, T, steps, model, tiny_rate, seed):
    rng = np.random.default_rng(seed)
    k = T * steps * 2
    a = adversarial(rng, (m, k), 8, tiny_rate)
    b = adversarial(rng, (k, n), 8, tiny_rate)
    c = adversarial(rng, (m, n), 24, tiny_rate).astype(np.float64)
    if seed % 3 == 0:   # non-finite inputs and overflow go to the exact path, whatever the width
        a[0, 0] = np.inf
        b[-1, -1] = np.nan
        a[-1, :] = 3.0e38
    mdl = M.get_model(model)
    want = KN.float_mma(a, b, c, ops_per_chan=T, k_per_instr=8 * T, model=mdl, native=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYSTOLIC_VECTOR_BITS", str(width))
        got = KN.float_mma(a, b, c, ops_per_chan=T, k_per_instr=8 * T, model=mdl, native=True, sig_bits=(8, 8))
        # the per-operation checked kernels too (the fallback for what the fast kernel leaves unproven)
        acc, flag = native.stage_mma(a, b, c, T)
    np.testing.assert_array_equal(got, want)
    if model == "stage":  # the checked kernels compute the stage model: what they do not flag is its result
        ok = flag == 0
        np.testing.assert_array_equal(acc.astype(np.float32)[ok].view(np.uint32), want[ok])


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16])
@settings(max_examples=10, deadline=None)
@given(st.integers(1, 40), st.integers(1, 150), st.integers(1, 90), st.sampled_from([0, -60, -125]),
       st.integers(0, 2 ** 32 - 1))
def test_amx_float_chain_kernel_equals_numpy_chains(width, dtype, m, n, k, scale, seed):
    rng = np.random.default_rng(seed)
    lo = -24 if dtype is np.float16 else scale   # fp16 has no exponents near -125: its tiny end is 2**-24
    a = (rng.standard_normal((m, k)) * 2.0 ** rng.integers(lo - 4, lo + 4, (m, k))).astype(dtype)
    b = (rng.standard_normal((k, n)) * 2.0 ** rng.integers(lo - 4, lo + 4, (k, n))).astype(dtype)
    c = (rng.standard_normal((m, n)) * 2.0 ** rng.integers(2 * lo - 4, 2 * lo + 4, (m, n))).astype(np.float32)
    if seed % 4 == 0:
        a[0, 0] = np.inf
        c[-1, -1] = np.nan
    cpu = "graniterapids" if dtype is np.float16 else "sapphirerapids"   # AMX-FP16 from Granite Rapids on
    want = amx.matmul(a, b, c, method="numpy", device=cpu)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYSTOLIC_VECTOR_BITS", str(width))
        got = amx.matmul(a, b, c, device=cpu)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([np.int8, np.uint8, ml_dtypes.bfloat16]), st.integers(0, 130), st.integers(0, 100),
       st.integers(1, 3), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_compiled_b_packing_equals_numpy_packing(dtype, k, n, step, fortran, seed):
    rng = np.random.default_rng(seed)
    b = rng.integers(-128, 128, (k * step, n)).astype(dtype)[::step]
    if fortran:
        b = np.asfortranarray(b)
    got, want = NG.pack_b(b), NG.pack_b_numpy(b)
    assert (got.k, got.n, got.kp, got.np_, got.esize) == (want.k, want.n, want.kp, want.np_, want.esize)
    np.testing.assert_array_equal(got.data, want.data)


# ---------------------------------------------------------------- the float models' compiled preparation (issue 24)

@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("fmt", ["bf16", "fp16"])
@settings(max_examples=10, deadline=None)
@given(st.integers(0, 3000), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_compiled_widening_equals_numpy(width, fmt, size, flush, seed):
    """native.widen (bf16 / fp16 -> float32, input denormals flushed to signed zeros) against numpy's exact
    conversion and the flush rule of gemm._float_values, on every bit pattern class (random 16-bit words)."""
    from systolic import types as T
    dtype = ml_dtypes.bfloat16 if fmt == "bf16" else np.float16
    x = np.random.default_rng(seed).integers(0, 1 << 16, size, dtype=np.uint16).view(dtype)
    mn = float(T.get(fmt).fmt.min_normal)
    want = x.astype(np.float32)
    if flush:
        tiny = (want != 0) & (np.abs(want) < np.float32(mn))
        want = np.where(tiny, np.copysign(np.float32(0), want), want)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYSTOLIC_VECTOR_BITS", str(width))
        got = native.widen(x, fmt, mn if flush else 0.0)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)          # NaN payloads are not kept (not needed)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


@pytest.mark.parametrize("width", WIDTHS)
@settings(max_examples=8, deadline=None)
@given(st.integers(1, 70), st.integers(1, 90), st.sampled_from([1, 2]), st.integers(1, 5), st.integers(1, 9),
       st.booleans(), st.floats(0, 0.3), st.integers(0, 2 ** 32 - 1))
def test_kernels_split_over_threads_and_rows_equal_one_thread(width, m, n, T, steps, threads, with_c, tiny_rate,
                                                             seed):
    """The kernels split the output into (panel, row) jobs over the worker threads, each packing its own
    panels of B; every split gives the one-thread bits (numpy path as the oracle), C given or not."""
    rng = np.random.default_rng(seed)
    k = 16 * T * steps
    a = adversarial(rng, (m, k), 8, tiny_rate)
    b = adversarial(rng, (k, n), 8, tiny_rate)
    c = adversarial(rng, (m, n), 24, tiny_rate).astype(np.float64) if with_c else None
    mdl = M.get_model("stage" if T == 2 else "sequential")
    want = KN.float_mma(a, b, c, ops_per_chan=2, k_per_instr=16, model=mdl, native=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYSTOLIC_VECTOR_BITS", str(width))
        if T == 1:
            acc, flag = native.fma32_mma(a, b, c, threads=threads)
        else:
            acc, flag = native.fast_mma(a, b, c, 2, sig_bits=(8, 8), threads=threads)
    ok = ~flag
    np.testing.assert_array_equal(np.asarray(acc, dtype=np.float32).view(np.uint32)[ok], want[ok])


@pytest.mark.parametrize("width", WIDTHS)
@settings(max_examples=10, deadline=None)
@given(st.integers(1, 12), st.integers(1, 4), st.sampled_from([2, 4, 8, 32]), st.sampled_from([8, 11, 24]),
       st.integers(0, 2 ** 32 - 1))
def test_compiled_row_statistics_equal_numpy_reference(width, m, nch, kc, sig, seed):
    """``astat`` (A in binary64 and the kernel test's per-chunk statistics of A's rows, compiled) against the
    numpy reference native._line_stats, on raw float32 bit patterns: zeros of both signs, subnormals, NaNs and
    infinities, all-zero chunks."""
    rng = np.random.default_rng(seed)
    k = nch * kc
    bits = rng.integers(0, 1 << 32, (m, k), dtype=np.uint64).astype(np.uint32)
    bits[rng.random((m, k)) < 0.3] &= np.uint32(0x807FFFFF)         # subnormals and zeros
    bits[rng.random((m, k)) < 0.2] = 0
    if seed % 3 == 0:
        bits[0] = 0                                                   # an all-zero row
    x = bits.view(np.float32)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYSTOLIC_VECTOR_BITS", str(width))
        _, astat = native._fast_kernel(2, *native.fast_block(), 1)
        A64, RAC, MAC = np.empty((m, k)), np.empty((m, nch)), np.empty((m, nch))
        astat(x.ctypes.data, A64.ctypes.data, RAC.ctypes.data, MAC.ctypes.data, 0, m, k, kc, sig, 3.0)
    la, ma = native._line_stats(x.reshape(m, nch, kc), sig, 2)
    np.testing.assert_array_equal(RAC, np.ldexp(1.0, 51 + np.clip(la, -native._BIG, native._BIG)))
    np.testing.assert_array_equal(MAC, 3.0 * ma)                     # NaN where the reference has NaN
    with np.errstate(invalid="ignore"):
        want = x.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(A64), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(A64[ok], want[ok])


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_worker_pool_in_a_forked_child():
    """The kernels' worker pool is made per process: a child forked after the parent used it (dask, multiprocessing)
    runs the threaded kernels instead of waiting forever on threads it did not inherit."""
    import multiprocessing as mp
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((64, 256)).astype(np.float32)
    want = native.fma32_mma(a, b, None, threads=2)[0]        # the parent's pool is up
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply_async(_fma32_in_child, (a, b)).get(timeout=10)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def _fma32_in_child(a, b):
    return native.fma32_mma(a, b, None, threads=2)[0]
