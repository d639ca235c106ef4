"""The built-in library: what real kernels call (issue 21 item 3), by OpenCL name (Itanium-demangled) or LLVM
intrinsic name. Each entry is a factory ``(info) -> (fr, args) -> value``; :func:`decode_call` binds it to a call
site once, at decode time.

Covered: work-item and sub-group functions (OpenCL C 6.15.1, cl_khr_subgroups), barriers (incl. the split
barrier), cl_khr_subgroups broadcast/reduce/scan/any/all and the khr shuffles, cl_intel_subgroups shuffles and
block reads/writes (global and local), 2D block IO (:mod:`systolic.cl.blockio2d`), the matrix built-ins
(:mod:`systolic.cl.matrix`, through :mod:`systolic.opencl`), bf16/tf32 conversions, ``convert_<type>[_sat]
[_rte|_rtz|_rtp|_rtn]``, ``vloadn``/``vstoren``, integer dot products, the math GEMM and attention kernels use,
atomics on global and local memory, and the LLVM intrinsics clang emits at -O2.

Math functions with an ULP bound in OpenCL C (``exp``, ``log``, ``native_*``...) are computed with numpy in the
argument's precision: correct within the bound, not the device's bits. ``fma``/``mad`` and ``llvm.fmuladd`` are
fused (one rounding: exact float64 product, error-free sum, round to odd, then to the type).
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import InvalidValue, UnsupportedOperation
from ..llvmir import facts as F
from .availability import unsupported_on  # noqa: F401  (re-exported)
from .blockio2d import parse_name as _parse_2d
from .blocks import block2d
from .matrix import matrix_builtin
from .names import Where, demangle
from .irtypes import vtype

__all__ = ["decode_call", "HANDLERS", "names"]

HANDLERS: dict = {}


class Info:
    __slots__ = ("callee", "base", "params", "args", "ret", "text", "fname")

    def __init__(self, callee, base, params, args, ret, text, fname):
        self.callee, self.base, self.params, self.args, self.ret, self.text, self.fname = \
            callee, base, params, args, ret, text, fname

    def where(self, fr):
        return Where(fr.ex.launch.kernel, self.fname, self.text)


def handler(*names):
    def deco(f):
        for n in names:
            HANDLERS[n] = f
        return f
    return deco


def names() -> list[str]:
    return sorted(HANDLERS)


def decode_call(ctx, ins, slot, ops, text):
    callee = F.callee_name(ins)
    if callee is None:
        raise UnsupportedOperation("indirect calls are not modelled (OpenCL C has no function pointers)",
                                   rule="OpenCL C 6.9", values={"instruction": text[:100]})
    getters = [ctx.get(a) for a in ops[:-1]]
    fref = ctx.dec.fn_refs.get(callee)
    has_ret = str(ins.type) != "void"
    if fref is not None and not fref.is_declaration:
        def call(fr):
            fn = fr.ex.dec.function(callee)
            v = fr.ex.call(fn, [g(fr) for g in getters], fr.mask)
            if has_ret:
                fr.set(slot, v)
        return call
    base, params = demangle(callee)
    info = Info(callee, base, params, [str(a.type) for a in ops[:-1]], str(ins.type), text, ctx.df.name)
    f = _factory(base)
    if f is None:
        raise UnsupportedOperation(f"the built-in {base} ({callee}) is not in systolic.cl's library",
                                   rule="systolic.cl built-in library (docs/cl.md lists what it covers)",
                                   values={"function": callee, "instruction": text[:100]})
    impl = f(info)

    def run(fr):
        v = impl(fr, [g(fr) for g in getters])
        if has_ret:
            fr.set(slot, v)
    return run


def _factory(base):
    f = HANDLERS.get(base)
    if f is not None:
        return f
    if base.startswith("llvm."):
        parts = base.split(".")
        for k in range(len(parts), 1, -1):
            f = HANDLERS.get(".".join(parts[:k]))
            if f is not None:
                return f
    if base.startswith("__spirv_"):
        from .coop import HANDLERS as COOP
        for k, v in COOP.items():
            if base == k or base.startswith(k + "_"):
                return v
    if _parse_2d(base):
        return block2d
    from ..opencl import table as TB
    if base in TB.NAMES:
        return matrix_builtin
    m = re.match(r"^convert_([a-z]+)(\d*)(_sat)?(_rt[enzp])?$", base)
    if m:
        return _convert
    return None


def _uniform_int(x, what, info, fr):
    a = np.asarray(x)
    if a.ndim == 0:
        return int(a)
    act = a[fr.mask] if a.shape == fr.mask.shape else a
    if act.size and (act != act.flat[0]).any():
        raise InvalidValue(f"{what} of {info.base} must be the same for all work-items",
                           rule="OpenCL C: the argument is uniform", values={"instruction": info.text[:100]})
    return int(act.flat[0]) if act.size else 0


# ---- work-item functions -------------------------------------------------------------------------------------

def _dim_fn(per_lane, default):
    def factory(info):
        def f(fr, args):
            d = _uniform_int(args[0], "the dimension", info, fr)
            if not 0 <= d < 3:
                return np.int64(default)
            return per_lane(fr.ex.lanes, d)
        return f
    return factory


handler("get_global_id")(_dim_fn(lambda L, d: L.global_id[d], 0))
handler("get_local_id")(_dim_fn(lambda L, d: L.local_id[d], 0))
handler("get_group_id")(_dim_fn(lambda L, d: L.uniform_group(d), 0))
handler("get_global_size")(_dim_fn(lambda L, d: np.int64(L.global_size[d]), 1))
handler("get_local_size", "get_enqueued_local_size")(_dim_fn(lambda L, d: np.int64(L.local[d]), 1))
handler("get_num_groups")(_dim_fn(lambda L, d: np.int64(L.global_size[d] // L.local[d]), 1))
handler("get_global_offset")(_dim_fn(lambda L, d: np.int64(L.offset[d]), 0))


@handler("get_work_dim")
def _work_dim(info):
    return lambda fr, a: np.int32(fr.ex.lanes.work_dim)


@handler("get_sub_group_local_id")
def _sglid(info):
    return lambda fr, a: fr.ex.lanes.sg_local_id


@handler("get_sub_group_id")
def _sgid(info):
    return lambda fr, a: fr.ex.lanes.sg_id


@handler("get_sub_group_size")
def _sgsize(info):
    return lambda fr, a: (np.int32(fr.ex.lanes.S) if fr.ex.lanes.all_valid else fr.ex.lanes.sg_size)


@handler("get_max_sub_group_size")
def _maxsg(info):
    return lambda fr, a: np.int32(fr.ex.lanes.S)


@handler("get_num_sub_groups", "get_enqueued_num_sub_groups")
def _numsg(info):
    return lambda fr, a: np.int32(fr.ex.lanes.num_sub_groups)


# ---- barriers ---------------------------------------------------------------------------------------------------

def barrier_check(fr, info, what):
    """Every work-item of each work-group reaches it, or none (cl 3.0 6.15.8: all work-items of the work-group)."""
    L = fr.ex.lanes
    if fr.mask is fr.ex.launch.all_mask:
        fr.ex.launch.barriers += 1
        return
    m = fr.mask.reshape(L.n_wg, L.wg_lanes)
    v = L.valid.reshape(L.n_wg, L.wg_lanes)
    act = (m & v).sum(axis=1)
    bad = (act > 0) & (act < v.sum(axis=1))
    if bad.any():
        from ..errors import DivergentCollective
        g = int(np.flatnonzero(bad)[0])
        missing = np.flatnonzero(v[g] & ~m[g])
        lane = g * L.wg_lanes + int(missing[0])
        raise DivergentCollective(
            f"{what} reached by part of a work-group in kernel {fr.ex.launch.kernel}",
            rule="OpenCL C 6.15.8: a work-group barrier must be encountered by all work-items of the work-group",
            values={"instruction": info.text[:100], "work_group": L.groups[g][:L.work_dim],
                    "work_items_not_there": len(missing), "first_not_there": L.describe(lane)["local_id"]})
    fr.ex.launch.barriers += 1


@handler("barrier", "work_group_barrier", "intel_work_group_barrier_wait")
def _barrier(info):
    def f(fr, args):
        barrier_check(fr, info, info.base)
    return f


@handler("intel_work_group_barrier_arrive", "mem_fence", "read_mem_fence", "write_mem_fence", "atomic_work_item_fence",
         "llvm.assume", "llvm.lifetime", "llvm.experimental.noalias.scope.decl", "llvm.dbg", "prefetch",
         "llvm.prefetch")
def _nop(info):
    return lambda fr, args: None


@handler("sub_group_barrier")
def _sgbarrier(info):
    def f(fr, args):
        fr.ex.require_converged(fr.mask, info.base, info.where(fr))
    return f


# ---- sub-group functions --------------------------------------------------------------------------------------------

def _sg(x, L):
    """(N,...) -> (G, S, ...)"""
    a = np.asarray(x)
    a = np.broadcast_to(a, (L.n,) + a.shape[1:] if a.ndim and a.shape[0] == L.n else (L.n,) + a.shape)
    return a.reshape((L.G, L.S) + a.shape[1:])


def _flat(x, L):
    return x.reshape((L.n,) + x.shape[2:])


def _collect(fr, info):
    return fr.ex.require_converged(fr.mask, info.base, info.where(fr))


def _unsigned_param(info, k=0):
    p = info.params[k] if len(info.params) > k else ""
    return p.startswith("u")


@handler("sub_group_broadcast", "intel_sub_group_broadcast")
def _broadcast(info):
    def f(fr, args):
        _collect(fr, info)
        L = fr.ex.lanes
        x = _sg(args[0], L)
        idx = np.asarray(args[1]).astype(np.int64)
        if idx.ndim == 0:
            i = int(idx)
            if not 0 <= i < L.S:
                raise InvalidValue(f"{info.base}: sub_group_local_id {i} is outside the sub-group",
                                   rule="cl_khr_subgroups: the id names a work-item of the sub-group",
                                   values={"sub_group_size": L.S})
            return _flat(np.broadcast_to(x[:, i:i + 1], x.shape), L).copy()
        ii = _sg(idx, L)[:, :1]
        return _flat(np.broadcast_to(np.take_along_axis(x, ii.reshape(ii.shape + (1,) * (x.ndim - 2)), axis=1),
                                     x.shape), L).copy()
    return f


def _shuffle_index(kind):
    def factory(info):
        def f(fr, args):
            _collect(fr, info)
            L = fr.ex.lanes
            S = L.S
            lid = np.arange(S)
            if kind in ("shuffle", "xor"):
                x = _sg(args[0], L)
                c = _sg(np.asarray(args[1]).astype(np.int64), L)
                src = (c if kind == "shuffle" else (lid[None, :] ^ c)) % S
                idx = src.reshape(src.shape + (1,) * (x.ndim - 2))
                return _flat(np.take_along_axis(x, np.broadcast_to(idx, src.shape + x.shape[2:]), axis=1), L)
            if len(args) == 2:                   # khr shuffle_up/down(x, delta): one value
                cur = nxt = _sg(args[0], L)
                c = _sg(np.asarray(args[1]).astype(np.int64), L)
            else:
                a0, a1 = _sg(args[0], L), _sg(args[1], L)
                c = _sg(np.asarray(args[2]).astype(np.int64), L)
                cur, nxt = (a0, a1) if kind == "down" else (a1, a0)
            if kind == "down":
                j = lid[None, :] + c
                both = np.concatenate([cur, nxt], axis=1)
            else:
                j = lid[None, :] - c + S
                both = np.concatenate([nxt, cur], axis=1)   # prev then cur
            j = np.clip(j, 0, 2 * S - 1)
            idx = j.reshape(j.shape + (1,) * (both.ndim - 2))
            return _flat(np.take_along_axis(both, np.broadcast_to(idx, j.shape + both.shape[2:]), axis=1), L)
        return f
    return factory


handler("intel_sub_group_shuffle", "sub_group_shuffle")(_shuffle_index("shuffle"))
handler("intel_sub_group_shuffle_xor", "sub_group_shuffle_xor")(_shuffle_index("xor"))
handler("intel_sub_group_shuffle_down", "sub_group_shuffle_down")(_shuffle_index("down"))
handler("intel_sub_group_shuffle_up", "sub_group_shuffle_up")(_shuffle_index("up"))


def _reduce(opname, scan=None):
    def factory(info):
        uns = _unsigned_param(info)

        def f(fr, args):
            _collect(fr, info)
            L = fr.ex.lanes
            x = _sg(args[0], L)
            valid = L.valid.reshape(L.G, L.S)
            dt = x.dtype
            if uns:
                x = x.view(np.dtype(dt.str.replace("i", "u")))
            if opname == "add":
                ident, uf = 0, np.add
            elif opname == "min":
                ident, uf = (np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).max), np.minimum
            else:
                ident, uf = (-np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min), np.maximum
            xv = np.where(valid, x, np.array(ident).astype(x.dtype))
            if scan is None:
                r = uf.reduce(xv, axis=1).astype(x.dtype)
                out = np.broadcast_to(r[:, None], x.shape)
            else:
                r = uf.accumulate(xv, axis=1).astype(x.dtype)
                if scan == "exclusive":
                    r = np.concatenate([np.full((L.G, 1), ident).astype(x.dtype), r[:, :-1]], axis=1)
                out = r
            return _flat(np.ascontiguousarray(out).view(dt), L)
        return f
    return factory


for _op in ("add", "min", "max"):
    handler(f"sub_group_reduce_{_op}")(_reduce(_op))
    handler(f"sub_group_scan_inclusive_{_op}")(_reduce(_op, "inclusive"))
    handler(f"sub_group_scan_exclusive_{_op}")(_reduce(_op, "exclusive"))


@handler("sub_group_any", "sub_group_all")
def _anyall(info):
    def f(fr, args):
        _collect(fr, info)
        L = fr.ex.lanes
        x = _sg(np.asarray(args[0]) != 0, L) | (~L.valid.reshape(L.G, L.S) if info.base.endswith("all") else False)
        x = x & L.valid.reshape(L.G, L.S) if info.base.endswith("any") else x
        r = x.any(axis=1) if info.base.endswith("any") else x.all(axis=1)
        return np.repeat(r, L.S).astype(np.int32)
    return f


# ---- cl_intel_subgroups block reads and writes -----------------------------------------------------------------------

_BLOCK = re.compile(r"^intel_sub_group_block_(read|write)(_ui|_us|_uc|_ul)?(\d*)$")
_BLOCK_BASE = {None: np.dtype("<u4"), "_ui": np.dtype("<u4"), "_us": np.dtype("<u2"), "_uc": np.dtype("u1"),
               "_ul": np.dtype("<u8")}


def _block(info):
    m = _BLOCK.match(info.base)
    kind, suffix, n = m[1], m[2], int(m[3] or 1)
    dt = _BLOCK_BASE[suffix]
    ret = vtype(info.ret) if kind == "read" else vtype(info.args[1])

    def f(fr, args):
        active = _collect(fr, info)
        L = fr.ex.lanes
        S = L.S
        p = np.broadcast_to(np.asarray(args[0], np.int64), (L.n,)).reshape(L.G, S)
        g = np.flatnonzero(active)
        if not len(g):
            return np.zeros((L.n, n) if n > 1 else L.n, ret.dtype) if kind == "read" else None
        full = len(g) == L.G
        pg = p if full else p[g]
        if (pg != pg[:, :1]).any():
            from ..errors import DivergentCollective
            raise DivergentCollective(f"{info.base}: the pointer differs between the work-items of a sub-group",
                                      rule="cl_intel_subgroups: p is the same for all work-items of the sub-group",
                                      values={"instruction": info.text[:100],
                                              **L.describe(int(g[np.flatnonzero((pg != pg[:, :1]).any(1))[0]]) * S)})
        base = pg[:, 0]
        align = 4 if kind == "read" else 16
        mis = (base & 0xFFFFFFFFFF) % align != 0
        if mis.any():
            k = int(np.flatnonzero(mis)[0])
            raise InvalidValue(f"{info.base}: the pointer must be {align}-byte aligned",
                               rule=f"cl_intel_subgroups 6.13.X.1: p must be {align * 8}-bit aligned for "
                                    f"{kind}s", values={"instruction": info.text[:100],
                                                         **L.describe(int(g[k]) * S)})
        mem = fr.ex.launch.mem
        # lane i component j = p[i + j*S]: each sub-group's block is the S*n contiguous elements at p
        fast = mem.contiguous(base, S * n * dt.itemsize, dt.itemsize)
        if fast is not None:
            reg, first = fast
            idx = first[:, None] + np.arange(S * n)[None, :]
            if kind == "read":
                vals = reg.data.view(dt)[idx]
                if n == 1:                       # one component: the block is the lanes in order
                    flat = vals.reshape(-1) if full else None
                    if flat is not None:
                        return flat.view(ret.dtype)
                if full:
                    res = np.ascontiguousarray(vals.reshape(L.G, n, S).transpose(0, 2, 1)).reshape(L.n, n)
                    return res.view(ret.dtype)
                out = np.zeros((L.G, S, n), dt)
                out[g] = vals.reshape(len(g), n, S).transpose(0, 2, 1)
                res = out.reshape(L.n, n).view(ret.dtype)
                return res[:, 0] if n == 1 else res
            data = np.broadcast_to(np.asarray(args[1]), (L.n, n) if n > 1 else (L.n,))
            data = np.ascontiguousarray(data).view(dt).reshape(L.G, S, n)[g]
            reg.data.view(dt)[idx] = data.transpose(0, 2, 1).reshape(len(g), S * n)
            return None
        offs = (np.arange(n)[None, :] * S + np.arange(S)[:, None]) * dt.itemsize     # (S, n)
        addr = (base[:, None, None] + offs[None]).reshape(len(g), -1)
        lanes_of = (g[:, None] * S + np.arange(S)[None, :])
        lanes_rep = np.repeat(lanes_of, n, axis=1)
        where = info.where(fr)
        if kind == "read":
            out = np.zeros((L.G, S, n), dt)
            vals = mem.gather(addr.reshape(-1), lanes_rep.reshape(-1), dt, where)
            out[g] = vals.reshape(len(g), S, n)
            res = out.reshape(L.n, n).view(ret.dtype)
            return res[:, 0] if n == 1 else res
        data = np.broadcast_to(np.asarray(args[1]), (L.n, n) if n > 1 else (L.n,))
        data = np.ascontiguousarray(data).view(dt).reshape(L.G, S, n)[g]
        mem.scatter(addr.reshape(-1), lanes_rep.reshape(-1), data.reshape(-1), dt, where)
        return None
    return f


for _k in ("read", "write"):
    for _s in ("", "_ui", "_us", "_uc", "_ul"):
        for _n in ("", "2", "4", "8", "16"):
            HANDLERS[f"intel_sub_group_block_{_k}{_s}{_n}"] = _block


# ---- conversions ------------------------------------------------------------------------------------------------------

_CT = {"char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16, "int": np.int32,
       "uint": np.uint32, "long": np.int64, "ulong": np.uint64, "half": np.float16, "float": np.float32,
       "double": np.float64}


def _src_dtype(info):
    p = info.params[0] if info.params else ""
    base = re.match(r"[a-z]+", p)[0] if p else ""
    return np.dtype(_CT[base]) if base in _CT else vtype(info.args[0]).dtype


def _convert(info):
    m = re.match(r"^convert_([a-z]+)(\d*)(_sat)?(_rt[enzp])?$", info.base)
    tname, sat, rnd = m[1], bool(m[3]), m[4]
    tdt = np.dtype(_CT[tname])
    sdt = _src_dtype(info)
    out_dt = vtype(info.ret).dtype

    def f(fr, args):
        x = np.asarray(args[0]).view(sdt) if np.asarray(args[0]).dtype.itemsize == sdt.itemsize else \
            np.asarray(args[0]).astype(sdt)
        with np.errstate(all="ignore"):
            if tdt.kind in "iu":
                if sdt.kind == "f":
                    r = {None: np.trunc, "_rtz": np.trunc, "_rte": np.rint, "_rtp": np.ceil, "_rtn": np.floor}[rnd](x)
                    if sat:
                        info_t = np.iinfo(tdt)
                        r = np.where(np.isnan(r), 0, np.clip(r, info_t.min, info_t.max))
                    y = r.astype(np.float64).astype(tdt) if tdt.itemsize < 8 else r.astype(tdt)
                else:
                    if sat:
                        it = np.iinfo(tdt)
                        xi = x.astype(np.float64) if x.dtype.itemsize == 8 else x.astype(np.int64)
                        y = np.clip(xi, it.min, it.max).astype(tdt)
                    else:
                        y = x.astype(tdt)
            else:
                if rnd in ("_rtz", "_rtp", "_rtn") and sdt.itemsize >= tdt.itemsize and sdt != tdt:
                    y = _directed(x, tdt, rnd)
                else:
                    y = x.astype(tdt)
        return np.asarray(y).view(out_dt) if y.dtype.itemsize == out_dt.itemsize else y.astype(out_dt)
    return f


def _directed(x, tdt, rnd):
    """A conversion rounding toward zero / +inf / -inf: round to nearest, then step back where it went too far."""
    y = x.astype(tdt)
    back = y.astype(x.dtype) if x.dtype.kind == "f" else y.astype(np.float64)
    xv = x.astype(np.float64) if x.dtype.kind != "f" else x
    if rnd == "_rtz":
        too = np.abs(back) > np.abs(xv)
        toward = np.zeros_like(y)
    elif rnd == "_rtp":
        too = back < xv
        toward = np.full_like(y, np.inf)
        y2 = np.where(too, np.nextafter(y, toward), y)
        return y2
    else:
        too = back > xv
        toward = np.full_like(y, -np.inf)
    return np.where(too, np.nextafter(y, toward), y)


@handler("intel_convert_bfloat16_as_ushort", "intel_convert_bfloat162_as_ushort2", "intel_convert_bfloat163_as_ushort3",
         "intel_convert_bfloat164_as_ushort4", "intel_convert_bfloat168_as_ushort8",
         "intel_convert_bfloat1616_as_ushort16")
def _to_bf16(info):
    from .. import types as T

    def f(fr, args):
        x = np.asarray(args[0], np.float32)
        bits = T.to_bits(x, T.get("bf16").fmt, "rne")
        qnan = np.uint16(0x7FC0)
        return np.where(np.isnan(x), qnan, bits.astype(np.uint16)).astype(np.uint16).view(np.int16)
    return f


@handler("intel_convert_as_bfloat16_float", "intel_convert_as_bfloat162_float2", "intel_convert_as_bfloat163_float3",
         "intel_convert_as_bfloat164_float4", "intel_convert_as_bfloat168_float8",
         "intel_convert_as_bfloat1616_float16")
def _from_bf16(info):
    def f(fr, args):
        u = np.asarray(args[0]).view(np.uint16).astype(np.uint32) << np.uint32(16)
        return u.view(np.float32)
    return f


@handler("intel_convert_tfloat32_as_float", "intel_convert_tfloat322_as_float2", "intel_convert_tfloat323_as_float3",
         "intel_convert_tfloat324_as_float4", "intel_convert_tfloat328_as_float8",
         "intel_convert_tfloat3216_as_float16")
def _tf32(info):
    from .. import types as T
    return lambda fr, args: T.round_to_tf32(np.asarray(args[0], np.float32))


# ---- integer dot products (cl_khr_integer_dot_product) -----------------------------------------------------------

def _dot(info):
    m = re.match(r"dot_4x8packed_(ss|uu|su|us)_(u?int)(_sat)?", info.base)
    sa, sb = m[1][0] == "s", m[1][1] == "s"
    out = vtype(info.ret).dtype

    def f(fr, args):
        a = np.ascontiguousarray(np.asarray(args[0]).astype(np.int32))
        b = np.ascontiguousarray(np.asarray(args[1]).astype(np.int32))
        av = a[..., None].view(np.int8 if sa else np.uint8).astype(np.int64)
        bv = b[..., None].view(np.int8 if sb else np.uint8).astype(np.int64)
        r = (av * bv).sum(axis=-1)
        if m[3]:
            it = np.iinfo(out if m[2] == "int" else np.uint32)
            r = np.clip(r, it.min, it.max)
        return r.astype(np.int64).astype(np.uint32 if m[2] == "uint" else np.int32).view(out)
    return f


for _m in ("ss", "uu", "su", "us"):
    for _t in ("int", "uint"):
        HANDLERS[f"dot_4x8packed_{_m}_{_t}"] = _dot
        HANDLERS[f"dot_acc_sat_4x8packed_{_m}_{_t}"] = None
HANDLERS = {k: v for k, v in HANDLERS.items() if v is not None}


# ---- vloadn / vstoren ------------------------------------------------------------------------------------------------

def _vload(info):
    n = int(re.match(r"vload(\d+)", info.base)[1])
    t = vtype(info.ret)
    esz = t.elem_bytes

    def f(fr, args):
        off = np.asarray(args[0]).astype(np.int64)
        addr = np.asarray(args[1], np.int64) + off * (n * esz)
        m = None if fr.full and fr.entry is fr.ex.launch.all_mask else fr.mask
        return fr.ex.launch.mem.load(addr, m, n * esz, t.dtype, n, info.where(fr))
    return f


def _vstore(info):
    n = int(re.match(r"vstore(\d+)", info.base)[1])
    t = vtype(info.args[0])
    esz = t.elem_bytes

    def f(fr, args):
        off = np.asarray(args[1]).astype(np.int64)
        addr = np.asarray(args[2], np.int64) + off * (n * esz)
        m = None if fr.full and fr.entry is fr.ex.launch.all_mask else fr.mask
        fr.ex.launch.mem.store(addr, args[0], m, n * esz, t.dtype, n, info.where(fr))
    return f


for _n in (2, 3, 4, 8, 16):
    HANDLERS[f"vload{_n}"] = _vload
    HANDLERS[f"vstore{_n}"] = _vstore


# ---- math ------------------------------------------------------------------------------------------------------------

def _signed(info, k=0):
    return not _unsigned_param(info, k)


def _elementwise(fn, unsigned_aware=False):
    def factory(info):
        uns = unsigned_aware and (_unsigned_param(info) or info.base.startswith("llvm.u"))
        out = vtype(info.ret) if info.ret != "void" else None

        def f(fr, args):
            xs = [np.asarray(a) for a in args]
            if uns:
                xs = [x.view(np.dtype(x.dtype.str.replace("i", "u"))) if x.dtype.kind == "i" else x for x in xs]
            with np.errstate(all="ignore"):
                r = np.asarray(fn(*xs))
            if out is not None and r.dtype != out.dtype:
                r = r.view(out.dtype) if r.dtype.itemsize == out.dtype.itemsize and r.dtype.kind in "iu" \
                    and out.dtype.kind in "iu" else r.astype(out.dtype)
            return r
        return f
    return factory


def fma_exact(a, b, c):
    """a*b+c with one rounding to a's float type (binary16/32: exact float64 product, TwoSum, round to odd)."""
    a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
    dt = np.result_type(a, b, c)
    if dt == np.float64:
        return a * b + c                                  # float64 fma: not fused here (documented)
    p = a.astype(np.float64) * b.astype(np.float64)       # exact: 2 x 24 significant bits <= 53
    cc = c.astype(np.float64)
    s = p + cc
    bb = s - p
    e = (p - (s - bb)) + (cc - bb)                        # TwoSum: s + e == p + c exactly
    bits = np.asarray(s).view(np.int64)
    odd = (bits & 1) == 1
    fix = (e != 0) & ~odd & np.isfinite(s)
    s = np.where(fix, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)   # round to odd
    return s.astype(dt)


def _mul_hi(a, b):
    """The high half of the double-width product (OpenCL C 6.15.3). int64 holds the products of 8- and 16-bit
    and signed 32-bit values; unsigned 32-bit and 64-bit products need Python integers (exact, rare)."""
    bits = a.dtype.itemsize * 8
    if bits < 32 or (bits == 32 and a.dtype.kind == "i"):
        return ((a.astype(np.int64) * b.astype(np.int64)) >> bits).astype(a.dtype)
    p = np.asarray(a).astype(object) * np.asarray(b).astype(object)
    return np.array([int(x) >> bits for x in np.ravel(p)], dtype=a.dtype).reshape(np.shape(p))


def _clamp(x, lo, hi):
    return np.minimum(np.maximum(x, lo), hi)


_MATH = {
    "fma": fma_exact, "mad": fma_exact, "llvm.fma": fma_exact, "llvm.fmuladd": fma_exact,
    "fmax": np.fmax, "fmin": np.fmin, "llvm.maxnum": np.fmax, "llvm.minnum": np.fmin,
    "llvm.maximum": np.maximum, "llvm.minimum": np.minimum,
    "fabs": np.abs, "llvm.fabs": np.abs, "sqrt": np.sqrt, "llvm.sqrt": np.sqrt, "native_sqrt": np.sqrt,
    "half_sqrt": np.sqrt, "rsqrt": lambda x: (1 / np.sqrt(x)).astype(x.dtype),
    "native_rsqrt": lambda x: (1 / np.sqrt(x)).astype(x.dtype),
    "exp": np.exp, "native_exp": np.exp, "half_exp": np.exp, "llvm.exp": np.exp,
    "exp2": np.exp2, "native_exp2": np.exp2, "llvm.exp2": np.exp2,
    "log": np.log, "native_log": np.log, "llvm.log": np.log, "log2": np.log2, "native_log2": np.log2,
    "llvm.log2": np.log2, "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "native_sin": np.sin, "native_cos": np.cos,
    "pow": np.power, "powr": np.power, "native_powr": np.power, "erf": None,
    "floor": np.floor, "llvm.floor": np.floor, "ceil": np.ceil, "llvm.ceil": np.ceil, "trunc": np.trunc,
    "llvm.trunc": np.trunc, "rint": np.rint, "llvm.rint": np.rint, "llvm.nearbyint": np.rint,
    "llvm.roundeven": np.rint, "round": lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x).astype(x.dtype),
    "llvm.round": lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x).astype(x.dtype),
    "native_divide": np.divide, "native_recip": lambda x: (1 / x).astype(x.dtype),
    "copysign": np.copysign, "llvm.copysign": np.copysign,
    "isnan": lambda x: np.isnan(x).astype(np.int32), "isinf": lambda x: np.isinf(x).astype(np.int32),
    "step": lambda e, x: np.where(x < e, 0, 1).astype(x.dtype),
}
_MATH = {k: v for k, v in _MATH.items() if v is not None}
for _k, _f in _MATH.items():
    HANDLERS[_k] = _elementwise(_f)

_INTMATH = {
    "max": np.maximum, "min": np.minimum, "llvm.smax": np.maximum, "llvm.smin": np.minimum,
    "llvm.umax": np.maximum, "llvm.umin": np.minimum, "clamp": _clamp,
    "abs": lambda x: np.abs(x.astype(np.int64)) if x.dtype.kind == "i" else x,
    "llvm.abs": lambda x, *_: np.abs(x),
    "mul24": lambda a, b: a * b, "mad24": lambda a, b, c: a * b + c,
    "mul_hi": _mul_hi,
    "popcount": lambda x: np.bitwise_count(x) if hasattr(np, "bitwise_count") else None,
    "llvm.ctpop": lambda x: np.bitwise_count(x).astype(x.dtype),
    "select": lambda a, b, c: np.where(c != 0 if c.ndim == 0 or True else c, b, a),
    "llvm.sadd.sat": lambda a, b: np.clip(a.astype(np.int64) + b, np.iinfo(a.dtype).min, np.iinfo(a.dtype).max),
    "llvm.uadd.sat": lambda a, b: np.clip(a.astype(np.uint64) + b, 0, np.iinfo(a.dtype).max),
    "add_sat": lambda a, b: np.clip(a.astype(np.int64) + b.astype(np.int64), np.iinfo(a.dtype).min,
                                    np.iinfo(a.dtype).max),
}
for _k, _f in _INTMATH.items():
    HANDLERS[_k] = _elementwise(_f, unsigned_aware=True)


def _reduce_vec(fn):
    def factory(info):
        uns = ".u" in info.base
        out = vtype(info.ret)

        def f(fr, args):
            x = np.asarray(args[-1])
            if uns:
                x = x.view(np.dtype(x.dtype.str.replace("i", "u")))
            with np.errstate(all="ignore"):
                r = fn(x, axis=-1)
            return np.asarray(r).astype(x.dtype).view(out.dtype) if np.asarray(r).dtype != out.dtype else r
        return f
    return factory


for _k, _f in {"add": np.add.reduce, "mul": np.multiply.reduce, "and": np.bitwise_and.reduce,
               "or": np.bitwise_or.reduce, "xor": np.bitwise_xor.reduce, "smax": np.max, "smin": np.min,
               "umax": np.max, "umin": np.min, "fmax": np.max, "fmin": np.min}.items():
    HANDLERS[f"llvm.vector.reduce.{_k}"] = _reduce_vec(_f)


@handler("llvm.fshl", "llvm.fshr")
def _fsh(info):
    t = vtype(info.ret)
    bits = t.bits
    left = info.base.startswith("llvm.fshl")

    def f(fr, args):
        ud = t.udtype
        a, b = np.asarray(args[0]).view(ud).astype(np.uint64), np.asarray(args[1]).view(ud).astype(np.uint64)
        s = np.asarray(args[2]).view(ud).astype(np.uint64) % np.uint64(bits)
        cat = (a << np.uint64(bits)) | b
        mask = np.uint64((1 << bits) - 1)
        r = ((cat << s) >> np.uint64(bits)) & mask if left else (cat >> s) & mask
        return r.astype(ud).view(t.dtype)
    return f


@handler("llvm.memcpy", "llvm.memmove", "llvm.memset")
def _mem(info):
    is_set = info.base.startswith("llvm.memset")

    def f(fr, args):
        L = fr.ex.lanes
        n = _uniform_int(args[2], "the length", info, fr)
        if n == 0:
            return None
        mem = fr.ex.launch.mem
        m = None if fr.full and fr.entry is fr.ex.launch.all_mask else fr.mask
        where = info.where(fr)
        if is_set:
            val = np.broadcast_to(np.asarray(args[1]).astype(np.uint8), (L.n,))
            mem.store(args[0], np.repeat(val[:, None], n, axis=1), m, n, np.dtype(np.uint8), n, where)
        else:
            data = mem.load(args[1], m, n, np.dtype(np.uint8), n, where)
            mem.store(args[0], data, m, n, np.dtype(np.uint8), n, where)
        return None
    return f


@handler("llvm.bswap")
def _bswap(info):
    return lambda fr, args: np.asarray(args[0]).byteswap()


# ---- atomics -------------------------------------------------------------------------------------------------------

_ATOMIC = re.compile(r"^(?:atomic|atom)_(add|sub|xchg|inc|dec|min|max|and|or|xor|cmpxchg)$|"
                     r"^atomic_fetch_(add|sub|min|max|and|or|xor)(?:_explicit)?$|^atomic_(exchange|load|store)"
                     r"(?:_explicit)?$|^atomic_compare_exchange_strong(?:_explicit)?$")


def _atomic(info):
    m = _ATOMIC.match(info.base)
    op = next((g for g in m.groups() if g), "cmpxchg_strong") if m else None
    ptype = info.params[0] if info.params else ""
    base = re.match(r"[a-z]+", ptype.replace("atomic_", ""))[0] if ptype else "int"
    dt = np.dtype(_CT.get(base, np.int32))
    if info.base.startswith("atomic_compare_exchange"):
        op = "cas_c11"

    def f(fr, args):
        mem = fr.ex.launch.mem
        where = info.where(fr)
        lanes = np.flatnonzero(fr.mask)
        addr = np.broadcast_to(np.asarray(args[0], np.int64), (fr.ex.N,))
        others = [np.broadcast_to(np.asarray(a), (fr.ex.N,)) for a in args[1:]]
        out = np.zeros(fr.ex.N, dt)
        one = np.ones(1, bool)
        for lane in lanes:       # the work-items' atomics in lane order: one valid serialisation
            a = addr[lane:lane + 1]
            ml = np.zeros(fr.ex.N, bool)
            ml[lane] = True
            cur = mem.load(np.int64(a[0]), None, dt.itemsize, dt, 0, where) if not mem._strided(a[0]) else \
                mem.load(addr, ml, dt.itemsize, dt, 0, where)[lane]
            cur = dt.type(cur)
            v = others[0][lane].astype(dt) if others else dt.type(0)
            new = None
            with np.errstate(all="ignore"):
                if op in ("add", "inc"):
                    new = cur + (dt.type(1) if op == "inc" else v)
                elif op in ("sub", "dec"):
                    new = cur - (dt.type(1) if op == "dec" else v)
                elif op in ("xchg", "exchange", "store"):
                    new = v
                elif op == "min":
                    new = min(cur, v)
                elif op == "max":
                    new = max(cur, v)
                elif op == "and":
                    new = cur & v
                elif op == "or":
                    new = cur | v
                elif op == "xor":
                    new = cur ^ v
                elif op == "cmpxchg":
                    new = others[1][lane].astype(dt) if cur == v else None
                elif op == "cas_c11":
                    exp_addr = np.int64(others[0][lane])
                    expv = mem.load(np.broadcast_to(exp_addr, (fr.ex.N,)), ml, dt.itemsize, dt, 0, where)[lane]
                    if cur == expv:
                        new = others[1][lane].astype(dt)
                        out[lane] = 1
                    else:
                        mem.store(np.broadcast_to(exp_addr, (fr.ex.N,)), np.full(fr.ex.N, cur, dt), ml,
                                  dt.itemsize, dt, 0, where)
                        out[lane] = 0
                    if new is not None:
                        mem.store(addr, np.full(fr.ex.N, new, dt), ml, dt.itemsize, dt, 0, where)
                    continue
            if new is not None:
                mem.store(addr, np.full(fr.ex.N, new, dt), ml, dt.itemsize, dt, 0, where)
            out[lane] = cur
        del one
        rt = vtype(info.ret) if info.ret != "void" else None
        return None if rt is None else out.view(rt.dtype) if rt.dtype.itemsize == dt.itemsize else out.astype(rt.dtype)
    return f


for _op in ("add", "sub", "xchg", "inc", "dec", "min", "max", "and", "or", "xor", "cmpxchg"):
    HANDLERS[f"atomic_{_op}"] = _atomic
    HANDLERS[f"atom_{_op}"] = _atomic
for _op in ("add", "sub", "min", "max", "and", "or", "xor"):
    HANDLERS[f"atomic_fetch_{_op}"] = _atomic
    HANDLERS[f"atomic_fetch_{_op}_explicit"] = _atomic
for _op in ("exchange", "load", "store"):
    HANDLERS[f"atomic_{_op}"] = _atomic
    HANDLERS[f"atomic_{_op}_explicit"] = _atomic
HANDLERS["atomic_compare_exchange_strong"] = _atomic
HANDLERS["atomic_compare_exchange_strong_explicit"] = _atomic
