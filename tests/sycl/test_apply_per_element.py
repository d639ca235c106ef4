"""joint_matrix_apply calls f once per element per work-item, as DPC++ does (issue 25).

DPC++'s joint_matrix_apply loops over the work-item's slice and calls ``f(x[, row, col])`` for each element, so
a lambda with side effects sees each element once (intel/llvm test-e2e get_coordinate_ops: ``sum_local_rows[row]
+= x``). Oracles independent of the slice map: the side effects of all work-items of a sub-group together cover
the matrix exactly once (their sums add up to the matrix's sum, their call counts to rows x cols), and every
work-item's calls stay inside its own elements.
"""

from __future__ import annotations

import numpy as np
import pytest

from systolic import sycl
from systolic.sycl import matrix as jm

SHAPES = {"pvc": (8, 16), "dg2": (8, 8), "spr": (16, 16)}


@pytest.mark.parametrize("mode", ["auto", "per-item"])
@pytest.mark.parametrize("dev", sorted(SHAPES))
def test_nonlocal_accumulator(dev, mode):
    """``s += x`` into a variable of the kernel (the issue's example): the old whole-slice call left s a Varying."""
    R, C = SHAPES[dev]
    q = sycl.queue(dev, mode=mode)
    sg = q.get_device().get_info("sub_group_sizes")[0]
    vals = (np.arange(R * C) % 23 - 11).astype(np.int32)
    src = q.malloc_shared(R * C, np.int32)
    np.asarray(src)[:] = vals
    sums = q.malloc_shared(sg, np.int64)
    calls = q.malloc_shared(sg, np.int64)

    def kernel(it):
        s = 0
        n = 0
        g = it.get_sub_group()
        m = jm.joint_matrix(g, np.int32, jm.use.accumulator, R, C)
        jm.joint_matrix_load(g, m, src, C, jm.layout.row_major)

        def f(x):
            nonlocal s, n
            s += int(x)
            n += 1
        jm.joint_matrix_apply(g, m, f)
        sums[it.get_local_id(0)] = s
        calls[it.get_local_id(0)] = n
    q.parallel_for(sycl.nd_range((sg,), (sg,)), kernel)
    assert int(np.asarray(sums).sum()) == int(vals.astype(np.int64).sum())
    assert int(np.asarray(calls).sum()) == R * C
    assert q.last_event.mode == "per-item"


@pytest.mark.parametrize("dev", sorted(SHAPES))
def test_row_col_side_effects(dev):
    """The get_coordinate idiom: private per-row / per-column arrays, then reduce_over_group."""
    R, C = SHAPES[dev]
    q = sycl.queue(dev)
    sg = q.get_device().get_info("sub_group_sizes")[0]
    M = np.add.outer(3 * np.arange(R), np.arange(C)).astype(np.float32)
    src = q.malloc_shared(R * C, np.float32)
    np.asarray(src)[:] = M.reshape(-1)
    rows = q.malloc_shared(R, np.float32)
    cols = q.malloc_shared(C, np.float32)

    def kernel(it):
        g = it.get_sub_group()
        m = jm.joint_matrix(g, np.float32, jm.use.accumulator, R, C)
        jm.joint_matrix_load(g, m, src, C, jm.layout.row_major)
        r = np.zeros(R, np.float32)
        c = np.zeros(C, np.float32)

        def f(x, row, col):
            r[row] += x
            c[col] += x
        jm.joint_matrix_apply(g, m, f)
        for i in range(R):
            rows[i] = sycl.reduce_over_group(g, r[i], sycl.plus())
        for j in range(C):
            cols[j] = sycl.reduce_over_group(g, c[j], sycl.plus())
    q.parallel_for(sycl.nd_range((sg,), (sg,)), kernel)
    assert [int(v) for v in np.asarray(rows)] == [sum(int(v) for v in row) for row in M]
    assert [int(v) for v in np.asarray(cols)] == [sum(int(v) for v in col) for col in M.T]


def test_pure_functions_stay_vectorised():
    """A function without side effects still runs once on whole slices (no per-work-item fallback)."""
    q = sycl.queue("pvc")
    out = q.malloc_shared(8 * 16, np.float32)

    def kernel(it):
        g = it.get_sub_group()
        m = jm.joint_matrix(g, np.float32, jm.use.accumulator, 8, 16)
        jm.joint_matrix_fill(g, m, 2.0)
        jm.joint_matrix_apply(g, m, lambda x: x * 3)
        jm.joint_matrix_store(g, m, out, 16, jm.layout.row_major)
    q.parallel_for(sycl.nd_range((16,), (16,)), kernel)
    assert q.last_event.mode == "vector"
    assert np.all(np.asarray(out) == 6.0)


def test_captured_list_is_impure():
    from systolic.sycl.matrix_core import _pure
    acc = []
    k = 3
    assert _pure(lambda x: x * k)
    assert not _pure(lambda x: acc.append(x))
    assert _pure(np.exp) and _pure(abs)
    assert not _pure(type("F", (), {"__call__": lambda self, x: x})())    # a callable object: possibly impure


def test_ptr_made_inside_a_per_item_kernel_is_one_allocation():
    """``sycl.ptr(out)`` called by each work-item gives each its own numpy view of one array: the same
    allocation for a group operation's uniformity check (it was a DivergentCollective per work-item)."""
    out = np.zeros((8, 16), np.float32)

    def kernel(it):
        g = it.get_sub_group()
        m = jm.joint_matrix(g, np.float32, jm.use.accumulator, 8, 16)
        jm.joint_matrix_fill(g, m, 1.5)
        jm.joint_matrix_store(g, m, sycl.ptr(out), 16, jm.layout.row_major)
    sycl.queue("pvc", mode="per-item").parallel_for(sycl.nd_range((16,), (16,)), kernel)
    assert np.all(out == 1.5)
