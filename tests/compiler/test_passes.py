"""Each pass on its own: shape propagation, lowering, ldtilecfg placement, register allocation."""

import numpy as np
import pytest

from systolic.compiler import compile_ir
from systolic.compiler.cfg import verify_ssa
from systolic.compiler.ir import ConstantInt, X86_AMX
from systolic.compiler.llvm_reader import parse
from systolic.compiler.lower import dce, lower
from systolic.compiler.regalloc import allocate
from systolic.compiler.shapes import propagate
from systolic.compiler.tileconfig import place_config
from systolic.errors import CompileError, IRVerifyError

from .helpers import example

DECL = """
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.tilezero.internal(i16, i16)
declare x86_amx @llvm.x86.tdpbssd.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
"""


def fn(text, name="f"):
    m = parse(text if "@api" in text else text + DECL)
    return m, m.functions[name]


def pipeline(text, name="f", upto="regalloc"):
    m, f = fn(text, name)
    verify_ssa(f)
    propagate(m, f)
    if upto == "shapes":
        return m, f
    lower(m, f)
    dce(f)
    if upto == "lower":
        return m, f
    place_config(m, f)
    if upto == "tileconfig":
        return m, f
    allocate(m, f)
    return m, f


# ------------------------------------------------------------------------------------------- shapes
def test_shapes_of_the_api_example():
    m = parse(example("api.ll"))
    f = m.functions["api"]
    shapes = propagate(m, f)
    row = f.params[1]
    conv = next(i for i in f.instructions() if i.name == "conv.i31")
    tiles = [i for i in f.instructions() if i.type == X86_AMX]
    assert len(tiles) == 10  # 6 loads, 3 phis, 1 dot: all now x86_amx
    for t in tiles:
        assert shapes[id(t)].rows is row and shapes[id(t)].cols is conv
    names = {i.intrinsic for i in f.instructions() if i.opcode == "call"}
    assert names == {"llvm.x86.tileloadd64.internal", "llvm.x86.tdpbssd.internal",
                     "llvm.x86.tilestored64.internal"}


O0 = """
define void @f(i16 %m, i16 %n, i16 %k, ptr %pa, ptr %pb, ptr %pc) {
entry:
  %a = load <256 x i32>, ptr %pa, align 64
  %b = load <256 x i32>, ptr %pb, align 64
  %c = load <256 x i32>, ptr %pc, align 64
  %ta = bitcast <256 x i32> %a to x86_amx
  %tb = bitcast <256 x i32> %b to x86_amx
  %tc = bitcast <256 x i32> %c to x86_amx
  %d = call x86_amx @llvm.x86.tdpbssd.internal(i16 %m, i16 %n, i16 %k, x86_amx %tc, x86_amx %ta, x86_amx %tb)
  %vd = bitcast x86_amx %d to <256 x i32>
  store <256 x i32> %vd, ptr %pc, align 64
  ret void
}
"""


def test_vector_loads_and_stores_become_shaped_tile_loads_and_stores():
    m, f = pipeline(O0, upto="shapes")
    calls = [i for i in f.instructions() if i.opcode == "call"]
    assert [c.intrinsic for c in calls] == ["llvm.x86.tileloadd64.internal"] * 3 + \
        ["llvm.x86.tdpbssd.internal", "llvm.x86.tilestored64.internal"]
    m_, n_, k_ = f.params[:3]
    la, lb, lc = calls[:3]
    assert la.operands[0] is m_ and la.operands[1] is k_          # A: (m, k)
    k4 = lb.operands[0]                                           # B: (k/4, n)
    assert k4.opcode == "lshr" and k4.operands[0] is k_ and k4.operands[1].value == 2 and lb.operands[1] is n_
    assert lc.operands[0] is m_ and lc.operands[1] is n_          # C: (m, n)
    for c in calls[:3] + calls[4:]:
        assert c.operands[3].value == 64                          # <256 x i32> in memory: 64-byte rows
    assert not any(i.opcode == "bitcast" for i in f.instructions())


def test_constant_k_folds_b_rows():
    text = O0.replace("i16 %k, ptr %pa", "ptr %pa").replace("i16 %n, i16 %k,", "i16 %n, i16 64,")
    m, f = pipeline(text, upto="shapes")
    lb = [i for i in f.instructions() if i.opcode == "call"][1]
    assert isinstance(lb.operands[0], ConstantInt) and lb.operands[0].value == 16


def test_unknown_shape_is_an_error():
    text = """
define void @f(ptr %p, ptr %q) {
entry:
  %a = load <256 x i32>, ptr %p
  %t = bitcast <256 x i32> %a to x86_amx
  %v = bitcast x86_amx %t to <256 x i32>
  store <256 x i32> %v, ptr %q
  ret void
}"""
    with pytest.raises(CompileError, match="shape of tile value %.* is unknown"):
        pipeline(text, upto="shapes")


def test_conflicting_shapes_at_a_phi():
    text = """
define void @f(i1 %c, ptr %p) {
entry:
  br i1 %c, label %a, label %b
a:
  %x = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr %p, i64 64)
  br label %j
b:
  %y = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 32, ptr %p, i64 64)
  br label %j
j:
  %z = phi x86_amx [ %x, %a ], [ %y, %b ]
  call void @llvm.x86.tilestored64.internal(i16 8, i16 32, ptr %p, i64 64, x86_amx %z)
  ret void
}"""
    with pytest.raises(CompileError, match="conflicting tile shapes at %z"):
        pipeline(text, upto="shapes")


def test_undef_into_a_tile_phi_becomes_tilezero():
    text = """
define void @f(i1 %c, ptr %p) {
entry:
  br i1 %c, label %a, label %j
a:
  %x = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr %p, i64 64)
  br label %j
j:
  %z = phi x86_amx [ %x, %a ], [ undef, %entry ]
  call void @llvm.x86.tilestored64.internal(i16 8, i16 32, ptr %p, i64 64, x86_amx %z)
  ret void
}"""
    m, f = pipeline(text, upto="shapes")
    z = f.entry.instrs[-2]
    assert z.intrinsic == "llvm.x86.tilezero.internal" and z.operands[0].value == 8
    # run it, the pointer argument naming a global
    text_g = "@buf = global [1024 x i8] zeroinitializer\n" + text
    mod = compile_ir(text_g + DECL)
    buf = np.full(1024, 7, np.uint8)
    mod.run("f", 0, "buf", memory={"buf": buf})
    assert (buf.reshape(16, 64)[:8, :32] == 0).all() and (buf.reshape(16, 64)[:8, 32:] == 7).all()
    buf = np.full(1024, 7, np.uint8)
    mod.run("f", 1, "buf", memory={"buf": buf})
    assert (buf == 7).all()


def test_physical_intrinsics_in_the_input_are_refused():
    text = """
declare void @llvm.x86.tileloadd64(i8, ptr, i64)
define void @f(ptr %p) {
entry:
  call void @llvm.x86.tileloadd64(i8 0, ptr %p, i64 64)
  ret void
}"""
    # the refusal is per function (the reader reads every module LLVM accepts): running @f raises it
    mod = compile_ir(text)
    with pytest.raises(CompileError, match="physical-register form"):
        mod.run("f", "buf")
    assert "f" in mod.source.refused


def test_ssa_violation_is_reported():
    text = """
define void @f(i1 %c) {
entry:
  br i1 %c, label %a, label %j
a:
  %x = add i32 1, 2
  br label %j
j:
  %y = add i32 %x, 1
  ret void
}"""
    # LLVM's verifier (the front door) reports it now, as a typed IRVerifyError
    with pytest.raises(IRVerifyError, match="does not dominate"):
        compile_ir(text)


# ------------------------------------------------------------------------------------------- lowering
def test_lowering_to_pseudos_keeps_shape_operands():
    m, f = pipeline(O0, upto="lower")
    ops = [i.opcode for i in f.instructions() if i.opcode.startswith("P")]
    assert ops == ["PTILELOADDV"] * 3 + ["PTDPBSSDV", "PTILESTOREDV"]
    dot = next(i for i in f.instructions() if i.opcode == "PTDPBSSDV")
    assert [o.name for o in dot.operands[:3]] == ["m", "n", "k"]


def test_dead_tile_definitions_are_kept_as_llvm_does():
    # llc (LLVM 22, -O3) keeps an unused tilezero: "tilezero %tmm1" between ldtilecfg and tilerelease, with
    # its 17 x 3 shape in the configuration (the tile intrinsics have no memory attributes)
    text = """
define void @f(ptr %p) {
entry:
  %x = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr %p, i64 64)
  %y = call x86_amx @llvm.x86.tilezero.internal(i16 17, i16 3)
  call void @llvm.x86.tilestored64.internal(i16 8, i16 32, ptr %p, i64 64, x86_amx %x)
  ret void
}"""
    m, f = pipeline(text, upto="lower")
    assert [i.opcode for i in f.instructions()] == ["PTILELOADDV", "PTILEZEROV", "PTILESTOREDV", "ret"]
    m, f = pipeline(text)
    ops = [(i.opcode, i.attrs.get("tiles")) for i in f.instructions() if i.opcode.startswith("TILE")]
    assert ops == [("TILELOADD", [0]), ("TILEZERO", [1]), ("TILESTORED", [0]), ("TILERELEASE", None)]
    assert {r: (s.rows.value, s.cols.value) for r, s in f.meta["regalloc"]["shapes"].items()} == \
        {0: (8, 32), 1: (17, 3)}


def test_dead_tile_phis_are_removed():
    text = """
define void @f(i16 %r, i1 %c) {
entry:
  %z = call x86_amx @llvm.x86.tilezero.internal(i16 %r, i16 64)
  br i1 %c, label %a, label %b
a:
  br label %b
b:
  %p = phi x86_amx [ %z, %entry ], [ %z, %a ]
  ret void
}"""
    m, f = pipeline(text, upto="lower")
    assert [i.opcode for i in f.instructions()] == ["PTILEZEROV", "br", "br", "ret"]


# ------------------------------------------------------------------------------------------- ldtilecfg
def test_ldtilecfg_follows_the_last_shape_definition():
    m, f = pipeline(example("api.ll"), name="api", upto="tileconfig")
    entry = f.entry
    ops = [i.opcode if i.opcode != "ashr" else "ashr:" + i.name for i in entry.instrs]
    k = ops.index("PLDTILECFGV")
    assert ops[k - 1] == "ashr:conv.i31" and ops[k + 1] == "br"
    rets = [b for b in f.blocks if b.terminator.opcode == "ret"]
    assert all(b.instrs[-2].opcode == "TILERELEASE" for b in rets)


def test_shape_defined_after_a_tile_instruction_gets_a_second_configuration():
    text = """
@buf = global [4096 x i8] zeroinitializer
define void @f(i16 %r) {
entry:
  %x = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr @buf, i64 64)
  %r2 = add i16 %r, 1
  %y = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r2, i16 32, ptr @buf, i64 64)
  %p = getelementptr i8, ptr @buf, i64 2048
  call void @llvm.x86.tilestored64.internal(i16 8, i16 32, ptr %p, i64 64, x86_amx %x)
  %q = getelementptr i8, ptr @buf, i64 3072
  call void @llvm.x86.tilestored64.internal(i16 %r2, i16 32, ptr %q, i64 64, x86_amx %y)
  ret void
}"""
    mod = compile_ir(text + DECL)
    machine = mod.emit("machine")
    assert machine.count("LDTILECFG") == 2
    assert mod.info["f"]["spilled"] == ["x"]  # LDTILECFG zeroes the tiles: %x is kept in memory across it
    buf = np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8)
    for r in (3, 15):
        b1, b2 = buf.copy(), buf.copy()
        mod.run("f", r, memory={"buf": b1})
        mod.run_eager("f", r, memory={"buf": b2})
        assert np.array_equal(b1, b2) and not np.array_equal(b1, buf)


def test_shapes_from_phis_on_different_paths_get_one_configuration_each():
    """The shape of LLVM's amx-ldtilecfg-insert.ll test4 (written anew): the row count is a phi in each of two
    blocks reached from both branches."""
    text = """
@buf = global [3072 x i8] zeroinitializer
define void @f(i16 %r, i16 %c, i1 %p, i1 %q) {
entry:
  br i1 %p, label %t, label %e
t:
  %r1 = add i16 %r, 1
  br i1 %q, label %amx1, label %amx2
e:
  %r2 = sub i16 %r, 1
  br i1 %q, label %amx2, label %amx1
amx1:
  %s1 = phi i16 [ %r1, %t ], [ %r2, %e ]
  %z = call x86_amx @llvm.x86.tilezero.internal(i16 %s1, i16 %c)
  call void @llvm.x86.tilestored64.internal(i16 %s1, i16 %c, ptr @buf, i64 32, x86_amx %z)
  br label %x
amx2:
  %s2 = phi i16 [ %r1, %t ], [ %r2, %e ]
  %p1 = getelementptr inbounds i8, ptr @buf, i64 1024
  %l = call x86_amx @llvm.x86.tileloadd64.internal(i16 %s2, i16 %c, ptr %p1, i64 32)
  call void @llvm.x86.tilestored64.internal(i16 %s2, i16 %c, ptr @buf, i64 32, x86_amx %l)
  br label %x
x:
  ret void
}"""
    mod = compile_ir(text + DECL)
    assert mod.emit("machine").count("LDTILECFG") == 2
    buf = np.random.default_rng(1).integers(0, 256, 3072, dtype=np.uint8)
    for p in (0, 1):
        for q in (0, 1):
            b1, b2 = buf.copy(), buf.copy()
            mod.run("f", 7, 32, p, q, memory={"buf": b1})
            mod.run_eager("f", 7, 32, p, q, memory={"buf": b2})
            assert np.array_equal(b1, b2) and not np.array_equal(b1, buf)


def test_unplaceable_configuration_gives_llvm_error_with_location():
    text = """
@buf = global [4096 x i8] zeroinitializer
define void @g(i16 %n) {
entry:
  br label %h
h:
  %i = phi i16 [ 0, %entry ], [ %i2, %l ]
  %s = add i16 %i, 1
  %u = call x86_amx @llvm.x86.tilezero.internal(i16 %s, i16 64)
  call void @llvm.x86.tilestored64.internal(i16 %s, i16 64, ptr @buf, i64 64, x86_amx %u)
  br label %l
l:
  %r = add i16 %i, 2
  %t = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 64, ptr @buf, i64 64)
  call void @llvm.x86.tilestored64.internal(i16 %r, i16 64, ptr @buf, i64 128, x86_amx %t)
  %i2 = add i16 %i, 1
  %c = icmp slt i16 %i2, %n
  br i1 %c, label %h, label %x
x:
  ret void
}"""
    with pytest.raises(CompileError) as ei:
        compile_ir(text + DECL, source="loop.ll")
    e = ei.value
    assert "g: Failed to config tile register, please define the shape earlier" in str(e)
    assert e.location.startswith("@g:h: %u") and "line 9" in e.location


def test_shapes_on_different_paths_cannot_be_configured():
    text = """
define void @f(i1 %c, i16 %r, ptr %p) {
entry:
  br i1 %c, label %a, label %b
a:
  %r1 = add i16 %r, 1
  br label %j
b:
  %r2 = add i16 %r, 2
  br label %j
j:
  %x = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r1, i16 32, ptr %p, i64 64)
  ret void
}"""
    with pytest.raises((CompileError, IRVerifyError), match="does not dominate|please define the shape earlier"):
        compile_ir(text)


CALLS = """
@buf = global [4096 x i8] zeroinitializer, align 64

define void @g(i16 %r) {
entry:
  %x = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 64, ptr @buf, i64 64)
  %p = getelementptr inbounds i8, ptr @buf, i64 2048
  call void @llvm.x86.tilestored64.internal(i16 %r, i16 64, ptr %p, i64 64, x86_amx %x)
  ret void
}

define void @f(i16 %r) {
entry:
  %a = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 64, ptr @buf, i64 64)
  %q = getelementptr inbounds i8, ptr @buf, i64 1024
  %b = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 64, ptr %q, i64 64)
  call void @g(i16 4)
  %c = call x86_amx @llvm.x86.tdpbssd.internal(i16 %r, i16 64, i16 64, x86_amx %a, x86_amx %b, x86_amx %b)
  %s = getelementptr inbounds i8, ptr @buf, i64 3072
  call void @llvm.x86.tilestored64.internal(i16 %r, i16 64, ptr %s, i64 64, x86_amx %c)
  ret void
}
"""


def test_configuration_reloaded_after_calls_and_live_tiles_spilled_around_them():
    mod = compile_ir(CALLS + DECL)
    text = mod.emit("machine")
    f_text = text[text.index("function @f"):]
    lines = [l.strip() for l in f_text.splitlines()]
    k = next(i for i, l in enumerate(lines) if l.startswith("call void @g"))
    assert lines[k + 1] == "LDTILECFG %tilecfg1" or lines[k + 1].startswith("LDTILECFG")
    assert set(mod.info["f"]["spilled"]) >= {"a", "b"}   # live across the call: caller-saved tiles
    # semantics (r = 16): g copies 4 rows of buf[0:1024] to buf[2048:]; f computes c = a + b . b where a and b were
    # loaded before the call (b used as both A and B gets its own tile), and stores c at 3072
    rng = np.random.default_rng(3)
    buf = rng.integers(0, 256, 4096, dtype=np.uint8)
    want = buf.copy()
    mod.run("f", 16, memory={"buf": buf})
    a = want[:1024].view(np.int32).reshape(16, 16).astype(np.int64)
    b = want[1024:2048].view(np.int8).reshape(16, 16, 4).astype(np.int64)
    c = a + np.einsum("mkq,knq->mn", b, b)
    c = ((c + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)
    want[2048:2048 + 4 * 64] = want[:4 * 64]  # g is called with r = 4
    want[3072:] = c.reshape(-1).view(np.uint8)
    assert np.array_equal(buf, want)


def test_calls_with_rejected_shapes_fault_like_the_hardware():
    mod = compile_ir(CALLS + DECL)
    buf = np.zeros(4096, np.uint8)
    from systolic.errors import InvalidOpcode
    with pytest.raises(InvalidOpcode):  # A.colsb / 4 = 16 != B.rows = 4
        mod.run("f", 4, memory={"buf": buf})


# a tile whose row count changes every iteration: i+1 rows of 16 bytes from A + 64 i to C + 1024 i. As traced
# before, the store recomputes its shape operand (%v16) after the load; a store configures nothing (it uses its
# tile's shape; X86PreTileConfig collects shapes from tile definitions only), so one configuration in the loop
LOOPSHAPE = """
@A = global [8192 x i8] zeroinitializer, align 64
@C = global [8192 x i8] zeroinitializer, align 64

define void @loopshape(i16 %n) {
entry:
  %v1 = sext i16 %n to i32
  br label %loop.header2
loop.header2:
  %i5 = phi i32 [ 0, %entry ], [ %v17, %loop.body3 ]
  %v6 = icmp slt i32 %i5, %v1
  br i1 %v6, label %loop.body3, label %loop.exit4
loop.body3:
  %v7 = add i32 %i5, 1
  %v8 = mul i32 %i5, 64
  %v9 = sext i32 %v8 to i64
  %v10 = getelementptr inbounds i8, ptr @A, i64 %v9
  %v11 = trunc i32 %v7 to i16
  %v12 = call x86_amx @llvm.x86.tileloadd64.internal(i16 %v11, i16 16, ptr %v10, i64 64)
  %v13 = mul i32 %i5, 1024
  %v14 = sext i32 %v13 to i64
  %v15 = getelementptr inbounds i8, ptr @C, i64 %v14
  %v16 = trunc i32 %v7 to i16
  call void @llvm.x86.tilestored64.internal(i16 %v16, i16 16, ptr %v15, i64 64, x86_amx %v12)
  %v17 = add nsw i32 %i5, 1
  br label %loop.header2
loop.exit4:
  ret void
}
"""


def loopshape(n, A, C):
    from systolic.amx import intrinsics as I
    from systolic.compiler.tracing import for_range

    def body(i):
        t = I.Tile(i + 1, 16)
        I.tile_loadd(t, A + i * 64, 64)
        I.tile_stored(C + i * 1024, 64, t)
    for_range(0, n, body)


def _loopshape_bytes(A: np.ndarray, n: int) -> np.ndarray:
    """The byte oracle: iteration i copies rows r < i+1 (16 bytes each, stride 64) from A + 64 i to C + 1024 i."""
    C = np.zeros(8192, np.uint8)
    for i in range(n):
        for r in range(i + 1):
            for c in range(16):
                C[1024 * i + 64 * r + c] = A[64 * i + 64 * r + c]
    return C


@pytest.mark.parametrize("source", ["traced", "ir"])
def test_a_shape_that_changes_every_iteration_is_configured_once_in_the_loop(source):
    from systolic.compiler import compile_module
    from systolic.compiler.tracing import trace
    if source == "traced":
        mod = compile_module(trace(loopshape, scalars={"n": "i16"}, buffers={"A": 8192, "C": 8192}))
    else:
        mod = compile_ir(LOOPSHAPE + DECL)
    f = mod.machine.functions["loopshape"]
    cfgs = [i for i in f.instructions() if i.opcode == "LDTILECFG"]
    assert len(cfgs) == 1 and cfgs[0].block.name.startswith("loop.body")
    assert mod.info["loopshape"]["spilled"] == []
    A = np.random.default_rng(2).integers(0, 256, 8192, dtype=np.uint8)
    for n in (0, 1, 5, 8):
        C1, C2 = np.zeros(8192, np.uint8), np.zeros(8192, np.uint8)
        mod.run("loopshape", n, memory={"A": A.copy(), "C": C1})
        mod.run_eager("loopshape", n, memory={"A": A.copy(), "C": C2})
        want = _loopshape_bytes(A, n)
        assert np.array_equal(C1, want) and np.array_equal(C2, want)


def test_a_traced_i32_shape_is_one_value_and_one_configuration():
    """Tile(n, 16) with an i32 n: the tracer truncates n once, where the tile is created, and every intrinsic
    reuses that value (before: a new trunc per intrinsic gave a second LDTILECFG and a spill around it)."""
    from systolic.amx import intrinsics as I
    from systolic.compiler import compile_module
    from systolic.compiler.tracing import trace

    def k(n, A, C):
        a, b, c = I.Tile(n, 16), I.Tile(4, 16), I.Tile(n, 16)
        I.tile_loadd(a, A, 64)
        I.tile_loadd(b, A + 1024, 64)
        I.tile_dpbssd(c, a, b)
        I.tile_stored(C, 64, c)

    module = trace(k, scalars={"n": "i32"}, buffers={"A": 2048, "C": 1024})
    assert [i.opcode for i in module.functions["k"].instructions()].count("trunc") == 1
    mod = compile_module(module)
    assert mod.emit("machine").count("LDTILECFG") == 1 and mod.info["k"]["spilled"] == []
    A = np.random.default_rng(3).integers(0, 256, 2048, dtype=np.uint8)
    for n in (1, 16):
        C1, C2 = np.zeros(1024, np.uint8), np.zeros(1024, np.uint8)
        mod.run("k", n, memory={"A": A.copy(), "C": C1})
        mod.run_eager("k", n, memory={"A": A.copy(), "C": C2})
        a = A[:1024].reshape(16, 64)[:n, :16].astype(np.int8).astype(np.int64)
        b = A[1024:].reshape(16, 64)[:4, :16].astype(np.int8).astype(np.int64)
        want = np.zeros((16, 64), np.uint8)
        want[:n, :16] = np.array([[sum(int(a[m, 4 * kk + q]) * int(b[kk, 4 * j + q])
                                       for kk in range(4) for q in range(4)) for j in range(4)]
                                  for m in range(n)], np.int32).view(np.uint8)
        assert np.array_equal(C1.reshape(16, 64), want) and np.array_equal(C1, C2)


def test_a_traced_i32_shape_written_on_both_branches_is_one_shape_at_the_phi():
    """Both branches load Tile(n, 16) (i32 n); the phi joins two tiles of the one shape value cast where the tile
    was created (before: a trunc per branch, refused as "conflicting tile shapes")."""
    from systolic.amx import intrinsics as I
    from systolic.compiler import compile_module
    from systolic.compiler.tracing import if_, trace

    def k(n, c, A, C):
        t = I.Tile(n, 16)
        if_(c != 0, lambda: I.tile_loadd(t, A, 64), lambda: I.tile_loadd(t, A + 64, 64))
        I.tile_stored(C, 64, t)

    mod = compile_module(trace(k, scalars={"n": "i32", "c": "i32"}, buffers={"A": 2048, "C": 1024}))
    assert mod.emit("machine").count("LDTILECFG") == 1
    A = np.random.default_rng(4).integers(0, 256, 2048, dtype=np.uint8)
    for n, c in ((3, 0), (16, 1)):
        C1 = np.zeros(1024, np.uint8)
        mod.run("k", n, c, memory={"A": A.copy(), "C": C1})
        want = np.zeros((16, 64), np.uint8)
        src = A[(0 if c else 64):][:1024].reshape(16, 64)
        want[:n, :16] = src[:n, :16]
        assert np.array_equal(C1.reshape(16, 64), want)


# ------------------------------------------------------------------------------------------- regalloc
def test_more_than_eight_shapes_is_a_compile_error():
    body = "\n".join(f"  %t{i} = call x86_amx @llvm.x86.tileloadd64.internal(i16 {i + 1}, i16 64, ptr %p, i64 64)"
                     for i in range(9))
    stores = "\n".join(f"  call void @llvm.x86.tilestored64.internal(i16 {i + 1}, i16 64, ptr %p, i64 64, "
                       f"x86_amx %t{i})" for i in range(9))
    text = f"define void @f(ptr %p) {{\nentry:\n{body}\n{stores}\n  ret void\n}}"
    with pytest.raises(CompileError, match="9 different tile shapes"):
        compile_ir(text + DECL)


def test_three_tmul_shape_classes_of_three_tiles_need_nine_tiles_and_are_refused():
    """Each TMUL's C, A and B share one shape (4x16, 8x32, 16x64): an instruction needs its three tiles at once
    and a tile keeps one shape per configuration, so 3 + 3 + 3 = 9 tiles of 8 (LLVM: "ran out of registers")."""
    from systolic.amx import intrinsics as I
    from systolic.compiler import compile_module
    from systolic.compiler.tracing import trace

    def k(A, C):
        for rows in (4, 8, 16):
            c, a, b = (I.Tile(rows, 4 * rows) for _ in range(3))
            I.tile_loadd(a, A, 64)
            I.tile_loadd(b, A, 64)
            I.tile_dpbssd(c, a, b)
            I.tile_stored(C, 64, c)

    with pytest.raises(CompileError, match="need 9 tiles") as ei:
        compile_module(trace(k, buffers={"A": 1024, "C": 1024}))
    assert ei.value.values["need"] == [3, 3, 3] and ei.value.rule and ei.value.location == "@k"


def test_spills_reload_with_the_same_shape_at_stride_64_and_each_tile_keeps_one_shape():
    mod = compile_ir(example("spill_heavy.ll"))
    info = mod.info["spill_heavy"]
    assert len(info["spilled"]) >= 4
    f = mod.machine.functions["spill_heavy"]
    slots = {i.name for i in f.entry.instrs if i.opcode == "alloca" and i.name.startswith("spill.")}
    assert slots
    spill_ops = [i for i in f.instructions() if i.opcode in ("TILELOADD", "TILESTORED")
                 and getattr(i.operands[0], "name", None) in slots]
    assert spill_ops and all(i.operands[1].value == 64 for i in spill_ops)
    assert {str(s) for s in info["shapes"].values()} == {"(16, 64)"}


def test_two_shape_classes_get_disjoint_tiles():
    text = """
@buf = global [4096 x i8] zeroinitializer, align 64
define void @f() {
entry:
""" + "\n".join(
        f"  %a{i} = call x86_amx @llvm.x86.tileloadd64.internal(i16 {8 if i % 2 else 16}, i16 64, ptr @buf, i64 64)"
        for i in range(10)) + "\n" + "\n".join(
        f"  call void @llvm.x86.tilestored64.internal(i16 {8 if i % 2 else 16}, i16 64, ptr @buf, i64 64, "
        f"x86_amx %a{i})" for i in range(10)) + "\n  ret void\n}\n"
    mod = compile_ir(text + DECL)
    info = mod.info["f"]
    by_reg = info["shapes"]
    assert {str(s) for s in by_reg.values()} == {"(8, 64)", "(16, 64)"}
    # every tile instruction on tmm t agrees with the shape the configuration gives t: run and compare
    rng = np.random.default_rng(0)
    buf = rng.integers(0, 256, 4096, dtype=np.uint8)
    want = buf.copy()
    mod.run("f", memory={"buf": buf})
    want_img = want[:1024].reshape(16, 64)
    assert np.array_equal(buf[:1024].reshape(16, 64), want_img)
    for name, reg in info["assign"].items():
        if name.startswith("a"):
            rows = 8 if int(name[1:]) % 2 else 16
            assert str(by_reg[reg]) == f"({rows}, 64)"


def test_pools_of_a_function_without_tile_variables_are_empty():
    # the allocator is never left with zero shape classes by the pipeline (no tile instruction: allocate
    # returns early), but the pool sizing must not fail on it either
    from systolic.compiler.regalloc import _Allocator
    m, f = pipeline("define void @f() {\nentry:\n  ret void\n}", upto="tileconfig")
    f.meta["shapes"] = {}
    assert _Allocator(m, f).pools([], {}, {}) == []
    assert allocate(m, f)["assign"] == {}
