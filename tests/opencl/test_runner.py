"""The sub-group kernel runner and the cl_intel_subgroups block reads/writes; the example kernels."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from systolic import opencl as cl
from systolic import xmx
from systolic.errors import DivergentCollective, InvalidValue, MemoryFault, UnsupportedCombination

EXAMPLES = Path(__file__).parents[2] / "examples" / "opencl"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"opencl_example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_block_read_write_strided_semantics():
    """cl_intel_subgroups: component j of work-item i is p[i + j * max_sub_group_size]."""
    buf = np.arange(64, dtype=np.uint32)
    v = cl.intel_sub_group_block_read4(cl.GlobalPtr(buf) + 8, sub_group_size=8)
    assert v.shape == (8, 4)
    for i in range(8):
        for j in range(4):
            assert v[i, j] == 8 + i + 8 * j
    out = np.zeros(64, np.uint32)
    cl.intel_sub_group_block_write4(cl.GlobalPtr(out) + 8, v, sub_group_size=8)
    np.testing.assert_array_equal(out[8:40], np.arange(8, 40))
    assert not out[:8].any() and not out[40:].any()
    us = cl.intel_sub_group_block_read_us2(cl.GlobalPtr(np.arange(64, dtype=np.uint16)), sub_group_size=16)
    assert us.dtype == np.uint16 and us[3, 1] == 19
    uc = cl.intel_sub_group_block_read_uc(cl.GlobalPtr(np.arange(64, dtype=np.uint8)) + 4, sub_group_size=16)
    assert uc.tolist() == list(range(4, 20))


def test_block_io_rules():
    buf = np.zeros(64, np.uint32)
    p = cl.GlobalPtr(buf)
    with pytest.raises(InvalidValue, match="cast the pointer"):
        cl.intel_sub_group_block_read(p.cast("uchar") + 2, sub_group_size=8)  # a uchar* is not a uint*
    with pytest.raises(InvalidValue, match="4-byte aligned"):
        cl.intel_sub_group_block_read((p.cast("uchar") + 2).cast("uint"), sub_group_size=8)
    with pytest.raises(InvalidValue, match="16-byte aligned"):
        cl.intel_sub_group_block_write(p + 1, np.zeros(8, np.uint32), sub_group_size=8)
    with pytest.raises(MemoryFault):
        cl.intel_sub_group_block_read8(p + 8, sub_group_size=8)
    with pytest.raises(InvalidValue, match="as_type"):
        cl.intel_sub_group_block_write(p, np.zeros(8, np.float32), sub_group_size=8)
    with pytest.raises(InvalidValue, match="sub_group_size"):
        cl.intel_sub_group_block_read(p)


def test_work_item_functions_and_partial_sub_group():
    seen = {}

    def k(out):
        lid = cl.get_sub_group_local_id()
        seen[(cl.get_group_id(0), cl.get_group_id(1), cl.get_sub_group_id())] = (
            cl.get_local_id(0).tolist(), cl.get_global_id(1).tolist(), cl.get_sub_group_size())
        out[cl.get_global_id(0) + 24 * cl.get_global_id(1)] = lid

    out = np.full(48, 99, np.uint32)
    cl.run(k, (24, 2), (12, 1), (out,), device="dg2")
    assert seen[(1, 1, 0)] == (list(range(8)), [1] * 8, 8)
    assert seen[(0, 0, 1)][0][:4] == [8, 9, 10, 11] and seen[(0, 0, 1)][2] == 4   # partial sub-group
    assert out[:12].tolist() == list(range(8)) + list(range(4))

    def collective_in_partial(buf):
        cl.intel_sub_group_block_read(buf)

    with pytest.raises(DivergentCollective, match="partial sub-group"):
        cl.run(collective_in_partial, 12, 12, (np.zeros(64, np.uint32),), device="dg2")


def test_non_uniform_pointer_is_divergent():
    def k(buf):
        cl.intel_sub_group_block_read(buf + cl.get_sub_group_local_id())

    with pytest.raises(DivergentCollective, match="differs between work-items"):
        cl.run(k, 8, 8, (np.zeros(64, np.uint32),), device="dg2")


def test_barrier_orders_sub_groups():
    log = []

    def k(buf):
        sg = cl.get_sub_group_id()
        log.append(("before", sg))
        cl.barrier()
        log.append(("after", sg))

    cl.run(k, 32, 32, (np.zeros(4, np.uint32),), device="dg2")
    assert [x[0] for x in log] == ["before"] * 4 + ["after"] * 4


def test_split_partner_missing_and_disagreeing():
    a = np.zeros((8, 4), np.int32)
    b = np.zeros((8, 8), np.int32)
    c = np.zeros((8, 8), np.int32)

    def only_even():
        if cl.get_sub_group_id() % 2 == 0:
            cl.intel_sub_group_i8_i8_split_matrix_mad_k32(a, b, c)

    with pytest.raises(DivergentCollective, match="finished without reaching it"):
        cl.run(only_even, 16, 16, device="dg2")

    def odd_count():
        cl.intel_sub_group_i8_i8_split_matrix_mad_k32(a, b, c)

    with pytest.raises(UnsupportedCombination, match="no partner"):
        cl.run(odd_count, 24, 24, device="dg2")

    def disagree():
        if cl.get_sub_group_id() == 0:
            cl.intel_sub_group_i8_i8_split_matrix_mad_k32(a, b, c)
        else:
            cl.intel_sub_group_i8_u8_split_matrix_mad_k32(a, b.view(np.uint32), c)

    with pytest.raises(DivergentCollective, match="disagree"):
        cl.run(disagree, 16, 16, device="dg2")


@pytest.mark.parametrize("name,device", [("gemm_int8", "dg2"), ("gemm_int8", "pvc"), ("gemm_bf16", "dg2"),
                                         ("gemm_bf16", "pvc"), ("gemm_split_dg2", "dg2")])
def test_examples_follow_the_program_protocol_and_match(name, device):
    mod = _load(name)
    assert mod.__doc__ and mod.DEVICE in mod.DEVICES and device in mod.DEVICES
    out = mod.main(device)
    assert out["result"].dtype == out["oracle"].dtype
    np.testing.assert_array_equal(out["result"], out["oracle"])


@pytest.mark.parametrize("device", ["dg2", "pvc"])
def test_bf16_kernel_equals_xmx_matmul_on_random_data(device):
    """Random bf16 data: the kernel's K loop of built-ins = xmx.matmul (fp32 C carried between DPAS) under the
    platform's default model, and = the Fraction oracle chain under "exact"."""
    mod = _load("gemm_bf16")
    rng = np.random.default_rng(7)
    A = rng.standard_normal((8, 48)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((48, 32)).astype(ml_dtypes.bfloat16)
    got = mod.run_gemm(A, B, device)
    np.testing.assert_array_equal(got.view(np.uint32), xmx.matmul(A, B, device=device).view(np.uint32))
    got = mod.run_gemm(A, B, device, model="exact")
    np.testing.assert_array_equal(got.view(np.uint32),
                                  xmx.matmul(A, B, device=device, model="exact").view(np.uint32))


@pytest.mark.parametrize("bad", [-8, 0, 7, 2.5, "x", True, 64, 4])
def test_block_io_outside_a_kernel_checks_sub_group_size(bad):
    # review F1b: -8 used to read 56 values, 0 none, 7 seven; cl_intel_subgroups devices run 8, 16 or 32
    p = cl.GlobalPtr(np.arange(64, dtype=np.uint32))
    with pytest.raises(InvalidValue, match="sub_group_size") as ei:
        cl.intel_sub_group_block_read(p, sub_group_size=bad)
    assert "8, 16, 32" in ei.value.rule and "sub_group_size" in ei.value.values
    with pytest.raises(InvalidValue, match="sub_group_size"):
        cl.intel_sub_group_block_write(p, np.zeros(8, np.uint32), sub_group_size=bad)


@pytest.mark.parametrize("s", [8, 16, 32, np.int64(16)])
def test_block_read_legal_sub_group_sizes(s):
    v = cl.intel_sub_group_block_read(cl.GlobalPtr(np.arange(64, dtype=np.uint32)), sub_group_size=s)
    assert v.tolist() == list(range(int(s)))   # work-item i reads p[i] (cl_intel_subgroups)
