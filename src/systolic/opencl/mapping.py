"""Logical matrices <-> per-work-item arrays <-> register images, through the one SPIR-V map.

* :func:`layout` picks the built-in overload and returns its operand's :class:`~systolic.layout.Layout`
  (built by :mod:`systolic.layout.opencl`, the only copy of "Mapping Matrix Data to Invocations").
* :func:`to_image` / :func:`from_image` place a sub-group variable in registers: component j of work-item i is
  unit ``i * stride_work_item + j * stride_component`` of the image (the Layout's ``unit_strides``), i.e.
  component-major, all work-items' component 0 first. That is how IGC allocates a SIMD variable of vector type
  (one register row per component, the vISA "structure of arrays" view that visa-operands.md's regions address),
  and it is exactly DPAS's Src2 / Src1 / Src0 / Dst layout (visa-DPAS.md "Semantics"), which is why a built-in
  lowers to a single DPAS with no data movement.
* :func:`distribute` / :func:`gather`: logical matrix <-> the per-work-item arguments of a built-in
  (``Layout.scatter`` then :func:`from_image`; :func:`to_image` then ``Layout.gather``).
"""

from __future__ import annotations

import functools

import numpy as np

from .. import types as T
from ..errors import InvalidValue, UnsupportedCombination
from ..layout import Layout
from ..layout import opencl as LO
from ..vocabulary import renamed
from ..xmx import pack as PK
from ..xmx.platform import Platform, get_platform
from . import table as TB
from .cltypes import CType, parse

__all__ = ["layout", "resolve", "platform_for", "operand_layout", "to_image", "from_image", "distribute", "gather",
           "available", "builtins"]

_OPERANDS = ("a", "b", "acc", "result")


def _storage_bits(p: str) -> int:
    return T.get(p).storage_bits


def available(rec: TB.Builtin, P: Platform) -> str | None:
    """None when ``P`` has this overload, else the reason (the rule it breaks)."""
    if rec.split and not P.has_dpasw:
        return f"{P.name} has no DPASW (split built-ins need fused EUs: XeHP/DG2 only; IsaVerification.cpp)"
    if rec.sub_group_size != P.matrix_subgroup_size:
        return (f"sub-group {rec.sub_group_size} forms need a device whose minimum sub-group size is "
                f"{rec.sub_group_size}; {P.name} runs these built-ins with sub-group {P.matrix_subgroup_size}")
    for p in (rec.a_precision, rec.b_precision):
        if not P.supports(p):
            return f"{P.name} DPAS has no {p} precision"
    cls = "int" if rec.kind == "int" else ("fp8" if rec.a_precision in ("bf8", "hf8") else rec.a_precision)
    legal = P.acc_types.get(cls, ())
    for t in {rec.acc_precision, rec.result_precision}:
        if t not in legal:
            return f"{P.name} DPAS takes no {t} accumulator for {rec.a_precision} (legal: {list(legal)})"
    return None


def _device(old: dict, device, where: str):
    """device= from the older platform= (systolic.vocabulary; the warning names the public function's caller)."""
    return renamed(old, {"platform": "device"}, where, stacklevel=4, device=device)["device"]


def platform_for(name: str, platform=None) -> Platform:
    """The platform a call of ``name`` uses: ``platform`` when given, else the running kernel's, else pvc when
    it has ``name``, else the first platform that does (dg2 for the sub-group 8 and split forms)."""
    if platform is not None:
        return get_platform(platform)
    from .runner import current
    c = current()
    if c is not None:
        return c.platform
    recs = TB.by_name(str(name))
    for P in [get_platform("pvc"), *_platforms()]:
        if any(available(r, P) is None for r in recs):
            return P
    return get_platform("pvc")


def builtins(device=None, **renamed_keywords) -> list[TB.Builtin]:
    """Every overload the GPU platform ``device`` has (all of them, every sub-group size, when it is None).
    ``platform=`` is the older name of ``device=`` (DeprecationWarning)."""
    if renamed_keywords:
        device = _device(renamed_keywords, device, "opencl.builtins")
    if device is None:
        return list(TB.BUILTINS)
    P = get_platform(device)
    return [b for b in TB.BUILTINS if available(b, P) is None]


def resolve(name: str, device=None, *, m: int | None = None, acc: str | CType | None = None,
            result: str | CType | None = None, **renamed_keywords) -> TB.Builtin:
    """The overload of ``name`` on GPU platform ``device`` with M = ``m`` and accumulator type ``acc`` (C type
    name or base, e.g. ``"short"`` for a bf16 accumulator); defaults: M = 8, the first accumulator type listed.
    ``platform=`` is the older name of ``device=`` (DeprecationWarning)."""
    if renamed_keywords:
        device = _device(renamed_keywords, device, "opencl.resolve")
    P = get_platform(device)
    if m is not None and (isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer))):
        raise InvalidValue(f"m (M, the rows of A) is an integer, not {type(m).__name__}",
                           rule="M is one of the built-in's row counts", values={"m": repr(m)[:40]})
    recs = TB.by_name(str(name))
    if not recs:
        from ..suggest import did_you_mean
        raise InvalidValue(f"no sub-group matrix built-in is called {name!r}"
                           f"{did_you_mean(name, TB.NAMES)} (systolic opencl list: every name)",
                           rule="cl_intel_subgroup_matrix_multiply_accumulate (+ _tf32, _split) and IGC IBiF_dpas.cl",
                           values={"name": name})
    here = [r for r in recs if available(r, P) is None]
    if not here:
        why = available(recs[0], P) if all(r.sub_group_size != P.matrix_subgroup_size for r in recs) else \
            next(available(r, P) for r in recs if r.sub_group_size == P.matrix_subgroup_size)
        where = sorted({p.name for p in _platforms() for r in recs if available(r, p) is None})
        raise UnsupportedCombination(f"{name} is not available on {P.name}", rule=why,
                                     values={"platform": P.name, "available_on": where})
    if m is not None:
        here2 = [r for r in here if r.m == m]
        if not here2:
            raise UnsupportedCombination(f"{name} has no M = {m} form on {P.name}",
                                         rule=f"M is one of {sorted({r.m for r in here})}",
                                         values={"m": m, "platform": P.name})
        here = here2
    else:
        ms = sorted({r.m for r in here})
        here = [r for r in here if r.m == ms[-1]]
    for what, want in (("acc", acc), ("result", result)):
        if want is None:
            continue
        base = parse(want).base if not isinstance(want, CType) else want.base
        sel = [r for r in here if getattr(r, f"{what}_type").base == base]
        if not sel:
            raise UnsupportedCombination(f"{name} has no {base} {what} form on {P.name}",
                                         rule="accumulator types: " + ", ".join(sorted({getattr(
                                             r, f"{what}_type").base for r in here})),
                                         values={what: base})
        here = sel
    return here[0]


def _platforms():
    from ..xmx.platform import PLATFORMS
    return PLATFORMS.values()


def operand_layout(rec: TB.Builtin, operand: str, *, platform: str | None = None) -> Layout:
    """The Layout of one operand (``a``, ``b``, ``acc``, ``result``) of the overload ``rec`` (built once per
    overload, operand and platform: a built-in call places three operands and reads one)."""
    return _operand_layout(rec, operand, platform)


@functools.lru_cache(maxsize=4096)
def _operand_layout(rec: TB.Builtin, operand: str, platform: str | None) -> Layout:
    if operand not in _OPERANDS:
        raise InvalidValue("operand is a, b, acc or result", values={"operand": operand})
    common = dict(builtin=rec.name, signature=rec.signature, platform=platform, dpas=rec.dpas)
    s = rec.sub_group_size
    if operand == "a":
        fn = LO.split_a if rec.split else LO.matrix_a
        return fn(rec.m, rec.k, sub_group_size=s, element_bits=_storage_bits(rec.a_precision),
                  component_bits=rec.a_type.bits, element=rec.a_precision, **common)
    if operand == "b":
        return LO.matrix_b(rec.k, s, sub_group_size=s, element_bits=_storage_bits(rec.b_precision),
                           element=rec.b_precision, **common)
    t = rec.acc_type if operand == "acc" else rec.result_type
    p = rec.acc_precision if operand == "acc" else rec.result_precision
    return LO.matrix_acc(rec.m, s, sub_group_size=s, element_bits=t.bits, element=p, operand=operand, **common)


def layout(name: str, operand: str, *, device=None, m: int | None = None, acc: str | None = None,
           **renamed_keywords) -> Layout:
    """``systolic.opencl.layout``: the Layout of ``operand`` ("a", "b", "acc" or "result") of built-in ``name``
    on GPU platform ``device`` (default: :func:`platform_for`) with M = ``m`` (default the largest, 8) and
    accumulator type ``acc``. ``platform=`` is the older name of ``device=`` (DeprecationWarning)."""
    if renamed_keywords:
        device = _device(renamed_keywords, device, "opencl.layout")
    P = platform_for(name, device)
    rec = resolve(name, P, m=m, acc=acc)
    return operand_layout(rec, operand, platform=P.name)


# ---- placement: a sub-group variable in registers (component-major) ------------------------------------------

def _unit_index(L: Layout, s: int, ncomp: int) -> np.ndarray:
    """Image unit of (…, work_item, component) for every work-item and component, shape (..., s, ncomp)."""
    return _unit_index_of(L.unit_strides, s, ncomp)


@functools.lru_cache(maxsize=1024)
def _unit_index_of(st: tuple[int, ...], s: int, ncomp: int) -> np.ndarray:
    """:func:`_unit_index` for unit strides ``st`` (read-only: shared by every call with this shape)."""
    wi = np.arange(s)[:, None] * st[-2]
    co = np.arange(ncomp)[None, :] * st[-1]
    idx = wi + co
    if len(st) == 3:  # ("sub_group", "work_item", "component")
        idx = np.arange(2)[:, None, None] * st[0] + idx[None]
    idx.setflags(write=False)
    return idx


def to_image(values, L: Layout, ctype: CType) -> np.ndarray:
    """Per-work-item values of type ``ctype`` (shape ``ctype.shape(S)``, split: ``(2,) + ...``) -> the
    register image (uint8) of the variable, placed by the Layout's unit strides."""
    v = np.asarray(values, dtype=ctype.dtype)
    s = L.params["sub_group_size"]
    lead = v.shape[:-2] if ctype.n > 1 else v.shape[:-1]
    v = v.reshape(lead + (s, ctype.n))
    idx = _unit_index(L, s, ctype.n)
    units = np.zeros(int(idx.max()) + 1, dtype=ctype.dtype)
    units[idx.reshape(-1)] = v.reshape(-1)
    return units.view(np.uint8)


def from_image(image, L: Layout, ctype: CType, *, split: bool = False) -> np.ndarray:
    """The register image (uint8) -> per-work-item values of type ``ctype``."""
    s = L.params["sub_group_size"]
    idx = _unit_index(L, s, ctype.n)
    img = np.asarray(image, dtype=np.uint8)
    need = (int(idx.max()) + 1) * ctype.dtype.itemsize
    if img.size < need:
        img = np.concatenate([img, np.zeros(need - img.size, np.uint8)])
    units = img[:need].view(ctype.dtype)
    out = units[idx]
    shape = ((2,) if idx.ndim == 3 else ()) + ctype.shape(s)
    return out.reshape(shape).copy()


# ---- logical matrices <-> per-work-item arguments ---------------------------------------------------------------

def _element_bits(matrix, precision: str) -> np.ndarray:
    """Element bits (uint32) of a logical matrix: the 32-bit accumulator types as DPAS's Src0 packer takes them
    (:func:`systolic.xmx.pack.pack_acc`; integers outside the type's range are refused, fp32 as float32), the others as
    :func:`systolic.xmx.pack.element_bits`."""
    if precision in ("int32", "u32", "fp32"):
        a = np.asarray(matrix)
        if precision in ("int32", "u32") and a.dtype.kind in "iuO" and a.size:
            # a value the accumulator cannot hold is refused, not wrapped modulo 2**32 (issue 25: a user's value
            # is represented exactly or refused; cl_intel_subgroup_matrix_multiply_accumulate: int acc is int32,
            # the unsigned forms uint32)
            lo, hi = (-(1 << 31), (1 << 31) - 1) if precision == "int32" else (0, (1 << 32) - 1)
            vals = [int(v) for v in a.reshape(-1)] if a.dtype.kind == "O" else None
            vmin = min(vals) if vals is not None else int(a.min())
            vmax = max(vals) if vals is not None else int(a.max())
            if vmin < lo or vmax > hi:
                raise InvalidValue(f"an {precision} accumulator holds {lo}..{hi}; the matrix has values "
                                   f"{vmin}..{vmax}", rule=f"{precision} accumulator range (no wraparound)",
                                   values={"min": vmin, "max": vmax})
        return PK.pack_acc(a, precision).view(np.uint32).reshape(a.shape)
    return PK.element_bits(matrix, precision)


def _values(bits: np.ndarray, precision: str) -> np.ndarray:
    t = T.get(precision)
    b = np.asarray(bits, dtype=np.uint32)
    if precision == "int32":
        return b.view(np.int32)
    if precision in ("fp32", "tf32"):
        return b.view(np.float32)
    if t.fmt is None:
        return PK.decode(b, precision)
    width = {16: np.uint16, 8: np.uint8, 4: np.uint8}[t.storage_bits]
    return b.astype(width).view(t.dtype)


def _operand(rec: TB.Builtin, operand: str):
    if operand == "a":
        return rec.a_type, rec.a_precision
    if operand == "b":
        return rec.b_type, rec.b_precision
    if operand == "acc":
        return rec.acc_type, rec.acc_precision
    return rec.result_type, rec.result_precision


def distribute(name: str, operand: str, matrix, *, device=None, m: int | None = None,
               acc: str | None = None, **renamed_keywords) -> np.ndarray:
    """A logical matrix (A: M x K, B: K x N, acc/result: M x N) -> the per-work-item argument of ``name``.

    Values become the operand's element bits as :func:`systolic.xmx.pack.element_bits` does (arrays of the
    element's own dtype unchanged, other floats rounded to nearest even, integers range-checked). M defaults
    to the matrix's row count for A and acc. ``device``: the GPU platform (default: :func:`platform_for`);
    ``platform=`` is its older name (DeprecationWarning).
    """
    if renamed_keywords:
        device = _device(renamed_keywords, device, "opencl.distribute")
    P = platform_for(name, device)
    mat = np.asarray(matrix)
    if mat.ndim != 2:
        raise InvalidValue("distribute takes a 2-D logical matrix", values={"shape": mat.shape})
    if m is None and operand in ("a", "acc", "result"):
        m = mat.shape[0]
    rec = resolve(name, P, m=m, acc=acc)
    L = operand_layout(rec, operand, platform=P.name)
    if mat.shape != L.shape:
        raise InvalidValue(f"{operand} of {name} is a {L.rows} x {L.cols} matrix",
                           rule=f"M = {rec.m}, N = {rec.n}, K = {rec.k}", values={"shape": mat.shape})
    ctype, prec = _operand(rec, operand)
    bits = _element_bits(mat, prec)
    s = rec.sub_group_size
    nbytes = (2 if rec.split and operand == "a" else 1) * s * ctype.n * ctype.dtype.itemsize
    return from_image(L.scatter(bits, nbytes=nbytes), L, ctype)


def gather(name: str, operand: str, values, *, device=None, m: int | None = None,
           acc: str | None = None, **renamed_keywords) -> np.ndarray:
    """Per-work-item values of ``name``'s operand -> the logical matrix (int64 for integer elements, int32 for
    int accumulators, float32 for fp32/tf32, the ml_dtypes type for bf16/fp16/fp8/e2m1). ``device``: the GPU
    platform (default: :func:`platform_for`); ``platform=`` is its older name (DeprecationWarning)."""
    if renamed_keywords:
        device = _device(renamed_keywords, device, "opencl.gather")
    P = platform_for(name, device)
    v = np.asarray(values)
    if m is None and operand in ("a", "acc", "result"):
        rec0 = resolve(name, P, acc=acc)
        inner = v[0] if (rec0.split and operand == "a" and v.ndim >= 1) else v
        ncomp = 1 if inner.ndim <= 1 else inner.shape[-1]
        if operand == "a":
            if rec0.a_precision == "tf32" and ncomp == 1:
                raise InvalidValue("a tf32 a of one component serves M = 1 and M = 2: pass m=",
                                   rule="cl_intel_subgroup_matrix_multiply_accumulate_tf32: a has ceil(M/2) "
                                        "components", values={"name": name})
            m = {r.a_type.n: r.m for r in TB.by_name(name)
                 if available(r, P) is None and r.acc_type.base == rec0.acc_type.base}.get(ncomp, -1)
        else:
            m = ncomp
    rec = resolve(name, P, m=m, acc=acc)
    L = operand_layout(rec, operand, platform=P.name)
    ctype, prec = _operand(rec, operand)
    lead = (2,) if rec.split and operand == "a" else ()
    if v.shape != lead + ctype.shape(rec.sub_group_size):
        raise InvalidValue(f"{operand} of {name} (M = {rec.m}) is an OpenCL {ctype.name} per work-item",
                           rule="per-work-item values: shape (S,) or (S, components)",
                           values={"shape": v.shape, "expected": lead + ctype.shape(rec.sub_group_size)})
    if v.dtype != ctype.dtype:
        if v.dtype.itemsize != ctype.dtype.itemsize or v.dtype.kind not in "iuf":
            raise InvalidValue(f"{operand} of {name} holds OpenCL {ctype.base} ({ctype.dtype}) values",
                               values={"dtype": str(v.dtype)})
        v = v.view(ctype.dtype)  # same width: the same bits
    img = to_image(v, L, ctype)
    return _values(L.gather(img), prec)
