"""Bad input gets a typed systolic error: mutated IR through the whole compiler and runner, bad run arguments,
endless loops."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from systolic.compiler import compile_ir
from systolic.compiler.ir import PtrType, size_of
from systolic.errors import InvalidValue, MemoryFault, SystolicError

from .helpers import example

_SWAPS = [("32", "64"), ("64", "16"), ("i64 32", "i64 -32"), ("%row", "%col"), ("%conv.i31", "%row"),
          ("@buf2", "@buf"), ("%0", "%3"), ("%c.sroa.1149.0", "%a.sroa.1186.0"), ("tdpbssd", "tdpbuud"),
          ("label %if.end", "label %if.then"), ("%i.next", "%i"), ("%acc", "%c0"), ("16", "17"),
          ("x86_amx %b", "x86_amx %a"), ("i64 0, i64 0", "i64 0, i64 1020"), ("%steps", "%i"), ("sge", "slt"),
          ("%n", "%k"), ("i16 %m", "i16 %bk"), ("1024", "4096"), ("tilezero", "tileloadd64"), ("%v1", "%v2")]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(["api.ll", "final_form.ll", "spill_heavy.ll", "gemm_o2.ll"]),
       swaps=st.lists(st.tuples(st.sampled_from(_SWAPS), st.integers(0, 40)), min_size=1, max_size=3),
       args=st.lists(st.integers(-3, 70), min_size=6, max_size=6), seed=st.integers(0, 1000))
def test_mutated_programs_compile_and_run_or_raise_typed_errors(name, swaps, args, seed):
    text = example(name)
    for (a, b), nth in swaps:
        idx = -1
        for _ in range(nth % 7 + 1):
            idx = text.find(a, idx + 1)
            if idx < 0:
                break
        if idx >= 0:
            text = text[:idx] + b + text[idx + len(a):]
    try:
        mod = compile_ir(text)
    except SystolicError:
        return
    rng = np.random.default_rng(seed)
    for fname, f in mod.machine.functions.items():
        if f.declaration:
            continue
        memory = {g: rng.integers(0, 256, size_of(v.value_type), dtype=np.uint8)
                  for g, v in mod.machine.globals.items()}
        try:
            mod.run(fname, *[a if not isinstance(p.type, PtrType) else next(iter(memory), "none")
                             for a, p in zip(args, f.params)], memory=memory, max_steps=20000)
        except SystolicError:
            pass


def test_run_argument_errors():
    mod = compile_ir(example("api.ll"))
    mem = {"buf": np.zeros(1024, np.uint8), "buf2": np.zeros(1024, np.uint8)}
    with pytest.raises(InvalidValue, match="no function @nope"):
        mod.run("nope", memory=mem)
    with pytest.raises(InvalidValue, match="takes 3 arguments"):
        mod.run("api", 1, 8, memory=mem)
    with pytest.raises(InvalidValue, match="does not fit i16"):
        mod.run("api", 1, 70000, 32, memory=mem)
    with pytest.raises(InvalidValue, match="contiguous 1-D uint8"):
        mod.run("api", 1, 8, 32, memory={"buf": np.zeros(1024, np.int32)})
    with pytest.raises(InvalidValue, match="has 512 bytes; the global needs 1024"):
        mod.run("api", 1, 8, 32, memory={"buf": np.zeros(512, np.uint8)})
    with pytest.raises(InvalidValue, match="not a global"):
        mod.run("api", 1, 8, 32, memory={"nobuf": np.zeros(1024, np.uint8)})
    with pytest.raises(InvalidValue, match="unknown backend"):
        mod.run("api", 1, 8, 32, memory=mem, backend="gpu")


def test_tile_load_outside_memory_is_a_memory_fault():
    text = example("api.ll").replace("i64 0, i64 0), i64 32) #3\n  %1", "i64 0, i64 1000), i64 32) #3\n  %1", 1)
    mod = compile_ir(text)
    with pytest.raises(MemoryFault) as ei:
        mod.run("api", 1, 8, 32, memory={"buf": np.zeros(1024, np.uint8), "buf2": np.zeros(1024, np.uint8)})
    assert ei.value.row == 0 and ei.value.address == 1024


def test_endless_loop_is_stopped():
    text = "define void @f() {\nentry:\n  br label %l\nl:\n  br label %l\n}"
    with pytest.raises(InvalidValue, match="more than 1000 instructions"):
        compile_ir(text).run("f", max_steps=1000)


def test_scalar_semantics_of_the_runner():
    text = """
@out = global [64 x i8] zeroinitializer
define i32 @f(i32 %a, i32 %b) {
entry:
  %q = sdiv i32 %a, %b
  %r = srem i32 %a, %b
  %u = udiv i32 %a, %b
  %s = ashr i32 %a, 3
  %l = lshr i32 %a, 3
  %t = trunc i32 %a to i8
  %x = sext i8 %t to i64
  %p = getelementptr inbounds [64 x i8], ptr @out, i64 0, i64 8
  store i64 %x, ptr %p, align 1
  %c = icmp slt i32 %a, %b
  %m = select i1 %c, i32 %q, i32 %r
  %y = add i32 %m, %u
  %z = xor i32 %y, %s
  %w = or i32 %z, %l
  ret i32 %w
}"""
    mod = compile_ir(text)
    a, b = -17, 5
    r = mod.run("f", a, b)
    M = 2 ** 32
    q, rem = -3, -2                       # C semantics: truncation toward zero
    u = (a % M) // b
    s, lsr = (a >> 3) % M, (a % M) >> 3
    y = ((q if a < b else rem) + u) % M
    assert r.value == ((y ^ s) | lsr) % M
    assert int.from_bytes(r.memory["out"][8:16].tobytes(), "little", signed=True) == -17
    with pytest.raises(InvalidValue, match="by zero"):
        mod.run("f", 1, 0)


def test_endless_recursion_is_stopped():
    text = "define void @f() {\nentry:\n  call void @f()\n  ret void\n}"
    with pytest.raises(InvalidValue, match="calls nested deeper"):
        compile_ir(text).run("f")


@pytest.mark.parametrize("text, what", [
    ("@g = global " + "[2 x " * 40 + "i8" + "]" * 40 + " zeroinitializer", "nested deeper"),
    ("@g = global [1048576 x [1048576 x i8]] zeroinitializer", "larger than"),
    ("define void @f() {\nentry:\n  %x = add i0 0, 0\n  ret void\n}", "outside i1..i128"),
])
def test_reader_limits(text, what):
    from systolic.compiler.llvm_reader import parse
    from systolic.errors import AsmSyntaxError
    with pytest.raises(AsmSyntaxError, match=what):
        parse(text)
