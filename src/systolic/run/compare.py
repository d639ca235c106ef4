"""Bit-for-bit comparison of a program's result with its oracle, naming the first differing element.

Two arrays agree when they have the same shape, the same dtype and the same bytes for every element (so a NaN
agrees with a NaN of the same payload, and +0 differs from -0): the hardware's results are bit patterns.
"""

from __future__ import annotations

import numpy as np

from ..errors import ProgramError

__all__ = ["compare", "as_array"]


def as_array(x, what: str) -> np.ndarray:
    """``x`` as a numpy array of plain (non-object) elements, or a ProgramError naming ``what``."""
    if not isinstance(x, (np.ndarray, np.generic)):
        raise ProgramError(f"{what} must be a numpy array", rule="program protocol: main() returns numpy arrays",
                           values={what: type(x).__name__})
    a = np.asarray(x)
    # numbers: bool, integers, floats (ml_dtypes' too: kind "V" with their own scalar type) and complex. Not
    # objects, strings, datetimes, timedeltas, nor raw or structured void data (scalar type np.void)
    if a.dtype.hasobject or a.dtype.kind in "OUSMm" or a.dtype.type is np.void:
        raise ProgramError(f"{what} must hold numbers (bool, integer, float or complex elements)",
                           rule="program protocol: main() returns numpy arrays of numbers",
                           values={what: str(a.dtype)})
    return a


def _scalar(a: np.ndarray, idx) -> object:
    v = a[idx]
    if a.dtype.kind == "b":
        return bool(v)
    if a.dtype.kind in "iu":
        return int(v)
    if a.dtype.kind == "c":
        return complex(v)          # both parts: float() would drop the imaginary one (and warn)
    return float(v)  # also ml_dtypes (bfloat16, float8, int4: kind "V"), whose scalars convert exactly


def _bits(a: np.ndarray, idx) -> str:
    """The element's bit pattern in hex (the value's bytes read in the dtype's byte order)."""
    order = "big" if a.dtype.byteorder == ">" else "little"
    raw = np.ascontiguousarray(a[idx]).tobytes()
    return f"0x{int.from_bytes(raw, order):0{2 * len(raw)}x}"


def compare(name: str, result: np.ndarray, oracle: np.ndarray) -> dict:
    """``{"name", "ok", "shape", "dtype", "elements", "mismatches", "first_mismatch"?, "reason"?}``.

    ``ok`` is None when the arrays agree in shape and dtype but hold no element: nothing was compared, so the
    check proves nothing (the report's verdict is then "unchecked", never "bit-identical")."""
    out = {"name": name, "shape": list(result.shape), "dtype": str(result.dtype), "elements": int(result.size)}
    if result.shape != oracle.shape:
        return {**out, "ok": False, "mismatches": None,
                "reason": f"shape {result.shape} differs from the oracle's {oracle.shape}"}
    if result.dtype != oracle.dtype:
        return {**out, "ok": False, "mismatches": None,
                "reason": f"dtype {result.dtype} differs from the oracle's {oracle.dtype} (compared bit for bit)"}
    if result.size == 0:
        return {**out, "ok": None, "mismatches": 0, "reason": "no elements: nothing was compared"}
    isz = result.dtype.itemsize
    rb = np.ascontiguousarray(result).view(np.uint8).reshape(result.size, isz)
    ob = np.ascontiguousarray(oracle).view(np.uint8).reshape(oracle.size, isz)
    bad = (rb != ob).any(axis=1)
    n = int(bad.sum())
    if n == 0:
        return {**out, "ok": True, "mismatches": 0}
    flat = int(np.argmax(bad))
    idx = tuple(int(i) for i in np.unravel_index(flat, result.shape))
    first = {"index": list(idx), "result": _scalar(result, idx), "oracle": _scalar(oracle, idx),
             "result_bits": _bits(result, idx), "oracle_bits": _bits(oracle, idx)}
    return {**out, "ok": False, "mismatches": n, "first_mismatch": first}
