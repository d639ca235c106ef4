"""AMX-MOVRS (TILELOADDRS, TILELOADDRST1; Diamond Rapids), the instruction added from its record alone: clang's
``__tile_loaddrs`` / ``__tile_stream_loaddrs`` compile (LLVM 22's ``llvm.x86.tileloaddrs64[.internal]`` /
``tileloaddrst164``), run compiled equal to eager and to numpy's int64 GEMM, assemble to the mnemonics, and a CPU
without AMX-MOVRS faults (#UD) alike in both runs."""

import numpy as np
import pytest
from click.testing import CliRunner

from systolic.compiler import compile_c, compile_ir
from systolic.errors import ClangUnavailable, InvalidOpcode

from .helpers import EXAMPLES, example


def _clang_or_skip():
    try:
        from systolic.llvmir.clang import find_clang
        find_clang()
    except ClangUnavailable as exc:
        pytest.skip(str(exc))


def _gemm_oracle(A, B, C, ktiles):
    a = A[:1024 * ktiles].view(np.int8).reshape(16, 64 * ktiles).astype(np.int64)
    b = B[:1024 * ktiles].view(np.int8).reshape(16 * ktiles, 16, 4).astype(np.int64)
    c = C.view(np.int32).reshape(16, 16).astype(np.int64) + np.einsum("mkq,knq->mn", a.reshape(16, 16 * ktiles, 4), b)
    return ((c + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


def test_the_c_example_equals_numpy_compiled_and_eager():
    _clang_or_skip()
    mod = compile_c(example("tile_gemm_movrs.c"), filename="tile_gemm_movrs.c")
    machine = mod.emit("machine")
    assert "TILELOADDRS tmm" in machine and "TILELOADDRST1 tmm" in machine
    asm = mod.emit("asm")
    assert "\ttileloaddrs\t" in asm and "\ttileloaddrst1\t" in asm
    rng = np.random.default_rng(7)
    A, B, C = (rng.integers(0, 256, n, dtype=np.uint8) for n in (4096, 4096, 1024))
    for ktiles in (1, 4):
        m1 = {"A": A.copy(), "B": B.copy(), "C": C.copy()}
        m2 = {"A": A.copy(), "B": B.copy(), "C": C.copy()}
        mod.run("gemm16", "A", "B", "C", ktiles, memory=m1, device="dmr")
        mod.run_eager("gemm16", "A", "B", "C", ktiles, memory=m2, device="dmr")
        assert np.array_equal(m1["C"].view(np.int32).reshape(16, 16), _gemm_oracle(A, B, C, ktiles))
        assert np.array_equal(m1["C"], m2["C"])


def test_a_cpu_without_movrs_faults_in_both_runs():
    _clang_or_skip()
    mod = compile_c(example("tile_gemm_movrs.c"), filename="tile_gemm_movrs.c")
    for run in (mod.run, mod.run_eager):
        mem = {"A": np.zeros(4096, np.uint8), "B": np.zeros(4096, np.uint8), "C": np.zeros(1024, np.uint8)}
        with pytest.raises(InvalidOpcode, match="TILELOADDRS needs AMX-MOVRS"):
            run("gemm16", "A", "B", "C", 1, memory=mem, device="graniterapids-d")


def test_systolic_amx_run_takes_the_c_program():
    _clang_or_skip()
    from systolic.cli import cli
    args = ["amx", "run", str(EXAMPLES / "tile_gemm_movrs.c"), "-f", "gemm16", "--arg", "@A", "--arg", "@B",
            "--arg", "@C", "--arg", "2"]
    ok = CliRunner().invoke(cli, args + ["--device", "dmr", "--trace"])
    assert ok.exit_code == 0, ok.output
    assert "TILELOADDRS" in ok.output and "TILELOADDRST1" in ok.output
    bad = CliRunner().invoke(cli, args + ["--device", "spr"])
    assert bad.exit_code != 0 and "AMX-MOVRS" in bad.output + str(bad.exception)


def test_systolic_run_checks_the_example_against_its_oracle():
    _clang_or_skip()
    from systolic.run import run_file
    rep = run_file(EXAMPLES / "tile_gemm_movrs.c")
    assert rep["kind"] == "c" and rep["verdict"] == "bit-identical"


SHAPED = """
@a = global [4096 x i8] zeroinitializer, align 64
@c = global [1024 x i8] zeroinitializer, align 64
define void @f(i16 %r, i16 %cb, i64 %stride) {{
entry:
  %t = call x86_amx @llvm.x86.{load}.internal(i16 %r, i16 %cb, ptr @a, i64 %stride)
  call void @llvm.x86.tilestored64.internal(i16 %r, i16 %cb, ptr @c, i64 64, x86_amx %t)
  ret void
}}
declare x86_amx @llvm.x86.{load}.internal(i16, i16, ptr, i64)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
"""


@pytest.mark.parametrize("load", ["tileloaddrs64", "tileloaddrst164"])
def test_the_shaped_intrinsics_load_what_tileloadd_loads(load):
    mine, ref = compile_ir(SHAPED.format(load=load)), compile_ir(SHAPED.format(load="tileloadd64"))
    rng = np.random.default_rng(len(load))
    a = rng.integers(0, 256, 4096, dtype=np.uint8)
    for r, cb, stride in ((16, 64, 64), (3, 20, 100), (7, 64, 256), (1, 4, 0)):
        m1 = {"a": a.copy(), "c": np.zeros(1024, np.uint8)}
        m2 = {"a": a.copy(), "c": np.zeros(1024, np.uint8)}
        mine.run("f", r, cb, stride, memory=m1, device="dmr")
        ref.run("f", r, cb, stride, memory=m2, device="dmr")
        want = np.zeros((16, 64), np.uint8)
        for i in range(r):
            want[i, :cb] = a[i * stride:i * stride + cb]
        assert np.array_equal(m1["c"], m2["c"]) and np.array_equal(m1["c"].reshape(16, 64), want)


def test_the_traced_python_intrinsics_emit_the_movrs_loads():
    from systolic.amx import intrinsics as I
    from systolic.compiler import compile_module
    from systolic.compiler.printer import print_module
    from systolic.compiler.tracing import trace

    def k(A, C):
        a, b, c = I.Tile(8, 32), I.Tile(8, 32), I.Tile(8, 32)
        I.tile_zero(c)
        I.tile_loaddrs(a, A, 64)
        I.tile_stream_loaddrs(b, A + 512, 64)
        I.tile_dpbssd(c, a, b)
        I.tile_stored(C, 64, c)

    m = trace(k, buffers={"A": 1024, "C": 1024})
    text = print_module(m)
    assert "@llvm.x86.tileloaddrs64.internal(i16 8, i16 32, ptr @A, i64 64)" in text
    assert "@llvm.x86.tileloaddrst164.internal(i16 8, i16 32" in text
    mod = compile_module(m)
    A = np.random.default_rng(3).integers(0, 256, 1024, dtype=np.uint8)
    C1, C2 = np.zeros(1024, np.uint8), np.zeros(1024, np.uint8)
    mod.run("k", memory={"A": A.copy(), "C": C1}, device="dmr")
    mod.run_eager("k", memory={"A": A.copy(), "C": C2}, device="dmr")
    a = A[:512].view(np.int8).reshape(8, 64)[:, :32].astype(np.int64).reshape(8, 8, 4)
    b = A[512:].view(np.int8).reshape(8, 64)[:, :32].astype(np.int64).reshape(8, 8, 4)
    want = np.einsum("mkq,knq->mn", a, b).astype(np.int32)
    assert np.array_equal(C1, C2)
    got = C1.reshape(16, 64)[:8, :32].copy().view(np.int32)
    assert np.array_equal(got, want)
