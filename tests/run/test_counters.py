"""systolic.counters and the engines' hooks: counts against numbers worked out by hand from the tilings.

Expected counts are computed here from the documented tilings (xmx/gemm.py: output tiles of 8 rows x exec-size
columns, a DPAS chain of depth 8 * OPS_PER_CHAN along K; amx/gemm.py: 16-row x 16-column C blocks and 64-byte
K blocks, edges partial), never read back from the code under test.
"""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest

from systolic import counters


def test_nothing_records_is_a_no_op():
    assert not counters.active()
    counters.count("dpas", 5, platform="pvc")        # no recorder: nothing happens, nothing fails
    with counters.recording() as rec:
        assert counters.active()
    assert not counters.active()
    assert rec.total() == 0


def test_params_totals_and_nesting():
    with counters.recording() as outer:
        counters.count("amx", op="tdpbssd", m=16)
        with counters.recording() as inner:
            counters.count("amx", 3, op="tdpbssd", m=16)
            counters.count("amx", op="tileloadd", rows=16)
            counters.count("amx", 0, op="tilezero")      # zero events: not recorded
        counters.count("visa", op="mov")
    assert outer.total() == 6 and inner.total() == 4
    assert outer.total("amx", op="tdpbssd") == 4 and inner.total("amx", op="tdpbssd") == 3
    assert outer.by("amx", "op") == {"tdpbssd": 4, "tileloadd": 1}
    assert {e["op"]: e["count"] for e in inner.events("amx")} == {"tdpbssd": 3, "tileloadd": 1}


def test_threads_lose_no_event():
    def work():
        for _ in range(2000):
            counters.count("x", op="a")
    with counters.recording() as rec:
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert rec.total("x") == 8000


def test_count_tiling_partial_and_padded():
    with counters.recording() as rec:
        # 40 = 16 + 16 + 8 rows; 24 = 16 + 8 columns: partial edges -> 6 tiles of 4 distinct shapes
        counters.count_tiling("t", {"m": 40, "n": 24}, {"m": 16, "n": 16}, partial=True, op="p")
        counters.count_tiling("t", {"m": 40, "n": 24}, {"m": 16, "n": 16}, partial=False, op="q")
        counters.count_tiling("t", {"m": 0, "n": 24}, {"m": 16, "n": 16}, partial=True, op="z")
    assert rec.by("t", "op", "m", "n") == {("p", 16, 16): 2, ("p", 16, 8): 2, ("p", 8, 16): 1, ("p", 8, 8): 1,
                                           ("q", 16, 16): 6}


@pytest.mark.parametrize("platform, dtype, shape, expected", [
    # ceil(M/8) * ceil(N/exec) * ceil(K / (8 * OPS_PER_CHAN)), worked out by hand
    ("pvc", ml_dtypes.bfloat16, (64, 64, 64), 8 * 4 * 4),      # exec 16, K per DPAS 16
    ("dg2", ml_dtypes.bfloat16, (64, 64, 64), 8 * 8 * 4),      # exec 8
    ("pvc", np.int8, (64, 64, 64), 8 * 4 * 2),                 # K per DPAS 32
    ("pvc", ml_dtypes.bfloat16, (20, 20, 20), 3 * 2 * 2),      # edges padded
    ("bmg", ml_dtypes.int4, (8, 16, 130), 1 * 1 * 3),          # int4: K per DPAS 64
])
def test_xmx_matmul_counts(platform, dtype, shape, expected):
    from systolic import xmx
    m, n, k = shape
    a = np.ones((m, k), dtype)
    b = np.ones((k, n), dtype)
    with counters.recording() as rec:
        xmx.matmul(a, b, device=platform)
    assert rec.total("dpas") == expected
    (e,) = rec.events("dpas")
    assert (e["op"], e["platform"], e["rc"], e["sd"], e["via"]) == ("dpas", platform, 8, 8, "matmul")


def test_xmx_dpas_spec_and_fast_count_one_each():
    from systolic import xmx
    from systolic.xmx.kernels import dpas_fast
    grf = xmx.GRF("pvc")
    kw = dict(dst=0, src0=None, src1=1024, src2=2048, src1_precision="bf", src2_precision="bf", rc=4)
    with counters.recording() as rec:
        xmx.dpas(grf, **kw)
        dpas_fast(grf, **kw)
    assert rec.by("dpas", "via", "rc", "a", "exec") == {("spec", 4, "bf16", 16): 1, ("fast", 4, "bf16", 16): 1}


def test_dpasw_counts_once_per_instruction():
    from systolic import xmx
    grf = xmx.GRF("dg2")
    with counters.recording() as rec:
        xmx.dpasw(grf, pair=grf.copy(), dst=0, src0=None, src1=512, src2=1024, src1_precision="s8",
                  src2_precision="s8", dst_type="d", rc=8)
    assert rec.by("dpas", "op", "platform", "exec", "dst") == {("dpasw", "dg2", 8, "int32"): 1}


def test_amx_matmul_counts_and_instruction_path():
    from systolic.amx import matmul
    a = np.ones((40, 96), np.int8)
    b = np.ones((96, 24), np.int8)
    with counters.recording() as fast:
        matmul(a, b)
    # C blocks: rows 16, 16, 8 x columns 16, 8; K = 96 bytes = 24 dwords -> blocks of 16 and 8 dwords
    assert fast.total("amx") == 3 * 2 * 2
    assert fast.by("amx", "m", "n", "k_dwords")[(8, 8, 8)] == 1
    assert fast.by("amx", "m", "n", "k_dwords")[(16, 16, 16)] == 2
    with counters.recording() as slow:
        matmul(a, b, method="instructions")
    # the definition drives a TileMachine: per (M block, N block, K block) ldtilecfg, 3 loads, TDP, store
    assert slow.total("amx", via="matmul") == 0
    assert slow.by("amx", "op") == {"ldtilecfg": 12, "tileloadd": 36, "tdpbssd": 12, "tilestored": 12,
                                    "tilerelease": 1}
    assert slow.by("amx", "op", "m", "n", "k_dwords")[("tdpbssd", 8, 8, 8)] == 1


def test_amx_bf16_tiling():
    from systolic.amx import matmul
    a = np.ones((16, 70), ml_dtypes.bfloat16)      # K = 70 bf16 = 35 dwords: blocks 16, 16, 3
    b = np.ones((70, 16), ml_dtypes.bfloat16)
    with counters.recording() as rec:
        matmul(a, b)
    assert rec.by("amx", "op", "k_dwords") == {("tdpbf16ps", 16): 2, ("tdpbf16ps", 3): 1}


def test_xmx_matmul_counts_only_calls_that_pass_their_checks():
    """A GEMM whose C or operand values break a rule raises before it counts (it issued no DPAS); a good one
    counts RC-8 tiles x N/exec x K/(8 * ops per channel)."""
    from systolic.errors import SystolicError
    from systolic.xmx import matmul
    a8, b8 = np.ones((16, 64), np.int8), np.ones((64, 16), np.int8)
    af, bf = np.ones((16, 32), ml_dtypes.bfloat16), np.ones((32, 16), ml_dtypes.bfloat16)
    with counters.recording() as rec:
        for call in (lambda: matmul(a8, b8, np.zeros((3, 3), np.int32), device="pvc"),
                     lambda: matmul(af, bf, np.zeros((3, 3), np.float32), device="pvc"),
                     lambda: matmul(a8, b8, np.full((16, 16), 2.0 ** 40), device="pvc")):   # C past int32
            with pytest.raises(SystolicError):
                call()
    assert rec.total() == 0, rec.counts
    with counters.recording() as rec:
        matmul(a8, b8, device="pvc")
        matmul(af, bf, device="pvc")
    assert rec.total("dpas") == (16 // 8) * (16 // 16) * (64 // 32) + (16 // 8) * (16 // 16) * (32 // 16)
