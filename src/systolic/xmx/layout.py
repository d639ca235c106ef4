"""Who holds which element: the DPAS operand layouts as data (visa-DPAS.md "Semantics"; pack.py)."""

from __future__ import annotations

from .. import types as T
from ..errors import InvalidValue
from .dpas import int_field
from .platform import get_platform
from .rules import canonical_precision, check, precision_class

__all__ = ["operand_layout"]


def operand_layout(platform, src1_precision, src2_precision, operand: str = "src1", rc: int = 8,
                   dst_type: str | None = None) -> list[dict]:
    """One entry per dword of the operand: its GRF (relative to the operand), dword in that GRF, byte offset,
    and the logical (row, col) elements it holds, lowest bits first.

    ``src1`` is B (K x N), ``src2`` is A (M x K), ``dst`` is D (M x N, 32-bit accumulator unless ``dst_type``).
    """
    if operand not in ("src1", "src2", "dst"):
        raise InvalidValue("operand is src1, src2 or dst", values={"operand": operand})
    P = get_platform(platform)
    rc = int_field(rc, "rc")
    # the same rules (and so the same errors) as dpas itself: precisions on this platform, one precision
    # class for Src1 and Src2, the legal Dst type, repeat count 1..8 (rules.check; offsets 0 are aligned)
    if dst_type is None:
        dst_type = "int32" if precision_class(canonical_precision(src1_precision)) == "int" else "fp32"
    s = check(P, exec_size=None, sd=8, rc=rc, dst_type=dst_type, src0_type=None, src1_precision=src1_precision,
              src2_precision=src2_precision, dst=0, src0=None, src1=0, src2=0)
    p1, p2 = s.src1_precision, s.src2_precision
    N = s.exec_size
    K = s.K
    gb = P.grf_bytes
    out = []
    if operand == "src1":
        per = 32 // T.get(p1).storage_bits
        for m in range(K // per):
            for i in range(N):
                byte = m * gb + 4 * i
                out.append({"grf": m, "dword": i, "byte": byte,
                            "elements": [(m * per + j, i) for j in range(per)]})
    elif operand == "src2":
        per = 32 // T.get(p2).storage_bits
        total = rc * K
        for d in range(-(-total // per)):
            byte = 4 * d
            els = [((d * per + j) // K, (d * per + j) % K) for j in range(per) if d * per + j < total]
            out.append({"grf": byte // gb, "dword": (byte % gb) // 4, "byte": byte, "elements": els})
    elif operand == "dst":
        size = T.get(s.dst_type).bits // 8
        per = 4 // size
        for d in range(rc * N // per):
            byte = 4 * d
            els = [((d * per + j) // N, (d * per + j) % N) for j in range(per)]
            out.append({"grf": byte // gb, "dword": (byte % gb) // 4, "byte": byte, "elements": els})
    return out

