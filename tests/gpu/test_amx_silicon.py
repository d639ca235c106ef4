"""The CUDA AMX GEMM replays the recorded silicon TMUL operations bit for bit (tests/data/amx_silicon).

Each stored ``dot:*`` operation (300 per family: TDPBSSD, TDPBSUD, TDPBUSD, TDPBUUD, TDPBF16PS and the
TDPBF16PS edge family aimed at FTZ/DAZ, NaN choice, inf*0, RNE ties and cancellation) is one TMUL on one
tile triple, i.e. ``matmul(A, B, C)`` with K <= one tile-K block; the GPU result must equal the bytes the
silicon stored. Also the 32 FTZ-window cases of ftz_window.json. The oracle is silicon, not the CPU path.
"""

from __future__ import annotations

import json
import os

import ml_dtypes
import numpy as np
import pytest

from systolic.amx import matmul

from .conftest import SILICON, needs_gpu

DTYPES = {"tdpbssd": (np.int8, np.int8), "tdpbsud": (np.int8, np.uint8), "tdpbusd": (np.uint8, np.int8),
          "tdpbuud": (np.uint8, np.uint8), "tdpbf16ps": (ml_dtypes.bfloat16, ml_dtypes.bfloat16)}
FAMILIES = ["dot:tdpbssd", "dot:tdpbsud", "dot:tdpbusd", "dot:tdpbuud", "dot:tdpbf16ps", "dot:tdpbf16ps:edge"]


def silicon_ops(full, fam):
    """(A, B, C, silicon output bits) of each stored operation: the tiles' configured parts, B un-VNNI'd."""
    mn = fam.split(":")[1]
    da, db = DTYPES[mn]
    per = 2 if mn == "tdpbf16ps" else 4                 # elements per dword
    for i in range(full[fam + "/m"].shape[0]):
        m, k, n = (int(full[f"{fam}/{x}"][i]) for x in "mkn")    # rows, dwords of K, columns
        a = np.ascontiguousarray(full[fam + "/a"][i][:m, :4 * k]).view(da)
        img = np.ascontiguousarray(full[fam + "/b"][i][:k, :4 * n]).view(np.uint8 if per == 4 else np.uint16)
        b = np.ascontiguousarray(img.reshape(k, n, per).transpose(0, 2, 1).reshape(k * per, n)).view(db)
        c = np.ascontiguousarray(full[fam + "/c"][i][:m, :4 * n]).view(np.int32 if per == 4 else np.float32)
        out = np.ascontiguousarray(full[fam + "/out"][i][:m, :4 * n]).view(np.uint32)
        yield a, b, c, out


@pytest.fixture(scope="module")
def full():
    return np.load(os.path.join(SILICON, "full.npz"))


def test_extraction_reproduces_silicon_on_the_cpu_path(full):
    """The operand extraction is right: the CPU path (verified on silicon elsewhere) gives the stored bytes."""
    for fam in ("dot:tdpbsud", "dot:tdpbf16ps:edge"):
        for a, b, c, out in list(silicon_ops(full, fam))[:40]:
            assert np.array_equal(matmul(a, b, c, backend="cpu").view(np.uint32), out)


@needs_gpu
@pytest.mark.parametrize("fam", FAMILIES)
def test_cuda_equals_silicon(full, fam):
    n = 0
    for i, (a, b, c, out) in enumerate(silicon_ops(full, fam)):
        got = matmul(a, b, c, backend="cuda").view(np.uint32)
        assert np.array_equal(got, out), f"{fam} op {i}: GPU differs from silicon"
        n += 1
    assert n == 300


@needs_gpu
def test_cuda_equals_silicon_in_the_ftz_window():
    rec = json.load(open(os.path.join(SILICON, "ftz_window.json")))
    n = 0
    for prog in rec["programs"]:
        a = np.array(prog["a"], np.float32).astype(ml_dtypes.bfloat16)[None, :]       # 1 x 4
        b = np.zeros((4, 16), ml_dtypes.bfloat16)
        b[0] = np.array(prog["b0"], np.float32).astype(ml_dtypes.bfloat16)
        b[2] = np.array(prog["b1"], np.float32).astype(ml_dtypes.bfloat16)
        got = matmul(a, b, backend="cuda").view(np.uint32)[0].tolist()
        assert got == prog["silicon"], prog["name"]
        n += len(got)
    assert n == 32
