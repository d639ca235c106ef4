"""The emulators' results do not depend on the caller's MXCSR (systolic.fpenv).

A process may run with MXCSR.FTZ/DAZ set (torch.set_flush_denormal, fast-math start-up code) or another rounding
mode. Each case below must give the same bits under every MXCSR, with the caller's MXCSR restored afterwards.
The cases are sensitive: with the guard disabled (``default()`` a no-op), 13 of the 27 case x MXCSR pairs give
other bits (xmx stage/sequential bf16, fp16, tf32, TDPFP16PS, and to_bits' general path under DAZ); the AMX bf16
GEMM, the vISA multiply and to_bits' integer fast path do their own rounding and stay as regression checks. (That the default-environment results are right is what the rest of
the suite checks against its oracles.)
"""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest

from systolic import fpenv
from systolic.errors import InvalidValue

pytestmark = pytest.mark.skipif(fpenv.read() is None, reason="MXCSR is not accessible on this host")

FTZ, DAZ = 1 << 15, 1 << 6
RC_ZERO, RC_UP = 3 << 13, 2 << 13
HOSTILE = [fpenv.DEFAULT | FTZ | DAZ, fpenv.DEFAULT | RC_ZERO, fpenv.DEFAULT | FTZ | RC_UP]


@pytest.fixture
def restore_mxcsr():
    saved = fpenv.read()
    yield
    fpenv.write(saved)


def _under(mxcsr, fn):
    before = fpenv.read()
    fpenv.write(mxcsr)
    try:
        out = fn()
        after = fpenv.read()
    finally:
        fpenv.write(before)
    assert after & 0xFFC0 == mxcsr & 0xFFC0, "the caller's MXCSR was not restored"
    return out


def _bits(x):
    return np.ascontiguousarray(x).view(np.uint8).copy()


def test_unguarded_arithmetic_does_change(restore_mxcsr):
    # the premise: MXCSR really changes what numpy computes here (else the tests below prove nothing)
    tiny = np.array([2.0 ** -130, 3.0 * 2 ** -140], dtype=np.float32)
    assert np.all(_under(fpenv.DEFAULT | FTZ | DAZ, lambda: tiny * np.float32(1.5)) == 0)
    assert np.all(tiny * np.float32(1.5) != 0)
    two_thirds = np.float32(2) / np.float32(3)  # rounds up to nearest: toward zero differs
    assert _under(fpenv.DEFAULT | RC_ZERO, lambda: np.float32(2) / np.float32(3)) != two_thirds


def test_guard_sets_defaults_and_threads_inherit(restore_mxcsr):
    seen = {}

    @fpenv.guarded
    def body():
        seen["main"] = fpenv.read()
        t = threading.Thread(target=lambda: seen.__setitem__("worker", fpenv.read()))
        t.start()
        t.join()

    _under(fpenv.DEFAULT | FTZ | DAZ | RC_ZERO, body)
    assert seen["main"] & 0xFFC0 == fpenv.DEFAULT
    assert seen["worker"] & 0xFFC0 == fpenv.DEFAULT


def test_write_refuses_reserved_bits():
    with pytest.raises(InvalidValue, match="reserved"):
        fpenv.write(1 << 16)


def _xmx_cases():
    from systolic.xmx import matmul
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((16, 32)) * 2.0 ** -70).astype(ml_dtypes.bfloat16)
    b = (rng.standard_normal((32, 16)) * 2.0 ** -60).astype(ml_dtypes.bfloat16)
    c = (rng.standard_normal((16, 16)) * 2.0 ** -128).astype(np.float32)  # subnormal C, subnormal results
    a16 = (rng.standard_normal((16, 32)) * 100).astype(np.float16)
    b16 = (rng.standard_normal((32, 16)) * 100).astype(np.float16)
    return {
        "xmx bf16 stage (bmg, denormals kept)": lambda: matmul(a, b, c, device="bmg"),
        "xmx bf16 sequential": lambda: matmul(a, b, c, device="bmg", model="sequential"),
        "xmx fp16 stage": lambda: matmul(a16, b16, device="pvc"),
        "xmx tf32 stage": lambda: matmul(a16.astype(np.float32) / 7, b16.astype(np.float32) / 3,
                                         device="pvc", precision="tf32"),
    }


def _amx_cases():
    from systolic.amx import TileMachine, matmul
    from systolic.amx.tilecfg import TileConfig
    rng = np.random.default_rng(8)
    a = (rng.standard_normal((16, 64)) * 1000).astype(ml_dtypes.bfloat16)
    b = (rng.standard_normal((64, 16)) / 7).astype(ml_dtypes.bfloat16)

    x1 = (rng.standard_normal((16, 32)) * 2.0 ** -14).astype(np.float16)
    x2 = (rng.standard_normal((16, 32)) * 3).astype(np.float16)

    def fp16_machine():  # TDPFP16PS on fp16 subnormals (AMX-FP16 keeps fp16 denormal inputs)
        m = TileMachine("graniterapids")
        m.ldtilecfg(TileConfig(palette=1, tiles={t: (16, 64) for t in range(3)}))
        m.write_tile(0, np.zeros((16, 16), dtype=np.float32))
        m.write_tile(1, x1)
        m.write_tile(2, x2)
        m.tdpfp16ps(0, 1, 2)
        return m.read_tile(0, np.float32)

    return {"amx bf16 matmul": lambda: matmul(a, b), "amx TDPFP16PS": fp16_machine}


def _visa_cases():
    from systolic.visa.asm import parse
    from systolic.visa.interp import run
    src = """
.decl A v_type=G type=f num_elts=8
.decl B v_type=G type=f num_elts=8
.decl D v_type=G type=f num_elts=8
mul (M1, 8) D(0,0)<1> A(0,0)<1;1,0> B(0,0)<1;1,0>
"""
    a = (np.arange(1, 9, dtype=np.float32) * 2.0 ** -120)
    b = np.full(8, np.float32(1) / np.float32(3), dtype=np.float32)

    def go():
        return run(parse(src), inputs={"A": a, "B": b}).read("D")
    return {"visa mul": go}


def _numerics_cases():
    from systolic.numerics import formats as F
    from systolic.numerics.rounding import to_bits
    sub = np.array([1e-40, -3e-42, 2.0 ** -149], dtype=np.float32)  # float32 subnormals
    return {"to_bits float32 subnormals -> fp64": lambda: to_bits(sub, F.FP64),
            "to_bits float32 subnormals -> fp32": lambda: to_bits(sub, F.FP32)}


CASES = {**_xmx_cases(), **_amx_cases(), **_visa_cases(), **_numerics_cases()}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("mxcsr", HOSTILE, ids=["ftz+daz", "rc=zero", "ftz+rc=up"])
def test_results_do_not_depend_on_mxcsr(name, mxcsr, restore_mxcsr):
    fn = CASES[name]
    want = _bits(fn())
    assert np.array_equal(_bits(_under(mxcsr, fn)), want), f"{name} changed under MXCSR {mxcsr:#x}"


def test_status_flags_raised_inside_stay_raised(restore_mxcsr):
    # the same whether or not the guard had to switch MXCSR (review)
    @fpenv.guarded
    def inexact():
        return np.float32(2) / np.float32(3)  # raises PE (precision, bit 5)

    for start in (fpenv.DEFAULT, fpenv.DEFAULT | FTZ | DAZ):
        fpenv.write(start)
        inexact()
        after = fpenv.read()
        assert after & 0xFFC0 == start & 0xFFC0
        assert after & 0x20, f"PE not kept when starting from {start:#x}"
