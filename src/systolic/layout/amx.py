"""AMX tile operands as :class:`~systolic.layout.Layout` objects (Intel SDM vol. 2, TDPB*D / TDPBF16PS /
TDPFP16PS / TDP*F8PS Operation sections; REFERENCE.md section 6).

A tile is up to 16 rows of 64 bytes; holders are ``("tile_row", "byte")``, ``unit_bits`` 8, image stride 64 bytes
per row (the tile register, whatever colsb is). For ``tdp* dst, src1, src2``:

* **A = src1 (M x K)**: tile row m holds row m of A, element k at byte ``k * bytes``.
* **B = src2 (K x N)**, VNNI: tile row ``k // per`` holds, in dword n, the ``per = 4 / bytes`` consecutive K
  values of column n (``tsrc2.row[k].bf16[2*n + i]`` is B[2k + i, n]), lower K at the lower address.
* **C = dst (M x N)**: tile row m, dword n.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidValue
from .core import Layout

__all__ = ["tile_a", "tile_b", "tile_c", "ROWS", "BYTES_PER_ROW"]

ROWS = 16
BYTES_PER_ROW = 64


def _dims(**dims) -> None:
    """Matrix dimensions are integers: "16" or 16.0 would be coerced silently by int() and 16.5 truncated."""
    for name, v in dims.items():
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise InvalidValue(f"the tile dimension {name} must be an integer, not {type(v).__name__}",
                               rule="AMX tile layouts: M, N, K are integers", values={name: v})


def _fits(rows: int, colsb: int, what: str) -> None:
    if not (1 <= rows <= ROWS and 1 <= colsb <= BYTES_PER_ROW):
        raise InvalidValue(f"{what} does not fit a tile", rule="palette 1: at most 16 rows of 64 bytes",
                           values={"rows": rows, "colsb": colsb})


def _grid(r: int, c: int):
    return np.meshgrid(np.arange(r, dtype=np.int64), np.arange(c, dtype=np.int64), indexing="ij")


def _params(kw, **more):
    return dict(kw, unit_strides=(BYTES_PER_ROW, 1), **more)


def _row_major(operand: str, label: str, rows: int, cols: int, col_name: str, element: str, bits: int,
               params) -> Layout:
    """A or C/D: tile row r holds logical row r, element c at bit ``c * bits`` of it."""
    colsb = cols * bits // 8
    _fits(rows, colsb, label[0])
    if params.get("instruction") is not None and (cols * bits) % 32:
        # an operand of a TMUL instruction: TDP*/TMUL raise #UD when a tile's colsb is not a whole number of
        # dwords (SDM TDPBSSD "Exceptions"; REFERENCE.md section 6), as the B operand's VNNI rule already says
        raise InvalidValue(f"{label} of {params['instruction']}: {cols} {element} elements are {cols * bits / 8:g} "
                           "bytes per row, not a multiple of 4",
                           rule="TMUL: every tile's colsb is a multiple of 4 (else #UD)",
                           values={"instruction": params["instruction"], col_name: cols,
                                   "colsb": colsb if (cols * bits) % 8 == 0 else cols * bits / 8})
    rr, cc = _grid(rows, cols)
    pos = cc * bits
    idx = np.stack([rr, pos // 8], axis=-1)
    return Layout("amx", operand, rows, cols, element, bits, ("tile_row", "byte"), idx, pos % 8, 8,
                  params=_params(params, M=rows, **{col_name: cols}, rows=rows, colsb=colsb),
                  title=f"{label} {rows}x{cols} {element}")


def tile_a(m: int, k: int, element: str, bits: int, **params) -> Layout:
    """A (M x K) in the src1 tile: row m, byte k * bits / 8."""
    _dims(m=m, k=k)
    return _row_major("a", "A (src1 tile)", m, k, "K", element, bits, params)


def tile_b(k: int, n: int, element: str, bits: int, **params) -> Layout:
    """B (K x N) in the src2 tile, VNNI: row k // per, byte 4n + (k % per) * bytes."""
    _dims(k=k, n=n)
    if 32 % bits:
        raise InvalidValue("element width must divide 32", values={"bits": bits})
    per = 32 // bits
    if k % per:
        raise InvalidValue(f"K must be a multiple of {per} for {element} B tiles (VNNI groups)",
                           rule="B rows hold 4 bytes of K per column", values={"k": k})
    _fits(k // per, 4 * n, "B (VNNI)")
    kk, nn = _grid(k, n)
    pos = nn * 32 + (kk % per) * bits
    idx = np.stack([kk // per, pos // 8], axis=-1)
    return Layout("amx", "b", k, n, element, bits, ("tile_row", "byte"), idx, pos % 8, 8,
                  params=_params(params, K=k, N=n, vnni=per, rows=k // per, colsb=4 * n),
                  title=f"B (src2 tile, VNNI) {k}x{n} {element}, {per} per dword")


def tile_c(m: int, n: int, element: str, bits: int, **params) -> Layout:
    """C/D (M x N) in the dst tile: row m, byte n * bits / 8."""
    _dims(m=m, n=n)
    return _row_major("c", "C (dst tile)", m, n, "N", element, bits, params)
