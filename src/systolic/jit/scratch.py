"""Reusable, 64-byte aligned work buffers for the JIT kernels' packed operands.

A fresh NumPy buffer of a few MiB costs a page fault per 4 KiB page on its first write (about 2 ms for 4 MiB on
the development machine: a tenth of a 1024^3 GEMM); the packed copies of A and B are written and read once per
call, so they are taken from here and given back after the call. Buffers up to :data:`KEEP_BYTES` are kept for the
process (at most :data:`KEEP_COUNT`); a buffer is never handed to two callers at once (threads may run GEMMs side
by side). No value written to a buffer is ever read before the kernels write it again.
"""

from __future__ import annotations

import contextlib
import math
import threading

import numpy as np

__all__ = ["buffer", "aligned_empty", "KEEP_BYTES", "KEEP_COUNT"]

KEEP_BYTES = 32 << 20
KEEP_COUNT = 4
_lock = threading.Lock()
_free: list[np.ndarray] = []


def aligned_empty(shape, dtype, align: int = 64) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on an ``align``-byte boundary (numpy's large arrays
    start 16 bytes into a page: every 64-byte row of a packed panel or AMX tile would then straddle two cache
    lines). The one such helper: the scratch buffers below and the AMX native GEMM's operands use it."""
    dt = np.dtype(dtype)
    nbytes = (shape if isinstance(shape, int) else math.prod(shape)) * dt.itemsize
    raw = np.empty(nbytes + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + nbytes].view(dt).reshape(shape)


@contextlib.contextmanager
def buffer(n: int, dtype):
    """An uninitialised, 64-byte aligned array of ``n`` elements of ``dtype`` for the duration of the block."""
    nbytes = max(1, n * np.dtype(dtype).itemsize)
    with _lock:
        fits = [i for i, b in enumerate(_free) if b.size >= nbytes]
        buf = _free.pop(min(fits, key=lambda i: _free[i].size)) if fits else None
    if buf is None:
        buf = aligned_empty(nbytes, np.uint8)
    try:
        yield buf[:nbytes].view(dtype)[:n]
    finally:
        if buf.size <= KEEP_BYTES:
            with _lock:
                _free.append(buf)
                if len(_free) > KEEP_COUNT:
                    _free.sort(key=lambda b: b.size)
                    _free.pop(0)                     # the smallest goes: the large ones save the most
