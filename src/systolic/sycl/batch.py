"""Many independent sub-group products ``D_p = C_p + A_p @ B_p`` as few engine GEMM calls.

Every element of a GEMM computed by :func:`systolic.xmx.matmul` / :func:`systolic.amx.matmul` depends only on
its row of A, its column of B and its C value (with a fixed K blocking), so stacking the sub-groups' distinct A
fragments as row blocks and their distinct B fragments as column blocks gives one GEMM whose diagonal-free
"grid" holds every product at once, bit for bit what each product alone would give. A sub-group GEMM kernel
shares A fragments along rows and B fragments along columns, so the grid is usually exactly the set of
products needed; when it would be much bigger, products are grouped by shared B (or A) instead.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import numpy as np

__all__ = ["batched_mad", "kernel_counts", "stats"]

stats = {"calls": 0, "engine_calls": 0, "grid": 0, "grouped": 0}


@contextmanager
def kernel_counts():
    """Keep the engine GEMM's own instruction counts (``systolic.counters``) out of the recorders while a batch
    runs: a batch stacks many sub-groups' tiles into one GEMM, whose tiling is not the kernel's. The lowering
    then records the instructions the kernel issues (per sub-group, as the compiler builds them) itself.
    Yields the recorders that were active (empty when nothing records)."""
    from .. import counters
    with counters.suspended() as saved:
        yield saved


def _unique(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct fragments by their bits: (index of each distinct one's first occurrence, inverse map)."""
    p = x.shape[0]
    raw = np.ascontiguousarray(x).reshape(p, -1).view(np.uint8).reshape(p, -1)
    if raw.shape[1] == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(p, dtype=np.int64)
    # a 64-bit hash of each fragment's bytes, then an exact check that equal hashes mean equal bytes
    # (np.unique(axis=0) sorts rows lexicographically: 20x slower for sub-group fragments)
    pad = -raw.shape[1] % 8
    words = np.concatenate([raw, np.zeros((p, pad), np.uint8)], axis=1).view(np.uint64) if pad else raw.view(
        np.uint64)
    mult = (np.arange(1, words.shape[1] + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    with np.errstate(over="ignore"):
        h = ((words ^ (words >> np.uint64(29))) * mult).sum(axis=1, dtype=np.uint64)
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    if np.array_equal(raw[first[inv]], raw):
        return first, inv
    _, first, inv = np.unique(raw, axis=0, return_index=True, return_inverse=True)  # a hash collision
    return first, inv.reshape(-1)


def key_ids(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of integer keys (P, n) -> (first occurrence of each distinct row, inverse), by re-ranking column by
    column (keeps every id below P)."""
    ids = np.zeros(keys.shape[0], dtype=np.int64)
    for j in range(keys.shape[1]):
        col = keys[:, j].astype(np.int64)
        _, ids = np.unique(ids * (int(col.max()) + 1) + col, return_inverse=True)
        ids = ids.reshape(-1)
    _, first, inv = np.unique(ids, return_index=True, return_inverse=True)
    return first, inv.reshape(-1)


def batched_mad(fn: Callable, a: np.ndarray, b: np.ndarray, c: np.ndarray, keys_a: np.ndarray | None = None,
                keys_b: np.ndarray | None = None) -> np.ndarray:
    """``fn(A2, B2, C2) -> D2`` (one engine GEMM) applied to every product p of ``a`` (P, M, K), ``b`` (P, K, N),
    ``c`` (P, M, N); returns (P, M, N).

    ``keys_a`` / ``keys_b`` (P, n) say which fragments are equal without reading them (fragments loaded by one
    load from one address are equal); otherwise fragments are compared by their bits."""
    # a and b may be lists of K chunks (a deferred chain): only the distinct fragments are then assembled
    a_parts = a if isinstance(a, (list, tuple)) else [a]
    b_parts = b if isinstance(b, (list, tuple)) else [b]
    P, M = a_parts[0].shape[:2]
    K = sum(x.shape[2] for x in a_parts)
    N = b_parts[0].shape[2]
    stats["calls"] += 1

    def cat_a(sel=slice(None)):
        return a_parts[0][sel] if len(a_parts) == 1 else np.concatenate([x[sel] for x in a_parts], axis=2)

    def cat_b(sel=slice(None)):
        return b_parts[0][sel] if len(b_parts) == 1 else np.concatenate([x[sel] for x in b_parts], axis=1)
    if P == 1:
        stats["engine_calls"] += 1
        return fn(cat_a()[0], cat_b()[0], c[0])[None]
    fa, ia = _unique(cat_a()) if keys_a is None else key_ids(keys_a)
    fb, ib = _unique(cat_b()) if keys_b is None else key_ids(keys_b)
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
        big_a = cat_a(fa).reshape(nA * M, K)
        big_b = np.ascontiguousarray(cat_b(fb).transpose(1, 0, 2)).reshape(K, nB * N)
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
    a, b = cat_a(), cat_b()
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
