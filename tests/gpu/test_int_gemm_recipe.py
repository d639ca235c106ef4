"""The integer GEMM's recipe (systolic.gpu.int_gemm.Plan), checked without a GPU.

A Plan is plain data: which operands are shifted into int8 (``u ^ 0x80``), which row / column sums the
rank-one terms need and with which coefficients (``cu``, ``cv``, ``k0``), the K padding and the K chunks. Here
the steps its kernels take are replayed with numpy exactly as the CUDA source documents them (shift_rows: flip,
zero padding past K, int8 row sums mod 2**32; bias_c: C + cu u[m] + cv v[n] + k0 mod 2**32; cuBLAS: int8 x
int8 -> int32 products summed per chunk, added mod 2**32), and the result must equal C + A @ B mod 2**32
computed independently in int64 (Python ints for the wrap). The kernels themselves are checked on the GPU
(tests/gpu/test_amx_gemm.py, test_amx_int8_fast.py, test_xmx_cuda.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from systolic.gpu import int_gemm


def replay(plan: int_gemm.Plan, a, b, c):
    M, K, N, Kp = plan.M, plan.K, plan.N, plan.Kp

    def shifted(x, signed):                       # shift_rows: flip, pad with int8 zeros past K
        v = x.view(np.uint8) ^ np.uint8(0 if signed else 0x80)
        out = np.zeros((x.shape[0], Kp), np.int8)
        out[:, :K] = v.view(np.int8)
        return out
    a8 = shifted(a, plan.sa)                      # (M, Kp)
    bt8 = shifted(np.ascontiguousarray(b.T), plan.sb)   # (N, Kp): B^T, as cuBLAS reads it
    mask = (1 << 32) - 1
    out = np.zeros((M, N), np.int64)
    if plan.bias:                                 # bias_c
        out += 0 if c is None else c.astype(np.int64) & mask
        if plan.sum_a:
            out += int(plan.cu) * a8.astype(np.int64).sum(axis=1)[:, None]
        if plan.sum_b:
            out += int(plan.cv) * bt8.astype(np.int64).sum(axis=1)[None, :]
        out += int(plan.k0)
        out &= mask
    for k0, k1 in plan.chunks:                    # cuBLAS per chunk, no partial sum past int32
        part = a8[:, k0:k1].astype(np.int64) @ bt8[:, k0:k1].astype(np.int64).T
        assert np.abs(part).max(initial=0) < 2 ** 31
        out = (out + part) & mask
    return out.astype(np.uint32).view(np.int32)


def exact(a, b, c):
    s = a.astype(np.int64) @ b.astype(np.int64) + (0 if c is None else c.astype(np.int64))
    return (s & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


@pytest.mark.parametrize("sa", [True, False])
@pytest.mark.parametrize("sb", [True, False])
@pytest.mark.parametrize("K", [1, 3, 16, 37, 100])
@pytest.mark.parametrize("with_c", [False, True])
def test_recipe_equals_the_exact_sum(sa, sb, K, with_c, monkeypatch):
    monkeypatch.setattr(int_gemm, "K_CHUNK", 32)  # several chunks even for small K
    rng = np.random.default_rng([K, sa, sb, with_c])
    M, N = 5, 7
    a = rng.integers(0, 256, (M, K)).astype(np.uint8).view(np.int8 if sa else np.uint8)
    b = rng.integers(0, 256, (K, N)).astype(np.uint8).view(np.int8 if sb else np.uint8)
    a[0] = np.int8(-128) if sa else np.uint8(255)                 # extremes
    b[:, 0] = np.int8(-128) if sb else np.uint8(255)
    c = rng.integers(-2 ** 31, 2 ** 31, (M, N), dtype=np.int64).astype(np.int32) if with_c else None
    for b_col in (False, True):
        plan = int_gemm.Plan(M, K, N, sa, sb, b_col, with_c)
        assert plan.Kp % 16 == 0 and plan.Kp >= K
        assert all(k1 - k0 <= 32 and k0 % 16 == 0 for k0, k1 in plan.chunks)
        np.testing.assert_array_equal(replay(plan, a, b, c), exact(a, b, c))


def test_chunk_bound():
    """K_CHUNK keeps every partial sum inside int32 (|s8 * s8| <= 2**14) and chunk offsets 16-byte aligned."""
    assert int_gemm.K_CHUNK * 2 ** 14 <= 2 ** 31 - 1
    assert int_gemm.K_CHUNK % 16 == 0
    assert (int_gemm.K_CHUNK + 16) * 2 ** 14 > 2 ** 31 - 1      # and is the largest such multiple of 16
