"""C and C++ in (issue 22 item 1): the seed's example written with clang's AMX API (examples/amx/api.c), compiled by
clang at -O0 .. -O3 with and without -g, runs equal to the eager run of the same module and to exact integer
arithmetic; per-function refusals name the C line; the CLI and ``systolic run`` take .c/.cpp files."""

import json
import pathlib

import numpy as np
import pytest
from click.testing import CliRunner

from systolic.compiler import compile_c
from systolic.errors import ClangUnavailable, SourceCompileError, UnmodelledConstruct

from .helpers import EXAMPLES, example, rand_bytes
from .test_api_example import exact


def _clang_or_skip():
    try:
        from systolic.llvmir.clang import find_clang
        find_clang()
    except ClangUnavailable as exc:
        pytest.skip(str(exc))


_CACHE: dict = {}


def api_c(opt, debug):
    key = (opt, debug)
    if key not in _CACHE:
        _clang_or_skip()
        _CACHE[key] = compile_c(example("api.c"), opt=opt, debug=debug, filename="api.c")
    return _CACHE[key]


@pytest.mark.parametrize("opt, debug", [("-O0", False), ("-O0", True), ("-O1", False), ("-O2", False),
                                        ("-O2", True), ("-O3", False)])
def test_seed_example_from_c_equals_eager_and_exact(opt, debug):
    mod = api_c(opt, debug)
    assert not mod.source.refused
    rng = np.random.default_rng(len(opt) + debug)
    for cond, row, col in ((1, 8, 32), (0, 16, 64), (3, 4, 16)):
        buf, buf2 = rand_bytes(rng, 1024), rand_bytes(rng, 1024)
        m1 = {"buf": buf.copy(), "buf2": buf2.copy()}
        m2 = {"buf": buf.copy(), "buf2": buf2.copy()}
        mod.run("api", cond, row, col, memory=m1)
        mod.run_eager("api", cond, row, col, memory=m2)
        want = exact(cond, row, col, buf.copy(), buf2.copy())
        assert np.array_equal(m1["buf"], want) and np.array_equal(m1["buf"], m2["buf"])
        assert np.array_equal(m1["buf2"], buf2)
    info = mod.info["api"]
    assert info["spilled"] == [] and sorted(info["shapes"]) == [0, 1, 2]


def test_o0_is_brought_to_ssa_before_reading():
    """clang -O0 keeps the __tile1024i structs in allocas, copied with memcpy; sroa/instcombine/simplifycfg
    (c_frontend.O0_PASSES) leave tile values in SSA: no alloca, memcpy or struct remains in @api."""
    mod = api_c("-O0", False)
    f = mod.source.functions["api"]
    assert not [i for i in f.instructions() if i.opcode == "alloca"]
    assert not [i for i in f.instructions() if i.opcode == "call" and i.intrinsic.startswith("llvm.mem")]
    assert "__tile1024i" not in mod.llvm_ir.split("define")[1]


def test_same_faults_at_every_level():
    """A shape the hardware rejects (rows 16, colsb 32: B would need 8 rows of... K/4 = 8 != 16) faults alike."""
    from systolic.errors import InvalidOpcode
    for opt in ("-O0", "-O2"):
        mod = api_c(opt, False)
        mem = {"buf": np.zeros(1024, np.uint8), "buf2": np.zeros(1024, np.uint8)}
        with pytest.raises(InvalidOpcode):
            mod.run("api", 1, 16, 32, memory=dict(mem))
        with pytest.raises(InvalidOpcode):
            mod.run_eager("api", 1, 16, 32, memory={k: v.copy() for k, v in mem.items()})


MIXED = """#include <immintrin.h>
char buf[1024];
int scale(int x) {
  return (int)(x * 2.5f);
}
int twice(int x) { return 2 * x; }
void zero_tile(short rows, short cols) {
  __tile1024i t = {rows, cols};
  __tile_zero(&t);
  __tile_stored(buf, 64, t);
}
"""


def test_refusal_is_per_function_and_names_the_c_line():
    _clang_or_skip()
    mod = compile_c(MIXED, opt="-O2", debug=True, filename="mixed.c")
    assert set(mod.source.refused) == {"scale"}
    err = mod.source.refused["scale"]
    assert isinstance(err, UnmodelledConstruct)
    assert err.values["function"] == "scale" and "sitofp" in err.values["construct"]
    assert err.values["source"].startswith("mixed.c:4:")      # the C line of (int)(x * 2.5f)
    assert mod.run("twice", 21).value == 42
    buf = np.full(1024, 7, np.uint8)
    mod.run("zero_tile", 4, 16, memory={"buf": buf})
    assert not buf[:16].any() and not buf[192:208].any() and buf[16:64].all() and buf[256:].all()
    with pytest.raises(UnmodelledConstruct, match="scale"):
        mod.run("scale", 1)


def test_cpp_source():
    _clang_or_skip()
    src = ('#include <immintrin.h>\nchar buf[1024];\nextern "C" void f(unsigned short r) {\n'
           "  __tile1024i t = {r, 64};\n  __tile_loadd(&t, buf, 64);\n  __tile_stored(buf + 512, 64, t);\n}\n")
    mod = compile_c(src, language="c++", opt="-O1")
    buf = np.arange(1024, dtype=np.int64).astype(np.uint8)
    mod.run("f", 8, memory={"buf": buf})
    assert np.array_equal(buf[512:], buf[:512])


def test_cpp_functions_by_their_source_name():
    _clang_or_skip()
    src = ("#include <immintrin.h>\nchar buf[1024];\nvoid f(unsigned short r) {\n  __tile1024i t = {r, 64};\n"
           "  __tile_loadd(&t, buf, 64);\n  __tile_stored(buf + 512, 64, t);\n}\n"
           "int g(int x) { return x + 1; }\nint g(int x, int y) { return x + y; }\n")
    mod = compile_c(src, language="c++")
    buf = np.arange(1024, dtype=np.int64).astype(np.uint8)
    mod.run("f", 8, memory={"buf": buf})                  # _Z1ft
    assert np.array_equal(buf[512:], buf[:512])
    from systolic.errors import InvalidValue
    with pytest.raises(InvalidValue, match="overloads") as ei:
        mod.run("g", 1)
    assert ei.value.values["candidates"] == ["_Z1gi", "_Z1gii"]
    assert mod.run("_Z1gii", 2, 3).value == 5


def test_clang_errors_are_typed_with_file_line_column():
    _clang_or_skip()
    with pytest.raises(SourceCompileError) as ei:
        compile_c("void f(void) { undeclared(); }\n", filename="bad.c")
    assert ei.value.diagnostics and ei.value.diagnostics[0].line == 1


def test_cli_compile_and_run_c(tmp_path):
    _clang_or_skip()
    from systolic.cli import cli as main
    runner = CliRunner()
    api = str(EXAMPLES / "api.c")
    r = runner.invoke(main, ["amx", "compile", api, "--cflags", "-O0 -g", "--emit", "machine"])
    assert r.exit_code == 0, r.output
    assert r.output.count("LDTILECFG") == 1 and "TDPBSSD" in r.output
    rng = np.random.default_rng(3)
    np.save(tmp_path / "buf.npy", rand_bytes(rng, 1024))
    np.save(tmp_path / "buf2.npy", rand_bytes(rng, 1024))
    outs = []
    for flags in ("-O0", "-O2", "-g"):
        r = runner.invoke(main, ["amx", "run", api, "--cflags", flags, "--function", "api", "--arg", "1", "--arg",
                                 "16", "--arg", "64", "--mem", f"buf={tmp_path / 'buf.npy'}", "--mem",
                                 f"buf2={tmp_path / 'buf2.npy'}", "--json"])
        assert r.exit_code == 0, r.output
        outs.append(json.loads(r.output)["globals"])
    assert outs[0] == outs[1] == outs[2]
    r = runner.invoke(main, ["amx", "run", str(EXAMPLES / "api.ll"), "--cflags", "-O0", "--function", "api"])
    assert r.exit_code != 0 and "--cflags applies to C and C++" in (r.output + str(r.exception))


def test_systolic_run_takes_a_c_program_with_its_header():
    _clang_or_skip()
    from systolic.run import run_file
    rep = run_file(EXAMPLES / "tile_gemm_s8u8.c")
    assert rep["kind"] == "c" and rep["verdict"] == "bit-identical"
    assert rep["extras"]["function"] == "gemm16"


def test_the_c_example_is_the_seed_program():
    """examples/amx/api.c is section 4's C code with clang's API names (__tile1024i for __tile)."""
    text = (pathlib.Path(EXAMPLES) / "api.c").read_text()
    for line in ("__tile1024i a = {row, col};", "__tile_loadd(&a, buf, STRIDE);", "__tile_loadd(&c, buf2, STRIDE);",
                 "__tile_dpbssd(&c, a, b);", "__tile_stored(buf, STRIDE, c);"):
        assert line in text


@pytest.mark.parametrize("opt", ["-O0", "-O3"])
def test_c_gemm_loop_equals_eager_and_exact(opt):
    """tile_gemm_s8u8.c (a K loop carrying the accumulator tile) at -O0 and -O3: compiled == eager == numpy."""
    _clang_or_skip()
    mod = compile_c(example("tile_gemm_s8u8.c"), opt=opt, filename="tile_gemm_s8u8.c")
    rng = np.random.default_rng(11)
    mem = {"A": rand_bytes(rng, 4096), "B": rand_bytes(rng, 4096), "C": rand_bytes(rng, 1024)}
    m1 = {k: v.copy() for k, v in mem.items()}
    m2 = {k: v.copy() for k, v in mem.items()}
    mod.run("gemm16", "A", "B", "C", 3, memory=m1)
    mod.run_eager("gemm16", "A", "B", "C", 3, memory=m2)
    assert np.array_equal(m1["C"], m2["C"])
    K = 192
    a = mem["A"].view(np.int8)[:16 * K].reshape(16, K).astype(np.int64)
    bv = mem["B"][:K // 4 * 64].reshape(K // 4, 16, 4).astype(np.int64)        # u8, VNNI rows
    b = bv.transpose(0, 2, 1).reshape(K, 16)
    c = mem["C"].view("<i4").reshape(16, 16).astype(np.int64)
    want = ((c + a @ b + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)
    assert np.array_equal(m1["C"].view("<i4").reshape(16, 16), want)


def test_a_newer_clang_is_named_when_llvm_cannot_parse_its_ir(monkeypatch):
    from systolic.compiler import c_frontend
    from systolic.errors import AsmSyntaxError
    from systolic.llvmir import clang as clang_mod
    err = AsmSyntaxError("LLVM cannot parse the IR: unknown type", line=3, column=4, source="x.c")
    monkeypatch.setattr(clang_mod, "clang_version", lambda: "clang version 99.1.0")
    with pytest.raises(AsmSyntaxError, match="clang 99 writes IR for LLVM 99, but llvmlite parses LLVM") as ei:
        c_frontend._explain_version_mismatch(err)
    assert (ei.value.line, ei.value.column) == (3, 4)
    monkeypatch.setattr(clang_mod, "clang_version", lambda: "clang version 22.1.8")
    c_frontend._explain_version_mismatch(err)            # same major: nothing to add
