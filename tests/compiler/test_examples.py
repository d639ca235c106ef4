"""The example programs against independent oracles (numpy int64 arithmetic of the SDM's TDPBSSD)."""

import numpy as np
import pytest

from systolic.compiler import compile_ir

from .helpers import example


def wrap32(x):
    return ((x + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


@pytest.mark.parametrize("steps", [1, 2, 4])
def test_final_form_gemm(steps):
    mod = compile_ir(example("final_form.ll"))
    rng = np.random.default_rng(steps)
    A, B, C = (rng.integers(0, 256, n, dtype=np.uint8) for n in (4096, 4096, 1024))
    mem = {"A": A.copy(), "B": B.copy(), "C": C.copy()}
    mod.run("gemm", 16, 64, 64, steps, memory=mem)
    a = A.view(np.int8).reshape(16, 256).astype(np.int64)
    b = B.view(np.int8).reshape(4, 16, 16, 4).astype(np.int64)
    c = C.view(np.int32).reshape(16, 16).astype(np.int64)
    for i in range(steps):
        c = c + np.einsum("mkq,knq->mn", a[:, 64 * i:64 * i + 64].reshape(16, 16, 4), b[i])
    assert np.array_equal(mem["C"].view(np.int32).reshape(16, 16), wrap32(c))
    assert np.array_equal(mem["A"], A) and np.array_equal(mem["B"], B)
    assert "TILESTORED tmm0, %c.slot, 64" in mod.emit("machine")  # the -O0 vector store became a tile store


@pytest.mark.parametrize("M, N, K", [(32, 32, 192), (16, 48, 64), (48, 16, 128), (16, 16, 0), (64, 64, 256)])
def test_o2_shaped_gemm(M, N, K):
    mod = compile_ir(example("gemm_o2.ll"))
    rng = np.random.default_rng(M + N + K)
    A, B, C = (rng.integers(0, 256, 16384, dtype=np.uint8) for _ in range(3))
    mem = {"A": A.copy(), "B": B.copy(), "C": C.copy()}
    mod.run("gemm", "A", "B", "C", M, N, K, memory=mem)
    a = A[:M * K].view(np.int8).reshape(M, K // 4, 4).astype(np.int64)
    b = B[:K * N].view(np.int8).reshape(K // 4, N, 4).astype(np.int64)
    c = C[:4 * M * N].view(np.int32).reshape(M, N).astype(np.int64) + np.einsum("mkq,knq->mn", a, b)
    want = C.copy()
    want[:4 * M * N] = wrap32(c).reshape(-1).view(np.uint8)
    assert np.array_equal(mem["C"], want)
    info = mod.info["gemm"]
    assert info["spilled"] == [] and info["copies"] == info["copies_eliminated"]


def test_spill_heavy_equals_eager():
    mod = compile_ir(example("spill_heavy.ll"))
    rng = np.random.default_rng(0)
    for n in (0, 1, 3):
        A, B, C = (rng.integers(0, 256, 4096, dtype=np.uint8) for _ in range(3))
        m1 = {"A": A.copy(), "B": B.copy(), "C": C.copy()}
        m2 = {"A": A.copy(), "B": B.copy(), "C": C.copy()}
        mod.run("spill_heavy", n, memory=m1)
        mod.run_eager("spill_heavy", n, memory=m2)
        assert np.array_equal(m1["C"], m2["C"])
        assert n == 0 or not np.array_equal(m1["C"], C)
