"""DPAS rules: OPS_PER_CHAN, legal combinations, alignment, exec size, DPASW (visa-DPAS.md; IsaVerification.cpp)."""

import pytest

from systolic.errors import IllegalInstruction
from systolic.xmx import GRF, dpas, dpasw
from systolic.xmx.rules import ops_per_chan


# the table of visa-DPAS.md "OPS_PER_CHAN" and IGC's getDpasOpsPerChan, written out
@pytest.mark.parametrize("p1,p2,ops", [
    ("bf16", "bf16", 2), ("fp16", "fp16", 2), ("tf32", "tf32", 1), ("bf8", "hf8", 4), ("hf8", "hf8", 4),
    ("s8", "s8", 4), ("u8", "s4", 4), ("s2", "u8", 4), ("s4", "s4", 8), ("u4", "s2", 8), ("s2", "u2", 8),
    ("e2m1", "e2m1", 8)])
def test_ops_per_chan(p1, p2, ops):
    assert ops_per_chan(p1, p2) == ops


def _call(platform="pvc", **kw):
    g = GRF(platform)
    gb = g.grf_bytes
    args = dict(dst=64 * gb, src0=32 * gb, src1=16 * gb, src2=0, dst_type="f", src1_precision="bf",
                src2_precision="bf", rc=8)
    args.update(kw)
    return dpas(g, **args)


@pytest.mark.parametrize("platform,kw,rule_word", [
    ("dg2", dict(src1_precision="tf32", src2_precision="tf32"), "precisions"),
    ("pvc", dict(src1_precision="bf8", src2_precision="bf8"), "precisions"),
    ("pvc", dict(src1_precision="bf", src2_precision="hf"), "consistent"),
    ("pvc", dict(src1_precision="s8", src2_precision="bf"), "consistent"),
    ("pvc", dict(src1_precision="s8", src2_precision="s8", dst_type="f"), "legal"),
    ("pvc", dict(dst_type="d"), "legal"),
    ("pvc", dict(dst_type="hf"), "legal"),                 # bf precisions take F or BF, not HF
    ("dg2", dict(dst_type="bf", dst=64 * 32, src0=32 * 32, src1=16 * 32), "legal"),  # no BF Dst before PVC
    ("pvc", dict(src1_precision="tf32", src2_precision="tf32", dst_type="bf"), "legal"),
    ("pvc", dict(sd=4), "systolic depth of 8"),
    ("pvc", dict(sd=3), "SD encodings"),
    ("pvc", dict(rc=0), "repeat count"),
    ("pvc", dict(rc=9), "repeat count"),
    ("pvc", dict(exec_size=8), "exec size"),
    ("dg2", dict(exec_size=16, dst=64 * 32, src0=32 * 32, src1=16 * 32), "exec size"),
    ("pvc", dict(dst=64 * 64 + 4), "aligned"),
    ("pvc", dict(src0=32 * 64 + 32), "aligned"),
    ("pvc", dict(src1=16 * 64 + 32), "GRF-aligned"),
    ("pvc", dict(src2=16), "Src2"),
    ("pvc", dict(src1_precision="u1", src2_precision="u1"), "precision"),
    ("pvc", dict(dst=127 * 64), "register file"),
    ("pvc", dict(src2=126 * 64), "register file"),
    ("pvc", dict(dst=-64), "offset"),
    ("pvc", dict(dst=1.5), "offset"),
])
def test_rule_violations_raise_illegal_instruction(platform, kw, rule_word):
    with pytest.raises(IllegalInstruction) as e:
        _call(platform, **kw)
    assert rule_word.lower() in (e.value.rule or "").lower() + str(e.value).lower()
    assert e.value.values


def test_src2_alignment_follows_the_formula():
    # SD * bits * OPS / 8: s8 -> 32 bytes, s4 with s8 Src1 (OPS 4) -> 16 bytes, s2 with s8 Src1 -> 8 bytes
    g = GRF("dg2")
    for p2, align in (("s8", 32), ("s4", 16), ("s2", 8)):
        dpas(g, dst=2048, src0=None, src1=1024, src2=align, dst_type="d", src1_precision="s8", src2_precision=p2)
        if align > 8:
            with pytest.raises(IllegalInstruction):
                dpas(g, dst=2048, src0=None, src1=1024, src2=align // 2, dst_type="d", src1_precision="s8",
                     src2_precision=p2)


def test_bf16_dst_row_is_half_a_grf_on_pvc():
    # Dst/Src0 are packed, exec_size * sizeof(type) per row (G4_IR computeRightBound): 32 bytes for BF
    _call("pvc", dst_type="bf", src0_type="bf", dst=64 * 64 + 32, src0=32 * 64 + 32)


def test_dpasw_rules():
    g, h = GRF("dg2"), GRF("dg2")
    kw = dict(dst=64 * 32, src0=None, src1=16 * 32, src2=0, dst_type="f", src1_precision="bf", src2_precision="bf")
    dpasw(g, pair=h, **kw)
    with pytest.raises(IllegalInstruction) as e:
        dpasw(GRF("pvc"), pair=GRF("pvc"), **{**kw, "dst": 64 * 64, "src1": 16 * 64})
    assert "DPASW" in str(e.value)
    with pytest.raises(IllegalInstruction):
        dpasw(g, pair=None, **kw)
