"""``sycl::ext::oneapi::experimental::matrix`` (today's API) with Intel's additions (``sycl_ext_intel_matrix``).

Sources: intel/llvm ``sycl/doc/extensions/experimental/sycl_ext_matrix/sycl_ext_oneapi_matrix.asciidoc`` and
``sycl_ext_intel_matrix.asciidoc`` (REFERENCE.md section 5). Template arguments become the leading arguments in
SYCL's order: ``joint_matrix<sub_group, T, use::a, M, K, layout::row_major> tA;`` is
``tA = joint_matrix(sg, T, use.a, M, K, layout.row_major)``.

Every function taking ``sg`` is a group operation: all work-items of the sub-group call it with the same
arguments (:mod:`systolic.sycl.simt` checks; :class:`~systolic.errors.DivergentCollective` otherwise).
``joint_matrix_apply``'s ``f`` returns the new element (Python has no ``T&``); ``None`` keeps it.
"""

from __future__ import annotations

import functools
from enum import Enum

import numpy as np

from ..errors import InvalidValue, UnsupportedCombination
from ..layout import Layout
from . import matrix_core as core
from .devices import Combination, get_device, matrix_type, near_combinations
from .matrix_core import JointMatrix, tf32
from .simt import PerItem

__all__ = [
    "combination",
    "find_combination",
    "joint_matrix",
    "joint_matrix_apply",
    "joint_matrix_copy",
    "joint_matrix_fill",
    "joint_matrix_fill_checked",
    "joint_matrix_load",
    "joint_matrix_load_checked",
    "joint_matrix_mad",
    "joint_matrix_prefetch",
    "joint_matrix_store",
    "joint_matrix_store_checked",
    "layout",
    "matrix_params",
    "matrix_type",
    "precision",
    "round_to_tf32",
    "use",
]


class use(Enum):
    a = "a"
    b = "b"
    accumulator = "accumulator"


class _Layout(Enum):
    row_major = "row_major"
    col_major = "col_major"
    dynamic = "dynamic"
    ext_intel_packed = "ext_intel_packed"


class _LayoutNamespace:
    """``layout::row_major`` ... as attributes; called, the per-work-item slice map (``layout(device, T, use,
    rows, cols, layout=None) -> systolic.layout.Layout``)."""

    row_major = _Layout.row_major
    col_major = _Layout.col_major
    dynamic = _Layout.dynamic
    ext_intel_packed = _Layout.ext_intel_packed

    def __call__(self, device, T, use, rows, cols, layout=None) -> Layout:
        return core.layout(device, T, use, rows, cols, layout)

    def __iter__(self):
        return iter(_Layout)

    def __repr__(self) -> str:
        return "layout"


layout = _LayoutNamespace()


class precision:
    tf32 = tf32


combination = Combination


def _sg(sg, name):
    from .runtime import sub_group
    if not isinstance(sg, sub_group):
        raise InvalidValue(f"{name} takes the sub_group first (item.get_sub_group())",
                           values={"got": type(sg).__name__})
    return sg.launch


def check_matrix(m, name, what="matrix"):
    """``m`` itself if it is a joint_matrix, else InvalidValue naming the call (shared with the 2021 API)."""
    if not isinstance(m, JointMatrix):
        raise InvalidValue(f"{name}: {what} must be a joint_matrix", values={what: type(m).__name__})
    return m


def joint_matrix(sg, T, use, rows, cols, layout=None) -> JointMatrix:
    """Declare ``joint_matrix<sub_group, T, use, rows, cols, layout>`` (contents zero). ``layout``: an
    accumulator's is ``layout.dynamic`` (the default); a and b name ``row_major``, ``col_major`` or
    ``ext_intel_packed`` (b only here) - :func:`systolic.sycl.matrix_core.declared_layout`."""
    _sg(sg, "joint_matrix")
    return JointMatrix(sg, T, use, rows, cols, layout)


# ------------------------------------------------------------------------------------------------ fill
def _one_value(v: np.ndarray) -> bool:
    """Whether every sub-group fills the same value, bit for bit (== would take -0.0 for +0.0)."""
    if v.dtype.kind == "O":
        return False
    raw = np.ascontiguousarray(v).view(np.uint8).reshape(v.size, -1)
    return bool((raw == raw[0]).all())


#: sycl_ext_oneapi_matrix, "Fill (Initialization)"
RULE_FILL = ("sycl_ext_oneapi_matrix, Fill (Initialization): \"Note that the value type `Tv` must be convertible to "
             "the matrix elements type `T`\" (a number: integer, bool or floating point)")


def _fill_values(raw, nsg: int, ti, name: str) -> np.ndarray:
    """The fill value(s), one per sub-group, if they are numbers (C++ converts only arithmetic types to T);
    else InvalidValue naming the value. A complex value has no implicit conversion to T either (numpy's cast
    would drop the imaginary part)."""
    a = None if raw is None or isinstance(raw, (str, bytes, list, tuple, dict, set)) else np.asarray(raw)
    ok = a is not None and (a.ndim == 0 or a.shape == (nsg,)) and (
        a.dtype.kind in "biuf" or str(a.dtype) in core.NUMERIC_EXTRA or
        (a.dtype.kind == "O" and all(isinstance(x, int) for x in a.flat)))      # Python ints past 64 bits
    if not ok:
        shown = raw if a is None or a.ndim == 0 else a.reshape(-1)[0]
        raise InvalidValue(f"{name}: {shown!r} ({type(shown).__name__}) is not convertible to the matrix's "
                           f"element type {ti.name}", rule=RULE_FILL,
                           values={"value": repr(shown)[:60], "type": type(shown).__name__, "T": ti.name})
    return np.broadcast_to(a, (nsg,))


def _fill_impl(b, *, checked=False):
    mg = b.args[0]
    v = _fill_values(b.args[1], b.nsg, mg.spec.t, b.name)
    if not checked and mg.obj is not None and mg.spec.map.params["slice_length"] * b.launch.sg_size == \
            mg.spec.rows * mg.spec.cols and (v.size == 0 or _one_value(v)):
        # every slot of every work-item's slice holds an element: one value for all of them
        mg.set_all(core.convert(v[:1], mg.spec.t)[0] if v.size else 0)
        return
    R, C = mg.spec.rows, mg.spec.cols
    vals = core.convert(v, mg.spec.t)[:, None, None] * np.ones((1, R, C), dtype=mg.spec.t.dtype)
    vals = vals.astype(mg.spec.t.dtype)
    if checked:
        core.check_size_t(b.name, height=b.args[2], width=b.args[3], x=b.args[4], y=b.args[5])
        h, w, x, y = (np.broadcast_to(np.asarray(a, dtype=np.int64), (b.nsg,)) for a in b.args[2:6])
        rr = np.arange(R)[None, :, None] + x[:, None, None]
        cc = np.arange(C)[None, None, :] + y[:, None, None]
        inside = (rr < h[:, None, None]) & (cc < w[:, None, None])
        vals = np.where(inside, vals, np.zeros((), dtype=mg.spec.t.dtype))
    mg.set(vals)


def joint_matrix_fill(sg, m, v) -> None:
    """Every element of ``m`` := ``v`` (converted to the element type)."""
    L = _sg(sg, "joint_matrix_fill")
    check_matrix(m, "joint_matrix_fill")
    L.collective("joint_matrix_fill", _fill_impl, sg, (m, v))


def joint_matrix_fill_checked(sg, m, v, height, width, x, y) -> None:
    """Fill the tile of ``m`` at row ``x``, column ``y`` of a ``height x width`` matrix: elements outside it 0."""
    L = _sg(sg, "joint_matrix_fill_checked")
    check_matrix(m, "joint_matrix_fill_checked")
    L.collective("joint_matrix_fill_checked", _fill_impl, sg, (m, v, height, width, x, y), checked=True)


# ------------------------------------------------------------------------------------------------ load / store
#: sycl_ext_oneapi_matrix, "Load" (the overload taking a layout) and sycl_ext_intel_matrix, "Additional Store
#: Operations" (the store of a and b: ``joint_matrix_store(g, res, dest, stride)``, no layout)
RULE_LOAD_LAYOUT = ("sycl_ext_oneapi_matrix, Load: \"The first overload that takes memory layout as an argument is "
                    "only available for a `joint_matrix` type that used the default value `layout::dynamic`. The "
                    "second overload without a memory layout must not be used with a `joint_matrix` type that has "
                    "`layout::dynamic`\"")
RULE_STORE_AB = ("sycl_ext_intel_matrix, Additional Store Operations: the store of matrix `a` and `b` is "
                 "joint_matrix_store(g, res, dest, stride): no layout argument (the declared `Layout` is used)")
RULE_STORE_ACC = ("sycl_ext_oneapi_matrix, Store: joint_matrix_store(g, res, dest, stride, layout Layout) of a "
                  "`use::accumulator` matrix; \"`Layout` determines whether the data is being written in a row "
                  "(`row_major`), column major (`col_major`) fashion\"; sycl_ext_intel_matrix, Packed Layout "
                  "Format: ext_intel_packed \"may not be used with the accumulator matrix\"")


def _mem_layout(spec, lay, name):
    """The memory layout of a load/store of ``spec``.

    An accumulator (declared ``layout::dynamic``) takes the layout as an argument (row_major or col_major). A and
    B use their declared layout and take **no** layout argument, not even one equal to the declaration: the
    oneapi text makes the overload with a layout argument "only available for a `joint_matrix` type that used
    the default value `layout::dynamic`" (in C++ such a call does not compile), and the Intel store of a and b
    has no layout parameter. An argument that differed from the declaration used to override it silently."""
    store = "store" in name
    if spec.use == "accumulator":
        if lay is None:
            raise InvalidValue(f"{name} of an accumulator needs a layout (row_major or col_major)",
                               rule=RULE_STORE_ACC if store else RULE_LOAD_LAYOUT,
                               values={"use": spec.use, "layout": None})
        s = core._lay(lay)
        if s not in ("row_major", "col_major"):
            raise UnsupportedCombination(f"an accumulator is loaded/stored row_major or col_major, not {s}",
                                         rule=RULE_STORE_ACC, values={"layout": s})
        return s
    if lay is not None:
        given = core._lay(lay)
        raise InvalidValue(f"{name}: a use::{spec.use} matrix takes no layout argument (it was declared "
                           f"layout::{spec.layout}; a layout argument is for accumulators)",
                           rule=RULE_STORE_AB if store else RULE_LOAD_LAYOUT,
                           values={"use": spec.use, "declared": spec.layout, "given": given})
    if spec.layout == "dynamic":        # refused at declaration; kept for matrices built by other paths
        raise InvalidValue(f"{name}: a {spec.use} matrix with layout::dynamic has no memory layout",
                           rule=RULE_LOAD_LAYOUT, values={"use": spec.use, "declared": spec.layout})
    return spec.layout


def _memory_operands(b, lay, checked):
    """The matrix, memory, offsets, per-sub-group stride, spec and memory layout of a load or store, checked."""
    mg, (mem, offs), stride = b.args[0], b.args[1], b.args[2]
    spec = mg.spec
    s = _mem_layout(spec, lay, b.name)
    if mem.dtype != spec.t.dtype:
        _refuse_pointer_type(b.name, spec, mem.dtype)
    core.check_size_t(b.name, stride=stride)
    stride = np.broadcast_to(np.asarray(stride, dtype=np.int64), (b.nsg,))
    core.check_stride(stride, spec, s, b.name, _row_length(b, checked))
    return mg, mem, offs, stride, spec, s


#: the pointer's element type is the matrix's storage type (a tf32 matrix's is float)
RULE_LOAD_TYPE = ("sycl_ext_oneapi_matrix, Load: \"Only available when std::is_same_v<T1, std::remove_const_t<T2>>\"; "
                  "Support for Machine Learning Types: T2 \"must either be the storage format type that corresponds "
                  "to the abstract type T1\" or its const version")
RULE_STORE_TYPE = ("sycl_ext_oneapi_matrix, Store: \"T1 must be the same as T2\" (for precision::tf32, T2 is its "
                   "storage type float); sycl_ext_intel_matrix, Additional Store Operations: the matrix's T")


def _refuse_pointer_type(name, spec, ptype) -> None:
    """A load/store through a pointer of another element type. No conversion is modelled for stores either:
    the oneapi text says "T1 must be the same as T2" and the DPC++ headers read (intel/llvm
    ``matrix-unified.hpp``: ``multi_ptr<T, ...>`` of the matrix's own ``T``) take only that; converting stores
    (test-e2e ``joint_matrix_store_diff_types``) come with an unmerged change (intel/llvm PR #21398) whose
    conversion is not published. ``joint_matrix_copy`` into an accumulator of the pointer's type converts
    (nearest even) where the device has one (docs/sycl.md)."""
    store = "store" in name
    hint = ("; convert with joint_matrix_copy into an accumulator of that type, then store"
            if store and spec.use == "accumulator" else "")
    raise InvalidValue(f"{name}: the pointer's element type {ptype} is not the matrix's {spec.t.dtype}{hint}",
                       rule=RULE_STORE_TYPE if store else RULE_LOAD_TYPE,
                       values={"pointer": str(ptype), "matrix": str(spec.t.dtype)})


def _load_impl(b, *, lay=None, checked=False):
    mg, mem, offs, stride, spec, s = _memory_operands(b, lay, checked)
    if not checked:
        idx = core.mem_index(spec, offs, stride, s)
        mg.set(core.gather(mem, idx, b.name))
        mg.set_prov(_load_ids(b.launch, offs, stride))
        return
    idx, inside = _checked_index(spec, s, offs, stride, b)
    vals = np.zeros(idx.shape, dtype=spec.t.dtype)
    vals[inside] = core.gather(mem, idx[inside], b.name)
    mg.set(vals)
    mg.set_prov(_load_ids(b.launch, offs, stride, *b.args[3:7]))


def _row_length(b, checked):
    """The checked forms' memory row (``width``, after checking the four size_t arguments); None otherwise."""
    if not checked:
        return None
    h, w, x, y = b.args[3:7]
    core.check_size_t(b.name, height=h, width=w, x=x, y=y)
    return np.asarray(w, dtype=np.int64)


def _checked_index(spec, s, offs, stride, b):
    """Checked access (sycl_ext_intel_matrix): ``ptr`` is the base of a ``height x width`` matrix as it lies in
    memory (rows ``stride`` apart); the tile's first element is at memory row ``x``, column ``y``; elements at
    a row >= height or a column >= width are outside (loads give 0, stores drop them)."""
    h, w, x, y = (np.broadcast_to(np.asarray(a, dtype=np.int64), (b.nsg,)) for a in b.args[3:7])
    mr, mc = core.mem_rowcol(spec, s)
    rows = x[:, None, None] + mr[None]
    cols = y[:, None, None] + mc[None]
    inside = (rows >= 0) & (cols >= 0) & (rows < h[:, None, None]) & (cols < w[:, None, None])
    idx = np.asarray(offs, dtype=np.int64).reshape(-1, 1, 1) + rows * stride[:, None, None] + cols
    return idx, inside


def _load_ids(launch, *cols) -> np.ndarray:
    """Sub-groups that loaded with equal arguments in one load got equal contents: ids saying so (unique over
    the launch, so chains of different matrices can be batched together)."""
    n = len(cols[0])
    keys = np.stack([np.broadcast_to(np.asarray(c, dtype=np.int64), (n,)) for c in cols], axis=1)
    from .batch import key_ids
    inv = key_ids(keys)[1] + launch.next_id
    launch.next_id = int(inv.max()) + 1
    return inv


def _store_impl(b, *, lay=None, checked=False):
    mg, mem, offs, stride, spec, s = _memory_operands(b, lay, checked)
    vals = mg.get()
    if checked:
        idx, inside = _checked_index(spec, s, offs, stride, b)
        core.scatter(mem, idx[inside], vals[inside], b.name)
        return
    core.scatter(mem, core.mem_index(spec, offs, stride, s), vals, b.name)


def joint_matrix_load(sg, m, ptr, stride, layout=None) -> None:
    """Load ``m`` from ``ptr`` (rows ``stride`` elements apart; accumulators take a layout, a/b use their own)."""
    L = _sg(sg, "joint_matrix_load")
    check_matrix(m, "joint_matrix_load")
    check_scalars("joint_matrix_load", stride=stride)
    L.collective("joint_matrix_load", _load_impl, sg, (check_matrix(m, "load"), check_pointer(ptr), stride),
                 lay=layout)


def joint_matrix_store(sg, m, ptr, stride, layout=None) -> None:
    """Store ``m`` to ``ptr``: an accumulator in ``layout`` (row_major or col_major); Intel's store of a and b
    matrices takes no layout (they are written in their declared one)."""
    L = _sg(sg, "joint_matrix_store")
    check_scalars("joint_matrix_store", stride=stride)
    L.collective("joint_matrix_store", _store_impl, sg, (check_matrix(m, "store"), check_pointer(ptr), stride),
                 lay=layout)


def _checked_args(name, args, layout):
    """SYCL's order ``(stride, [layout,] height, width, x, y)``: the layout comes after the stride for
    accumulator loads and all stores (sycl_ext_intel_matrix); ``layout=`` may also be given by keyword."""
    if len(args) == 5:
        if layout is not None:
            raise InvalidValue(f"{name}: the layout is given twice")
        return args[1:], args[0]
    if len(args) == 4:
        return args, layout
    raise InvalidValue(f"{name} takes (sg, m, ptr, stride, [layout,] height, width, x, y)",
                       values={"arguments": len(args) + 4})


def joint_matrix_load_checked(sg, m, ptr, stride, *args, layout=None) -> None:
    """Load the tile at row ``x``, column ``y`` of the ``height x width`` matrix at ``ptr``; outside elements 0.

    ``(sg, m, ptr, stride, height, width, x, y)``, or with an accumulator's layout after the stride."""
    L = _sg(sg, "joint_matrix_load_checked")
    (h, w, x, y), lay = _checked_args("joint_matrix_load_checked", args, layout)
    check_scalars("joint_matrix_load_checked", stride=stride, height=h, width=w, x=x, y=y)
    L.collective("joint_matrix_load_checked", _load_impl, sg,
                 (check_matrix(m, "load"), check_pointer(ptr), stride, h, w, x, y), lay=lay, checked=True)


def joint_matrix_store_checked(sg, m, ptr, stride, *args, layout=None) -> None:
    """Store the tile at row ``x``, column ``y`` of the ``height x width`` matrix; outside elements dropped.

    ``(sg, m, ptr, stride, layout, height, width, x, y)`` (SYCL's order) or the layout by keyword, for an
    accumulator; a and b take no layout: ``(sg, m, ptr, stride, height, width, x, y)``."""
    L = _sg(sg, "joint_matrix_store_checked")
    (h, w, x, y), lay = _checked_args("joint_matrix_store_checked", args, layout)
    check_scalars("joint_matrix_store_checked", stride=stride, height=h, width=w, x=x, y=y)
    L.collective("joint_matrix_store_checked", _store_impl, sg,
                 (check_matrix(m, "store"), check_pointer(ptr), stride, h, w, x, y), lay=lay, checked=True)


def check_scalars(name: str, **args) -> None:
    """Arguments that are one number per work-item (stride, height, width, x, y, rows, cols): an array or a list
    where a scalar belongs is refused (it used to reach numpy's broadcasting and fail bare)."""
    for arg, v in args.items():
        if isinstance(v, (list, tuple, dict, set)) or (isinstance(v, np.ndarray) and v.ndim > 0):
            raise InvalidValue(f"{name}: {arg} is a number (one per work-item), not a {type(v).__name__}",
                               rule="size_t arguments are scalars", values={arg: repr(v)[:60]})


def check_pointer(p):
    """``p`` itself if it is a USM pointer, else InvalidValue (joint_matrix load/store/prefetch, both APIs)."""
    from .runtime import USMPtr
    if not isinstance(p, USMPtr):
        raise InvalidValue("joint_matrix load/store take a USM pointer (q.malloc_shared or sycl.ptr(array))",
                           values={"pointer": type(p).__name__})
    return p


#: sycl_ext_oneapi_matrix, "Prefetch"
RULE_PREFETCH = ("sycl_ext_oneapi_matrix, Prefetch: template <size_t Rows, size_t Cols, ...> "
                 "joint_matrix_prefetch(Group g, T* ptr, size_t stride, layout Layout, Properties properties = {})")


def _prefetch_impl(b):
    """Checks only: a cache hint has no effect on values. Rows, Cols and the stride are ``size_t``; ``Layout``
    is one of the ``layout`` values (the C++ signature has no default for it)."""
    _p, rows, cols, stride, lay = b.args
    core.check_size_t(b.name, _rule=RULE_PREFETCH + " (size_t: integers >= 0)", rows=rows, cols=cols, stride=stride)
    if lay is None or getattr(lay, "value", lay) not in ("row_major", "col_major", "dynamic", "ext_intel_packed"):
        raise InvalidValue(f"{b.name}: {lay!r} is not a layout", rule=RULE_PREFETCH + "; layout::row_major, "
                           "col_major, dynamic, ext_intel_packed", values={"layout": repr(lay)})


def joint_matrix_prefetch(sg, ptr, rows, cols, stride, layout=None) -> None:
    """A cache hint: no effect on values. ``joint_matrix_prefetch<Rows, Cols>(sg, ptr, stride, Layout)`` is
    ``joint_matrix_prefetch(sg, ptr, Rows, Cols, stride, Layout)``; the arguments are checked as in the other
    group operations (size_t values non-negative integers, the layout a ``layout`` value)."""
    L = _sg(sg, "joint_matrix_prefetch")
    check_scalars("joint_matrix_prefetch", rows=rows, cols=cols, stride=stride)
    L.collective("joint_matrix_prefetch", _prefetch_impl, sg, (check_pointer(ptr), rows, cols, stride, layout))


def round_to_tf32(elem):
    """``float round_to_tf32(float elem)`` (sycl_ext_oneapi_matrix, "Rounding TF32 values"): ``elem`` as a
    float rounded to TF32 (10 fraction bits) "to nearest even (RTE)", returned as a float (the low 13 fraction
    bits zero; NaN stays NaN, values past TF32's largest finite one round to +-inf as in float, denormals round
    like other values). ``elem`` is converted to float first, as the C++ parameter does. Scalars give a
    ``np.float32``, arrays an array. The rounding is :func:`systolic.types.round_to_tf32` (OpenCL's
    ``intel_convert_tfloat32_as_float`` calls the same)."""
    from .. import types as T
    a = None if elem is None or isinstance(elem, (str, bytes)) else np.asarray(elem)
    if a is None or not (a.dtype.kind in "biuf" or str(a.dtype) in core.NUMERIC_EXTRA):
        raise InvalidValue(f"round_to_tf32 takes a float, not {elem!r}",
                           rule="sycl_ext_oneapi_matrix, Rounding TF32 values: float round_to_tf32(float elem)",
                           values={"elem": repr(elem)[:60], "type": type(elem).__name__})
    f = a if a.dtype == np.float32 else core.convert(a, core.type_info(np.float32))
    out = T.round_to_tf32(f)
    return out[()] if out.ndim == 0 else out


# ------------------------------------------------------------------------------------------------ mad
def find_combination(device, ta, tb, tc, td, m, n, k) -> Combination:
    """The combination of ``device`` admitting these types and shape, else UnsupportedCombination listing the
    device's combinations."""
    rec = get_device(device.record if hasattr(device, "record") else device)
    names = tuple(core.type_info(t).name for t in (ta, tb, tc, td))
    _check_shape(m=m, n=n, k=k)
    return _find(rec.name, names, int(m), int(n), int(k))


def _check_shape(**dims) -> None:
    """M, N, K are integers (template arguments): 8.5, "8" or True are refused, not coerced."""
    for name, v in dims.items():
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise InvalidValue(f"{name.upper()} must be an integer, not {type(v).__name__}",
                               rule="M, N, K are size_t template arguments", values={name.upper(): repr(v)[:40]})


@functools.cache
def _find(dev: str, names: tuple, m: int, n: int, k: int) -> Combination:
    rec = get_device(dev)
    for c in rec.combinations:
        if c.types() == names and c.admits(m, n, k):
            return c
    raise UnsupportedCombination(
        f"{rec.name} has no combination {names[0]} x {names[1]} + {names[2]} -> {names[3]} with M={m}, N={n}, K={k}",
        rule=near_combinations(rec, names, (m, n, k)),
        values={"device": rec.name, "types": names, "M": m, "N": n, "K": k})


def _mad_impl(b, *, anysize=False):
    D, A, B, C = b.args
    for g, u in ((D, "accumulator"), (A, "a"), (B, "b"), (C, "accumulator")):
        if g.spec.use != u:
            raise InvalidValue(f"joint_matrix_mad(D, A, B, C): {g.spec.text()} is not use::{u}",
                               values={"use": g.spec.use})
    M, K = A.spec.rows, A.spec.cols
    N = B.spec.cols
    if B.spec.rows != K or (C.spec.rows, C.spec.cols) != (M, N) or (D.spec.rows, D.spec.cols) != (M, N):
        raise InvalidValue("joint_matrix_mad shapes: A M x K, B K x N, C and D M x N",
                           values={"A": (M, K), "B": (B.spec.rows, B.spec.cols), "C": (C.spec.rows, C.spec.cols),
                                   "D": (D.spec.rows, D.spec.cols)})
    rec = A.spec.device
    ta, tb, tc, td = A.spec.t, B.spec.t, C.spec.t, D.spec.t
    if not anysize:
        find_combination(rec, ta.name, tb.name, tc.name, td.name, M, N, K)
    if rec.backend == "amx" and tc.name != td.name:
        raise UnsupportedCombination("AMX accumulates in place: C and D have one type",
                                     values={"ctype": tc.name, "dtype": td.name})
    a, bb = A.get(), B.get()
    finish = _finisher(b.launch, rec, ta, tb, tc, td)
    key = (rec.name, ta.name, tb.name, tc.name, td.name, M, N)
    if D.obj is not None and _chainable(b.launch, rec, tc, td):
        # defer: a chain of mads into one accumulator is one engine GEMM over the whole K (same bits, see
        # MatrixGroup.defer); D is computed when something reads it
        prev = C.pending()
        if prev is not None and prev["key"] == key and _k_whole(rec, ta, prev["a"][-1].shape[2]):
            D.defer_more(prev, a, bb, A.prov, B.prov)
        else:
            D.defer(C.get().copy(), a, bb, finish, A.prov, B.prov)
        D.obj.pending["key"] = key
        return
    D.set(finish(C.get(), [a], [bb], None if A.prov is None else A.prov[:, None],
                 None if B.prov is None else B.prov[:, None]))


def _chainable(launch, rec, tc, td) -> bool:
    if rec.backend == "amx":
        return launch.device.amx == "fast"
    return tc.name == td.name and tc.name in ("fp32", "sint32")


def _k_whole(rec, ta, k: int) -> bool:
    """Whether a product of this K may be followed by another in one engine GEMM: on AMX the K of each TMUL
    block is 64 bytes, so every product but the last must fill whole blocks; a DPAS K step is always whole."""
    if rec.backend == "amx":
        return (k * ta.bits // 8) % 64 == 0
    return True


def _finisher(launch, rec, ta, tb, tc, td):
    def finish(c, As, Bs, ka=None, kb=None):
        a, bb = list(As), list(Bs)      # the lowering assembles only the distinct fragments
        if rec.backend == "xmx":
            from ..xmx import get_platform
            from .lower_xmx import mad
            return mad(get_platform(rec.engine), ta.prec, tb.prec, tc.prec, td.prec, a, bb, c, ka, kb)
        from .lower_amx import mad
        return mad(rec.engine, ta.name, tb.name, a, bb, c, how=launch.device.amx, keys_a=ka, keys_b=kb)
    return finish


def joint_matrix_mad(sg, D, A, B, C) -> None:
    """``D = A * B + C`` on the device's matrix engine (D may be C)."""
    L = _sg(sg, "joint_matrix_mad")
    for x, w in ((D, "D"), (A, "A"), (B, "B"), (C, "C")):
        check_matrix(x, "joint_matrix_mad", w)
    L.collective("joint_matrix_mad", _mad_impl, sg, (D, A, B, C))


# ------------------------------------------------------------------------------------------------ copy / apply
def _copy_impl(b):
    src, dst = b.args
    if (src.spec.rows, src.spec.cols) != (dst.spec.rows, dst.spec.cols):
        raise InvalidValue("joint_matrix_copy needs equal shapes",
                           values={"src": (src.spec.rows, src.spec.cols), "dst": (dst.spec.rows, dst.spec.cols)})
    dst.set(core.convert(src.get(), dst.spec.t))


def joint_matrix_copy(sg, src, dst) -> None:
    """``dst`` := ``src`` converted to dst's element type (use and type may differ; the shape may not)."""
    L = _sg(sg, "joint_matrix_copy")
    L.collective("joint_matrix_copy", _copy_impl, sg,
                 (check_matrix(src, "copy", "src"), check_matrix(dst, "copy", "dst")))


def _apply_impl(b):
    mg, fns = b.args
    s = b.launch.sg_size
    mg.get()                                          # any deferred product is computed first
    view = mg.view                                    # (nsg, sg, L)
    flat = view.reshape(-1, view.shape[-1])
    wis = np.tile(np.arange(s), b.nsg)
    if len(fns) == 1 and len(fns[0][0]) == flat.shape[0]:
        new = core.apply_slices(flat, mg.spec, wis, fns[0][1], vector_mode=b.launch.mode == "vector")
    else:
        new = flat.copy()
        for j, (_w, f) in enumerate(fns):
            new[j:j + 1] = core.apply_slices(flat[j:j + 1], mg.spec, wis[j:j + 1], f)
    view[...] = new.reshape(view.shape)
    if mg._commit is not None:
        mg._commit(view)


def joint_matrix_apply(sg, m, f) -> None:
    """Each work-item applies ``f(x)`` or ``f(x, row, col)`` (logical coordinates, before VNNI) to its slice."""
    L = _sg(sg, "joint_matrix_apply")
    if not callable(f):
        raise InvalidValue("joint_matrix_apply takes a function", values={"f": type(f).__name__})
    L.collective("joint_matrix_apply", _apply_impl, sg, (check_matrix(m, "apply"), PerItem(f)))


# ------------------------------------------------------------------------------------------------ queries
class matrix_params:
    """``matrix_params<arch, Ta, Tb, Tc, Td, M, N, K>``: default sizes when M, N, K are omitted; validation when
    given. ``joint_matrix_a(sg, layout)`` ... declare matrices of these sizes."""

    def __init__(self, device, Ta, Tb, Tc, Td=None, M=None, N=None, K=None) -> None:
        rec = get_device(device.record if hasattr(device, "record") else device)
        Td = Tc if Td is None else Td
        self.device = rec
        self.Ta, self.Tb, self.Tc, self.Td = Ta, Tb, Tc, Td
        names = tuple(core.type_info(t).name for t in (Ta, Tb, Tc, Td))
        combos = [c for c in rec.combinations if c.types() == names]
        if not combos:
            raise UnsupportedCombination(
                f"{rec.name} has no combination {names[0]} x {names[1]} + {names[2]} -> {names[3]}",
                rule=near_combinations(rec, names),
                values={"device": rec.name, "types": names})
        if M is None and N is None and K is None:
            c = next((c for c in combos if c.max_msize), combos[0])
            if rec.backend == "amx":
                M, N = 16, 16
                K = 64 // (core.type_info(Ta).bits // 8)
            else:
                M = c.max_msize or c.msize
                N = c.nsize or c.max_nsize
                K = c.ksize or c.max_ksize
        elif None in (M, N, K):
            raise InvalidValue("matrix_params takes all of M, N, K or none", values={"M": M, "N": N, "K": K})
        find_combination(rec, *names, M, N, K)
        self.M, self.N, self.K = int(M), int(N), int(K)

    # ``joint_matrix_a<Group, Layout>`` / ``joint_matrix_b<Group, Layout>``: the layout is a required argument
    # (A and B have no default layout: sycl_ext_oneapi_matrix, Matrix Layout)
    def joint_matrix_a(self, sg, layout):
        return joint_matrix(sg, self.Ta, use.a, self.M, self.K, layout)

    def joint_matrix_b(self, sg, layout):
        return joint_matrix(sg, self.Tb, use.b, self.K, self.N, layout)

    def joint_matrix_c(self, sg):
        return joint_matrix(sg, self.Tc, use.accumulator, self.M, self.N)

    def joint_matrix_d(self, sg):
        return joint_matrix(sg, self.Td, use.accumulator, self.M, self.N)

    def __repr__(self) -> str:
        return f"matrix_params({self.device.name}, M={self.M}, N={self.N}, K={self.K})"
