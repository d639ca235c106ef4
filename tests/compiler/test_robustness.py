"""Bad input gets a typed systolic error: mutated IR (token swaps, deleted lines) through the whole compiler and
runner, fuzzed run arguments (ints for pointers, pointers for ints, wrong counts), dead tiles, endless loops."""

import numpy as np
import pytest
from hypothesis import HealthCheck, example as hexample, given, settings, strategies as st

from systolic.compiler import compile_ir
from systolic.compiler.ir import PtrType, size_of
from systolic.errors import InvalidValue, MemoryFault, SystolicError

from .helpers import EXAMPLES, example

_SWAPS = [("32", "64"), ("64", "16"), ("i64 32", "i64 -32"), ("%row", "%col"), ("%conv.i31", "%row"),
          ("@buf2", "@buf"), ("%0", "%3"), ("%c.sroa.1149.0", "%a.sroa.1186.0"), ("tdpbssd", "tdpbuud"),
          ("label %if.end", "label %if.then"), ("%i.next", "%i"), ("%acc", "%c0"), ("16", "17"),
          ("x86_amx %b", "x86_amx %a"), ("i64 0, i64 0", "i64 0, i64 1020"), ("%steps", "%i"), ("sge", "slt"),
          ("%n", "%k"), ("i16 %m", "i16 %bk"), ("1024", "4096"), ("tilezero", "tileloadd64"), ("%v1", "%v2")]


def _run_all(mod, args, seed):
    """Run every function of ``mod`` on random memory; only systolic errors may come out."""
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
    _run_all(mod, args, seed)


# deleting every line that holds one of these (all tile stores, all TMULs, ...) leaves dead tiles, dangling
# uses, blocks without terminators
_DELETE_ALL = ["tilestored", "tdp", "tileloadd", "tilezero", "store ", "br ", "ret ", "phi ", "icmp", "declare",
               "ldtilecfg", "getelementptr"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(["api.ll", "final_form.ll", "spill_heavy.ll", "gemm_o2.ll"]),
       lines=st.lists(st.integers(0, 10 ** 6), max_size=4),
       words=st.lists(st.sampled_from(_DELETE_ALL), max_size=2),
       args=st.lists(st.integers(-3, 70), min_size=6, max_size=6), seed=st.integers(0, 1000))
@hexample(name="api.ll", lines=[], words=["tilestored"], args=[1, 8, 32, 0, 0, 0], seed=0)  # every tile dead
def test_programs_with_deleted_instructions_compile_and_run_or_raise_typed_errors(name, lines, words, args, seed):
    text = example(name).splitlines()
    body = [k for k, line in enumerate(text) if line.startswith("  ")]  # instructions inside functions
    drop = {body[k % len(body)] for k in lines}
    drop |= {k for k, line in enumerate(text) for w in words if w in line}
    text = "\n".join(line for k, line in enumerate(text) if k not in drop)
    try:
        mod = compile_ir(text)
    except SystolicError:
        return
    _run_all(mod, args, seed)


# ------------------------------------------------------------------------------------------ dead tiles
_DEAD = """
define void @f(i16 %r, i16 %c) {
entry:
  %t = tail call x86_amx @llvm.x86.tilezero.internal(i16 %r, i16 %c)
  ret void
}
declare x86_amx @llvm.x86.tilezero.internal(i16, i16)
"""
_DEAD_IN_LOOP = """
define void @f(i16 %r, i16 %c, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %t = tail call x86_amx @llvm.x86.tilezero.internal(i16 %r, i16 %c)
  %i.next = add i32 %i, 1
  %done = icmp sge i32 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
declare x86_amx @llvm.x86.tilezero.internal(i16, i16)
"""


@pytest.mark.parametrize("text, args", [(_DEAD, (8, 64)), (_DEAD_IN_LOOP, (8, 64, 3))])
def test_a_dead_tile_definition_is_kept_and_released(text, args):
    # llc keeps an unused tilezero (tilezero %tmm0 between ldtilecfg and tilerelease): so do we
    mod = compile_ir(text)
    listing = mod.emit("machine")
    tile_lines = [ln.strip() for ln in listing.splitlines() if ln.strip().startswith(("TILE", "LDTILECFG"))]
    assert tile_lines == ["LDTILECFG %tilecfg1", "TILEZERO tmm0", "TILERELEASE"]
    assert listing.rstrip().splitlines()[-2:] == ["  TILERELEASE", "  ret void"]
    assert mod.info["f"]["assign"] == {"t": 0}
    r = mod.run("f", *args)
    assert r.value is None and not r.machine.configured
    # an unused tile still needs a shape the hardware accepts, as in the eager run and on silicon
    from systolic.errors import GeneralProtection
    for run in (mod.run, mod.run_eager):
        with pytest.raises(GeneralProtection, match="too many rows"):
            run("f", 17, *args[1:])


def test_a_function_whose_tiles_are_all_unused_compiles_the_cli_way(tmp_path):
    from click.testing import CliRunner
    from systolic.cli import cli
    (tmp_path / "dead.ll").write_text(_DEAD)
    r = CliRunner().invoke(cli, ["amx", "compile", str(tmp_path / "dead.ll"), "--emit", "machine"])
    assert r.exit_code == 0, r.output
    assert "TILEZERO tmm0" in r.output and "TILERELEASE" in r.output


# ------------------------------------------------------------------------------------------ arguments
def _gemm():
    return compile_ir(example("gemm_o2.ll"))


def test_an_integer_for_a_pointer_is_an_invalid_value_naming_the_parameter():
    mod = _gemm()
    with pytest.raises(InvalidValue, match=r"argument %A is a pointer; .*\(name, offset\) "
                                           r"\(@global\[\+offset\] on the command line\), not int 1") as ei:
        mod.run("gemm", 1, 2, 3, 16, 16, 64)
    assert ei.value.values["param"] == "A"
    with pytest.raises(InvalidValue, match="argument %M \\(i32\\) needs an integer, got str 'A'") as ei:
        mod.run("gemm", "A", "B", "C", "A", 16, 64)
    assert ei.value.values["param"] == "M"
    with pytest.raises(InvalidValue, match="argument %B is a pointer"):
        mod.run("gemm", "A", ("B", 1.5), "C", 16, 16, 64)
    with pytest.raises(InvalidValue, match="pointer argument %C names no global: 'D'") as ei:
        mod.run("gemm", "A", "B", ("@D", 0), 16, 16, 64)
    assert ei.value.values["globals"] == ["A", "B", "C"]
    with pytest.raises(InvalidValue, match="takes 6 arguments, 5 given"):
        mod.run("gemm", "A", "B", "C", 16, 16)


def test_cli_pointer_and_integer_arguments(capsys):
    from systolic.cli import main
    gemm = str(EXAMPLES / "gemm_o2.ll")

    def err(*args):
        with pytest.raises(SystemExit) as ei:
            main(["amx", "run", gemm, "--function", "gemm", *[x for a in args for x in ("--arg", a)]])
        assert ei.value.code == 1
        out = capsys.readouterr().err
        assert out.startswith("error: ") and out.count("\n") == 1
        return out

    assert "argument %A is a pointer" in err("1", "2", "3", "16", "16", "64")
    assert "@global[+offset]" in err("1", "2", "3", "16", "16", "64")
    assert "argument %N (i32) needs an integer" in err("@A", "@B", "@C", "16", "@A", "64")
    assert "--arg" in err("@A+x", "@B", "@C", "16", "16", "64")
    assert "--arg" in err("@", "@B", "@C", "16", "16", "64")
    assert "takes 6 arguments, 2 given" in err("@A", "@B")


_ARG = st.one_of(st.integers(-(2 ** 70), 2 ** 70), st.sampled_from(["A", "B", "C", "@A", "nope", ""]),
                 st.tuples(st.sampled_from(["A", "C", "x"]), st.integers(-(2 ** 20), 2 ** 20)),
                 st.tuples(st.sampled_from(["A"]), st.floats(allow_nan=True)), st.floats(), st.none(), st.booleans(),
                 st.tuples(st.integers(), st.integers()), st.lists(st.integers(0, 3), max_size=3),
                 st.just(np.int16(16)), st.just(np.float32(2.0)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from(["gemm_o2.ll", "api.ll"]), backend=st.sampled_from(["cpu", "llvm"]))
def test_fuzzed_run_arguments_give_typed_errors(data, name, backend):
    mod = _MODS[name]
    fname = {"gemm_o2.ll": "gemm", "api.ll": "api"}[name]
    n = len(mod.machine.function(fname).params)
    count = data.draw(st.one_of(st.just(n), st.integers(0, n + 2)))  # mostly the right count
    args = data.draw(st.lists(_ARG, min_size=count, max_size=count))
    try:
        mod.run(fname, *args, max_steps=5000, backend=backend)
    except SystolicError:
        pass


_MODS = {n: compile_ir(example(n)) for n in ("gemm_o2.ll", "api.ll")}


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
    with pytest.raises(InvalidValue, match="memory must be a mapping"):
        mod.run("api", 1, 8, 32, memory={...})            # a set (docs/compiler.md once wrote this)
    with pytest.raises(InvalidValue, match="memory must be a mapping"):
        mod.run_eager("api", 1, 8, 32, memory=[("buf", np.zeros(1024, np.uint8))])


def test_tile_load_outside_memory_is_a_memory_fault():
    text = example("api.ll").replace("i64 0, i64 0), i64 32)\n  %0", "i64 0, i64 1000), i64 32)\n  %0", 1)
    assert text != example("api.ll")
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


@pytest.mark.parametrize("glob", ["[2 x " * 40 + "i8" + "]" * 40, "[1048576 x [1048576 x i8]]"])
def test_globals_beyond_the_byte_memory_model(glob):
    """LLVM accepts them (so the reader reads them); the runner refuses to make their bytes, with a typed error,
    and only when a run needs them."""
    text = f"@g = global {glob} zeroinitializer\n@h = global i32 5\n" \
           "define i32 @f() {\nentry:\n  %x = load i32, ptr @h\n  ret i32 %x\n}\n" \
           "define i8 @g8() {\nentry:\n  %x = load i8, ptr @g\n  ret i8 %x\n}"
    mod = compile_ir(text)
    assert mod.run("f").value == 5
    with pytest.raises((InvalidValue, MemoryFault)):
        mod.run("g8")


def test_reader_limits():
    from systolic.compiler.llvm_reader import parse
    from systolic.errors import AsmSyntaxError
    with pytest.raises(AsmSyntaxError, match="bitwidth for integer type out of range") as ei:
        parse("define void @f() {\nentry:\n  %x = add i0 0, 0\n  ret void\n}")
    assert (ei.value.line, ei.value.column) == (3, 12)
