"""Host values -> the bytes a vISA general variable holds (``Machine.write``, ``systolic visa run --in``).

Every value is taken at its exact value and converted once (2_datatypes.md, "Type Conversion"):

- float variables (F, HF, BF, DF): rounded to nearest even from the exact input by
  :func:`systolic.types.convert` (a float64 or a large integer is not first rounded to float32, as
  ``astype(bfloat16)`` would do); an input already of the variable's own dtype is stored bit for bit, so a
  caller can plant any pattern (signalling NaNs included); exact rationals (``fractions.Fraction``, e.g. a
  decimal literal read exactly) round once by :func:`systolic.numerics.rounding.round_fraction`.
- integer variables: each value must be an integer inside the type's range (2_datatypes.md, "Fundamental
  Data Types" table); the check is on exact Python integers, so a uint32 4294967295 given to a D variable or
  an int32 -1 given to a UD variable is an error, not a reinterpretation of the same bits.

The caller (``Machine.write``) runs this under :func:`systolic.fpenv.default`: the float tests here use the
host's arithmetic, which MXCSR.DAZ would otherwise change (a float32 denormal would read as 0).
"""

from __future__ import annotations

import math
import numbers
import operator
from fractions import Fraction

import numpy as np

from .. import types as T
from ..errors import InvalidValue
from ..numerics.rounding import round_fraction
from .isa import VisaType

__all__ = ["variable_bytes", "exact_ints", "exact_value"]

_RANGE_RULE = "2_datatypes.md: Fundamental Data Types (type ranges)"


def exact_value(x):
    """One number -> its exact value (int or Fraction), or a float NaN/inf; None if it is not a real number.

    Accepts Python ints, floats and Fractions, numpy integer and float scalars (float16 .. long double) and the
    ml_dtypes float scalars (bfloat16, float8 ...), each without rounding."""
    if isinstance(x, np.generic) and np.dtype(type(x)).kind == "V":  # ml_dtypes: float64 holds each exactly
        x = float(x)
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, (int, np.integer)):
        return operator.index(x)
    if isinstance(x, (float, np.floating)):
        if not np.isfinite(x):
            return float(x)
        n, d = x.as_integer_ratio()  # exact for float16/32/64 and long double
        return n if d == 1 else Fraction(n, d)
    if isinstance(x, numbers.Rational):
        return Fraction(x.numerator, x.denominator)
    return None


def exact_ints(arr: np.ndarray, t: VisaType, name: str) -> list[int]:
    """The elements of ``arr`` as Python ints, each checked to be an integer in ``t``'s range (else InvalidValue)."""
    lo, hi = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.signed else (0, (1 << t.bits) - 1)
    if arr.dtype.kind == "V":  # ml_dtypes floats: float64 holds each exactly
        arr = arr.astype(np.float64)
    out = []
    for i, x in enumerate(arr.tolist() if arr.dtype.kind in "biu" else arr):
        v = exact_value(x)
        if v is None:
            raise InvalidValue("values must be real numbers", values={"variable": name, "index": i,
                                                                     "value": repr(x)[:40]})
        if isinstance(v, float) or isinstance(v, Fraction) and v.denominator != 1:
            shown = str(x) if isinstance(x, Fraction) else repr(x)     # 3/2, not Fraction(3, 2)
            raise InvalidValue(f"input value {shown} does not fit the variable's integer type exactly "
                               f"(not an integer)", rule=_RANGE_RULE,
                               values={"variable": name, "type": t.name, "index": i, "value": shown[:40]})
        v = int(v)
        if not lo <= v <= hi:
            raise InvalidValue(f"input value {v} does not fit the variable's integer type {t.name} "
                               f"[{lo}, {hi}]", rule=_RANGE_RULE,
                               values={"variable": name, "type": t.name, "range": [lo, hi], "index": i,
                                       "value": v})
        out.append(v)
    return out


def variable_bytes(values, t: VisaType, dtype: np.dtype, name: str) -> np.ndarray:
    """The little-endian bytes of ``values`` stored as elements of type ``t`` (numpy dtype ``dtype``)."""
    arr = np.asarray(values).ravel()
    if arr.dtype.kind in "USMmc":  # strings, dates, complex (ml_dtypes floats are kind V)
        raise InvalidValue("values must be real numbers", values={"variable": name, "dtype": str(arr.dtype)})
    if arr.dtype == dtype:  # already the variable's type: the bits as given
        return np.ascontiguousarray(arr).view(np.uint8)
    if t.is_int:
        # a list or tuple is read element by element: numpy would turn [2**63 + 1, -1] into float64 first
        ints = exact_ints(np.array(values, dtype=object).ravel() if isinstance(values, (list, tuple)) else arr,
                          t, name)
        bits = np.array([v & ((1 << t.bits) - 1) for v in ints], dtype=np.uint64)
        return bits.astype(f"<u{t.size}").view(np.uint8)
    if arr.dtype.kind == "O":
        exact = []
        for i, x in enumerate(arr):
            exact.append(exact_value(x))
            if exact[-1] is None:
                raise InvalidValue("values must be real numbers", values={"variable": name, "index": i,
                                                                         "value": repr(x)[:40]})
        if any(isinstance(v, Fraction) for v in exact):  # exact rationals (decimal literals): round each once
            fmt = T.get(t.systolic).fmt
            bits = [int(T.convert([v], t.systolic).view(f"<u{t.size}")[0]) if isinstance(v, float)
                    else round_fraction(Fraction(v), fmt, "rne",
                                        negative_zero=v == 0 and math.copysign(1.0, float(x)) < 0)
                    for x, v in zip(arr, exact)]
            return np.array(bits, dtype=f"<u{t.size}").view(np.uint8)
    # a list or tuple goes to convert as given: numpy would turn [0.5, 2**60 + 1] into float64 first
    src = values if isinstance(values, (list, tuple)) else arr
    out = np.asarray(T.convert(src, t.systolic)).ravel()
    return np.ascontiguousarray(out).view(np.uint8)
