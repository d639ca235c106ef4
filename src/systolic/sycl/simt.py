"""SIMT execution of a SYCL kernel: every work-item runs the kernel body; group collectives run once per sub-group.

Two executions give the same semantics (docs/sycl.md, "SIMT"):

* **vectorised** (the default): the kernel body runs once for the whole ND-range; each work-item-dependent value
  (``item.get_global_id(0)``, a USM pointer offset by it, ...) is a :class:`Varying` holding one value per
  work-item. A collective receives each argument per sub-group and checks that it is uniform inside every
  sub-group (else :class:`~systolic.errors.DivergentCollective` naming the work-items), then runs once for all
  sub-groups together (batched). Python control flow on a value that differs between work-items cannot run
  vectorised: it raises :class:`Divergence` internally, every memory write of the attempt is undone, and the
  launch runs again in the second mode.
* **per work-item** (greenlets): one greenlet per work-item, each with plain-int ids; a collective suspends the
  work-item until every work-item of its sub-group has arrived, checks that they arrived at the same call (same
  function, same call site) with the same arguments, runs it once and resumes them. A sub-group where some
  work-items finished while others wait, or where work-items wait at different calls, is a DivergentCollective.

Collective implementations are written once, over a batch of sub-groups (:class:`Batch`).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import DivergentCollective, InvalidValue

__all__ = ["Divergence", "JointMatrixLike", "Launch", "PerItem", "PerItemResult", "USMPtrLike", "Varying", "barrier",
           "current_launch", "launched"]

# The launch whose kernel body is running on this thread. This module is the bottom of the SYCL package: the
# runtime, matrix_core and the compiled AMX path import it, it imports none of them (the objects it must tell
# apart - joint_matrix objects, USM pointers - derive from the marker classes below).
_state = threading.local()


def current_launch():
    return getattr(_state, "launch", None)


@contextlib.contextmanager
def launched(launch):
    """``launch`` is the current launch inside the ``with`` block (restored after, also on an exception)."""
    prev = current_launch()
    _state.launch = launch
    try:
        yield launch
    finally:
        _state.launch = prev


class Divergence(Exception):
    """Internal: a vectorised run met control flow that differs between work-items."""


def _align(a: np.ndarray, b: np.ndarray):
    # a Varying's first axis is the work-item; trailing axes broadcast (an apply() slice is (items, slice))
    if a.ndim < b.ndim:
        a = a.reshape(a.shape + (1,) * (b.ndim - a.ndim))
    elif b.ndim < a.ndim:
        b = b.reshape(b.shape + (1,) * (a.ndim - b.ndim))
    return a, b


class Varying:
    """One value per work-item (vectorised execution). Arithmetic is elementwise; truth and int() need a value
    uniform over all work-items (else the run continues per work-item)."""

    __slots__ = ("v",)
    __array_priority__ = 1000

    def __init__(self, v) -> None:
        self.v = np.asarray(v)

    # ---- uniform extraction
    def uniform(self):
        v = self.v
        if v.size and np.all(v == v.flat[0]):
            return v.flat[0].item() if hasattr(v.flat[0], "item") else v.flat[0]
        raise Divergence("non-uniform value used as a Python scalar")

    def __bool__(self):
        return bool(self.uniform())

    def __index__(self):
        u = self.uniform()
        if isinstance(u, (bool, float)) or not isinstance(u, (int, np.integer)):
            raise TypeError(f"{type(u).__name__} cannot be an index")
        return int(u)

    __int__ = __index__

    def __float__(self):
        return float(self.uniform())

    def __hash__(self):
        return hash(self.uniform())

    def __len__(self):
        raise TypeError("a per-work-item value has no length")

    def __repr__(self) -> str:
        return f"Varying({self.v!r})"

    # ---- arithmetic
    def _bin(self, o, fn, swap=False):
        if isinstance(o, USMPtrLike):
            return NotImplemented
        b = o.v if isinstance(o, Varying) else np.asarray(o)
        a, b = _align(self.v, b) if isinstance(o, Varying) else (self.v, b)
        try:
            return Varying(fn(b, a) if swap else fn(a, b))
        except TypeError:
            if fn is np.equal or fn is np.not_equal:   # a number compared with a string, None, an enum...
                return Varying(np.full(self.v.shape, fn is np.not_equal))
            raise

    def __add__(self, o): return self._bin(o, np.add)
    def __radd__(self, o): return self._bin(o, np.add, True)
    def __sub__(self, o): return self._bin(o, np.subtract)
    def __rsub__(self, o): return self._bin(o, np.subtract, True)
    def __mul__(self, o): return self._bin(o, np.multiply)
    def __rmul__(self, o): return self._bin(o, np.multiply, True)
    def __truediv__(self, o): return self._bin(o, np.true_divide)
    def __rtruediv__(self, o): return self._bin(o, np.true_divide, True)
    def __floordiv__(self, o): return self._bin(o, np.floor_divide)
    def __rfloordiv__(self, o): return self._bin(o, np.floor_divide, True)
    def __mod__(self, o): return self._bin(o, np.mod)
    def __rmod__(self, o): return self._bin(o, np.mod, True)
    def __pow__(self, o): return self._bin(o, np.power)
    def __and__(self, o): return self._bin(o, np.bitwise_and)
    def __rand__(self, o): return self._bin(o, np.bitwise_and, True)
    def __or__(self, o): return self._bin(o, np.bitwise_or)
    def __ror__(self, o): return self._bin(o, np.bitwise_or, True)
    def __xor__(self, o): return self._bin(o, np.bitwise_xor)
    def __rxor__(self, o): return self._bin(o, np.bitwise_xor, True)
    def __lshift__(self, o): return self._bin(o, np.left_shift)
    def __rshift__(self, o): return self._bin(o, np.right_shift)
    def __lt__(self, o): return self._bin(o, np.less)
    def __le__(self, o): return self._bin(o, np.less_equal)
    def __gt__(self, o): return self._bin(o, np.greater)
    def __ge__(self, o): return self._bin(o, np.greater_equal)
    def __eq__(self, o): return self._bin(o, np.equal)  # type: ignore[override]
    def __ne__(self, o): return self._bin(o, np.not_equal)  # type: ignore[override]
    def __neg__(self): return Varying(-self.v)
    def __pos__(self): return self
    def __abs__(self): return Varying(np.abs(self.v))
    def __invert__(self): return Varying(~self.v)


class USMPtrLike:
    """Marker base class of USM pointers (runtime.USMPtr: ``mem``, a flat numpy array, and ``offset``), so Varying
    arithmetic defers to the pointer and collectives pass its memory and offsets."""


class JointMatrixLike:
    """Marker base class of joint_matrix objects (matrix_core.JointMatrix): collectives gather them into the
    batch's matrix group through these two methods."""

    __slots__ = ()

    def group_vectorised(self, nsg: int, s: int):
        """The matrix group of all ``nsg`` sub-groups of ``s`` work-items (vectorised execution)."""
        raise NotImplementedError

    @classmethod
    def group_per_item(cls, groups: list):
        """The matrix group of sub-groups given as their work-items' own objects (per-work-item execution)."""
        raise NotImplementedError


class PerItem:
    """A collective argument each work-item may give differently (a joint_matrix_apply function, the ``x`` of a
    group algorithm)."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value


class PerItemResult:
    """A collective's result that differs between work-items (a scan): ``values[w]`` is work-item ``w``'s."""

    __slots__ = ("values",)

    def __init__(self, values: dict) -> None:
        self.values = values


def _callsite(depth: int = 3) -> tuple[str, int]:
    f = sys._getframe(depth)
    return (f.f_code.co_filename, f.f_lineno)


class Launch:
    """One parallel_for: the ND-range, its sub-groups and the execution mode."""

    def __init__(self, device, gsize: tuple[int, ...], lsize: tuple[int, ...], sg_size: int) -> None:
        self.device = device
        self.gsize, self.lsize = gsize, lsize
        self.dims = len(gsize)
        self.sg_size = sg_size
        self.groups = tuple(g // l for g, l in zip(gsize, lsize))
        self.wg_items = int(np.prod(lsize))
        self.n_groups = int(np.prod(self.groups))
        self.n_items = self.wg_items * self.n_groups
        self.sg_per_wg = self.wg_items // sg_size
        self.n_sg = self.n_items // sg_size
        self.mode = "vector"
        self.undo: list | None = None
        self.scheduler = None
        self.counts: dict[str, int] = {}
        self.deferred: dict[int, Any] = {}      # joint_matrix objects holding a deferred product chain
        self.next_id = 0                        # load provenance ids, unique over the launch
        # work-item w (in sub-group order): work-group w // wg_items, local linear id w % wg_items
        w = np.arange(self.n_items, dtype=np.int64)
        g_lin, l_lin = w // self.wg_items, w % self.wg_items
        self.local = _unlinear(l_lin, lsize)
        self.group = _unlinear(g_lin, self.groups)
        self.glob = [self.group[d] * lsize[d] + self.local[d] for d in range(self.dims)]
        self.local_linear = l_lin

    # ---- memory writes (undone if a vectorised attempt must start again per work-item)
    def write(self, mem: np.ndarray, idx, values) -> None:
        if self.undo is not None:
            self.undo.append((mem, np.array(idx, copy=True), mem[idx].copy()))
        mem[idx] = values

    def rollback(self) -> None:
        for mem, idx, old in reversed(self.undo or []):
            mem[idx] = old
        self.undo = []

    def item_names(self, wis) -> list[str]:
        """Human names of work-items: global ids."""
        out = []
        for w in list(wis)[:8]:
            gid = tuple(int(self.glob[d][w]) for d in range(self.dims))
            out.append(f"global id {gid if self.dims > 1 else gid[0]}")
        if len(wis) > 8:
            out.append(f"... {len(wis) - 8} more")
        return out

    # ---- collectives
    def collective(self, name: str, impl: Callable, sg, args: tuple, *, _depth: int = 3, **kw):
        """Run group operation ``name`` (``impl(batch, **kw)``) for the group ``sg``. ``_depth``: how many frames
        up the user's call site is (the per-work-item run checks that a group arrived from one site)."""
        self.counts[name] = self.counts.get(name, 0) + 1
        if self.mode == "vector":
            batch = Batch.vectorised(self, name, sg, args)
            return impl(batch, **kw)
        if self.mode == "trace":         # the compiled AMX path: self.trace is its TraceContext
            return self.trace.collective(name, args, kw)
        return self.scheduler.arrive(name, impl, sg, args, kw, _callsite(_depth))


def _unlinear(lin: np.ndarray, shape: tuple[int, ...]) -> list[np.ndarray]:
    out = []
    rem = lin
    for d in range(len(shape)):
        stride = int(np.prod(shape[d + 1:])) if d + 1 < len(shape) else 1
        out.append(rem // stride)
        rem = rem % stride
    return out


class Batch:
    """The arguments of one collective for ``nsg`` sub-groups (``sgs``: their global sub-group numbers).

    ``args[i]`` is: a :class:`MatrixGroup` for a joint_matrix, ``(mem, offsets)`` for a USM pointer (offsets one
    per sub-group), a numpy array (one value per sub-group) for a per-work-item scalar, the value itself for a
    Python constant, and for :class:`PerItem` arguments a list of (work-items, value) pairs.
    """

    def __init__(self, launch: Launch, name: str, sgs: np.ndarray, args: list) -> None:
        self.launch, self.name, self.sgs, self.args = launch, name, sgs, args
        self.nsg = len(sgs)

    @classmethod
    def vectorised(cls, launch: Launch, name: str, sg, args: tuple) -> Batch:
        nsg, s = launch.n_sg, launch.sg_size
        out: list[Any] = []
        for i, a in enumerate(args):
            if isinstance(a, JointMatrixLike):
                out.append(a.group_vectorised(nsg, s))
            elif isinstance(a, USMPtrLike):
                off = a.offset
                offs = _per_sg(launch, name, i, off.v if isinstance(off, Varying) else off)
                out.append((a.mem, offs))
            elif isinstance(a, Varying):
                out.append(_per_sg(launch, name, i, a.v))
            elif isinstance(a, PerItem):
                out.append([(np.arange(launch.n_items), a.value)])
            else:
                out.append(a)
        return cls(launch, name, np.arange(nsg), out)


def _per_sg(launch: Launch, name: str, pos: int, v) -> np.ndarray:
    nsg, s = launch.n_sg, launch.sg_size
    v = np.asarray(v)
    if v.ndim == 0:
        return np.broadcast_to(v, (nsg,))
    v2 = v.reshape(nsg, s)
    bad = np.nonzero(~np.all(v2 == v2[:, :1], axis=1))[0]
    if bad.size:
        g = int(bad[0])
        lanes = v2[g]
        first = lanes[0]
        odd = [g * s + j for j in range(s) if lanes[j] != first]
        raise DivergentCollective(
            f"{name}: argument {pos} differs between work-items of one sub-group",
            rule="joint_matrix functions are group operations: every work-item of the sub-group passes the same "
                 "arguments (sycl_ext_oneapi_matrix, 'Group operations')",
            values={"call": name, "argument": pos, "sub_group": g, "work_items": launch.item_names(odd),
                    "values": sorted({repr(x.item() if hasattr(x, 'item') else x) for x in lanes})[:6]})
    return v2[:, 0]


class Scheduler:
    """Per-work-item execution on greenlets (the fallback when a vectorised run diverges)."""

    def __init__(self, launch: Launch, kernel: Callable, make_item: Callable) -> None:
        import greenlet
        GreenletExit = greenlet.GreenletExit
        self.launch = launch
        self.main = greenlet.getcurrent()
        self.waiting: dict[int, tuple] = {}     # work-item -> (name, impl, sg, args, kw, site)
        self.scope: dict[int, int] = {}         # work-item -> size of the group it waits with (sub-group, work-group)
        self.current: int | None = None         # the work-item whose greenlet runs now
        self.results: dict[int, Any] = {}
        self.done = np.zeros(launch.n_items, dtype=bool)
        self.error: BaseException | None = None

        def body(w):
            try:
                kernel(make_item(w))
            except GreenletExit:
                raise
            except BaseException as exc:  # noqa: BLE001 - carried to the caller of parallel_for
                if self.error is None:
                    self.error = exc
            self.done[w] = True
        self.glets = [greenlet.greenlet(lambda w=w: body(w)) for w in range(launch.n_items)]

    def arrive(self, name, impl, sg, args, kw, site):
        w = sg._wi
        self.waiting[w] = (name, impl, sg, args, kw, site)
        # a work-group operation (group algorithms on sycl::group, barriers) waits for the whole work-group
        self.scope[w] = getattr(sg, "scope_size", self.launch.sg_size)
        self.main.switch()
        r = self.results.pop(w)
        if isinstance(r, BaseException):
            raise r
        if isinstance(r, PerItemResult):
            return r.values[w]
        return r

    def run(self) -> None:
        L = self.launch
        s = L.sg_size
        runnable = list(range(L.n_items))
        while True:
            for w in runnable:
                self.current = w
                self.glets[w].switch()
                self.current = None
                if self.error is not None:
                    self._kill()
                    raise self.error
            runnable = []
            if not self.waiting:
                return
            progressed = False
            ready: list[tuple[int, list[int]]] = []
            for size, g in sorted({(self.scope[w], w // self.scope[w]) for w in self.waiting}):
                # work-items are numbered in sub-group order inside work-groups: a group of ``size`` consecutive
                # work-items is a sub-group (size s) or a work-group (size wg_items)
                members = range(g * size, (g + 1) * size)
                wait = [w for w in members if w in self.waiting and self.scope[w] == size]
                if len(wait) < size:
                    fin = [w for w in members if self.done[w]]
                    if fin and len(fin) + len(wait) == size:
                        self._kill()
                        name = self.waiting[wait[0]][0]
                        what = "sub-group" if size == s else "work-group"
                        raise DivergentCollective(
                            f"{name}: work-items finished the kernel while others of their {what} wait at it",
                            rule=f"a group operation must be reached by every work-item of the {what}",
                            values={"call": name, what.replace("-", "_"): g, "waiting": L.item_names(wait),
                                    "finished": L.item_names(fin)})
                    continue
                ready.append((g, wait))
                runnable.extend(wait)
                progressed = True
            self._fire_all(ready)
            if not progressed:
                self._kill()
                raise DivergentCollective("deadlock: no sub-group can proceed",
                                          rule="every work-item of a sub-group reaches the same group operations",
                                          values={"waiting": L.item_names(sorted(self.waiting))})

    def _fire_all(self, ready: list) -> None:
        """Run the group operations of every sub-group that has fully arrived: sub-groups at the same call with
        arguments of the same kinds (matrix types, allocations, layouts) run as one batch."""
        groups: dict[Any, list] = {}
        for g, wait in ready:
            chk = self._check(g, wait)
            if isinstance(chk, BaseException):
                for w in wait:
                    self.results[w] = chk
                continue
            name, impl, kw, site, vals = chk
            groups.setdefault((name, site, impl, _signature(vals, kw)), []).append((g, wait, vals, kw))
        for (name, _site, impl, _sig), members in groups.items():
            kw = members[0][3]
            try:
                out = []
                for i, a in enumerate(members[0][2]):
                    out.append(_combine(i, a, [m[2][i] for m in members]))
                res = impl(Batch(self.launch, name, np.array([m[0] for m in members]), out), **kw)
            except BaseException as exc:  # noqa: BLE001 - raised in every work-item of these sub-groups
                res = exc
            for _g, wait, _v, _k in members:
                for w in wait:
                    self.results[w] = res

    def _check(self, g: int, wait: list[int]):
        """One sub-group's arrival: the same call, the same arguments; its arguments in per-sub-group form."""
        L = self.launch
        recs = [self.waiting.pop(w) for w in wait]
        for w in wait:
            self.scope.pop(w, None)
        name, impl, _sg, args0, kw, site = recs[0]
        for w, r in zip(wait, recs):
            if r[0] != name or r[5] != site:
                odd = [x for x, q in zip(wait, recs) if (q[0], q[5]) != (name, site)]
                return DivergentCollective(
                    f"work-items of one sub-group reached different group operations ({name} at line {site[1]} "
                    f"vs {r[0]} at line {r[5][1]})",
                    rule="group operations are reached in convergent control flow",
                    values={"sub_group": g, "work_items": L.item_names(odd), "calls": sorted({(q[0], q[5][1])
                                                                                             for q in recs})})
        vals: list[Any] = []
        try:
            for i, a in enumerate(args0):
                vs = [r[3][i] for r in recs]
                if isinstance(a, JointMatrixLike):
                    vals.append(("matrix", vs))
                elif isinstance(a, USMPtrLike):
                    if any(not isinstance(v, USMPtrLike) or not same_memory(v.mem, a.mem) or v.offset != a.offset
                           for v in vs):
                        raise _nonuniform(L, name, i, g, wait, vs)
                    vals.append(("ptr", a))
                elif isinstance(a, PerItem):
                    vals.append(("per-item", list(zip(wait, vs))))
                else:
                    if any(not _same(v, a) for v in vs):
                        raise _nonuniform(L, name, i, g, wait, vs)
                    vals.append(("value", a))
        except BaseException as exc:  # noqa: BLE001
            return exc
        return name, impl, kw, site, vals

    def _kill(self) -> None:
        for gl in self.glets:
            if gl and not gl.dead:
                try:
                    gl.throw()
                except BaseException:  # noqa: BLE001
                    pass


def _signature(vals: list, kw: dict):
    """What must be equal for sub-groups to share one batch: matrix types, allocations, non-numeric values."""
    sig = []
    for kind, v in vals:
        if kind == "matrix":
            sig.append(("matrix", v[0].spec if hasattr(v[0], "spec") else None))
        elif kind == "ptr":
            sig.append(("ptr", _memory_key(v.mem)))
        elif kind == "per-item":
            sig.append(("per-item",))
        elif isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
            sig.append(("number",))
        else:
            sig.append(("value", repr(v)))
    return tuple(sig), repr(sorted(kw.items(), key=lambda t: t[0]))


def _memory_key(mem: np.ndarray) -> tuple:
    """What identifies a USM allocation: its first byte's address, size and element type (two views of one numpy
    array - ``sycl.ptr(a)`` called by each work-item - are the same allocation)."""
    return (mem.__array_interface__["data"][0], mem.size, mem.dtype.str)


def same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or _memory_key(a) == _memory_key(b)


def _combine(i: int, a, per_sg: list):
    """One argument of a batch of sub-groups, from each sub-group's own (see :class:`Batch`)."""
    kind, v = a
    if kind == "matrix":      # v[0]: this argument of the batch's first work-item, a joint_matrix object
        return v[0].group_per_item([p[1] for p in per_sg])
    if kind == "ptr":
        return (v.mem, np.array([p[1].offset for p in per_sg], dtype=np.int64))
    if kind == "per-item":
        return [(np.array([w]), f.value) for p in per_sg for w, f in p[1]]
    if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
        return np.array([p[1] for p in per_sg])
    return v


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    try:
        r = a == b
        return bool(np.all(r)) if not isinstance(r, bool) else r
    except Exception:  # noqa: BLE001
        return a is b


def _nonuniform(L, name, pos, g, wait, vals):
    first = vals[0]
    odd = [w for w, v in zip(wait, vals) if not _same(v, first) or (hasattr(v, "offset") and
                                                                     v.offset != first.offset)]
    return DivergentCollective(
        f"{name}: argument {pos} differs between work-items of one sub-group",
        rule="joint_matrix functions are group operations: every work-item of the sub-group passes the same "
             "arguments (sycl_ext_oneapi_matrix, 'Group operations')",
        values={"call": name, "argument": pos, "sub_group": g, "work_items": L.item_names(odd)})


def barrier(g, depth: int) -> None:
    """A barrier of group ``g`` (a sub-group, or a work-group: ``g.scope_size`` work-items). Vectorised, every
    work-item executes each statement together, so it holds already (it is counted); per work-item, the work-item
    waits until its whole group has arrived at the same barrier. ``depth``: frames up to the user's call."""
    L = g.launch
    if L.mode == "trace":
        from ..errors import UnsupportedOperation
        raise UnsupportedOperation("group_barrier inside a kernel compiled for AMX (queue(amx='compiled'))",
                                   values={"call": "group_barrier"})
    if L.mode == "vector":
        L.counts["group_barrier"] = L.counts.get("group_barrier", 0) + 1
        return
    L.collective("group_barrier", _barrier_impl, g, (), _depth=depth)


def _barrier_impl(b) -> None:
    return None


def run_kernel(launch: Launch, kernel: Callable, make_vector_item: Callable, make_item: Callable,
               mode: str = "auto") -> str:
    """Run ``kernel`` over the launch; returns the mode that completed ("vector" or "per-item")."""
    with launched(launch):
        if mode in ("auto", "vector"):
            launch.mode = "vector"
            launch.undo = []
            try:
                kernel(make_vector_item())
                launch.undo = None
                return "vector"
            except Divergence:
                if mode == "vector":
                    launch.rollback()
                    raise InvalidValue("the kernel's control flow differs between work-items; it cannot run "
                                       "vectorised", rule="mode='vector'")
                launch.rollback()
            finally:
                launch.undo = None
        if mode not in ("auto", "vector", "per-item"):
            raise InvalidValue("unknown execution mode", rule="auto, vector, per-item", values={"mode": mode})
        launch.mode = "per-item"
        launch.counts = {}
        launch.deferred = {}          # the vectorised attempt's deferred products are gone with its matrices
        sched = Scheduler(launch, kernel, make_item)
        launch.scheduler = sched
        sched.run()
        return "per-item"
