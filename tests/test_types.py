"""The element-type table (REFERENCE.md section 1) and the type-level conversion API."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from systolic import types
from systolic.errors import InvalidValue

# REFERENCE.md section 1 / visa-DPAS.md precision table: name -> (bits, IGC GenPrecision code)
SPEC = {"u1": (1, 1), "s1": (1, 2), "u2": (2, 3), "s2": (2, 4), "u4": (4, 5), "s4": (4, 6), "u8": (8, 7),
        "s8": (8, 8), "bf16": (16, 9), "fp16": (16, 10), "bf8": (8, 11), "tf32": (32, 12), "hf8": (8, 14),
        "e2m1": (4, 15)}


@pytest.mark.parametrize("name", SPEC)
def test_table_matches_spec(name):
    t = types.get(name)
    assert (t.bits, t.igc_code) == SPEC[name]


def test_aliases_and_dtypes():
    assert types.get("bf") is types.get("BF16") is types.get("bfloat16")
    assert types.get("hf").name == "fp16" and types.get("e5m2").name == "bf8" and types.get("e4m3").name == "hf8"
    assert types.get("s4").dtype == np.dtype(ml_dtypes.int4)
    assert types.get("u2").dtype == np.dtype(ml_dtypes.uint2)
    assert types.get("bf16").dtype == np.dtype(ml_dtypes.bfloat16)
    assert types.get("tf32").dtype is None
    assert types.from_dtype(ml_dtypes.float8_e4m3fn).name == "hf8"
    assert types.from_dtype(np.int8).name == "s8"
    with pytest.raises(InvalidValue, match="unknown element type 'fp12'"):
        types.get("fp12")


def test_ranges():
    assert (types.get("s1").min, types.get("s1").max) == (-1, 0)
    assert (types.get("u1").min, types.get("u1").max) == (0, 1)
    assert (types.get("s4").min, types.get("s4").max) == (-8, 7)
    assert types.get("hf8").max == 448.0 and types.get("bf8").max == 57344.0
    assert types.get("e2m1").max == 6.0 and types.get("fp16").max == 65504.0
    assert types.get("bf16").max == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    assert types.get("tf32").max == (2 - 2 ** -10) * 2.0 ** 127


def test_convert_float_and_tf32():
    x = np.array([1.0, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 1e-40], dtype=np.float32)
    tf = types.round_to_tf32(x)
    assert tf.dtype == np.float32
    assert tf.view(np.uint32).tolist() == [0x3F800000, 0x3F800000, 0x3F804000, 0x00012000]  # 1.5 ulp ties to even (2 ulp)
    assert types.round_to_tf32(x, ftz=True).view(np.uint32).tolist()[3] == 0
    out = types.convert(np.array([0.1, 300.0]), "hf8", saturate=True)
    assert out.dtype == np.dtype(ml_dtypes.float8_e4m3fn) and out.astype(np.float32).tolist() == [0.1015625, 288.0]


def test_convert_int():
    assert types.convert([1.5, 2.5, -7.6], "s4").astype(int).tolist() == [2, 2, -8]
    assert types.convert([100, -100], "s4", saturate=True).astype(int).tolist() == [7, -8]
    with pytest.raises(InvalidValue, match="out of range for u2"):
        types.convert([4], "u2")


def test_as_dict_is_json_ready():
    import json
    rows = [types.as_dict(t) for t in types.all_types()]
    json.dumps(rows)
    names = [r["name"] for r in rows]
    for n in SPEC:
        assert n in names
    assert "fp32" in names and "int32" in names


def test_convert_64_bit_integers_exactly():
    # expected values are Python ints, not computed by the code under test
    assert types.convert([1e19], "u64").tolist() == [10 ** 19]
    assert types.convert([1e30, -3.0], "u64", saturate=True).tolist() == [2 ** 64 - 1, 0]
    assert types.convert([np.inf, -np.inf], "s64", saturate=True).tolist() == [2 ** 63 - 1, -2 ** 63]
    assert types.convert(np.array([2 ** 64 - 1], dtype=np.uint64), "u64").tolist() == [2 ** 64 - 1]
    assert types.convert([2 ** 70, -5], "u64", saturate=True).tolist() == [2 ** 64 - 1, 0]
    with pytest.raises(InvalidValue, match="out of range for s64"):
        types.convert([2.0 ** 63], "s64")  # float(2**63 - 1) == 2**63: the check must be exact
    with pytest.raises(InvalidValue, match="out of range for u64"):
        types.convert([2 ** 64], "u64")


@pytest.mark.parametrize("bad", [[None], [1 + 2j], ["abc"]])
@pytest.mark.parametrize("target", ["s8", "bf16", "fp32"])
def test_convert_refuses_non_numbers(bad, target):
    with pytest.raises(InvalidValue):
        types.convert(bad, target)


def test_convert_bad_mode_for_integers():
    with pytest.raises(InvalidValue, match="unknown rounding mode 'bogus'"):
        types.convert([1.0], "s8", "bogus")


def test_large_integers_round_once():
    # 2**60 + 2**52 + 1 lies just above a bf16 tie; rounding it first to float64 would land on the tie
    x = 2 ** 60 + 2 ** 52 + 1
    want = 0x5D81  # 2**60 * (1 + 2**-7): the next bf16 up, by hand
    assert types.convert(np.array([x], dtype=np.int64), "bf16").view(np.uint16).tolist() == [want]
    assert types.convert([x], "bf16").view(np.uint16).tolist() == [want]
    assert types.convert([2 ** 2000], "bf16").view(np.uint16).tolist() == [0x7F80]  # overflow -> +inf


def _c_wrap(n: int, bits: int, signed: bool) -> int:
    """An exact integer modulo 2**bits, two's complement when signed (the oracle: Python ints only)."""
    low = n % (1 << bits)
    return low - (1 << bits) if signed and low >= 1 << (bits - 1) else low


@pytest.mark.parametrize("name", ["s8", "u8", "int32", "u32", "s64", "u64", "s4", "u2"])
def test_convert_wrap_truncates_and_keeps_the_low_bits(name):
    # C++ float -> integer truncates toward zero; out of range it wraps (integers: [conv.integral]). Oracle: the
    # exact value of each double (fractions.Fraction), truncated, reduced modulo 2**bits with Python ints.
    import math
    from fractions import Fraction
    et = types.get(name)
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(0, 300, 200), rng.normal(0, 3e9, 100), [300.7, -300.7, -0.5, 0.5, -0.0],
                        [2.0 ** 63, -2.0 ** 63, 2.0 ** 64 + 4096, -(2.0 ** 70) - 2.0 ** 20, 1e300, -1e19],
                        np.ldexp(rng.random(50) + 1, rng.integers(30, 90, 50))])
    got = types.convert(x, name, "rtz", wrap=True)
    assert got.dtype == et.dtype
    want = [_c_wrap(math.trunc(Fraction(v)), et.bits, et.signed) for v in x.tolist()]
    assert [int(v) for v in got.tolist()] == want
    # floor instead of truncation, and float32 / bfloat16 inputs (widened exactly)
    f32 = x[np.abs(x) < 3e38].astype(np.float32)
    assert [int(v) for v in types.convert(f32, name, "rdn", wrap=True).tolist()] == \
        [_c_wrap(math.floor(Fraction(float(v))), et.bits, et.signed) for v in f32.tolist()]
    bf = x[:50].astype(ml_dtypes.bfloat16)
    assert [int(v) for v in types.convert(bf, name, "rtz", wrap=True).tolist()] == \
        [_c_wrap(math.trunc(Fraction(float(v))), et.bits, et.signed) for v in bf.astype(np.float64).tolist()]


def test_convert_wrap_integers_nan_and_inf():
    assert types.convert(np.array([300, -129, 2 ** 40 + 5]), "s8", wrap=True).tolist() == [44, 127, 5]
    assert types.convert(np.array([2 ** 64 - 1], dtype=np.uint64), "s64", wrap=True).tolist() == [-1]
    assert types.convert([2 ** 70 + 3, -1], "u64", wrap=True).tolist() == [3, 2 ** 64 - 1]     # Python ints
    assert types.convert([np.nan, np.inf, -np.inf, 2.5], "int32", "rtz", wrap=True).tolist() == [0, 0, 0, 2]
    assert types.convert(np.array([np.nan, 1.5], dtype=object), "u8", "rtz", wrap=True).tolist() == [0, 1]
    assert types.convert(np.float64(-1.5), "u8", "rtz", wrap=True).shape == ()
    with pytest.raises(InvalidValue, match="choose one"):
        types.convert([1.0], "s8", saturate=True, wrap=True)
    with pytest.raises(InvalidValue, match="unknown rounding mode"):
        types.convert([1.0], "s8", "bogus", wrap=True)
