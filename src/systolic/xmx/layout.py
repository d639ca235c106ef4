"""Who holds which element: the DPAS/DPASW operand layouts (visa-DPAS.md "Semantics"; DPASW.md).

:func:`layout` applies DPAS's own rules (:func:`systolic.xmx.rules.check`, so the same errors as ``dpas``) and
returns the operand's :class:`systolic.layout.Layout`, built once by :mod:`systolic.layout.dpas`;
:func:`operand_layout` (``systolic xmx layout``) is that object read per dword. The packers of
:mod:`systolic.xmx.pack` are proven to write the same map (tests/layout/test_dpas_layouts.py).

Each takes the GPU platform first, as ``device`` (docs/ARCHITECTURE.md "Vocabulary"); ``platform=`` is its older
keyword (a :class:`systolic.vocabulary.RenamedWarning`, for one release).
"""

from __future__ import annotations

from ..errors import InvalidValue
from ..layout import Layout
from ..layout import dpas as LD
from ..vocabulary import renamed
from .checks import int_field
from .platform import get_platform
from .rules import DpasShape, canonical_precision, check, precision_class

__all__ = ["layout", "operand_layout", "OPERANDS"]

#: operand names and the matrix each holds (aliases a/b/c/d accepted)
OPERANDS = {"src2": "A", "src1": "B", "src0": "C", "dst": "D"}
_ALIASES = {"a": "src2", "b": "src1", "c": "src0", "d": "dst", "acc": "dst", "accumulator": "dst"}


def canonical_operand(operand: str) -> str:
    op = _ALIASES.get(str(operand).lower(), str(operand).lower())
    if op not in OPERANDS:
        raise InvalidValue("operand is src1 (B), src2 (A), src0 (C) or dst (D)",
                           rule="DPAS operands: dst src0 src1 src2", values={"operand": operand})
    return op


def _required(where: str, renamed_keywords: dict, **given) -> dict:
    """``given`` with ``platform=`` folded into ``device`` (RenamedWarning, attributed to the caller of
    ``where``); InvalidValue naming every one still missing. The parameters have defaults only so that the older
    keyword can stand in for the first positional one."""
    if renamed_keywords:                 # platform=: the older name of device= (systolic.vocabulary)
        given["device"] = renamed(renamed_keywords, {"platform": "device"}, where, stacklevel=4,
                                  device=given["device"])["device"]
    missing = [k for k, v in given.items() if v is None]
    if missing:
        raise InvalidValue(f"{where}: {', '.join(k + '=' for k in missing)} not given",
                           rule=f"{where}: {', '.join(given)} are required",
                           values={k: None for k in missing})
    return given


def shape(device=None, src1_precision=None, src2_precision=None, *, rc: int = 8, dst_type: str | None = None,
          opcode: str = "dpas", **renamed_keywords) -> DpasShape:
    """The validated shape of one DPAS/DPASW with these fields (raises dpas's own errors). ``device``: the GPU
    platform (name, alias or :class:`~systolic.xmx.platform.Platform`); ``platform=`` is its older keyword."""
    g = _required("xmx.layout.shape", renamed_keywords, device=device, src1_precision=src1_precision)
    device, src1_precision = g["device"], g["src1_precision"]
    P = get_platform(device)
    rc = int_field(rc, "rc")
    src2_precision = src1_precision if src2_precision is None else src2_precision
    if dst_type is None:
        dst_type = "int32" if precision_class(canonical_precision(src1_precision)) == "int" else "fp32"
    return check(P, opcode=opcode, exec_size=None, sd=8, rc=rc, dst_type=dst_type, src0_type=None,
                 src1_precision=src1_precision, src2_precision=src2_precision, dst=0, src0=0, src1=0, src2=0)


def layout(device=None, operand: str | None = None, src1_precision=None, src2_precision=None, *, rc: int = 8,
           dst_type: str | None = None, opcode: str = "dpas", **renamed_keywords) -> Layout:
    """The :class:`~systolic.layout.Layout` of one DPAS (``opcode="dpasw"``: DPASW) operand.

    ``operand``: ``src1``/``b``, ``src2``/``a``, ``src0``/``c``, ``dst``/``d``. Platform, precisions, repeat
    count and Dst type are checked exactly as :func:`systolic.xmx.dpas` checks them. ``device``: the GPU
    platform; ``platform=`` is its older keyword (RenamedWarning).
    """
    g = _required("xmx.layout.layout", renamed_keywords, device=device, operand=operand,
                  src1_precision=src1_precision)
    device, operand, src1_precision = g["device"], g["operand"], g["src1_precision"]
    op = canonical_operand(operand)
    opcode = str(opcode).lower()
    if opcode not in ("dpas", "dpasw"):
        raise InvalidValue("opcode is dpas or dpasw", values={"opcode": opcode})
    s = shape(device, src1_precision, src2_precision, rc=rc, dst_type=dst_type, opcode=opcode)
    P = s.platform
    common = dict(platform=P.name, opcode=opcode, rc=s.rc, sd=s.sd, ops_per_chan=s.ops_per_chan,
                  src1_precision=s.src1_precision, src2_precision=s.src2_precision, dst_type=s.dst_type)
    if op == "src2":
        if opcode == "dpasw":
            return LD.dpasw_src2(s.rc, s.K, s.src2_precision, s.src2_bits, grf_bytes=P.grf_bytes,
                                 exec_size=s.exec_size, **common)
        return LD.src2(s.rc, s.K, s.src2_precision, s.src2_bits, grf_bytes=P.grf_bytes, exec_size=s.exec_size,
                       **common)
    if op == "src1":
        return LD.src1(s.K, s.exec_size, s.src1_precision, s.src1_bits, grf_bytes=P.grf_bytes, **common)
    t = s.dst_type if op == "dst" else (s.src0_type or s.dst_type)
    from .. import types as T
    return LD.acc(s.rc, s.exec_size, t, T.get(t).bits, grf_bytes=P.grf_bytes, operand=op, **common)


def operand_layout(device=None, src1_precision=None, src2_precision=None, operand: str = "src1", rc: int = 8,
                   dst_type: str | None = None, **renamed_keywords) -> list[dict]:
    """One entry per dword of the operand: its GRF (relative to the operand), dword in that GRF, byte offset,
    and the logical (row, col) elements it holds, lowest bits first (the :func:`layout` object, per dword).

    ``src1`` is B (K x N), ``src2`` is A (M x K), ``dst`` is D (M x N, 32-bit accumulator unless ``dst_type``).
    ``device``: the GPU platform; ``platform=`` is its older keyword (RenamedWarning). ``src2_precision``
    defaults to ``src1_precision``.
    """
    g = _required("xmx.layout.operand_layout", renamed_keywords, device=device, src1_precision=src1_precision)
    device, src1_precision = g["device"], g["src1_precision"]
    if operand not in ("src1", "src2", "dst"):
        raise InvalidValue("operand is src1, src2 or dst", values={"operand": operand})
    L = layout(device, operand, src1_precision, src2_precision, rc=rc, dst_type=dst_type)
    gb = L.params["grf_bytes"]
    groups: dict[tuple[int, int], list] = {}
    for r in range(L.rows):
        for c in range(L.cols):
            g, d = (int(x) for x in L.index[r, c])
            groups.setdefault((g, d), []).append((int(L.bit[r, c]), (r, c)))
    return [{"grf": g, "dword": d, "byte": g * gb + 4 * d, "elements": [e for _, e in sorted(els)]}
            for (g, d), els in sorted(groups.items())]
