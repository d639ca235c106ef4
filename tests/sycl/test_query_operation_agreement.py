"""Issue 25: what the capability query says yes to, the operation does, on every device.

For every device of ``systolic.sycl`` and every record that ``queue(dev).get_device().get_info(
"matrix_combinations")`` answers, one joint_matrix GEMM (conftest's test-e2e kernel: load C, ``mad``, store D) runs
with exactly that record's A/B/C/D types and a shape the record admits: the fixed msize/nsize/ksize where it has
them, else the smallest legal size (M, N = 1; K = one VNNI group of A's type), and, for records with max_* sizes,
once more at those max sizes. The test fails if the operation
refuses (``UnsupportedOperation`` / ``UnsupportedCombination``) or computes a wrong value.

Oracles, independent of the code under test: exact int64 arithmetic for the integer records; for the float
records inputs in {-2..2}, so every product and partial sum is a small integer exact in every type involved (the
rounding model cannot matter), against numpy's float64 matmul cast to the D type. The other direction (a record of intel/llvm's list left out of
the query, ``Device.not_lowered``, is refused) is the last test.
"""

from __future__ import annotations

import numpy as np
import pytest

from systolic.errors import UnsupportedCombination, UnsupportedOperation

from .conftest import ALL_DEVICES, VNNI, gemm, mem_dtype, wrap32

#: matrix_type names (the query's) -> the short names conftest's kernel takes
_SHORT = {"sint8": "s8", "uint8": "u8", "sint32": "s32", "bf16": "bf16", "fp16": "fp16", "fp32": "fp32",
          "tf32": "tf32"}


def _queried(device):
    from systolic import sycl
    return list(sycl.queue(device).get_device().get_info("matrix_combinations"))


def _cases():
    """(device, record, size): every queried record at its smallest legal shape, and a record with max_* sizes
    also at its largest (the max_* sizes: the query says yes to those too)."""
    for dev in ALL_DEVICES:
        for i, c in enumerate(_queried(dev)):
            sizes = ("smallest", "largest") if (c.max_msize or c.max_nsize or c.max_ksize) else ("smallest",)
            for size in sizes:
                yield pytest.param(dev, c, size, id=f"{dev}-{i}-{c.atype}{c.btype}{c.ctype}{c.dtype}-"
                                   f"{c.shape_text()}-{size}".replace(" ", "").replace("<=", "le"))


def _shape(c, size):
    """The record's fixed sizes, else the smallest legal one (M, N = 1; K = one VNNI group) or the largest (the
    max_* size itself)."""
    vf = VNNI[_SHORT[c.atype]]
    small = size == "smallest"
    m = c.msize or (1 if small else c.max_msize)
    n = c.nsize or (1 if small else c.max_nsize)
    k = c.ksize or (vf if small else c.max_ksize)
    assert c.admits(m, n, k)
    return m, n, k


def _inputs(rng, shape, t):
    lo, hi = {"s8": (-128, 127), "u8": (0, 255), "s32": (-1000, 1000)}.get(t, (-2, 2))
    v = rng.integers(lo, hi + 1, size=shape)
    return (v.astype(np.float64) if t in ("bf16", "fp16", "tf32", "fp32") else v).astype(mem_dtype(t))


@pytest.mark.parametrize("device,combo,size", list(_cases()))
def test_queried_combination_runs_and_is_exact(device, combo, size, rng):
    ta, tb, tc, td = (_SHORT[t] for t in combo.types())
    M, N, K = _shape(combo, size)
    A = _inputs(rng, (M, K), ta)
    B = _inputs(rng, (K, N), tb)
    C = _inputs(rng, (M, N), tc)
    D = gemm(device, A, B, C, M, N, K, ta=ta, tb=tb, tc=tc, td=td)
    assert D.shape == (M, N) and D.dtype == mem_dtype(td)
    if td == "s32":
        want = wrap32(A.astype(np.int64) @ B.astype(np.int64) + C.astype(np.int64))
        assert np.array_equal(D, want)
    else:
        ref = A.astype(np.float64) @ B.astype(np.float64) + C.astype(np.float64)
        want = ref.astype(mem_dtype(td)).astype(np.float64)
        assert np.all(ref == want), "oracle inputs must keep every value exact in D's type"
        assert np.array_equal(np.asarray(D).astype(np.float64), want)


def test_every_device_is_checked():
    """The parametrization covers all nine devices and each one's whole answer (nothing filtered out)."""
    from systolic import sycl
    assert {d.name for d in sycl.devices()} == set(ALL_DEVICES)
    assert {(d, c) for d in ALL_DEVICES for c in _queried(d)} == {(p.values[0], p.values[1]) for p in _cases()}


def _not_lowered():
    from systolic import sycl
    for dev in ALL_DEVICES:
        for c in sycl.get_device(dev).not_lowered:
            yield pytest.param(dev, c, id=f"{dev}-{c.atype}{c.btype}{c.ctype}{c.dtype}")


@pytest.mark.parametrize("device,combo", list(_not_lowered()))
def test_not_lowered_is_refused_and_not_queried(device, combo, rng):
    """The other direction: a record of intel/llvm's list that systolic leaves out (Device.not_lowered) is absent
    from the query and its GEMM is refused with a typed error, not computed."""
    assert combo not in _queried(device)
    ta, tb, tc, td = (_SHORT[t] for t in combo.types())
    M, N, K = _shape(combo, "smallest")
    A, B, C = _inputs(rng, (M, K), ta), _inputs(rng, (K, N), tb), _inputs(rng, (M, N), tc)
    with pytest.raises((UnsupportedCombination, UnsupportedOperation)):
        gemm(device, A, B, C, M, N, K, ta=ta, tb=tb, tc=tc, td=td)
