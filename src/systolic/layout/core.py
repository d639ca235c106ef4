"""The layout object: which holder keeps each element of a logical matrix (DESIGN.md "layout" layer).

A :class:`Layout` is data: for every element (row, col) of one operand's *logical* matrix (B is K x N before any
VNNI packing, A is M x K, the accumulator M x N) it records the holder that keeps it and the bits inside that
holder. A holder is a tuple of integer coordinates whose names the layout declares, outermost first:

======================  ===============================  ===========  ====================================
layer                   ``holder``                       ``unit_bits``  example
======================  ===============================  ===========  ====================================
AMX tile                ``("row", "byte")``              8            B of TDPBF16PS: (k//2, 4*n + 2*(k%2))
DPAS register operand   ``("grf", "dword")``             32           Src1 bf16: (k//2, n), bits 16*(k%2)
DPASW's split Src2      ``("eu", "grf", "dword")``       32           EU0 holds the first half of A's GRFs
OpenCL built-in arg     ``("work_item", "component")``   16 / 32      ``short8 a``: component = row
joint_matrix slice      ``("work_item", "index")``       elem bits    IGC ``get_coord``'s (wi, idx)
======================  ===============================  ===========  ====================================

The innermost coordinate names a unit of ``unit_bits`` bits; ``bit[r, c]`` is the element's lowest bit inside it
(lower-numbered elements in lower bits, REFERENCE.md section 1). ``index[r, c]`` is -1 on every coordinate for an
element nobody holds (there are none in the layouts the specs define, but a partial map may say so).

The maps themselves are built from primitive parameters (exec size, element bits, repeat count, sub-group size)
by the layer modules beside this one, so this package imports nothing above :mod:`systolic.types`; engines,
programming models and the explorer all read the same objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import numpy as np

from ..errors import InvalidValue

__all__ = ["Layout"]


@dataclass(frozen=True, eq=False)
class Layout:
    """The map of one operand: logical element (row, col) <-> (holder coordinates, bit offset).

    ``layer``: "amx", "dpas", "dpasw", "opencl", "sycl", ...; ``operand``: the operand's name in that layer
    ("a", "b", "c", "src1", ...); ``element``: the element type's canonical name (:mod:`systolic.types`);
    ``element_bits``: its storage width; ``params``: what the map depends on (platform, rc, sub-group size...).
    """

    layer: str
    operand: str
    rows: int
    cols: int
    element: str
    element_bits: int
    holder: tuple[str, ...]
    index: np.ndarray          # int64 (rows, cols, len(holder)); -1 where not held
    bit: np.ndarray            # int64 (rows, cols): lowest bit inside the innermost unit
    unit_bits: int
    params: Mapping[str, Any] = field(default_factory=dict)
    title: str = ""

    def __post_init__(self) -> None:
        idx = np.asarray(self.index, dtype=np.int64)
        bit = np.asarray(self.bit, dtype=np.int64)
        if idx.shape != (self.rows, self.cols, len(self.holder)) or bit.shape != (self.rows, self.cols):
            raise InvalidValue("layout arrays do not match the matrix shape",
                               values={"index": idx.shape, "bit": bit.shape, "rows": self.rows, "cols": self.cols,
                                       "holder": self.holder})
        idx.setflags(write=False)
        bit.setflags(write=False)
        object.__setattr__(self, "index", idx)
        object.__setattr__(self, "bit", bit)
        object.__setattr__(self, "params", dict(self.params))

    # ---- queries -------------------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    def held(self) -> np.ndarray:
        """Boolean (rows, cols): which elements have a holder."""
        return np.all(self.index >= 0, axis=-1)

    def where(self, row: int, col: int) -> dict:
        """Element (row, col) -> its holder: ``{holder names..., "bits": (lo, hi)}`` (hi inclusive)."""
        self._check_element(row, col)
        h = self.index[row, col]
        if np.any(h < 0):
            return {"row": row, "col": col, "held": False}
        lo = int(self.bit[row, col])
        out = {"row": row, "col": col}
        out.update({n: int(v) for n, v in zip(self.holder, h)})
        out["bits"] = (lo, lo + self.element_bits - 1)
        return out

    def what(self, *coords: int, **named: int) -> list[dict]:
        """Holder -> the elements it keeps, lowest bits first.

        Coordinates are given positionally (outermost first; a prefix selects everything below it, e.g. a
        work-item alone) or by name (``work_item=3``).
        """
        sel = dict(zip(self.holder, coords))
        for k, v in named.items():
            if k not in self.holder:
                raise InvalidValue(f"this layout's holders are {self.holder}", rule="holder coordinate names",
                                   values={"coordinate": k})
            sel[k] = v
        if len(coords) > len(self.holder):
            raise InvalidValue("more coordinates than the holder has", values={"holder": self.holder,
                                                                                "coords": coords})
        mask = self.held()
        for k, v in sel.items():
            mask &= self.index[..., self.holder.index(k)] == int(v)
        rs, cs = np.nonzero(mask)
        recs = [self.where(int(r), int(c)) for r, c in zip(rs, cs)]
        recs.sort(key=lambda d: tuple(d[n] for n in self.holder) + (d["bits"][0],))
        return recs

    def records(self) -> Iterator[dict]:
        """Every element's :meth:`where`, row-major."""
        for r in range(self.rows):
            for c in range(self.cols):
                yield self.where(r, c)

    def holders(self) -> list[tuple[int, ...]]:
        """The distinct holders, sorted."""
        flat = self.index.reshape(-1, len(self.holder))
        flat = flat[np.all(flat >= 0, axis=1)]
        return [tuple(int(x) for x in h) for h in np.unique(flat, axis=0)]

    def extent(self) -> dict[str, int]:
        """How many of each holder coordinate the layout uses (max + 1)."""
        return {n: int(self.index[..., i].max()) + 1 for i, n in enumerate(self.holder)}

    def overlaps(self) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """Pairs of elements whose bits overlap in the same holder unit (an empty list for a valid map)."""
        seen: dict[tuple, tuple[int, int]] = {}
        bad = []
        for r in range(self.rows):
            for c in range(self.cols):
                h = tuple(int(x) for x in self.index[r, c])
                if min(h, default=0) < 0:
                    continue
                lo = int(self.bit[r, c])
                for b in range(lo, lo + self.element_bits):
                    key = h + (b,)
                    if key in seen and seen[key] != (r, c):
                        bad.append((seen[key], (r, c)))
                        break
                    seen[key] = (r, c)
        return bad

    def to_dict(self) -> dict:
        """Plain data (JSON-ready): the header and one record per element."""
        return {"layer": self.layer, "operand": self.operand, "rows": self.rows, "cols": self.cols,
                "element": self.element, "element_bits": self.element_bits, "holder": list(self.holder),
                "unit_bits": self.unit_bits, "params": dict(self.params), "title": self.title,
                "elements": [dict(d, bits=list(d["bits"])) if "bits" in d else d for d in self.records()]}

    def _check_element(self, row: int, col: int) -> None:
        if not (0 <= row < self.rows and 0 <= col < self.cols):
            raise InvalidValue(f"element ({row}, {col}) is outside the {self.rows} x {self.cols} matrix",
                               rule=f"{self.layer} {self.operand} is {self.rows} x {self.cols}",
                               values={"row": row, "col": col})

    def __repr__(self) -> str:
        return (f"Layout({self.layer} {self.operand}: {self.rows}x{self.cols} {self.element}, "
                f"holder={self.holder}, unit_bits={self.unit_bits}, params={dict(self.params)})")


def from_function(layer: str, operand: str, rows: int, cols: int, element: str, element_bits: int,
                  holder: tuple[str, ...], unit_bits: int, fn, **kw) -> Layout:
    """Build a :class:`Layout` from ``fn(row, col) -> (holder coords..., bit)`` (for maps stated per element)."""
    idx = np.empty((rows, cols, len(holder)), dtype=np.int64)
    bit = np.empty((rows, cols), dtype=np.int64)
    for r in range(rows):
        for c in range(cols):
            *h, b = fn(r, c)
            idx[r, c] = h
            bit[r, c] = b
    return Layout(layer, operand, rows, cols, element, element_bits, tuple(holder), idx, bit, unit_bits, **kw)
