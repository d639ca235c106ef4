"""The interpreter: SIMD semantics, regions, indirect access, predication, ALU numerics, DPAS."""

import os
import math
import struct
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from systolic import packing
from systolic.errors import IllegalInstruction, SystolicError
from systolic.visa import asm, run_text
from systolic.visa.interp import Machine
from systolic.xmx.dpas import dpas as xmx_dpas
from systolic.xmx.grf import GRF

SOAK = int(os.environ.get("SYSTOLIC_SOAK", "1"))  # long runs: SYSTOLIC_SOAK=50


def f32(x):
    return np.float32(x)


def bits32(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


# ----------------------------------------------------------------- the spec's figures
def test_figure3_general_regions():
    """fig3: add(16) V3(0,0)<2> V1(0,1)<16;8,2> V2(1,0)<0;1,0> with a 32-byte GRF."""
    prog = """
.decl V1 v_type=G type=ub num_elts=32
.decl V2 v_type=G type=ub num_elts=64
.decl V3 v_type=G type=w num_elts=32
add (M1, 16) V3(0,0)<2> V1(0,1)<16;8,2> V2(1,0)<0;1,0>
"""
    v1 = np.arange(32, dtype=np.uint8) * 3
    v2 = np.arange(64, dtype=np.uint8) + 100
    m = run_text(prog, "dg2", {"V1": v1, "V2": v2})
    want = np.zeros(32, np.int16)
    for c in range(16):
        want[2 * c] = int(v1[1 + (c // 8) * 16 + (c % 8) * 2]) + int(v2[32])
    assert m.read("V3").tolist() == want.tolist()


def test_figure4_indirect_regions():
    """fig4: add(4) V3(0,0)<1> r[A0(0),0]<4;4,1> r[A1(0),0]<1,0> (single- and multi-address)."""
    prog = """
.decl V1 v_type=G type=f num_elts=8
.decl V2 v_type=G type=f num_elts=16
.decl V3 v_type=G type=f num_elts=8
.decl OFF v_type=G type=uw num_elts=4
.decl A0 v_type=A num_elts=1
.decl A1 v_type=A num_elts=4
addr_add (M1, 1) A0(0) &V1 0x0:uw
addr_add (M1, 4) A1(0) &V2 OFF(0,0)<1;1,0>
add (M1, 4) V3(0,0)<1> r[A0(0),0]<4;4,1>:f r[A1(0),0]<1,0>:f
"""
    v1 = np.arange(8, dtype=np.float32) + 0.5
    v2 = np.arange(16, dtype=np.float32) * 10
    off = np.array([12, 0, 36, 60], dtype=np.uint16)
    m = run_text(prog, "dg2", {"V1": v1, "V2": v2, "OFF": off})
    assert m.read("V3")[:4].tolist() == [v1[i] + v2[off[i] // 4] for i in range(4)]


# ----------------------------------------------------------------- SIMD, masks, predication
DECL16 = """
.decl X v_type=G type=d num_elts=16 align=GRF
.decl Y v_type=G type=d num_elts=16 align=GRF
.decl P1 v_type=P num_elts=32
"""


def test_simd_add_and_packed_vector():
    m = run_text(DECL16 + "add (M1, 8) Y(0,0)<1> X(0,0)<1;1,0> 0x76543210:v\n", "pvc",
                 {"X": np.arange(16) * 10})
    assert m.read("Y").tolist() == [i * 10 + i for i in range(8)] + [0] * 8


def test_predicated_mov_and_inverse_any_all():
    x = np.array([5, -1, 7, -3, 0, 2, -8, 9, 1, 1, 1, 1, 1, 1, 1, 1])
    base = DECL16 + "cmp.lt (M1, 16) P1 X(0,0)<1;1,0> 0x0:d\n"
    m = run_text(base + "(P1) mov (M1, 16) Y(0,0)<1> 0x1:d\n", "pvc", {"X": x})
    assert m.read("Y").tolist() == [1 if v < 0 else 0 for v in x]
    assert m.read("P1")[:16].tolist() == [bool(v < 0) for v in x]
    m = run_text(base + "(!P1) mov (M1, 16) Y(0,0)<1> 0x1:d\n", "pvc", {"X": x})
    assert m.read("Y").tolist() == [0 if v < 0 else 1 for v in x]
    m = run_text(base + "(P1.any) mov (M1, 16) Y(0,0)<1> 0x1:d\n", "pvc", {"X": x})
    assert m.read("Y").tolist() == [1] * 16
    m = run_text(base + "(P1.all) mov (M1, 16) Y(0,0)<1> 0x1:d\n", "pvc", {"X": x})
    assert m.read("Y").tolist() == [0] * 16
    m = run_text(base + "(!P1.all) mov (M1, 16) Y(0,0)<1> 0x1:d\n", "pvc", {"X": x})
    assert m.read("Y").tolist() == [1] * 16


def test_mask_offset_and_em():
    # M3: channels read predicate elements 8.. and EM bits 8..
    p = DECL16 + "setp (M1_NM, 32) P1 0x0000aa00:ud\n(P1) mov (M3, 8) Y(0,0)<1> 0x1:d\n"
    assert run_text(p, "pvc").read("Y")[:8].tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    m = run_text(DECL16 + "mov (M1, 16) Y(0,0)<1> 0x7:d\n", "pvc", em=0x00F0)
    assert m.read("Y").tolist() == [0] * 4 + [7] * 4 + [0] * 8
    m = run_text(DECL16 + "mov (M1_NM, 16) Y(0,0)<1> 0x7:d\n", "pvc", em=0x00F0)
    assert m.read("Y").tolist() == [7] * 16


def test_sel_uses_em_and_predicate():
    p = DECL16 + "setp (M1_NM, 16) P1 0x00f0:uw\n(P1) sel (M1, 8) Y(0,0)<1> 0x1:d 0x2:d\n"
    assert run_text(p, "pvc", em=0xFF7F).read("Y")[:8].tolist() == [2, 2, 2, 2, 1, 1, 1, 0]


def test_setp_general_and_predicate_logic():
    p = DECL16 + """
.decl P2 v_type=P num_elts=16
.decl P3 v_type=P num_elts=16
.decl U v_type=G type=ud num_elts=16
setp (M1_NM, 16) P2 U(0,0)<1;1,0>
setp (M1_NM, 16) P3 0x0ff0:uw
and (M1, 16) P1 P2 P3
"""
    x = np.arange(16)
    m = run_text(p, "pvc", {"U": x})
    assert m.read("P2").tolist() == [bool(v & 1) for v in x]
    assert m.read("P1")[:16].tolist() == [bool(v & 1) and 4 <= v < 12 for v in x]
    m = run_text(p.replace("and (M1, 16) P1 P2 P3", "not (M1, 16) P3 P2"), "pvc", {"U": x})
    assert m.read("P3").tolist() == [not (v & 1) for v in x]


def test_setp_mask_rule():
    with pytest.raises(IllegalInstruction, match="SETP.md"):
        run_text(DECL16 + "setp (M1, 16) P1 0x1:uw\n", "pvc")


# ----------------------------------------------------------------- integer arithmetic
@settings(max_examples=60 * SOAK, deadline=None)
@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=8, max_size=8),
       st.lists(st.integers(-2**31, 2**31 - 1), min_size=8, max_size=8))
def test_int_add_mul_mad_wrap(a, b):
    p = DECL16 + """
.decl S v_type=G type=d num_elts=8
.decl M v_type=G type=d num_elts=8
.decl D v_type=G type=d num_elts=8
add (M1, 8) S(0,0)<1> X(0,0)<1;1,0> Y(0,0)<1;1,0>
mul (M1, 8) M(0,0)<1> X(0,0)<1;1,0> Y(0,0)<1;1,0>
mad (M1, 8) D(0,0)<1> X(0,0)<1;1,0> Y(0,0)<1;1,0> X(0,0)<1;1,0>
"""
    m = run_text(p, "pvc", {"X": np.array(a, np.int32), "Y": np.array(b, np.int32)})

    def wrap(v):
        v &= 0xFFFFFFFF
        return v - (1 << 32) if v >> 31 else v
    assert m.read("S").tolist() == [wrap(x + y) for x, y in zip(a, b)]
    assert m.read("M").tolist() == [wrap(x * y) for x, y in zip(a, b)]
    assert m.read("D").tolist() == [wrap(x * y + x) for x, y in zip(a, b)]


def test_int_saturation_and_modifiers():
    p = """
.decl B v_type=G type=ub num_elts=8
.decl W v_type=G type=w num_elts=8
.decl R v_type=G type=ub num_elts=8
.decl S v_type=G type=w num_elts=8
add.sat (M1, 8) R(0,0)<1> B(0,0)<1;1,0> 0x80:uw
add (M1, 8) S(0,0)<1> (-abs)W(0,0)<1;1,0> 0x1:w
"""
    m = run_text(p, "dg2", {"B": np.array([0, 1, 100, 127, 128, 200, 255, 5], np.uint8),
                            "W": np.array([-5, 5, -32768, 0, 1, -1, 7, -7], np.int16)})
    assert m.read("R").tolist() == [128, 129, 228, 255, 255, 255, 255, 133]
    # -abs(-32768) = -32768 exactly, +1 -> -32767 (extra precision inside, then truncation)
    assert m.read("S").tolist() == [-4, -4, -32767, 1, 0, 0, -6, -6]


def test_shifts_mask_count():
    p = """
.decl A v_type=G type=d num_elts=4
.decl U v_type=G type=ud num_elts=4
.decl R1 v_type=G type=d num_elts=4
.decl R2 v_type=G type=ud num_elts=4
.decl R3 v_type=G type=d num_elts=4
shl (M1, 4) R1(0,0)<1> A(0,0)<1;1,0> 0x21:d
shr (M1, 4) R2(0,0)<1> U(0,0)<1;1,0> 0x4:d
asr (M1, 4) R3(0,0)<1> A(0,0)<1;1,0> 0x3:d
"""
    a = np.array([1, -1, 0x40000000, -256], np.int32)
    u = np.array([0xF0000000, 0xFF, 1, 0xFFFFFFFF], np.uint32)
    m = run_text(p, "dg2", {"A": a, "U": u})
    assert m.read("R1").tolist() == [2, -2, -2**31, -512]        # 33 & 31 = 1
    assert m.read("R2").tolist() == [0x0F000000, 0xF, 0, 0x0FFFFFFF]
    assert m.read("R3").tolist() == [0, -1, 0x08000000, -32]


def test_logic_and_not_modifier():
    p = DECL16 + "and (M1, 4) Y(0,0)<1> (~)X(0,0)<1;1,0> 0xff:d\nxor (M1, 4) Y(0,4)<1> X(0,0)<1;1,0> 0xf0f0:d\n"
    x = np.array([0x0F, 0x1234, -1, 0], np.int32)
    m = run_text(p, "pvc", {"X": x})
    assert m.read("Y")[:8].tolist() == [(~int(v)) & 0xFF for v in x] + [int(v) ^ 0xF0F0 for v in x]


# ----------------------------------------------------------------- float arithmetic
FLOATS = st.one_of(st.floats(width=32, allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 3.4028235e38, -3.4028235e38,
                                    float("inf"), float("-inf"), float("nan")]))
FDECL = """
.decl A v_type=G type=f num_elts=8
.decl B v_type=G type=f num_elts=8
.decl C v_type=G type=f num_elts=8
.decl S v_type=G type=f num_elts=8
.decl M v_type=G type=f num_elts=8
.decl F v_type=G type=f num_elts=8
.decl N v_type=G type=f num_elts=8
.decl X v_type=G type=f num_elts=8
add (M1, 8) S(0,0)<1> A(0,0)<1;1,0> B(0,0)<1;1,0>
mul (M1, 8) M(0,0)<1> A(0,0)<1;1,0> B(0,0)<1;1,0>
mad (M1, 8) F(0,0)<1> A(0,0)<1;1,0> B(0,0)<1;1,0> C(0,0)<1;1,0>
min (M1, 8) N(0,0)<1> A(0,0)<1;1,0> B(0,0)<1;1,0>
max (M1, 8) X(0,0)<1> A(0,0)<1;1,0> B(0,0)<1;1,0>
"""


def same(got, want):
    g, w = np.float32(got), np.float32(want)
    if np.isnan(w):
        return bool(np.isnan(g)) and g.view(np.uint32) == 0x7FC00000   # the model's default NaN
    return g.view(np.uint32) == w.view(np.uint32)


def rne_fp32(q: Fraction):
    """Independent oracle: nearest fp32 to an exact value (ties to even) by testing neighbours."""
    if abs(q) >= Fraction(2) ** 128 - Fraction(2) ** 103:
        return np.float32(np.inf if q > 0 else -np.inf)
    with np.errstate(all="ignore"):
        x = np.float32(float(q))
        cands = [x, np.nextafter(x, np.float32(np.inf)), np.nextafter(x, np.float32(-np.inf))]
    cands = [c for c in cands if np.isfinite(c)]
    return min(cands, key=lambda c: (abs(Fraction(float(c)) - q), int(c.view(np.uint32)) & 1))


@settings(max_examples=120 * SOAK, deadline=None)
@given(st.lists(FLOATS, min_size=8, max_size=8), st.lists(FLOATS, min_size=8, max_size=8),
       st.lists(FLOATS, min_size=8, max_size=8))
def test_float_ops_against_ieee_oracles(a, b, c):
    a, b, c = (np.array(v, np.float32) for v in (a, b, c))
    m = run_text(FDECL, "pvc", {"A": a, "B": b, "C": c})
    with np.errstate(all="ignore"):
        add, mul = a + b, a * b
    for i in range(8):
        assert same(m.read("S")[i], add[i]), (a[i], b[i])
        assert same(m.read("M")[i], mul[i]), (a[i], b[i])
        if np.isfinite([a[i], b[i], c[i]]).all():
            q = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
            want = rne_fp32(q)
            if q == 0:
                prod_neg = (math.copysign(1, a[i]) * math.copysign(1, b[i])) < 0
                prod_zero = a[i] == 0 or b[i] == 0
                want = np.float32(-0.0) if (prod_zero and prod_neg and math.copysign(1, c[i]) < 0) else np.float32(0)
            assert same(m.read("F")[i], want), (a[i], b[i], c[i])
        # MIN_MAX.md: a NaN loses to a number, two NaNs give src1
        if np.isnan(a[i]) and np.isnan(b[i]):
            assert np.isnan(m.read("N")[i]) and np.isnan(m.read("X")[i])
        elif np.isnan(a[i]) or np.isnan(b[i]):
            other = b[i] if np.isnan(a[i]) else a[i]
            assert same(m.read("N")[i], other) and same(m.read("X")[i], other)
        elif a[i] != b[i]:
            assert same(m.read("N")[i], min(a[i], b[i])) and same(m.read("X")[i], max(a[i], b[i]))


def test_min_max_signed_zero_and_fused_mad_example():
    m = run_text(FDECL, "pvc", {"A": np.array([0.0, -0.0, 1 + 2**-23] + [0] * 5, np.float32),
                                "B": np.array([-0.0, 0.0, 1 - 2**-23] + [0] * 5, np.float32),
                                "C": np.array([0, 0, -1] + [0] * 5, np.float32)})
    n, x, f = m.read("N"), m.read("X"), m.read("F")
    assert [math.copysign(1, v) for v in n[:2]] == [-1, -1] and [math.copysign(1, v) for v in x[:2]] == [1, 1]
    # (1+e)(1-e) - 1 = -e^2 exactly representable: fused, not 0 as an unfused mul+add gives
    assert f[2] == np.float32(-(2.0 ** -46))


def test_conversions():
    p = """
.decl F v_type=G type=f num_elts=8
.decl D v_type=G type=d num_elts=8
.decl UB v_type=G type=ub num_elts=8
.decl H v_type=G type=hf num_elts=8
.decl G v_type=G type=f num_elts=8
.decl I v_type=G type=d num_elts=8
mov (M1, 8) D(0,0)<1> F(0,0)<1;1,0>
mov (M1, 8) UB(0,0)<1> F(0,0)<1;1,0>
mov (M1, 8) H(0,0)<1> F(0,0)<1;1,0>
mov (M1, 8) G(0,0)<1> I(0,0)<1;1,0>
mov.sat (M1, 8) F(0,0)<1> F(0,0)<1;1,0>
"""
    fv = np.array([1.9, -1.9, 3e9, -3e9, np.nan, np.inf, 65520.0, 1e-8], np.float32)
    iv = np.array([2**24 + 1, 2**24 + 3, -(2**31), 7, 0, -1, 2**31 - 1, 123456789], np.int32)
    m = run_text(p, "pvc", {"F": fv, "I": iv})
    assert m.read("D").tolist() == [1, -1, 2**31 - 1, -(2**31), 0, 2**31 - 1, 65520, 0]
    assert m.read("UB").tolist() == [1, 0, 255, 0, 0, 255, 255, 0]
    with np.errstate(all="ignore"):
        want_h = fv.astype(np.float16)
    h = m.read("H")
    for i in range(8):
        assert (np.isnan(h[i]) and np.isnan(want_h[i])) or h[i].view(np.uint16) == want_h[i].view(np.uint16)
    assert m.read("G").tolist() == iv.astype(np.float32).tolist()  # numpy int32 -> fp32 is RNE
    assert m.read("F").tolist() == [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, np.float32(1e-8)]


def test_vf_immediate():
    p = ".decl F v_type=G type=f num_elts=4\nmov (M1, 4) F(0,0)<1> 0x7f30a000:vf\n"
    assert run_text(p, "pvc").read("F").tolist() == [0.0, -0.5, 1.0, 31.0]
    with pytest.raises(IllegalInstruction, match=":vf datatype is not supported"):
        run_text(p, "bmg")


# ----------------------------------------------------------------- rule violations at run time
@pytest.mark.parametrize("inst,rule", [
    ("add (M1, 16) Y(0,0)<1> X(0,0)<16;8,1> 0x1:d", "rule 6"),
    ("add (M1, 16) Y(0,1)<1> X(0,0)<1;1,0> 0x1:d", "outside its variable"),
    ("add (M1, 8) Y(0,8)<1> X(0,0)<1;1,0> 0x1:d", "GRF boundary"),
    ("add (M1, 16) Y(0,0)<1> 0x76543210:v 0x1:d", "packed-vector"),
    ("add (M1, 8) Y(0,0)<1> X(0,0)<1;1,0> 0x3f800000:f", "mix integer and float"),
    ("add (M8, 16) Y(0,0)<1> X(0,0)<1;1,0> 0x1:d", "exceeds 32"),
])
def test_runtime_rules_carry_line_and_column(inst, rule):
    with pytest.raises(SystolicError, match=rule) as e:
        run_text(".decl X v_type=G type=d num_elts=32 align=GRF\n.decl Y v_type=G type=d num_elts=16 align=GRF\n"
                 + inst + "\n", "dg2")
    assert str(e.value).startswith("3:1:")


def test_indirect_rules():
    base = """
.decl V v_type=G type=d num_elts=8 align=GRF
.decl W v_type=G type=d num_elts=8 align=GRF
.decl A v_type=A num_elts=2
"""
    with pytest.raises(IllegalInstruction, match="aligned"):
        run_text(base + "addr_add (M1, 1) A(0) &V 0x2:uw\nmov (M1, 1) W(0,0)<1> r[A(0),0]<0;1,0>:d\n", "dg2")
    with pytest.raises(IllegalInstruction, match="base general variable"):
        run_text(base + "addr_add (M1, 1) A(0) &V 0x0:uw\nmov (M1, 8) W(0,0)<1> r[A(0),4]<8;8,1>:d\n", "dg2")
    with pytest.raises(IllegalInstruction, match="past the end of its address variable"):
        run_text(base + "mov (M1, 8) W(0,0)<1> r[A(0),0]<2,1>:d\n", "dg2")
    # indirect destination, negative indirect offset
    m = run_text(base + "addr_add (M1, 1) A(0) &W 0x10:uw\nmov (M1, 4) r[A(0),-16]<1>:d 0x9:d\n", "dg2")
    assert m.read("W").tolist() == [9, 9, 9, 9, 0, 0, 0, 0]


def test_multi_address_destination_rejected():
    from systolic.visa.encoding import ImmediateOperand, IndirectOperand
    from systolic.visa.isa import TYPES, MaskControl
    from systolic.visa.program import Instruction
    p = asm.parse(".decl V v_type=G type=d num_elts=8\n.decl A v_type=A num_elts=2\n")
    bad = Instruction("mov", 2, MaskControl(0), IndirectOperand(0, 0, 0, TYPES["d"], None, 1, 1),
                      (ImmediateOperand(TYPES["d"], 1),))
    with pytest.raises(IllegalInstruction, match="Additional Region Restrictions"):
        Machine(p, "dg2").step(bad)


# ----------------------------------------------------------------- DPAS
GEMM_BF16 = """
.decl C v_type=G type=f num_elts=128 align=GRF
.decl B v_type=G type=ud num_elts=128 align=GRF
.decl A v_type=G type=ud num_elts=64 align=GRF
.decl D v_type=G type=f num_elts=128 align=GRF
dpas.bf.bf.8.8 (M1, 16) D.0 C.0 B.0 A(0,0)
"""


def test_dpas_bf16_micro_kernel_equals_xmx_and_exact_matmul():
    rng = np.random.default_rng(1)
    a = rng.integers(-8, 8, (8, 16)).astype(ml_dtypes.bfloat16)
    b = rng.integers(-8, 8, (16, 16)).astype(ml_dtypes.bfloat16)
    c = rng.integers(-100, 100, (8, 16)).astype(np.float32)
    ins = {"A": packing.pack_a(a, 16).ravel(), "B": packing.vnni_pack(b, 16).ravel(), "C": c.ravel()}
    m = run_text(GEMM_BF16, "pvc", ins)
    d = m.read("D").reshape(8, 16)
    # independent: small integers, every sum exact in fp32
    assert np.array_equal(d, c + a.astype(np.float64) @ b.astype(np.float64))
    # and the same bits as systolic.xmx.dpas on a register file with the same placement
    g = GRF("pvc")
    off = m.layout.offsets
    for n, v in ins.items():
        g.write(off[n], np.ascontiguousarray(v).view(np.uint8))
    xmx_dpas(g, dst=off["D"], src0=off["C"], src1=off["B"], src2=off["A"], dst_type="f", src1_precision="bf",
             src2_precision="bf", sd=8, rc=8)
    assert np.array_equal(g.read(off["D"], 512), m.grf.read(off["D"], 512))


def test_dpas_int8_dg2_null_src0():
    p = """
.decl B v_type=G type=d num_elts=64 align=GRF
.decl A v_type=G type=d num_elts=64 align=GRF
.decl D v_type=G type=d num_elts=64 align=GRF
dpas.s8.s8.8.8 (M1, 8) D.0 %null.0 B.0 A(0,0)
"""
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, (8, 32))
    b = rng.integers(-128, 128, (32, 8))
    m = run_text(p, "dg2", {"A": packing.pack_a(a.astype(np.int8), 8).view(np.int32).ravel(),
                            "B": packing.vnni_pack(b.astype(np.int8), 8).view(np.int32).ravel()})
    assert np.array_equal(m.read("D").reshape(8, 8), a @ b)


def test_dpas_rules_carry_line():
    with pytest.raises(IllegalInstruction, match="^7:1: ") as e:
        run_text(GEMM_BF16 + "dpas.bf.bf.8.8 (M1, 8) D.0 C.0 B.0 A(0,0)\n", "pvc")
    assert "exec" in str(e.value).lower()
    with pytest.raises(IllegalInstruction, match="D or UD"):
        run_text(GEMM_BF16.replace("type=ud num_elts=64", "type=f num_elts=64"), "pvc")


def test_mov_from_predicate_and_cmp_to_general():
    p = DECL16 + """
.decl U v_type=G type=ud num_elts=1
.decl UB v_type=G type=ub num_elts=1
cmp.ge (M1, 16) P1 X(0,0)<1;1,0> 0x3:d
mov (M1, 1) U(0,0)<1> P1
cmp.eq (M1, 16) Y(0,0)<1> X(0,0)<1;1,0> 0x3:d
"""
    x = np.array([0, 5, 3, 1, 9, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 7])
    m = run_text(p, "pvc", {"X": x})
    assert int(m.read("U")[0]) == sum(1 << i for i, v in enumerate(x) if v >= 3)
    assert m.read("Y").tolist() == [-1 if v == 3 else 0 for v in x]
    with pytest.raises(IllegalInstruction, match="at least as wide"):
        run_text(p.replace("mov (M1, 1) U(0,0)<1> P1", "mov (M1, 1) UB(0,0)<1> P1"), "pvc", {"X": x})


def test_address_operand_replicates_its_width():
    p = """
.decl V v_type=G type=d num_elts=16 align=GRF
.decl W v_type=G type=d num_elts=8 align=GRF
.decl A v_type=A num_elts=4
.decl B v_type=A num_elts=8
addr_add (M1, 4) A(0) &V 0x76543210:v
addr_add (M1, 8) B(0) A(1)<2> 0x0:uw
mov (M1, 8) W(0,0)<1> r[B(0),0]<1,0>:ub
"""
    m = run_text(p, "pvc", {"V": np.arange(16) * 2})
    base = m.layout.offsets["V"]
    assert m.read("A").tolist() == [base, base + 1, base + 2, base + 3]
    assert m.read("B").tolist() == [base + 1, base + 2] * 4          # width 2 replicated over 8 channels
    v = np.arange(16, dtype=np.int32) * 2
    assert m.read("W").tolist() == [int(v.view(np.uint8)[1]), int(v.view(np.uint8)[2])] * 4


def test_dpasw_on_dg2_shares_src2_between_the_pair():
    p = """
.decl B v_type=G type=d num_elts=64 align=GRF
.decl A v_type=G type=d num_elts=64 align=GRF
.decl D v_type=G type=d num_elts=64 align=GRF
dpasw.s8.s8.8.8 (M1, 8) D.0 %null.0 B.0 A(0,0)
"""
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (8, 32))
    b = rng.integers(-128, 128, (32, 8))
    ins = {"A": packing.pack_a(a.astype(np.int8), 8).view(np.int32).ravel(),
           "B": packing.vnni_pack(b.astype(np.int8), 8).view(np.int32).ravel()}
    # default partner: a thread that ran the same program on the same data, so its Src2 GRFs 0..3
    # (A rows 0..3) stand in for rows 4..7 (DPASW.md: Src2.R[NGrf_EU0 + i] = EU1.Src2.R[i]; 8 GRFs -> 4 + 4)
    m = run_text(p, "dg2", ins)
    assert np.array_equal(m.read("D").reshape(8, 8), np.vstack([a[:4], a[:4]]) @ b)
    # the split usage: the partner holds rows 4..7 of A in its Src2 -> the full product
    mach = Machine(asm.parse(p), "dg2")
    pair = GRF("dg2")
    off = mach.layout.offsets
    for k, v in ins.items():
        mach.write(k, v)
    pair.write(off["A"], packing.pack_a(a[4:].astype(np.int8), 8).view(np.uint8).ravel())
    mach.pair = pair
    mach.run()
    assert np.array_equal(mach.read("D").reshape(8, 8), a @ b)


def test_inputs_must_fit_integer_variables():
    from systolic.errors import InvalidValue
    p = ".decl X v_type=G type=ub num_elts=4\n"
    with pytest.raises(InvalidValue, match="fit"):
        run_text(p, "pvc", {"X": np.array([1, 2, 300, 4])})
    with pytest.raises(InvalidValue, match="fit"):
        run_text(p, "pvc", {"X": np.array([1.5, 2, 3, 4])})
    with pytest.raises(InvalidValue, match="too many"):
        run_text(p, "pvc", {"X": np.arange(5)})
    assert run_text(p, "pvc", {"X": np.array([1.0, 2, 3, 255])}).read("X").tolist() == [1, 2, 3, 255]


_HALF = {"hf": (np.float16, Fraction(65520)), "bf": (ml_dtypes.bfloat16, Fraction(2) ** 128 - Fraction(2) ** 119)}


def rne16(q: Fraction, tname: str):
    """Independent oracle for 16-bit formats: nearest of the bit-neighbours of a first guess, ties to even."""
    dt, overflow = _HALF[tname]
    if abs(q) >= overflow:
        return np.array([np.inf if q > 0 else -np.inf]).astype(dt)[0]
    with np.errstate(all="ignore"):
        b = int(np.array([float(q)]).astype(np.float32).astype(dt).view(np.uint16)[0])
    cands = []
    for c in (b - 1, b, b + 1):
        v = np.array([c & 0xFFFF], np.uint16).view(dt)[0]
        if np.isfinite(np.float32(v)):
            cands.append(v)
    return min(cands, key=lambda v: (abs(Fraction(float(np.float32(v))) - q), int(np.array([v]).view(np.uint16)[0]) & 1))


def _rne32(q: Fraction) -> np.float32:
    """q rounded to binary32, nearest-even, exactly, keeping the sign of a result that rounds to zero."""
    with np.errstate(over="ignore"):
        f = np.float32(float(q))                      # within one binary32 ulp of q (or past the range: inf)
    if not np.isfinite(f):
        return f
    cands = [v for v in (np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf)))
             if np.isfinite(v)]
    best = min(cands, key=lambda v: (abs(Fraction(float(v)) - q), int(np.array([v]).view(np.uint32)[0]) & 1))
    return np.float32(math.copysign(0.0, float(q))) if best == 0 else best


HBITS = st.one_of(st.integers(0, 0xFFFF), st.sampled_from([0x0000, 0x8000, 0x0001, 0x8001, 0x3C00, 0x7BFF, 0x3F80,
                                                             0x7F7F, 0x0080, 0x0400]))
_EXP = {"hf": 0x7C00, "bf": 0x7F80}


@settings(max_examples=80 * SOAK, deadline=None)
@given(st.sampled_from(["hf", "bf"]), st.lists(st.tuples(HBITS, HBITS, HBITS), min_size=8, max_size=8))
@example("bf", [(0, 0, 0)] * 7 + [(23, 54608, 1)])   # a BF mad whose F rounding lands on a BF midpoint
def test_half_and_bfloat_alu_against_exact_oracle(tname, triples):
    dt, e = _HALF[tname][0], _EXP[tname]
    finite = [[(x & ~0x4000) if (x & e) == e else x for x in t] for t in triples]   # no inf/NaN inputs here
    a, b, c = (np.array([t[i] for t in finite], np.uint16).view(dt) for i in range(3))
    prog = "\n".join(f".decl {n} v_type=G type={tname} num_elts=8" for n in "ABCSMF") + """
add (M1, 8) S(0,0)<1> A(0,0)<1;1,0> B(0,0)<1;1,0>
mul (M1, 8) M(0,0)<1> A(0,0)<1;1,0> B(0,0)<1;1,0>
mad (M1, 8) F(0,0)<1> A(0,0)<1;1,0> B(0,0)<1;1,0> C(0,0)<1;1,0>
"""
    m = run_text(prog, "pvc", {"A": a, "B": b, "C": c})
    for i in range(8):
        fa, fb, fc = (Fraction(float(np.float32(x[i]))) for x in (a, b, c))
        sa, sb, sc = (math.copysign(1, float(np.float32(x[i]))) < 0 for x in (a, b, c))
        for name, q, negzero in (("S", fa + fb, sa and sb), ("M", fa * fb, sa != sb),
                                 ("F", fa * fb + fc, (sa != sb) and (fa * fb == 0) and sc)):
            if tname == "bf" and name == "F" and q != 0:
                # BF sources compute in F up to Xe3 (visa/alu.py, docs/visa.md): mad rounds to F, then to BF -
                # two roundings, not one (a random case found the difference: 2.11222e-39 * -1.42937e13 +
                # 9.18355e-41 lands on a BF midpoint once rounded to F)
                f = _rne32(q)
                want = np.array([f], np.float32).astype(dt)[0] if f == 0 or not np.isfinite(f) \
                    else rne16(Fraction(float(f)), tname)
            else:
                want = rne16(q, tname) if q != 0 else np.array([-0.0 if negzero else 0.0], np.float32).astype(dt)[0]
            got = m.read(name)[i]
            assert np.array([got]).view(np.uint16)[0] == np.array([want]).view(np.uint16)[0], (tname, name, a[i], b[i], c[i])


FUZZ_DECLS = """
.decl G1 v_type=G type=d num_elts=16 align=GRF
.decl G2 v_type=G type=f num_elts=32 align=GRF
.decl G3 v_type=G type=uw num_elts=8
.decl G4 v_type=G type=hf num_elts=16
.decl G5 v_type=G type=ub num_elts=40
.decl G6 v_type=G type=ud num_elts=64 align=GRF
.decl A1 v_type=A num_elts=4
.decl P1 v_type=P num_elts=16
"""
_VARS = ["G1", "G2", "G3", "G4", "G5", "G6"]
_IMMS = ["0x1:d", "-3:w", "1.5:f", "0x76543210:v", "0x3c00:hf", "0xff:ub", "0x10:uw", "nan:f", "inf:f"]


@st.composite
def fuzz_operand(draw, dst):
    k = draw(st.sampled_from(["g", "g", "i", "imm", "p", "a"]))
    if k == "imm" and not dst:
        return draw(st.sampled_from(_IMMS))
    if k == "p":
        return "P1"
    if k == "a":
        return "A1(0)" if dst else "A1(1)<2>"
    r, c = draw(st.integers(0, 2)), draw(st.integers(0, 17))
    if k == "i":
        reg = f"<{draw(st.sampled_from([1, 2]))}>" if dst else draw(st.sampled_from(["<1;1,0>", "<8;8,1>", "<4,1>",
                                                                                       "<0;1,0>"]))
        return f"r[A1({draw(st.integers(0, 3))}),{draw(st.integers(-64, 64))}]{reg}:{draw(st.sampled_from(['d', 'w', 'f', 'ub']))}"
    v = draw(st.sampled_from(_VARS))
    if dst:
        return f"{v}({r},{c})<{draw(st.sampled_from([1, 2, 4]))}>"
    mod = draw(st.sampled_from(["", "", "(-)", "(abs)", "(~)"]))
    reg = draw(st.sampled_from(["<1;1,0>", "<8;8,1>", "<0;1,0>", "<16;8,2>", "<4;4,1>", "<2;1,0>"]))
    return f"{mod}{v}({r},{c}){reg}"


@st.composite
def fuzz_inst(draw):
    op = draw(st.sampled_from(["mov", "add", "mul", "mad", "sel", "min", "max", "and", "or", "xor", "not", "shl",
                               "shr", "asr", "cmp.lt", "cmp.ne", "setp", "addr_add", "add.sat", "mov.sat"]))
    nsrc = {"mov": 1, "mov.sat": 1, "not": 1, "setp": 1, "mad": 3}.get(op, 2)
    pred = draw(st.sampled_from(["", "", "(P1) ", "(!P1.any) ", "(P1.all) "]))
    mask = draw(st.sampled_from(["M1", "M1", "M5", "M1_NM", "M3", "M8"]))
    n = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    ops = [draw(fuzz_operand(True))] + [draw(fuzz_operand(False)) for _ in range(nsrc)]
    return f"{pred}{op} ({mask}, {n}) " + " ".join(ops)


@settings(max_examples=200 * SOAK, deadline=None)
@given(st.lists(fuzz_inst(), min_size=1, max_size=6), st.sampled_from(["dg2", "pvc"]),
       st.integers(0, 2**32 - 1))
def test_fuzz_programs_only_typed_errors(insts, platform, em):
    """Random (mostly ill-formed) programs: a result or a systolic error, never a crash or a hang."""
    text = FUZZ_DECLS + "\n".join(insts) + "\n"
    try:
        prog = asm.parse(text)
    except SystolicError:
        return
    m = Machine(prog, platform, em=em)
    m.write("G1", np.arange(16))
    m.write("A1", [m.layout.offsets["G1"], m.layout.offsets["G2"], m.layout.offsets["G5"], 3])
    try:
        m.run()
    except SystolicError as e:
        assert ":" in str(e).split(" ")[0]   # located: "line:column:"


def test_chained_dpas_k32_equals_two_xmx_calls_bit_for_bit():
    """A K=32 micro-kernel: two DPAS, the second accumulating onto the first's Dst (raw offsets, Src2 row offset)."""
    p = """
.decl A v_type=G type=ud num_elts=128 align=GRF
.decl B v_type=G type=ud num_elts=256 align=GRF
.decl C v_type=G type=f num_elts=128 align=GRF
.decl D v_type=G type=f num_elts=128 align=GRF
dpas.bf.bf.8.8 (M1, 16) D.0 C.0 B.0 A(0,0)
dpas.bf.bf.8.8 (M1, 16) D.0 D.0 B.512 A(4,0)
"""
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((8, 32)) * 3).astype(ml_dtypes.bfloat16)
    b = (rng.standard_normal((32, 16)) * 3).astype(ml_dtypes.bfloat16)
    c = (rng.standard_normal((8, 16)) * 100).astype(np.float32)
    ins = {"A": np.concatenate([packing.pack_a(a[:, :16], 16).ravel(), packing.pack_a(a[:, 16:], 16).ravel()]),
           "B": np.concatenate([packing.vnni_pack(b[:16], 16).ravel(), packing.vnni_pack(b[16:], 16).ravel()]),
           "C": c.ravel()}
    m = run_text(p, "pvc", ins)
    g = GRF("pvc")
    off = m.layout.offsets
    for n, v in ins.items():
        g.write(off[n], np.ascontiguousarray(v).view(np.uint8))
    kw = dict(dst_type="f", src1_precision="bf", src2_precision="bf", sd=8, rc=8)
    xmx_dpas(g, dst=off["D"], src0=off["C"], src1=off["B"], src2=off["A"], **kw)
    xmx_dpas(g, dst=off["D"], src0=off["D"], src1=off["B"] + 512, src2=off["A"] + 256, **kw)
    assert np.array_equal(g.read(off["D"], 512), m.grf.read(off["D"], 512))
    # and close to the float64 product (the rounding model itself is systolic.xmx's business)
    want = c + a.astype(np.float64) @ b.astype(np.float64)
    assert np.allclose(m.read("D").reshape(8, 16), want, rtol=1e-5, atol=1e-3)


def test_shift_signedness_rules():
    base = ".decl D v_type=G type=d num_elts=4\n.decl U v_type=G type=ud num_elts=4\n"
    with pytest.raises(IllegalInstruction, match="shr needs unsigned dst"):
        run_text(base + "shr (M1, 4) D(0,0)<1> U(0,0)<1;1,0> 0x1:d\n", "pvc")
    with pytest.raises(IllegalInstruction, match="asr needs signed src0"):
        run_text(base + "asr (M1, 4) D(0,0)<1> U(0,0)<1;1,0> 0x1:d\n", "pvc")


def test_f_execution_with_bf_destination_rounds_to_f_first():
    """1 + 2^-8 + 2^-30: to fp32 it is 1 + 2^-8, a bf16 tie that goes to even (1.0); rounded once it is 1 + 2^-7."""
    from systolic.visa.alu import FloatModel
    p = ".decl A v_type=G type=f num_elts=1\n.decl D v_type=G type=bf num_elts=1\n" \
        "add (M1, 1) D(0,0)<1> A(0,0)<0;1,0> 0x30800000:f\n"   # 0x30800000 = 2^-30
    a = np.array([1 + 2.0 ** -8], np.float32)
    assert run_text(p, "pvc", {"A": a}).read("D").view(np.uint16)[0] == 0x3F80
    once = run_text(p, "pvc", {"A": a}, model=FloatModel(via_execution_type=False))
    assert once.read("D").view(np.uint16)[0] == 0x3F81


def test_denormal_model_fields():
    from systolic.visa.alu import FloatModel
    p = ".decl A v_type=G type=hf num_elts=2\n.decl D v_type=G type=hf num_elts=2\n" \
        "add (M1, 2) D(0,0)<1> A(0,0)<1;1,0> A(0,0)<1;1,0>\n"
    a = np.array([0x0001, 0x8200], np.uint16).view(np.float16)        # two denormals
    keep = run_text(p, "pvc", {"A": a}).read("D").view(np.uint16).tolist()
    assert keep == [0x0002, 0x8400]                                   # 2 x min denormal; -2^-15 -> -min normal
    flush = run_text(p, "pvc", {"A": a}, model=FloatModel(ftz=frozenset({"hf"}), daz=frozenset({"hf"})))
    assert flush.read("D").view(np.uint16).tolist() == [0x0000, 0x8000]   # sign-preserved zeros


@settings(max_examples=10 * SOAK, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["bf", "hf"]))
def test_fast_dpas_gives_the_same_bits(seed, prec):
    """Machine(path="fast") (DPAS through xmx.kernels.dpas_fast) against the spec path, specials included."""
    rng = np.random.default_rng(seed)
    dt = ml_dtypes.bfloat16 if prec == "bf" else np.float16
    bits = rng.integers(0, 1 << 16, (8, 32), dtype=np.uint16)          # any bit pattern: NaN, inf, denormals
    p = GEMM_BF16.replace("dpas.bf.bf", f"dpas.{prec}.{prec}")
    ins = {"A": packing.pack_a(bits[:, :16].view(dt), 16).ravel(),
           "B": packing.vnni_pack(rng.integers(0, 1 << 16, (16, 16), dtype=np.uint16).view(dt), 16).ravel(),
           "C": rng.integers(0, 1 << 32, 128, dtype=np.uint32).view(np.float32)}
    slow = run_text(p, "pvc", ins)
    fast = run_text(p, "pvc", ins, path="fast")
    assert np.array_equal(slow.grf.read(slow.layout.offsets["D"], 512), fast.grf.read(fast.layout.offsets["D"], 512))


def test_bad_inputs_are_typed_errors():
    from systolic.errors import InvalidValue
    p = ".decl X v_type=G type=f num_elts=4\n.decl A v_type=A num_elts=2\n"
    p += ".decl P v_type=P num_elts=4\n"
    for name, vals in (("X", ["a", "b"]), ("A", [np.nan]), ("A", [1.5, 2]), ("A", [70000]), ("Q", [1]), ("P", [2])):
        with pytest.raises(InvalidValue):
            run_text(p, "pvc", {name: vals})


def test_two_grf_rule_policy():
    """SIMD32 dwords on a 32-byte GRF span 4 GRFs: rule 6 under "spec"; IGC's verifier lets vISA split mov."""
    p = ".decl X v_type=G type=d num_elts=32 align=GRF\nmov (M1, 32) X(0,0)<1> 0x5:d\n"
    with pytest.raises(IllegalInstruction, match="rule 6"):
        run_text(p, "dg2")
    assert run_text(p, "dg2", two_grf_rule="igc").read("X").tolist() == [5] * 32
    assert run_text(p, "pvc").read("X").tolist() == [5] * 32          # 128 bytes = 2 GRFs of 64
