"""Row and column sums through joint_matrix_apply's coordinates (a port of intel/llvm sycl/test-e2e/Matrix
``get_coordinate_ops``): each work-item adds the elements of its own slice into private per-row and per-column
arrays (``sum_local_rows[row + ...] += x`` in an ``f(x, row, col)`` with side effects), the sub-group reduces
them with ``reduce_over_group(sg, v, plus)``, and the sub-group leader adds the result to global memory with
``atomic_ref(...).fetch_add``.

The matrix is M[i][j] = T(i + j), 2 x 2 tiles of the operand's size, loaded as use::a (row-major), use::b (row-major
or VNNI-packed) or the accumulator; the tile shapes are the test's (AMX: A 16 x 32 bf16 / 16 x 64 int8 ...;
PVC: A 8 x 16; DG2: B 16 x 8). The oracle sums M in Python ints (every value is a small integer, exact in
bf16 and float). This needs joint_matrix_apply to call ``f`` once per element per work-item, as DPC++ does.

Run: ``systolic run examples/sycl/get_coord_sums.py --device pvc`` or ``python examples/sycl/get_coord_sums.py
dg2``.
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np

from systolic import sycl
from systolic.sycl import matrix as jm

DEVICE = "pvc"
DEVICES = ("pvc", "bmg", "lnl", "dg2", "arl", "spr", "emr", "gnr", "dmr")

BF16 = ml_dtypes.bfloat16
#: (T, TResult, use, layout, VNNI factor, rows, cols) per device family: the test's own list for int8 and bf16
CASES = {
    "amx": [(BF16, np.float32, "a", "row_major", 1, 16, 32), (np.int8, np.int32, "a", "row_major", 1, 16, 64),
            (BF16, np.float32, "b", "row_major", 1, 16, 16), (np.int8, np.int32, "b", "row_major", 1, 64, 16),
            (BF16, np.float32, "b", "ext_intel_packed", 2, 16, 16),
            (np.int8, np.int32, "b", "ext_intel_packed", 4, 64, 16),
            (np.float32, np.float32, "accumulator", "row_major", 1, 16, 16),
            (np.int32, np.int32, "accumulator", "row_major", 1, 16, 16)],
    16: [(BF16, np.float32, "a", "row_major", 1, 8, 16), (np.int8, np.int32, "a", "row_major", 1, 8, 32),
         (BF16, np.float32, "b", "ext_intel_packed", 2, 16, 16),
         (np.int8, np.int32, "b", "ext_intel_packed", 4, 32, 16),
         (np.float32, np.float32, "accumulator", "row_major", 1, 8, 16),
         (np.int32, np.int32, "accumulator", "row_major", 1, 8, 16),
         (BF16, np.float32, "b", "row_major", 1, 16, 16), (np.int8, np.int32, "b", "row_major", 1, 32, 16)],
    8: [(BF16, np.float32, "a", "row_major", 1, 8, 16), (np.int8, np.int32, "a", "row_major", 1, 8, 32),
        (BF16, np.float32, "b", "row_major", 1, 16, 8), (np.int8, np.int32, "b", "row_major", 1, 32, 8),
        (BF16, np.float32, "b", "ext_intel_packed", 2, 16, 8), (np.int8, np.int32, "b", "ext_intel_packed", 4, 32, 8),
        (np.float32, np.float32, "accumulator", "row_major", 1, 8, 8),
        (np.int32, np.int32, "accumulator", "row_major", 1, 8, 8)],
}


def matrix_sum(q, T, TResult, use, layout, vf, srows, scols):
    """One case: the row and column sums of M (2 x 2 tiles) computed by the kernel, and M itself."""
    sg_size = q.get_device().get_info("sub_group_sizes")[0]
    rows, cols = 2 * srows, 2 * scols
    # M[i][j] = T(i + j), as the test fills it (int8: 158 wraps to -98, C++'s conversion; the others are exact)
    M = np.add.outer(np.arange(rows), np.arange(cols)).astype(T)
    # VNNI image: row r // vf holds, for each column c, the vf values M[r..r+vf-1, c]
    img = M.reshape(rows // vf, vf, cols).transpose(0, 2, 1).reshape(rows // vf, cols * vf)
    buf = q.malloc_shared(img.size, T)
    np.asarray(buf)[:] = img.reshape(-1)
    v_rows = q.malloc_shared(rows, TResult)
    v_cols = q.malloc_shared(cols, TResult)
    lay = getattr(jm.layout, layout)

    def kernel(item):
        gx, gy = item.get_global_id(0), item.get_global_id(1)
        sg_startx, sg_starty = gx - item.get_local_id(0), gy - item.get_local_id(1)
        sg = item.get_sub_group()
        sum_local_rows = np.zeros(rows, TResult)       # private arrays of each work-item
        sum_local_cols = np.zeros(cols, TResult)
        if use == "accumulator":
            sub = jm.joint_matrix(sg, T, jm.use.accumulator, srows, scols)
            jm.joint_matrix_load(sg, sub, buf + sg_startx * srows * cols + sg_starty // sg_size * scols, cols, lay)
        else:
            sub = jm.joint_matrix(sg, T, getattr(jm.use, use), srows, scols, lay)
            jm.joint_matrix_load(sg, sub, buf + sg_startx * (srows // vf) * cols * vf
                                 + sg_starty // sg_size * scols * vf, cols * vf)

        def f(x, row, col):                        # [&](T &x, size_t row, size_t col) { ... += x; }
            sum_local_rows[row + gx * srows] += x
            sum_local_cols[col + gy // sg_size * scols] += x
        jm.joint_matrix_apply(sg, sub, f)

        for local, glob in ((sum_local_rows, v_rows), (sum_local_cols, v_cols)):
            for i in range(len(local)):
                total = sycl.reduce_over_group(sg, local[i], sycl.plus())
                if gy % sg_size == 0:               # the sub-group leader accumulates globally
                    sycl.atomic_ref(glob + i, sycl.memory_order.relaxed, sycl.memory_scope.device).fetch_add(total)

    q.parallel_for(sycl.nd_range((rows // srows, cols // scols * sg_size), (1, sg_size)), kernel).wait()
    return np.asarray(v_rows).copy(), np.asarray(v_cols).copy(), M


def main(device: str) -> dict:
    q = sycl.queue(device)
    rec = q.get_device().record
    sg_size = rec.sub_group_size
    cases = CASES["amx" if rec.backend == "amx" else sg_size]
    results, oracles = [], []
    for case in cases:
        r, c, M = matrix_sum(q, *case)
        results += [r.astype(np.int64), c.astype(np.int64)]
        oracles += [np.array([sum(int(v) for v in row) for row in M], dtype=np.int64),     # Python ints
                    np.array([sum(int(v) for v in col) for col in M.T], dtype=np.int64)]
    return {"result": np.concatenate(results), "oracle": np.concatenate(oracles), "sub_group_size": sg_size,
            "note": f"{len(cases)} operand cases (types, uses, layouts) of test-e2e get_coordinate_ops"}


if __name__ == "__main__":
    dev = sys.argv[1] if len(sys.argv) > 1 else DEVICE
    out = main(dev)
    same = np.array_equal(out["result"], out["oracle"])
    print(f"get_coord_sums on {dev}: {'PASS' if same else 'FAIL'} (exact row/column sums; {out['note']})")
    sys.exit(0 if same else 1)
