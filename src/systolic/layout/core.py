"""The layout object: which holder keeps each element of a logical matrix (DESIGN.md "layout" layer).

A :class:`Layout` is data: for every element (row, col) of one operand's *logical* matrix (B is K x N before any
VNNI packing, A is M x K, the accumulator M x N) it records the holder that keeps it and the bits inside that
holder. A holder is a tuple of integer coordinates whose names the layout declares, outermost first:

======================  ===============================  ===========  ====================================
layer                   ``holder``                       ``unit_bits``  example
======================  ===============================  ===========  ====================================
AMX tile                ``("tile_row", "byte")``         8            B of TDPBF16PS: (k//2, 4*n + 2*(k%2))
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


def _image_bytes(image) -> np.ndarray:
    """A flat image as uint8: bytes-like objects as they are, integer arrays only when every value is a byte
    (converting 256 or -1 to uint8 would wrap silently)."""
    if isinstance(image, (bytes, bytearray, memoryview)):
        return np.frombuffer(image, dtype=np.uint8)
    try:
        a = np.asarray(image)
    except (TypeError, ValueError) as e:
        raise InvalidValue(f"an image is bytes or an array of byte values ({e})", rule="gather(image): uint8 bytes",
                           values={"type": type(image).__name__}) from None
    if a.dtype == np.uint8:
        return a.reshape(-1)
    if a.dtype.kind not in "iu" or (a.size and (int(a.min()) < 0 or int(a.max()) > 255)):
        raise InvalidValue("an image is bytes or an array of byte values (integers 0..255)",
                           rule="gather(image): uint8 bytes",
                           values={"dtype": str(a.dtype), **({"min": int(a.min()), "max": int(a.max())}
                                                             if a.dtype.kind in "iu" and a.size else {})})
    return a.astype(np.uint8).reshape(-1)


def check_coordinates(row, col) -> None:
    """Element coordinates are integers (not bools): a float or a bool would index numpy arrays by accident
    (True is 1, 1.9 truncates) or fail there bare."""
    for name, v in (("row", row), ("col", col)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise InvalidValue(f"element coordinates are integers, not {type(v).__name__}",
                               rule="row and col are integers", values={name: v})


def check_layout(L, verb: str) -> None:
    """The verbs (detail, where, what, table, svg) read a :class:`Layout`; anything else is refused by name,
    not left to fail on a missing attribute."""
    if not isinstance(L, Layout):
        raise InvalidValue(f"{verb} takes a Layout (systolic.layout.get(...)), not {type(L).__name__}",
                           rule="layout verbs take a systolic.layout.Layout", values={"got": type(L).__name__})


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
        row, col = int(row), int(col)
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
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise InvalidValue(f"holder coordinate {k} must be an integer", rule="holder coordinates",
                                   values={k: repr(v)})
            col = self.index[..., self.holder.index(k)][self.held()]
            lo, hi = (min(0, int(col.min())), int(col.max())) if col.size else (0, -1)
            if k in ("work_item", "lane"):   # a work-item of the sub-group may hold nothing (M=1): still valid
                n = self.params.get("sub_group_size", self.params.get("sg_size"))
                hi = max(hi, int(n) - 1) if isinstance(n, (int, np.integer)) else hi
            if not lo <= int(v) <= hi:   # outside the operand: an error, as where() does for elements
                raise InvalidValue(f"holder {k}={int(v)} is outside {self.layer} {self.operand} ({k} in "
                                   f"[{lo}, {hi}])", rule=f"holders of this operand: {k} in [{lo}, {hi}]",
                                   values={k: int(v), "range": [lo, hi]})
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
        """Pairs of elements whose bits overlap in the same holder (an empty list for a valid map).

        Bits are compared at their absolute position inside the holder's outer coordinates
        (innermost unit * ``unit_bits`` + bit), so a 16-bit element in byte 4 and another in byte 5 do overlap.
        """
        if not self._maybe_overlaps():
            return []
        seen: dict[tuple, tuple[int, int]] = {}
        bad = []
        for r in range(self.rows):
            for c in range(self.cols):
                h = tuple(int(x) for x in self.index[r, c])
                if min(h, default=0) < 0:
                    continue
                lo = h[-1] * self.unit_bits + int(self.bit[r, c])
                for b in range(lo, lo + self.element_bits):
                    key = h[:-1] + (b,)
                    if key in seen and seen[key] != (r, c):
                        bad.append((seen[key], (r, c)))
                        break
                    seen[key] = (r, c)
        return bad

    def _maybe_overlaps(self) -> bool:
        """Vectorised pre-check for :meth:`overlaps`: False when no two held elements share a bit."""
        held = self.held()
        if not held.any():
            return False
        h = self.index[held]                                            # (n, len(holder))
        lo = h[:, -1] * self.unit_bits + self.bit[held]
        keys = np.concatenate([h[:, :-1], lo[:, None]], axis=1)
        order = np.lexsort(keys.T[::-1])
        k = keys[order]
        same_prefix = np.all(k[1:, :-1] == k[:-1, :-1], axis=1)
        return bool(np.any(same_prefix & (k[1:, -1] < k[:-1, -1] + self.element_bits)))

    # ---- the register/tile image (needs params["unit_strides"]) ---------------------------------------------
    @property
    def unit_strides(self) -> tuple[int, ...]:
        """Units one step of each holder coordinate moves in the operand's flat image (``params``)."""
        st = self.params.get("unit_strides")
        if st is None or len(st) != len(self.holder):
            raise InvalidValue("this layout has no flat image (params['unit_strides'] is not set)",
                               rule="scatter/gather/linear_bits need one unit stride per holder coordinate",
                               values={"layer": self.layer, "operand": self.operand, "holder": self.holder})
        return tuple(int(x) for x in st)

    def linear_bits(self) -> np.ndarray:
        """int64 (rows, cols): each element's lowest bit in the operand's flat image (-1 where not held)."""
        st = np.asarray(self.unit_strides, dtype=np.int64)
        pos = (self.index * st).sum(axis=-1) * self.unit_bits + self.bit
        return np.where(self.held(), pos, -1)

    def image_bits(self) -> int:
        """Bits of the flat image: up to the end of the last whole unit any element touches."""
        pos = self.linear_bits()
        end = int((pos + self.element_bits).max()) if pos.size else 0
        return -(-end // self.unit_bits) * self.unit_bits

    def scatter(self, bits, *, nbytes: int | None = None) -> np.ndarray:
        """Raw element bits (rows x cols, unsigned) -> the operand's flat image (uint8, little-endian).

        The image is ``nbytes`` long (default: :meth:`image_bits` rounded up to bytes); unheld bits are 0.
        """
        v = np.asarray(bits)
        if v.shape != self.shape:
            raise InvalidValue("element bits must have the layout's shape", rule=f"{self.rows} x {self.cols}",
                               values={"shape": v.shape})
        if v.dtype.kind not in "biu":
            # bit patterns are integers; a float or an object would be converted (truncated) or fail bare
            raise InvalidValue("element bits are an integer array (raw bit patterns)",
                               rule="scatter(bits): an integer array", values={"dtype": str(v.dtype)})
        if nbytes is not None and (isinstance(nbytes, (bool, np.bool_)) or not isinstance(nbytes, (int, np.integer))
                                   or nbytes < 0):
            raise InvalidValue("nbytes is a non-negative integer", rule="scatter(nbytes=): an integer >= 0",
                               values={"nbytes": nbytes})
        v = v.astype(np.uint64) & np.uint64((1 << self.element_bits) - 1)
        total = self.image_bits() if nbytes is None else 8 * int(nbytes)
        flat = np.zeros(total, dtype=np.uint8)
        pos = self.linear_bits()
        held = pos >= 0
        shifts = np.arange(self.element_bits, dtype=np.uint64)
        b = ((v[held][:, None] >> shifts) & np.uint64(1)).astype(np.uint8)
        idx = pos[held][:, None] + shifts.astype(np.int64)
        if idx.size and idx.max() >= total:
            raise InvalidValue("the image is too small for this layout", values={"nbytes": nbytes,
                                                                                "needs_bits": int(idx.max()) + 1})
        flat[idx.ravel()] = b.ravel()
        return np.packbits(flat, bitorder="little")

    def gather(self, image) -> np.ndarray:
        """The operand's flat image (uint8) -> raw element bits (uint32, rows x cols; 0 where not held)."""
        img = _image_bytes(image)
        flat = np.unpackbits(img, bitorder="little")
        pos = self.linear_bits()
        out = np.zeros(self.shape, dtype=np.uint64)
        held = pos >= 0
        if held.any():
            shifts = np.arange(self.element_bits, dtype=np.int64)
            idx = pos[held][:, None] + shifts
            if idx.max() >= flat.size:
                raise InvalidValue("the image is too small for this layout",
                                   values={"image_bytes": img.size, "needs_bits": int(idx.max()) + 1})
            out[held] = (flat[idx].astype(np.uint64) << shifts.astype(np.uint64)).sum(axis=1)
        return out.astype(np.uint32)

    # ---- the SIMD view: which lane's component holds the element (params "lanes", "lane_bits") ----------------
    def lane_of(self, row: int, col: int) -> dict | None:
        """For register layouts read by a SIMD-N sub-group: ``{"component", "lane", "lane_bits"}``.

        Component j of lane i holds image bits ``[(j*N + i)*w, (j*N + i + 1)*w)`` with ``w = lane_bits`` (the
        structure-of-arrays rule of SPV_INTEL_subgroup_matrix_multiply_accumulate, "Mapping Matrix Data to
        Invocations"). None when the layout has no SIMD view.
        """
        n, w = self.params.get("lanes"), self.params.get("lane_bits")
        if not n or not w or "unit_strides" not in self.params:
            return None
        self._check_element(row, col)
        pos = int(self.linear_bits()[row, col])
        if pos < 0:
            return None
        return {"component": pos // (n * w), "lane": (pos // w) % n, "lane_bits": int(w),
                "bits_in_component": (pos % w, pos % w + self.element_bits - 1)}

    def lanes(self) -> np.ndarray | None:
        """int64 (rows, cols, 2): (component, lane) of every element under the SIMD view, or None."""
        n, w = self.params.get("lanes"), self.params.get("lane_bits")
        if not n or not w or "unit_strides" not in self.params:
            return None
        pos = self.linear_bits()
        return np.stack([pos // (n * w), (pos // w) % n], axis=-1)

    def to_dict(self) -> dict:
        """Plain data (JSON-ready): the header and one record per element."""
        return {"layer": self.layer, "operand": self.operand, "rows": self.rows, "cols": self.cols,
                "element": self.element, "element_bits": self.element_bits, "holder": list(self.holder),
                "unit_bits": self.unit_bits, "params": dict(self.params), "title": self.title,
                "elements": [dict(d, bits=list(d["bits"])) if "bits" in d else d for d in self.records()]}

    def _check_element(self, row: int, col: int) -> None:
        check_coordinates(row, col)
        if not (0 <= row < self.rows and 0 <= col < self.cols):
            raise InvalidValue(f"element ({row}, {col}) is outside the {self.rows} x {self.cols} matrix",
                               rule=f"{self.layer} {self.operand} is {self.rows} x {self.cols}",
                               values={"row": row, "col": col})

    # ---- notebooks: the picture (systolic.layout.picture, imported when asked for) -------------------------
    def _repr_svg_(self) -> str:
        from .picture import layout_svg
        return layout_svg(self)

    def _repr_html_(self) -> str:
        return f"<div><pre>{self!r}</pre>{self._repr_svg_()}</div>"

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
