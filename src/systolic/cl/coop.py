"""SYCL joint_matrix device IR: ``__spirv_CooperativeMatrix*KHR`` on ``target("spirv.CooperativeMatrixKHR", T,
scope, rows, cols, use)`` values (SPV_KHR_cooperative_matrix) and the older ``__spirv_JointMatrix*INTEL`` on
``target("spirv.JointMatrixINTEL", T, rows, cols, layout, scope, use)`` (SPV_INTEL_joint_matrix; issue 21 item
4), lowered onto :mod:`systolic.sycl`: :func:`systolic.sycl.lower_xmx.mad` (the DPAS sequence IGC emits) on the
XMX platforms, :func:`systolic.sycl.lower_amx.mad` (AMX TMULs) on the CPU devices (``Context(device="spr")``).

A matrix value is a handle (an i64, so that DPC++'s stores of the value to an ``alloca`` and loads back work) to
one (rows x cols) array per sub-group, held by the launch. Element types: ``i8`` (s8, or u8 where the MulAdd
operands do not say signed), ``i16`` (DPC++'s storage of bf16), ``half`` (fp16), ``float`` (tf32 for A/B, fp32
for the accumulator), ``i32``. Use 0 is A (M x K), 1 B (K x N), 2 the accumulator (M x N).

Calls (the SPIR-V friendly names DPC++ emits, matched by prefix):

* ``__spirv_CompositeConstruct(v)``: every element ``v``;
* ``__spirv_CooperativeMatrixLoadKHR(ptr, ...)``: the i64 argument is the stride (elements), the first i32 the
  layout (0 row-major, 1 column-major, 2 packed/VNNI: element (k, n) at ``(k / V) * stride + n * V + k % V``,
  V = 4 / element bytes); the pointer is the sub-group's (uniform);
* ``__spirv_CooperativeMatrixStoreKHR(ptr, matrix, layout, stride, ...)``;
* ``__spirv_CooperativeMatrixMulAddKHR(A, B, C, operands)``: operands bit 0x1/0x2: A/B signed;
* ``__spirv_CooperativeMatrixLengthKHR``: elements per work-item (rows x cols / sub-group size);
* the INTEL forms ``__spirv_JointMatrixLoadINTEL`` / ``StoreINTEL`` (same arguments; layout 3 = dynamic reads as
  row-major), ``MadINTEL`` (signed A and B), ``SUMadINTEL``, ``USMadINTEL``, ``UUMadINTEL``,
  ``WorkItemLengthINTEL``.

Element access (``__spirv_AccessChain``, ``VectorExtractDynamic``) is not modelled:
:class:`~systolic.errors.UnsupportedOperation` names it.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np

from ..errors import UnsupportedOperation

__all__ = ["coop_type", "HANDLERS"]

_COOP = re.compile(r'^target\("spirv\.CooperativeMatrixKHR",\s*([^,]+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+)\)$')
#: SPV_INTEL_joint_matrix: (element, rows, cols, layout, scope, use)
_JOINT = re.compile(r'^target\("spirv\.JointMatrixINTEL",\s*([^,]+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+)\)$')
_ELEM = {"i8": np.dtype(np.int8), "i16": np.dtype(np.uint16), "half": np.dtype(np.float16),
         "float": np.dtype(np.float32), "i32": np.dtype(np.int32)}


def coop_type(text: str):
    """(element type, scope, rows, cols, use) of a cooperative matrix type, or None."""
    m = _COOP.match(text.strip())
    if m:
        return m[1].strip(), int(m[2]), int(m[3]), int(m[4]), int(m[5])
    m = _JOINT.match(text.strip())
    if m:
        return m[1].strip(), int(m[5]), int(m[2]), int(m[3]), int(m[6])
    return None


def _store(launch, arr) -> np.int64:
    launch.coop.append(arr)
    return np.int64(len(launch.coop) - 1)


def _get(fr, h, t):
    """The (G, rows, cols) array of a handle value (per sub-group: its first lane's handle)."""
    L = fr.ex.lanes
    launch = fr.ex.launch
    hs = np.asarray(h)
    if hs.ndim == 0:
        return launch.coop[int(hs)]
    first = hs.reshape(L.G, L.S)[:, 0]
    uniq = np.unique(first)
    if len(uniq) == 1:
        return launch.coop[int(uniq[0])]
    out = np.zeros_like(launch.coop[int(uniq[0])])
    for u in uniq:
        sel = first == u
        out[sel] = launch.coop[int(u)][sel]
    return out


def _ret_type(info):
    ct = coop_type(info.ret)
    if ct is None:
        raise UnsupportedOperation(f"{info.base} returns {info.ret}, not a cooperative matrix",
                                   rule="SPV_KHR_cooperative_matrix")
    return ct


def _construct(info):
    elem, _, R, C, _ = _ret_type(info)
    dt = _ELEM[elem]

    def f(fr, args):
        L = fr.ex.lanes
        v = np.asarray(args[0]).reshape(-1)[0]
        return _store(fr.ex.launch, np.full((L.G, R, C), v).astype(dt))
    return f


def _uniform_ptr(fr, p, info):
    L = fr.ex.lanes
    a = np.broadcast_to(np.asarray(p, np.int64), (L.n,)).reshape(L.G, L.S)
    return a[:, 0]


def _index(R, C, stride, layout, esize):
    r, c = np.meshgrid(np.arange(R), np.arange(C), indexing="ij")
    if layout == 0:
        return r * stride + c
    if layout == 1:
        return c * stride + r
    if layout == 2:
        v = max(1, 4 // esize)
        return (r // v) * stride + c * v + r % v
    if layout == 3:                                  # SPV_INTEL_joint_matrix "Dynamic": the accumulator's rows
        return r * stride + c
    raise UnsupportedOperation(f"matrix layout {layout}", rule="SPV_KHR_cooperative_matrix: RowMajorKHR 0, "
                               "ColumnMajorKHR 1, PackedINTEL 2")


def _args_by_type(info, args, skip):
    stride = next((int(np.asarray(a).reshape(-1)[0]) for a, t in zip(args[skip:], info.args[skip:]) if t == "i64"),
                  None)
    layout = next((int(np.asarray(a).reshape(-1)[0]) for a, t in zip(args[skip:], info.args[skip:]) if t == "i32"),
                  0)
    return stride, layout


def _load(info):
    elem, _, R, C, use = _ret_type(info)
    dt = _ELEM[elem]

    def f(fr, args):
        L = fr.ex.lanes
        active = fr.ex.require_converged(fr.mask, info.base, info.where(fr))
        stride, layout = _args_by_type(info, args, 1)
        if stride is None:
            stride = C if layout != 1 else R
        idx = _index(R, C, stride, layout, dt.itemsize).reshape(-1) * dt.itemsize
        base = _uniform_ptr(fr, args[0], info)
        out = np.zeros((L.G, R, C), dt)
        g = np.flatnonzero(active)
        if len(g):
            addr = (base[g][:, None] + idx[None, :]).reshape(-1)
            lanes = np.repeat(g * L.S, R * C)
            out[g] = fr.ex.launch.mem.gather(addr, lanes, dt, info.where(fr)).reshape(len(g), R, C)
        return _store(fr.ex.launch, out)
    return f


def _store_fn(info):
    ct = coop_type(info.args[1])

    def f(fr, args):
        elem, _, R, C, _ = ct
        dt = _ELEM[elem]
        L = fr.ex.lanes
        active = fr.ex.require_converged(fr.mask, info.base, info.where(fr))
        stride, layout = _args_by_type(info, args, 2)
        if stride is None:
            stride = C
        idx = _index(R, C, stride, layout, dt.itemsize).reshape(-1) * dt.itemsize
        base = _uniform_ptr(fr, args[0], info)
        g = np.flatnonzero(active)
        if len(g):
            data = _get(fr, args[1], ct)[g]
            addr = (base[g][:, None] + idx[None, :]).reshape(-1)
            fr.ex.launch.mem.scatter(addr, np.repeat(g * L.S, R * C), data.reshape(-1), dt, info.where(fr))
        return None
    return f


def _prec(elem, use, signed):
    if elem == "i8":
        return "s8" if signed else "u8"
    return {"i16": "bf16", "half": "fp16", "float": "tf32" if use != 2 else "fp32", "i32": "int32"}[elem]


def _typed(x, prec):
    return {"s8": lambda v: v.view(np.int8), "u8": lambda v: v.view(np.uint8),
            "bf16": lambda v: v.view(ml_dtypes.bfloat16), "fp16": lambda v: v, "tf32": lambda v: v}[prec](x)


#: SPV_INTEL_joint_matrix's MAD variants: (A signed, B signed) as the operands bits of the KHR form
_INTEL_SIGNS = {"__spirv_JointMatrixMadINTEL": 0x3, "__spirv_JointMatrixSUMadINTEL": 0x1,
                "__spirv_JointMatrixUSMadINTEL": 0x2, "__spirv_JointMatrixUUMadINTEL": 0x0}


def _amx_type(prec):
    return {"s8": "sint8", "u8": "uint8", "bf16": "bf16", "fp16": "fp16"}.get(prec, prec)


def _muladd(info):
    ta, tb, tc = (coop_type(t) for t in info.args[:3])
    td = _ret_type(info)
    intel = _INTEL_SIGNS.get(info.base)

    def f(fr, args):
        from ..sycl import lower_xmx
        launch = fr.ex.launch
        active = fr.ex.require_converged(fr.mask, info.base, info.where(fr))
        if intel is not None:
            ops = intel
        else:
            ops = int(np.asarray(args[3]).reshape(-1)[0]) if len(args) > 3 else 0x3
        pa = _prec(ta[0], 0, bool(ops & 0x1))
        pb = _prec(tb[0], 1, bool(ops & 0x2))
        pc, pd = _prec(tc[0], 2, True), _prec(td[0], 2, True)
        A, B, C = _get(fr, args[0], ta), _get(fr, args[1], tb), _get(fr, args[2], tc)
        out = np.array(C, dtype=_ELEM[td[0]], copy=True)
        g = np.flatnonzero(active)
        if len(g):
            cc = C[g].view(ml_dtypes.bfloat16).astype(np.float32) if tc[0] == "i16" else C[g]
            if getattr(launch.platform, "backend", "xmx") == "amx":
                from ..sycl import lower_amx
                d = lower_amx.mad(launch.platform.engine, _amx_type(pa), _amx_type(pb), _typed(A[g], pa),
                                  _typed(B[g], pb), cc.astype(np.int32 if pd == "int32" else np.float32))
            else:
                d = lower_xmx.mad(launch.platform, pa, pb, pc, pd, _typed(A[g], pa), _typed(B[g], pb), cc)
            d = np.asarray(d)
            out[g] = d.astype(ml_dtypes.bfloat16).view(np.uint16) if td[0] == "i16" else d.astype(out.dtype)
        return _store(launch, out)
    return f


def _length(info):
    def f(fr, args):
        ct = coop_type(info.args[0]) if info.args else None
        if ct is None:
            raise UnsupportedOperation("__spirv_CooperativeMatrixLengthKHR of an unknown type",
                                       rule="SPV_KHR_cooperative_matrix")
        return np.int32(ct[2] * ct[3] // fr.ex.lanes.S)
    return f


HANDLERS = {"__spirv_CompositeConstruct": _construct, "__spirv_CooperativeMatrixLoadKHR": _load,
            "__spirv_CooperativeMatrixStoreKHR": _store_fn, "__spirv_CooperativeMatrixMulAddKHR": _muladd,
            "__spirv_CooperativeMatrixLengthKHR": _length,
            "__spirv_JointMatrixLoadINTEL": _load, "__spirv_JointMatrixStoreINTEL": _store_fn,
            "__spirv_JointMatrixWorkItemLengthINTEL": _length, **{k: _muladd for k in _INTEL_SIGNS}}

