"""Issue 22 item 3: every AMX intrinsic of LLVM 22 that the TileMachine models compiles and runs bit- and
fault-identical to eager execution (INT8, BF16, FP16, COMPLEX, FP8); every tile cast width of 1024 bytes; the
families the TileMachine lacks (TF32, the AVX512 row conversions) and the physical-register forms are typed
refusals naming the intrinsic. (AMX-MOVRS was refused here until its records were added: tests/compiler/test_movrs.py.)"""

import numpy as np
import pytest

from systolic.compiler import compile_ir
from systolic.compiler.amx_table import FAMILIES, MODELLED_DOTS, PHYSICAL, SHAPED, UNMODELLED
from systolic.errors import InvalidOpcode, UnmodelledConstruct

from .helpers import rand_bytes

DOT = """
@a = global [1024 x i8] zeroinitializer, align 64
@b = global [1024 x i8] zeroinitializer, align 64
@c = global [1024 x i8] zeroinitializer, align 64
define void @dot(i16 %m, i16 %n, i16 %k) {{
entry:
  %ta = call x86_amx @llvm.x86.tileloadd64.internal(i16 %m, i16 %k, ptr @a, i64 64)
  %k4 = lshr i16 %k, 2
  %tb = call x86_amx @llvm.x86.tileloadd64.internal(i16 %k4, i16 %n, ptr @b, i64 64)
  %tc = call x86_amx @llvm.x86.tileloadd64.internal(i16 %m, i16 %n, ptr @c, i64 64)
  %r = call x86_amx @llvm.x86.{m}.internal(i16 %m, i16 %n, i16 %k, x86_amx %tc, x86_amx %ta, x86_amx %tb)
  call void @llvm.x86.tilestored64.internal(i16 %m, i16 %n, ptr @c, i64 64, x86_amx %r)
  ret void
}}
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.{m}.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
"""


def _operands(rng, mnemonic):
    """Finite operands of the instruction's element types (NaN-free, so every byte is a value)."""
    if mnemonic.startswith("tdpb") and mnemonic.endswith("d"):
        return rand_bytes(rng, 1024), rand_bytes(rng, 1024), rand_bytes(rng, 1024)
    a = rng.integers(-8, 8, 1024).astype(np.int8).view(np.uint8)   # small fp8/fp16 bit patterns: finite
    b = rng.integers(-8, 8, 1024).astype(np.int8).view(np.uint8)
    if "fp16" in mnemonic or "bf16" in mnemonic:
        a = rng.standard_normal(512).astype(np.float16).view(np.uint8)
        b = rng.standard_normal(512).astype(np.float16).view(np.uint8)
    c = rng.standard_normal(256).astype(np.float32).view(np.uint8)
    return a, b, c


@pytest.mark.parametrize("mnemonic", MODELLED_DOTS)
def test_every_modelled_tmul_compiles_equal_to_eager(mnemonic):
    mod = compile_ir(DOT.format(m=mnemonic))
    assert mnemonic.upper() in mod.emit("machine")
    rng = np.random.default_rng(len(mnemonic))
    a, b, c = _operands(rng, mnemonic)
    for m, n, k in ((16, 64, 64), (5, 16, 32)):
        m1 = {"a": a.copy(), "b": b.copy(), "c": c.copy()}
        m2 = {"a": a.copy(), "b": b.copy(), "c": c.copy()}
        mod.run("dot", m, n, k, memory=m1, device="diamondrapids")
        mod.run_eager("dot", m, n, k, memory=m2, device="diamondrapids")
        assert np.array_equal(m1["c"], m2["c"])
        assert not np.array_equal(m1["c"][:64], c[:64])


@pytest.mark.parametrize("mnemonic", ["tcmmimfp16ps", "tdpbf8ps"])
def test_missing_feature_faults_alike(mnemonic):
    """Sapphire Rapids has neither AMX-COMPLEX nor AMX-FP8: #UD in both runs."""
    mod = compile_ir(DOT.format(m=mnemonic))
    mem = {"a": np.zeros(1024, np.uint8), "b": np.zeros(1024, np.uint8), "c": np.zeros(1024, np.uint8)}
    with pytest.raises(InvalidOpcode, match=mnemonic.upper()):
        mod.run("dot", 16, 64, 64, memory={k: v.copy() for k, v in mem.items()}, device="sapphirerapids")
    with pytest.raises(InvalidOpcode, match=mnemonic.upper()):
        mod.run_eager("dot", 16, 64, 64, memory={k: v.copy() for k, v in mem.items()}, device="sapphirerapids")


CASTS = """
@a = global [1024 x i8] zeroinitializer, align 64
@c = global [2048 x i8] zeroinitializer, align 64
define void @f(i1 %c, i16 %r) {{
entry:
  %t = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 64, ptr @a, i64 64)
  %v = call {vt} @llvm.x86.cast.tile.to.vector.{suffix}(x86_amx %t)
  br i1 %c, label %yes, label %no
yes:
  br label %join
no:
  br label %join
join:
  %p = phi {vt} [ %v, %yes ], [ %v, %no ]
  %u = call x86_amx @llvm.x86.cast.vector.to.tile.{suffix}({vt} %p)
  call void @llvm.x86.tilestored64.internal(i16 %r, i16 64, ptr getelementptr (i8, ptr @c, i64 1024), i64 64, x86_amx %u)
  store {vt} %p, ptr @c, align 64
  ret void
}}
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
declare {vt} @llvm.x86.cast.tile.to.vector.{suffix}(x86_amx)
declare x86_amx @llvm.x86.cast.vector.to.tile.{suffix}({vt})
"""


@pytest.mark.parametrize("vt, suffix", [("<256 x i32>", "v256i32"), ("<512 x i16>", "v512i16"),
                                        ("<1024 x i8>", "v1024i8"), ("<128 x i64>", "v128i64")])
def test_every_1024_byte_cast_width_is_the_same_tile_image(vt, suffix):
    mod = compile_ir(CASTS.format(vt=vt, suffix=suffix))
    a = np.arange(1024, dtype=np.int64).astype(np.uint8)
    for cond in (0, 1):
        m1 = {"a": a.copy(), "c": np.zeros(2048, np.uint8)}
        m2 = {"a": a.copy(), "c": np.zeros(2048, np.uint8)}
        mod.run("f", cond, 5, memory=m1)
        mod.run_eager("f", cond, 5, memory=m2)
        assert np.array_equal(m1["c"], m2["c"])
        want = np.zeros(1024, np.uint8)
        want[:5 * 64] = a[:5 * 64]
        assert np.array_equal(m1["c"][1024:], want)      # the tile store of the 5 x 64 tile
        assert np.array_equal(m1["c"][:1024], want)      # the <...> store: the 16 x 64 image, rows 5.. zero


def test_casts_of_other_sizes_are_refused():
    text = CASTS.format(vt="<256 x i8>", suffix="v256i8").replace("ptr @c, align 64", "ptr @c, align 16")
    mod = compile_ir(text)
    with pytest.raises(UnmodelledConstruct, match="1024-byte"):
        mod.run("f", 1, 4)


_SIGNATURES = {
    "load": ("x86_amx", "i16 1, i16 64, ptr @a, i64 64", "i16, i16, ptr, i64"),
    "dot": ("x86_amx", "i16 1, i16 64, i16 64, x86_amx %z, x86_amx %z, x86_amx %z",
            "i16, i16, i16, x86_amx, x86_amx, x86_amx"),
    "row": (None, "i16 1, i16 64, x86_amx %z, i32 0", "i16, i16, x86_amx, i32"),
}
_ROW_RESULT = {"tcvtrowd2ps": "<16 x float>", "tcvtrowps2bf16h": "<32 x bfloat>", "tcvtrowps2bf16l": "<32 x bfloat>",
               "tcvtrowps2phh": "<32 x half>", "tcvtrowps2phl": "<32 x half>", "tilemovrow": "<16 x i32>"}


@pytest.mark.parametrize("name", [n for n, a in SHAPED.items() if not a.modelled])
def test_unmodelled_families_are_typed_refusals(name):
    a = SHAPED[name]
    ret, args, params = _SIGNATURES[a.kind]
    ret = ret or _ROW_RESULT[a.mnemonic]
    text = f"""@a = global [1024 x i8] zeroinitializer
define i32 @ok() {{
entry:
  ret i32 7
}}
define void @g() {{
entry:
  %z = call x86_amx @llvm.x86.tilezero.internal(i16 1, i16 64)
  %r = call {ret} @{name}({args})
  ret void
}}
declare x86_amx @llvm.x86.tilezero.internal(i16, i16)
declare {ret} @{name}({params})
"""
    mod = compile_ir(text)
    assert mod.run("ok").value == 7
    with pytest.raises(UnmodelledConstruct) as ei:
        mod.run("g")
    assert name in str(ei.value) and a.family in str(ei.value) and ei.value.values["line"] == 9


def test_the_table_knows_llvm_22s_families():
    fams = {f for _k, f, _ok in FAMILIES.values()}
    assert {"AMX-TILE", "AMX-INT8", "AMX-BF16", "AMX-FP16", "AMX-COMPLEX", "AMX-FP8", "AMX-TF32", "AMX-MOVRS",
            "AMX-AVX512"} == fams
    assert set(UNMODELLED) == {"tmmultf32ps", "tcvtrowd2ps", "tcvtrowps2bf16h",
                               "tcvtrowps2bf16l", "tcvtrowps2phh", "tcvtrowps2phl", "tilemovrow"}
    assert FAMILIES["tileloaddrs"] == FAMILIES["tileloaddrst1"] == ("load", "AMX-MOVRS", True)
    # the machine models exactly the TMULs the table calls modelled
    from systolic.amx.machine import TMUL_MNEMONICS
    assert set(MODELLED_DOTS) == set(TMUL_MNEMONICS)
    assert "llvm.x86.tdpbssd" in PHYSICAL and "llvm.x86.tileloadd64.internal" in SHAPED
