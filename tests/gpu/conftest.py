"""Shared fixtures of the CUDA-backend tests: the skip rule, random inputs, the silicon data.

Tests marked ``needs_gpu`` run where :func:`systolic.gpu.availability` says the CUDA backend can run (an NVIDIA
GPU with CuPy); elsewhere (CI) they are skipped with the reason it gives (no CuPy, no device, driver too old).
The tests of the unavailable paths run everywhere.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from systolic.gpu import availability

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SILICON = os.path.join(ROOT, "tests", "data", "amx_silicon")

GPU, GPU_WHY = availability()

#: tests that run CUDA kernels
needs_gpu = pytest.mark.skipif(not GPU, reason=f"CUDA backend unavailable: {GPU_WHY}")


def bits32(x) -> np.ndarray:
    """The uint32 bit patterns of a float32 / int32 result (numpy, CuPy or torch), for exact comparison."""
    from systolic.gpu.runtime import to_numpy
    return np.ascontiguousarray(to_numpy(x)).view(np.uint32)


def assert_same_bits(got, want, what=""):
    g, w = bits32(got), bits32(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    bad = np.argwhere(g != w)
    assert bad.size == 0, (f"{what}: {len(bad)} of {g.size} outputs differ; first at {tuple(bad[0])}: "
                           f"got {g[tuple(bad[0])]:#010x}, CPU {w[tuple(bad[0])]:#010x}")
