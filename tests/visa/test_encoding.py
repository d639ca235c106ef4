"""Binary operands and instructions: visa-operands.md "Vector Operands" ... "Raw Operands"."""

import os
import math
import struct

import pytest
from hypothesis import example, given, settings, strategies as st

from systolic.errors import IllegalInstruction, InvalidValue, SystolicError
from systolic.visa import asm
from systolic.visa import encoding as E
from systolic.visa.isa import TYPES
from systolic.visa.predication import PredControl

SOAK = int(os.environ.get("SYSTOLIC_SOAK", "1"))  # long runs: SYSTOLIC_SOAK=50

REG = st.sampled_from([None, 0, 1, 2, 4, 8, 16, 32])
MODS = st.sampled_from(["none", "abs", "neg", "neg_abs", "sat", "not"])
TYPE_OK_INDIRECT = [t for t in TYPES.values() if t.kind not in ("vector", "bool")]
TYPE_OK_IMM = [t for t in TYPES.values() if t.kind != "bool"]


@st.composite
def operands(draw):
    k = draw(st.sampled_from(["g", "a", "p", "i", "imm", "s"]))
    if k == "g":
        return E.GeneralOperand(draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 255)), draw(st.integers(0, 255)),
                                draw(REG), draw(REG), draw(REG), draw(MODS))
    if k == "a":
        return E.AddressOperand(draw(st.integers(0, 0xFFFF)), draw(st.integers(0, 255)),
                                draw(st.sampled_from([1, 2, 4, 8, 16])))
    if k == "p":
        return E.PredicateOperand(PredControl(draw(st.integers(0, 4095)), draw(st.sampled_from(["", "any", "all"])),
                                              draw(st.booleans())))
    if k == "i":
        return E.IndirectOperand(draw(st.integers(0, 0xFFFF)), draw(st.integers(0, 255)), draw(st.integers(-512, 511)),
                                 draw(st.sampled_from(TYPE_OK_INDIRECT)), draw(REG), draw(REG), draw(REG), draw(MODS))
    if k == "imm":
        t = draw(st.sampled_from(TYPE_OK_IMM))
        wide = t.name in ("df", "q", "uq")
        return E.ImmediateOperand(t, draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 2**32 - 1)) if wide else None)
    return E.StateOperand(draw(st.integers(0, 1)), draw(st.integers(0, 0xFFFF)), draw(st.integers(0, 255)))


@settings(max_examples=500 * SOAK, deadline=None)
@given(operands())
def test_operand_roundtrip(op):
    b = E.encode_operand(op)
    r = E.Reader(b)
    assert E.decode_operand(r) == op
    assert r.done


def test_general_operand_bytes():
    """tag 0 (general), ud id, ub row, ub col, uw region (vs bits 0-3, width 4-7, hs 8-11)."""
    b = E.encode_operand(E.GeneralOperand(33, 1, 2, 8, 8, 1))
    assert b == bytes([0x00]) + struct.pack("<IBBH", 33, 1, 2, 0x5 | (0x5 << 4) | (0x2 << 8))
    neg = E.encode_operand(E.GeneralOperand(1, 0, 0, 0, 1, 0, "neg"))
    assert neg[0] == (2 << 3)  # MODIFIER_NEG = 2 in bits 3-5


def test_class_codes_and_sizes():
    assert E.encode_operand(E.AddressOperand(3, 1, 4))[0] == 0b001
    assert E.encode_operand(E.AddressOperand(3, 1, 4))[1:] == struct.pack("<HBB", 3, 1, 2)  # width 4 -> code 2
    assert E.encode_operand(E.PredicateOperand(PredControl(7, "any")))[0] == 0b010
    ind = E.encode_operand(E.IndirectOperand(2, 1, -4, TYPES["f"], 8, 8, 1))
    assert ind[0] == 0b011 and len(ind) == 1 + 2 + 1 + 2 + 1 + 2
    assert struct.unpack_from("<h", ind, 4)[0] == -4 and ind[6] == TYPES["f"].code
    imm = E.encode_operand(E.ImmediateOperand(TYPES["d"], 5))
    assert imm == bytes([0b101, 1]) + struct.pack("<I", 5)
    st_ = E.encode_operand(E.StateOperand(1, 9, 2))
    assert st_ == bytes([0b110, 1]) + struct.pack("<HB", 9, 2)
    assert E.encode_raw(E.RawOperand(40, 64)) == struct.pack("<IH", 40, 64)


@pytest.mark.parametrize("tname", ["df", "q", "uq"])
def test_high_dword_only_for_64bit(tname):
    op = E.ImmediateOperand(TYPES[tname], 0x54442D18, 0x400921FB)
    b = E.encode_operand(op)
    assert len(b) == 10 and struct.unpack_from("<II", b, 2) == (0x54442D18, 0x400921FB)
    assert op.bits == 0x400921FB54442D18


def test_no_high_dword_for_32bit():
    assert len(E.encode_operand(E.ImmediateOperand(TYPES["f"], 1))) == 6
    with pytest.raises(IllegalInstruction, match="high dword"):
        E.encode_operand(E.ImmediateOperand(TYPES["f"], 1, 2))


def test_rule_errors():
    with pytest.raises(IllegalInstruction, match=r"\[-512, 511\]"):
        E.encode_operand(E.IndirectOperand(0, 0, 512, TYPES["d"], 1, 1, 0))
    with pytest.raises(IllegalInstruction, match=r"\[-512, 511\]"):
        E.encode_operand(E.IndirectOperand(0, 0, -513, TYPES["d"], 1, 1, 0))
    for t in ("v", "uv", "vf", "bool"):
        with pytest.raises(IllegalInstruction, match="V, UV, VF or BOOL"):
            E.encode_operand(E.IndirectOperand(0, 0, 0, TYPES[t], 1, 1, 0))
    with pytest.raises(IllegalInstruction, match="except BOOL"):
        E.encode_operand(E.ImmediateOperand(TYPES["bool"], 1))
    with pytest.raises(IllegalInstruction, match="General and Indirect"):
        E.encode_operand(E.ImmediateOperand(TYPES["d"], 1, modifier="neg"))
    with pytest.raises(IllegalInstruction, match="other than 32"):
        E.encode_operand(E.AddressOperand(0, 0, 32))


def test_malformed_bytes_name_the_field():
    with pytest.raises(InvalidValue, match="region") as e:
        E.decode_operand(E.Reader(bytes([0, 1, 0, 0, 0, 0, 0, 0x11])))
    assert e.value.values["field"] == "region"
    with pytest.raises(IllegalInstruction, match="reserved operand class"):
        E.decode_operand(E.Reader(bytes([0b100, 0, 0, 0, 0])))
    with pytest.raises(IllegalInstruction, match="reserved operand modifier"):
        E.decode_operand(E.Reader(bytes([6 << 3])))
    with pytest.raises(IllegalInstruction, match="bits 6-7"):
        E.decode_operand(E.Reader(bytes([0x40])))
    with pytest.raises(IllegalInstruction, match="region encoding"):
        E.decode_operand(E.Reader(bytes([0]) + struct.pack("<IBBH", 1, 0, 0, 0x8)))
    with pytest.raises(IllegalInstruction, match="bits 12-15"):
        E.decode_operand(E.Reader(bytes([0]) + struct.pack("<IBBH", 1, 0, 0, 0x1000)))
    with pytest.raises(IllegalInstruction, match="General and Indirect"):
        E.decode_operand(E.Reader(bytes([0b101 | (2 << 3), 1, 0, 0, 0, 0])))


@settings(max_examples=1500 * SOAK, deadline=None)
@given(st.binary(max_size=24))
def test_fuzz_operand_decoder(data):
    r = E.Reader(data)
    try:
        op = E.decode_operand(r)
    except SystolicError:
        return
    assert E.encode_operand(op) == data[:r.pos]


def test_packed_v_uv():
    assert E.expand_v(0x76543210) == [0, 1, 2, 3, 4, 5, 6, 7]
    assert E.expand_v(0x89ABCDEF) == [-1, -2, -3, -4, -5, -6, -7, -8]
    assert E.expand_uv(0xFEDCBA98) == [8, 9, 10, 11, 12, 13, 14, 15]


def vf_oracle(b):
    if b & 0x7F == 0:
        return -0.0 if b & 0x80 else 0.0
    v = math.ldexp(1 + (b & 0xF) / 16, ((b >> 4) & 7) - 3)
    return -v if b & 0x80 else v


def test_vf_all_256_bytes():
    for b in range(256):
        bits = E.vf_to_float_bits(b)
        got = struct.unpack("<f", struct.pack("<I", bits))[0]
        want = vf_oracle(b)
        assert got == want and math.copysign(1, got) == math.copysign(1, want), b
    # range of 2_datatypes.md: [-31 ... 31]; 31 = 0x7F
    assert struct.unpack("<f", struct.pack("<I", E.vf_to_float_bits(0x7F)))[0] == 31.0
    assert E.expand_vf(0x00803000) == [E.vf_to_float_bits(0), E.vf_to_float_bits(0x30), E.vf_to_float_bits(0x80),
                                       0]
    assert E.vf_to_float_bits(0x30) == 0x3F800000  # 1.0


PROG = """
.decl V33 v_type=G type=d num_elts=16 align=GRF
.decl V34 v_type=G type=d num_elts=16 align=GRF
.decl V35 v_type=G type=f num_elts=128 align=GRF
.decl V36 v_type=G type=w num_elts=16
.decl A0 v_type=A num_elts=2
.decl P1 v_type=P num_elts=16
add (M1, 16) V34(0,0)<1> V33(0,0)<1;1,0> 0x1:d
(!P1.any) mul.sat (M5, 8) V34(0,0)<2> (-abs)V33(0,1)<8;4,2> 0x7:d
cmp.lt (M1, 16) P1 V33(0,0)<1;1,0> 0x0:d
(P1) mov (M1, 16) V34(0,0)<1> (-)r[A0(1),-16]<8;8,1>:d
mov (M1, 8) V34(0,0)<1> r[A0(0),0]<4,1>:d
addr_add (M1, 1) A0(0) &V33[8] 0x4:uw
min (M1, 16) V34(0,0)<1> V33(0,0)<1;1,0> 0x1:d
max.sat (M1, 16) V34(0,0)<1> V33(0,0)<1;1,0> 0x1:d
mad (M1_NM, 16) V34(0,0)<1> V33(0,0)<1;1,0> V33(0,0)<1;1,0> 0x1:d
and (M1, 16) V34(0,0)<1> (~)V33(0,0)<1;1,0> 0xff:d
setp (M1_NM, 16) P1 0x5555:uw
shl (M1, 8) V36(0,0)<1> V36(0,0)<1;1,0> 0x76543210:v
dpas.bf.bf.8.8 (M1, 16) V35.0 %null.0 V33.0 V34(0,0)
dpasw.s8.u4.8.4 (M1, 8) V35.64 V35.0 V33.0 V34(0,0)
mov (M1, 1) V34(0,0)<1> 0x400921fb54442d18:df
"""


def test_instruction_roundtrip_through_bytes():
    p = asm.parse(PROG)
    blob = E.encode_program(p)
    assert E.decode_program(blob, p) == p.instructions
    # first instruction, by the ADD.md format row: opcode, exec, pred, dst, src0, src1
    first = E.encode_instruction(p.instructions[0], p)
    assert first[0] == 0x01 and first[1] == 0x04 and first[2:4] == b"\0\0"
    # mul.sat (M5, 8): exec byte = M5 (4) << 4 | 8 elements (3); pred (!P1.any)
    mul = E.encode_instruction(p.instructions[1], p)
    assert mul[1] == 0x43 and struct.unpack_from("<H", mul, 2)[0] == 0x8000 | (1 << 13) | 1
    assert (mul[4] >> 3) & 7 == 4  # sat on the destination tag


def test_decode_program_errors():
    p = asm.parse(PROG)
    with pytest.raises(IllegalInstruction, match="opcode"):
        E.decode_program(bytes([0x99]), p)
    with pytest.raises(InvalidValue, match="truncated"):
        E.decode_program(E.encode_instruction(p.instructions[0], p)[:-1], p)


@settings(max_examples=600 * SOAK, deadline=None)
@given(st.binary(max_size=40))
def test_fuzz_instruction_decoder(data):
    p = asm.parse(PROG)
    try:
        insts = E.decode_program(bytes([0x01]) + data, p)
    except SystolicError:
        return
    assert insts


def test_dpas_info_is_igc_ui32_and_no_predicate_word():
    """DpasInfoToUI32: W | A << 8 | SD << 16 | RC << 24; DPAS is not predicable (hasPredicate: Misc)."""
    p = asm.parse(PROG)
    dpasw = next(i for i in p.instructions if i.op == "dpasw")   # dpasw.s8.u4.8.4
    b = E.encode_instruction(dpasw, p)
    assert b[0] == 0x1C and b[1] == 0x03                         # opcode, (M1, 8); then raw Dst at once
    assert struct.unpack("<I", b[-4:])[0] == 8 | (5 << 8) | (8 << 16) | (4 << 24)
    assert len(b) == 2 + 3 * 6 + 9 + 4                           # exec, 3 raw, general Src2, info
    cmp = next(i for i in p.instructions if i.op == "cmp")
    cb = E.encode_instruction(cmp, p)
    assert cb[0] == 0x2C and cb[2] == 4 and cb[3] == 0b010       # rel_op lt right after exec, then pred dst


from .test_fast_alu import DECLS as FAST_DECLS, instruction as fast_instruction  # noqa: E402
from .test_interp import FUZZ_DECLS, fuzz_inst  # noqa: E402


@settings(max_examples=300 * SOAK, deadline=None)
@given(st.lists(st.one_of(fuzz_inst(), fast_instruction()), min_size=1, max_size=5))
@example(["addr_add (M1, 1) A1(0) G1(0,0)<1;1,0> A1(1)<2>"])  # found on a 16-core run: V(0,c) vs &V[c*size]
def test_every_parsable_program_roundtrips_through_bytes(insts):
    for decls in (FUZZ_DECLS, FAST_DECLS):
        try:
            p = asm.parse(decls + "\n".join(insts))
        except SystolicError:
            continue
        blob = E.encode_program(p)
        assert E.decode_program(blob, p) == p.instructions
        assert asm.parse(asm.format_program(p)).instructions == p.instructions
