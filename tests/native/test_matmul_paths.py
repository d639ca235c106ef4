"""``amx.matmul`` on native AMX (systolic.amx.native_matmul) and on the emulator: the same bits, the switch, the
recorded path.

* every host: SYSTOLIC_NATIVE=0 forces the emulator and the counters say so; models outside the SPR family stay
  on the emulator; the recorded silicon TDP* operations (tests/data/amx_silicon/full.npz, one tile-K block each)
  are reproduced by amx.matmul on whichever path the host takes;
* AMX hosts (``native`` marker): the self-check passes, and amx.matmul on native AMX equals the emulator
  (method="numpy") on random shapes with specials, K ragged (the partial last tile-K block runs on the emulator).
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic import amx, counters, xmx
from systolic.amx import native_matmul as NM
from systolic.errors import InvalidValue

from .conftest import DATA, NATIVE, needs_native


def _silicon_ops(fam):
    with np.load(os.path.join(DATA, "full.npz")) as full:     # each array read once (an npz reads on access)
        arrs = [full[f"{fam}/{k}"] for k in ("m", "k", "n", "a", "b", "c", "out")]
    return zip(*arrs)


FAMS = {"tdpbssd": (np.int8, np.int8), "tdpbsud": (np.int8, np.uint8), "tdpbusd": (np.uint8, np.int8),
        "tdpbuud": (np.uint8, np.uint8), "tdpbf16ps": (ml_dtypes.bfloat16, ml_dtypes.bfloat16)}


@pytest.mark.parametrize("mn", sorted(FAMS))
@pytest.mark.parametrize("native", ["1", "0"] if NATIVE else ["1"])
def test_amx_matmul_equals_silicon_on_recorded_tdp_operations(monkeypatch, mn, native):
    """One TDP* of an M x K-dword x N shape is amx.matmul(A, B, C) with K = one (partial) tile-K block."""
    monkeypatch.setenv(NM.ENV, native)
    ta, tb = FAMS[mn]
    g = 4 // np.dtype(ta).itemsize
    paths = set()
    for m, k, n, a, b, c, out in _silicon_ops(f"dot:{mn}"):
        m, k, n = int(m), int(k), int(n)
        A = np.ascontiguousarray(a[:m, :4 * k]).view(ta)                                  # M x (k g) elements
        # B's tile is k dword rows x n dwords (VNNI): element (r g + e, j) at byte 4 j + e (esize 1) / 2 e
        B = np.ascontiguousarray(b[:k, :4 * n]).view(tb).reshape(k, n, g).transpose(0, 2, 1).reshape(k * g, n)
        cdt = np.float32 if mn == "tdpbf16ps" else np.int32
        C = np.ascontiguousarray(c[:m, :4 * n]).view(cdt)
        got = amx.matmul(A, B, C)
        paths.add(counters.path_taken(f"amx.matmul {mn}"))
        want = np.ascontiguousarray(out[:m, :4 * n]).view(np.uint32)
        assert np.array_equal(got.view(np.uint32), want), (mn, m, k, n)
    if native == "0" or not NATIVE:
        assert paths == {"emulator"}
    elif mn != "tdpbf16ps":
        assert paths == {"native"}        # integer K padding is exact: every shape runs natively


def test_switch_turns_the_native_path_off(monkeypatch):
    monkeypatch.setenv(NM.ENV, "0")
    ok, why = NM.usable("tdpbf16ps", "sapphirerapids")
    assert not ok and "SYSTOLIC_NATIVE=0" in why
    a = np.ones((4, 64), np.int8)
    with counters.recording() as rec:
        amx.matmul(a, a.T.copy())
    assert counters.path_taken("amx.matmul tdpbssd") == "emulator"
    assert set(rec.by("amx", "path")) == {"emulator"}
    assert all(not v["native"] for v in NM.status().values())


@pytest.mark.parametrize("value", ["abc", "off", "no", "2", "true"])
def test_switch_refuses_other_values(monkeypatch, value):
    """SYSTOLIC_NATIVE is 0 or 1: a typo must not leave the native path on (it used to mean "on")."""
    monkeypatch.setenv(NM.ENV, value)
    with pytest.raises(InvalidValue, match="SYSTOLIC_NATIVE") as err:
        amx.matmul(np.ones((2, 4), np.int8), np.ones((4, 3), np.int8))
    assert err.value.values == {"SYSTOLIC_NATIVE": value}
    with pytest.raises(InvalidValue, match="SYSTOLIC_NATIVE"):
        xmx.matmul(np.ones((2, 32), np.int8), np.ones((32, 3), np.int8))


@pytest.mark.parametrize("value", ["1", " 1 ", ""])
def test_switch_on_values(monkeypatch, value):
    monkeypatch.setenv(NM.ENV, value)
    monkeypatch.delenv("SYSTOLIC_NO_NATIVE", raising=False)
    assert NM.enabled() == (True, "on")


def test_self_check_first_in_a_fresh_process():
    """The self-check has its emulator reference even when nothing loaded systolic.amx.gemm yet (a first native
    use through xmx.matmul does that; found on the device, where it failed with IndexError and kept the process
    on the emulator). The native kernel is replaced by the exact int64 product, so this runs on any host."""
    import subprocess
    import sys
    code = (
        "import sys, numpy as np\n"
        "from systolic.amx import native_gemm, native_matmul as NM\n"
        "assert 'systolic.amx.gemm' not in sys.modules\n"
        "def exact(a, b, c=None, threads=None):\n"
        "    r = a.astype(np.int64) @ b.astype(np.int64) + c\n"
        "    return (r & 0xFFFFFFFF).astype(np.uint32).view(np.int32)\n"
        "native_gemm.matmul = exact\n"
        "print(NM.self_check('tdpbssd'))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith("(True,"), out.stdout


def test_models_outside_the_spr_family_stay_on_the_emulator(monkeypatch):
    monkeypatch.delenv(NM.ENV, raising=False)
    ok, why = NM.usable("tdpbssd", "diamondrapids")
    assert not ok and "diamondrapids" in why


@pytest.mark.skipif(NATIVE, reason="this host runs AMX: the reasons below are the no-AMX ones")
def test_without_amx_the_reason_is_the_host(monkeypatch):
    monkeypatch.delenv(NM.ENV, raising=False)
    monkeypatch.delenv("SYSTOLIC_NO_NATIVE", raising=False)
    ok, why = NM.usable("tdpbssd", "sapphirerapids")
    assert not ok and why
    a = np.ones((3, 5), np.int8)
    amx.matmul(a, a.T.copy())
    assert counters.path_taken("amx.matmul tdpbssd") == "emulator"


# ------------------------------------------------------------------ on AMX hosts

@pytest.mark.parametrize("mn", ["tdpbssd", "tdpbsud", "tdpbusd", "tdpbuud", "tdpbf16ps"])
@pytest.mark.native
@pytest.mark.skipif(not NATIVE, reason="native AMX unavailable")
@pytest.mark.skipif(os.environ.get(NM.ENV, "") == "0", reason="SYSTOLIC_NATIVE=0: the emulator only")
def test_self_check_passes(mn):
    passed, detail = NM.self_check(mn)
    assert passed, detail


def _operands(rng, dt, shape, specials):
    if np.dtype(dt).kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max + 1, shape).astype(dt)
    x = (rng.standard_normal(shape) * 2.0 ** rng.integers(-70, 70, shape)).astype(dt)
    if specials:
        pick = rng.random(x.shape) < 0.05
        x[pick] = rng.choice(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40], np.float32), pick.sum()).astype(dt)
    return x


@needs_native[0]
@needs_native[1]
@pytest.mark.skipif(os.environ.get(NM.ENV, "") == "0", reason="SYSTOLIC_NATIVE=0: the emulator only")
@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(FAMS)), st.integers(1, 70), st.integers(1, 200), st.integers(1, 70), st.booleans(),
       st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_native_path_equals_emulator(mn, m, k, n, with_c, specials, seed):
    rng = np.random.default_rng(seed)
    ta, tb = FAMS[mn]
    a = _operands(rng, ta, (m, k), specials)
    b = _operands(rng, tb, (k, n), specials)
    cdt = np.float32 if mn == "tdpbf16ps" else np.int32
    if with_c:
        c = (rng.standard_normal((m, n)) * 1e3).astype(cdt) if cdt is np.float32 else \
            rng.integers(-2 ** 31, 2 ** 31, (m, n)).astype(np.int32)
    else:
        c = None
    want = amx.matmul(a, b, c, method="numpy")
    got = amx.matmul(a, b, c)
    assert counters.path_taken(f"amx.matmul {mn}") in ("native", "native+emulator") or \
        (mn == "tdpbf16ps" and k < 32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_self_check_tmuls_stay_out_of_the_callers_recording(monkeypatch):
    """The once-per-process self-check runs the emulator on its own operands; those TMULs are not the caller's GEMM
    and must not appear in a counters.recording() open around the first native use (seen on the device: a CUDA
    test's expected counts held the check's 40 extra TDPBSUD). Runs on any host: the native GEMM is stood in for
    by the emulator itself."""
    from systolic import counters
    from systolic.amx import native_gemm, native_matmul
    import systolic.amx  # noqa: F401  (registers the emulator reference)
    _ = systolic.amx.matmul
    emulate = native_matmul._emulator[0]
    monkeypatch.setattr(native_gemm, "matmul",
                        lambda a, b, c=None, threads=1: emulate(a, b, c, "sapphirerapids"))
    monkeypatch.setattr(native_matmul, "_checks", {})
    with counters.recording() as rec:
        ok, detail = native_matmul.self_check("tdpbsud")
    assert ok, detail
    assert rec.total("amx") == 0


def test_a_reference_that_cannot_run_is_no_verdict(monkeypatch):
    """The self-check's emulator reference running out of memory is no verdict on the hardware: not passed now,
    and no outcome kept, so the next use checks again (it once disabled the native path for the rest of the
    process: a test that makes the emulator raise MemoryError, run first in an xdist worker, failed later tests
    there, and the caller saw an error about the self-check's shapes instead of its own)."""
    monkeypatch.setattr(NM, "_checks", {})

    def boom(*args, **kw):
        raise MemoryError("Unable to allocate 256. GiB")
    monkeypatch.setattr(NM, "_emulator", [boom])
    passed, why = NM.self_check("tdpbssd")
    assert not passed and "reference could not run" in why and "MemoryError" in why
    assert "tdpbssd" not in NM._checks
