"""The seed's 2021 example and the SYCL program files of ``examples/sycl`` (categories "seed_2021" and "examples"
of the mapping table in ``test_e2e_matrix.py``).

* The seed example (sycl_ext_intel_matrix-2021-amx.md) runs as written with ``systolic.sycl.matrix_2021`` on the
  AMX CPUs, including matrices bigger than one tile ("this current implementation can handle any size").
* The same GEMM, written in today's API (``systolic.sycl.matrix``), on spr, dg2 and pvc.
* Every program file follows the ``systolic run`` protocol and is bit-identical to its own independent oracle on
  the devices it declares.
Oracles: numpy int64 arithmetic and a Python VNNI loop.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import SUB_GROUP, device_buffer, oracle_gemm, read, shape, vnni, wrap32

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "sycl"


def load(name):
    spec = importlib.util.spec_from_file_location(f"systolic_example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ----------------------------------------------------------------------------------------- the seed, 2021 API
def seed_kernel_2021(device, a, b_vnni, c, tM, tN, tK):
    """The seed's kernel body as the text writes it (see examples/sycl/seed_gemm_2021.py for the two readings)."""
    from systolic import sycl
    from systolic.sycl.matrix_2021 import (
        joint_matrix,
        joint_matrix_load,
        joint_matrix_mad,
        joint_matrix_store,
        matrix_layout,
    )
    M, K = a.shape
    N = c.shape[1]
    tk = tK
    q = sycl.queue(device)
    memA, memB, memC = device_buffer(q, a), device_buffer(q, b_vnni), device_buffer(q, c)

    def kernel(item):
        global_idx = item.get_global_id(0)
        global_idy = item.get_global_id(1)
        sg_startx = global_idx - item.get_local_id(0)
        sg_starty = global_idy - item.get_local_id(1)
        sg = item.get_sub_group()
        tA = joint_matrix(sg, a.dtype.type, tM, tK)
        tB = joint_matrix(sg, a.dtype.type, tK // 4, tN * 4, matrix_layout.packed_b)
        tC = joint_matrix(sg, np.int32, tM, tN)
        joint_matrix_load(sg, tC, memC + sg_startx * tM * N + sg_starty, N, matrix_layout.row_major)
        for k in range(0, K, tk):
            joint_matrix_load(sg, tA, memA + sg_startx * tM * K + k, K, matrix_layout.row_major)
            joint_matrix_load(sg, tB, memB + k * N + sg_starty, N * 4, matrix_layout.packed_b)
            tC = joint_matrix_mad(sg, tA, tB, tC)
        joint_matrix_store(sg, tC, memC + sg_startx * tM * N + sg_starty, N, matrix_layout.row_major)

    q.parallel_for(sycl.nd_range(sycl.range(M // tM, N // tN), sycl.range(1, 1)), kernel).wait()
    return read(memC, (M, N))


@pytest.mark.parametrize("device", ["spr", "gnr"])
def test_seed_example_2021(device):
    """examples/sycl/seed_gemm_2021.py: the seed example, verbatim in Python, on the AMX CPUs."""
    out = load("seed_gemm_2021").main(device)
    assert out["result"].dtype == np.int32
    assert np.array_equal(out["result"], out["oracle"])
    # an oracle of our own, from the example's inputs re-drawn with the same seed
    rng = np.random.default_rng(2021)
    ex = load("seed_gemm_2021")
    a = rng.integers(-128, 128, size=(ex.M, ex.K)).astype(np.int8)
    b = rng.integers(-128, 128, size=(ex.K, ex.N)).astype(np.int8)
    c = rng.integers(-1000, 1000, size=(ex.M, ex.N)).astype(np.int32)
    assert np.array_equal(out["result"].astype(np.int64), oracle_gemm(a, b, c))


@pytest.mark.parametrize("device", ["spr"])
@pytest.mark.parametrize("tM,tN,tK,tiles_m,k_steps", [(16, 16, 64, 2, 3), (8, 4, 16, 3, 2), (32, 16, 64, 2, 2),
                                                      (16, 32, 128, 1, 2), (40, 24, 96, 2, 1)])
def test_seed_any_size(device, tM, tN, tK, tiles_m, k_steps, rng):
    """The 2021 text: "this current implementation can handle any size" (bigger than a 16 x 64-byte tile: kept in
    memory). One tile column (N = tN), as the example's pointer arithmetic needs."""
    M, N, K = tiles_m * tM, tN, k_steps * tK
    a = rng.integers(-128, 128, size=(M, K)).astype(np.int8)
    b = rng.integers(-128, 128, size=(K, N)).astype(np.int8)
    c = rng.integers(-5, 5, size=(M, N)).astype(np.int32)
    got = seed_kernel_2021(device, a, vnni(b, 4), c, tM, tN, tK)
    assert np.array_equal(got.astype(np.int64), oracle_gemm(a, b, c))


# ----------------------------------------------------------------------------------------- the same GEMM, today
@pytest.mark.parametrize("device", ["spr", "dg2", "pvc"])
def test_seed_gemm_today(device, rng):
    """The seed's GEMM in today's API: joint_matrix<sub_group, T, use, rows, cols, layout>, ext_intel_packed B,
    joint_matrix_mad(sg, D, A, B, C); one sub-group per tile, every tile column (N = 2 tN)."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    tM, tN, tK = shape(device, "s8")
    sg_size = SUB_GROUP[device]
    M, N, K = 3 * tM, 2 * tN, 3 * tK
    a = rng.integers(-128, 128, size=(M, K)).astype(np.int8)
    b = rng.integers(-128, 128, size=(K, N)).astype(np.int8)
    c = rng.integers(-1000, 1000, size=(M, N)).astype(np.int32)
    q = sycl.queue(device)
    memA, memB, memC = device_buffer(q, a), device_buffer(q, vnni(b, 4)), device_buffer(q, c, "ptr")

    def kernel(item):
        sg_startx = item.get_global_id(0) - item.get_local_id(0)
        sg_starty = item.get_global_id(1) - item.get_local_id(1)
        sg = item.get_sub_group()
        tA = jm.joint_matrix(sg, np.int8, jm.use.a, tM, tK, jm.layout.row_major)
        tB = jm.joint_matrix(sg, np.int8, jm.use.b, tK, tN, jm.layout.ext_intel_packed)
        tC = jm.joint_matrix(sg, np.int32, jm.use.accumulator, tM, tN)
        n0 = sg_starty // sg_size * tN
        jm.joint_matrix_load(sg, tC, memC + sg_startx * tM * N + n0, N, jm.layout.row_major)
        for k in range(0, K, tK):
            jm.joint_matrix_load(sg, tA, memA + sg_startx * tM * K + k, K)
            jm.joint_matrix_load(sg, tB, memB + (k // 4) * (N * 4) + n0 * 4, N * 4)
            jm.joint_matrix_mad(sg, tC, tA, tB, tC)
        jm.joint_matrix_store(sg, tC, memC + sg_startx * tM * N + n0, N, jm.layout.row_major)

    q.parallel_for(sycl.nd_range((M // tM, N // tN * sg_size), (1, sg_size)), kernel).wait()
    assert np.array_equal(read(memC, (M, N)), wrap32(oracle_gemm(a, b, c)))


# ----------------------------------------------------------------------------------------- program files
PROGRAMS = {"seed_gemm_2021": ("spr", "gnr"), "gemm_int8": ("spr", "gnr", "dg2", "pvc", "bmg", "lnl"),
            "gemm_bf16": ("spr", "gnr", "dg2", "pvc", "bmg", "lnl"), "get_coord_sums": ("spr", "dg2", "pvc")}


@pytest.mark.parametrize("name,device", [(n, d) for n, ds in PROGRAMS.items() for d in ds])
def test_example_program(name, device):
    """Each program file keeps the ``systolic run`` protocol (docstring, DEVICE, DEVICES, main(device) -> dict)
    and its result equals its oracle bit for bit on ``device``."""
    from systolic.run.python_program import check_protocol
    mod = load(name)
    _doc, default, devices = check_protocol(mod, EXAMPLES / f"{name}.py")
    assert device in devices and default in devices
    out = mod.main(device)
    r, o = np.asarray(out["result"]), np.asarray(out["oracle"])
    assert r.dtype == o.dtype and r.shape == o.shape
    assert np.array_equal(r.view(np.uint8), o.view(np.uint8))
    assert out.get("sub_group_size") == SUB_GROUP[device]


def test_seed_script_runs():
    """``python examples/sycl/seed_gemm_2021.py`` prints a one-line PASS verdict (the README's main job)."""
    p = subprocess.run([sys.executable, str(EXAMPLES / "seed_gemm_2021.py")], check=False,
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1].startswith("seed_gemm_2021 on spr: PASS")


test_seed_script_runs.e2e_devices = ("spr",)
