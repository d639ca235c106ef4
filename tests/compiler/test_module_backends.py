"""compiler.module's run backends in TileMachine's vocabulary (device=, backend="cpu"|"native", path=) and the
public initial_bytes of compiler.to_machine (what run/llvm_program.py seeds memory with)."""

import warnings

import numpy as np
import pytest

from systolic.compiler import compile_ir
from systolic.compiler.llvm_reader import parse
from systolic.compiler.to_machine import initial_bytes
from systolic.errors import InvalidValue

COPY = """
@buf = global [1024 x i8] zeroinitializer, align 64
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
define void @f(i16 %r) {
entry:
  %t = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 64, ptr @buf, i64 64)
  call void @llvm.x86.tilestored64.internal(i16 %r, i16 64, ptr getelementptr (i8, ptr @buf, i64 512), i64 64, x86_amx %t)
  ret void
}
"""


@pytest.mark.parametrize("path, machine_backend", [("fast", "emulator"), ("spec", "spec")])
def test_run_backends_use_tilemachine_current_keywords(path, machine_backend):
    mod = compile_ir(COPY)
    buf = np.random.default_rng(5).integers(0, 256, 1024).astype(np.uint8)
    want = buf.copy()
    want[512:] = buf[:512]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)   # the run uses no older keyword (systolic.vocabulary)
        r = mod.run("f", 8, memory={"buf": buf}, backend="cpu", path=path)
        e = mod.run_eager("f", 8, memory={"buf": buf.copy()}, path=path)
    assert r.machine.backend.name == e.machine.backend.name == machine_backend
    assert np.array_equal(buf, want)


def test_unknown_backend_is_invalid_value():
    with pytest.raises(InvalidValue, match="unknown backend"):
        compile_ir(COPY).run_eager("f", 1, backend="gpu")


def test_initial_bytes_little_endian_by_hand():
    m = parse("@a = global [3 x i16] [i16 1, i16 -2, i16 256]\n@b = global i32 -16909061\n"
              "@c = global [4 x i8] c\"ab\\00z\"\n@z = global [5 x i8] zeroinitializer\n")
    g = m.globals
    assert list(initial_bytes(g["a"])) == [1, 0, 0xFE, 0xFF, 0, 1]
    assert list(initial_bytes(g["b"])) == [0xFB, 0xFC, 0xFD, 0xFE]        # -16909061 = 0xFEFDFCFB
    assert list(initial_bytes(g["c"])) == [ord("a"), ord("b"), 0, ord("z")]
    z = initial_bytes(g["z"])
    assert z.dtype == np.uint8 and list(z) == [0] * 5
    z[0] = 9
    assert list(initial_bytes(g["z"])) == [0] * 5                         # a fresh array each call
