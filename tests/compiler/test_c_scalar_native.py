"""The reader and the runner on plain C, against an independent oracle: the same C compiled by clang for this
CPU (no AMX features) and run natively through LLVM's JIT. Integer arithmetic with wrap-around, division,
shifts, loops, switch, structs and arrays in globals, and the integer intrinsics clang's optimiser emits
(smin/smax, abs, ctpop, cttz, bswap, funnel shifts) must give the same return values and the same global bytes
at -O0, -O2 and -O3."""

import ctypes
import pathlib

import numpy as np
import pytest

from systolic.compiler import compile_c
from systolic.errors import ClangUnavailable

SOURCE = (pathlib.Path(__file__).parent / "data" / "scalar.c").read_text()
GLOBALS = {"P": 64, "bytes": 64, "table": 64}
C = ctypes
SIGS = {"mix": (C.c_int32, [C.c_int32, C.c_int32]), "loop": (C.c_int64, [C.c_int32]),
        "sw": (C.c_int32, [C.c_int32]), "structs": (C.c_int64, [C.c_int32, C.c_int16, C.c_int32]),
        "minmax": (C.c_int32, [C.c_int32, C.c_int32]), "bits": (C.c_uint32, [C.c_uint32])}


def _native(opt):
    """clang for the host (no AMX flags), JIT-compiled by LLVM: the oracle."""
    import llvmlite.binding as llvm
    from systolic.llvmir.clang import compile_source
    text = compile_source(SOURCE, language="c", opt=opt, filename="scalar.c")
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(text)
    tm = llvm.Target.from_default_triple().create_target_machine()
    ee = llvm.create_mcjit_compiler(mod, tm)
    ee.finalize_object()
    fns = {n: C.CFUNCTYPE(r, *a)(ee.get_function_address(n)) for n, (r, a) in SIGS.items()}
    mem = {g: (ee.get_global_value_address(g), n) for g, n in GLOBALS.items()}
    return ee, fns, mem


def _calls(rng, n=120):
    out = []
    for _ in range(n):
        f = rng.choice(list(SIGS))
        if f == "mix":
            args = [int(rng.integers(-2**31, 2**31)), int(rng.choice([0, -1, 7, int(rng.integers(-2**31, 2**31))]))]
        elif f == "loop":
            args = [int(rng.integers(-2, 200))]
        elif f == "sw":
            args = [int(rng.choice([0, 1, 5, -3, 2, int(rng.integers(-1000, 1000))]))]
        elif f == "structs":
            args = [int(rng.integers(-9, 9)), int(rng.integers(-2**15, 2**15)), int(rng.integers(-2**31, 2**31))]
        elif f == "minmax":
            args = [int(rng.choice([-2**31, int(rng.integers(-2**31, 2**31))])), int(rng.integers(-2**31, 2**31))]
        else:
            args = [int(rng.choice([0, 1, 2**31, int(rng.integers(0, 2**32))]))]
        out.append((f, args))
    return out


@pytest.mark.parametrize("opt", ["-O0", "-O2", "-O3"])
def test_scalar_c_equals_native_execution(opt):
    try:
        ee, fns, addrs = _native(opt)
        mod = compile_c(SOURCE, opt=opt, filename="scalar.c")
    except ClangUnavailable as exc:
        pytest.skip(str(exc))
    assert not mod.source.refused, mod.source.refused
    memory = None
    rng = np.random.default_rng(len(opt))
    for f, args in _calls(rng):
        want = fns[f](*args)
        r = mod.run(f, *args, memory=memory)
        memory = r.memory                                      # the globals persist from call to call
        bits = 8 * C.sizeof(SIGS[f][0])
        assert r.value == want % (1 << bits), (f, args)
    for g, (addr, n) in addrs.items():
        native = np.frombuffer(C.string_at(addr, n), np.uint8)
        assert np.array_equal(memory[g][:n], native), g
    del ee
