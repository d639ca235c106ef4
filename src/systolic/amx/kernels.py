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
"""

from __future__ import annotations

import numpy as np

from . import fp_x86 as fp
from ..numerics.formats import BF8, HF8

__all__ = ["tileload", "tilestore", "tilezero", "DOT"]

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


def _two_chain8(fmt1, fmt2):
    def op(c, a, b, m_rows, n_colsb, k_colsb) -> None:
        k4, n = k_colsb // 4, n_colsb // 4
        A = fp.fp8_to_fp32_vec(np.ascontiguousarray(a[:m_rows, :k_colsb]).astype(np.uint32), fmt1)  # (M, 4*K4)
        B = fp.fp8_to_fp32_vec(np.ascontiguousarray(b[:k4, :n_colsb]).astype(np.uint32), fmt2)      # (K4, 4*N)
        lane = np.arange(2 * n) % 2
        temp = np.zeros((m_rows, 2 * n), dtype=np.uint32)
        for k in range(k4):
            a0 = A[:, 4 * k + 2 * lane]
            a1 = A[:, 4 * k + 2 * lane + 1]
            temp = fp.dot2_add_vec(a0, B[k, 0::2][None, :], a1, B[k, 1::2][None, :], temp)
        _finish(c, m_rows, n_colsb, temp)
    return op


DOT = {
    "tdpbssd": _int8(True, True), "tdpbsud": _int8(True, False),
    "tdpbusd": _int8(False, True), "tdpbuud": _int8(False, False),
    "tdpbf16ps": _two_chain16(_bf16_conv, "plain"),
    "tdpfp16ps": _two_chain16(fp.fp16_to_fp32_vec, "plain"),
    "tcmmimfp16ps": _two_chain16(fp.fp16_to_fp32_vec, "im"),
    "tcmmrlfp16ps": _two_chain16(fp.fp16_to_fp32_vec, "rl"),
    "tdpbf8ps": _two_chain8(BF8, BF8), "tdpbhf8ps": _two_chain8(BF8, HF8),
    "tdphbf8ps": _two_chain8(HF8, BF8), "tdphf8ps": _two_chain8(HF8, HF8),
}
