"""joint_matrix_mad on XMX devices: the DPAS sequence IGC emits, run on :mod:`systolic.xmx`.

IGC (``IBiF_matrix.cl``; REFERENCE.md sections 2 and 5) lowers one ``joint_matrix_mad``:

* base shapes (M <= 8, N = exec size, K = 8 * OPS_PER_CHAN): one DPAS, RC = M, Dst type D, Src0 type C;
* 16x16x16, 32x64x16, 1x64x16, dg2's 32x32x16: one DPAS per (8-row, exec-size-column) tile, K in one step;
* 32x64x32: per tile two chained DPAS over K = 0..15 and 16..31; the first writes the **C type** (``fdpas_c_c``),
  the second reads it as Src0 and writes D;
* 1x64x32: the same chain, the intermediate in the **D type** (``fdpas_d_c`` then ``fdpas_d_d``).

A DPAS of K = 8 * OPS_PER_CHAN on an fp32 or int32 accumulator is exactly what :func:`systolic.xmx.matmul`
computes for that K (proven bit-identical to the chained instructions by the xmx tests); a 16-bit Dst is that
fp32 result rounded to nearest even (DPAS's Dst conversion, :func:`systolic.xmx.kernels.acc_bits_to_type`), and a
16-bit Src0 enters exactly. So each K step is one engine GEMM over every sub-group's tiles at once
(:func:`~systolic.sycl.batch.batched_mad`), with the rounding IGC's chain implies between steps.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..errors import UnsupportedCombination
from . import batch

__all__ = ["intermediate", "k_step", "mad"]

#: which type holds the partial sum between the two K steps of the chained shapes (IGC DEFINE_MAD_LARGE_SLICE)
INTERMEDIATE = {(32, 64, 32): "c", (1, 64, 32): "d"}


def k_step(prec: str) -> int:
    """K of one DPAS (systolic depth 8 x OPS_PER_CHAN)."""
    from ..xmx.rules import ops_per_chan
    return 8 * ops_per_chan(prec, prec)


def intermediate(m: int, n: int, k: int) -> str:
    return INTERMEDIATE.get((m, n, k), "c")


def _to_type(bits32_or_vals: np.ndarray, t: str) -> np.ndarray:
    """An fp32 accumulator result (float32 array) stored as type ``t`` (DPAS's Dst conversion)."""
    from ..xmx.kernels import acc_bits_to_type
    if t in ("fp32", "int32"):
        return bits32_or_vals
    bits = acc_bits_to_type(np.ascontiguousarray(bits32_or_vals, dtype=np.float32).view(np.uint32), t)
    return bits.astype(np.uint16).view(T.get(t).dtype)


def mad(platform, prec_a: str, prec_b: str, tc: str, td: str, a: np.ndarray, b: np.ndarray,
        c: np.ndarray, keys_a=None, keys_b=None) -> np.ndarray:
    """D (P, M, N) of type ``td`` for every sub-group p: see the module text."""
    from ..xmx import matmul
    P, M = (a[0] if isinstance(a, list) else a).shape[:2]
    K = sum(x.shape[2] for x in a) if isinstance(a, list) else a.shape[2]
    N = (b[0] if isinstance(b, list) else b).shape[2]
    ks = k_step(prec_b)
    if K % ks:
        raise UnsupportedCombination(f"K = {K} is not a whole number of DPAS steps of {ks}",
                                     rule="IGC builds joint_matrix_mad from DPAS of K = 8 * OPS_PER_CHAN",
                                     values={"K": K, "k_step": ks})
    del P
    integer = tc == "int32"
    precision = "tf32" if prec_a == "tf32" else None
    model = platform.default_model

    def gemm(a2, b2, c2):
        return matmul(a2, b2, c2, device=platform, model=model, precision=precision)

    acc = c.astype(np.int32) if integer else c.astype(np.float32)   # 16-bit C enters exactly
    steps = K // ks
    mid = td if intermediate(M, N, K) == "d" else tc
    with batch.kernel_counts() as recs:
        if integer or (mid == "fp32" and td == "fp32"):
            # no rounding between the DPAS steps: the fp32/int32 chain over all of K is one engine GEMM
            res = batch.batched_mad(gemm, a, b, acc, keys_a, keys_b)
        else:
            res = _stepped(gemm, a, b, acc, ks, steps, mid, td, keys_a, keys_b)
    _count(recs, platform, prec_a, prec_b, c.shape[0], M, N, K, ks, mid, td)
    return res


def _count(recs, platform, prec_a, prec_b, P, M, N, K, ks, mid, td) -> None:
    """The DPAS the kernel issues: per sub-group and K step, one per (<= 8)-row x exec-size tile."""
    if not recs:
        return
    ex = platform.exec_size
    for r0 in range(0, M, 8):
        rc = min(8, M - r0)
        for s in range(K // ks):
            dst = td if s == K // ks - 1 else mid
            n = P * (N // ex)
            for r in recs:
                r.add("dpas", n, {"op": "dpas", "platform": platform.name, "a": prec_a, "b": prec_b, "sd": 8,
                                  "rc": rc, "exec": ex, "dst": dst, "via": "joint_matrix"})


def _k_range(parts: list, lo: int, hi: int, axis: int):
    """Columns ``lo:hi`` of the K axis of an operand given as K chunks ``parts``: views of the chunks, no copy
    (one view, or a list of views as :func:`~systolic.sycl.batch.batched_mad` takes them)."""
    out, start = [], 0
    for x in parts:
        a0, a1 = max(lo - start, 0), min(hi - start, x.shape[axis])
        if a0 < a1:
            out.append(x[:, :, a0:a1] if axis == 2 else x[:, a0:a1, :])
        start += x.shape[axis]
    return out[0] if len(out) == 1 else out


def _stepped(gemm, a, b, acc, ks, steps, mid, td, keys_a=None, keys_b=None):
    """The DPAS steps over K one at a time, the partial sum rounded to ``mid`` between them (``td`` at the end)."""
    a_parts = a if isinstance(a, list) else [a]
    b_parts = b if isinstance(b, list) else [b]
    for s in range(steps):
        out_t = td if s == steps - 1 else mid
        d = batch.batched_mad(gemm, _k_range(a_parts, s * ks, (s + 1) * ks, 2),
                              _k_range(b_parts, s * ks, (s + 1) * ks, 1), acc, keys_a, keys_b)
        res = _to_type(d, out_t)
        acc = res.astype(np.float32)
    return res
