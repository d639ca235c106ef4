"""Host values into vISA variables and immediates, and the float results the ALU writes.

Oracles are independent of systolic: round-to-nearest-even worked by hand on Python ints and
fractions.Fraction, bit patterns assembled from the IEEE field layout, and the IEEE 754-2019 sign rules.
"""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from systolic import fpenv
from systolic.errors import InvalidValue
from systolic.visa import asm
from systolic.visa.interp import Machine

# (man_bits, exponent bias) of the float variable types
_FMT = {"bf": (7, 127), "hf": (10, 15), "f": (23, 127), "df": (52, 1023)}
_UINT = {"bf": np.uint16, "hf": np.uint16, "f": np.uint32, "df": np.uint64}


def rne_bits(x: Fraction, t: str) -> int:
    """Bits of the positive normal value ``x`` rounded to nearest even in vISA float type ``t`` (by hand)."""
    man, bias = _FMT[t]
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    ulp = Fraction(2) ** (e - man)
    q, r = divmod(x, ulp)
    if 2 * r > ulp or (2 * r == ulp and q % 2):
        q += 1
    if q == 1 << (man + 1):  # carried into the next binade
        q, e = q // 2, e + 1
    return ((e + bias) << man) | (int(q) - (1 << man))


def machine(decls: str) -> Machine:
    return Machine(asm.parse(decls), "pvc")


def bits_of(m: Machine, name: str, t: str) -> list[int]:
    return m.read(name).view(_UINT[t]).tolist()


def test_rne_bits_oracle_on_known_patterns():
    # the oracle itself against patterns read off the IEEE layouts
    assert rne_bits(Fraction(1), "bf") == 0x3F80
    assert rne_bits(Fraction(3, 2), "f") == 0x3FC00000
    assert rne_bits(Fraction(65504), "hf") == 0x7BFF
    assert rne_bits(Fraction(2) - Fraction(1, 2 ** 9), "bf") == 0x4000  # rounds up into the next binade


# ----------------------------------------------------------------- Machine.write: float variables
DECL_FLOATS = "".join(f".decl {t.upper()} v_type=G type={t} num_elts=4 align=GRF\n" for t in _FMT)


@pytest.mark.parametrize("t", ["bf", "hf", "f", "df"])
def test_write_rounds_float64_once(t):
    """1 + half an ulp + 2**-60: above the tie, so RNE rounds up; a detour through a narrower type lands on the
    tie and rounds to even (1.0)."""
    man, _ = _FMT[t]
    if t == "df":
        x = Fraction(1) + Fraction(1, 2 ** 30)                     # exact in float64: stays
    else:
        x = Fraction(1) + Fraction(1, 2 ** (man + 1)) + Fraction(1, 2 ** 40)
    m = machine(DECL_FLOATS)
    m.write(t.upper(), np.array([float(x)]))
    assert float(x) == x
    assert bits_of(m, t.upper(), t)[0] == rne_bits(x, t)
    if t != "df":
        assert rne_bits(x, t) == ((_FMT[t][1] << man) | 1)           # 1 + one ulp


@pytest.mark.parametrize("t", ["bf", "hf", "f"])
def test_write_rounds_large_integers_once(t):
    man, _ = _FMT[t]
    top = 15 if t == "hf" else 60
    v = 2 ** top + 2 ** (top - man - 1) + 1                          # just above the tie
    m = machine(DECL_FLOATS)
    m.write(t.upper(), np.array([v, 2 ** 24 + 2 ** 16 + 1], dtype=np.int64))
    got = bits_of(m, t.upper(), t)
    assert got[0] == rne_bits(Fraction(v), t) == ((top + _FMT[t][1]) << man) | 1
    if t == "bf":
        # the audit's case: 2**24 + 2**16 + 1 -> 2**24 + 2**17 (0x4b81), not 2**24 via float32
        assert got[1] == rne_bits(Fraction(2 ** 24 + 2 ** 16 + 1), "bf") == 0x4B81


def test_write_bf_audit_case():
    # `systolic visa run p.visa --in BF=1.0039062500009095,16842753`: 1.0078125 (0x3f81) and 16908288 (0x4b81)
    m = machine(DECL_FLOATS)
    m.write("BF", np.array([1.0039062500009095, 16842753]))
    assert bits_of(m, "BF", "bf")[:2] == [0x3F81, 0x4B81]
    assert m.read("BF")[:2].astype(np.float64).tolist() == [1.0078125, 16908288.0]


def test_write_uint64_and_python_list():
    m = machine(DECL_FLOATS)
    m.write("F", np.array([2 ** 64 - 1], dtype=np.uint64))
    assert bits_of(m, "F", "f")[0] == rne_bits(Fraction(2 ** 64), "f") == 0x5F800000
    w = 2 ** 60 + 2 ** 52 + 1                                       # bf tie at 2**60 + 2**52, plus 1
    m.write("BF", [0.5, w])
    assert bits_of(m, "BF", "bf")[:2] == [rne_bits(Fraction(1, 2), "bf"), rne_bits(Fraction(w), "bf")]
    assert rne_bits(Fraction(w), "bf") == ((60 + 127) << 7) | 1


def test_write_same_dtype_keeps_bits():
    m = machine(DECL_FLOATS)
    snan = np.array([0x7F800001, 0xFFC00123, 0x80000000, 1], dtype=np.uint32).view(np.float32)
    m.write("F", snan)
    assert bits_of(m, "F", "f") == [0x7F800001, 0xFFC00123, 0x80000000, 1]
    m.write("BF", np.array([0x7F81, 0x8000], dtype=np.uint16).view(ml_dtypes.bfloat16))
    assert bits_of(m, "BF", "bf")[:2] == [0x7F81, 0x8000]


# ----------------------------------------------------------------- Machine.write: integer variables
DECL_INTS = "".join(f".decl {t.upper()} v_type=G type={t} num_elts=2 align=GRF\n"
                    for t in ("d", "ud", "b", "ub", "w", "uw", "q", "uq"))


@pytest.mark.parametrize("var,arr,lo,hi", [
    ("D", np.array([2 ** 32 - 1], np.uint32), -2 ** 31, 2 ** 31 - 1),
    ("UD", np.array([-1], np.int32), 0, 2 ** 32 - 1),
    ("B", np.array([200], np.uint8), -128, 127),
    ("UB", np.array([-1], np.int8), 0, 255),
    ("W", np.array([40000], np.uint16), -32768, 32767),
    ("Q", np.array([2 ** 64 - 1], np.uint64), -2 ** 63, 2 ** 63 - 1),
    ("UQ", np.array([-1], np.int64), 0, 2 ** 64 - 1),
])
def test_write_same_width_integers_out_of_range(var, arr, lo, hi):
    """The same bits, another value: a uint32 4294967295 is not the D value -1 (2_datatypes.md type ranges)."""
    m = machine(DECL_INTS)
    with pytest.raises(InvalidValue, match="fit") as e:
        m.write(var, arr)
    assert e.value.values["range"] == [lo, hi]
    assert e.value.values["value"] == int(arr[0])


def test_write_integers_exact():
    m = machine(DECL_INTS)
    m.write("UQ", np.array([2 ** 64 - 1, 0], np.uint64))
    assert m.read("UQ").tolist() == [2 ** 64 - 1, 0]
    m.write("D", np.array([2 ** 31 - 1, -2 ** 31], np.int64))
    assert m.read("D").tolist() == [2 ** 31 - 1, -2 ** 31]
    m.write("UB", np.array([3.0, 255.0]))
    assert m.read("UB").tolist() == [3, 255]
    m.write("W", np.array([-7, 1], ml_dtypes.bfloat16))
    assert m.read("W").tolist() == [-7, 1]
    m.write("Q", [2 ** 62 + 1, -1])                                  # exact: no detour through float64
    assert m.read("Q").tolist() == [2 ** 62 + 1, -1]
    with pytest.raises(InvalidValue, match="fit") as e:
        m.write("Q", [2 ** 63 + 1, -1])
    assert e.value.values["value"] == 2 ** 63 + 1
    for bad in (np.array([2.5]), np.array([np.inf]), np.array([np.nan]), [Fraction(1, 2)]):
        with pytest.raises(InvalidValue, match="fit"):
            m.write("D", bad)


# ----------------------------------------------------------------- the host's FP environment
FTZ, DAZ = 1 << 15, 1 << 6


@pytest.mark.skipif(fpenv.read() is None, reason="MXCSR is not accessible on this host")
def test_write_ignores_callers_ftz_daz():
    """torch.set_flush_denormal(True) sets MXCSR.FTZ/DAZ; Machine.write must still keep denormals."""
    x = 1e-40
    k, r = divmod(Fraction(x) * 2 ** 149, 1)                          # F denormal: units of 2**-149
    k += 1 if 2 * r > 1 or (2 * r == 1 and k % 2) else 0
    tiny32 = np.array([2.0 ** -130], np.float32)       # a float32 denormal
    saved = fpenv.read()
    fpenv.write(fpenv.DEFAULT | FTZ | DAZ)
    try:
        m = machine(DECL_FLOATS + DECL_INTS.replace(".decl D ", ".decl DD "))
        m.write("F", np.array([x]))
        got = bits_of(m, "F", "f")[0]
        m.write("BF", tiny32)
        got_bf = bits_of(m, "BF", "bf")[0]
        with pytest.raises(InvalidValue, match="fit"):
            m.write("DD", tiny32)                                     # 2**-130 is not an integer
        after = fpenv.read()
    finally:
        fpenv.write(saved)
    assert after & 0xFFC0 == (fpenv.DEFAULT | FTZ | DAZ) & 0xFFC0    # the caller's MXCSR restored
    assert got == int(k) == 71362
    assert got_bf == 2 ** (133 - 130)                                 # bf denormal: units of 2**-133


# ----------------------------------------------------------------- the sign of an exact zero (IEEE 754-2019 6.3)
def _zero_sign_case(mode: str):
    from systolic.visa import alu
    from systolic.visa.interp import run
    src = "".join(f".decl {n} v_type=G type=f num_elts=8 align=GRF\n" for n in ("X", "Y", "Z", "A", "B", "C", "M"))
    src += ("add (M1, 8) Z(0,0)<1> X(0,0)<1;1,0> Y(0,0)<1;1,0>\n"
            "mad (M1, 8) M(0,0)<1> A(0,0)<1;1,0> B(0,0)<1;1,0> C(0,0)<1;1,0>\n")
    nz = -0.0
    x = np.array([1.0, 2.5, -3.0, 1e-30, 0.0, nz, 0.0, nz], np.float32)
    y = np.array([-1.0, -2.5, 3.0, -1e-30, nz, 0.0, 0.0, nz], np.float32)
    a = np.array([2.0, -2.0, 0.0, nz, 0.0, 3.0, 0.0, nz], np.float32)
    b = np.array([3.0, 3.0, 5.0, 5.0, 5.0, 0.5, 5.0, 5.0], np.float32)
    c = np.array([-6.0, 6.0, nz, 0.0, 0.0, -1.5, nz, nz], np.float32)
    m = run(asm.parse(src), inputs=dict(X=x, Y=y, A=a, B=b, C=c),
            model=alu.FloatModel(name=mode, rounding=mode))
    return m.read("Z"), m.read("M")


@pytest.mark.parametrize("mode", ["rne", "rtz", "rup", "rdn"])
def test_exact_zero_sum_sign(mode):
    """x + (-x), +0 + -0 and a fused a*b + c that is exactly zero: +0, except -0 under roundTowardNegative;
    zeros of one sign keep it (-0 + -0 = -0, +0 + +0 = +0) in every mode. All results are zeros."""
    z, mad = _zero_sign_case(mode)
    opp = mode == "rdn"                               # the sign of an exact zero from opposite-sign operands
    assert (z == 0).all() and (mad == 0).all()
    # add: six opposite-sign pairs, then +0 + +0, -0 + -0
    assert np.signbit(z).tolist() == [opp] * 6 + [False, True]
    # mad: 6-6, -6+6, (+0)+(-0), (-0)+(+0), (+0)+(+0), 1.5-1.5, (+0)+(-0), (-0)+(-0)
    assert np.signbit(mad).tolist() == [opp, opp, opp, opp, False, opp, opp, True]


# ----------------------------------------------------------------- asm.immediate_from_value
def test_immediate_integer_types_refuse_non_integers():
    from systolic.errors import IllegalInstruction
    from systolic.visa.asm import immediate_from_value
    for value, t in ((1.5, "d"), (2.7, "ud"), (np.float32(1.5), "w"), (Fraction(7, 2), "q"), (-0.5, "b"),
                     (float("nan"), "d"), (float("inf"), "ud"), (1.5, "v")):
        with pytest.raises(IllegalInstruction, match="integer value"):
            immediate_from_value(value, t)
    # integral values of any number type are exact
    assert immediate_from_value(4.0, "d").low == 4
    assert immediate_from_value(np.float32(-3.0), "d").low == 2 ** 32 - 3          # two's complement bits
    assert immediate_from_value(np.uint64(2 ** 64 - 1), "uq").low == 0xFFFFFFFF
    assert immediate_from_value(np.uint64(2 ** 64 - 1), "uq").high == 0xFFFFFFFF
    assert immediate_from_value(Fraction(10, 2), "ub").low == 5
    with pytest.raises(InvalidValue):
        immediate_from_value("3", "d")


def test_immediate_float_types_take_numpy_scalars_exactly():
    from systolic.visa.asm import immediate_from_value
    assert immediate_from_value(np.float32(1.5), "f").low == 0x3FC00000
    assert immediate_from_value(np.float16(-2.0), "hf").low == 0xC000
    assert immediate_from_value(np.float32(-0.0), "f").low == 0x80000000
    assert immediate_from_value(ml_dtypes.bfloat16(-2.0), "f").low == 0xC0000000
    assert immediate_from_value(np.float32("nan"), "bf").low == 0x7FC0                 # the default quiet NaN
    assert immediate_from_value(np.float32("-inf"), "hf").low == 0xFC00
    # a float32 just above a bf tie rounds up (one rounding from the exact value)
    x = Fraction(1) + Fraction(1, 2 ** 8) + Fraction(1, 2 ** 23)
    assert immediate_from_value(np.float32(float(x)), "bf").low == rne_bits(x, "bf") == 0x3F81
    assert immediate_from_value(Fraction(1, 3), "bf").low == rne_bits(Fraction(1, 3), "bf")


# ----------------------------------------------------------------- BF arithmetic computes in F up to Xe3
def _bf_mad(platform: str, **model):
    from systolic.visa import alu
    from systolic.visa.interp import run
    src = "".join(f".decl {n} v_type=G type=bf num_elts=16 align=GRF\n" for n in ("A", "B", "C", "D"))
    src += "mad (M1, 1) D(0,0)<1> A(0,0)<0;1,0> B(0,0)<0;1,0> C(0,0)<0;1,0>\n"
    ins = {k: np.array([v], ml_dtypes.bfloat16) for k, v in (("A", 7 / 8), ("B", 37 / 32), ("C", -2.0 ** -30))}
    m = run(asm.parse(src), platform, inputs=ins, model=alu.FloatModel(**model))
    return int(m.read("D").view(np.uint16)[0])


def test_bf_mad_rounds_through_f_before_xe3p():
    """IGC gives BF sources execution type F up to Xe3 (G4_INST::getExecType2; fixBFMixedMode: "pure bfloat16
    operands are not supported"), so the fused result is rounded to F, then to BF.

    7/8 * 37/32 - 2**-30 = 259/256 - 2**-30. F (ulp 2**-23 here) rounds it to 259/256 = 1 + 2**-7 + 2**-8,
    the BF midpoint between 1 + 2**-7 (odd) and 1 + 2**-6 (even): 0x3f82. Rounded once it lies below the
    midpoint: 0x3f81 (the model with via_execution_type=False, and xe3p, which has pure-BF arithmetic)."""
    exact = Fraction(7, 8) * Fraction(37, 32) - Fraction(1, 2 ** 30)
    assert exact == Fraction(259, 256) - Fraction(1, 2 ** 30)
    assert rne_bits(exact, "f") == rne_bits(Fraction(259, 256), "f")          # F lands on the BF midpoint
    twice, once = rne_bits(Fraction(259, 256), "bf"), rne_bits(exact, "bf")
    assert (twice, once) == (0x3F82, 0x3F81)
    for platform in ("dg2", "pvc", "bmg", "lnl"):
        assert _bf_mad(platform) == twice, platform
        assert _bf_mad(platform, via_execution_type=False) == once, platform
    assert _bf_mad("xe3p") == once


def test_write_fractions_round_once():
    """A decimal literal read exactly: 1.00390625000000000001 is above the bf tie 1 + 2**-8 (float64 would
    drop the tail and round the tie to even, 1.0)."""
    m = machine(DECL_FLOATS)
    x = Fraction("1.00390625000000000001")
    assert float(x) == 1.00390625
    m.write("BF", [x, Fraction(-1, 3), -0.0, 2 ** 60 + 2 ** 52 + 1])
    assert bits_of(m, "BF", "bf") == [rne_bits(x, "bf"), 0x8000 | rne_bits(Fraction(1, 3), "bf"), 0x8000,
                                      rne_bits(Fraction(2 ** 60 + 2 ** 52 + 1), "bf")]
    assert rne_bits(x, "bf") == 0x3F81
    m.write("HF", [Fraction(1, 3), float("nan")])
    assert bits_of(m, "HF", "hf")[0] == rne_bits(Fraction(1, 3), "hf")
    assert np.isnan(m.read("HF")[1])
