"""DPAS rules: OPS_PER_CHAN, legal combinations, alignment, exec size, DPASW (visa-DPAS.md; IsaVerification.cpp)."""

import ml_dtypes
import numpy as np
import pytest

from systolic.errors import IllegalInstruction, InvalidValue, SystolicError
from systolic.xmx import GRF, dpas, dpasw
from systolic.xmx.rules import ops_per_chan


# the table of visa-DPAS.md "OPS_PER_CHAN" and IGC's getDpasOpsPerChan, written out
@pytest.mark.parametrize("p1,p2,ops", [
    ("bf16", "bf16", 2), ("fp16", "fp16", 2), ("tf32", "tf32", 1), ("bf8", "hf8", 4), ("hf8", "hf8", 4),
    ("s8", "s8", 4), ("u8", "s4", 4), ("s2", "u8", 4), ("s4", "s4", 8), ("u4", "s2", 8), ("s2", "u2", 8),
    ("e2m1", "e2m1", 8)])
def test_ops_per_chan(p1, p2, ops):
    assert ops_per_chan(p1, p2) == ops


def _call(platform="pvc", grf=None, **kw):
    g = GRF(platform) if grf is None else grf
    gb = g.grf_bytes
    args = dict(dst=64 * gb, src0=32 * gb, src1=16 * gb, src2=0, dst_type="f", src1_precision="bf",
                src2_precision="bf", rc=8)
    args.update(kw)
    return dpas(g, **args)


@pytest.mark.parametrize("platform,kw,rule_word", [
    ("dg2", dict(src1_precision="tf32", src2_precision="tf32"), "precisions"),
    ("pvc", dict(src1_precision="bf8", src2_precision="bf8"), "precisions"),
    ("pvc", dict(src1_precision="bf", src2_precision="hf"), "consistent"),
    ("pvc", dict(src1_precision="s8", src2_precision="bf"), "consistent"),
    ("pvc", dict(src1_precision="s8", src2_precision="s8", dst_type="f"), "legal"),
    ("pvc", dict(dst_type="d"), "legal"),
    ("pvc", dict(dst_type="hf"), "legal"),                 # bf precisions take F or BF, not HF
    ("dg2", dict(dst_type="bf", dst=64 * 32, src0=32 * 32, src1=16 * 32), "legal"),  # no BF Dst before PVC
    ("pvc", dict(src1_precision="tf32", src2_precision="tf32", dst_type="bf"), "legal"),
    ("pvc", dict(sd=4), "systolic depth of 8"),
    ("pvc", dict(sd=3), "SD encodings"),
    ("pvc", dict(rc=0), "repeat count"),
    ("pvc", dict(rc=9), "repeat count"),
    ("pvc", dict(exec_size=8), "exec size"),
    ("dg2", dict(exec_size=16, dst=64 * 32, src0=32 * 32, src1=16 * 32), "exec size"),
    ("pvc", dict(dst=64 * 64 + 4), "aligned"),
    ("pvc", dict(src0=32 * 64 + 32), "aligned"),
    ("pvc", dict(src1=16 * 64 + 32), "GRF-aligned"),
    ("pvc", dict(src2=16), "Src2"),
    ("pvc", dict(src1_precision="u1", src2_precision="u1"), "precision"),
    ("pvc", dict(dst=127 * 64), "register file"),
    ("pvc", dict(src2=126 * 64), "register file"),
    ("pvc", dict(dst=-64), "offset"),
    ("pvc", dict(dst=1.5), "offset"),
])
def test_rule_violations_raise_illegal_instruction(platform, kw, rule_word):
    with pytest.raises(IllegalInstruction) as e:
        _call(platform, **kw)
    assert rule_word.lower() in (e.value.rule or "").lower() + str(e.value).lower()
    assert e.value.values


def test_src2_alignment_follows_the_formula():
    # SD * bits * OPS / 8: s8 -> 32 bytes, s4 with s8 Src1 (OPS 4) -> 16 bytes, s2 with s8 Src1 -> 8 bytes
    g = GRF("dg2")
    for p2, align in (("s8", 32), ("s4", 16), ("s2", 8)):
        dpas(g, dst=2048, src0=None, src1=1024, src2=align, dst_type="d", src1_precision="s8", src2_precision=p2)
        if align > 8:
            with pytest.raises(IllegalInstruction):
                dpas(g, dst=2048, src0=None, src1=1024, src2=align // 2, dst_type="d", src1_precision="s8",
                     src2_precision=p2)


def test_bf16_dst_row_is_half_a_grf_on_pvc():
    # Dst/Src0 are packed, exec_size * sizeof(type) per row (G4_IR computeRightBound): 32 bytes for BF, so
    # row r of an rc=8 BF Dst at GRF 64 + 32 bytes lands at byte 64*64 + 32 + 32*r (rows 1, 3, 5, 7 start GRFs
    # 65..68) and nothing else in the file changes. The operand images are built here from the manual's layout:
    # Src2 = A row-major; Src1 GRF m, dword i = (B[2m, i], B[2m+1, i]) low half first; Src0 = C rows packed.
    rng = np.random.default_rng(5)
    A = rng.integers(-3, 4, (8, 16))
    B = rng.integers(-3, 4, (16, 16))
    C = rng.integers(-8, 9, (8, 16))
    # integers of magnitude <= 16*9 + 8 < 256: exact in bf16 and in fp32 under any rounding of the stages
    D = [[int(C[r, i]) + sum(int(A[r, k]) * int(B[k, i]) for k in range(16)) for i in range(16)] for r in range(8)]

    def bf16_bytes(x):
        return np.asarray(x, dtype=np.float64).astype(ml_dtypes.bfloat16).view(np.uint16).astype("<u2").tobytes()

    g = GRF("pvc")
    g.data[:] = 0xA5                                          # sentinel everywhere
    g.data[0:8 * 16 * 2] = np.frombuffer(bf16_bytes(A), np.uint8)
    src1 = np.frombuffer(bf16_bytes(B.reshape(8, 2, 16).transpose(0, 2, 1)), np.uint8)
    g.data[16 * 64:16 * 64 + src1.size] = src1
    src0, dst = 32 * 64 + 32, 64 * 64 + 32
    g.data[src0:src0 + 8 * 32] = np.frombuffer(bf16_bytes(C), np.uint8)
    before = g.data.copy()
    _call("pvc", grf=g, dst_type="bf", src0_type="bf", dst=dst, src0=src0)
    for r in range(8):
        assert g.data[dst + 32 * r:dst + 32 * (r + 1)].tobytes() == bf16_bytes(D[r]), r
    changed = np.flatnonzero(g.data != before)
    assert changed.min() >= dst and changed.max() < dst + 8 * 32
    assert (g.data[64 * 64:dst] == 0xA5).all()                  # the first half of GRF 64 is untouched


def test_dpasw_rules():
    g, h = GRF("dg2"), GRF("dg2")
    kw = dict(dst=64 * 32, src0=None, src1=16 * 32, src2=0, dst_type="f", src1_precision="bf", src2_precision="bf")
    dpasw(g, pair=h, **kw)
    with pytest.raises(IllegalInstruction) as e:
        dpasw(GRF("pvc"), pair=GRF("pvc"), **{**kw, "dst": 64 * 64, "src1": 16 * 64})
    assert "DPASW" in str(e.value)
    with pytest.raises(IllegalInstruction):
        dpasw(g, pair=None, **kw)


# ---- argument validation: numpy integers are integers; bools, floats, strings and non-GRFs are typed errors

@pytest.mark.parametrize("field", ["rc", "sd"])
@pytest.mark.parametrize("kind", [np.int8, np.int64, np.uint16, int])
def test_integer_fields_accept_numpy_integers(field, kind):
    s = _call("pvc", **{field: kind(8)})
    assert (s.rc, s.sd, s.K) == (8, 8, 16) and type(getattr(s, field)) is int
    s = _call("pvc", dst=np.int64(64 * 64), src1=np.uint32(16 * 64), exec_size=np.int16(16))
    assert s.exec_size == 16


@pytest.mark.parametrize("field,value", [("rc", True), ("rc", 8.0), ("rc", "8"), ("sd", np.bool_(True)),
                                         ("exec_size", 16.0), ("dst", True), ("src1", np.float64(1024))])
def test_integer_fields_reject_bools_floats_strings(field, value):
    with pytest.raises(IllegalInstruction) as e:
        _call("pvc", **{field: value})
    assert e.value.values.get(field) is value


def test_dpas_and_dpasw_need_a_grf():
    kw = dict(dst=0, src0=None, src1=0, src2=0, src1_precision="bf", src2_precision="bf")
    for bad in (None, np.zeros(8192, np.uint8), "pvc"):
        with pytest.raises(InvalidValue) as e:
            dpas(bad, **kw)
        assert e.value.values == {"grf": type(bad).__name__}
        with pytest.raises(SystolicError):
            dpasw(bad, pair=GRF("dg2"), **kw)


def test_grf_rejects_non_numeric_values_and_counts():
    g = GRF("pvc")
    for bad in (np.array([None]), ["a", "b"], np.array(["2020-01-01"], dtype="datetime64[D]")):
        with pytest.raises(InvalidValue):
            g.write(0, bad)
    assert not g.data.any()
    for n in ("x", 128.0, True, None.__class__):
        with pytest.raises(InvalidValue) as e:
            GRF("pvc", n)
        assert "num_grf" in e.value.values
    assert GRF("pvc", np.int32(256)).size == 256 * 64


def test_element_bits_rounds_once_and_checks_integers_as_given():
    """Values are rounded once from their exact value (worked by hand), and integer elements are range-checked
    before any cast: 2**60 + 2**52 + 1 is above the bf16 midpoint between 2**60 and 2**60 + 2**53 (through
    float64 it became the midpoint and rounded to even, 2**60); 1 + 2**-11 + 2**-40 is above the tf32 midpoint
    (through float32 it became the midpoint, 1.0); uint64 2**64 - 1 once wrapped to -1, an s8 value."""
    from systolic.errors import InvalidValue
    from systolic.xmx.pack import element_bits
    big = np.array([2 ** 60 + 2 ** 52 + 1, -(2 ** 60 + 2 ** 52 + 1)], dtype=np.int64)
    assert element_bits(big, "bf16").tolist() == [(187 << 7) | 1, 0x8000 | (187 << 7) | 1]
    assert element_bits(np.array([1 + 2.0 ** -11 + 2.0 ** -40]), "tf32").tolist() == [0x3F802000]
    assert element_bits(np.array([1 + 2.0 ** -11]), "tf32").tolist() == [0x3F800000]       # a tie: to even
    assert element_bits(np.float32([1 + 2.0 ** -11 + 2.0 ** -20]), "tf32").tolist() == [0x3F802000]
    with pytest.raises(InvalidValue, match="out of range for s8"):
        element_bits(np.array([2 ** 64 - 1], dtype=np.uint64), "s8")
    assert element_bits(np.array([-128, 127, -1], dtype=np.int64), "s8").tolist() == [0x80, 0x7F, 0xFF]


def test_element_bits_and_pack_acc_take_lists_and_objects_exactly():
    """A list mixing floats and big ints is not made float64 first (numpy would): 2**60 + 2**52 + 1 to bf16 is
    2**60 + 2**53 (above the midpoint; worked by hand: exponent 60 + 127 = 187, fraction 1). pack_acc rounds an
    fp32 C once: 2**100 + 2**76 + 1 is above the midpoint of the fp32 quantum 2**77 at 2**100 (float64 made it
    the midpoint, then 2**100); 2**60 + 2**36 + 1 likewise with quantum 2**37."""
    from systolic.xmx.pack import element_bits, pack_acc
    w = 2 ** 60 + 2 ** 52 + 1
    assert element_bits([[w, 0.5]], "bf16").tolist() == [[(187 << 7) | 1, 0x3F00]]
    got = pack_acc(np.array([[2 ** 100 + 2 ** 76 + 1]], dtype=object), "fp32").view(np.float32)
    assert int(got[0]) == 2 ** 100 + 2 ** 77
    got = pack_acc([[0.5, 2 ** 60 + 2 ** 36 + 1]], "fp32").view(np.float32)
    assert [int(v) for v in got[1:]] == [2 ** 60 + 2 ** 37]


def test_element_bits_refuses_non_integers_for_integer_precisions():
    """An integer element is an integer as given: a Fraction, a float or a long double with a fraction part is
    refused (7/2 had been truncated to 3; long double 1 + 2**-60 rounded to the float64 1.0 and passed)."""
    from fractions import Fraction

    from systolic.xmx.pack import element_bits
    for bad in (np.array([Fraction(1, 2), Fraction(7, 2)], dtype=object), np.array([1.0, 2.5]),
                np.array([1.0, np.nan]), np.array([3, "x"], dtype=object), np.array([2, float("inf")], dtype=object)):
        with pytest.raises(InvalidValue, match="s8 values must be integers"):
            element_bits(bad, "s8")
    if np.finfo(np.longdouble).nmant > 52:
        with pytest.raises(InvalidValue, match="must be integers"):
            element_bits(np.array([np.longdouble(1) + np.longdouble(2) ** -60]), "s8")
    # integral values of any kind pass, exactly: 4/2 -> 2, 3.0 -> 3, -5 -> 0xFB (two's complement)
    ok = np.array([Fraction(4, 2), 3.0, np.int8(-5), True], dtype=object)
    assert element_bits(ok, "s8").tolist() == [2, 3, 0xFB, 1]
    assert element_bits(np.array([np.longdouble(-128), np.longdouble(127)]), "s8").tolist() == [0x80, 0x7F]


@pytest.mark.skipif(__import__("systolic.fpenv").fpenv.read() is None, reason="MXCSR is not accessible")
def test_element_bits_and_pack_acc_ignore_the_callers_ftz_daz():
    """Under MXCSR.FTZ|DAZ (torch.set_flush_denormal) float32 1e-45 (2**-149, not an integer) must still be
    refused as an s8 element, and an fp32 C of float64 1e-40 must keep its subnormal fp32 value: the nearest
    multiple of 2**-149, worked with Fractions."""
    from fractions import Fraction

    from systolic import fpenv
    from systolic.xmx.pack import element_bits, pack_acc
    want = round(Fraction(1e-40) * 2 ** 149)  # subnormal fp32 bits = the value in units of 2**-149 (RNE)
    tiny = np.array([1e-45], np.float32)  # made before FTZ is set: its own conversion from 1e-45 would flush
    assert tiny.view(np.uint32)[0] == 1
    saved = fpenv.read()
    fpenv.write(fpenv.DEFAULT | (1 << 15) | (1 << 6))
    try:
        with pytest.raises(InvalidValue, match="must be integers"):
            element_bits(tiny, "s8")
        got = int(pack_acc(np.array([[1e-40]]), "fp32").view(np.uint32)[0])
    finally:
        fpenv.write(saved)
    assert got == want


def test_float_c_beyond_2_53_must_be_an_fp32_value():
    """xmx.matmul's C must hold fp32 values exactly; past 2**53 float64 cannot decide it (2**60 + 1 and its fp32
    rounding 2**60 are equal in float64). By hand: an fp32 value has at most 24 significant bits, so 2**60 + 1
    (61 bits), 2**64 - 1 (64) and 2**100 + 1 are not; 2**60, 2**64 - 2**40 (= 2**40 * (2**24 - 1)) and -(2**63)
    are, and come back unchanged in D (A = B = 0)."""
    from systolic.xmx import matmul
    a = np.zeros((8, 16), ml_dtypes.bfloat16)
    b = np.zeros((16, 16), ml_dtypes.bfloat16)

    def c_with(v, dtype):
        c = np.zeros((8, 16), dtype)
        c[0, 0] = v
        return c

    for v, dt in ((2 ** 60 + 1, np.int64), (2 ** 64 - 1, np.uint64), (2 ** 100 + 1, object),
                  (-(2 ** 62) - 1, np.int64)):
        with pytest.raises(InvalidValue, match="exact fp32"):
            matmul(a, b, c_with(v, dt))
    with pytest.raises(InvalidValue, match="exact fp32"):
        matmul(a, b, [[2 ** 60 + 1] + [0.5] * 15] + [[0.0] * 16] * 7)  # a list: not made float64 first
    for v, dt in ((2 ** 60, np.int64), (2 ** 64 - 2 ** 40, np.uint64), (-(2 ** 63), np.int64), (2 ** 100, object)):
        assert int(matmul(a, b, c_with(v, dt))[0, 0]) == v
    if np.finfo(np.longdouble).nmant > 52:
        with pytest.raises(InvalidValue, match="exact fp32"):
            matmul(a, b, c_with(np.longdouble(1) + np.longdouble(2) ** -60, np.longdouble))
        assert float(matmul(a, b, c_with(np.longdouble(1.5), np.longdouble))[0, 0]) == 1.5


# the audit's wording findings: each refusal says the rule that actually refuses
@pytest.mark.parametrize("p", ["u1", "s1"])
def test_one_bit_precisions_are_listed_but_not_modelled(p):
    """visa-DPAS.md's precision table lists u1/s1: the refusal is "no modelled platform", not "not a precision"."""
    with pytest.raises(IllegalInstruction) as e:
        _call("pvc", src1_precision=p, src2_precision=p)
    assert "not a DPAS operand precision" not in str(e.value)
    assert e.value.message == f"no modelled platform takes the 1-bit DPAS precision {p}"
    assert "lists u1/s1" in e.value.rule and e.value.values == {"precision": p}


@pytest.mark.parametrize("what", ["dst_type", "src0_type"])
def test_df_accumulator_is_listed_but_not_implemented(what):
    """visa-DPAS.md: Dst/Src0 "Must have type D,UD,F,BF,HF,DF": DF is listed, but no DF DPAS exists."""
    with pytest.raises(IllegalInstruction) as e:
        _call("pvc", **{what: "df"})
    assert "lists DF" in e.value.rule and "must have type D,UD,F,BF,HF" not in e.value.rule
    assert e.value.values == {what.split("_")[0]: "df"}
