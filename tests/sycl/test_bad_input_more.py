"""Bad input to the SYCL layer found by the bad-input audit: typed errors naming the rule and the values.

Oracles: the devices' matrix combinations as intel/llvm's ``device_info.hpp`` lists them (REFERENCE.md; e.g. PVC
bf16 A is M <= 8 x K 16, or one of the fixed shapes 16x16, 1x16, 32x16, 1x32, 32x32: never 64 x 16), and the
C++ rules for a conversion to an integer type ([conv.fpint]: a value outside the target's range is undefined).
"""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from systolic.cli import cli
from systolic.errors import InvalidValue, UnsupportedCombination
from systolic.sycl import matrix as jm


# ------------------------------------------------- finding 5: layout() checks the declaration as joint_matrix does

@pytest.mark.parametrize("dev, T, use, rows, cols", [
    ("pvc", "bf16", "a", 64, 16),             # a shape of no combination (joint_matrix refuses it too)
    ("pvc", "bf16", "a", 8, 4_000_000),       # took 3.5 min before
    ("pvc", "fp32", "accumulator", 8000, 16000),
    ("spr", "bf16", "a", 100_000, 100_000),   # a 149 GiB array before
    ("dg2", "fp16", "b", 16, 32),             # DG2's 32x32x16 shape is bf16 only
])
def test_layout_refuses_what_joint_matrix_refuses(dev, T, use, rows, cols):
    with pytest.raises(UnsupportedCombination) as ei:
        jm.layout(dev, T, getattr(jm.use, use), rows, cols)
    e = ei.value
    assert e.values == {"device": dev, "type": T, "use": use, "rows": rows, "cols": cols}
    # only the near combinations (issue 27), then the command that lists them all
    assert e.rule.startswith(f"{dev}'s ") and f"systolic sycl combinations {dev}" in e.rule
    assert "M x N x K" in e.rule


def test_layout_and_joint_matrix_share_one_check():
    from systolic import sycl
    seen = []

    def k(item):
        sg = item.get_sub_group()
        try:
            jm.joint_matrix(sg, "bf16", jm.use.a, 64, 16, jm.layout.row_major)
        except UnsupportedCombination as exc:
            seen.append(exc)
    sycl.queue("pvc").parallel_for(sycl.nd_range((16,), (16,)), k).wait()
    with pytest.raises(UnsupportedCombination) as ei:
        jm.layout("pvc", "bf16", jm.use.a, 64, 16)
    assert seen and seen[0].rule == ei.value.rule


def test_layout_still_answers_declared_shapes():
    # PVC bf16 A 8 x 16 and the large 32 x 32 shape: sub-group 16
    assert jm.layout("pvc", "bf16", jm.use.a, 8, 16).params["sg_size"] == 16
    assert jm.layout("pvc", "bf16", jm.use.a, 32, 32).params["sg_size"] == 16


def test_cli_layout_detail_sycl_refuses_undeclared_shape():
    r = CliRunner().invoke(cli, ["layout", "detail", "sycl", "a", "--device", "pvc", "--type", "bf16",
                                 "--rows", "8", "--cols", "4000000"])
    # the command prints it as "error: ..." (systolic.cli.main); here the typed exception itself
    assert r.exit_code == 1 and isinstance(r.exception, UnsupportedCombination)
    assert "joint_matrix<bf16, use::a, 8, 4000000" in str(r.exception) and "cols=0x3d0900" in str(r.exception)


# ------------------------------------------------- finding 14: float -> integer out of range is refused

def _fill_int32(value):
    from systolic import sycl
    out = np.zeros((8, 16), np.int32)

    def k(item):
        sg = item.get_sub_group()
        c = jm.joint_matrix(sg, np.int32, jm.use.accumulator, 8, 16)
        jm.joint_matrix_fill(sg, c, value)
        jm.joint_matrix_store(sg, c, sycl.ptr(out), 16, jm.layout.row_major)
    sycl.queue("pvc").parallel_for(sycl.nd_range((1, 16), (1, 16)), k).wait()
    return out


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 2.0 ** 40, 2.0 ** 31, -2.0 ** 31 - 1])
def test_fill_int32_refuses_undefined_float_conversion(value):
    # C++ [conv.fpint] p1: undefined if the truncated value cannot be represented (int32: [-2**31, 2**31 - 1])
    with pytest.raises(InvalidValue, match="has no sint32 value") as ei:
        _fill_int32(value)
    e = ei.value
    assert e.values["type"] == "sint32"
    assert e.values["value"] == value or (value != value and e.values["value"] != e.values["value"])
    assert "[conv.fpint]" in e.rule and "[-2147483648, 2147483647]" in e.rule


@pytest.mark.parametrize("value, expect", [(1.5, 1), (-1.5, -1), (2147483647.9, 2147483647),
                                           (-2147483648.9, -2147483648),
                                           (2 ** 40 + 7, 7), (2 ** 70 + 5, 5), (-(2 ** 31) - 1, 2 ** 31 - 1)])
def test_fill_int32_defined_conversions(value, expect):
    # floats truncate toward zero; integers of any width wrap modulo 2**32 ([conv.integral], exact ints here)
    assert (_fill_int32(value) == expect).all()


def test_convert_refuses_half_and_bfloat16_out_of_range():
    import ml_dtypes

    from systolic.sycl.matrix_core import convert, type_info
    with pytest.raises(InvalidValue, match="has no sint8 value") as ei:
        convert(np.array([1.0, 128.0], dtype=ml_dtypes.bfloat16), type_info(np.int8))
    assert ei.value.values == {"value": 128.0, "type": "sint8", "count": 1}
    with pytest.raises(InvalidValue, match="has no uint8 value") as ei:
        convert(np.array([-1.0, 0.5], dtype=np.float16), type_info(np.uint8))
    assert ei.value.values == {"value": -1.0, "type": "uint8", "count": 1}
    # -0.9 truncates to 0: defined
    assert convert(np.array([-0.9], dtype=np.float16), type_info(np.uint8)).tolist() == [0]


# ------------------------------------------------- finding 13: launch limits and host memory

def _noop(item):
    return None


@pytest.mark.parametrize("dev, local", [("pvc", (2048,)), ("pvc", (1 << 16,)), ("dg2", (1032,)),
                                        ("pvc", (64, 32))])
def test_gpu_work_group_is_at_most_1024(dev, local):
    # intel/compute-runtime device_caps.cpp: maxWorkGroupSize = std::min(maxWS, 1024u)
    from systolic import sycl
    with pytest.raises(UnsupportedCombination, match="max_work_group_size 1024") as ei:
        sycl.queue(dev).parallel_for(sycl.nd_range(local, local), _noop)
    assert ei.value.values["work_group_size"] == int(np.prod(local)) and ei.value.values["max"] == 1024
    assert "compute-runtime" in ei.value.rule


def test_gpu_work_group_of_1024_runs():
    from systolic import sycl
    seen = []
    sycl.queue("pvc").parallel_for(sycl.nd_range((1024,), (1024,)), lambda it: seen.append(1)).wait()
    assert seen


def test_parallel_for_needs_a_kernel():
    from systolic import sycl
    with pytest.raises(InvalidValue, match="parallel_for runs a kernel") as ei:
        sycl.queue("pvc").parallel_for(sycl.nd_range((16,), (16,)), None)
    assert ei.value.values == {"kernel": "NoneType"}


def test_huge_nd_range_and_allocation_are_typed():
    # 2**48 work-items need 2 PiB of ids, 2**50 floats 4 PiB: beyond any 48-bit address space, so the allocation
    # fails at once whatever the host's overcommit policy (nothing is allocated)
    from systolic import sycl
    q = sycl.queue("spr")
    with pytest.raises(InvalidValue, match="does not fit in this host's memory") as ei:
        q.parallel_for(sycl.nd_range((1 << 48,), (1,)), _noop)
    assert ei.value.values["global"] == (1 << 48,)
    with pytest.raises(InvalidValue, match="malloc_shared cannot allocate") as ei:
        q.malloc_shared(1 << 50, np.float32)
    assert ei.value.values == {"count": 1 << 50, "bytes": 1 << 52} and "nullptr" in ei.value.rule
