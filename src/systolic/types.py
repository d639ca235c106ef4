"""Every element type the specs use, as data (REFERENCE.md section 1; visa-DPAS.md "Precision" table).

>>> from systolic import types
>>> t = types.get("bf")            # aliases: bf/bf16/bfloat16, hf/fp16/half, bf8/e5m2, hf8/e4m3, ...
>>> t.name, t.bits, t.igc_code
('bf16', 16, 9)
>>> types.convert([1.0, 3.0e38], "bf16").view("uint16")       # RNE, bits as the hardware holds them
array([16256, 32610], dtype=uint16)

Integer types carry their range; float types carry a
:class:`~systolic.numerics.formats.FloatFormat` and convert through
:mod:`systolic.numerics.rounding` (RNE by default; RTZ, saturation and
denormal flushing on request); integer targets round per mode and raise, saturate
or (``wrap=True``, C's truncation with mode ``"rtz"``) wrap when out of range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import ml_dtypes
import numpy as np

from . import fpenv
from .errors import InvalidValue
from .numerics import formats as F
from .numerics.rounding import _as_float64, as_exact_array, from_bits, to_bits
from .registry import Registry

__all__ = ["ElementType", "TYPES", "get", "all_types", "convert", "to_bits", "from_bits", "round_to_tf32",
           "from_dtype", "as_dict"]


@dataclass(frozen=True)
class ElementType:
    """One element type: ``name`` (canonical), ``bits``, ``kind`` ("int" or "float"), IGC precision code, dtype."""

    name: str
    bits: int
    kind: str
    signed: bool
    igc_code: int | None = None
    dtype_name: str | None = None
    fmt: F.FloatFormat | None = None
    aliases: tuple[str, ...] = ()
    description: str = ""

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def dtype(self) -> np.dtype | None:
        """The numpy / ml_dtypes dtype holding one element, where one exists."""
        if self.dtype_name is None:
            return None
        if hasattr(np, self.dtype_name) and self.dtype_name not in ("int4", "uint4", "int2", "uint2"):
            return np.dtype(getattr(np, self.dtype_name))
        return np.dtype(getattr(ml_dtypes, self.dtype_name))

    @property
    def storage_bits(self) -> int:
        """Bits one element occupies when packed (tf32 occupies a whole dword)."""
        return self.fmt.container_bits if self.fmt else self.bits

    @property
    def min(self) -> int | float:
        if self.fmt:
            return -self.fmt.max
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max(self) -> int | float:
        if self.fmt:
            return self.fmt.max
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def format_string(self) -> str:
        if self.fmt:
            return f"E{self.fmt.exp_bits}M{self.fmt.man_bits}"
        return ("s" if self.signed else "u") + f"int{self.bits}"

    def __repr__(self) -> str:
        return f"ElementType({self.name})"


def _int(name, bits, signed, code, dtype, aliases, desc):
    return ElementType(name, bits, "int", signed, code, dtype, None, aliases, desc)


def _flt(name, fmt, code, dtype, aliases, desc):
    return ElementType(name, fmt.container_bits if name == "tf32" else fmt.bits, "float", True, code, dtype, fmt,
                       aliases, desc)


_ALL = (
    _int("u1", 1, False, 1, "uint1", ("ub1", "uint1"), "1-bit unsigned integer, range [0, 1]"),
    _int("s1", 1, True, 2, "int1", ("b1", "int1"), "1-bit signed integer, range [-1, 0]"),
    _int("u2", 2, False, 3, "uint2", ("uint2",), "2-bit unsigned integer"),
    _int("s2", 2, True, 4, "int2", ("int2",), "2-bit signed integer"),
    _int("u4", 4, False, 5, "uint4", ("uint4",), "4-bit unsigned integer"),
    _int("s4", 4, True, 6, "int4", ("int4",), "4-bit signed integer"),
    _int("u8", 8, False, 7, "uint8", ("ub", "uint8"), "8-bit unsigned integer"),
    _int("s8", 8, True, 8, "int8", ("b", "int8"), "8-bit signed integer"),
    _int("u16", 16, False, None, "uint16", ("uw", "uint16"), "16-bit unsigned integer (vISA :uw)"),
    _int("s16", 16, True, None, "int16", ("w", "int16"), "16-bit signed integer (vISA :w)"),
    _int("u32", 32, False, None, "uint32", ("ud", "uint32"), "32-bit unsigned integer (vISA :ud)"),
    _int("int32", 32, True, None, "int32", ("d", "s32", "i32"), "32-bit signed integer accumulator (vISA :d)"),
    _int("u64", 64, False, None, "uint64", ("uq", "uint64"), "64-bit unsigned integer (vISA :uq)"),
    _int("s64", 64, True, None, "int64", ("q", "int64"), "64-bit signed integer (vISA :q)"),
    _flt("bf16", F.BF16, 9, "bfloat16", ("bf", "bfloat16"), "bfloat16: fp32's exponent, 7 fraction bits"),
    _flt("fp16", F.FP16, 10, "float16", ("hf", "half", "float16"), "IEEE binary16"),
    _flt("bf8", F.BF8, 11, "float8_e5m2", ("e5m2", "float8_e5m2"), "OCP FP8 E5M2 (IEEE-like inf/NaN)"),
    _flt("tf32", F.TF32, 12, None, ("tfloat32",), "TensorFloat-32: fp32 with 10 fraction bits, held in 32 bits"),
    _flt("hf8", F.HF8, 14, "float8_e4m3fn", ("e4m3", "float8_e4m3fn", "e4m3fn"),
         "OCP FP8 E4M3 (no inf; S.1111.111 is NaN)"),
    _flt("e2m1", F.E2M1, 15, "float4_e2m1fn", ("fp4", "float4_e2m1fn", "e2m1fn"), "OCP FP4 E2M1 (no inf, no NaN)"),
    _flt("fp32", F.FP32, None, "float32", ("f", "float", "float32"), "IEEE binary32"),
    _flt("fp64", F.FP64, None, "float64", ("df", "double", "float64"), "IEEE binary64"),
)

TYPES: dict[str, ElementType] = {t.name: t for t in _ALL}
_REGISTRY: Registry[ElementType] = Registry("element type", rule="known types", key="name", kind=ElementType)
for _t in _ALL:
    _REGISTRY.add(_t.name, _t, _t.aliases)


def get(name: str | ElementType) -> ElementType:
    """The element type called ``name`` (canonical name or alias, case-insensitive)."""
    return _REGISTRY.get(name)


def all_types() -> list[ElementType]:
    return list(_ALL)


#: dtype -> element type, filled on first use (the scan builds every type's dtype: ~50 us a call, which was most
#: of the host time of a GPU GEMM call)
_BY_DTYPE: dict[np.dtype, ElementType] = {}


def from_dtype(dtype) -> ElementType:
    """The element type of a numpy / ml_dtypes dtype."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError, SyntaxError):     # np.dtype(np): ValueError; np.dtype("("): SyntaxError
        raise InvalidValue(f"{dtype!r} is not a numpy dtype", rule="from_dtype: a numpy or ml_dtypes dtype",
                           values={"dtype": repr(dtype)}) from None
    t = _BY_DTYPE.get(dt)
    if t is not None:
        return t
    for t in _ALL:
        if t.dtype is not None and t.dtype == dt:
            _BY_DTYPE[dt] = t
            return t
    raise InvalidValue(f"no systolic element type for dtype {dt}",
                       rule="from_dtype: the dtypes of systolic.types.all_types()", values={"dtype": str(dt)})


def _fmt(t: str | ElementType) -> F.FloatFormat:
    et = get(t)
    if et.fmt is None:
        raise InvalidValue(f"{et.name} is not a floating-point type", rule="float conversion needs a float type",
                           values={"type": et.name})
    return et.fmt


@fpenv.guarded  # the integer paths widen float32 and round with numpy, which MXCSR.DAZ/FTZ would change
def convert(x, t: str | ElementType, mode: str = "rne", *, saturate: bool = False, ftz: bool = False,
            nan: str = "quiet", wrap: bool = False) -> np.ndarray:
    """Convert float values to type ``t``; return the ml_dtypes/numpy array (tf32: float32 with the low 13 bits 0).

    Rules: :mod:`systolic.numerics.rounding`. Integer targets: round per ``mode`` (``"rtz"``: C's truncation,
    C++ [conv.fpint]); out-of-range values raise, unless ``saturate=True`` clamps them or ``wrap=True`` keeps
    the rounded value modulo ``2**bits`` in two's complement (C++ [conv.integral]; C++ leaves a float out of the
    target's range undefined, this is the modular choice) with NaN and infinities, which have no integer value,
    giving 0.

    Each value is rounded once, from its exact value (Python lists of big ints and ``np.longdouble`` included:
    :func:`systolic.numerics.rounding.as_exact_array`). An option that cannot apply to the target is refused
    (:class:`InvalidValue`), not ignored: ``wrap`` for float targets (they overflow to inf or saturate),
    ``ftz`` and ``nan`` for integer targets (no subnormals, no NaN).
    """
    et = get(t)
    x = as_exact_array(x)
    if et.fmt is None:
        if ftz or nan != "quiet":
            raise InvalidValue(f"ftz and nan do not apply to the integer type {et.name}",
                               rule="ftz= and nan= are rules of float targets (integers have no subnormal, no NaN)",
                               values={"type": et.name, "ftz": ftz, "nan": nan})
        if saturate and wrap:
            raise InvalidValue("saturate and wrap are two different overflow rules: choose one",
                               rule="at most one of saturate=True, wrap=True", values={"type": et.name})
        if wrap:
            return _convert_int_wrap(x, et, mode)
        return _convert_int(x, et, mode, saturate)
    if wrap:
        raise InvalidValue(f"wrap does not apply to the float type {et.name}",
                           rule="wrap=True is an overflow rule of integer targets (floats overflow to inf or "
                                "saturate=True)", values={"type": et.name})
    bits = to_bits(x, et.fmt, mode, saturate=saturate, ftz=ftz, nan=nan)
    if et.name == "tf32":
        return bits.view(np.float32)
    return bits.view(et.dtype)


_INT_ROUNDING = {"rne": np.rint, "rtz": np.trunc, "rup": np.ceil, "rdn": np.floor}


def _convert_int(x, et: ElementType, mode: str, saturate: bool) -> np.ndarray:
    """Round to an integer type; the range check and the cast are exact (64-bit types included)."""
    if mode not in _INT_ROUNDING:
        raise InvalidValue(f"unknown rounding mode {mode!r}", rule="rounding modes are " + ", ".join(_INT_ROUNDING),
                           values={"mode": mode})
    store = et.dtype if et.dtype is not None else np.dtype(np.int64)
    lo, hi = int(et.min), int(et.max)
    a = np.asarray(x)
    if a.dtype.kind in "iub" or (a.dtype.kind == "O" and all(isinstance(v, int) for v in a.ravel())):
        ints = a.astype(object) if a.dtype.itemsize >= 8 else a.astype(np.int64)
        below, above = ints < lo, ints > hi
        if saturate:
            ints = np.where(below, lo, np.where(above, hi, ints))
        elif np.any(below | above):
            bad = ints[below | above].ravel()[0]
            raise InvalidValue(f"value out of range for {et.name}", rule=f"{et.name} holds [{lo}, {hi}]",
                               values={"value": int(bad)})
        return np.asarray(ints).astype(store)
    if a.dtype.kind == "f" and a.dtype.itemsize > 8:  # long double: float64 would round it first
        a = np.array(list(a.ravel()), dtype=object).reshape(a.shape)
    if a.dtype.kind == "O":  # Python numbers, possibly beyond float64's exact range: round each exactly
        return _convert_int(np.array([_round_exact(v, mode, et) for v in a.ravel()], dtype=object)
                            .reshape(a.shape).astype(object), et, mode, saturate) if a.size else a.astype(store)
    f, _ = _as_float64(a)
    if np.isnan(f).any():
        raise InvalidValue(f"NaN has no {et.name} value", rule="integer types have no NaN", values={"type": et.name})
    r = _INT_ROUNDING[mode](f)
    # hi + 1 and lo are powers of two (or 0): exact in float64, so these comparisons are exact
    below, above = r < lo, r >= float(hi + 1)
    if np.any(below | above) and not saturate:
        bad = r[below | above].ravel()[0]
        raise InvalidValue(f"value out of range for {et.name}", rule=f"{et.name} holds [{lo}, {hi}]",
                           values={"value": float(bad)})
    safe = np.where(below | above, 0.0, r)
    out = safe.astype(store) if store.kind in "iu" else safe.astype(np.int64).astype(store)
    if saturate:
        out = np.where(below, np.asarray(lo).astype(store), np.where(above, np.asarray(hi).astype(store), out))
    return np.asarray(out).astype(store)


def _wrap(ints: np.ndarray, et: ElementType) -> np.ndarray:
    """Exact integers (an int64 or object array) modulo 2**bits, two's complement for signed types, stored."""
    store = et.dtype if et.dtype is not None else np.dtype(np.int64)
    if ints.dtype != np.int64 or et.bits == 64:    # Python ints: exact at any size
        ints = np.asarray(ints, dtype=object)
    m = 1 << et.bits
    low = ints % m                                  # a floor modulo (numpy and Python alike): in [0, 2**bits)
    if et.signed:
        low = np.where(low >= m >> 1, low - m, low)
    return np.asarray(low).astype(store)


def _convert_int_wrap(x, et: ElementType, mode: str) -> np.ndarray:
    """:func:`convert` to an integer type with ``wrap=True``: round per ``mode``, keep the low ``bits`` bits."""
    if mode not in _INT_ROUNDING:
        raise InvalidValue(f"unknown rounding mode {mode!r}", rule="rounding modes are " + ", ".join(_INT_ROUNDING),
                           values={"mode": mode})
    a = np.asarray(x)
    if a.dtype.kind in "iub":
        return _wrap(a.astype(object) if a.dtype.itemsize >= 8 else a.astype(np.int64), et)
    if a.dtype.kind == "f" and a.dtype.itemsize > 8:  # long double: float64 would round it first
        a = np.array(list(a.ravel()), dtype=object).reshape(a.shape)
    if a.dtype.kind == "O":  # Python numbers: each rounded exactly
        flat = [0 if isinstance(v, (float, np.floating)) and not np.isfinite(v) else _round_exact(v, mode, et)
                for v in a.ravel()]
        return _wrap(np.array(flat, dtype=object).reshape(a.shape), et)
    f, _ = _as_float64(a)
    with np.errstate(invalid="ignore"):
        r = np.where(np.isfinite(f), _INT_ROUNDING[mode](f), 0.0)     # NaN, +-inf: no integer value -> 0
    if r.size and float(np.max(np.abs(r))) >= 2.0 ** 63:               # beyond int64: exact Python ints
        return _wrap(np.array([int(v) for v in r.ravel()], dtype=object).reshape(r.shape), et)
    return _wrap(r.astype(np.int64), et)


def _round_exact(v, mode: str, et: ElementType) -> int:
    """One Python number rounded to an integer under ``mode``, exactly (inf becomes a value past the range)."""
    import math
    from fractions import Fraction
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise InvalidValue("cannot convert a non-number to an integer type", rule="inputs are real numbers",
                           values={"value": repr(v)[:40], "type": et.name})
    if isinstance(v, (int, np.integer)):
        return int(v)
    if np.isnan(v):
        raise InvalidValue(f"NaN has no {et.name} value", rule="integer types have no NaN", values={"type": et.name})
    if np.isinf(v):  # not math.isinf: float(v) of a finite long double past float64's range is inf
        return (int(et.max) + 1) if v > 0 else (int(et.min) - 1)
    q = Fraction(*v.as_integer_ratio())  # exact, np.longdouble included (Fraction() refuses it)
    return {"rne": round, "rtz": int, "rup": math.ceil, "rdn": math.floor}[mode](q)


def round_to_tf32(x, *, ftz: bool = False) -> np.ndarray:
    """fp32 -> tf32 with round-to-nearest-even, as float32 values with the low 13 fraction bits zero.

    SYCL ``round_to_tf32`` (REFERENCE.md section 5) and OpenCL ``intel_convert_tfloat32_as_float``;
    the GPU's FCVT (PVC+) also flushes denormals: pass ``ftz=True``.
    """
    return convert(np.asarray(x, dtype=np.float32), "tf32", ftz=ftz)


def as_dict(t: ElementType) -> dict:
    """A JSON-ready description of one element type (``systolic types --json``)."""
    d = {
        "name": t.name, "aliases": list(t.aliases), "kind": t.kind, "bits": t.bits, "signed": t.signed,
        "storage_bits": t.storage_bits, "igc_precision_code": t.igc_code,
        "dtype": str(t.dtype) if t.dtype is not None else None, "format": t.format_string,
        "min": t.min, "max": t.max, "description": t.description,
    }
    if t.fmt:
        d.update(exponent_bits=t.fmt.exp_bits, mantissa_bits=t.fmt.man_bits, bias=t.fmt.bias,
                 has_inf=t.fmt.has_inf, has_nan=t.fmt.has_nan, min_normal=t.fmt.min_normal,
                 min_subnormal=t.fmt.min_subnormal)
    return d


def names(types: Iterable[ElementType] | None = None) -> list[str]:
    return [t.name for t in (types or _ALL)]
