"""SYCL 2020 group algorithms (section 4.17.4) on ``sycl::sub_group`` and ``sycl::group``, and group barriers.

``reduce_over_group``, ``group_broadcast``, ``joint_reduce``, ``any_of_group`` / ``all_of_group`` /
``none_of_group``, ``inclusive_scan_over_group`` / ``exclusive_scan_over_group`` and ``group_barrier`` are group
operations: every work-item of the group calls them (convergent control flow) with the same group-uniform
arguments (``local_id``, ``first``/``last``, ``binary_op``, ``init``); ``x`` is each work-item's own. A call some
work-items of the group do not reach, or reach with different uniform arguments, is a
:class:`~systolic.errors.DivergentCollective` (:mod:`systolic.sycl.simt`: vectorised, the arguments are checked per
group; per work-item, the call waits for the whole sub-group or work-group).

Values and order (docs/sycl.md, "Group algorithms"): ``binary_op`` is a SYCL function object (``plus``,
``multiplies``, ``minimum``, ``maximum``, ``bit_and``, ``bit_or``, ``bit_xor``, ``logical_and``, ``logical_or``);
the type ``T`` is ``x``'s (a numpy scalar's or a :class:`~systolic.sycl.simt.Varying`'s dtype; a Python int is
int64, a float float64, a bool bool); every combination is computed in ``T`` (integers wrap, floats round to
nearest even). SYCL leaves the order of a reduction unspecified; here it is a left fold in local-id order
(``joint_reduce``: in address order), so float results are those of that order.
"""

from __future__ import annotations

import numpy as np

from ..errors import DivergentCollective, InvalidValue, UnsupportedOperation
from . import simt
from .runtime import _elements, group, sub_group
from .simt import PerItem, PerItemResult, USMPtrLike, Varying

__all__ = ["all_of_group", "any_of_group", "bit_and", "bit_or", "bit_xor", "exclusive_scan_over_group",
           "group", "group_barrier", "group_broadcast", "inclusive_scan_over_group", "joint_reduce",
           "logical_and", "logical_or", "maximum", "minimum", "multiplies", "none_of_group", "plus",
           "reduce_over_group"]

_RULE = "SYCL 2020 4.17.4 group algorithms: called by every work-item of the group with group-uniform arguments"


# ----------------------------------------------------------------------------------------- function objects
class _Op:
    """A SYCL function object (``sycl::plus<>`` ...): ``op(x, y)`` on arrays of T, and its identity in T."""

    name = ""

    def __call__(self, x, y):
        return self.apply(np.asarray(x), np.asarray(y))[()]

    def __eq__(self, other) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"sycl.{self.name}()"

    def apply(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def identity(self, dt: np.dtype):
        raise NotImplementedError


class plus(_Op):
    """``sycl::plus<T>``: ``x + y``; identity 0."""
    name = "plus"

    def apply(self, x, y):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.add(x, y, dtype=x.dtype)

    def identity(self, dt):
        return dt.type(0)


class multiplies(_Op):
    """``sycl::multiplies<T>``: ``x * y``; identity 1."""
    name = "multiplies"

    def apply(self, x, y):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.multiply(x, y, dtype=x.dtype)

    def identity(self, dt):
        return dt.type(1)


class minimum(_Op):
    """``sycl::minimum<T>``: ``(x < y) ? x : y``; identity the largest T (+inf for floats)."""
    name = "minimum"

    def apply(self, x, y):
        with np.errstate(invalid="ignore"):
            return np.where(x < y, x, y).astype(x.dtype)

    def identity(self, dt):
        return dt.type(np.inf) if dt.kind == "f" else (dt.type(True) if dt.kind == "b" else np.iinfo(dt).max)


class maximum(_Op):
    """``sycl::maximum<T>``: ``(x < y) ? y : x``; identity the lowest T (-inf for floats)."""
    name = "maximum"

    def apply(self, x, y):
        with np.errstate(invalid="ignore"):
            return np.where(x < y, y, x).astype(x.dtype)

    def identity(self, dt):
        return dt.type(-np.inf) if dt.kind == "f" else (dt.type(False) if dt.kind == "b" else np.iinfo(dt).min)


class _IntOp(_Op):
    def check(self, dt):
        if dt.kind not in "biu":
            raise InvalidValue(f"sycl::{self.name} takes integer or bool operands, not {dt}",
                               rule="SYCL 2020 4.17.2: bit_and, bit_or, bit_xor are integral", values={"T": str(dt)})


class bit_and(_IntOp):
    """``sycl::bit_and<T>``: ``x & y``; identity all ones."""
    name = "bit_and"

    def apply(self, x, y):
        return np.bitwise_and(x, y)

    def identity(self, dt):
        return dt.type(True) if dt.kind == "b" else dt.type(~dt.type(0))


class bit_or(_IntOp):
    """``sycl::bit_or<T>``: ``x | y``; identity 0."""
    name = "bit_or"

    def apply(self, x, y):
        return np.bitwise_or(x, y)

    def identity(self, dt):
        return dt.type(0)


class bit_xor(_IntOp):
    """``sycl::bit_xor<T>``: ``x ^ y``; identity 0."""
    name = "bit_xor"

    def apply(self, x, y):
        return np.bitwise_xor(x, y)

    def identity(self, dt):
        return dt.type(0)


class logical_and(_Op):
    """``sycl::logical_and<T>``: ``x && y`` (a bool); identity true."""
    name = "logical_and"

    def apply(self, x, y):
        return np.logical_and(x, y).astype(x.dtype)

    def identity(self, dt):
        return dt.type(1)


class logical_or(_Op):
    """``sycl::logical_or<T>``: ``x || y`` (a bool); identity false."""
    name = "logical_or"

    def apply(self, x, y):
        return np.logical_or(x, y).astype(x.dtype)

    def identity(self, dt):
        return dt.type(0)


def _op(binary_op) -> _Op:
    if isinstance(binary_op, type) and issubclass(binary_op, _Op) and binary_op is not _Op:
        return binary_op()              # sycl.plus as well as sycl.plus()
    if isinstance(binary_op, _Op) and type(binary_op) is not _Op:
        return binary_op
    raise InvalidValue("binary_op must be a SYCL function object (sycl.plus(), sycl.multiplies(), sycl.minimum(), "
                       "sycl.maximum(), sycl.bit_and(), sycl.bit_or(), sycl.bit_xor(), sycl.logical_and(), "
                       "sycl.logical_or())", rule="SYCL 2020 4.17.4: BinaryOperation is a SYCL function object",
                       values={"binary_op": repr(binary_op)[:60]})


def _group(g, name: str):
    if not isinstance(g, (group, sub_group)):
        raise InvalidValue(f"{name} takes a group first (item.get_group() or item.get_sub_group())",
                           rule="SYCL 2020 4.17.4: the Group argument is sycl::group or sycl::sub_group",
                           values={"got": type(g).__name__})
    return g.launch


def _size(g) -> int:
    return g.scope_size if isinstance(g, group) else g.launch.sg_size


# ----------------------------------------------------------------------------------------- values
def _dtype_of(v) -> np.dtype:
    """T of a work-item's ``x`` (see the module text); InvalidValue for what has no arithmetic type."""
    a = v.v if isinstance(v, Varying) else v
    if isinstance(a, (bool, np.bool_)):
        return np.dtype(bool)
    if isinstance(a, int):
        if not -(1 << 63) <= a < (1 << 63):
            raise InvalidValue(f"{a} does not fit a 64-bit integer T", values={"x": a})
        return np.dtype(np.int64)
    if isinstance(a, float):
        return np.dtype(np.float64)
    dt = getattr(a, "dtype", None)
    numeric = dt is not None and (dt.kind in "biuf" or dt.name == "bfloat16")
    if numeric and (isinstance(v, Varying) or np.ndim(a) == 0):
        return np.dtype(dt)
    raise InvalidValue(f"a group algorithm's x is a number (an arithmetic T), not {type(a).__name__}",
                       rule="SYCL 2020 4.17.4: T is an arithmetic type", values={"x": repr(a)[:60]})


def _per_item(L, v, dt: np.dtype) -> np.ndarray:
    """``x`` of every work-item (vectorised run) as an array of T."""
    if isinstance(v, Varying):
        a = np.asarray(v.v)
        if a.ndim != 1:
            raise InvalidValue("a group algorithm's x is one number per work-item", values={"shape": a.shape})
        return a.astype(dt, copy=False)
    return np.full(L.n_items, v, dtype=dt)


def _uniform_per_group(L, name: str, pos: int, v, size: int) -> np.ndarray:
    """A group-uniform argument, one value per group (vectorised run), or DivergentCollective."""
    if not isinstance(v, Varying):
        return np.full(L.n_items // size, v, dtype=object)
    a = np.asarray(v.v).reshape(-1, size)
    bad = np.nonzero(~np.all(a == a[:, :1], axis=1))[0]
    if bad.size:
        gi = int(bad[0])
        odd = [gi * size + j for j in range(size) if a[gi, j] != a[gi, 0]]
        raise DivergentCollective(f"{name}: argument {pos} differs between work-items of one group",
                                  rule=_RULE, values={"call": name, "argument": pos, "group": gi,
                                                      "work_items": L.item_names(odd)})
    return a[:, 0]


def _fold(op: _Op, x: np.ndarray, init=None, scan: bool = False) -> np.ndarray:
    """Left fold of ``op`` along the last axis of ``x`` (groups, size) in T; ``scan``: every prefix."""
    dt = x.dtype
    if isinstance(op, _IntOp):
        op.check(dt)
    acc = x[:, 0] if init is None else op.apply(np.asarray(init, dtype=dt), x[:, 0])
    outs = [acc]
    for j in range(1, x.shape[1]):
        acc = op.apply(acc, x[:, j])
        outs.append(acc)
    return np.stack(outs, axis=1) if scan else acc


def _init_value(init, dt: np.dtype):
    """``init`` (one per group: an array) as values of T, exactly or refused (it enters the fold as a T);
    None when no init was given."""
    vals = list(np.asarray(init, dtype=object).reshape(-1))
    if vals[0] is None:
        return None
    return _elements(np.array(vals, dtype=object), dt, "init")


# ----------------------------------------------------------------------------------------- execution
def _run(name: str, g, impl, x, uniform: tuple = ()):
    """Run a group algorithm: ``impl(xs (groups, size) of T, uniform values per group) -> (groups, size) or
    (groups,)``; every work-item gets its own element (or its group's)."""
    L = _group(g, name)
    size = _size(g)
    if L.mode == "trace":
        raise UnsupportedOperation(f"{name} inside a kernel compiled for AMX (queue(amx='compiled'))",
                                   rule="the compiled AMX path traces joint_matrix operations only",
                                   values={"call": name})
    dt = _dtype_of(x) if x is not None else np.dtype(bool)
    if L.mode == "vector":
        L.counts[name] = L.counts.get(name, 0) + 1
        us = [_uniform_per_group(L, name, i + 2, u, size) for i, u in enumerate(uniform)]
        xs = _per_item(L, x, dt).reshape(-1, size) if x is not None else None
        out = np.asarray(impl(xs, us))
        if out.ndim == 1:
            out = np.repeat(out, size)
        return Varying(out.reshape(-1))
    if x is not None:
        _dtype_of(x)
    # the user's call site is 4 frames up from Launch.collective's caller: _run <- the algorithm <- the kernel
    return L.collective(name, _per_item_impl, g, (PerItem(x),) + tuple(uniform), _depth=4, fn=impl, size=size,
                        dt=dt)


def _per_item_impl(b, *, fn, size, dt):
    """The per-work-item run: the batch holds whole groups (``b.sgs``: group numbers), ``x`` per work-item."""
    pairs = b.args[0]
    ws = np.array([int(w[0]) for w, _ in pairs])
    types = {_dtype_of(v) for _, v in pairs if v is not None}
    if len(types) > 1:
        raise InvalidValue("work-items of one group passed x of different types", rule=_RULE,
                           values={"types": sorted(str(t) for t in types)})
    xs = None if pairs[0][1] is None else np.array([v for _, v in pairs], dtype=dt).reshape(-1, size)
    us = [np.asarray(u).reshape(-1) if isinstance(u, np.ndarray) else np.full(b.nsg, u, dtype=object)
          for u in b.args[1:]]
    out = np.asarray(fn(xs, us))
    if out.ndim == 1:
        out = np.repeat(out, size)
    out = out.reshape(-1)
    return PerItemResult({int(w): out[i][()] for i, w in enumerate(ws)})


# ----------------------------------------------------------------------------------------- the algorithms
def reduce_over_group(g, x, *args):
    """``reduce_over_group(g, x, binary_op)`` / ``(g, x, init, binary_op)``: every work-item gets the fold of the
    group's ``x`` values (with ``init`` first when given)."""
    init, op = _init_op("reduce_over_group", args)

    def impl(xs, us):
        return _fold(op, xs, _init_value(us[1], xs.dtype))
    return _run("reduce_over_group", g, impl, x, (op, init))


def _init_op(name: str, args: tuple):
    if len(args) == 1:
        return None, _op(args[0])
    if len(args) == 2:
        return args[0], _op(args[1])
    raise InvalidValue(f"{name}(g, x, binary_op) or {name}(g, x, init, binary_op)",
                       values={"arguments": len(args) + 2})


def inclusive_scan_over_group(g, x, *args):
    """``inclusive_scan_over_group(g, x, binary_op[, init])``: work-item i gets the fold of x over local ids
    0..i (``init`` first when given; SYCL's order of arguments: binary_op, then init)."""
    if len(args) not in (1, 2):
        raise InvalidValue("inclusive_scan_over_group(g, x, binary_op) or (g, x, binary_op, init)",
                           values={"arguments": len(args) + 2})
    op = _op(args[0])
    init = args[1] if len(args) == 2 else None

    def impl(xs, us):
        return _fold(op, xs, _init_value(us[1], xs.dtype), scan=True)
    return _run("inclusive_scan_over_group", g, impl, x, (op, init))


def exclusive_scan_over_group(g, x, *args):
    """``exclusive_scan_over_group(g, x, binary_op)`` / ``(g, x, init, binary_op)``: work-item i gets the fold of
    x over local ids 0..i-1, starting from ``init`` (default: binary_op's identity)."""
    init, op = _init_op("exclusive_scan_over_group", args)

    def impl(xs, us):
        dt = xs.dtype
        if isinstance(op, _IntOp):
            op.check(dt)
        given = _init_value(us[1], dt)
        start = np.full(xs.shape[0], op.identity(dt), dtype=dt) if given is None else given
        shifted = np.concatenate([start.reshape(-1, 1), xs[:, :-1]], axis=1)
        return _fold(op, shifted, scan=True)
    return _run("exclusive_scan_over_group", g, impl, x, (op, init))


def group_broadcast(g, x, local_id=0):
    """``group_broadcast(g, x[, local_id])``: every work-item gets the ``x`` of the work-item with that local id
    (a linear id, or for a ``group`` an id tuple; group-uniform)."""
    L = _group(g, "group_broadcast")
    size = _size(g)
    lid = local_id
    if isinstance(g, group) and isinstance(local_id, (tuple, list)):
        if len(local_id) != L.dims:
            raise InvalidValue("local_id has one index per dimension", values={"local_id": tuple(local_id)})
        lin = 0
        for d, i in enumerate(local_id):
            _check_index(i, L.lsize[d], "local_id")
            lin = lin * L.lsize[d] + int(i)
        lid = lin

    def impl(xs, us):
        ids = us[0]
        out = np.empty(xs.shape[0], dtype=xs.dtype)
        for r, i in enumerate(ids):
            _check_index(i, size, "local_id")
            out[r] = xs[r, int(i)]
        return out
    return _run("group_broadcast", g, impl, x, (lid,))


def _check_index(i, size: int, what: str) -> None:
    if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not 0 <= i < size:
        raise InvalidValue(f"{what} {i!r} is not a local id of the group (0..{size - 1})",
                           rule="SYCL 2020 group_broadcast: local_id < the group's local range",
                           values={what: repr(i)[:40], "local_range": size})


def _bool_of(x):
    if isinstance(x, Varying):
        return Varying(np.asarray(x.v).astype(bool))
    if isinstance(x, (bool, np.bool_, int, float, np.integer, np.floating)):
        return bool(x)
    raise InvalidValue("a predicate is a bool", rule="SYCL 2020 any_of_group(g, bool pred)",
                       values={"pred": repr(x)[:40]})


def any_of_group(g, pred):
    """``any_of_group(g, pred)``: true for every work-item when ``pred`` is true for any work-item of the group."""
    return _run("any_of_group", g, lambda xs, us: xs.any(axis=1), _bool_of(pred))


def all_of_group(g, pred):
    """``all_of_group(g, pred)``: true when ``pred`` is true for every work-item of the group."""
    return _run("all_of_group", g, lambda xs, us: xs.all(axis=1), _bool_of(pred))


def none_of_group(g, pred):
    """``none_of_group(g, pred)``: true when ``pred`` is false for every work-item of the group."""
    return _run("none_of_group", g, lambda xs, us: ~xs.any(axis=1), _bool_of(pred))


def joint_reduce(g, first, last, *args):
    """``joint_reduce(g, first, last, binary_op)`` / ``(g, first, last, init, binary_op)``: the fold of the
    elements ``[first, last)`` of one USM allocation (group-uniform pointers), in address order, in the
    elements' type; every work-item gets it. An empty range gives ``init`` (without init it is refused: SYCL's
    result would be undefined)."""
    init, op = _init_op("joint_reduce", args)
    for p, n in ((first, "first"), (last, "last")):
        if not isinstance(p, USMPtrLike):
            raise InvalidValue(f"joint_reduce: {n} is a USM pointer", values={n: type(p).__name__})
    if not simt.same_memory(last.mem, first.mem):
        raise InvalidValue("joint_reduce: first and last point into different allocations",
                           rule="[first, last) is one range")
    mem = first.mem

    def impl(xs, us):
        lo, hi = us[0], us[1]
        inits = _init_value(us[3], mem.dtype)
        out = []
        dt = mem.dtype
        for r, (a, b) in enumerate(zip(lo, hi)):
            a, b = int(a), int(b)
            if b < a or a < 0 or b > mem.size:
                raise InvalidValue("joint_reduce: [first, last) is not a range inside the allocation",
                                   rule="first <= last, both inside one USM allocation",
                                   values={"first": a, "last": b, "allocation_elements": int(mem.size)})
            seg = mem[a:b].reshape(1, -1)
            if b == a:
                if inits is None:
                    raise InvalidValue("joint_reduce of an empty range without init has no value",
                                       rule="SYCL 2020 joint_reduce: the result is undefined for an empty range")
                out.append(inits[r])
            else:
                out.append(_fold(op, seg, None if inits is None else inits[r:r + 1])[0])
        return np.array(out, dtype=dt)
    return _run("joint_reduce", g, impl, None, (_offset(first), _offset(last), op, init))


def _offset(p):
    return p.offset


def group_barrier(g) -> None:
    """``group_barrier(g)``: every work-item of the group waits until all have arrived (memory written before it
    is visible to the group after it)."""
    _group(g, "group_barrier")
    simt.barrier(g, 4)          # the call site checked is the kernel's: barrier <- group_barrier <- kernel
