"""``sycl::atomic_ref`` on USM and local memory, and ``sycl::local_accessor`` (SYCL 2020 4.15.3, 4.7.6.11).

``local_accessor(T, count)`` is work-group local memory: each work-group of a launch has its own ``count``
elements (zero at the start of every launch; SYCL leaves them uninitialised), shared by its work-items and
ordered between them by ``group_barrier`` / ``item.barrier()``. Indexing it (``acc[i]``, ``acc[i] = v``) works
per work-item and vectorised like a USM pointer; values enter as for USM (exactly, or refused; floats rounded to
nearest even).

``atomic_ref(p)`` (``p`` a USM pointer or ``(local_accessor, index)``) is the element ``p`` points at, updated
atomically: ``load``, ``store``, ``exchange``, ``compare_exchange_strong`` / ``_weak``, ``fetch_add``,
``fetch_sub``, ``fetch_min``, ``fetch_max``, ``fetch_and``, ``fetch_or``, ``fetch_xor``. Each returns the value
before the update. The emulator runs work-items in a fixed order, so concurrent atomics are applied in work-item
order (a vectorised call applies them one work-item at a time, lowest global linear id first): every result is one
SYCL allows. Integer arithmetic wraps (C++ atomics on signed integers are two's complement); float ``fetch_add``
rounds to nearest even in T. ``memory_order`` and ``memory_scope`` are accepted and checked, and have no effect
on values (there are no data races the emulator could reorder).
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from ..errors import InvalidValue, MemoryFault, UnsupportedOperation
from . import simt
from .simt import USMPtrLike, Varying

__all__ = ["atomic_ref", "local_accessor", "memory_order", "memory_scope"]


class memory_order(Enum):
    relaxed = "relaxed"
    acquire = "acquire"
    release = "release"
    acq_rel = "acq_rel"
    seq_cst = "seq_cst"


class memory_scope(Enum):
    work_item = "work_item"
    sub_group = "sub_group"
    work_group = "work_group"
    device = "device"
    system = "system"


# ----------------------------------------------------------------------------------------- local memory
class local_accessor:
    """``sycl::local_accessor<T, 1>(range, cgh)``: ``count`` elements of ``T`` per work-group."""

    def __init__(self, T, count, handler=None) -> None:
        from .runtime import range as sycl_range
        from .runtime import storage_dtype
        if isinstance(count, sycl_range):
            count = count.size()
        if isinstance(count, (tuple, list)):
            count = sycl_range(*count).size()
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)) or count < 1:
            raise InvalidValue("a local_accessor holds a positive integer number of elements",
                               rule="SYCL 2020 local_accessor(range<D>, handler)", values={"count": repr(count)[:40]})
        if count > 1 << 24:
            raise InvalidValue(f"{count} elements of local memory per work-group is more than any device has",
                               rule="local memory per work-group: at most 2**24 elements here (devices: 64-128 KiB)",
                               values={"count": int(count)})
        self.dtype = storage_dtype(T)
        self.count = int(count)
        self._launch = None
        self._mem: np.ndarray | None = None

    def _storage(self):
        L = simt.current_launch()
        if L is None:
            raise InvalidValue("local memory exists only inside a kernel (parallel_for)",
                               rule="SYCL 2020: local_accessor is accessed in the kernel")
        if L.mode == "trace":
            raise UnsupportedOperation("local_accessor inside a kernel compiled for AMX (queue(amx='compiled'))")
        if self._launch is not L:          # a fresh allocation per launch: n_groups x count
            self._launch = L
            self._mem = np.zeros(L.n_groups * self.count, dtype=self.dtype)
        return L, self._mem

    def _flat(self, i):
        """Flat indices into the launch's storage for index ``i`` of the current work-item(s)."""
        L, mem = self._storage()
        if isinstance(i, Varying):
            idx = np.asarray(i.v)
        elif isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
            raise InvalidValue(f"a local_accessor index is an integer, not {type(i).__name__}",
                               values={"index": repr(i)[:40]})
        else:
            idx = np.asarray(int(i))
        if idx.dtype.kind not in "iu":
            raise InvalidValue("a local_accessor index is an integer", values={"dtype": str(idx.dtype)})
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= self.count):
            raise MemoryFault("access outside the local_accessor", rule="local_accessor bounds",
                              values={"elements": self.count, "min_index": int(idx.min()),
                                      "max_index": int(idx.max())})
        if L.mode == "vector":
            grp = np.arange(L.n_items) // L.wg_items
            return L, mem, grp * self.count + idx, True
        w = L.scheduler.current
        return L, mem, (w // L.wg_items) * self.count + int(idx), isinstance(i, Varying)

    def __getitem__(self, i):
        _, mem, flat, varying = self._flat(i)
        v = mem[flat]
        return Varying(v) if varying else v[()]

    def __setitem__(self, i, value) -> None:
        from .runtime import _elements
        L, mem, flat, _ = self._flat(i)
        val = _elements(value.v if isinstance(value, Varying) else value, self.dtype, "local_accessor assignment")
        if L.mode == "vector":
            val = np.broadcast_to(val, np.shape(flat))
        L.write(mem, flat, val)

    def get_range(self):
        return (self.count,)

    def size(self) -> int:
        return self.count

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"local_accessor(<{self.count} x {self.dtype}> per work-group)"


# ----------------------------------------------------------------------------------------- atomics
def _check_enum(v, E, name):
    if v is None:
        return
    if not isinstance(v, E) and getattr(E, str(v), None) is None:
        raise InvalidValue(f"unknown {name} {v!r}", rule=f"{name}: " + ", ".join(m.value for m in E),
                           values={name: repr(v)[:40]})


class atomic_ref:
    """``sycl::atomic_ref<T, DefaultOrder, DefaultScope, Space>`` on the element ``target`` designates.

    ``target``: a USM pointer (``p + i``) or a ``(local_accessor, index)`` pair; inside a vectorised kernel the
    pointer or index may differ between work-items."""

    def __init__(self, target, memory_order=None, memory_scope=None) -> None:
        _check_enum(memory_order, globals()["memory_order"], "memory_order")
        _check_enum(memory_scope, globals()["memory_scope"], "memory_scope")
        if isinstance(target, tuple) and len(target) == 2 and isinstance(target[0], local_accessor):
            self._acc, self._i, self._ptr = target[0], target[1], None
            dt = target[0].dtype
        elif isinstance(target, USMPtrLike):
            self._acc, self._i, self._ptr = None, None, target
            dt = target.mem.dtype
        else:
            raise InvalidValue("atomic_ref refers to a USM element (a pointer) or (local_accessor, index)",
                               rule="SYCL 2020 atomic_ref(T& ref)", values={"target": type(target).__name__})
        if dt.kind not in "iuf" or dt.itemsize not in (4, 8):
            raise InvalidValue(f"atomic_ref<{dt}> is not defined: T is a 32- or 64-bit integer or float",
                               rule="SYCL 2020 4.15.3: atomic_ref's T is int, unsigned, long, unsigned long, "
                                    "long long, unsigned long long, float or double", values={"T": str(dt)})
        self.dtype = dt

    def _where(self):
        """(launch or None, memory, flat indices (one per current work-item, or one), per-item?)"""
        if self._acc is not None:
            return self._acc._flat(self._i)
        p = self._ptr
        off = p.offset
        idx = np.asarray(off.v if isinstance(off, Varying) else off)
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= p.mem.size):
            raise MemoryFault("atomic_ref outside the USM allocation", rule="USM pointer bounds",
                              values={"allocation_elements": int(p.mem.size), "min_index": int(idx.min()),
                                      "max_index": int(idx.max())})
        L = simt.current_launch()
        varying = isinstance(off, Varying)
        if L is not None and L.mode == "vector" and not varying:
            idx = np.full(L.n_items, int(idx))
            varying = True
        return L, p.mem, idx, varying

    def _update(self, fn, operand=None, expected=None):
        """Apply ``new = fn(old, operand[, expected])`` one work-item at a time; the old values."""
        L, mem, idx, varying = self._where()
        if not mem.flags.writeable:
            raise InvalidValue("the memory behind the atomic_ref is read-only")
        from .runtime import _elements

        def vals(v):
            if v is None:
                return None
            a = _elements(v.v if isinstance(v, Varying) else v, self.dtype, "atomic operand")
            return np.broadcast_to(a, np.shape(idx)) if varying else a
        op, ex = vals(operand), vals(expected)
        flat = np.atleast_1d(idx)
        olds = np.empty(flat.shape, dtype=self.dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            for j, k in enumerate(flat):         # work-item order
                old = mem[k]
                olds[j] = old
                new = fn(old, None if op is None else np.atleast_1d(op)[j],
                         None if ex is None else np.atleast_1d(ex)[j])
                if new is not None:
                    if L is not None:
                        L.write(mem, np.array(k), np.asarray(new, dtype=self.dtype))
                    else:
                        mem[k] = new
        return Varying(olds) if varying else olds[0]

    # ---- the operations (each returns the value before it)
    def load(self, memory_order=None, memory_scope=None):
        return self._update(lambda old, v, e: None)

    def store(self, operand, memory_order=None, memory_scope=None) -> None:
        self._update(lambda old, v, e: v, operand)

    def exchange(self, operand, memory_order=None, memory_scope=None):
        return self._update(lambda old, v, e: v, operand)

    def compare_exchange_strong(self, expected, desired, *orders):
        """C++ takes ``expected`` by reference and writes the current value there on failure; Python returns
        ``(success, old)``: ``success`` is ``old == expected``, and then ``desired`` was stored."""
        old = self._update(lambda o, v, e: v if o == e else None, desired, expected)
        e = expected.v if isinstance(expected, Varying) else expected
        succ = (old.v if isinstance(old, Varying) else old) == np.asarray(e, dtype=self.dtype)
        return (Varying(succ) if isinstance(old, Varying) else bool(succ)), old

    compare_exchange_weak = compare_exchange_strong     # no spurious failures here

    def fetch_add(self, operand, *orders):
        return self._update(lambda old, v, e: _wrap(np.add, old, v, self.dtype), operand)

    def fetch_sub(self, operand, *orders):
        return self._update(lambda old, v, e: _wrap(np.subtract, old, v, self.dtype), operand)

    def fetch_min(self, operand, *orders):
        return self._update(lambda old, v, e: v if v < old else old, operand)

    def fetch_max(self, operand, *orders):
        return self._update(lambda old, v, e: v if old < v else old, operand)

    def _int(self, name):
        if self.dtype.kind not in "iu":
            raise InvalidValue(f"atomic_ref<{self.dtype}>::{name} is defined for integers only",
                               rule="SYCL 2020 4.15.3: fetch_and/or/xor for integral T", values={"T": str(self.dtype)})

    def fetch_and(self, operand, *orders):
        self._int("fetch_and")
        return self._update(lambda old, v, e: old & v, operand)

    def fetch_or(self, operand, *orders):
        self._int("fetch_or")
        return self._update(lambda old, v, e: old | v, operand)

    def fetch_xor(self, operand, *orders):
        self._int("fetch_xor")
        return self._update(lambda old, v, e: old ^ v, operand)

    def __repr__(self) -> str:
        return f"atomic_ref<{self.dtype}>"


def _wrap(fn, a, b, dt):
    return fn(np.asarray(a, dtype=dt), np.asarray(b, dtype=dt), dtype=dt)[()]
