"""A joint_matrix kernel compiled by the tile compiler and run on real AMX (Sapphire Rapids, recorded in
tests/data/sycl_amx_native/gemm.json): the emulator paths must give the silicon's bits."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from systolic import sycl
from systolic.sycl import matrix as jm

DATA = json.loads((Path(__file__).resolve().parents[1] / "data" / "sycl_amx_native" / "gemm.json").read_text())
BF = ml_dtypes.bfloat16
TYPES = {"int8": (np.int8, np.int32), "bf16": (BF, np.float32)}


def inputs(case):
    Ta, _ = TYPES[case["case"]]
    rng = np.random.default_rng(case["seed"])
    M, N, K = case["M"], case["N"], case["K"]
    if case["case"] == "int8":
        A = rng.integers(-128, 128, (M, K)).astype(Ta)
        B = rng.integers(-128, 128, (K, N)).astype(Ta)
    else:
        A = rng.standard_normal((M, K)).astype(Ta)
        B = rng.standard_normal((K, N)).astype(Ta)
    return A, B


def gemm(how, case, A, B):
    Ta, Tc = TYPES[case["case"]]
    M, N, K, TK = case["M"], case["N"], case["K"], case["TK"]
    vf = 4 // np.dtype(Ta).itemsize
    Bp = B.reshape(K // vf, vf, N).transpose(0, 2, 1).reshape(K // vf, N * vf).copy()
    q = sycl.queue("spr", amx=how)
    C = np.zeros((M, N), Tc)
    pA, pB, pC = sycl.ptr(A), sycl.ptr(Bp), sycl.ptr(C)

    def kernel(it):
        sg = it.get_sub_group()
        m0, n0 = it.get_global_id(0) * 16, it.get_global_id(1) * 16
        a = jm.joint_matrix(sg, Ta, jm.use.a, 16, TK, jm.layout.row_major)
        b = jm.joint_matrix(sg, Ta, jm.use.b, TK, 16, jm.layout.ext_intel_packed)
        c = jm.joint_matrix(sg, Tc, jm.use.accumulator, 16, 16)
        jm.joint_matrix_fill(sg, c, 0)
        for k in range(0, K, TK):
            jm.joint_matrix_load(sg, a, pA + m0 * K + k, K)
            jm.joint_matrix_load(sg, b, pB + (k // vf) * N * vf + n0 * vf, N * vf)
            jm.joint_matrix_mad(sg, c, a, b, c)
        jm.joint_matrix_store(sg, c, pC + m0 * N + n0, N, jm.layout.row_major)
    q.parallel_for(sycl.nd_range((M // 16, N // 16), (1, 1)), kernel)
    return C


@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: c["case"])
@pytest.mark.parametrize("how", ["fast", "compiled"])
def test_emulated_kernel_equals_silicon(case, how):
    A, B = inputs(case)
    got = gemm(how, case, A, B)
    assert got.view(np.uint32).reshape(-1).tolist() == case["native_result_u32"]
