"""Vectorised ALU (fast path): whole-instruction numpy versions of the common cases of :mod:`.alu`.

Covered: integer mov/sel/add/mul/mad/min/max/and/or/xor/not/shl/shr/asr with 8/16/32-bit integer
types, and F mov/sel/add/mul under the default float model. Anything else returns ``None`` and the
interpreter takes the per-element spec path. tests/visa/test_fast_alu.py proves the two bit-identical
(random bit patterns, every modifier, .sat, wraparound, NaN/inf/denormal/signed-zero operands).
"""

from __future__ import annotations

import numpy as np

from .alu import DEFAULT_MODEL, FloatModel
from .isa import VisaType

__all__ = ["compute", "FAST_OPS"]

FAST_OPS = frozenset({"mov", "sel", "add", "mul", "mad", "min", "max", "and", "or", "xor", "not", "shl", "shr",
                      "asr"})
_INT32 = ("ud", "d", "uw", "w", "ub", "b")
_QNAN = np.uint32(0x7FC00000)


def _ints(bits: np.ndarray, t: VisaType) -> np.ndarray:
    """Bit patterns -> exact values (int64) of type t."""
    v = bits.astype(np.int64) & ((1 << t.bits) - 1)
    if t.signed:
        v = np.where(v >> (t.bits - 1) & 1, v - (1 << t.bits), v)
    return v


def _int_modifier(v: np.ndarray, mod: str, t: VisaType) -> np.ndarray:
    if mod == "neg":
        return -v
    if mod == "abs":
        return np.abs(v)
    if mod == "neg_abs":
        return -np.abs(v)
    if mod == "not":
        return _ints(~v & ((1 << t.bits) - 1), t)
    return v


def _float_modifier(b: np.ndarray, mod: str) -> np.ndarray:
    if mod in ("abs", "neg_abs"):
        b = b & np.uint32(0x7FFFFFFF)
    if mod in ("neg", "neg_abs"):
        b = b ^ np.uint32(0x80000000)
    return b


def compute(op: str, srcs: list, dt: VisaType, *, sat: bool, sel_mask=None,
            model: FloatModel = DEFAULT_MODEL):
    """``srcs``: list of (bits uint64 array, type, modifier). Returns dst bits (uint64) or None."""
    if op not in FAST_OPS:
        return None
    types = [t for _, t, _ in srcs]
    if all(t.name in _INT32 for t in types) and dt.name in _INT32:
        return _int_compute(op, srcs, dt, sat, sel_mask)
    if all(t.name == "f" for t in types) and dt.name == "f" and model == DEFAULT_MODEL and op in (
            "mov", "sel", "add", "mul"):
        return _f32_compute(op, srcs, sat, sel_mask)
    return None


def _int_compute(op, srcs, dt, sat, sel_mask):
    vals = [_int_modifier(_ints(b, t), m, t) for b, t, m in srcs]
    if sat and op in ("mul", "mad", "shl") and any(t.name == "ud" or t.name == "d" for _, t, _ in srcs):
        return None  # the exact product may leave int64: spec path
    a = vals[0]
    with np.errstate(over="ignore"):
        if op == "mov":
            r = a
        elif op == "sel":
            r = np.where(sel_mask, a, vals[1])
        elif op == "add":
            r = a + vals[1]
        elif op == "mul":
            r = a * vals[1]                                   # wraps mod 2^64: the low bits stay exact
        elif op == "mad":
            r = a * vals[1] + vals[2]
        elif op == "min":
            r = np.minimum(a, vals[1])
        elif op == "max":
            r = np.maximum(a, vals[1])
        elif op == "and":
            r = a & vals[1]
        elif op == "or":
            r = a | vals[1]
        elif op == "xor":
            r = a ^ vals[1]
        elif op == "not":
            r = ~a
        else:
            cnt = vals[1] & 31
            t0 = srcs[0][1]
            if op == "shl":
                r = a << cnt
            elif op == "shr":
                r = (a & ((1 << t0.bits) - 1)) >> cnt
            else:
                r = a >> cnt
    if sat:
        lo, hi = (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1) if dt.signed else (0, (1 << dt.bits) - 1)
        r = np.clip(r, lo, hi)
    return (r & ((1 << dt.bits) - 1)).astype(np.uint64)


def _f32_compute(op, srcs, sat, sel_mask):
    bits = [_float_modifier(b.astype(np.uint32), m) for b, _, m in srcs]
    f = [b.view(np.float32) for b in bits]
    if op in ("mov", "sel"):
        out = bits[0] if op == "mov" else np.where(sel_mask, bits[0], bits[1])
        if not sat:
            # a same-type move keeps the bits, except that a NaN becomes the default NaN (as the spec path)
            return np.where(np.isnan(out.view(np.float32)), _QNAN, out).astype(np.uint64)
        r = out.view(np.float32)
    else:
        with np.errstate(all="ignore"):
            r = f[0] + f[1] if op == "add" else f[0] * f[1]
    if sat:
        r = np.where(np.isnan(r), np.float32(0), np.clip(r, np.float32(0), np.float32(1))) + np.float32(0)
        return r.astype(np.float32).view(np.uint32).astype(np.uint64)
    out = r.astype(np.float32).view(np.uint32)
    return np.where(np.isnan(r), _QNAN, out).astype(np.uint64)
