"""Devices, runtime combination lists, matrix_params and the UnsupportedCombination errors; the 2021 API; the CLI."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from systolic import sycl
from systolic.errors import UnsupportedCombination, UnsupportedOperation
from systolic.sycl import matrix as jm
from systolic.sycl import matrix_2021 as m21

BF = ml_dtypes.bfloat16

# intel/llvm sycl/test-e2e/Matrix/runtime_query_spr.cpp's expected list (test data)
SPR = [(16, 16, 64, 0, 0, 0, "uint8", "uint8", "sint32", "sint32"),
       (16, 16, 64, 0, 0, 0, "uint8", "sint8", "sint32", "sint32"),
       (16, 16, 64, 0, 0, 0, "sint8", "uint8", "sint32", "sint32"),
       (16, 16, 64, 0, 0, 0, "sint8", "sint8", "sint32", "sint32"),
       (16, 16, 32, 0, 0, 0, "bf16", "bf16", "fp32", "fp32")]


def test_spr_list_matches_intel_test():
    got = sycl.queue("spr").get_device().get_info("matrix_combinations")
    assert [tuple(c.as_dict().values()) for c in got] == SPR


@pytest.mark.parametrize("dev,count", [("spr", 5), ("emr", 5), ("gnr", 6), ("dmr", 6), ("dg2", 7), ("arl", 7),
                                       ("pvc", 53), ("bmg", 53), ("lnl", 53)])
def test_counts(dev, count):
    assert len(sycl.queue(dev).get_device().get_info("matrix_combinations")) == count


@pytest.mark.parametrize("dev,Ta,Tc,mnk", [("spr", np.int8, np.int32, (16, 16, 64)), ("spr", BF, np.float32, (16, 16, 32)),
                                           ("pvc", BF, np.float32, (8, 16, 16)), ("pvc", np.int8, np.int32, (8, 16, 32)),
                                           ("pvc", jm.precision.tf32, np.float32, (8, 16, 8)),
                                           ("dg2", np.float16, np.float32, (8, 8, 16)), ("dg2", np.uint8, np.int32, (8, 8, 32))])
def test_matrix_params_defaults(dev, Ta, Tc, mnk):
    p = jm.matrix_params(dev, Ta, Ta, Tc)
    assert (p.M, p.N, p.K) == mnk


def test_matrix_params_validation_lists_supported():
    with pytest.raises(UnsupportedCombination) as ei:
        jm.matrix_params("pvc", BF, BF, np.float32, np.float32, 8, 16, 32)
    assert "32 x 64 x 32" in str(ei.value) and "bf16" in str(ei.value)
    with pytest.raises(UnsupportedCombination):
        jm.matrix_params("dg2", jm.precision.tf32, jm.precision.tf32, np.float32)
    assert jm.matrix_params("pvc", BF, BF, BF, BF, 32, 64, 32).K == 32


def test_declaration_outside_the_list():
    q = sycl.queue("dg2")

    def kernel(it):
        jm.joint_matrix(it.get_sub_group(), BF, jm.use.a, 8, 32, jm.layout.row_major)
    with pytest.raises(UnsupportedCombination) as ei:
        q.parallel_for(sycl.nd_range((1, 8), (1, 8)), kernel)
    assert "dg2" in str(ei.value)


def test_mad_shape_outside_the_list():
    q = sycl.queue("pvc")

    def kernel(it):
        s = it.get_sub_group()
        a = jm.joint_matrix(s, BF, jm.use.a, 16, 16, jm.layout.row_major)
        b = jm.joint_matrix(s, BF, jm.use.b, 16, 16, jm.layout.row_major)
        c = jm.joint_matrix(s, BF, jm.use.accumulator, 16, 16)
        d = jm.joint_matrix(s, np.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_mad(s, d, a, b, c)          # 16x16x16 bf16 + bf16 -> fp32: listed
        e = jm.joint_matrix(s, BF, jm.use.a, 8, 16, jm.layout.row_major)
        jm.joint_matrix_mad(s, d, e, b, c)          # A 8 rows with C 16 rows: a shape error
    with pytest.raises(Exception) as ei:
        q.parallel_for(sycl.nd_range((1, 16), (1, 16)), kernel)
    assert "M x K" in str(ei.value)


def test_dmr_tf32_query_agrees_with_operation():
    """intel/llvm lists tf32 for dmr; no AMX instruction computes it, so the query says no and the declaration
    is refused (it used to be listed and then raise in mad)."""
    q = sycl.queue("dmr")
    combos = q.get_device().get_info("matrix_combinations")
    assert not [c for c in combos if "tf32" in c.types()]
    assert [c.types() for c in sycl.get_device("dmr").not_lowered] == [("tf32", "tf32", "fp32", "fp32")]

    def kernel(it):
        s = it.get_sub_group()
        a = jm.joint_matrix(s, jm.precision.tf32, jm.use.a, 16, 16, jm.layout.row_major)
        b = jm.joint_matrix(s, jm.precision.tf32, jm.use.b, 16, 16, jm.layout.row_major)
        c = jm.joint_matrix(s, np.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_mad(s, c, a, b, c)
        jm.joint_matrix_apply(s, c, lambda x: x)
    with pytest.raises(UnsupportedCombination, match="AMX-TF32 left the ISE"):
        q.parallel_for(sycl.nd_range((1, 1), (1, 1)), kernel)


def test_2021_bf16_any_size_packed_b():
    """The seed's promise: any size; B declared with its VNNI sizes and loaded packed."""
    rng = np.random.default_rng(4)
    M, N, K = 20, 36, 70
    A = rng.integers(-3, 4, (M, K)).astype(BF)
    B = rng.integers(-3, 4, (K, N)).astype(BF)
    Bp = np.empty((K // 2, 2 * N), BF)
    for k in range(K):
        for n in range(N):
            Bp[k // 2, 2 * n + k % 2] = B[k, n]
    C = np.ones((M, N), np.float32)
    q = sycl.queue("spr")
    pa, pb, pc = sycl.ptr(A), sycl.ptr(Bp), sycl.ptr(C)

    def kernel(it):
        sg = it.get_sub_group()
        tA = m21.joint_matrix(sg, BF, M, K)
        tB = m21.joint_matrix(sg, BF, K // 2, N * 2, m21.matrix_layout.packed_b)
        tC = m21.joint_matrix(sg, np.float32, M, N)
        m21.joint_matrix_load(sg, tA, pa, K, m21.matrix_layout.row_major)
        m21.joint_matrix_load(sg, tB, pb, 2 * N, m21.matrix_layout.packed_b)
        m21.joint_matrix_load(sg, tC, pc, N, m21.matrix_layout.row_major)
        tC = m21.joint_matrix_mad(sg, tA, tB, tC)
        m21.joint_matrix_store(sg, tC, pc, N, m21.matrix_layout.row_major)
    q.parallel_for(sycl.nd_range((1, 1), (1, 1)), kernel)
    want = 1 + A.astype(np.int64) @ B.astype(np.int64)
    assert np.array_equal(C.astype(np.int64), want)


def test_2021_is_amx_only():
    q = sycl.queue("pvc")
    with pytest.raises(UnsupportedCombination):
        q.parallel_for(sycl.nd_range((1, 16), (1, 16)),
                       lambda it: m21.joint_matrix(it.get_sub_group(), np.int8, 8, 32))


def test_cli_devices_and_combinations(capsys):
    from systolic.cli import cli, main
    r = CliRunner().invoke(cli, ["sycl", "devices", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert [d["name"] for d in data] == ["spr", "emr", "gnr", "dmr", "dg2", "arl", "pvc", "bmg", "lnl"]
    r = CliRunner().invoke(cli, ["sycl", "combinations", "gnr", "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)["combinations"]
    assert rows[-1] == {"max_msize": 16, "max_nsize": 16, "max_ksize": 32, "msize": 0, "nsize": 0, "ksize": 0,
                        "atype": "fp16", "btype": "fp16", "ctype": "fp32", "dtype": "fp32"}
    r = CliRunner().invoke(cli, ["sycl", "combinations", "pvc"])
    assert r.exit_code == 0 and "32" in r.output
    for verb in ([], ["devices"], ["combinations"]):
        assert CliRunner().invoke(cli, ["sycl", *verb, "--help"]).exit_code == 0
    with pytest.raises(SystemExit) as ei:
        main(["sycl", "combinations", "nosuch"])
    assert ei.value.code == 1 and "error:" in capsys.readouterr().err


def test_2021_feature_test_macro():
    """The seed: an implementation "must predefine the macro SYCL_EXT_ONEAPI_MATRIX"; 1 = initial AMX version."""
    assert m21.SYCL_EXT_ONEAPI_MATRIX == 1 and "SYCL_EXT_ONEAPI_MATRIX" in m21.__all__
    assert "SYCL_EXT_ONEAPI_MATRIX" in m21.__doc__


def test_2021_declaration_refusal_speaks_the_2021_api():
    """spr's AMX has no fp16: the refusal names matrix_layout, not today's use::/layout:: (the 2021 API has neither)."""
    q = sycl.queue("spr")
    with pytest.raises(UnsupportedCombination) as e:
        q.parallel_for(sycl.nd_range((1, 1), (1, 1)),
                       lambda it: m21.joint_matrix(it.get_sub_group(), np.float16, 4, 8))
    msg = str(e.value)
    assert "use::" not in msg and "layout::row_major" not in msg.replace("matrix_layout::row_major", "")
    assert "joint_matrix<sub_group, fp16, 4, 8, matrix_layout::row_major>" in e.value.message
    assert e.value.values == {"device": "spr", "type": "fp16", "rows": 4, "cols": 8, "layout": "row_major"}
    assert "bf16, fp32, sint32, sint8, uint8" in e.value.rule
