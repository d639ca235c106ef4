"""Text assembly: IGC's vISA syntax (8_appendix_visa_assembly_syntax.md, IsaDisassembly spelling)."""

import os
import pytest
from hypothesis import given, settings, strategies as st

from systolic.errors import AsmSyntaxError, IllegalInstruction, SystolicError
from systolic.visa import asm
from systolic.visa.encoding import (AddressOfOperand, AddressOperand, GeneralOperand, ImmediateOperand,
                                    IndirectOperand, PredicateOperand, RawOperand)
from systolic.visa.isa import TYPES

SOAK = int(os.environ.get("SYSTOLIC_SOAK", "1"))  # long runs: SYSTOLIC_SOAK=50

DECLS = """
.version 3.6
.kernel k
.decl V33 v_type=G type=d num_elts=16 align=GRF
.decl V34 v_type=G type=d num_elts=16 align=GRF
.decl V40 v_type=G type=f num_elts=128 align=GRF
.decl V41 v_type=G type=ud num_elts=128 align=GRF
.decl V42 v_type=G type=hf num_elts=32 align=GRF
.decl V43 v_type=G type=w num_elts=8 alias=<V34, 0>
.decl A0 v_type=A num_elts=4
.decl P1 v_type=P num_elts=16
"""


def one(line):
    return asm.parse(DECLS + line).instructions[0]


def test_issue_examples():
    p = asm.parse(DECLS)
    assert p.lookup("V33").type is TYPES["d"] and p.lookup("V33").align == "GRF" and p.lookup("V33").num_elts == 16
    i = one("add (M1, 16) V34(0,0)<1> V33(0,0)<1;1,0> 0x1:d")
    assert i.op == "add" and i.exec_size == 16 and i.mask.name == "M1"
    assert i.dst == GeneralOperand(2, 0, 0, None, None, 1)
    assert i.srcs == (GeneralOperand(1, 0, 0, 1, 1, 0), ImmediateOperand(TYPES["d"], 1))
    assert one("(P1) mov (M1, 16) V34(0,0)<1> 0x0:d").pred.text() == "(P1)"
    pr = one("(!P1.any) mov (M1, 16) V34(0,0)<1> 0x0:d").pred
    assert pr.inverse and pr.combine == "any" and pr.id == 1


def test_operand_forms():
    i = one("mov (M1, 8) r[A0(1),-32]<1>:ud (-abs)r[A0(0),448]<8;8,1>:ud")
    assert i.dst == IndirectOperand(0, 1, -32, TYPES["ud"], None, None, 1)
    assert i.srcs[0] == IndirectOperand(0, 0, 448, TYPES["ud"], 8, 8, 1, "neg_abs")
    assert one("mov (M1, 8) V34(0,0)<1> r[A0(0),0]<4,1>:d").srcs[0].vstride is None
    assert one("mov (M1, 8) V34(0,0)<1> r[A0(0),0]<;4,1>:d").srcs[0].width == 4  # the spec's <; W, H> form
    assert one("addr_add (M1, 1) A0(0) &V33[8] 0x4:uw").srcs[0] == AddressOfOperand(1, 8)
    assert one("addr_add (M1, 1) A0(0) A0(1)<1> 0x4:uw").srcs[0] == AddressOperand(0, 1, 1)
    assert one("cmp.ge (M1, 16) P1 V33(0,0)<1;1,0> -3:d").srcs[1] == ImmediateOperand(TYPES["d"], 0xFFFFFFFD)
    assert one("and (M1, 16) P1 P1 (~)P1").srcs[1] == PredicateOperand(one("not (M1, 16) P1 (~)P1").srcs[0].pred)
    i = one("dpas.bf.bf.8.8 (M1, 16) V40.0 %null.0 V41.0 V41(4,0)")
    assert i.dst == RawOperand(3, 0) and i.srcs[0] == RawOperand(0, 0) and i.srcs[2].row == 4
    assert i.dpas.w == "bf" and i.dpas.a == "bf" and (i.dpas.sd, i.dpas.rc) == (8, 8)
    assert one("mov (M1, 1) V42(0,0)<1> 1.5:hf").srcs[0] == ImmediateOperand(TYPES["hf"], 0x3E00)
    assert one("mov (M1, 1) V42(0,0)<1> -0.0:hf").srcs[0].low == 0x8000
    assert one("mov (M1, 1) V40(0,0)<1> 0.1:f").srcs[0].low == 0x3DCCCCCD
    assert one("mov (M5_NM, 1) V40(0,0)<1> 0x3f800000:f").mask.name == "M5_NM"
    assert one("max.sat (M1, 16) V40(0,0)<1> V40(0,0)<1;1,0> 0x0:f").sat


def test_print_is_igc_spelling_and_roundtrips():
    lines = [
        "add (M1, 16) V34(0,0)<1> V33(0,0)<1;1,0> 0x1:d",
        "(!P1.any) mov.sat (M5, 8) V34(0,0)<2> (-)r[A0(0),16]<8;8,1>:d",
        "mov (M1, 8) V34(0,0)<1> r[A0(0),0]<4,1>:d",
        "cmp.lt (M1, 16) P1 V33(0,0)<1;1,0> 0x0:d",
        "addr_add (M1, 1) A0(0) &V33[8] 0x4:uw",
        "dpas.bf.bf.8.8 (M1, 16) V40.0 %null.0 V41.0 V41(0,0)",
        "mad (M1_NM, 16) V40(0,0)<1> (abs)V40(0,0)<1;1,0> V40(1,0)<0;1,0> 0x3f800000:f",
    ]
    for ln in lines:
        p = asm.parse(DECLS + ln)
        assert asm.format_instruction(p.instructions[0], p) == ln
    p = asm.parse(DECLS + "\n".join(lines))
    again = asm.parse(asm.format_program(p))
    assert again.instructions == p.instructions and again.general == p.general


def test_comments_and_labels():
    p = asm.parse(DECLS + "/* block\ncomment */ add (M1, 16) V34(0,0)<1> V33(0,0)<1;1,0> 0x1:d // tail\nBB_1:\n")
    assert len(p.instructions) == 1 and p.instructions[0].line == DECLS.count("\n") + 2


@pytest.mark.parametrize("text,anchor,msg", [
    ("add (M1, 16) V34(0,0)<1> V99(0,0)<1;1,0> 0x1:d", "V99", "undeclared"),
    ("add (M1, 16) V34(0,0)<1> V33(0,0)<1;1> 0x1:d", "<1;1>", "source region"),
    ("add (M1 16) V34(0,0)<1> V33(0,0)<1;1,0> 0x1:d", "16)", "expected ','"),
    ("frob (M1, 16) V34(0,0)<1>", "frob", "unsupported"),
    ("add (M1, 16) V34(0,0)<1> V33(0,0)<1;1,0> 0x1:zz", "zz", "unknown type"),
    ("add (M1, 16) V34(0,0)<1> V33(0,0)<1;1,0>", None, "missing operand"),
    ("add (M1, 16) V34(0,0)<1> V33(0,0)<1;1,0> 0x1:d junk", "junk", "unexpected text"),
    ("cmp (M1, 16) P1 V33(0,0)<1;1,0> 0x0:d", "cmp", "relational"),
    ("(P7) add (M1, 16) V34(0,0)<1> V33(0,0)<1;1,0> 0x1:d", "P7", "predicate"),
    ("add (M1, 16) V34(0,0)<8;8,1> V33(0,0)<1;1,0> 0x1:d", "<8;8,1>", "destination region"),
    ("mov (M1, 1) V34(0,0)<1> 0x1ffffffff:d", "0x1ff", "must fit"),
    ("addr_add (M1, 1) A0(0) &V33", None, "missing operand"),
    ("addr_add (M1, 1) A0(0) &V33[", None, "expected byte offset"),
])
def test_syntax_errors_have_line_and_column(text, anchor, msg):
    with pytest.raises(AsmSyntaxError, match=msg) as e:
        asm.parse(DECLS + text)
    assert e.value.line == DECLS.count("\n") + 1
    assert e.value.column == (len(text) + 1 if anchor is None else text.index(anchor) + 1)


@pytest.mark.parametrize("text,rule", [
    ("add (M1, 16) V34(0,0)<0> V33(0,0)<1;1,0> 0x1:d", "rule 5"),
    ("add (M1, 4) V34(0,0)<1> V33(0,0)<8;8,1> 0x1:d", "rule 4"),
    ("add (M1, 16) V34(0,0)<1> V33(0,0)<3;1,0> 0x1:d", "rule 2"),
    ("add (M1, 16) V34(0,0)<1> V33(0,0)<1;3,0> 0x1:d", "rule 1"),
    ("add (M1, 16) V34(0,0)<1> V33(0,0)<1;1,3> 0x1:d", "rule 3"),
    ("add (M1, 12) V34(0,0)<1> V33(0,0)<1;1,0> 0x1:d", "Exec_size"),
    ("mov (M1, 8) V34(0,0)<1> r[A0(0),512]<8;8,1>:d", r"\[-512, 511\]"),
    ("mov (M1, 8) V34(0,0)<1> r[A0(0),0]<8;8,1>:vf", "V, UV, VF"),
    ("cmp.lt.sat (M1, 16) P1 V33(0,0)<1;1,0> 0x0:d", "suffix"),
    ("(P1) setp (M1_NM, 16) P1 0x1:uw", "takes no predicate"),
    ("mov (M1, 1) V34(0,0)<1> 300:ub", "fit"),
    ("mov (M1, 1) V34(0,0)<1> (-)0x1:d", "General and Indirect"),
])
def test_rule_violations_while_parsing(text, rule):
    with pytest.raises(SystolicError, match=rule) as e:
        asm.parse(DECLS + text)
    assert f"{DECLS.count(chr(10)) + 1}:" in str(e.value)


@pytest.mark.parametrize("decl,msg", [
    (".decl X v_type=G type=d", "num_elts"),
    (".decl X v_type=G type=zz num_elts=1", "unknown type"),
    (".decl X v_type=G type=v num_elts=1", "V, UV, VF or BOOL"),
    (".decl X v_type=A num_elts=17", r"\[1, 16\]"),
    (".decl X v_type=P num_elts=33", r"\[1, 32\]"),
    (".decl X v_type=Q num_elts=1", "v_type"),
    (".decl V33 v_type=G type=d num_elts=1", "twice"),
    (".decl X v_type=G type=d num_elts=1 align=page", "alignment"),
    (".bogus", "unknown directive"),
    (".decl X v_type=G type=d num_elts=4 algn=GRF", "unknown declaration attribute"),
    (".decl X v_type=G type=d num_elts=four", "12:25: num_elts must be an integer"),
])
def test_declaration_errors(decl, msg):
    with pytest.raises(SystolicError, match=msg):
        asm.parse(DECLS + decl)


ALPHABET = st.sampled_from(list("VAPr[](),<>;:.-!~&%0123456789 abcdfhimnoqsuvwxyzMN_\n") +
                           ["V33", "V34", "A0", "P1", "add", "mov", "(M1, 16)", "<1;1,0>", "<1>", ":d", "0x1",
                            ".decl", " v_type=G", " type=d", " num_elts=4", "dpas.bf.bf.8.8", "%null.0", "r[A0(0),0]",
                            "&V33", "&V33[4]", "+", "addr_add", "(-abs)", "(~)", "cmp.lt", "setp", "(P1.any)",
                            " alias=<V33, 4>", " align=", ":vf", "1.5", "e+3", "/*", "*/", "//", "\t"])


@settings(max_examples=800 * SOAK, deadline=None)
@given(st.lists(ALPHABET, max_size=30).map("".join))
def test_fuzz_parser_only_typed_errors(text):
    try:
        p = asm.parse(DECLS + text)
    except SystolicError:
        return
    # what parses prints and parses back to the same program
    again = asm.parse(asm.format_program(p))
    assert again.instructions == p.instructions


@settings(max_examples=300 * SOAK, deadline=None)
@given(st.text(max_size=60))
def test_fuzz_parser_arbitrary_text(text):
    try:
        asm.parse(text)
    except SystolicError:
        pass


@pytest.mark.parametrize("text,msg", [
    ("add (M1, 16) V34(0,0)<1> (~)V33(0,0)<1;1,0> 0x1:d", "not modifier is not allowed on add"),
    ("and (M1, 16) V34(0,0)<1> (-)V33(0,0)<1;1,0> 0x1:d", "neg modifier is not allowed on and"),
    ("add (M1, 16) P1 V33(0,0)<1;1,0> 0x1:d", "dst may not be a predicate"),
    ("mov (M1, 16) V34(0,0)<1> A0(0)<1>", "src0 may not be a address"),
    ("setp (M1_NM, 16) V34(0,0)<1> 0x1:uw", "dst may not be a general"),
    ("addr_add (M1, 1) V34(0,0)<1> &V33 0x1:uw", "dst may not be a general"),
    ("(P1) dpas.bf.bf.8.8 (M1, 16) V40.0 %null.0 V41.0 V41(0,0)", "takes no predicate"),
    ("mov (M8, 8) V34(0,0)<1> 0x1:d", "exceeds 32"),
])
def test_static_instruction_rules(text, msg):
    with pytest.raises(IllegalInstruction, match=msg) as e:
        asm.parse(DECLS + text)
    assert str(e.value).startswith(f"{DECLS.count(chr(10)) + 1}:")


def test_lines_as_igc_emits_them():
    """Spellings from IGC's EmitVISAPass lit tests (align=wordx32, alias=<V, 0>, .kernel_attr, M1_NM)."""
    from systolic.visa import run_text
    text = """
.kernel_attr SimdSize=32
.decl vectorized_phi v_type=G type=f num_elts=128 align=wordx32
.decl VAR0 v_type=G type=d num_elts=6 align=wordx32
.decl ALS0 v_type=G type=uq num_elts=3 align=wordx32 alias=<VAR0, 0>
.decl RES01 v_type=G type=uq num_elts=3 align=wordx32
mov (M1, 32) vectorized_phi(2,0)<1> 0x3f800000:f
mov (M1_NM, 4) VAR0(0,0)<1> 0x7:d
mov (M1_NM, 2) VAR0(0,4)<1> 0x0:d
mov (M1_NM, 2) RES01(0,0)<1> ALS0(0,0)<1;1,0>
mov (M1_NM, 1) RES01(0,2)<1> ALS0(0,2)<0;1,0>
"""
    m = run_text(text, "pvc")
    assert m.read("vectorized_phi").tolist() == [0.0] * 32 + [1.0] * 32 + [0.0] * 64  # row 2 = element 32
    assert m.read("RES01").tolist() == [7 | (7 << 32)] * 2 + [0]
    assert m.layout.offsets["VAR0"] % 64 == 0 and m.layout.offsets["ALS0"] == m.layout.offsets["VAR0"]


def test_every_example_of_the_syntax_appendix_parses():
    """8_appendix_visa_assembly_syntax.md: the Example column of the directive, declaration and operand tables."""
    text = """
.version 1.0
.kernel BlockMotionSearch
.kernel_attr OutputAsmPath=IS_genx_1.asm
.decl V8 v_type=G type=UD num_elts=1 align=dword
.decl A14 v_type=A type=UW num_elts=1
.decl P182 v_type=P num_elts=8
.decl S0 v_type=S
.decl T5 v_type=T
.input T5 offset=36 size=4
.decl V58 v_type=G type=ud num_elts=64 align=GRF
.decl V55 v_type=G type=ud num_elts=8 align=GRF
.decl V21 v_type=G type=ud num_elts=8
.decl V16 v_type=G type=ud num_elts=8
.decl P64 v_type=P num_elts=16
.decl P17 v_type=P num_elts=16
.decl P8 v_type=P num_elts=16
.decl A3 v_type=A num_elts=2
.decl A11 v_type=A num_elts=2
BB_11224:
??$d_transpose@M$07$0IA@@@YAXVSurfaceIndex@@0HH@Z:
(!P64.all) mov (M1, 8) V55(0,0)<1> V58(0,0)<8;8,1>
mov (M1, 8) V55(0,0)<1> r[A3(0),448]<8;8,1>:ud
mov (M1, 8) r[A11(0),64]<1>:ud 0x100:uw
addr_add (M1, 1) A11(0) A3(0)<1> 0x0:uw
addr_add (M1, 1) A11(0) &V21+0 0x0:uw
and (M1, 16) P8 P17 P64
mov (M1, 4) V55(0,0)<1> V58(0,0)<4;4,1>
"""
    p = asm.parse(text)
    assert p.version == "1.0" and p.kernel == "BlockMotionSearch"
    assert p.lookup("V8").type.name == "ud" and p.lookup("V8").align == "dword"
    assert p.lookup("P182").num_elts == 8 and p.lookup("A14").num_elts == 1
    i = p.instructions
    assert i[0].pred.inverse and i[0].pred.combine == "all" and i[0].pred.id == p.lookup("P64").id
    assert i[6].exec_size == 4 and i[0].srcs[0] == GeneralOperand(p.lookup("V58").id, 0, 0, 8, 8, 1)
    assert i[1].srcs[0] == IndirectOperand(p.lookup("A3").id, 0, 448, TYPES["ud"], 8, 8, 1)
    assert i[2].dst == IndirectOperand(p.lookup("A11").id, 0, 64, TYPES["ud"], None, None, 1)
    assert i[2].srcs[0] == ImmediateOperand(TYPES["uw"], 0x100)
    assert i[3].srcs[0] == AddressOperand(p.lookup("A3").id, 0, 1) and i[3].dst == AddressOperand(p.lookup("A11").id, 0, 1)
    assert i[4].srcs[0] == AddressOfOperand(p.lookup("V21").id, 0)
    assert [type(s) for s in i[5].srcs] == [PredicateOperand, PredicateOperand]
    assert asm.parse("/* a raw operand */\n.decl V16 v_type=G type=ud num_elts=128 align=GRF\n"
                     ".decl B v_type=G type=ud num_elts=128 align=GRF\n.decl D v_type=G type=f num_elts=128 align=GRF\n"
                     "dpas.bf.bf.8.8 (M1, 16) D.0 %null.0 V16.0 B(0,0)").instructions[0].srcs[1] == RawOperand(1, 0)


def test_huge_literals_neither_hang_nor_crash():
    d = ".decl F v_type=G type=f num_elts=4\n.decl G v_type=G type=df num_elts=1\n"
    assert asm.parse(d + "mov (M1, 1) F(0,0)<1> 1e99999999:f").instructions[0].srcs[0].low == 0x7F800000
    assert asm.parse(d + "mov (M1, 1) F(0,0)<1> -1e-99999999:f").instructions[0].srcs[0].low == 0x80000000
    assert asm.parse(d + "mov (M1, 1) G(0,0)<1> 1e308:df").instructions[0].srcs[0].bits == 0x7FE1CCF385EBC8A0
    assert asm.parse(d + "mov (M1, 1) F(0,0)<1> .5:f").instructions[0].srcs[0].low == 0x3F000000
    for t in ("mov (M1, 1) F(0,0)<1> " + "9" * 5000 + ":d", "mov (M1, 1) F(" + "9" * 5000 + ",0)<1> 1:d",
              ".decl H v_type=G type=d num_elts=" + "9" * 5000):
        with pytest.raises(AsmSyntaxError, match="too"):
            asm.parse(d + t)
