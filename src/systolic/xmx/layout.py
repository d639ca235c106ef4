"""Who holds which element: the DPAS operand layouts as data (visa-DPAS.md "Semantics"; pack.py)."""

from __future__ import annotations

from .. import types as T
from .platform import get_platform
from .rules import canonical_precision, ops_per_chan

__all__ = ["operand_layout"]


def operand_layout(platform, src1_precision, src2_precision, operand: str = "src1", rc: int = 8,
                   dst_type: str | None = None) -> list[dict]:
    """One entry per dword of the operand: its GRF (relative to the operand), dword in that GRF, byte offset,
    and the logical (row, col) elements it holds, lowest bits first.

    ``src1`` is B (K x N), ``src2`` is A (M x K), ``dst`` is D (M x N, 32-bit accumulator unless ``dst_type``).
    """
    P = get_platform(platform)
    p1, p2 = canonical_precision(src1_precision), canonical_precision(src2_precision)
    N = P.exec_size
    K = 8 * ops_per_chan(p1, p2)
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
        size = T.get(dst_type).bits // 8 if dst_type else 4
        per = 4 // size
        for d in range(rc * N // per):
            byte = 4 * d
            els = [((d * per + j) // N, (d * per + j) % N) for j in range(per)]
            out.append({"grf": byte // gb, "dword": (byte % gb) // 4, "byte": byte, "elements": els})
    else:
        from ..errors import InvalidValue
        raise InvalidValue("operand is src1, src2 or dst", values={"operand": operand})
    return out
