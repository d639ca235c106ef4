"""DPAS and DPASW register operands as :class:`~systolic.layout.Layout` objects (visa-DPAS.md "Semantics").

Built from primitive parameters only (element width, K, exec size N, GRF bytes); the engine
(:mod:`systolic.xmx.layout`) checks an instruction's rules and calls these. Holders are ``("grf", "dword")``
relative to the operand's first GRF, ``unit_bits`` 32 (REFERENCE.md section 2):

* **Src2 = A (M x K)**: one row-major stream of elements, rows back to back ("Src2 is advanced
  8*OPS_PER_CHAN elements for each repeat"); element ``e = r*K + k`` at stream bit ``e*bits``.
* **Src1 = B (K x N)**: GRF ``k // per`` holds in dword ``n`` the ``per = 32 / bits`` consecutive K values of
  column n, lower K in lower bits (the VNNI packing; depth d reads GRF ``d // SRC1_OPERANDS_PER_CHAN``).
* **Src0 = C, Dst = D (M x N)**: row-major, ``N`` packed elements per row (G4_IR ``computeRightBound``).
* **DPASW's Src2**: the same stream split between the fused EUs (DPASW.md): ``NGrf = ceil(Src2Bytes / 32)``,
  the first ``(NGrf + 1) // 2`` GRFs from EU0, the rest from EU1; holders ``("eu", "grf", "dword")``.

Every layout also carries its SIMD view (``params["lanes"]``, ``params["lane_bits"]``): a sub-group of N
invocations sees component j of invocation i at image bits ``[(j*N + i)*w, ...)`` (SPV_INTEL_subgroup_matrix_
multiply_accumulate, "Mapping Matrix Data to Invocations"); w is 32 for B, the element width for C/D and
``max(bits, K*bits/N)`` for A (16 bits per row per invocation on SIMD16, a dword on SIMD8, tf32 one dword).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidValue
from .core import Layout

__all__ = ["src2", "src1", "acc", "dpasw_src2", "dpasw_split"]

_OPERAND_NAMES = {"src2": "A", "src1": "B", "src0": "C", "dst": "D"}


def _check(**kw) -> None:
    for k, v in kw.items():
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v <= 0:
            raise InvalidValue(f"{k} must be a positive integer", rule="layout shape parameters", values={k: v})


def _stream(rows: int, cols: int, bits: int, grf_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-major element stream packed into dwords: (grf, dword) index and bit of every element."""
    r, c = np.meshgrid(np.arange(rows, dtype=np.int64), np.arange(cols, dtype=np.int64), indexing="ij")
    pos = (r * cols + c) * bits
    dw = pos // 32
    per_grf = grf_bytes // 4
    return np.stack([dw // per_grf, dw % per_grf], axis=-1), pos % 32


def src2(m: int, k: int, element: str, bits: int, *, grf_bytes: int, exec_size: int, **params) -> Layout:
    """A (M x K) in Src2: see the module text."""
    _check(m=m, k=k, bits=bits, grf_bytes=grf_bytes, exec_size=exec_size)
    idx, bit = _stream(m, k, bits, grf_bytes)
    p = dict(params, grf_bytes=grf_bytes, exec_size=exec_size, unit_strides=(grf_bytes // 4, 1),
             lanes=exec_size, lane_bits=max(bits, k * bits // exec_size), M=m, K=k)
    return Layout(params.get("opcode", "dpas"), "src2", m, k, element, bits, ("grf", "dword"), idx, bit, 32,
                  params=p, title=f"A (Src2) {m}x{k} {element}")


def src1(k: int, n: int, element: str, bits: int, *, grf_bytes: int, **params) -> Layout:
    """B (K x N) in Src1: GRF k // per, dword n, bits (k % per) * bits."""
    _check(k=k, n=n, bits=bits, grf_bytes=grf_bytes)
    if n * 4 > grf_bytes or 32 % bits:
        raise InvalidValue("Src1 holds one dword column per channel in one GRF row",
                           rule="N * 4 <= GRF bytes; element width divides 32", values={"n": n, "bits": bits})
    per = 32 // bits
    kk, nn = np.meshgrid(np.arange(k, dtype=np.int64), np.arange(n, dtype=np.int64), indexing="ij")
    idx = np.stack([kk // per, nn], axis=-1)
    bit = (kk % per) * bits
    p = dict(params, grf_bytes=grf_bytes, exec_size=n, unit_strides=(grf_bytes // 4, 1), lanes=n, lane_bits=32,
             K=k, N=n, vnni=per)
    return Layout(params.get("opcode", "dpas"), "src1", k, n, element, bits, ("grf", "dword"), idx, bit, 32,
                  params=p, title=f"B (Src1) {k}x{n} {element}, {per} per dword")


def acc(m: int, n: int, element: str, bits: int, *, grf_bytes: int, operand: str = "dst", **params) -> Layout:
    """C (Src0) or D (Dst), M x N: row-major, N packed elements per row."""
    _check(m=m, n=n, bits=bits, grf_bytes=grf_bytes)
    if operand not in ("dst", "src0"):
        raise InvalidValue("an accumulator operand is dst or src0", values={"operand": operand})
    idx, bit = _stream(m, n, bits, grf_bytes)
    p = dict(params, grf_bytes=grf_bytes, exec_size=n, unit_strides=(grf_bytes // 4, 1), lanes=n, lane_bits=bits,
             M=m, N=n)
    what = "D (Dst)" if operand == "dst" else "C (Src0)"
    return Layout(params.get("opcode", "dpas"), operand, m, n, element, bits, ("grf", "dword"), idx, bit, 32,
                  params=p, title=f"{what} {m}x{n} {element}")


def dpasw_split(src2_bytes: int, grf_bytes: int = 32) -> tuple[int, int]:
    """(NGrf_EU0, NGrf_EU1): DPASW.md ``NGrf = ceil(Src2Bytes/32); NGrf_EU0 = (NGrf + 1) / 2``."""
    ngrf = -(-src2_bytes // grf_bytes)
    eu0 = (ngrf + 1) // 2
    return eu0, ngrf - eu0


def dpasw_src2(m: int, k: int, element: str, bits: int, *, grf_bytes: int = 32, exec_size: int = 8,
               **params) -> Layout:
    """A (M x K) of DPASW: the Src2 stream, its first NGrf_EU0 GRFs read from EU0, the rest from EU1."""
    base = src2(m, k, element, bits, grf_bytes=grf_bytes, exec_size=exec_size)
    eu0, eu1 = dpasw_split(-(-m * k * bits // 8), grf_bytes)
    g = base.index[..., 0]
    eu = (g >= eu0).astype(np.int64)
    idx = np.stack([eu, g - eu * eu0, base.index[..., 1]], axis=-1)
    p = {**base.params, **params, "opcode": "dpasw", "eu_grfs": (eu0, eu1),
         "unit_strides": (eu0 * grf_bytes // 4, grf_bytes // 4, 1)}
    return Layout("dpasw", "src2", m, k, element, bits, ("eu", "grf", "dword"), idx, base.bit, 32, params=p,
                  title=f"A (Src2) of DPASW {m}x{k} {element}: GRFs 0..{eu0 - 1} from EU0, the rest from EU1")
