"""cl_intel_subgroup_2d_block_io inside the interpreter (semantics: :mod:`systolic.cl.blockio2d`)."""

from __future__ import annotations

import numpy as np

from ..errors import DivergentCollective, InvalidValue
from .availability import unsupported_on
from .blockio2d import parse_name, supported

__all__ = ["block2d"]

_EDT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_UDT = {"uchar": np.uint8, "ushort": np.uint16, "uint": np.uint32, "ulong": np.uint64}


def _uniform(vals, g, L, what, info):
    v = np.broadcast_to(np.asarray(vals), (L.n,) + np.shape(vals)[1:] if np.ndim(vals) and np.shape(vals)[0] == L.n
                        else (L.n,) + np.shape(vals)).reshape((L.G, L.S) + (np.shape(vals)[1:] if np.ndim(vals) and
                                                                               np.shape(vals)[0] == L.n
                                                                               else np.shape(vals)))[g]
    first = v[:, :1]
    if (v != first).any():
        bad = int(g[np.flatnonzero((v != first).reshape(len(g), -1).any(axis=1))[0]])
        raise DivergentCollective(f"{info.base}: {what} differs between the work-items of a sub-group",
                                  rule="cl_intel_subgroup_2d_block_io: the arguments are uniform in the sub-group",
                                  values={"instruction": info.text[:100], **L.describe(bad * L.S)})
    return v[:, 0]


def block2d(info):
    spec = parse_name(info.base)
    eb = spec.bits // 8
    edt = np.dtype(_EDT[spec.bits])
    udt = np.dtype(_UDT[spec.unit])

    def f(fr, args):
        L = fr.ex.lanes
        P = fr.ex.launch.platform
        if not supported(P):
            raise unsupported_on(info.base, P)
        active = fr.ex.require_converged(fr.mask, info.base, info.where(fr))
        g = np.flatnonzero(active)
        if not len(g) or spec.op == "prefetch":
            return None
        base = _uniform(args[0], g, L, "the base address", info).astype(np.int64)
        width = _uniform(args[1], g, L, "the width", info).astype(np.int64)
        height = _uniform(args[2], g, L, "the height", info).astype(np.int64)
        pitch = _uniform(args[3], g, L, "the pitch", info).astype(np.int64)
        coord = _uniform(args[4], g, L, "the coordinate", info).astype(np.int64)
        if (pitch < width).any() or (width <= 0).any() or (height <= 0).any():
            k = int(np.flatnonzero((pitch < width) | (width <= 0) | (height <= 0))[0])
            raise InvalidValue(f"{info.base}: the surface needs width > 0, height > 0 and pitch >= width",
                               rule="cl_intel_subgroup_2d_block_io: surface width, height and pitch in bytes/rows",
                               values={"width": int(width[k]), "height": int(height[k]), "pitch": int(pitch[k])})
        C, R, W = spec.blocks, spec.rows, spec.width
        cc, rr, ee = np.meshgrid(np.arange(C), np.arange(R), np.arange(W), indexing="ij")
        xe = coord[:, 0, None, None, None] + cc * W + ee                  # (g, C, R, W) element columns
        yr = coord[:, 1, None, None, None] + rr
        inb = (xe >= 0) & ((xe + 1) * eb <= width[:, None, None, None]) & (yr >= 0) & \
              (yr < height[:, None, None, None])
        addr = base[:, None, None, None] + yr * pitch[:, None, None, None] + xe * eb
        lane_of = np.broadcast_to((g * L.S)[:, None, None, None], addr.shape)
        mem = fr.ex.launch.mem
        where = info.where(fr)
        total_units = spec.nbytes // udt.itemsize
        count = -(-total_units // L.S)            # a block smaller than the sub-group: the last lanes get 0
        per_lane = count * udt.itemsize
        dest = np.broadcast_to(np.asarray(args[5], np.int64), (L.n,))
        lane_mask = np.zeros(L.n, bool)
        lane_mask[(g[:, None] * L.S + np.arange(L.S)[None, :]).reshape(-1)] = True
        lane_mask &= L.valid
        if spec.op.startswith("read"):
            data = np.zeros(addr.shape, edt)
            if inb.any():
                data[inb] = mem.gather(addr[inb], lane_of[inb], edt, where)
            if spec.op == "read_transform":
                per = 4 // eb
                d = data.reshape(len(g), C, R // per, per, W).transpose(0, 1, 2, 4, 3)     # (g, C, R/per, W, per)
            elif spec.op == "read_transpose":
                d = data.transpose(0, 1, 3, 2)                                            # (g, C, W, R)
            else:
                d = data
            units = np.zeros((len(g), count * L.S), udt)
            units[:, :total_units] = np.ascontiguousarray(d).reshape(len(g), -1).view(udt)
            per_lane_units = units.reshape(len(g), count, L.S).transpose(0, 2, 1)          # (g, S, count)
            full = np.zeros((L.G, L.S, count), udt)
            full[g] = per_lane_units
            vals = full.reshape(L.n, count).view(np.uint8).reshape(L.n, per_lane)
            mem.store(dest, vals, lane_mask, per_lane, np.dtype(np.uint8), per_lane, where)
            return None
        # write: each lane's units from its pointer
        raw = mem.load(dest, lane_mask, per_lane, np.dtype(np.uint8), per_lane, where)
        units = raw.reshape(L.G, L.S, per_lane)[g].view(udt).reshape(len(g), L.S, count)
        flat = np.ascontiguousarray(units.transpose(0, 2, 1)).reshape(len(g), -1)[:, :total_units]
        flat = np.ascontiguousarray(flat).view(edt).reshape(addr.shape)
        if inb.any():
            mem.scatter(addr[inb], lane_of[inb], flat[inb], edt, where)
        return None
    return f
