"""Platforms as data and the register file (REFERENCE.md section 2; IsaVerification.cpp)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic.errors import IllegalInstruction, InvalidValue
from systolic.xmx import GRF, PLATFORMS, get_platform


def test_platform_facts_from_the_specs():
    dg2, pvc, bmg, lnl = (get_platform(n) for n in ("dg2", "pvc", "bmg", "lnl"))
    assert (dg2.grf_bytes, dg2.exec_size, dg2.has_dpasw) == (32, 8, True)
    assert "tf32" not in dg2.precisions and "bf16" in dg2.precisions
    assert (pvc.grf_bytes, pvc.exec_size, pvc.has_dpasw) == (64, 16, False)
    assert "tf32" in pvc.precisions
    for p in (bmg, lnl):
        assert (p.grf_bytes, p.exec_size, p.has_dpasw, p.has_denormal_control) == (64, 16, False, True)
        assert p.denormals["bf16"] == "keep" and p.denormals["tf32"] == "keep"
    assert dg2.denormals["bf16"] == "flush" and pvc.denormals["tf32"] == "flush"
    assert dg2.acc_types["bf16"] == ("fp32",)          # no BF Dst before PVC (hasBFDstforDPAS)
    assert "bf16" in pvc.acc_types["bf16"]
    assert all(p.systolic_depths == (8,) for p in PLATFORMS.values())
    assert {"bf8", "hf8", "e2m1"} <= get_platform("xe3p").precisions
    assert not ({"bf8", "hf8", "e2m1"} & pvc.precisions)


@pytest.mark.parametrize("alias,name", [("xehpg", "dg2"), ("ats-m", "dg2"), ("ACM", "dg2"), ("xe2", "bmg"),
                                        ("xehpc", "pvc"), ("lunarlake", "lnl"), ("cri", "xe3p")])
def test_aliases(alias, name):
    assert get_platform(alias).name == name


def test_unknown_platform_is_a_typed_error():
    with pytest.raises(InvalidValue) as e:
        get_platform("gen9")
    assert "gen9" in str(e.value) and e.value.rule


def test_platforms_are_immutable():
    p = get_platform("pvc")
    with pytest.raises(Exception):
        p.exec_size = 8
    with pytest.raises(TypeError):
        PLATFORMS["x"] = p
    with pytest.raises(TypeError):
        p.denormals["bf16"] = "keep"


def test_grf_size_and_modes():
    assert GRF("dg2").size == 128 * 32
    assert GRF("pvc", 256).size == 256 * 64
    with pytest.raises(InvalidValue):
        GRF("dg2", 256)


def test_grf_read_write_view_little_endian():
    g = GRF("dg2")
    g.write(33, np.array([0x11223344], dtype=np.uint32))
    assert list(g.read(33, 4)) == [0x44, 0x33, 0x22, 0x11]
    v = g.view(33, np.uint32, 1)
    v[0] = 7
    assert g.data[33] == 7 and list(g.reg(1)[1:5]) == [7, 0, 0, 0]
    g.write(0, np.array([1.0], dtype=np.float32))
    assert g.dwords(0, 1)[0] == 0x3F800000


@settings(max_examples=200, deadline=None)
@given(st.integers(-5000, 10000), st.integers(0, 300))
def test_grf_bounds_fuzz(offset, n):
    g = GRF("dg2")
    inside = offset >= 0 and offset + n <= g.size
    if inside:
        assert g.read(offset, n).size == n
        g.write(offset, np.zeros(n, dtype=np.uint8))
    else:
        with pytest.raises(IllegalInstruction) as e:
            g.read(offset, n)
        assert e.value.rule and "offset" in e.value.values
        with pytest.raises(IllegalInstruction):
            g.write(offset, np.zeros(n, dtype=np.uint8))
