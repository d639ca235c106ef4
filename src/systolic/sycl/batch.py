"""Many independent sub-group products ``D_p = C_p + A_p @ B_p`` as few engine GEMM calls.

Every element of a GEMM computed by :func:`systolic.xmx.matmul` / :func:`systolic.amx.matmul` depends only on
its row of A, its column of B and its C value (with a fixed K blocking), so stacking the sub-groups' distinct A
fragments as row blocks and their distinct B fragments as column blocks gives one GEMM whose diagonal-free
"grid" holds every product at once, bit for bit what each product alone would give. A sub-group GEMM kernel
shares A fragments along rows and B fragments along columns, so the grid is usually exactly the set of
products needed; when it would be much bigger, products are grouped by shared B (or A) instead.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["batched_mad", "stats"]

stats = {"calls": 0, "engine_calls": 0, "grid": 0, "grouped": 0}


def _unique(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct fragments by their bits: (index of each distinct one's first occurrence, inverse map)."""
    p = x.shape[0]
    raw = np.ascontiguousarray(x).reshape(p, -1).view(np.uint8).reshape(p, -1)
    if raw.shape[1] == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(p, dtype=np.int64)
    _, first, inv = np.unique(raw, axis=0, return_index=True, return_inverse=True)
    return first, inv.reshape(-1)


def batched_mad(fn: Callable, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``fn(A2, B2, C2) -> D2`` (one engine GEMM) applied to every product p of ``a`` (P, M, K), ``b`` (P, K, N),
    ``c`` (P, M, N); returns (P, M, N)."""
    P, M, K = a.shape
    N = b.shape[2]
    stats["calls"] += 1
    if P == 1:
        stats["engine_calls"] += 1
        return fn(a[0], b[0], c[0])[None]
    fa, ia = _unique(a)
    fb, ib = _unique(b)
    nA, nB = len(fa), len(fb)
    out = None
    if nA * nB <= 2 * P + 4:
        # rounds so that each (A, B) pair appears once per grid GEMM
        pair = ia * nB + ib
        order = np.argsort(pair, kind="stable")
        sp = pair[order]
        rank = np.empty(P, dtype=np.int64)
        starts = np.r_[0, np.nonzero(np.diff(sp))[0] + 1]
        run_start = np.repeat(starts, np.diff(np.r_[starts, P]))
        rank[order] = np.arange(P) - run_start
        big_a = a[fa].reshape(nA * M, K)
        big_b = np.ascontiguousarray(b[fb].transpose(1, 0, 2)).reshape(K, nB * N)
        out = np.empty((P,) + (M, N), dtype=None if False else c.dtype)
        res_dtype = None
        for r in range(int(rank.max()) + 1):
            sel = np.nonzero(rank == r)[0]
            big_c = np.zeros((nA, M, nB, N), dtype=c.dtype)
            big_c[ia[sel], :, ib[sel], :] = c[sel]
            d = fn(big_a, big_b, big_c.reshape(nA * M, nB * N))
            stats["engine_calls"] += 1
            d4 = d.reshape(nA, M, nB, N)
            if res_dtype is None:
                res_dtype = d.dtype
                out = np.empty((P, M, N), dtype=res_dtype)
            out[sel] = d4[ia[sel], :, ib[sel], :]
        stats["grid"] += 1
        return out
    # grouped by the operand with fewer distinct fragments
    stats["grouped"] += 1
    res = None
    if nB <= nA:
        for j in range(nB):
            sel = np.nonzero(ib == j)[0]
            d = fn(a[sel].reshape(-1, K), b[sel[0]], c[sel].reshape(-1, N))
            stats["engine_calls"] += 1
            if res is None:
                res = np.empty((P, M, N), dtype=d.dtype)
            res[sel] = d.reshape(len(sel), M, N)
    else:
        for i in range(nA):
            sel = np.nonzero(ia == i)[0]
            bb = np.ascontiguousarray(b[sel].transpose(1, 0, 2)).reshape(K, -1)
            cc = np.ascontiguousarray(c[sel].transpose(1, 0, 2)).reshape(M, -1)
            d = fn(a[sel[0]], bb, cc)
            stats["engine_calls"] += 1
            if res is None:
                res = np.empty((P, M, N), dtype=d.dtype)
            res[sel] = d.reshape(M, len(sel), N).transpose(1, 0, 2)
    return res
