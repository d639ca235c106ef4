"""Input profiles: element bit patterns drawn for one operand of a test vector.

A profile says which corner of an element format a campaign exercises. Every draw takes a numpy
``Generator`` (seeded per shard from ``(campaign seed, shard index)``, see :mod:`systolic.distributed.campaign`)
and returns raw bit patterns (uint64) of the element type, so NaN payloads, signed zeros and denormals are
exact; nothing here knows about instructions.

Float profiles (element formats of :mod:`systolic.types`):

* ``random``: finite normal numbers, random sign and significand, exponents within +-6 binades of 1;
* ``specials``: about half of the elements from the format's specials (+-0, +-inf, quiet and signalling NaNs
  with random payloads, +-max, +-min normal, +-min subnormal, 1), the rest as ``random``;
* ``denormals``: about half subnormal (nonzero significand, zero exponent field), the rest normal numbers of
  the format's smallest binades;
* ``ftz-window``: values whose products and sums land next to 2**-126 (fp32's smallest normal), where x86's
  tininess-after-rounding flush and the GPU models' denormal rules decide: formats with an 8-bit exponent get
  exponents near -63 (a product of two is near 2**-126); narrower formats, which cannot get there, their
  smallest binades; fp32 accumulators are drawn within 4 binades of 2**-126, subnormals included;
* ``cancellation``: ``random`` operands whose accumulator is set by the caller to cancel the product sum
  (see :meth:`systolic.distributed.kinds.VectorKind.draw`); drawn here as ``random``.

Integer profiles: ``random`` (uniform over the type), ``extremes`` (about half of the elements from min,
min + 1, -1, 0, 1, max - 1, max), ``wrap`` (inputs as ``extremes``, 32-bit accumulators within 256 of the
two's-complement wrap, so the sums cross it).
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..errors import InvalidValue, UnsupportedCombination
from ..suggest import did_you_mean

__all__ = ["FLOAT_PROFILES", "INT_PROFILES", "profiles_for", "draw_bits"]

FLOAT_PROFILES = ("random", "specials", "denormals", "ftz-window", "cancellation")
INT_PROFILES = ("random", "extremes", "wrap")


def profiles_for(is_float: bool, profile: str) -> tuple[str, ...]:
    """The profiles ``profile`` names for an instruction of float or integer inputs (``all``: every one)."""
    valid = FLOAT_PROFILES if is_float else INT_PROFILES
    known = tuple(dict.fromkeys(FLOAT_PROFILES + INT_PROFILES + ("all",)))
    if not isinstance(profile, str) or profile not in known:
        raise InvalidValue(f"unknown profile {profile!r}" + (did_you_mean(profile, known) if isinstance(profile, str)
                                                              else ""),
                           rule="profiles: " + ", ".join(known), values={"profile": profile})
    if profile == "all":
        return valid
    if profile not in valid:
        raise UnsupportedCombination(
            f"profile {profile!r} does not apply to {'float' if is_float else 'integer'} instructions",
            rule="profiles: float instructions " + ", ".join(FLOAT_PROFILES) + "; integer instructions "
                 + ", ".join(INT_PROFILES) + "; all",
            values={"profile": profile})
    return (profile,)


def _compose(fmt, sign, exp, man) -> np.ndarray:
    return (sign.astype(np.uint64) << np.uint64(fmt.exp_bits + fmt.man_bits)) | \
        (exp.astype(np.uint64) << np.uint64(fmt.man_bits)) | man.astype(np.uint64)


def _top_exp_field(fmt) -> int:
    """The largest exponent field of a finite normal number."""
    all_ones = (1 << fmt.exp_bits) - 1
    return all_ones - 1 if fmt.has_inf or fmt.nan == "ieee" else all_ones


def _normals(rng, fmt, shape, lo: int, hi: int) -> np.ndarray:
    """Finite normal numbers with unbiased exponents in [lo, hi] (clipped to the format), random sign/significand."""
    top = _top_exp_field(fmt)
    e = np.clip(rng.integers(lo + fmt.bias, hi + fmt.bias + 1, shape), 1, top)
    man = rng.integers(0, 1 << fmt.man_bits, shape, dtype=np.uint64)
    bits = _compose(fmt, rng.integers(0, 2, shape), e, man)
    if fmt.nan == "fn":       # E4M3fn-like: exponent all ones with significand all ones is the NaN; step below
        nan_mag = (1 << (fmt.exp_bits + fmt.man_bits)) - 1
        mag_mask = np.uint64(nan_mag)
        bits = np.where((bits & mag_mask) == mag_mask, bits - np.uint64(1), bits)
    return bits


def _specials(fmt) -> list[int]:
    s = 1 << (fmt.exp_bits + fmt.man_bits)
    all_ones = (1 << fmt.exp_bits) - 1
    top = _top_exp_field(fmt)
    max_man = (1 << fmt.man_bits) - 1 - (1 if fmt.nan == "fn" and top == all_ones else 0)
    mx = (top << fmt.man_bits) | max_man
    one = fmt.bias << fmt.man_bits
    pool = [0, s, mx, s | mx, 1 << fmt.man_bits, s | (1 << fmt.man_bits), 1, s | 1, one, s | one]
    if fmt.has_inf:
        inf = all_ones << fmt.man_bits
        pool += [inf, s | inf]
    return pool


def _nans(rng, fmt, shape) -> np.ndarray:
    """NaNs of the format: IEEE-style quiet and signalling with random payloads; E4M3fn's two NaNs."""
    if fmt.nan == "fn":
        nan_mag = (1 << (fmt.exp_bits + fmt.man_bits)) - 1
        return (rng.integers(0, 2, shape).astype(np.uint64) << np.uint64(fmt.exp_bits + fmt.man_bits)) | \
            np.uint64(nan_mag)
    man = rng.integers(1, 1 << fmt.man_bits, shape, dtype=np.uint64)   # nonzero: quiet or signalling, any payload
    return _compose(fmt, rng.integers(0, 2, shape), np.full(shape, (1 << fmt.exp_bits) - 1), man)


def _float_bits(rng, tname: str, shape, profile: str) -> np.ndarray:
    t = T.get(tname)
    fmt = t.fmt
    emin = 1 - fmt.bias
    if profile in ("random", "cancellation"):
        return _normals(rng, fmt, shape, -6, 6)
    if profile == "specials":
        base = _normals(rng, fmt, shape, -6, 6)
        pool = np.array(_specials(fmt), dtype=np.uint64)
        pick = pool[rng.integers(0, pool.size, shape)]
        if fmt.has_nan:
            nan = _nans(rng, fmt, shape)
            pick = np.where(rng.random(shape) < 0.25, nan, pick)
        return np.where(rng.random(shape) < 0.5, pick, base)
    if profile == "denormals":
        sub = _compose(fmt, rng.integers(0, 2, shape), np.zeros(shape, np.int64),
                       rng.integers(1, 1 << fmt.man_bits, shape, dtype=np.uint64)) if fmt.man_bits else \
            np.zeros(shape, np.uint64)
        small = _normals(rng, fmt, shape, emin, emin + 3)
        return np.where(rng.random(shape) < 0.5, sub, small)
    if profile == "ftz-window":
        if tname == "fp32":                     # accumulators: within 4 binades of 2**-126, subnormals included
            e = rng.integers(0, 5, shape)
            return _compose(fmt, rng.integers(0, 2, shape), e,
                            rng.integers(0, 1 << fmt.man_bits, shape, dtype=np.uint64))
        if fmt.exp_bits >= 8:                   # bf16, tf32: products of two land near 2**-126
            return _normals(rng, fmt, shape, -65, -61)
        return _normals(rng, fmt, shape, emin, emin + 2)
    raise UnsupportedCombination(f"unknown float profile {profile!r}", rule="profiles: " + ", ".join(FLOAT_PROFILES),
                                 values={"profile": profile})


def _int_bits(rng, tname: str, shape, profile: str) -> np.ndarray:
    t = T.get(tname)
    bits = t.bits
    mask = (1 << bits) - 1
    if profile == "random":
        return rng.integers(0, 1 << bits, shape, dtype=np.uint64)
    if profile == "wrap" and bits == 32:        # accumulators next to the two's-complement wrap
        near_max = rng.integers(0x7FFFFF00, 0x80000000, shape, dtype=np.uint64)
        near_min = rng.integers(0x80000000, 0x80000100, shape, dtype=np.uint64)
        return np.where(rng.random(shape) < 0.5, near_max, near_min)
    if profile in ("extremes", "wrap"):
        vals = sorted({t.min, t.min + 1, -1 if t.min < 0 else 2, 0, 1, t.max - 1, t.max})
        pool = np.array([v & mask for v in vals], dtype=np.uint64)
        pick = pool[rng.integers(0, pool.size, shape)]
        return np.where(rng.random(shape) < 0.5, pick, rng.integers(0, 1 << bits, shape, dtype=np.uint64))
    raise UnsupportedCombination(f"unknown integer profile {profile!r}", rule="profiles: " + ", ".join(INT_PROFILES),
                                 values={"profile": profile})


def draw_bits(rng: np.random.Generator, tname: str, shape, profile: str) -> np.ndarray:
    """Bit patterns (uint64) of ``shape`` elements of type ``tname`` under ``profile``."""
    t = T.get(tname)
    if t.fmt is None:
        return _int_bits(rng, t.name, shape, profile)
    bits = _float_bits(rng, t.name, shape, profile)
    if t.name == "tf32":                        # tf32 values live in the top 19 bits of a 32-bit container
        bits = bits << np.uint64(13)
    return bits
