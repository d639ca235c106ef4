"""Lowering a built-in call onto the XMX engine: one DPAS (DPASW for split) on a GRF image.

IGC lowers ``intel_sub_group_<a>_<b>_matrix_mad_k<K>`` to its internal ``__builtin_IB_sub_group*_[if]dpas*``
(IBiF_dpas.cl), which becomes one vISA DPAS with RC = M, SD = 8, exec size = the sub-group size, on the
arguments' registers as they lie: a sub-group variable of vector type occupies registers component-major, which
is DPAS's operand layout (:mod:`systolic.opencl.mapping`). We do the same: place ``a`` at Src2, ``b`` at Src1,
``acc`` at Src0 in a :class:`systolic.xmx.GRF`, execute :func:`systolic.xmx.dpas` (or its proven-equal fast path
``xmx.dpas(path="fast")``) or :func:`systolic.xmx.dpasw`, and read Dst back per work-item. No arithmetic is
done here.

Split built-ins (cl_intel_subgroup_split_matrix_multiply_accumulate) lower to DPASW: the two participating
sub-groups are the two hardware threads of a fused EU pair (DPASW.md), each with its own register file; sub-group
0's ``a`` (rows 0..M/2-1) is EU0's Src2, sub-group 1's (the other rows) EU1's, and DPASW reads Src2's first
NGrf_EU0 GRFs from EU0 and the rest from EU1, so both compute with the whole A and their own B and C.
"""

from __future__ import annotations

import numpy as np

from .. import counters
from ..xmx import GRF, dpas, dpasw
from ..xmx.platform import Platform
from . import mapping as MP
from . import table as TB

__all__ = ["execute", "execute_split", "OFFSETS"]

#: GRF numbers the lowering places the operands at (Src2, Src1, Src0, Dst); any GRF-aligned choice computes
#: the same result, these leave room for the largest operand (8 GRFs each)
OFFSETS = {"src2": 0, "src1": 16, "src0": 32, "dst": 48}


def _place(g: GRF, rec: TB.Builtin, a, b, acc, P: Platform, a_image=None) -> None:
    gb = P.grf_bytes
    if a_image is None:
        a_image = MP.to_image(a, MP.operand_layout(rec, "a"), rec.a_type)
    g.write(OFFSETS["src2"] * gb, a_image)
    g.write(OFFSETS["src1"] * gb, MP.to_image(b, MP.operand_layout(rec, "b"), rec.b_type))
    g.write(OFFSETS["src0"] * gb, MP.to_image(acc, MP.operand_layout(rec, "acc"), rec.acc_type))


def _fields(rec: TB.Builtin, P: Platform, model) -> dict:
    gb = P.grf_bytes
    return dict(dst=OFFSETS["dst"] * gb, src0=OFFSETS["src0"] * gb, src1=OFFSETS["src1"] * gb,
                src2=OFFSETS["src2"] * gb, dst_type=rec.result_precision, src0_type=rec.acc_precision,
                src1_precision=rec.b_precision, src2_precision=rec.a_precision, sd=8, rc=rec.m, device=P,
                model=model)


def _read(g: GRF, rec: TB.Builtin, P: Platform) -> np.ndarray:
    L = MP.operand_layout(rec, "result")
    nbytes = rec.m * rec.sub_group_size * rec.result_type.dtype.itemsize
    return MP.from_image(g.read(OFFSETS["dst"] * P.grf_bytes, nbytes), L, rec.result_type)


def execute(rec: TB.Builtin, a: np.ndarray, b: np.ndarray, acc: np.ndarray, P: Platform, *, model=None,
            path: str = "fast") -> np.ndarray:
    """One built-in call (checked arguments) -> the per-work-item result (``rec.result_type``); ``path``:
    the DPAS's spec or fast path (``xmx.dpas(path=)``)."""
    g = GRF(P)
    _place(g, rec, a, b, acc, P)
    dpas(g, **_fields(rec, P, model), path=path)
    counters.count("opencl", 1, op=rec.name, platform=P.name, m=rec.m, dpas=rec.dpas)
    return _read(g, rec, P)


def execute_split(rec: TB.Builtin, a: np.ndarray, b: np.ndarray, acc: np.ndarray, P: Platform, *,
                  model=None) -> np.ndarray:
    """One split built-in call: ``a``, ``b``, ``acc`` with a leading axis of 2 (sub-group 0, sub-group 1)."""
    g0, g1 = GRF(P), GRF(P)
    whole = MP.to_image(a, MP.operand_layout(rec, "a"), rec.a_type)   # sub-group 0's variable, then 1's
    half = whole.size // 2
    _place(g0, rec, None, b[0], acc[0], P, a_image=whole[:half])
    _place(g1, rec, None, b[1], acc[1], P, a_image=whole[half:])
    dpasw(g0, pair=g1, **_fields(rec, P, model))
    counters.count("opencl", 2, op=rec.name, platform=P.name, m=rec.m, dpas=rec.dpas)
    return np.stack([_read(g0, rec, P), _read(g1, rec, P)])
