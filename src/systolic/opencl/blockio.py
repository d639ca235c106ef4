"""Global memory pointers and the sub-group block reads and writes of cl_intel_subgroups (+ _short, _char, _long).

``GlobalPtr`` is a ``__global T*``: a numpy array's bytes, a byte offset and an element type, with C pointer
arithmetic (``p + n`` moves n elements) and casts (``p.cast("uint")``). ``p[idx]`` with a per-work-item index
array is an ordinary load; assigning through it stores under the sub-group's execution mask.

Block reads and writes (cl_intel_subgroups, "Sub-group Read and Write Functions"): for a sub-group of maximum
size S, component j of work-item i is element ``p[i + j * S]`` ("the data is read strided, so the first value
read is p[sub_group_local_id] and the second p[sub_group_local_id + max_sub_group_size]"). The pointer must be
the same for all work-items, aligned to 4 bytes for reads and 16 bytes for writes (section 6.13.X.1,
"Restrictions"), and the functions must be encountered by the whole, complete sub-group; each broken rule raises
a typed error (:class:`~systolic.errors.DivergentCollective`, :class:`~systolic.errors.InvalidValue`,
:class:`~systolic.errors.MemoryFault` for an access outside the buffer, which has no defined behavior on the
device).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidValue, MemoryFault
from .cltypes import DTYPES, parse
from .subgroup import _uniform, current, require_converged

__all__ = ["GlobalPtr", "block_read", "block_write", "BLOCK_FUNCTIONS", "SUB_GROUP_SIZES"]

#: the sub-group sizes a cl_intel_subgroups device may run (intel_reqd_sub_group_size: 8, 16, 32); inside a kernel
#: the platform's own list applies (systolic.opencl.run checks it against ``Platform.subgroup_sizes``)
SUB_GROUP_SIZES = (8, 16, 32)


class GlobalPtr:
    """``__global T*`` into a numpy array (the array is shared, not copied: writes land in it)."""

    __slots__ = ("base", "offset", "dtype")

    def __init__(self, array, offset: int = 0, dtype=None) -> None:
        if isinstance(array, GlobalPtr):
            self.base, self.offset, self.dtype = array.base, array.offset, array.dtype
            return
        a = array
        if not isinstance(a, np.ndarray) or not a.flags.c_contiguous:
            raise InvalidValue("a global buffer is a C-contiguous numpy array (its memory is shared with the kernel)",
                               values={"type": type(array).__name__})
        self.base = a.reshape(-1).view(np.uint8)
        self.offset = int(offset)
        self.dtype = np.dtype(dtype) if dtype is not None else a.dtype

    @classmethod
    def _at(cls, base: np.ndarray, offset: int, dtype) -> "GlobalPtr":
        p = cls.__new__(cls)
        p.base, p.offset, p.dtype = base, int(offset), np.dtype(dtype)
        return p

    def cast(self, t) -> "GlobalPtr":
        """``(__global t*) p``: the same address seen as another element type (C type name or numpy dtype)."""
        dt = DTYPES[parse(t).base] if isinstance(t, str) else np.dtype(t)
        return GlobalPtr._at(self.base, self.offset, dt)

    def __add__(self, n) -> "GlobalPtr":
        n = _uniform(n, "pointer arithmetic", "offset")
        if isinstance(n, float) or isinstance(n, bool):
            raise InvalidValue("pointer arithmetic takes an integer", values={"offset": n})
        return GlobalPtr._at(self.base, self.offset + int(n) * self.dtype.itemsize, self.dtype)

    __radd__ = __add__

    def __sub__(self, n) -> "GlobalPtr":
        return self + (-int(_uniform(n, "pointer arithmetic", "offset")))

    def _check(self, start: int, nbytes: int, what: str) -> None:
        if start < 0 or start + nbytes > self.base.size:
            raise MemoryFault(f"{what} outside the buffer", address=start,
                              rule="global accesses must stay inside the buffer (no defined out-of-range behavior)",
                              values={"bytes": nbytes, "buffer_bytes": self.base.size})

    def _elems(self, idx) -> np.ndarray:
        i = np.asarray(idx)
        if i.dtype.kind not in "iu":
            raise InvalidValue("an index is an integer", values={"dtype": str(i.dtype)})
        return self.offset + i.astype(np.int64) * self.dtype.itemsize

    def __getitem__(self, idx):
        """``p[idx]``: one load per work-item (idx scalar or (S,) array)."""
        starts = self._elems(idx)
        w = self.dtype.itemsize
        flat = np.atleast_1d(starts)
        for s in (flat.min(), flat.max()):
            self._check(int(s), w, "load")
        out = np.stack([self.base[int(s):int(s) + w].view(self.dtype)[0] for s in flat.reshape(-1)])
        return out.reshape(np.shape(starts))

    def __setitem__(self, idx, value) -> None:
        """``p[idx] = value``: one store per active work-item (the sub-group's execution mask applies)."""
        starts = np.atleast_1d(self._elems(idx))
        self._writable()
        try:
            vals = np.broadcast_to(np.asarray(value, dtype=self.dtype), starts.shape)
        except (OverflowError, ValueError, TypeError) as exc:   # 300 into a char buffer, a string, a wrong shape
            raise InvalidValue(f"cannot store {value!r:.60} into a {self.dtype} buffer: {exc}",
                               rule="a store writes values of the buffer's element type",
                               values={"dtype": str(self.dtype)}) from None
        c = current()
        active = np.broadcast_to(c.mask, starts.shape) if (c is not None and starts.shape == c.mask.shape) \
            else np.ones(starts.shape, bool)
        w = self.dtype.itemsize
        for s, v, a in zip(starts.reshape(-1), vals.reshape(-1), active.reshape(-1)):
            if a:
                self._check(int(s), w, "store")
                self.base[int(s):int(s) + w] = np.asarray(v, dtype=self.dtype).reshape(1).view(np.uint8)

    def _writable(self) -> None:
        if not self.base.flags.writeable:
            raise InvalidValue("the global buffer is a read-only numpy array: a kernel cannot store to it",
                               rule="output buffers are writable arrays", values={"bytes": int(self.base.size)})

    def __repr__(self) -> str:
        return f"GlobalPtr(+{self.offset} bytes, {self.dtype}, buffer {self.base.size} bytes)"


def _sub_group_size(fn: str, sub_group_size: int | None) -> int:
    c = current()
    if c is not None:
        return c.size
    if sub_group_size is None:
        raise InvalidValue(f"{fn} outside a kernel needs sub_group_size=",
                           rule="block reads are sub-group operations", values={"function": fn})
    if isinstance(sub_group_size, (bool, np.bool_)) or not isinstance(sub_group_size, (int, np.integer)) \
            or int(sub_group_size) not in SUB_GROUP_SIZES:
        raise InvalidValue(f"{fn}: sub_group_size= must be one of {list(SUB_GROUP_SIZES)}",
                           rule="cl_intel_subgroups: sub-group sizes 8, 16, 32 (intel_reqd_sub_group_size)",
                           values={"sub_group_size": repr(sub_group_size)})
    return int(sub_group_size)


def _ptr(p, fn: str, base: str) -> GlobalPtr:
    if not isinstance(p, GlobalPtr):
        raise InvalidValue(f"{fn} takes a __global {base}* (systolic.opencl.GlobalPtr)",
                           values={"type": type(p).__name__})
    if p.dtype.itemsize != DTYPES[base].itemsize or p.dtype.kind not in "iu":
        raise InvalidValue(f"{fn} takes a __global {base}*; cast the pointer first: p.cast('{base}')",
                           rule="cl_intel_subgroups: the pointer's element type is the block's",
                           values={"pointer_type": str(p.dtype)})
    return p


def block_read(p, n: int, base: str, fn: str, *, sub_group_size: int | None = None) -> np.ndarray:
    """``intel_sub_group_block_read*``: n components of type ``base`` per work-item."""
    s = _sub_group_size(fn, sub_group_size)
    p = _ptr(p, fn, base)
    require_converged(fn)
    dt = DTYPES[base]
    if p.offset % 4:
        raise InvalidValue(f"{fn}: the pointer must be 4-byte aligned", rule="cl_intel_subgroups 6.13.X.1: "
                           "p must be 32-bit (4-byte) aligned for reads", values={"byte_offset": p.offset})
    nbytes = n * s * dt.itemsize
    p._check(p.offset, nbytes, fn)
    data = p.base[p.offset:p.offset + nbytes].view(dt).reshape(n, s).T.copy()
    return data[:, 0].copy() if n == 1 else data


def block_write(p, data, n: int, base: str, fn: str, *, sub_group_size: int | None = None) -> None:
    """``intel_sub_group_block_write*``: store n components per work-item."""
    s = _sub_group_size(fn, sub_group_size)
    p = _ptr(p, fn, base)
    require_converged(fn)
    dt = DTYPES[base]
    d = np.asarray(data)
    want = (s,) if n == 1 else (s, n)
    if d.shape != want:
        raise InvalidValue(f"{fn} writes a {base}{n if n > 1 else ''} per work-item: shape {want}",
                           values={"shape": d.shape})
    if d.dtype.kind not in "iu" or d.dtype.itemsize != dt.itemsize:
        raise InvalidValue(f"{fn} writes {base} data; reinterpret other types with as_type (e.g. as_uint)",
                           rule="OpenCL C: float data is reinterpreted with as_type, not converted",
                           values={"dtype": str(d.dtype)})
    if p.offset % 16:
        raise InvalidValue(f"{fn}: the pointer must be 16-byte aligned", rule="cl_intel_subgroups 6.13.X.1: "
                           "p must be 128-bit (16-byte) aligned for writes", values={"byte_offset": p.offset})
    nbytes = n * s * dt.itemsize
    p._check(p.offset, nbytes, fn)
    p._writable()
    p.base[p.offset:p.offset + nbytes] = d.view(dt).reshape(s, n).T.copy().view(np.uint8).reshape(-1)


def _reader(n: int, base: str, name: str):
    def f(p, *, sub_group_size: int | None = None):
        return block_read(p, n, base, name, sub_group_size=sub_group_size)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"{base}{n if n > 1 else ''} {name}(const __global {base}* p): component j of work-item i = "
                 f"p[i + j * max_sub_group_size] (cl_intel_subgroups).")
    return f


def _writer(n: int, base: str, name: str):
    def f(p, data, *, sub_group_size: int | None = None):
        block_write(p, data, n, base, name, sub_group_size=sub_group_size)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"void {name}(__global {base}* p, {base}{n if n > 1 else ''} data): p[i + j * "
                 "max_sub_group_size] = component j of work-item i (cl_intel_subgroups).")
    return f


def _functions() -> dict:
    out = {}
    families = [("", "uint", (1, 2, 4, 8)), ("_ui", "uint", (1, 2, 4, 8)), ("_us", "ushort", (1, 2, 4, 8)),
                ("_uc", "uchar", (1, 2, 4, 8, 16)), ("_ul", "ulong", (1, 2, 4, 8))]
    for suffix, base, ns in families:
        for n in ns:
            tail = suffix + (str(n) if n > 1 else "")
            out[f"intel_sub_group_block_read{tail}"] = _reader(n, base, f"intel_sub_group_block_read{tail}")
            out[f"intel_sub_group_block_write{tail}"] = _writer(n, base, f"intel_sub_group_block_write{tail}")
    return out


#: every buffer block read/write function, by its OpenCL name
BLOCK_FUNCTIONS = _functions()
