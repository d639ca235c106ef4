"""The machinery under both joint_matrix APIs: element types, matrix objects, slices and the group operations.

A :class:`JointMatrix` holds what its work-items hold: ``slices[w, i]`` is element ``i`` of work-item ``w``'s
slice, placed by the layout of :func:`layout` (IGC's ``DEFINE_GET_COORD`` on XMX, the whole matrix on AMX's
sub-group of one). Group operations gather the slices of a sub-group into the logical matrix through that same
layout, act, and scatter back; ``joint_matrix_apply`` hands each work-item its own slice with the coordinates
from that layout. There is no other copy of the map.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass

import numpy as np

from .. import types as T
from ..errors import (
    InvalidValue,
    MemoryFault,
    UnsupportedCombination,
    UnsupportedOperation,
)
from ..layout import Layout
from ..layout.joint_matrix import slice_layout
from .devices import Device, get_device, near_combinations
from .simt import (
    Divergence,
    JointMatrixLike,
    PerItem,
    USMPtrLike,
    Varying,
    current_launch,
)

__all__ = ["JointMatrix", "MatrixGroup", "Spec", "TypeInfo", "declared_layout", "layout", "tf32", "type_info"]


class tf32:
    """``precision::tf32``: a matrix element type stored as float (RNE rounding via ``round_to_tf32``)."""


@dataclass(frozen=True)
class TypeInfo:
    name: str          # matrix_type name: sint8, uint8, sint32, fp32, fp16, bf16, tf32
    dtype: np.dtype
    bits: int
    prec: str          # systolic.types name: s8, u8, int32, fp32, fp16, bf16, tf32


_BY_NAME = {
    "sint8": ("int8", 8, "s8"), "uint8": ("uint8", 8, "u8"), "sint32": ("int32", 32, "int32"),
    "fp32": ("float32", 32, "fp32"), "fp16": ("float16", 16, "fp16"), "bf16": ("bfloat16", 16, "bf16"),
    "tf32": ("float32", 32, "tf32"),
}
_DTYPE_NAME = {np.dtype(np.int8): "sint8", np.dtype(np.uint8): "uint8", np.dtype(np.int32): "sint32",
               np.dtype(np.float32): "fp32", np.dtype(np.float16): "fp16"}


@functools.cache
def _info(name: str) -> TypeInfo:
    dt, bits, prec = _BY_NAME[name]
    dtype = T.get("bf16").dtype if dt == "bfloat16" else np.dtype(dt)
    return TypeInfo(name, dtype, bits, prec)


def type_info(t) -> TypeInfo:
    """The element type ``t``: a numpy / ml_dtypes type, ``precision.tf32``, or a matrix_type name."""
    if t is tf32 or (isinstance(t, str) and t == "tf32"):
        return _info("tf32")
    if isinstance(t, str) and t in _BY_NAME:
        return _info(t)
    try:
        dt = np.dtype(t)
    except (TypeError, ValueError, SyntaxError):   # np.dtype(np) is a ValueError, np.dtype("(") a SyntaxError
        dt = None
    if dt is not None:
        if dt == T.get("bf16").dtype:
            return _info("bf16")
        if dt in _DTYPE_NAME:
            return _info(_DTYPE_NAME[dt])
    from ..suggest import did_you_mean
    hint = did_you_mean(t, [*_BY_NAME, "tf32", "bfloat16", "float16", "float32", "int8", "uint8", "int32"]) \
        if isinstance(t, str) else ""
    raise InvalidValue(f"{t!r} is not a joint_matrix element type{hint}",
                       rule="int8, uint8, int32, float32, float16, ml_dtypes.bfloat16, precision.tf32",
                       values={"type": repr(t)})


USES = ("a", "b", "accumulator")


def _use(u) -> str:
    s = getattr(u, "value", u)
    if s not in USES:
        raise InvalidValue(f"unknown matrix use {u!r}", rule="use.a, use.b, use.accumulator", values={"use": u})
    return s


def _lay(lay) -> str:
    s = getattr(lay, "value", lay)
    if s not in ("row_major", "col_major", "dynamic", "ext_intel_packed", "packed_a", "packed_b"):
        raise InvalidValue(f"unknown layout {lay!r}", rule="row_major, col_major, dynamic, ext_intel_packed",
                           values={"layout": lay})
    return s


@functools.cache
def _layout_cached(dev: str, tname: str, use: str, rows: int, cols: int, lay: str) -> Layout:
    rec = get_device(dev)
    ti = _info(tname)
    sg = rec.sub_group_size
    common = dict(element=ti.prec, operand=use, device=rec.name, layout=lay)
    if sg == 1:
        return slice_layout(rows, cols, sg_size=1, elem_bits=ti.bits, contrib_bits=ti.bits, **common)
    from .lower_xmx import k_step
    if use == "accumulator":
        return slice_layout(rows, cols, sg_size=sg, elem_bits=ti.bits, contrib_bits=ti.bits,
                            tile_rows=min(rows, 8), tile_cols=min(cols, sg), **common)
    ks = k_step(ti.prec)
    if use == "a":
        contrib = 32 if (sg == 8 or ti.bits == 32) else 16
        return slice_layout(rows, cols, sg_size=sg, elem_bits=ti.bits, contrib_bits=contrib,
                            tile_rows=min(rows, 8), tile_cols=min(cols, ks), **common)
    return slice_layout(rows, cols, sg_size=sg, elem_bits=ti.bits, contrib_bits=32, vnni=max(1, 32 // ti.bits),
                        tile_rows=min(rows, ks), tile_cols=min(cols, sg), **common)


def layout(device, T_, use, rows: int, cols: int, layout=None) -> Layout:
    """The per-work-item slice map of ``joint_matrix<sub_group, T, use, rows, cols, layout>`` on ``device``:
    a :class:`~systolic.layout.Layout` with holder ("work_item", "index").

    Raises :class:`UnsupportedCombination` (the device's combinations, the rows and cols given) for a declaration
    ``joint_matrix`` itself refuses. The map is the same for every memory layout of the operand, so ``layout``
    is not checked against the declaration rules here (:func:`declared_layout` does that for ``joint_matrix``)."""
    rec = get_device(device.record if hasattr(device, "record") else device)
    for v, n in ((rows, "rows"), (cols, "cols")):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
            raise InvalidValue(f"{n} must be a positive integer", values={n: v})
    # the register map does not depend on the memory layout: any layout name is taken (only recorded in the
    # map's params); joint_matrix(...) applies the declaration rules of the layout (declared_layout)
    lay = "dynamic" if layout is None else _lay(layout)
    # the same declaration rule joint_matrix(...) enforces: only the shapes of the device's combinations have a
    # layout (this also bounds rows and cols, so no request builds a huge map)
    spec = Spec(rec, type_info(T_), _use(use), int(rows), int(cols), lay)
    _check_declaration(spec)
    try:
        return _layout_cached(rec.name, spec.t.name, spec.use, spec.rows, spec.cols, lay)
    except InvalidValue as exc:
        raise UnsupportedCombination(f"{rec.name} has no joint_matrix layout for this shape: {exc.message}",
                                     rule=exc.rule, values=dict(exc.values, device=rec.name)) from None


@dataclass(frozen=True)
class Spec:
    device: Device
    t: TypeInfo
    use: str
    rows: int
    cols: int
    layout: str

    @property
    def map(self) -> Layout:
        return _layout_cached(self.device.name, self.t.name, self.use, self.rows, self.cols, self.layout)

    def text(self) -> str:
        return f"joint_matrix<{self.t.name}, use::{self.use}, {self.rows}, {self.cols}, layout::{self.layout}>"


def _check_declaration(spec: Spec, anysize: bool = False) -> None:
    """Some combination of the device admits this operand (its type and its dimensions)."""
    _declaration_ok(spec, anysize)


@functools.cache
def _declaration_ok(spec: Spec, anysize: bool) -> bool:
    rec = spec.device
    ok = []
    if anysize:   # the 2021 revision: any size; the type must still be one the device multiplies or accumulates
        ok = [spec.t.name in c.types() for c in rec.combinations]
    for c in ([] if anysize else rec.combinations):
        if spec.use == "a" and c.atype == spec.t.name:
            ok.append(anysize or _dim_ok(spec.rows, c.max_msize, c.msize) and _dim_ok(spec.cols, c.max_ksize, c.ksize))
        elif spec.use == "b" and c.btype == spec.t.name:
            ok.append(anysize or _dim_ok(spec.rows, c.max_ksize, c.ksize) and _dim_ok(spec.cols, c.max_nsize, c.nsize))
        elif spec.use == "accumulator" and spec.t.name in (c.ctype, c.dtype):
            ok.append(anysize or _dim_ok(spec.rows, c.max_msize, c.msize) and _dim_ok(spec.cols, c.max_nsize, c.nsize))
    if not any(ok):
        gone = [c for c in rec.not_lowered if spec.t.name in c.types()]
        raise UnsupportedCombination(
            f"{rec.name} supports no {spec.text()}" + (
                f" (intel/llvm lists {gone[0]}, but no {rec.name} instruction computes it: AMX-TF32 left the ISE)"
                if gone else ""),
            rule=near_combinations(rec, (spec.t.name,)),
            values={"device": rec.name, "type": spec.t.name, "use": spec.use, "rows": spec.rows, "cols": spec.cols})
    return True


def _dim_ok(v, mx, fixed) -> bool:
    return v == fixed if fixed else 1 <= v <= mx


#: sycl_ext_oneapi_matrix, "Matrix Layout" (and sycl_ext_intel_matrix's ``layout::ext_intel_packed``)
RULE_LAYOUT_AB = ("sycl_ext_oneapi_matrix, Matrix Layout: \"The A and B matrices can be either `layout::row_major` "
                  "or `layout::col_major` (but not `layout::dynamic`)\"; sycl_ext_intel_matrix, New Layout Type: "
                  "`layout::ext_intel_packed`")
RULE_LAYOUT_NO_DEFAULT = ("sycl_ext_oneapi_matrix, Matrix Layout: \"When `Use` has any other value, there is no "
                          "default for `Layout`, and the application must specify one explicitly\"")
RULE_LAYOUT_ACC = ("sycl_ext_oneapi_matrix, Matrix Layout: \"The C and D matrices must be `layout::dynamic`\" ... "
                   "\"it is invalid to specify any other value for `Layout`\"")
RULE_PACKED_A = ("sycl_ext_intel_matrix, Packed Layout Format: \"This layout applies only to the A and B "
                 "matrices\"; packed A is not modelled (docs/sycl.md, What is not modelled)")


def declared_layout(use: str, layout) -> str:
    """The ``Layout`` template argument of a ``joint_matrix<Group, T, use, Rows, Cols, Layout>`` (today's API).

    sycl_ext_oneapi_matrix, "Matrix Layout": the accumulator's layout is ``layout::dynamic`` (its default; "it is
    invalid to specify any other value"); A and B take ``row_major`` or ``col_major`` "but not
    ``layout::dynamic``", and "there is no default for ``Layout``" for them; sycl_ext_intel_matrix adds
    ``ext_intel_packed`` for A and B. Packed A is refused (:class:`UnsupportedOperation`): IGC's joint_matrix
    built-ins (``IBiF_matrix.cl``) load a packed-memory operand only for B (``_PackedB_PackedB``; A comes from
    row- or column-major memory), so there is no lowering of it to model."""
    if use == "accumulator":
        lay = "dynamic" if layout is None else _lay(layout)
        if lay != "dynamic":
            raise InvalidValue(f"an accumulator's layout is layout::dynamic, not layout::{lay}",
                               rule=RULE_LAYOUT_ACC, values={"use": use, "layout": lay})
        return lay
    if layout is None:
        raise InvalidValue(f"joint_matrix of use::{use} has no default layout: give layout.row_major, "
                           "layout.col_major or layout.ext_intel_packed", rule=RULE_LAYOUT_NO_DEFAULT,
                           values={"use": use, "layout": None})
    lay = _lay(layout)
    if lay not in ("row_major", "col_major", "ext_intel_packed"):
        raise InvalidValue(f"a use::{use} matrix is row_major, col_major or ext_intel_packed, not {lay}"
                           + (" (layout::dynamic is the accumulator's)" if lay == "dynamic" else
                              " (a 2021 matrix_layout name: systolic.sycl.matrix_2021)"),
                           rule=RULE_LAYOUT_AB, values={"use": use, "layout": lay})
    if lay == "ext_intel_packed" and use == "a":
        raise UnsupportedOperation("joint_matrix<..., use::a, ..., layout::ext_intel_packed>: packed A is not "
                                   "modelled (IGC's joint_matrix built-ins load packed memory for B only)",
                                   rule=RULE_PACKED_A, values={"use": use, "layout": lay})
    return lay


class JointMatrix(JointMatrixLike):
    """``joint_matrix<sub_group, T, use, Rows, Cols, Layout>``: the slices of the work-items it was declared by."""

    __slots__ = ("launch", "pending", "prov", "slices", "spec", "tag")

    def __init__(self, sg, T_, use, rows, cols, layout=None, *, anysize: bool = False) -> None:
        L = sg.launch
        rec = L.device.get_device().record
        u = _use(use)
        # the 2021 revision (anysize) has its own matrix_layout rules (matrix_2021 checks them)
        lay = _lay(layout) if anysize else declared_layout(u, layout)
        for v, n in ((rows, "rows"), (cols, "cols")):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InvalidValue(f"joint_matrix {n} must be a positive integer (a template argument)",
                                   values={n: v})
        self.spec = Spec(rec, type_info(T_), u, int(rows), int(cols), lay)
        _check_declaration(self.spec, anysize)
        self.launch = L
        n = L.n_items if sg._wi is None else 1
        length = self.spec.map.params["slice_length"]
        self.slices = np.zeros((n, length), dtype=self.spec.t.dtype)
        self.pending = None   # a deferred chain of products (see MatrixGroup.defer)
        self.prov = None      # per sub-group: equal ids = equal contents (set by loads; see batch.key_ids)
        self.tag = None       # the 2021 revision's matrix_layout

    def __repr__(self) -> str:
        return self.spec.text()

    def group_vectorised(self, nsg: int, s: int) -> MatrixGroup:
        return MatrixGroup.vectorised(self, nsg, s)

    @classmethod
    def group_per_item(cls, groups: list) -> MatrixGroup:
        return MatrixGroup.per_item_groups(groups)


class MatrixGroup:
    """The joint_matrix of every sub-group in a batch: logical values (nsg, rows, cols) <-> the slices."""

    def __init__(self, spec: Spec, view: np.ndarray, commit=None, obj=None) -> None:
        self.spec, self.view, self._commit, self.obj = spec, view, commit, obj
        m = spec.map
        self.wi_of = m.index[..., 0]
        self.ix_of = m.index[..., 1]

    @classmethod
    def vectorised(cls, m: JointMatrix, nsg: int, s: int) -> MatrixGroup:
        return cls(m.spec, m.slices.reshape(nsg, s, -1), obj=m)

    @classmethod
    def per_item(cls, objs: list) -> MatrixGroup:
        return cls.per_item_groups([objs])

    @classmethod
    def per_item_groups(cls, groups: list) -> MatrixGroup:
        """Sub-groups given as their work-items' own joint_matrix objects (per-work-item execution)."""
        spec = groups[0][0].spec
        for objs in groups:
            for o in objs:
                if not isinstance(o, JointMatrix) or o.spec != spec:
                    raise InvalidValue("work-items of one sub-group passed different joint_matrix types",
                                       values={"types": sorted({x.spec.text() if isinstance(x, JointMatrix)
                                                                else repr(x) for x in objs})})
        view = np.stack([np.stack([o.slices[0] for o in objs]) for objs in groups])

        def commit(v):
            for g, objs in enumerate(groups):
                for j, o in enumerate(objs):
                    o.slices[0] = v[g, j]
        return cls(spec, view, commit)

    # ---- deferred products: D = C + A1 B1 + A2 B2 + ... kept as its factors until someone reads D.
    # Only where computing the chain as one engine GEMM over the concatenated K gives the same bits as the
    # separate products (the caller decides: fp32/int32 accumulators, whole DPAS / 64-byte tile K steps).
    def pending(self):
        return None if self.obj is None else self.obj.pending

    def defer(self, base, a, b, finish, ka=None, kb=None) -> None:
        """This matrix := ``base`` + a @ b, evaluated later by ``finish(base, [a...], [b...], keys_a, keys_b)``."""
        self.obj.pending = {"base": base, "a": [a], "b": [b], "finish": finish, "ka": [ka], "kb": [kb]}
        self.obj.launch.deferred[id(self.obj)] = self.obj

    def defer_more(self, prev: dict, a, b, ka=None, kb=None) -> None:
        self.obj.pending = {"base": prev["base"], "a": prev["a"] + [a], "b": prev["b"] + [b],
                            "finish": prev["finish"], "ka": prev["ka"] + [ka], "kb": prev["kb"] + [kb]}
        self.obj.launch.deferred[id(self.obj)] = self.obj

    @property
    def prov(self):
        return None if self.obj is None else self.obj.prov

    def set_prov(self, ids) -> None:
        if self.obj is not None:
            self.obj.prov = ids

    def _materialise(self) -> None:
        """Compute this matrix's deferred chain - together with every other deferred chain of the launch that
        has the same types and K steps (each accumulator of a sub-group's cache block), as one batch."""
        p = self.obj.pending
        L = self.obj.launch

        def sig(q):
            return (q["key"], tuple(x.shape[1:] for x in q["a"]), tuple(x.shape[1:] for x in q["b"]))
        mine = sig(p)
        group = [o for o in L.deferred.values() if o.pending is not None and sig(o.pending) == mine]
        if self.obj not in group:
            group.append(self.obj)
        for o in group:
            L.deferred.pop(id(o), None)
        pend = [o.pending for o in group]
        for o in group:
            o.pending = None
        n = len(p["a"])

        def keys(name):
            cols = []
            for j in range(n):
                ks = [q[name][j] for q in pend]
                if any(k is None for k in ks):
                    return None
                cols.append(np.concatenate(ks))
            return np.stack(cols, axis=1)
        cat = (lambda xs: xs[0]) if len(pend) == 1 else np.concatenate
        base = cat([q["base"] for q in pend])
        As = [cat([q["a"][j] for q in pend]) for j in range(n)]
        Bs = [cat([q["b"][j] for q in pend]) for j in range(n)]
        vals = np.asarray(p["finish"](base, As, Bs, keys("ka"), keys("kb")))
        start = 0
        for o, q in zip(group, pend):
            k = q["base"].shape[0]
            g = self if o is self.obj else MatrixGroup.vectorised(o, k, o.slices.shape[0] // k)
            g.view[:, g.wi_of, g.ix_of] = vals[start:start + k].astype(g.spec.t.dtype, copy=False)
            start += k

    def get(self) -> np.ndarray:
        if self.obj is not None and self.obj.pending is not None:
            self._materialise()
        return self.view[:, self.wi_of, self.ix_of]

    def set_all(self, value) -> None:
        """Every slot := ``value`` (for layouts whose slices hold exactly the matrix's elements)."""
        if self.obj is not None:
            self.obj.pending = None
            self.obj.prov = None
        self.view[...] = value
        if self._commit is not None:
            self._commit(self.view)

    def set(self, values) -> None:
        if self.obj is not None:
            self.obj.pending = None
            self.obj.prov = None
        self.view[:, self.wi_of, self.ix_of] = np.asarray(values).astype(self.spec.t.dtype, copy=False)
        if self._commit is not None:
            self._commit(self.view)


# ------------------------------------------------------------------------------------- memory access

@functools.lru_cache(maxsize=256)
def mem_rowcol(spec: Spec, lay: str) -> tuple[np.ndarray, np.ndarray]:
    """(memory row, memory column) of each logical element (rows x cols) relative to the first one, for a
    load/store of layout ``lay``: memory is rows ``stride`` elements apart."""
    r = np.arange(spec.rows, dtype=np.int64)[:, None]
    c = np.arange(spec.cols, dtype=np.int64)[None, :]
    r, c = np.broadcast_arrays(r, c)
    if lay == "row_major":
        return r, c
    if lay == "col_major":
        return c, r
    if lay in ("ext_intel_packed", "packed_b", "packed_a"):
        vf = max(1, 32 // spec.t.bits)
        if spec.use == "a" or lay == "packed_a":
            # A packed (the AMX col-major case, seed "VNNI"): K/vf rows of M*vf, vf K values per m
            return c // vf, r * vf + c % vf
        return r // vf, c * vf + r % vf          # B: K/vf rows of N*vf, vf consecutive K per column
    raise InvalidValue(f"layout {lay} cannot be loaded or stored", values={"layout": lay})


def mem_index(spec: Spec, offs: np.ndarray, stride, lay: str) -> np.ndarray:
    """Element indices (nsg, rows, cols) of each logical element in memory for a load/store of ``lay``."""
    mr, mc = mem_rowcol(spec, lay)
    st = np.asarray(stride, dtype=np.int64).reshape(-1, 1, 1)
    off = np.asarray(offs, dtype=np.int64).reshape(-1, 1, 1)
    return off + mr[None] * st + mc[None]


def check_size_t(name: str, *, _rule: str | None = None, **args) -> None:
    """Arguments declared ``size_t`` in intel/llvm (sycl/ext/oneapi/matrix/matrix-intel.hpp: the stride, and the
    checked forms' ``Height, Width, CoordX, CoordY``; ``joint_matrix_prefetch``'s ``Rows, Cols, stride``):
    integers >= 0 (a negative one has no size_t value). ``_rule``: the rule to name, if not the checked forms'."""
    for arg, v in args.items():
        a = np.asarray(v)
        if a.dtype.kind not in "iu" or (a.size and int(a.min()) < 0):
            raise InvalidValue(f"{name}: {arg} must be a non-negative integer",
                               rule=_rule or "sycl_ext_intel_matrix: stride, height, width, x, y are size_t "
                                             "(integers >= 0)",
                               values={arg: a.tolist()[:4] if a.ndim else a.item()})


def min_stride(spec: Spec, lay: str) -> int:
    """The smallest legal stride (leading dimension, in elements) of a load/store of ``lay``: one memory row of
    the matrix (row_major: cols; col_major: rows; ext_intel_packed B: cols * VNNI factor)."""
    return int(mem_rowcol(spec, lay)[1].max()) + 1


def check_stride(stride, spec: Spec, lay: str | None = None, name: str = "joint_matrix load/store",
                 row_length=None) -> None:
    """``stride`` is a size_t at least one memory row long (sycl_ext_oneapi_matrix: the leading dimension;
    rows that overlap would make a store write one element twice). ``row_length``: the checked forms' width,
    else the tile's own memory row (:func:`min_stride`)."""
    check_size_t(name, stride=stride)
    s = np.asarray(stride)
    if lay is None or not s.size:
        return
    need = np.asarray(min_stride(spec, lay) if row_length is None else row_length, dtype=np.int64)
    if np.any(s < need):
        raise InvalidValue(f"{name}: stride {s.reshape(-1)[0]} is shorter than a row in memory ({lay}: "
                           f"{np.max(need)} elements)",
                           rule="sycl_ext_oneapi_matrix: stride is the leading dimension in elements, >= the "
                                "row length in memory (row_major: cols, col_major: rows, ext_intel_packed: cols * "
                                "VNNI factor; checked forms: width)",
                           values={"stride": s.tolist()[:4] if s.ndim else s.item(), "layout": lay,
                                   "row_length": int(np.max(need))})


def gather(mem: np.ndarray, idx: np.ndarray, name: str) -> np.ndarray:
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= mem.size):
        raise MemoryFault(f"{name} reads outside the USM allocation", rule="USM allocation bounds",
                          values={"allocation_elements": int(mem.size), "min_index": int(idx.min()),
                                  "max_index": int(idx.max())})
    return mem[idx]


def scatter(mem: np.ndarray, idx: np.ndarray, values: np.ndarray, name: str) -> None:
    if not mem.flags.writeable:
        raise InvalidValue(f"{name} writes to a read-only array (wrapped by sycl.ptr)",
                           rule="a kernel writes only writable memory", values={"elements": int(mem.size)})
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= mem.size):
        raise MemoryFault(f"{name} writes outside the USM allocation", rule="USM allocation bounds",
                          values={"allocation_elements": int(mem.size), "min_index": int(idx.min()),
                                  "max_index": int(idx.max())})
    L = current_launch()
    vals = np.asarray(values).astype(mem.dtype, copy=False)
    if L is not None:
        L.write(mem, idx, vals)
    else:
        mem[idx] = vals


def convert(values: np.ndarray, ti: TypeInfo) -> np.ndarray:
    """Values as elements of ``ti``, as the C++ does it: ``joint_matrix_fill`` ``static_cast``s its value to the
    storage element type, ``joint_matrix_apply`` assigns to a ``T&``, ``joint_matrix_copy`` converts elementwise.

    * integer targets: an integer wraps modulo 2**bits (C++ [conv.integral]); a float truncates toward zero
      ([conv.fpint]). A float whose truncated value the target cannot represent (NaN, inf, 2.0**40 for int32)
      is undefined behaviour in C++ ([conv.fpint] p1): it raises :class:`InvalidValue` naming the value, as the
      project refuses undefined behaviour elsewhere rather than guess a result (the tile compiler's LLVM rules);
    * float targets: the value becomes a ``float`` first (RNE; out of range -> +-inf quietly, as on an IEEE host),
      because ``sycl::half`` and ``bfloat16`` are constructed from ``float`` only and tf32 is stored as float;
      then RNE to half / bfloat16. Conversions: :func:`systolic.types.convert`.
    """
    v = np.asarray(values)
    if v.dtype == ti.dtype:
        return v
    floating = v.dtype.kind == "f" or (v.dtype.kind == "V" and "float" in v.dtype.name)    # ml_dtypes floats
    if ti.dtype.kind in "iu":
        if not floating:
            if v.dtype.kind == "O" and all(isinstance(x, (int, np.integer)) for x in v.flat):
                # Python ints beyond 64 bits: [conv.integral] is modular for any source width (exact here)
                m, half = 1 << ti.bits, 1 << (ti.bits - 1)
                w = [int(x) % m for x in v.flat]
                if ti.dtype.kind == "i":
                    w = [x - m if x >= half else x for x in w]
                return np.array(w, dtype=ti.dtype).reshape(v.shape)
            return v.astype(ti.dtype)
        _check_fpint(v, ti)
        return T.convert(v, ti.prec, "rtz")
    if v.dtype == np.float32:
        f = v
    elif floating and v.dtype.itemsize < 4:     # half, bfloat16, fp8: widen exactly (a numpy / ml_dtypes cast)
        f = v.astype(np.float32)
    else:                                       # double, integers: round to float
        f = T.convert(v, "fp32")
    if ti.prec in ("fp32", "tf32"):
        return f
    # bfloat16: NaN as ml_dtypes gives it (the default quiet NaN with the sign)
    return T.convert(f, ti.prec, nan="canonical" if ti.prec == "bf16" else "quiet")


def _check_fpint(v: np.ndarray, ti: TypeInfo) -> None:
    """C++ [conv.fpint] p1: a float converts to an integer type by truncation, and "the behavior is undefined if
    the truncated value cannot be represented in the destination type" (NaN and infinities included)."""
    f = v.astype(np.float64)        # exact for every float element type here (half, bfloat16, float, double)
    info = np.iinfo(ti.dtype)
    with np.errstate(invalid="ignore"):
        t = np.trunc(f)
        bad = ~np.isfinite(f) | (t < info.min) | (t > info.max)
    if bad.any():
        x = float(f[bad].flat[0])
        raise InvalidValue(f"{x!r} has no {ti.name} value: a float whose truncated value the integer type cannot "
                           "hold is undefined behaviour in C++, refused",
                           rule=f"C++ [conv.fpint] p1 (float -> {ti.name} truncates; {ti.name} holds "
                                f"[{info.min}, {info.max}])",
                           values={"value": x, "type": ti.name, "count": int(bad.sum())})


# ------------------------------------------------------------------------------------- apply

def apply_slices(m_view: np.ndarray, spec: Spec, wis: np.ndarray, fn, *, vector_mode: bool = False) -> np.ndarray:
    """Run ``fn`` on the slices ``m_view`` (items, L) of work-items at sub-group positions ``wis``.

    DPC++ calls ``f`` once per element per work-item, in slice order (``joint_matrix_apply``'s loop over
    ``get_wi_data``), so a function with side effects (``sum_rows[row] += x``, the get_coordinate tests' idiom)
    sees every element once. That is what happens here for any function that may have side effects (it
    captures or names mutable state: :func:`_pure`): it is called per element, work-item by work-item, and in
    a vectorised launch it first makes the launch run per work-item (Divergence), since each work-item's
    private state is its own there. A pure function (no side effects to observe) is called once on whole
    slices (:class:`Varying` x, row, col) when that works, else per element - the results are the same."""
    lay = spec.map
    n_l = m_view.shape[1]
    rows = np.full((lay.params["sg_size"], n_l), -1, dtype=np.int64)
    cols = np.full_like(rows, -1)
    rr, cc = np.nonzero(lay.held())
    rows[lay.index[rr, cc, 0], lay.index[rr, cc, 1]] = rr
    cols[lay.index[rr, cc, 0], lay.index[rr, cc, 1]] = cc
    r_i, c_i = rows[wis], cols[wis]
    mask = r_i >= 0
    nargs = _arity(fn)
    x = m_view
    pure = _pure(fn)
    if vector_mode and not pure:
        raise Divergence("joint_matrix_apply: f may have side effects; each work-item calls it on its own elements")
    if pure:
        try:
            res = fn(Varying(x)) if nargs == 1 else fn(Varying(x), Varying(r_i), Varying(c_i))
            if res is None:
                return m_view
            out = res.v if isinstance(res, Varying) else np.broadcast_to(np.asarray(res), x.shape)
            if np.asarray(out).dtype.kind not in "biuf" and not str(np.asarray(out).dtype) in NUMERIC_EXTRA:
                raise TypeError("not a number")       # the per-element run below names the value
            return np.where(mask, convert(out, spec.t), m_view).astype(spec.t.dtype)
        except Divergence:
            if vector_mode and _captures_per_item(fn):
                raise
        except Exception:  # noqa: BLE001 - whole-slice call failed; the per-work-item run decides
            if vector_mode:
                raise Divergence("joint_matrix_apply function needs per-work-item execution") from None
    out = m_view.copy()
    results: dict[np.dtype, tuple[list, list, list]] = {}    # converted once per result type, after the calls
    for i, j in zip(*np.nonzero(mask)):
        v = x[i, j]
        r = fn(v) if nargs == 1 else fn(v, int(r_i[i, j]), int(c_i[i, j]))
        if r is not None:
            a = _number(r, spec)
            rows_, cols_, vals = results.setdefault(a.dtype, ([], [], []))
            rows_.append(i), cols_.append(j), vals.append(a)
    for dt, (rows_, cols_, vals) in results.items():
        out[rows_, cols_] = convert(np.array(vals, dtype=dt), spec.t)
    return out


#: bytecodes that write state outside the call's own locals
_WRITES = {"STORE_DEREF", "STORE_GLOBAL", "STORE_ATTR", "STORE_SUBSCR", "DELETE_DEREF", "DELETE_GLOBAL",
           "DELETE_ATTR", "DELETE_SUBSCR", "STORE_SLICE", "DELETE_SLICE"}
_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), np.generic, np.dtype, type, frozenset)


def _pure(fn) -> bool:
    """Whether ``fn`` can have no side effect visible outside one call: a plain Python function whose code (and
    its nested code) writes no cell, global, attribute or item, and which captures or names (as a global) no
    mutable object - only numbers, strings, types, modules, functions, numpy arrays (written only by item
    assignment, which the bytecode shows) and tuples of those. Anything else
    (methods, callable objects, a captured list or array) counts as possibly impure; numpy ufuncs and C builtins
    are pure."""
    import dis
    import types

    if isinstance(fn, (np.ufunc, types.BuiltinFunctionType)):
        return True                     # numpy ufuncs and C builtins (np.exp, abs) keep no state
    if not isinstance(fn, types.FunctionType):
        return False
    codes = [fn.__code__]
    for c in codes:
        codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        if any(ins.opname in _WRITES for ins in dis.get_instructions(c)):
            return False

    def harmless(v, depth=0) -> bool:
        if isinstance(v, _IMMUTABLE) or isinstance(v, (types.ModuleType, types.BuiltinFunctionType, np.ufunc)):
            return True
        if isinstance(v, np.ndarray):   # read as a table; a write to it is a STORE_SUBSCR, refused above
            return True
        if isinstance(v, types.FunctionType):
            return depth < 3 and (v is fn or _pure(v))
        if isinstance(v, tuple):
            return all(harmless(x, depth) for x in v)
        return False
    cells = [c.cell_contents for c in (fn.__closure__ or ()) if _filled(c)]
    named = [fn.__globals__[n] for c in codes for n in c.co_names if n in fn.__globals__]
    return all(harmless(v) for v in cells + named + list(fn.__defaults__ or ()))


#: ml_dtypes element types numpy reports as kind "V": numbers too
NUMERIC_EXTRA = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3", "float8_e3m4", "float4_e2m1fn",
                 "float6_e2m3fn", "float6_e3m2fn", "int4", "uint4", "int2", "uint2")


def _number(r, spec: Spec) -> np.ndarray:
    """``f``'s result as a 0-d array of numbers, else InvalidValue (a str or an object has no T value)."""
    a = np.asarray(r) if not isinstance(r, Varying) else np.asarray(r.v)
    if a.size != 1 or (a.dtype.kind not in "biuf" and str(a.dtype) not in NUMERIC_EXTRA):
        raise InvalidValue("joint_matrix_apply: f must return a number convertible to the element type",
                           rule="sycl_ext_oneapi_matrix: joint_matrix_apply's f returns a T",
                           values={"returned": type(r).__name__, "T": spec.t.name})
    return a.reshape(())


def _captures_per_item(fn) -> bool:
    """Whether ``fn`` closes over (or defaults to) per-work-item values of a vectorised launch."""
    cells = [c.cell_contents for c in (getattr(fn, "__closure__", None) or ()) if _filled(c)]
    cells += list(getattr(fn, "__defaults__", None) or ())
    return any(isinstance(v, (Varying, JointMatrix)) or (isinstance(v, USMPtrLike) and isinstance(v.offset, Varying))
               for v in cells) or bool(cells) and any(callable(v) for v in cells)


def _filled(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _arity(fn) -> int:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1
    n = sum(1 for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            and p.default is p.empty)
    if n not in (1, 3):
        raise InvalidValue("joint_matrix_apply takes f(x) or Intel's f(x, row, col)", values={"parameters": n})
    return n


__all__ += ["PerItem", "apply_slices", "check_stride", "convert", "gather", "mem_index", "scatter"]
