"""Logical matrices <-> DPAS register images (uses :mod:`systolic.packing`).

Layouts (visa-DPAS.md "Semantics"; IGC ``G4_InstDpas::computeRightBound``):

* **Src2 = A (M x K)**: row-major, K = SD * OPS_PER_CHAN elements per row,
  elements of Src2PrecisionInBits packed into dwords, lower K in lower bits;
  row r starts ``r * K * bits / 8`` bytes after Src2 ("Src2 is advanced
  8*OPS_PER_CHAN elements for each repeat").
* **Src1 = B (K x N)**: GRF row m holds, in dword i, the ``32 / bits`` K values
  ``m*per .. m*per+per-1`` of column i. Depth d reads GRF
  ``d // SRC1_OPERANDS_PER_CHAN`` at element ``(d % SRC1_OPERANDS_PER_CHAN) *
  OPS_PER_CHAN``, which is exactly this packing (the AMX/VNNI "packed" layout).
* **Src0 = C, Dst = D (M x N)**: row r is ``N`` elements of the Dst/Src0 type,
  packed, at ``r * N * sizeof(type)`` (one GRF per row for 32-bit types).

These are the fast (numpy) writers of the maps held once as :class:`systolic.layout.Layout` objects
(:func:`systolic.xmx.layout.layout`); ``tests/layout/test_dpas_layouts.py`` proves, for every platform and
precision pair, that each packer writes exactly ``Layout.scatter``'s image and that ``Layout.gather`` reads it back.

Element values are taken from numpy/ml_dtypes arrays: arrays of the
precision's own dtype give their bits unchanged; other float arrays are
rounded to nearest even (tf32: the float32 container with its low 13 bits
cleared by RNE, REFERENCE.md section 1); integer arrays must be in range.
"""

from __future__ import annotations

import numpy as np

from .. import fpenv, packing
from .. import types as T
from ..errors import InvalidValue
from ..numerics.rounding import as_exact_array, from_bits

__all__ = ["element_bits", "pack_src2", "unpack_src2", "pack_src1", "unpack_src1", "pack_acc", "unpack_acc",
           "decode", "acc_dtype"]


def _integer_elements(a: np.ndarray, name: str) -> np.ndarray:
    """``a`` when every value is an integer (checked on the values as given: a long double or a Fraction is not
    rounded first); :class:`InvalidValue` naming the first that is not."""
    k = a.dtype.kind
    if k in "iub":
        return a
    if k == "f" or k == "V":
        v = a if k == "f" else a.astype(np.float64)  # ml_dtypes values widen exactly; long doubles stay as they are
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(v) | (v != np.trunc(v))
    elif k == "O":
        out = np.empty(a.shape, dtype=object)
        bad = np.zeros(a.shape, dtype=bool)
        for i, x in enumerate(a.flat):
            if isinstance(x, (int, np.integer)):
                out.flat[i] = int(x)
                continue
            try:  # floats, long doubles, Fractions: their exact value
                num, den = x.as_integer_ratio()
            except (AttributeError, TypeError, ValueError, OverflowError):  # not a number, NaN, inf
                num, den = 0, 0
            if den == 1:
                out.flat[i] = num
            else:
                bad.flat[i] = True
        a = out if not bad.any() else a
    else:
        raise InvalidValue(f"{name} values must be integers", values={"dtype": str(a.dtype)})
    if bad.any():
        raise InvalidValue(f"{name} values must be integers", rule=f"{name} elements are integers (not rounded)",
                           values={"dtype": str(a.dtype), "value": repr(a.flat[int(np.flatnonzero(bad)[0])])[:40]})
    return a


@fpenv.guarded  # the integer check widens and compares floats with numpy, which MXCSR.DAZ would flush
def element_bits(values, precision: str) -> np.ndarray:
    """The raw bits (uint32) of ``values`` as elements of ``precision`` (canonical name).

    Each value is rounded once, from its exact value: integers beyond 2**53 (in arrays or lists, see
    :func:`systolic.numerics.rounding.as_exact_array`) and long doubles are not sent through float64 first, and
    float64 values go to tf32 directly, not through float32 (either would round twice). Integer elements are
    checked on the values as given: a non-integer (float, long double, Fraction) is refused, not truncated, and
    the range check sees a uint64 unwrapped."""
    t = T.get(precision)
    a = as_exact_array(values)
    if t.fmt is None:
        a = _integer_elements(a, t.name)
        if a.size:
            lo, hi = int(a.min()), int(a.max())
            if lo < t.min or hi > t.max:
                raise InvalidValue(f"value out of range for {t.name}", rule=f"{t.name} holds [{t.min}, {t.max}]",
                                   values={"min": lo, "max": hi})
        return packing.raw_bits(a.astype(np.int64), t.bits)
    if t.name == "tf32":
        return np.asarray(T.convert(a, t)).view(np.uint32).astype(np.uint32)
    if t.dtype is not None and a.dtype == t.dtype:
        return packing.raw_bits(a, t.bits)
    return packing.raw_bits(T.convert(a, t), t.bits)


def _bits(precision: str) -> int:
    return T.get(precision).storage_bits


def pack_src2(a, precision: str) -> np.ndarray:
    """A (M x K) -> the Src2 image (uint8): the row-major element stream packed into dwords.

    Src2 is one 1-D array of elements (visa-DPAS.md "Src2.k"), so rows follow each other without padding;
    only the end is zero-filled to a whole dword.
    """
    a = np.asarray(a)
    if a.ndim != 2:
        raise InvalidValue("A must be 2-D (M x K)", values={"shape": a.shape})
    bits = _bits(precision)
    flat = element_bits(a, precision).reshape(-1)
    per = 32 // bits
    if flat.size % per:
        flat = np.concatenate([flat, np.zeros(per - flat.size % per, dtype=flat.dtype)])
    return packing.pack(flat, bits).astype("<u4").view(np.uint8)[: -(-a.size * bits // 8)].copy()


def unpack_src2(image, precision: str, m: int, k: int) -> np.ndarray:
    """The raw element bits (uint32, M x K) of a Src2 image."""
    bits = _bits(precision)
    nbytes = -(-m * k * bits // 8)
    raw = np.asarray(image, dtype=np.uint8)[:nbytes]
    raw = np.concatenate([raw, np.zeros(-raw.size % 4, dtype=np.uint8)])
    return packing.unpack(raw.view("<u4"), bits)[: m * k].reshape(m, k).astype(np.uint32)


def pack_src1(b, precision: str) -> np.ndarray:
    """B (K x N) -> the Src1 image (uint8, K*bits/32 GRF rows of N dwords)."""
    b = np.asarray(b)
    if b.ndim != 2:
        raise InvalidValue("B must be 2-D (K x N)", values={"shape": b.shape})
    bits = _bits(precision)
    return packing.vnni_pack(element_bits(b, precision), bits).astype("<u4").view(np.uint8).reshape(-1)


def unpack_src1(image, precision: str, k: int, n: int) -> np.ndarray:
    """The raw element bits (uint32, K x N) of a Src1 image."""
    bits = _bits(precision)
    per = 32 // bits
    dw = np.asarray(image, dtype=np.uint8)[: k // per * n * 4].view("<u4").reshape(k // per, n)
    return packing.vnni_unpack(dw, bits).astype(np.uint32)


def acc_dtype(t: str) -> np.dtype:
    return {"int32": np.dtype("<i4"), "u32": np.dtype("<u4"), "fp32": np.dtype("<f4"),
            "bf16": T.get("bf16").dtype, "fp16": np.dtype("<f2")}[T.get(t).name]


def pack_acc(c, t: str) -> np.ndarray:
    """C (M x N) of Dst/Src0 type ``t`` -> the packed image (uint8)."""
    name = T.get(t).name
    c = as_exact_array(c)
    if name in ("int32", "u32"):
        if c.dtype.kind not in "iu":
            raise InvalidValue("an integer accumulator needs integer values", values={"dtype": str(c.dtype)})
        return (c.astype(np.int64) & 0xFFFFFFFF).astype("<u4").view(np.uint8).reshape(-1)
    dt = acc_dtype(name)
    if c.dtype != dt:  # rounded once from the exact value (big ints, long doubles), whatever the caller's MXCSR
        c = T.convert(c, name)
    return np.ascontiguousarray(c).view(np.uint8).reshape(-1)


def unpack_acc(image, t: str, m: int, n: int) -> np.ndarray:
    """A packed Dst/Src0 image -> M x N array of the type's dtype."""
    dt = acc_dtype(t)
    return np.asarray(image, dtype=np.uint8)[: m * n * dt.itemsize].view(dt).reshape(m, n).copy()


def decode(bits, precision: str, *, flush: bool = False) -> np.ndarray:
    """Element bits -> values: int64 for integer precisions, exact float64 for floats.

    ``flush``: denormals become zeros of the same sign (the DPAS denormal rule).
    """
    t = T.get(precision)
    bits = np.asarray(bits, dtype=np.uint32)
    if t.fmt is None:
        v = bits.astype(np.int64)
        if t.signed:
            v = np.where(v >= (1 << (t.bits - 1)), v - (1 << t.bits), v)
        return v
    return from_bits(bits, t.fmt, daz=flush).astype(np.float64)
