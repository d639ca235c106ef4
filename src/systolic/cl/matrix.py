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
from .availability import unsupported_on

__all__ = ["matrix_builtin", "batched", "per_call", "select"]


def select(name: str, params: list[str], S: int, platform):
    """The overload a call site names (its C parameter types), or the typed error for a platform without it."""
    if getattr(platform, "backend", "xmx") != "xmx":
        raise unsupported_on(name, platform)
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
    return (not rec.split and ((rec.a_bits in (8, 16) and rec.b_bits in (8, 16)) or rec.a_precision == "tf32")
            and rec.acc_precision == rec.result_precision and rec.acc_precision in ("int32", "fp32"))


def _count(rec, P, n):
    counters.count("dpas", n, op=rec.opcode, platform=P.name, a=rec.a_precision, b=rec.b_precision, sd=8, rc=rec.m,
                   exec=rec.sub_group_size, dst=rec.result_precision, via="cl")
    counters.count("opencl", n, op=rec.name, platform=P.name, m=rec.m, dpas=rec.dpas)


def _elements(x: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    dt = {8: np.int8 if signed else np.uint8, 16: np.int16 if signed else np.uint16}[bits]
    return np.ascontiguousarray(x).view(dt)


def decode16(bits: np.ndarray, precision: str, flush: bool) -> np.ndarray:
    """bf16/fp16 element bits -> exact float64 values, as :func:`systolic.xmx.pack.decode` (denormals to signed
    zeros with ``flush``); proven equal on all 65536 patterns by tests/cl/test_matrix_engines.py."""
    u = np.asarray(bits).view(np.uint16)
    if precision == "bf16":
        with np.errstate(invalid="ignore"):               # signalling NaNs widen to NaNs: intended
            v = (u.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
        den = ((u & 0x7F80) == 0) & ((u & 0x7F) != 0)
    else:
        v = u.view(np.float16).astype(np.float64)
        den = ((u & 0x7C00) == 0) & ((u & 0x3FF) != 0)
    if flush and den.any():
        v = np.where(den, np.where(u & 0x8000, -0.0, 0.0), v)
    return v


def batched(rec, a, b, acc, P, model=None) -> np.ndarray:
    """``a``, ``b``, ``acc`` of G sub-groups ((G, S) or (G, S, n) each) -> the results (G, S[, M])."""
    from ..xmx import kernels as KN
    from ..xmx import models as MD
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
        # the engine's integer DPAS arithmetic (exact sum, C added modulo 2**32), one chain per sub-group
        out = KN.int_mma(A, B.transpose(0, 2, 1), c3.transpose(0, 2, 1),
                         bound_a=1 << (rec.a_bits - 1) if rec.a_precision.startswith("s") else (1 << rec.a_bits) - 1,
                         bound_b=1 << (rec.b_bits - 1) if rec.b_precision.startswith("s") else (1 << rec.b_bits) - 1
                         ).view(np.int32)
    else:
        mdl = MD.get_model(model, P)
        A, B = float_operands(rec, a, b, P, mdl)
        with np.errstate(invalid="ignore"):
            C = c3.transpose(0, 2, 1).astype(np.float64)
        ops = ops_per_chan(rec.b_precision, rec.a_precision)
        with np.errstate(invalid="ignore", over="ignore"):
            bits = KN._chain(lambda kk: A[:, :, kk, None] * B[:, None, kk, :], C, K, ops, K, mdl)
        out = np.asarray(bits, np.uint32).view(np.float32)
    res = np.ascontiguousarray(out.transpose(0, 2, 1))                      # (G, S, M)
    return res[:, :, 0] if rec.result_type.n == 1 else res


def float_operands(rec, a, b, P, mdl):
    """The logical A (G, M, K) and B (G, K, N) values (exact float64, flushed as the model says) of bf16/fp16
    calls of G sub-groups."""
    G, S, M, K = a.shape[0], rec.sub_group_size, rec.m, rec.k
    if rec.a_precision == "tf32":
        # A: work-items 0-7 hold the even rows, 8-15 the odd rows, component j = row pair j (SPIR-V's map for
        # N > K); B: one column per work-item, component = row
        from ..xmx import pack as PK
        a3 = np.ascontiguousarray(a.reshape(G, S, -1)).view(np.uint32)
        bits = np.zeros((G, M, K), np.uint32)
        for j in range(a3.shape[2]):
            bits[:, 2 * j, :] = a3[:, 0:K, j]
            if 2 * j + 1 < M:
                bits[:, 2 * j + 1, :] = a3[:, K:2 * K, j]
        bb = np.ascontiguousarray(b.reshape(G, S, K)).view(np.uint32).transpose(0, 2, 1)
        fl = mdl.flushes("tf32", P)
        return PK.decode(bits, "tf32", flush=fl), PK.decode(bb, "tf32", flush=fl)
    a_rows = np.ascontiguousarray(a.reshape(G, S, -1).transpose(0, 2, 1))
    b_cols = np.ascontiguousarray(b.reshape(G, S, -1))
    A = decode16(a_rows.view(np.uint16).reshape(G, M, K), rec.a_precision, mdl.flushes(rec.a_precision, P))
    B = decode16(b_cols.view(np.uint16).reshape(G, S, K).transpose(0, 2, 1), rec.b_precision,
                 mdl.flushes(rec.b_precision, P))
    return A, B


class PendingChain:
    """The result of a chain of float DPAS calls (acc of one = result of the previous) whose intermediate
    accumulators nothing has read: the DPAS are counted when called and computed together when the value is
    first used (``numpy.asarray``), as one chain over the whole K per element: the same arithmetic, since the
    fp32 result of one DPAS is the C of the next (:func:`systolic.xmx.kernels.float_mma` chains DPAS so).

    Computing it: the sub-groups' A and B contents are keyed; when the sub-groups form (most of) a grid of
    distinct A panels by distinct B panels (a tiled GEMM), one :func:`~systolic.xmx.kernels.float_mma` on the
    stacked panels computes every element of every sub-group (each element's chain is independent of the
    others, and a product's value does not depend on which operand is which); otherwise the vectorised chain of
    :func:`batched`. ``tests/cl/test_matrix_engines.py`` proves the chains equal to per-call DPAS.
    """

    __slots__ = ("rec", "P", "mdl", "g", "shape", "C0", "As", "Bs", "_value")

    def __init__(self, rec, P, mdl, g, shape, C0, As, Bs):
        self.rec, self.P, self.mdl, self.g, self.shape = rec, P, mdl, g, shape
        self.C0, self.As, self.Bs, self._value = C0, As, Bs, None

    def extend(self, A, B) -> "PendingChain":
        return PendingChain(self.rec, self.P, self.mdl, self.g, self.shape, self.C0, self.As + [A], self.Bs + [B])

    def value(self) -> np.ndarray:
        if self._value is None:
            self._value = self._compute()
        return self._value

    def __array__(self, dtype=None, copy=None):
        v = self.value()
        return v if dtype is None else v.astype(dtype)

    @property
    def ndim(self):
        return len(self.shape) - 1

    def _compute(self) -> np.ndarray:
        rec = self.rec
        A = np.concatenate(self.As, axis=2) if len(self.As) > 1 else self.As[0]
        B = np.concatenate(self.Bs, axis=1) if len(self.Bs) > 1 else self.Bs[0]
        bits = chain_bits(A, B, self.C0, rec, self.mdl)                       # (G', M, N) uint32
        G, S = self.shape[0], self.shape[1]
        out = np.zeros((G, S, rec.m), np.float32)
        out[self.g] = bits.view(np.float32).transpose(0, 2, 1)
        n = G * S
        return out.reshape(n, rec.m) if rec.result_type.n > 1 else out.reshape(n)


def chain_bits(A, B, C0, rec, mdl) -> np.ndarray:
    """fp32 bits of C0 + A @ B per sub-group (A (G, M, Kt), B (G, Kt, N)) as chained DPAS of K each."""
    from ..xmx import kernels as KN
    from ..xmx.gemm import _sig_bits
    from ..xmx.rules import ops_per_chan
    ops = ops_per_chan(rec.b_precision, rec.a_precision)
    G, M, Kt = A.shape
    N = B.shape[2]
    grid = _grid(A, B)
    with np.errstate(invalid="ignore", over="ignore"):
        if grid is not None:
            ia, ib, a_first, b_first = grid
            nA, nB = len(a_first), len(b_first)
            As = A[a_first].reshape(nA * M, Kt)
            Bs = B[b_first].transpose(1, 0, 2).reshape(Kt, nB * N)
            Cs = np.zeros((nA, M, nB, N))
            Cs[ia, :, ib, :] = C0
            full = KN.float_mma(As, Bs, Cs.reshape(nA * M, nB * N), ops_per_chan=ops, k_per_instr=rec.k,
                                model=mdl, sig_bits=(_sig_bits(rec.a_precision), _sig_bits(rec.b_precision)))
            return np.asarray(full, np.uint32).reshape(nA, M, nB, N)[ia, :, ib, :]
        return np.asarray(KN._chain(lambda kk: A[:, :, kk, None] * B[:, None, kk, :], C0, Kt, ops, rec.k, mdl),
                          np.uint32)


def _grid(A, B):
    """(A index, B index, first sub-group of each distinct A, of each distinct B) when every sub-group is a
    distinct (A, B) pair and the pairs cover at least half the grid; else None."""
    G = A.shape[0]
    if G < 4:
        return None
    ka, kb = {}, {}
    ia = np.array([ka.setdefault(A[g].tobytes(), len(ka)) for g in range(G)])
    ib = np.array([kb.setdefault(B[g].tobytes(), len(kb)) for g in range(G)])
    if len(ka) * len(kb) > 2 * G or len(set(zip(ia.tolist(), ib.tolist()))) != G:
        return None
    a_first = np.array([int(np.flatnonzero(ia == i)[0]) for i in range(len(ka))])
    b_first = np.array([int(np.flatnonzero(ib == i)[0]) for i in range(len(kb))])
    return ia, ib, a_first, b_first


def split_twin(rec):
    """The non-split built-in whose DPAS a split call's pair computes per sub-group (the whole A of the pair), or
    None."""
    if not rec.split:
        return None
    for r in TB.by_name(rec.name.replace("split_", "")):
        if (r.sub_group_size, r.m, r.b_type, r.acc_type) == (rec.sub_group_size, rec.m, rec.b_type, rec.acc_type) \
                and r.a_type.base == rec.a_type.base and _can_batch(r):
            return r
    return None


def batched_split(rec, twin, a, b, acc, P, model=None) -> np.ndarray:
    """Split calls of pairs of sub-groups (2p, 2p+1 consecutive in the arrays): DPASW gives each sub-group the
    DPAS of the pair's whole A (sub-group 2p's rows first) with its own B and C."""
    G = a.shape[0]
    a3 = a.reshape(G // 2, 2, rec.sub_group_size, -1)
    whole = np.concatenate([a3[:, 0], a3[:, 1]], axis=2)                  # (pairs, S, M)
    a_full = np.repeat(whole, 2, axis=0)
    return batched(twin, a_full, b, acc, P, model)


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
        pend = args[2] if isinstance(args[2], PendingChain) else None
        vals = [None if (v is pend and pend is not None) else
                np.broadcast_to(np.asarray(v), (L.n,) + s[2:]).reshape(s).view(t.dtype)
                if np.asarray(v).dtype.itemsize == t.dtype.itemsize else
                np.broadcast_to(np.asarray(v), (L.n,) + s[2:]).reshape(s).astype(t.dtype)
                for v, s, t in zip(args[:3], shapes, (rec.a_type, rec.b_type, rec.acc_type))]
        if vals[2] is None and not (launch.engine == "batched" and launch.defer and pend.rec is rec
                                    and np.array_equal(pend.g, g)):
            vals[2] = np.asarray(pend).reshape(shapes[2]).view(rec.acc_type.dtype)
        rshape = (L.G, L.S) + ((rec.result_type.n,) if rec.result_type.n > 1 else ())
        out = np.zeros(rshape, rec.result_type.dtype)
        if not len(g):
            return out.reshape((L.n,) + rshape[2:])
        if rec.split:
            _check_pairs(fr, info, g, L)
        if launch.engine == "batched" and _can_batch(rec) and rec.acc_precision == "fp32" and launch.defer:
            return _deferred(rec, P, launch, vals, args[2], g, L, info)
        a, b, c = (v[g] for v in vals)
        twin = split_twin(rec) if launch.engine == "batched" else None
        if twin is not None:
            r = batched_split(rec, twin, a, b, c, P, launch.model)
            _count(rec, P, len(g) // 2)
        elif launch.engine == "batched" and _can_batch(rec):
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


def _deferred(rec, P, launch, vals, acc_arg, g, L, info):
    """A float DPAS call kept pending (see :class:`PendingChain`); counted now."""
    from ..xmx import models as MD
    mdl = MD.get_model(launch.model, P)
    A, B = float_operands(rec, vals[0][g], vals[1][g], P, mdl)
    if isinstance(acc_arg, PendingChain) and vals[2] is None:
        res = acc_arg.extend(A, B)
    else:
        c3 = vals[2][g].reshape(len(g), L.S, rec.m)
        with np.errstate(invalid="ignore"):
            C0 = c3.transpose(0, 2, 1).astype(np.float64)
        res = PendingChain(rec, P, mdl, g, (L.G, L.S, rec.m), C0, [A], [B])
    _count(rec, P, len(g))
    launch.matrix_calls.setdefault(info.callee, [rec, 0, info.text])[1] += len(g)
    return res
