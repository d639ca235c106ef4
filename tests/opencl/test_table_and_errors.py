"""The built-in table against IGC's declared signatures; per-platform counts; typed errors for every rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from systolic import opencl as cl
from systolic.errors import DivergentCollective, InvalidValue, UnsupportedCombination

DATA = Path(__file__).parent.parent / "data" / "opencl" / "ibif_dpas_signatures.tsv"


def test_table_equals_igc_signatures():
    igc = set()
    for line in DATA.read_text().splitlines():
        if line and not line.startswith("#"):
            sg, name, ret, a, b, acc, internal = line.split("\t")
            igc.add((int(sg), name, ret, a, b, acc, internal))
    ours = {(r.sub_group_size, r.name, r.result_type.name, r.a_type.name, r.b_type.name, r.acc_type.name,
             r.igc_builtin) for r in cl.BUILTINS}
    assert ours == igc and len(igc) == 442


def test_khronos_base_signatures_present():
    """A few prototypes copied from the Khronos texts (base rev 1.1.0, tf32, split)."""
    sigs = {r.signature for r in cl.BUILTINS}
    for s in ("int2 intel_sub_group_u8_i8_matrix_mad_k32(uint2 a, int8 b, int2 acc)",
              "int4 intel_sub_group_i4_u4_matrix_mad_k64(short4 a, uint8 b, int4 acc)",
              "short8 intel_sub_group_bf16_bf16_matrix_mad_k16(short8 a, int8 b, short8 acc)",
              "half2 intel_sub_group_f16_f16_matrix_mad_k16(short2 a, int8 b, half2 acc)",
              "float2 intel_sub_group_tf32_tf32_matrix_mad_k8(float a, float8 b, float2 acc)",
              "float8 intel_sub_group_tf32_tf32_matrix_mad_k8(float4 a, float8 b, float8 acc)",
              "int2 intel_sub_group_u8_i8_split_matrix_mad_k32(uint a, int8 b, int2 acc)",
              "float8 intel_sub_group_f16_f16_split_matrix_mad_k16(int4 a, int8 b, float8 acc)"):
        assert s in sigs


@pytest.mark.parametrize("platform,count,names", [("dg2", 246, 76), ("pvc", 148, 35), ("bmg", 148, 35),
                                                  ("lnl", 148, 35), ("xe3p", 196, 42)])
def test_counts_per_platform(platform, count, names):
    bs = cl.builtins(platform)
    assert (len(bs), len({b.name for b in bs})) == (count, names)


def _i8(platform="pvc", m=2):
    s = 16 if platform != "dg2" else 8
    a = np.zeros((s, m), np.int16 if s == 16 else np.int32) if m > 1 else np.zeros(s, np.int16 if s == 16 else np.int32)
    return a, np.zeros((s, 8), np.int32), np.zeros((s, m), np.int32) if m > 1 else np.zeros(s, np.int32)


def test_split_on_pvc_is_unsupported():
    with pytest.raises(UnsupportedCombination, match="DPASW|sub-group 8"):
        cl.intel_sub_group_i8_i8_split_matrix_mad_k32(*_i8("dg2"), device="pvc")


def test_sub_group_16_form_on_dg2_and_tf32_on_dg2():
    # the short-accumulator bf16 form exists only with sub-group 16
    with pytest.raises(InvalidValue, match="no overload"):
        cl.intel_sub_group_bf16_bf16_matrix_mad_k16(np.zeros((8, 2), np.int32), np.zeros((8, 8), np.int32),
                                                    np.zeros((8, 2), np.int16), device="dg2")
    with pytest.raises(UnsupportedCombination, match="tf32") as e:
        cl.intel_sub_group_tf32_tf32_matrix_mad_k8(np.zeros(8, np.float32), np.zeros((8, 8), np.float32),
                                                   np.zeros(8, np.float32), device="dg2")
    assert "pvc" in e.value.values["available_on"]
    with pytest.raises(UnsupportedCombination, match="bf8"):
        cl.intel_sub_group_e5m2_e5m2_matrix_mad_k32(np.zeros(16, np.int16), np.zeros((16, 8), np.int32),
                                                    np.zeros(16, np.float32), device="pvc")


def test_wrong_leading_axis_names_the_sub_group_size():
    a, b, c = _i8("dg2")
    with pytest.raises(InvalidValue, match="sub-group size 16") as e:
        cl.intel_sub_group_i8_i8_matrix_mad_k32(a, b, c, device="pvc")
    assert e.value.values["sub_group_size"] == 16


def test_wrong_component_count_and_dtype():
    a, b, c = _i8("pvc", 4)
    with pytest.raises(InvalidValue, match="short4"):
        cl.intel_sub_group_i8_i8_matrix_mad_k32(a[:, :2], b, c, device="pvc")
    with pytest.raises(InvalidValue, match="dtype"):
        cl.intel_sub_group_i8_i8_matrix_mad_k32(a.astype(np.int32), b, c, device="pvc")
    with pytest.raises(InvalidValue, match="dtype"):
        cl.intel_sub_group_u8_i8_matrix_mad_k32(a, b, c, device="pvc")   # ushort4 a, not short4
    with pytest.raises(InvalidValue, match="int8"):
        cl.intel_sub_group_i8_i8_matrix_mad_k32(a, b[:, :4], c, device="pvc")
    with pytest.raises(InvalidValue, match="no overload"):
        cl.intel_sub_group_i8_i8_matrix_mad_k32(a, b, np.zeros((16, 3), np.int32), device="pvc")


def test_unknown_name():
    with pytest.raises(InvalidValue, match="no sub-group matrix built-in"):
        cl.layout("intel_sub_group_i9_i9_matrix_mad_k32", "a")


def test_split_direct_call_needs_both_sub_groups():
    a, b, c = _i8("dg2", 2)
    with pytest.raises(InvalidValue, match="leading axis of 2"):
        cl.intel_sub_group_i8_i8_split_matrix_mad_k32(a[:, 0], b, c, device="dg2")


def test_divergent_call_inside_kernel():
    a, b, c = _i8("pvc", 1)
    seen = []

    def kernel():
        lid = cl.get_sub_group_local_id()
        with cl.where(lid < 4):
            cl.intel_sub_group_i8_i8_matrix_mad_k32(a, b, c)
        seen.append(1)

    with pytest.raises(DivergentCollective, match="part of the sub-group") as e:
        cl.run(kernel, 16, 16, device="pvc")
    assert e.value.values["inactive_work_items"] == list(range(4, 16))
    assert seen == []


def test_converged_call_inside_kernel_and_after_branch():
    a, b, c = _i8("pvc", 1)
    out = []

    def kernel():
        lid = cl.get_sub_group_local_id()
        with cl.where(lid < 4):
            pass
        out.append(cl.intel_sub_group_i8_i8_matrix_mad_k32(a, b, c))

    cl.run(kernel, 32, 16, device="pvc")
    assert len(out) == 2 and all(o.shape == (16,) for o in out)


def test_default_platform_is_pvc_else_the_first_that_has_the_name():
    from systolic.opencl.mapping import platform_for
    assert platform_for("intel_sub_group_i8_i8_matrix_mad_k32").name == "pvc"
    assert platform_for("intel_sub_group_i8_i8_split_matrix_mad_k32").name == "dg2"
    assert platform_for("intel_sub_group_e2m1_e2m1_matrix_mad_k64_f32").name == "xe3p"
    assert platform_for("intel_sub_group_i2_i8_matrix_mad_k32").name == "dg2"   # no sub-group 16 form
    L = cl.layout("intel_sub_group_i8_i8_split_matrix_mad_k32", "a")
    assert L.holder == ("sub_group", "work_item", "component") and L.params["sub_group_size"] == 8
