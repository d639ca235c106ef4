"""Fuzz: the tile compiler's front doors - ``compile_c`` and ``compile_ir``'s arguments and the options of
``systolic amx compile|run`` (issue 22).

Oracle: every call ends ok or with a typed systolic error (harness.outcome); a program that compiles runs to the
value worked out by hand (twice(21) = 42; i32 results read back unsigned). One argument at a time is hostile, so
most cases reach clang and the tile compiler. Bounded: the C cases avoid ``#include <immintrin.h>`` (4 s of clang
each); the file takes about 10 s.
"""

import click
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from systolic.cli import cli
from systolic.compiler import compile_c, compile_ir
from systolic.errors import ClangUnavailable

from .harness import examples, hostile, ok, outcome

_C = "int twice(int x) { return x * 2; }\n"
_IR = "define i32 @twice(i32 %x) {\nentry:\n  %y = shl i32 %x, 1\n  ret i32 %y\n}\n"
_FLAGS = ["-O0", "-O3", "-g", "-g0", "-DX=1", "-UX", "-Wall", "-w", "-std=c99", "-fvectorize", "-O",
          # flags that stop clang short of IR, or make it fail, or are not shell words
          "-Werror", "-fsyntax-only", "-E", "-mno-amx-tile", "--target=aarch64-linux-gnu", "-x", "c++", "-include",
          "nonexistent.h", "-I", "", '"', "'", "\\", "a b", "--", "-c", "-O9"]
_NAMES = ["t.c", "dir/t.c", "t", "", ".", "..", "t.cpp", "t.c\x00", "\u00e9.c", "a" * 300, "/abs/t.c"]
_VALID = {"opt": st.sampled_from(["-O0", "-O1", "-O2", "-O3", "-Os", "-Oz"]),
          "flags": st.lists(st.sampled_from(_FLAGS[:11]), max_size=3),
          "language": st.sampled_from(["c", "c++"]), "debug": st.booleans(),
          "filename": st.none() | st.just("t.c"), "source_dir": st.none() | st.just(".")}
_ODD = {"opt": st.sampled_from(["-O", "-O9", "-Ofast", "O2", "", "-g"]) | hostile(),
        "flags": st.one_of(st.lists(st.sampled_from(_FLAGS), min_size=1, max_size=4),
                           st.lists(st.sampled_from(_FLAGS), max_size=4).map(" ".join), hostile()),
        "language": st.sampled_from(["C", "cl", "c++ ", "objc"]) | hostile(), "debug": hostile(),
        "filename": st.sampled_from(_NAMES) | hostile(),
        "source_dir": st.sampled_from(["/nonexistent", "", "\x00"]) | hostile()}


@st.composite
def _c_arguments(draw):
    odd = draw(st.sampled_from([None, *_VALID]))
    return {k: draw(_ODD[k] if k == odd else v) for k, v in _VALID.items()}


@examples(12)
@given(kw=_c_arguments())
def test_compile_c_arguments(kw):
    r = outcome(compile_c, _C, **kw, typed=(ClangUnavailable,))
    if ok(r):                   # C++ too: run() finds a function by its source name
        assert r[1].run("twice", 21).value == 42, kw


@examples(30)
@given(text=st.one_of(st.just(_IR), st.just(_IR.encode()), st.text(max_size=40), hostile()),
       source=st.none() | st.sampled_from(_NAMES) | hostile())
def test_compile_ir_arguments(text, source):
    r = outcome(compile_ir, text, source)
    if ok(r) and text == _IR:
        assert r[1].run("twice", -4).value == (-8) % 2 ** 32


_COMPILE = [["--emit", "machine"], ["--emit", "llvm"], ["--emit", "nope"], ["--stats"],
            ["--print-after", "regalloc"], ["--print-after", "nope"]]
_RUN = [["--arg", "3"], ["--arg", "@x+1"], ["--arg", "x"], ["--arg", "99999999999999999999"], ["--arg", "-1"],
        ["--backend", "spec"], ["--backend", "llvm"], ["--backend", "nope"], ["--eager"], ["--json"], ["--trace"],
        ["--mem", "x=nofile.npy"], ["--mem", "="], ["--cpu", "spr"], ["--cpu", "pvc"], ["--function", "nope"]]
_CFLAGS = [["--cflags", '"unterminated'], ["--cflags", "-O0 -g"], ["--cflags", "a\\"], ["--cflags", ""],
           ["--cflags", "-O3"], ["--cflags", "-fsyntax-only"]]


@examples(16)
@given(verb=st.sampled_from(["compile", "run"]), suffix=st.sampled_from([".ll", ".c", ".cpp", ".txt"]),
       data=st.data())
def test_cli_options(tmp_path_factory, verb, suffix, data):
    opts = data.draw(st.lists(st.sampled_from((_COMPILE if verb == "compile" else _RUN) + _CFLAGS), max_size=3))
    p = tmp_path_factory.mktemp("front") / f"twice{suffix}"
    p.write_text(_IR if suffix in (".ll", ".txt") else _C)
    args = ["amx", verb, str(p)] + (["--function", "twice", "--arg", "5"] if verb == "run" else [])
    args += [a for o in opts for a in o]
    r = outcome(CliRunner().invoke, cli, args, catch_exceptions=False, standalone_mode=False,
                typed=(click.ClickException, click.exceptions.Exit, ClangUnavailable))
    if ok(r):
        assert r[1].exit_code == 0, r[1].output
