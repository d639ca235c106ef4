"""Packing elements into 32-bit dwords, and the VNNI layouts (REFERENCE.md sections 1, 2 and 5).

* :func:`pack` / :func:`unpack`: 1, 2, 4, 8 and 16-bit elements packed along the
  last axis into dwords, **lower-numbered element in the lower bits**
  (visa-DPAS.md: "packed ... with the lower-indexed element in the lower bits").
* :func:`vnni_pack` / :func:`vnni_unpack`: a logical K x N matrix B into the
  layout where each dword holds 32/bits consecutive K values of one column
  (AMX B tiles, DPAS Src1, SYCL ``layout::ext_intel_packed``): row r of the
  result holds, for every column n, the dword of B[r*per .. r*per+per-1, n].
* :func:`pack_a`: the A-side counterpart: a logical M x K matrix A into rows of
  dwords each holding 32/bits consecutive K values of one row (DPAS Src2, AMX A
  tiles), from row-major A or from column-major storage (A transposed).

Elements are given as integers (any int dtype; signed values are stored in
two's complement) or as float arrays of a numpy / ml_dtypes type (their bit
patterns are packed).
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidValue

__all__ = ["raw_bits", "pack", "unpack", "vnni_pack", "vnni_unpack", "pack_a", "unpack_a"]

_WIDTHS = (1, 2, 4, 8, 16, 32)


def _check_bits(bits: int) -> int:
    if bits not in _WIDTHS:
        raise InvalidValue(f"cannot pack {bits}-bit elements into dwords", rule="element width is 1, 2, 4, 8, 16 or 32",
                           values={"bits": bits})
    return bits


def raw_bits(values, bits: int) -> np.ndarray:
    """The ``bits``-bit pattern of each element as uint32.

    Floats (numpy or ml_dtypes) give their bit pattern and must be exactly ``bits`` wide (convert wider floats
    with :func:`systolic.types.convert` first: packing the low bits of a float64 would be meaningless).
    Integers give their two's complement and must fit ``bits`` bits as a signed or an unsigned value.
    """
    _check_bits(bits)
    a = np.asarray(values)
    if a.dtype.kind == "b":
        a = a.astype(np.uint8)
    if a.dtype.kind == "V" and a.dtype.names is None:
        from .types import from_dtype
        et = from_dtype(a.dtype)  # ml_dtypes: bfloat16, float8_*, float4_e2m1fn, int4, uint2, ...
        if et.is_float:
            if et.bits != bits:
                raise InvalidValue(f"{et.name} elements are {et.bits} bits wide, not {bits}",
                                   rule="a float packs its own bit pattern", values={"dtype": str(a.dtype),
                                                                                     "bits": bits})
            u = np.ascontiguousarray(a).view({1: np.uint8, 2: np.uint16}[a.dtype.itemsize])
            return (u & ((1 << bits) - 1)).astype(np.uint32)
        a = a.astype(np.int64)
    if a.dtype.kind == "f":
        if a.dtype.itemsize * 8 != bits:
            raise InvalidValue(f"{a.dtype} elements are {a.dtype.itemsize * 8} bits wide, not {bits}",
                               rule="a float packs its own bit pattern; convert first (systolic.types.convert)",
                               values={"dtype": str(a.dtype), "bits": bits})
        u = np.ascontiguousarray(a).view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize])
        return (u & ((1 << bits) - 1)).astype(np.uint32)
    if a.dtype.kind not in "iu":
        raise InvalidValue(f"cannot pack {a.dtype} elements", rule="elements are integers or floats",
                           values={"dtype": str(a.dtype)})
    if a.size and bits < 64:
        lo, hi = -(1 << (bits - 1)), (1 << bits) - 1
        if (a.min() < lo) or (a.max() > hi):
            bad = a[(a < lo) | (a > hi)].ravel()[0]
            raise InvalidValue(f"value {int(bad)} does not fit {bits} bits",
                               rule=f"{bits}-bit elements hold [{lo}, {hi}] (signed or unsigned)",
                               values={"value": int(bad), "bits": bits})
    return (a.astype(np.int64) & ((1 << bits) - 1)).astype(np.uint32)


def pack(values, bits: int) -> np.ndarray:
    """Pack elements along the last axis into uint32 dwords, element 0 in the lowest bits."""
    _check_bits(bits)
    per = 32 // bits
    v = raw_bits(values, bits)
    if v.ndim == 0 or v.shape[-1] % per:
        n = v.shape[-1] if v.ndim else 1
        raise InvalidValue(f"{n} elements of {bits} bits do not fill whole dwords",
                           rule=f"the last axis must be a multiple of {per}", values={"length": n, "bits": bits})
    v = v.reshape(*v.shape[:-1], v.shape[-1] // per, per)
    shifts = (np.arange(per, dtype=np.uint32) * np.uint32(bits))
    return np.bitwise_or.reduce(v << shifts, axis=-1).astype(np.uint32)


def unpack(dwords, bits: int, *, signed: bool = False, count: int | None = None) -> np.ndarray:
    """Unpack uint32 dwords along the last axis into elements (int64; sign-extended if ``signed``).

    ``count`` keeps only the first ``count`` elements of the last axis.
    """
    _check_bits(bits)
    per = 32 // bits
    d = np.asarray(dwords)
    if d.dtype.kind not in "iu":
        raise InvalidValue("dwords must be an integer array", values={"dtype": str(d.dtype)})
    if d.ndim == 0:
        d = d.reshape(1)
    if count is not None and not 0 <= count <= d.shape[-1] * per:
        raise InvalidValue("count out of range", rule=f"0 <= count <= {d.shape[-1] * per} elements",
                           values={"count": count})
    d = d.astype(np.uint64) & np.uint64(0xFFFFFFFF)
    shifts = np.arange(per, dtype=np.uint64) * np.uint64(bits)
    e = ((d[..., None] >> shifts) & np.uint64((1 << bits) - 1)).astype(np.int64)
    if signed:
        e = np.where(e >= (1 << (bits - 1)), e - (1 << bits), e)
    e = e.reshape(*d.shape[:-1], d.shape[-1] * per)
    return e if count is None else e[..., :count]


def _pad_rows(a: np.ndarray, per: int, pad: bool, what: str) -> np.ndarray:
    k = a.shape[0]
    if k % per:
        if not pad:
            raise InvalidValue(f"{what} has {k} rows (K), not a multiple of {per} elements per dword",
                               rule="K must be a multiple of 32/bits (pass pad=True to zero-fill)",
                               values={"K": k, "per_dword": per})
        a = np.concatenate([a, np.zeros((per - k % per,) + a.shape[1:], dtype=a.dtype)], axis=0)
    return a


def vnni_pack(b, bits: int, *, pad: bool = False) -> np.ndarray:
    """Pack logical B (K x N) into VNNI: result[r, n] = dword of B[r*per:(r+1)*per, n], per = 32/bits.

    This is the AMX B-tile layout (SDM TDPB*D: "each dword of src2 holds four bytes of one column"),
    DPAS Src1 (visa-DPAS.md) and SYCL ``layout::ext_intel_packed``.
    """
    _check_bits(bits)
    per = 32 // bits
    v = raw_bits(b, bits)
    if v.ndim != 2:
        raise InvalidValue("B must be a 2-D K x N matrix", values={"shape": v.shape})
    v = _pad_rows(v, per, pad, "B")
    k, n = v.shape
    return pack(v.reshape(k // per, per, n).transpose(0, 2, 1), bits)[..., 0]


def vnni_unpack(packed, bits: int, *, signed: bool = False, k: int | None = None) -> np.ndarray:
    """Inverse of :func:`vnni_pack`: (K/per) x N dwords -> K x N elements (first ``k`` rows if given)."""
    d = np.asarray(packed)
    if d.ndim != 2:
        raise InvalidValue("packed B must be 2-D", values={"shape": d.shape})
    per = 32 // _check_bits(bits)
    e = unpack(d[..., None], bits, signed=signed)  # (R, N, per)
    out = e.transpose(0, 2, 1).reshape(d.shape[0] * per, d.shape[1])
    return out if k is None else out[:k]


def pack_a(a, bits: int, *, layout: str = "row_major", pad: bool = False) -> np.ndarray:
    """Pack logical A (M x K) into M rows of dwords, each dword holding 32/bits consecutive K values.

    ``layout="col_major"``: ``a`` is the column-major storage of A, i.e. the K x M array A^T.
    """
    v = raw_bits(a, bits)
    if v.ndim != 2:
        raise InvalidValue("A must be 2-D", values={"shape": v.shape})
    if layout == "col_major":
        v = v.T
    elif layout != "row_major":
        raise InvalidValue(f"unknown layout {layout!r}", rule="layout is row_major or col_major",
                           values={"layout": layout})
    per = 32 // bits
    v = _pad_rows(v.T, per, pad, "A").T
    return pack(np.ascontiguousarray(v), bits)


def unpack_a(packed, bits: int, *, signed: bool = False, k: int | None = None) -> np.ndarray:
    """Inverse of :func:`pack_a` (row-major result)."""
    return unpack(packed, bits, signed=signed, count=k)
