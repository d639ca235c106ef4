"""SYCL joint_matrix slices: which work-item holds which element, as :class:`~systolic.layout.Layout` objects.

The per-work-item coordinate formula is IGC's ``DEFINE_GET_COORD`` (``IGC/BiFModule/Languages/OpenCL/PreRelease/
Matrix/IBiF_matrix.cl``; REFERENCE.md section 5), a function of primitive parameters only::

    pack = contrib_bits / elem_bits;  sg_cols = (C * VF) / pack;  skip = sg_size / sg_cols
    row  = (wi / sg_cols + idx / pack * skip) * VF + idx % VF
    col  = (wi % sg_cols * pack + idx % pack) / VF

``(R, C)`` is the logical shape (B is K x N before VNNI), ``VF`` the VNNI factor (2 for 16-bit B, 4 for 8-bit B,
1 otherwise), ``contrib_bits`` the width of one work-item's contribution (16 for A on SIMD16, 32 for A on SIMD8, 32
for B, the element width for the accumulator).

IGC builds the large shapes (16x16x16, 32x64x16, 32x64x32, 1x64x*, dg2's 32x32x16) from DPAS-sized tiles
(``DEFINE_MAD_LARGE_SLICE``): a work-item's slice is the concatenation of its slices of those tiles, tile rows
fastest (the 32x64 accumulator's ``c0..c15``: block ``b`` is row-tile ``b % 4``, column-tile ``b // 4``; the
32x64x32 A's ``a[i]``/``a[i + 4]``; B's ``b[2j]``/``b[2j + 1]``). :func:`slice_layout` takes the tile shape as a
parameter, so one rule gives both the base shapes (one tile) and the large ones.

Sub-group size 1 (the AMX CPU devices, seed section "AMX"): the one work-item holds the whole matrix, index
row-major. The holders are ``("work_item", "index")``, ``unit_bits`` the element width, so ``what(work_item=3)``
lists work-item 3's slice in index order.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidValue
from .core import Layout

__all__ = ["get_coord", "slice_layout", "slice_length"]


def _pos(**kw) -> None:
    for k, v in kw.items():
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v <= 0:
            raise InvalidValue(f"{k} must be a positive integer", rule="joint_matrix layout parameters",
                               values={k: v})


def get_coord(wi, index, *, sg_size: int, elem_bits: int, contrib_bits: int, rows: int, cols: int, vnni: int):
    """IGC's ``DEFINE_GET_COORD``: (row, col) of element ``index`` of work-item ``wi`` in one tile.

    Works on ints or integer numpy arrays (vectorised over work-items and indices).
    """
    pack = contrib_bits // elem_bits
    sg_cols = (cols * vnni) // pack
    if pack < 1 or sg_cols < 1:
        raise InvalidValue("contribution narrower than an element, or fewer columns than one contribution",
                           rule="DEFINE_GET_COORD: pack = contrib/elem >= 1, sg_cols = C*VF/pack >= 1",
                           values={"elem_bits": elem_bits, "contrib_bits": contrib_bits, "cols": cols, "vnni": vnni})
    skip = sg_size // sg_cols
    row = (wi // sg_cols + index // pack * skip) * vnni + index % vnni
    col = (wi % sg_cols * pack + index % pack) // vnni
    return row, col


def slice_length(rows: int, cols: int, sg_size: int) -> int:
    """Elements per work-item: ceil(rows * cols / sg_size) (the M = 1 shapes leave some slots empty)."""
    return -(-rows * cols // sg_size)


def slice_layout(rows: int, cols: int, *, sg_size: int, elem_bits: int, contrib_bits: int, vnni: int = 1,
                 tile_rows: int | None = None, tile_cols: int | None = None, element: str = "",
                 operand: str = "accumulator", **params) -> Layout:
    """The joint_matrix slice map of a ``rows x cols`` matrix: element (r, c) -> (work_item, index).

    ``tile_rows x tile_cols`` is the DPAS-sized tile IGC builds the matrix from (default: the whole matrix); the
    matrix must be a whole number of tiles. Each tile's slice follows :func:`get_coord`; a work-item's slice holds
    its tile slices one after the other, tile rows fastest. ``sg_size`` 1 gives the row-major whole matrix.
    """
    _pos(rows=rows, cols=cols, sg_size=sg_size, elem_bits=elem_bits, contrib_bits=contrib_bits, vnni=vnni)
    tr = rows if tile_rows is None else tile_rows
    tc = cols if tile_cols is None else tile_cols
    _pos(tile_rows=tr, tile_cols=tc)
    if rows % tr or cols % tc:
        raise InvalidValue("the matrix is not a whole number of tiles", rule="IGC large shapes: DPAS-sized tiles",
                           values={"rows": rows, "cols": cols, "tile_rows": tr, "tile_cols": tc})
    idx = np.full((rows, cols, 2), -1, dtype=np.int64)
    if sg_size == 1:
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        idx[..., 0] = 0
        idx[..., 1] = r * cols + c
        per_tile = rows * cols
    else:
        per_tile = slice_length(tr, tc, sg_size)
        wi, ix = np.meshgrid(np.arange(sg_size, dtype=np.int64), np.arange(per_tile, dtype=np.int64), indexing="ij")
        tr_, tc_ = get_coord(wi, ix, sg_size=sg_size, elem_bits=elem_bits, contrib_bits=contrib_bits,
                             rows=tr, cols=tc, vnni=vnni)
        ok = (tr_ < tr) & (tc_ < tc)
        nrt = rows // tr
        for b in range((rows // tr) * (cols // tc)):
            r0, c0 = (b % nrt) * tr, (b // nrt) * tc
            rr, cc = tr_[ok] + r0, tc_[ok] + c0
            if np.any(idx[rr, cc, 0] >= 0):
                raise InvalidValue("two work-item slots map to one element", rule="DEFINE_GET_COORD is a bijection",
                                   values={"rows": rows, "cols": cols, "sg_size": sg_size})
            idx[rr, cc, 0] = wi[ok]
            idx[rr, cc, 1] = ix[ok] + b * per_tile
            # a later duplicate of (rr, cc) inside one tile would show as a collision above on the next tile only;
            # check the tile itself too
            if len(set(zip(rr.tolist(), cc.tolist()))) != rr.size:
                raise InvalidValue("two work-item slots map to one element", rule="DEFINE_GET_COORD is a bijection",
                                   values={"rows": tr, "cols": tc, "sg_size": sg_size})
    bit = np.zeros((rows, cols), dtype=np.int64)
    p = dict(params, sg_size=sg_size, elem_bits=elem_bits, contrib_bits=contrib_bits, vnni=vnni, tile_rows=tr,
             tile_cols=tc, slice_length=per_tile * (rows // tr) * (cols // tc) if sg_size > 1 else rows * cols)
    return Layout("sycl", operand, rows, cols, element, elem_bits, ("work_item", "index"), idx, bit, elem_bits,
                  params=p, title=f"joint_matrix {operand} {rows}x{cols} {element}: sub-group {sg_size}")
