"""compiler.ops: one definition per LLVM opcode owns read, print, verify and execute (issue 22 item 5)."""

import pytest

from systolic.compiler import compile_ir
from systolic.compiler.ir import I16, I32, ConstantInt
from systolic.compiler.llvm_reader import parse
from systolic.compiler.ops import OPS, OpDef, print_instr, verify_function
from systolic.errors import CompileError

from .helpers import example

EXAMPLES = ["api.ll", "final_form.ll", "spill_heavy.ll", "gemm_o2.ll", "tile_gemm_s8u8.ll"]


def test_every_opcode_has_one_definition_with_all_four_parts():
    for name in ("add", "xor", "icmp", "sext", "trunc", "bitcast", "select", "freeze", "phi", "br", "switch",
                 "ret", "unreachable", "call", "getelementptr", "load", "store", "alloca"):
        d = OPS[name]
        assert isinstance(d, OpDef) and name in d.names
        # each part is the opcode's own, not OpDef's placeholder (read/print/execute raise, verify passes all)
        for part in ("read", "print", "verify"):
            assert getattr(type(d), part) is not getattr(OpDef, part), (name, part)
        if d.terminator:        # the runner's block loop asks the terminator for the next block; ret returns
            assert name == "ret" or callable(getattr(type(d), "successor", None)), name
        else:
            assert type(d).execute is not OpDef.execute, name
    assert len({id(d) for d in OPS.values()}) == 15     # binary ops and casts share their definitions


@pytest.mark.parametrize("text, match", [
    ("define i32 @f(i32 %a) {\nentry:\n  %x = freeze i32 %a\n  ret i32 %x\n}\n", "freeze needs one i32"),
    ("define i32 @f(i32 %a) {\nentry:\n  %x = freeze i32 %a\n  ret i32 %x\n}\n", "ret of i16"),
])
def test_freeze_and_ret_verify(text, match):
    f = parse(text).functions["f"]
    verify_function(f)
    x, ret = list(f.instructions())
    if match.startswith("freeze"):
        x.operands[0] = ConstantInt(I16, 1)
    else:
        ret.operands[0] = ConstantInt(I16, 1)
    with pytest.raises(CompileError, match=match):
        verify_function(f)


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_verify(name):
    m = parse(example(name))
    for f in m.functions.values():
        verify_function(f)


def _f():
    return parse("define i32 @f(i32 %a, i1 %c) {\nentry:\n  %x = add nsw i32 %a, 1\n  %p = icmp slt i32 %x, 3\n"
                 "  %s = select i1 %p, i32 %x, i32 7\n  br i1 %c, label %t, label %e\nt:\n  ret i32 %s\ne:\n"
                 "  ret i32 0\n}\n").functions["f"]


def test_verify_names_the_broken_rule():
    f = _f()
    verify_function(f)
    x = next(i for i in f.instructions() if i.name == "x")
    x.operands[1] = ConstantInt(I16, 1)                    # add i32 %a, i16 1
    with pytest.raises(CompileError, match="add needs two i32 integer operands") as ei:
        verify_function(f)
    assert ei.value.location.startswith("@f:entry: %x")
    f = _f()
    next(i for i in f.instructions() if i.name == "p").attrs["pred"] = "olt"
    with pytest.raises(CompileError, match="icmp"):
        verify_function(f)
    f = _f()
    s = next(i for i in f.instructions() if i.name == "s")
    s.operands[2] = ConstantInt(I16, 7)
    with pytest.raises(CompileError, match="select"):
        verify_function(f)


def test_print_is_what_llvm_reads_back():
    f = _f()
    texts = [print_instr(i) for i in f.instructions()]
    assert texts[0] == "%x = add nsw i32 %a, 1" and texts[1] == "%p = icmp slt i32 %x, 3"
    assert texts[3] == "br i1 %c, label %t, label %e"
    mod = compile_ir("\n".join(["define i32 @f(i32 %a, i1 %c) {", "entry:"] + ["  " + t for t in texts[:4]]
                               + ["t:", "  " + texts[4], "e:", "  " + texts[5], "}"]))
    assert mod.run("f", 1, 1).value == 2 and mod.run("f", 5, 1).value == 7 and mod.run("f", 5, 0).value == 0
    assert I32 == f.ret_type


POISON_IR = """
@g = global i32 0
define i32 @sel(i32 %s, i32 %x) {
entry:
  %p = shl i32 %x, %s
  %t = trunc i32 %p to i16
  %z = zext i16 %t to i32
  %big = icmp uge i32 %s, 32
  %r = select i1 %big, i32 -1, i32 %z
  ret i32 %r
}
define i32 @frz(i32 %s) {
entry:
  %p = shl i32 1, %s
  %f = freeze i32 %p
  ret i32 %f
}
define i32 @br(i32 %s) {
entry:
  %p = shl i32 1, %s
  %c = icmp eq i32 %p, 0
  br i1 %c, label %a, label %b
a:
  ret i32 1
b:
  ret i32 2
}
define void @st(i32 %s) {
entry:
  %p = shl i32 1, %s
  store i32 %p, ptr @g
  ret void
}
define i32 @cz(i32 %x) {
entry:
  %z = icmp eq i32 %x, 0
  %t = call i32 @llvm.cttz.i32(i32 %x, i1 true)
  %r = select i1 %z, i32 32, i32 %t
  ret i32 %r
}
declare i32 @llvm.cttz.i32(i32, i1)
"""


def test_poison_propagates_and_only_its_undefined_uses_are_refused():
    """LangRef "Poison Values": a shift by >= the width is poison, which trunc/zext carry and select discards;
    freeze makes it a value; a branch on it or a store of it is undefined behaviour, refused."""
    from systolic.errors import InvalidValue
    mod = compile_ir(POISON_IR)
    assert mod.run("sel", 40, 3).value == 0xFFFFFFFF and mod.run("sel", 4, 0x1234).value == 0x2340
    assert mod.run("frz", 33).value == 0 and mod.run("frz", 3).value == 8
    assert mod.run("cz", 0).value == 32 and mod.run("cz", 8).value == 3
    with pytest.raises(InvalidValue, match="poison"):
        mod.run("br", 32)
    with pytest.raises(InvalidValue, match="poison"):
        mod.run("st", 99)
    assert mod.run("br", 1).value == 2
