"""Address spaces of a launch, bounds-checked (issue 21 item 3).

An address is an int64: the region number in bits 40 and up, the byte offset in the region below. Regions:

* ``global``: one per buffer argument (the numpy bytes of the :class:`~systolic.cl.Buffer`, shared);
* ``constant``: one per module-scope ``__constant`` (addrspace 2) or ``__global`` variable, from its initializer;
* ``local``: one per ``__local`` variable or :class:`~systolic.cl.LocalMemory` argument, one slice per work-group
  of the batch (``group_stride`` bytes each): a work-item may touch only its own work-group's slice;
* ``private``: one per ``alloca``, one slice per work-item (``lane_stride`` bytes each): only its own.

Because the number carries the region, generic pointers (addrspace 4) and ``addrspacecast`` need nothing. Address
0 is null. An access outside its region, or outside the work-group's (work-item's) slice, raises
:class:`~systolic.errors.MemoryFault` naming the kernel, the instruction and the first faulting work-item.
"""

from __future__ import annotations

import numpy as np

from ..errors import MemoryFault

__all__ = ["Memory", "Region", "SHIFT", "OFFSET_MASK"]

SHIFT = 40
OFFSET_MASK = (1 << SHIFT) - 1


class Region:
    __slots__ = ("rid", "kind", "name", "data", "lane_stride", "group_stride")

    def __init__(self, rid, kind, name, data, lane_stride=0, group_stride=0):
        self.rid, self.kind, self.name, self.data = rid, kind, name, data
        self.lane_stride, self.group_stride = lane_stride, group_stride


class Memory:
    """The regions of one launch batch; ``where()`` (a callable) names the instruction for error messages."""

    def __init__(self, lanes) -> None:
        self.regions: list[Region | None] = [None]          # region 0: null
        self.lanes = lanes                                  # systolic.cl.ndrange.Lanes of the batch

    def add(self, kind: str, name: str, data: np.ndarray, lane_stride: int = 0, group_stride: int = 0) -> int:
        rid = len(self.regions)
        self.regions.append(Region(rid, kind, name, data, lane_stride, group_stride))
        return rid << SHIFT

    # ---- faults -----------------------------------------------------------------------------------------------
    def _fault(self, what, lanes_idx, addrs, nbytes, where, reason):
        lane = int(lanes_idx[0]) if len(lanes_idx) else -1
        addr = int(addrs[0]) if len(addrs) else 0
        rid = addr >> SHIFT
        reg = self.regions[rid] if 0 <= rid < len(self.regions) else None
        wi = self.lanes.describe(lane) if lane >= 0 else {}
        vals = {"kernel": where.kernel, "instruction": where.text, **wi, "bytes": nbytes,
                "region": f"{reg.kind} {reg.name} ({reg.data.size} bytes)" if reg is not None else "none (null or "
                          "not an address)", "offset": addr & OFFSET_MASK}
        raise MemoryFault(f"{what} {reason} in kernel {where.kernel}", address=addr & OFFSET_MASK,
                          rule="every access stays inside its buffer, its work-group's local memory or its "
                               "work-item's private memory (no defined out-of-bounds behaviour)", values=vals)

    def _resolve(self, addr: np.ndarray, lane_idx: np.ndarray, nbytes: int, what: str, where):
        """Group the accesses by region; returns [(region, offsets, positions)] after the bounds checks."""
        rid = addr >> SHIFT
        lo, hi = int(rid.min()), int(rid.max())
        groups = [(lo, None)] if lo == hi else [(int(r), rid == r) for r in np.unique(rid)]
        out = []
        for r, sel in groups:
            a = addr if sel is None else addr[sel]
            li = lane_idx if sel is None else lane_idx[sel]
            if not 0 < r < len(self.regions) or self.regions[r] is None:
                self._fault(what, li, a, nbytes, where, "through a null or invalid pointer")
            reg = self.regions[r]
            off = a & OFFSET_MASK
            bad = (off + nbytes > reg.data.size)
            if reg.lane_stride:
                bad |= (off // reg.lane_stride) != li
                bad |= (off % reg.lane_stride) + nbytes > reg.lane_stride
            elif reg.group_stride:
                bad |= (off // reg.group_stride) != self.lanes.group_of[li]
                bad |= (off % reg.group_stride) + nbytes > reg.group_stride
            if bad.any():
                k = np.flatnonzero(bad)
                self._fault(what, li[k], a[k], nbytes, where, "outside its " + reg.kind + " memory")
            out.append((reg, off, sel))
        return out

    # ---- loads and stores --------------------------------------------------------------------------------------
    def load(self, addr, mask, nbytes: int, dtype: np.dtype, n: int, where) -> np.ndarray:
        """The value (shape (N,) or (N, n)) loaded at ``addr`` by the lanes of ``mask``; 0 elsewhere."""
        N = self.lanes.n
        addr = np.asarray(addr, dtype=np.int64)
        shape = (N, n) if n else (N,)
        if addr.ndim == 0:
            if not self._strided(addr):          # a uniform address: one read, a uniform value
                if mask is not None and not mask.any():
                    return np.zeros(shape, dtype)
                first = int(np.argmax(mask)) if mask is not None else 0
                v = self.read_bytes(int(addr), nbytes, where, first).view(dtype)
                return v.copy() if n else v[0].copy()
            addr = np.broadcast_to(addr, (N,))
        full = mask is None or mask.all()
        lane_idx = np.arange(N) if full else np.flatnonzero(mask)
        a = addr if full else addr[lane_idx]
        if not len(a):
            return np.zeros(shape, dtype)
        out = np.zeros((len(a), nbytes), np.uint8)
        ar = np.arange(nbytes)
        for reg, off, sel in self._resolve(a, lane_idx, nbytes, "load", where):
            raw = reg.data[off[:, None] + ar]
            if sel is None:
                out = raw
            else:
                out[sel] = raw
        vals = out.view(dtype)
        vals = vals.reshape(len(a), n) if n else vals.reshape(len(a))
        if full:
            return vals
        res = np.zeros(shape, dtype)
        res[lane_idx] = vals
        return res

    def _strided(self, addr) -> bool:
        r = int(addr) >> SHIFT
        return 0 < r < len(self.regions) and self.regions[r] is not None and bool(
            self.regions[r].lane_stride or self.regions[r].group_stride)

    def store(self, addr, value, mask, nbytes: int, dtype: np.dtype, n: int, where) -> None:
        N = self.lanes.n
        addr = np.asarray(addr, dtype=np.int64)
        full = mask is None or mask.all()
        lane_idx = np.arange(N) if full else np.flatnonzero(mask)
        if not len(lane_idx):
            return
        a = np.broadcast_to(addr, (N,))[lane_idx]
        v = np.asarray(value, dtype=dtype)
        v = np.broadcast_to(v, (N, n) if n else (N,))
        if not full:
            v = v[lane_idx]
        raw = np.ascontiguousarray(v).view(np.uint8).reshape(len(a), nbytes)
        ar = np.arange(nbytes)
        for reg, off, sel in self._resolve(a, lane_idx, nbytes, "store", where):
            if sel is None:
                reg.data[off[:, None] + ar] = raw
            else:
                reg.data[off[:, None] + ar] = raw[sel]

    def contiguous(self, base: np.ndarray, nbytes: int, itemsize: int):
        """(region, first element index per base) when every ``base`` starts ``nbytes`` inside one shared
        (global or constant) region, aligned to ``itemsize``: block accesses then index the region directly.
        None otherwise (the general path checks and names any fault)."""
        rid = base >> SHIFT
        r = int(rid[0])
        if not 0 < r < len(self.regions) or (rid != r).any():
            return None
        reg = self.regions[r]
        if reg is None or reg.lane_stride or reg.group_stride or reg.data.size % itemsize:
            return None
        off = base & OFFSET_MASK
        if int(off.min()) < 0 or int(off.max()) + nbytes > reg.data.size or (off % itemsize).any():
            return None
        return reg, off // itemsize

    def region_of(self, addr: int) -> Region | None:
        r = int(addr) >> SHIFT
        return self.regions[r] if 0 < r < len(self.regions) else None

    def read_bytes(self, addr: int, nbytes: int, where, lane: int = 0) -> np.ndarray:
        """Bytes at one address (uniform operands of sub-group built-ins), bounds-checked."""
        a = np.array([addr], np.int64)
        (reg, off, _), = self._resolve(a, np.array([lane]), nbytes, "read", where)
        o = int(off[0])
        return reg.data[o:o + nbytes]

    def gather(self, addr, lanes, dt, where):
        """Elements of ``dt`` at many addresses (block reads), bounds-checked."""
        out = np.zeros(len(addr), dt)
        for reg, off, sel in self._resolve(addr, lanes, dt.itemsize, "block read", where):
            raw = reg.data[off[:, None] + np.arange(dt.itemsize)].view(dt)[:, 0]
            if sel is None:
                out = raw
            else:
                out[sel] = raw
        return out


    def scatter(self, addr, lanes, vals, dt, where):
        """Store elements at many addresses (block writes), bounds-checked."""
        raw = np.ascontiguousarray(vals).view(np.uint8).reshape(len(addr), dt.itemsize)
        for reg, off, sel in self._resolve(addr, lanes, dt.itemsize, "block write", where):
            reg.data[off[:, None] + np.arange(dt.itemsize)] = raw if sel is None else raw[sel]
