"""Vectorised (numpy) kernels of the AMX instructions: the emulator's fast path.

Each kernel computes exactly what the spec function of the same name in
:mod:`systolic.amx.spec` computes, on the same (16, 64) uint8 tiles, and is
proven bit-identical to it by property tests (tests/amx/test_kernels.py).

How they stay exact:

* int8: the four byte products of a dword and all k are summed in int64 (exact:
  at most 16 * 4 * 255 * 255 per instruction) and wrapped to 32 bits once;
  integer addition modulo 2^32 is associative, so this equals the wrapping
  per-step sum of the SDM.
* float: the k loop stays (the chains round after every step), but every step
  is one vectorised fp32 FMA over all (m, lane) pairs: both chains of a row
  are the even/odd fp32 lanes of ``temp1``, exactly as in the SDM's pseudo-code.
  The FMA itself is :func:`systolic.amx.fp_x86.fma_vec`.
* AMX-FP8: the exact sums are integer matrix products of the fp8 values
  scaled to integers (Python integers where bf8 x bf8 could overflow int64),
  rounded once per output with :func:`systolic.numerics.rounding.round_fraction`;
  the NaN / infinity rules are applied as masks.
"""

from __future__ import annotations

import numpy as np

from fractions import Fraction

from . import fp_x86 as fp
from ..numerics.formats import BF8, FP32, HF8
from ..numerics.rounding import round_fraction

__all__ = ["tileload", "tilestore", "tilezero"]

MAX_ROWS = 16


def tileload(t, memory, base, stride, rows, colsb, start) -> None:
    """TILELOADD from row ``start`` (all rows in bounds); see :func:`systolic.amx.spec.tileload`."""
    t[start:, :] = 0
    if start >= rows:
        return
    r = np.arange(start, rows)
    idx = (base + r * stride)[:, None] + np.arange(colsb)[None, :]
    t[start:rows, :colsb] = memory[idx]


def tilestore(t, memory, base, stride, rows, colsb, start) -> None:
    """TILESTORED from row ``start`` (all rows in bounds). Rows are written in order (overlaps: last wins)."""
    for r in range(start, rows):
        p = base + r * stride
        memory[p:p + colsb] = t[r, :colsb]


def tilezero(t) -> None:
    t[:, :] = 0


def _write_c(c, m_rows, n_colsb, values_u32) -> None:
    c[m_rows:, :] = 0
    c[:m_rows, :] = 0
    c[:m_rows, :n_colsb] = np.ascontiguousarray(values_u32.astype("<u4")).view(np.uint8).reshape(m_rows, n_colsb)


def _c_dwords(c, m_rows, n_colsb) -> np.ndarray:
    return np.ascontiguousarray(c[:m_rows, :n_colsb]).view("<u4").astype(np.uint32)


# ---------------------------------------------------------------- int8

def _int8(signed1: bool, signed2: bool):
    d1 = np.int8 if signed1 else np.uint8
    d2 = np.int8 if signed2 else np.uint8

    def op(c, a, b, m_rows, n_colsb, k_colsb) -> None:
        k4, n = k_colsb // 4, n_colsb // 4
        A = np.ascontiguousarray(a[:m_rows, :k_colsb]).view(d1).astype(np.int64)           # (M, 4*K4)
        B = np.ascontiguousarray(b[:k4, :n_colsb]).view(d2).astype(np.int64)               # (K4, 4*N)
        B = B.reshape(k4, n, 4).transpose(0, 2, 1).reshape(4 * k4, n)                      # (4*K4, N)
        acc = _c_dwords(c, m_rows, n_colsb).astype(np.int64) + A @ B
        _write_c(c, m_rows, n_colsb, (acc & 0xFFFFFFFF).astype(np.uint32))
    return op


# ---------------------------------------------------------------- float: two fp32 chains

def _finish(c, m_rows, n_colsb, temp) -> None:
    """tmpf32 := even + odd ; dst := dst + tmpf32 (both DAZ/FTZ/RNE), then write rows and zero the rest."""
    tmp = fp.add_vec(temp[:, 0::2], temp[:, 1::2])
    out = fp.add_vec(_c_dwords(c, m_rows, n_colsb), tmp)
    _write_c(c, m_rows, n_colsb, out)


def _words32(t, rows, colsb, conv) -> np.ndarray:
    w = np.ascontiguousarray(t[:rows, :colsb]).view("<u2").astype(np.uint32)
    return conv(w)


def _bf16_conv(w):
    return w << np.uint32(16)


def _two_chain16(conv, variant: str):
    def op(c, a, b, m_rows, n_colsb, k_colsb) -> None:
        k4, n = k_colsb // 4, n_colsb // 4
        A = _words32(a, m_rows, k_colsb, conv)    # (M, 2*K4) fp32 bits
        B = _words32(b, k4, n_colsb, conv)        # (K4, 2*N)
        lane = np.arange(2 * n) % 2
        temp = np.zeros((m_rows, 2 * n), dtype=np.uint32)
        negate = False
        if variant == "rl":
            negate = (lane == 1)[None, :]
        for k in range(k4):
            if variant == "im":   # even lane: a.im * b.re ; odd lane: a.re * b.im
                x = A[:, 2 * k + 1 - lane]
            else:                 # even lane: a[2k] * b[2n] ; odd lane: a[2k+1] * b[2n+1]
                x = A[:, 2 * k + lane]
            temp = fp.fma_vec(x, B[k][None, :], temp, negate=negate)
        _finish(c, m_rows, n_colsb, temp)
    return op


def _fp8_decode(bytes_: np.ndarray, fmt):
    """(nan, inf, zero, negative, value * 2^scale as int64, scale) of fp8 bytes; scale makes every value whole."""
    from ..numerics.rounding import from_bits
    v = from_bits(bytes_.astype(np.uint32), fmt)                  # exact float64
    nan, inf = np.isnan(v), np.isinf(v)
    scale = -(fmt.emin - fmt.man_bits)                            # bf8: 16, hf8: 9
    fin = np.where(nan | inf, 0.0, v)
    return nan, inf, v == 0, np.signbit(v), np.ldexp(fin, scale).astype(np.int64), scale


def _fp8(fmt1, fmt2):
    """AMX-FP8 as modelled in :func:`systolic.amx.spec._fp8_dot`: exact sums, one rounding, then dst +."""
    def op(c, a, b, m_rows, n_colsb, k_colsb) -> None:
        k4, n = k_colsb // 4, n_colsb // 4
        A = np.ascontiguousarray(a[:m_rows, :k_colsb])                                   # (M, K) bytes
        B = np.ascontiguousarray(b[:k4, :n_colsb]).reshape(k4, n, 4).transpose(0, 2, 1).reshape(4 * k4, n)
        an, ai, az, asg, av, s1 = _fp8_decode(A, fmt1)
        bn, bi, bz, bsg, bv, s2 = _fp8_decode(B, fmt2)
        # scaled bf8 values reach 57344 * 2^16 ~ 2^31.8, so bf8 x bf8 products (~2^63.6) overflow int64:
        # Python integers there; with an hf8 side (448 * 2^9) 64 products stay below 2^56
        wide = s1 + s2 >= 32
        S = (av.astype(object) @ bv.astype(object)) if wide else av @ bv
        cw = _c_dwords(c, m_rows, n_colsb)
        nan = an.any(axis=1)[:, None] | bn.any(axis=0)[None, :] | fp._nan_mask(cw)
        nan |= ((ai.astype(np.int64) @ bz.astype(np.int64)) > 0) | ((az.astype(np.int64) @ bi.astype(np.int64)) > 0)
        # infinities, in order, with SDE's rule: +inf + -inf not resolved within the same dword is a NaN
        state = np.zeros((m_rows, n), np.int8)        # 0 none, 1 +inf, 2 -inf, 3 cancelled
        for i in range(4 * k4):
            acc = (ai[:, i:i + 1] | bi[i][None, :]) & ~an[:, i:i + 1] & ~bn[i][None, :] \
                & ~az[:, i:i + 1] & ~bz[i][None, :]
            if acc.any():
                sgn = np.where(asg[:, i:i + 1] != bsg[i][None, :], np.int8(2), np.int8(1))
                new = np.where((state == 0) | (state == 3), sgn, np.where(state != sgn, np.int8(3), state))
                state = np.where(acc, new, state)
            if i % 4 == 3:
                nan |= state == 3
        tmp = np.empty((m_rows, n), np.uint32)
        flat = np.asarray(S).reshape(-1)
        for idx, sv in enumerate(flat):               # <= 256 exact roundings per instruction
            tmp.flat[idx] = round_fraction(Fraction(int(sv), 1 << (s1 + s2)), FP32, "rne", ftz=True)
        tmp = np.where(state == 1, np.uint32(fp.EXP), np.where(state == 2, np.uint32(fp.SIGN | fp.EXP), tmp))
        out = fp.add_vec(cw, tmp)
        _write_c(c, m_rows, n_colsb, np.where(nan, np.uint32(fp.DEFAULT_NAN), out).astype(np.uint32))
    return op


# the fast bodies, one per TMUL, named as the spec bodies (the records, systolic.amx.isa, pair them)
tdpbssd = _int8(True, True)
tdpbsud = _int8(True, False)
tdpbusd = _int8(False, True)
tdpbuud = _int8(False, False)
tdpbf16ps = _two_chain16(_bf16_conv, "plain")
tdpfp16ps = _two_chain16(fp.fp16_to_fp32_vec, "plain")
tcmmimfp16ps = _two_chain16(fp.fp16_to_fp32_vec, "im")
tcmmrlfp16ps = _two_chain16(fp.fp16_to_fp32_vec, "rl")
tdpbf8ps = _fp8(BF8, BF8)
tdpbhf8ps = _fp8(BF8, HF8)
tdphbf8ps = _fp8(HF8, BF8)
tdphf8ps = _fp8(HF8, HF8)
