"""The clang-style intrinsics (eager and traced) and the `systolic amx compile/run` commands."""

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from systolic.amx import TileMachine
from systolic.amx import intrinsics as I
from systolic.cli import cli, main
from systolic.compiler import compile_ir, compile_module
from systolic.compiler.printer import print_module
from systolic.compiler.tracing import for_range, if_, trace
from systolic.errors import CompileError, InvalidOpcode, InvalidValue, MemoryFault

from .helpers import EXAMPLES, example, native


def s8(x):
    return x - 256 if x >= 128 else x


def test_eager_tdpbusd_matches_exact_integers():
    rng = np.random.default_rng(7)
    A = rng.integers(0, 256, 2048, dtype=np.uint8)
    C = rng.integers(0, 256, 1024, dtype=np.uint8)
    M, K, N = 5, 3, 7
    a, b, c = I.Tile(M, 4 * K), I.Tile(K, 4 * N), I.Tile(M, 4 * N)
    I.tile_loadd(a, I.Ptr(A), 64)
    I.tile_loadd(b, I.Ptr(A) + 1024, 128)
    I.tile_loadd(c, I.Ptr(C), 64)
    I.tile_dpbusd(c, a, b)
    out = np.zeros(1024, np.uint8)
    I.tile_stored(I.Ptr(out), 64, c)
    for m in range(M):
        for n in range(N):
            acc = int.from_bytes(C[m * 64 + 4 * n:m * 64 + 4 * n + 4].tobytes(), "little", signed=True)
            for k in range(K):
                for q in range(4):
                    acc += int(A[m * 64 + 4 * k + q]) * s8(int(A[1024 + k * 128 + 4 * n + q]))
            acc = (acc + 2 ** 31) % 2 ** 32 - 2 ** 31
            assert int.from_bytes(out[m * 64 + 4 * n:m * 64 + 4 * n + 4].tobytes(), "little", signed=True) == acc
    assert (out.reshape(16, 64)[M:] == 0).all() and (out.reshape(16, 64)[:, 4 * N:] == 0).all()
    assert np.array_equal(c.numpy(np.int32), out.reshape(16, 64)[:M, :4 * N].view(np.int32))


def test_eager_tiles_follow_the_hardware_rules():
    buf = np.zeros(1024, np.uint8)
    a, b, c = I.Tile(16, 32), I.Tile(16, 32), I.Tile(16, 32)
    with pytest.raises(InvalidOpcode):
        I.tile_dpbssd(c, a, b)                          # K = 8 dwords but B has 16 rows
    t = I.Tile(16, 64)
    with pytest.raises(MemoryFault) as ei:
        I.tile_loadd(t, I.Ptr(buf) + 64, 64)            # row 15 ends at 64 + 15*64 + 64 > 1024
    assert ei.value.row == 15
    with pytest.raises(InvalidValue, match="initialised once"):
        t.rows = 8
    with pytest.raises(InvalidValue):
        I.tile_loadd(t, [1, 2, 3], 64)
    zero = I.Tile(4, 8)
    assert (zero.numpy() == 0).all() and zero.numpy().shape == (4, 8)


def test_eager_on_the_spec_path_machine_agrees():
    rng = np.random.default_rng(1)
    A = rng.integers(0, 256, 1024, dtype=np.uint8)
    out1, out2 = np.zeros(1024, np.uint8), np.zeros(1024, np.uint8)

    def prog(out):
        a, b, c = I.Tile(4, 16), I.Tile(4, 16), I.Tile(4, 16)
        I.tile_loadd(a, I.Ptr(A), 64)
        I.tile_loadd(b, I.Ptr(A) + 256, 64)
        I.tile_dpbf16ps(c, a, b)
        I.tile_stored(I.Ptr(out), 64, c)

    prog(out1)
    with I.use_machine(TileMachine(path="spec")):
        prog(out2)
    assert np.array_equal(out1, out2)


def test_tracing_emits_the_internal_intrinsics_with_shapes():
    def k(n, A, C):
        a, c = I.Tile(8, 32), I.Tile(8, 32)
        b = I.Tile(8, 32)
        I.tile_zero(c)
        for_range(0, n, lambda i: (I.tile_loadd(a, A + i * 32, 64), I.tile_stream_loadd(b, A, 64),
                                   I.tile_dpbssd(c, a, b)))
        I.tile_stored(C, 64, c)

    m = trace(k, scalars={"n": "i32"}, buffers={"A": 4096, "C": 1024})
    text = print_module(m)
    assert "call x86_amx @llvm.x86.tilezero.internal(i16 8, i16 32)" in text
    assert "@llvm.x86.tileloaddt164.internal(i16 8, i16 32, ptr @A, i64 64)" in text
    assert "phi x86_amx" in text and "phi i32" in text
    assert "@A = global [4096 x i8] zeroinitializer, align 64" in text
    mod = compile_module(m)
    A = (np.arange(4096) % 7).astype(np.uint8)
    for n in (0, 1, 3):
        C1, C2 = np.zeros(1024, np.uint8), np.zeros(1024, np.uint8)
        mod.run("k", n, memory={"A": A.copy(), "C": C1})
        mod.run_eager("k", n, memory={"A": A.copy(), "C": C2})
        expect = np.zeros((8, 8), np.int64)
        for i in range(n):
            a = A[i * 32:].astype(np.int64)
            aa = np.array([[a[r * 64 + c] for c in range(32)] for r in range(8)]).reshape(8, 8, 4)
            bb = A[:8 * 64].reshape(8, 64)[:, :32].astype(np.int64).reshape(8, 8, 4)
            expect += np.einsum("mkq,knq->mn", aa, bb)  # bytes < 7: unsigned == signed
        assert np.array_equal(C1.reshape(16, 64)[:8, :32].view(np.int32), expect.astype(np.int32))
        assert np.array_equal(C1, C2)


def test_traced_values_refuse_python_control_flow():
    def bad(n, A):
        if n > 0:
            pass

    with pytest.raises(CompileError, match="if_"):
        trace(bad, scalars={"n": "i32"}, buffers={"A": 64})

    def escape(c, A):
        keep = []
        if_(c != 0, lambda: keep.append(I.Tile(4, 4)) or I.tile_loadd(keep[0], A, 64))
        I.tile_stored(A, 64, keep[0])

    with pytest.raises(CompileError, match="created inside"):
        trace(escape, scalars={"c": "i32"}, buffers={"A": 1024})


# ------------------------------------------------------------------------------------------------ CLI
def run_cli(*args):
    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return r


def test_cli_compile_emits_each_form():
    api = str(EXAMPLES / "api.ll")
    r = run_cli("amx", "compile", api, "--emit", "machine")
    assert r.exit_code == 0 and "LDTILECFG" in r.output and "TDPBSSD tmm2, tmm0, tmm1" in r.output
    r = run_cli("amx", "compile", api, "--emit", "pseudo")
    assert "PTDPBSSDV %row, %conv.i31, %conv.i31" in r.output and "PLDTILECFGV" in r.output
    r = run_cli("amx", "compile", api, "--emit", "ir")
    assert "@llvm.x86.tdpbssd.internal" in r.output and "x86_amx" in r.output
    r = run_cli("amx", "compile", api, "--emit", "llvm")
    # llvmlite prints every global name quoted: @"llvm.x86.tdpbssd"
    assert re.search(r'call void @"?llvm\.x86\.tdpbssd"?\(i8 2, i8 0, i8 1\)', r.output), r.output
    r = run_cli("amx", "compile", api, "--emit", "asm")
    assert "ldtilecfg" in r.output and "tdpbssd\t%tmm1, %tmm0, %tmm2" in r.output and "tilerelease" in r.output
    r = run_cli("amx", "compile", str(EXAMPLES / "final_form.ll"), "--emit", "asm-internal")
    assert "tdpbssd" in r.output and "ldtilecfg" in r.output
    r = run_cli("amx", "compile", api, "--print-after", "shapes", "--print-after", "regalloc", "--stats")
    assert "; *** IR after shapes ***" in r.output and "; *** IR after regalloc ***" in r.output
    assert '"copies_eliminated": 7' in r.output


def main_error(capsys, *args) -> str:
    """Run the real entry point; a SystolicError must end as one 'error: ...' line and exit status 1."""
    with pytest.raises(SystemExit) as ei:
        main(list(args))
    assert ei.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    return err


def test_cli_run_and_errors(tmp_path, capsys):
    buf = (np.arange(1024) % 251).astype(np.uint8)
    np.save(tmp_path / "buf.npy", buf)
    api = str(EXAMPLES / "api.ll")
    r = run_cli("amx", "run", api, "--function", "api", "--arg", "1", "--arg", "8", "--arg", "32",
                "--mem", f"buf={tmp_path / 'buf.npy'}", "--json", "--save", str(tmp_path / "out"))
    assert r.exit_code == 0
    out = json.loads(r.output)
    got = np.load(tmp_path / "out" / "buf.npy")
    want = buf.copy()
    compile_ir(example("api.ll")).run("api", 1, 8, 32, memory={"buf": want})
    assert np.array_equal(got, want) and out["globals"]["buf"]["head"] == want[:16].tolist()
    r = run_cli("amx", "run", api, "--function", "api", "--arg", "1", "--arg", "8", "--arg", "32",
                "--mem", f"buf={tmp_path / 'buf.npy'}", "--eager")
    assert r.exit_code == 0 and "@api returned None" in r.output
    assert "#UD TDPBSSD" in main_error(capsys, "amx", "run", api, "-f", "api", "--arg", "1", "--arg", "16",
                                       "--arg", "32")
    bad = tmp_path / "bad.ll"
    bad.write_text("define void @f() {\nentry:\n  %x = add i32 1\n  ret void\n}\n")
    assert "bad.ll:4:3:" in main_error(capsys, "amx", "compile", str(bad))
    assert "--arg" in main_error(capsys, "amx", "run", api, "-f", "api", "--arg", "x")
    assert "--mem" in main_error(capsys, "amx", "run", api, "-f", "api", "--mem", "nofile")


def test_cli_run_older_backend_beside_a_path_that_says_otherwise(monkeypatch):
    """--backend emulator / spec are --backend cpu --path fast / spec: a --path saying otherwise was silently
    overridden; now a usage error. Agreeing spellings run, and give the default run's bits (api.ll)."""
    api = str(EXAMPLES / "api.ll")
    base = ("amx", "run", api, "--function", "api", "--arg", "1", "--arg", "8", "--arg", "32", "--json")
    want = json.loads(run_cli(*base).output)["globals"]
    for old, path, other in (("emulator", "fast", "spec"), ("spec", "spec", "fast")):
        r = CliRunner().invoke(cli, [*base, "--backend", old, "--path", other])
        assert r.exit_code == 2 and f"--backend {old} is the older spelling of --backend cpu --path {path}, not " \
            f"the --path {other} also given" in r.output, r.output
        assert json.loads(run_cli(*base, "--backend", old, "--path", path).output)["globals"] == want
        assert json.loads(run_cli(*base, "--backend", old).output)["globals"] == want
    from systolic.compiler.module import CompiledModule
    seen = []                                  # --eager runs where --backend / --path say (was: always cpu, fast)
    real = CompiledModule.run_eager

    def spy(self, *args, **kw):
        seen.append((kw.get("backend"), kw.get("path")))
        return real(self, *args, **kw)
    monkeypatch.setattr(CompiledModule, "run_eager", spy)
    for opts in ([], ["--path", "spec"], ["--backend", "spec"]):
        assert json.loads(run_cli(*base, "--eager", *opts).output)["globals"] == want
    assert seen == [("cpu", "fast"), ("cpu", "spec"), ("cpu", "spec")]


# ------------------------------------------------------------------------------------------------ native
@native
@pytest.mark.parametrize("cond, row, col", [(1, 8, 32), (0, 16, 64)])
def test_api_natively_gives_the_same_bits(cond, row, col):
    mod = compile_ir(example("api.ll"))
    rng = np.random.default_rng(11)
    buf, buf2 = rng.integers(0, 256, 1024, dtype=np.uint8), rng.integers(0, 256, 1024, dtype=np.uint8)
    ref = {"buf": buf.copy(), "buf2": buf2.copy()}
    mod.run("api", cond, row, col, memory=ref)
    for backend in ("native", "llvm"):
        mem = {"buf": buf.copy(), "buf2": buf2.copy()}
        mod.run("api", cond, row, col, memory=mem, backend=backend)
        assert np.array_equal(mem["buf"], ref["buf"])
    with pytest.raises(InvalidOpcode):  # checked before anything reaches silicon
        mod.run("api", 1, 16, 32, memory={"buf": buf.copy(), "buf2": buf2.copy()}, backend="llvm")


def test_jit_call_binds_globals_and_arguments_without_tiles():
    """The JIT runner's plumbing (external globals bound to the caller's arrays, ctypes arguments, return value)
    on a function without tile instructions, so it runs on any x86-64."""
    import platform
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("x86-64 only")
    text = """
@g = global [16 x i8] zeroinitializer, align 64
define i32 @f(i16 signext %a, i32 %b, ptr %p) {
entry:
  %x = sext i16 %a to i32
  %y = mul i32 %x, %b
  %q = getelementptr inbounds i8, ptr %p, i64 4
  store i32 %y, ptr %q, align 1
  %z = load i8, ptr @g, align 1
  %w = zext i8 %z to i32
  %r = add i32 %y, %w
  ret i32 %r
}
"""
    mod = compile_ir(text)
    g = np.zeros(16, np.uint8)
    g[0] = 7
    res = mod._jit_call("f", (-3, 5, "g"), {"g": g})
    assert res.value == (-15 + 7) % 2 ** 32
    assert int.from_bytes(g[4:8].tobytes(), "little", signed=True) == -15
    ref = mod.run("f", -3, 5, "g", memory={"g": np.array([7] + [0] * 15, np.uint8)})
    assert ref.value == res.value and np.array_equal(ref.memory["g"], g)


def test_branches_and_loops_over_shapes():
    """Control flow decided by the shape arguments themselves: the stride depends on the row count, the loop
    runs once per dword of the tile's width."""
    from systolic.compiler.tracing import run_eager

    def shaped(row, col, A, C):
        a, b, c = I.Tile(row, col), I.Tile(row, col), I.Tile(row, col)
        if_(row > 8, lambda: I.tile_loadd(a, A, 64), lambda: I.tile_loadd(a, A + 16, 128))
        I.tile_loadd(b, A + 1024, 64)
        for_range(0, col >> 2, lambda i: (I.tile_dpbuud(c, a, b), I.tile_loadd(b, A + 1024 + i * 4, 64)))
        I.tile_stored(C, 64, c)

    mod = compile_module(trace(shaped, scalars={"row": "i16", "col": "i16"}, buffers={"A": 4096, "C": 1024}))
    A = np.random.default_rng(4).integers(0, 256, 4096, dtype=np.uint8)
    for row, col in [(4, 16), (12, 48), (16, 64), (9, 36)]:
        C1, C2 = np.zeros(1024, np.uint8), np.zeros(1024, np.uint8)
        mod.run("shaped", row, col, memory={"A": A.copy(), "C": C1})
        run_eager(shaped, scalars={"row": row, "col": col}, buffers={"A": A.copy(), "C": C2})
        assert np.array_equal(C1, C2) and C1.any()
    with pytest.raises(InvalidOpcode):  # col/4 != row: B's rows do not match A's K
        mod.run("shaped", 8, 16, memory={"A": A.copy(), "C": np.zeros(1024, np.uint8)})


def test_call_arguments_are_checked():
    from systolic.compiler.tracing import call

    def g(x, A):
        t = I.Tile(1, 4)
        I.tile_loadd(t, A + x, 64)
        I.tile_stored(A, 64, t)

    def f(A):
        call(g, x=4, A=A)

    m = trace(g, scalars={"x": "i32"}, buffers={"A": 64})
    m = trace(f, buffers={"A": 64}, module=m)
    assert "call void @g(i32 4)" in print_module(m)
    A = np.arange(64, dtype=np.uint8)
    compile_module(m).run("f", memory={"A": A})
    assert A[:4].tolist() == [4, 5, 6, 7]

    def f2(A):
        call(g, A=A)

    with pytest.raises(InvalidValue, match="missing argument 'x'"):
        trace(f2, buffers={"A": 64}, module=trace(g, scalars={"x": "i32"}, buffers={"A": 64}))

    def f3(A):
        call(f3, A=A)

    with pytest.raises(CompileError, match="trace 'f3' into this module first|into this module first"):
        trace(f3, buffers={"A": 64}, name="other")


def test_fp16_needs_a_cpu_with_amx_fp16():
    """tile_dpfp16ps (AMX-FP16): #UD on Sapphire Rapids, runs on Granite Rapids; compiled equals eager."""
    def k(A, C):
        a, b, c = I.Tile(8, 32), I.Tile(8, 32), I.Tile(8, 32)
        I.tile_loadd(a, A, 64)
        I.tile_loadd(b, A + 512, 64)
        I.tile_dpfp16ps(c, a, b)
        I.tile_stored(C, 64, c)

    mod = compile_module(trace(k, buffers={"A": 1024, "C": 1024}))
    A = np.random.default_rng(2).integers(0, 256, 1024, dtype=np.uint8)
    with pytest.raises(InvalidOpcode):
        mod.run("k", memory={"A": A.copy(), "C": np.zeros(1024, np.uint8)})
    C1, C2 = np.zeros(1024, np.uint8), np.zeros(1024, np.uint8)
    mod.run("k", memory={"A": A.copy(), "C": C1}, device="graniterapids")
    from systolic.compiler.tracing import run_eager
    run_eager(k, buffers={"A": A.copy(), "C": C2}, machine=TileMachine("graniterapids"))
    assert np.array_equal(C1, C2) and C1.any()


# ------------------------------------------------------------------------------------------ value checks
def test_eager_api_refuses_values_it_would_otherwise_truncate():
    buf = (np.arange(256) % 251).astype(np.uint8)
    for rows, cols in [(-1, 4), (2 ** 20, 4), (2, 65536), (2, -4)]:
        with pytest.raises(InvalidValue, match="outside 0..65535") as ei:
            I.Tile(rows, cols)
        assert ei.value.values["max"] == 65535
    for bad in (4.9, 4.0, True, "4", None):
        with pytest.raises(InvalidValue, match="stride must be an integer"):
            I.tile_loadd(I.Tile(2, 4), I.Ptr(buf), bad)
        with pytest.raises(InvalidValue, match="stride must be an integer"):
            I.tile_stored(I.Ptr(buf), bad, I.Tile(2, 4))
    with pytest.raises(InvalidValue, match="outside"):
        I.tile_loadd(I.Tile(2, 4), I.Ptr(buf), 2 ** 63)
    for bad in (1.5, 1.0, "1", False):
        with pytest.raises(InvalidValue, match="offset must be an integer"):
            I.Ptr(buf) + bad
        with pytest.raises(InvalidValue, match="offset must be an integer"):
            I.Ptr(buf, bad)
    # integral values of numpy integer types are fine, and the stride really is the one given
    t = I.Tile(np.int64(2), np.uint16(4))
    I.tile_loadd(t, I.Ptr(buf) + np.int32(1), np.int64(5))
    assert t.numpy().tolist() == [buf[1:5].tolist(), buf[6:10].tolist()]
    # inside trace() a plain int shape is checked the same way
    with pytest.raises(InvalidValue, match="outside 0..65535"):
        trace(lambda: I.Tile(-1, 4), name="neg")


def test_tile_numpy_refuses_dtypes_that_do_not_fit_a_row():
    t = I.Tile(2, 6)
    with pytest.raises(InvalidValue, match="6 bytes does not hold whole int32") as ei:
        t.numpy(np.int32)
    assert ei.value.values == {"colsb": 6, "dtype": "int32", "itemsize": 4}
    with pytest.raises(InvalidValue, match="not a numpy dtype"):
        t.numpy("nonsense")
    with pytest.raises(InvalidValue, match="cannot be viewed"):
        t.numpy(object)
    assert t.numpy(np.int16).shape == (2, 3) and I.Tile(2, 8).numpy(np.float64).shape == (2, 1)
