"""The matrix built-ins inside the interpreter: every call lowered through :mod:`systolic.opencl` (issue 21
item 3: one DPAS, DPASW for the split forms, per sub-group and call).

Two engines, the same bits:

* ``per-call`` (the spec path): for each sub-group that makes the call, :func:`systolic.opencl.lowering.execute`
  places its ``a``, ``b``, ``acc`` in a GRF image and executes one DPAS (split: the sub-groups 2p and 2p+1 of a
  work-group pair up for one DPASW, :func:`~systolic.opencl.lowering.execute_split`);
* ``batched`` (the default, for the non-split built-ins with 8-bit and 16-bit integer or bf16/fp16 inputs and an
  int or float accumulator): the sub-groups' operands read with the SPIR-V map of
  :mod:`systolic.layout.opencl` (A: row r is component r of the lanes in order, packed elements low bits first;
  B: column n is lane n's components, rows low bits first; acc: column = lane, component = row), then the DPAS
  arithmetic of :mod:`systolic.xmx.kernels` vectorised over the sub-groups (integers: the exact sum modulo
  2**32; floats: the numerics model's chain, ``kernels._chain``, on the exact products). Every other overload
  takes the per-call path. ``tests/cl/test_matrix_engines.py`` proves the two bit-identical (hypothesis).

Each call records one ``dpas`` counter event per sub-group (``via="cl"``), as the lowering does.
"""

from __future__ import annotations

import numpy as np

from .. import counters
from ..opencl import lowering as LW
from ..opencl import mapping as MP
from ..opencl import table as TB

__all__ = ["matrix_builtin", "batched", "per_call", "select"]


def select(name: str, params: list[str], S: int, platform):
    """The overload a call site names (its C parameter types), or the typed error for a platform without it."""
    from .library import unsupported_on
    for r in TB.by_name(name):
        if r.sub_group_size == S and [r.a_type.name, r.b_type.name, r.acc_type.name] == params[:3]:
            if MP.available(r, platform) is not None:
                raise unsupported_on(name, platform)
            return r
    if not any(MP.available(r, platform) is None for r in TB.by_name(name)):
        raise unsupported_on(name, platform)
    from ..errors import UnsupportedCombination
    raise UnsupportedCombination(f"{name}({', '.join(params)}) has no overload for sub-group size {S} on "
                                 f"{platform.name}", rule="cl_intel_subgroup_matrix_multiply_accumulate: the "
                                 "built-ins run with the device's matrix sub-group size",
                                 values={"sub_group_size": S, "matrix_sub_group_size": platform.matrix_subgroup_size})


def _can_batch(rec) -> bool:
    return (not rec.split and rec.a_bits in (8, 16) and rec.b_bits in (8, 16) and rec.a_precision != "tf32"
            and rec.acc_precision == rec.result_precision and rec.acc_precision in ("int32", "fp32"))


def _count(rec, P, n):
    counters.count("dpas", n, op=rec.opcode, platform=P.name, a=rec.a_precision, b=rec.b_precision, sd=8, rc=rec.m,
                   exec=rec.sub_group_size, dst=rec.result_precision, via="cl")
    counters.count("opencl", n, op=rec.name, platform=P.name, m=rec.m, dpas=rec.dpas)


def _elements(x: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    dt = {8: np.int8 if signed else np.uint8, 16: np.int16 if signed else np.uint16}[bits]
    return np.ascontiguousarray(x).view(dt)


def batched(rec, a, b, acc, P, model=None) -> np.ndarray:
    """``a``, ``b``, ``acc`` of G sub-groups ((G, S) or (G, S, n) each) -> the results (G, S[, M])."""
    from ..xmx import kernels as KN
    from ..xmx import models as MD
    from ..xmx import pack as PK
    from ..xmx.rules import ops_per_chan
    G, S, M, K = a.shape[0], rec.sub_group_size, rec.m, rec.k
    a3 = a.reshape(G, S, -1)
    b3 = b.reshape(G, S, -1)
    c3 = acc.reshape(G, S, M)
    is_int = rec.acc_precision == "int32"
    a_rows = np.ascontiguousarray(a3.transpose(0, 2, 1))                    # (G, M, S) components by row
    b_cols = np.ascontiguousarray(b3)                                       # (G, S=N, nb)
    if is_int:
        A = _elements(a_rows, rec.a_bits, rec.a_precision.startswith("s")).reshape(G, M, K).astype(np.int64)
        B = _elements(b_cols, rec.b_bits, rec.b_precision.startswith("s")).reshape(G, S, K).astype(np.int64)
        D = np.matmul(A, B.transpose(0, 2, 1)) + c3.transpose(0, 2, 1).astype(np.int64)
        out = (D & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    else:
        mdl = MD.get_model(model, P)
        Ab = a_rows.view(np.uint16).reshape(G, M, K)
        Bb = b_cols.view(np.uint16).reshape(G, S, K).transpose(0, 2, 1)
        A = PK.decode(Ab, rec.a_precision, flush=mdl.flushes(rec.a_precision, P))
        B = PK.decode(Bb, rec.b_precision, flush=mdl.flushes(rec.b_precision, P))
        C = c3.transpose(0, 2, 1).astype(np.float64)
        A = np.asarray(A, np.float64)
        B = np.asarray(B, np.float64)
        ops = ops_per_chan(rec.b_precision, rec.a_precision)
        with np.errstate(invalid="ignore", over="ignore"):
            bits = KN._chain(lambda kk: A[:, :, kk, None] * B[:, None, kk, :], C, K, ops, K, mdl)
        out = np.asarray(bits, np.uint32).view(np.float32)
    res = np.ascontiguousarray(out.transpose(0, 2, 1))                      # (G, S, M)
    return res[:, :, 0] if rec.result_type.n == 1 else res


def per_call(rec, a, b, acc, P, model=None) -> np.ndarray:
    """One DPAS per sub-group through systolic.opencl's lowering (split: one DPASW per pair of sub-groups)."""
    G = a.shape[0]
    if rec.split:
        out = []
        for g in range(0, G, 2):
            out.append(LW.execute_split(rec, a[g:g + 2], b[g:g + 2], acc[g:g + 2], P, model=model))
        return np.concatenate(out)
    return np.stack([LW.execute(rec, a[g], b[g], acc[g], P, model=model) for g in range(G)])


def matrix_builtin(info):
    cache = {}

    def f(fr, args):
        L = fr.ex.lanes
        launch = fr.ex.launch
        P = launch.platform
        rec = cache.get(L.S)
        if rec is None:
            rec = cache[L.S] = select(info.base, info.params, L.S, P)
        active = fr.ex.require_converged(fr.mask, info.base, info.where(fr))
        g = np.flatnonzero(active)
        shapes = [(L.G, L.S) + ((t.n,) if t.n > 1 else ()) for t in (rec.a_type, rec.b_type, rec.acc_type)]
        vals = [np.broadcast_to(np.asarray(v), (L.n,) + s[2:]).reshape(s).view(t.dtype)
                if np.asarray(v).dtype.itemsize == t.dtype.itemsize else
                np.broadcast_to(np.asarray(v), (L.n,) + s[2:]).reshape(s).astype(t.dtype)
                for v, s, t in zip(args[:3], shapes, (rec.a_type, rec.b_type, rec.acc_type))]
        rshape = (L.G, L.S) + ((rec.result_type.n,) if rec.result_type.n > 1 else ())
        out = np.zeros(rshape, rec.result_type.dtype)
        if not len(g):
            return out.reshape((L.n,) + rshape[2:])
        if rec.split:
            _check_pairs(fr, info, g, L)
        a, b, c = (v[g] for v in vals)
        if launch.engine == "batched" and _can_batch(rec):
            r = batched(rec, a, b, c, P, launch.model)
            _count(rec, P, len(g))
        else:
            r = per_call(rec, a, b, c, P, launch.model)      # the lowering counts its own DPAS
        out[g] = r.reshape((len(g), L.S) + rshape[2:])
        launch.matrix_calls.setdefault(info.callee, [rec, 0, info.text])[1] += len(g)
        return out.reshape((L.n,) + rshape[2:])
    return f


def _check_pairs(fr, info, g, L):
    from ..errors import DivergentCollective, UnsupportedCombination
    nsg = L.num_sub_groups
    if nsg % 2:
        raise UnsupportedCombination(f"{info.base}: a work-group of {nsg} sub-groups has a sub-group without a "
                                     "partner", rule="split built-ins pair sub-groups 2p and 2p+1 of a work-group: "
                                     "the work-group needs an even number of sub-groups",
                                     values={"num_sub_groups": nsg})
    act = set(int(x) for x in g)
    for x in g:
        if (int(x) ^ 1) not in act:
            raise DivergentCollective(f"{info.base}: sub-group {int(x) % nsg} calls it without its partner",
                                      rule="both sub-groups of a pair execute the same split built-in",
                                      values={"instruction": info.text[:100], **L.describe(int(x) * L.S)})
