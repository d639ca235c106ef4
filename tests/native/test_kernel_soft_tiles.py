"""The native GEMM's loops and addressing, run on any x86-64 CPU: the kernel is built with software tiles.

:func:`systolic.amx.native_gemm_ir.kernel_module` takes the class that emits the tile instructions; here each
one becomes a call into Python that keeps eight 16 x 64-byte tiles per thread. The software TDP is deliberately
order-sensitive (C <- 3 C + A.B mod 2^32), so a K step run twice, skipped, or out of order, a partial-sum
buffer read back wrong between K blocks, or a tile written to the wrong place changes the result. The oracle is
that recurrence over the K steps in increasing order, per element, in int64 numpy (independent of the kernel).
Every driver option (threads, blocks, K blocks, loop order, prefetch, A packing, runtime, C given) is swept.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest
from llvmlite import ir

from systolic import jit
from systolic.amx import native_gemm as G
from systolic.amx import native_gemm_ir as GI
from systolic.jit.build import I64, PTR, VOID, declare

_tiles: dict = {}
_lock = threading.Lock()


def _regs():
    with _lock:   # per OS thread (the spawn runtime's threads are not Python threads: no threading.local)
        return _tiles.setdefault(threading.get_ident(), np.zeros((8, 16, 64), np.uint8))


def _load(t, p, stride):
    r = _regs()
    for i in range(16):
        r[t, i] = np.frombuffer(ctypes.string_at(p + i * stride, 64), np.uint8)


def _store(t, p, stride):
    r = _regs()
    for i in range(16):
        ctypes.memmove(p + i * stride, r[t, i].ctypes.data, 64)


def _zero(t):
    _regs()[t] = 0


def _dot(d, s1, s2):
    r = _regs()
    a = r[s1].view(np.int8).astype(np.int64)                       # 16 rows x 64 k
    b = r[s2].view(np.int8).astype(np.int64).reshape(16, 16, 4)    # k/4 rows x 16 columns x 4
    prod = np.einsum("ikq,kjq->ij", a.reshape(16, 16, 4), b)
    c = r[d].view(np.int32).astype(np.int64)
    r[d] = ((3 * c + prod) % 2**32).astype(np.uint32).view(np.uint8).reshape(16, 64)


_CB = {"ldtilecfg": (ctypes.CFUNCTYPE(None, ctypes.c_void_p), lambda p: None),
       "tilerelease": (ctypes.CFUNCTYPE(None), lambda: None),
       "tilezero": (ctypes.CFUNCTYPE(None, ctypes.c_int64), _zero),
       "tileloadd": (ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64), _load),
       "tilestored": (ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64), _store),
       "dot": (ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64), _dot)}
_keep: list = []


class SoftAmx:
    """The tile instructions as calls of the Python functions above (same interface as jit.x86amx.Amx)."""

    def __init__(self, module):
        self.m = module

    def _call(self, b, name, types, args):
        b.call(declare(self.m, f"systolic_test_soft_{name}", VOID, types), args)

    def ldtilecfg(self, b, cfg):
        self._call(b, "ldtilecfg", [PTR], [cfg])

    def tilerelease(self, b):
        self._call(b, "tilerelease", [], [])

    def tilezero(self, b, t):
        self._call(b, "tilezero", [I64], [ir.Constant(I64, t)])

    def tileloadd(self, b, t, ptr, stride, *, t1=False):
        stride = stride if isinstance(stride, ir.Value) else ir.Constant(I64, stride)
        self._call(b, "tileloadd", [I64, PTR, I64], [ir.Constant(I64, t), ptr, stride])

    def tilestored(self, b, t, ptr, stride):
        stride = stride if isinstance(stride, ir.Value) else ir.Constant(I64, stride)
        self._call(b, "tilestored", [I64, PTR, I64], [ir.Constant(I64, t), ptr, stride])

    def dot(self, b, mnemonic, d, s1, s2):
        self._call(b, "dot", [I64, I64, I64], [ir.Constant(I64, x) for x in (d, s1, s2)])


@pytest.fixture(scope="module")
def soft_kernel():
    llvm = jit.llvm()
    with jit.engine._lock:
        for name, (proto, fn) in _CB.items():
            cb = proto(fn)
            _keep.append(cb)
            llvm.add_symbol(f"systolic_test_soft_{name}", ctypes.cast(cb, ctypes.c_void_p).value)
    G._bind_pthreads()
    vp, i64 = ctypes.c_void_p, ctypes.c_int64
    out = {}

    def compiled(mnemonic, prefetch=0, micro="row", t1=""):
        key = (prefetch, micro, t1)
        if key not in out:
            mod = jit.compile_module(GI.kernel_module("tdpbssd", SoftAmx, prefetch=prefetch, micro=micro, t1=t1),
                                     optimise=False)
            f = mod.cfunc("gemm", None, vp, vp, i64, vp, i64, vp, i64, i64, vp, i64, vp, i64, vp, vp, i64, vp)
            fmt = mod.cfunc("gemm_mt", None, vp, i64, vp)
            out[key] = (mod, f, fmt)
        return out[key]
    return compiled


def _oracle(a, b, c):
    """C_s = 3 C_{s-1} + A[:, 64s:64s+64] @ B[64s:64s+64] (mod 2^32) over the zero-padded K steps."""
    m, k = a.shape
    kp = -(-k // 64) * 64
    ap = np.zeros((m, kp), np.int64)
    ap[:, :k] = a
    bp = np.zeros((kp, b.shape[1]), np.int64)
    bp[:k] = b
    acc = np.zeros((m, b.shape[1]), np.int64) if c is None else c.astype(np.int64)
    for s in range(0, kp, 64):
        acc = (3 * acc + ap[:, s:s + 64] @ bp[s:s + 64]) % 2**32
    return acc.astype(np.uint32).view(np.int32)


@pytest.mark.parametrize("shape", [(96, 320, 128), (70, 200, 33), (32, 64, 32), (160, 448, 96)])
def test_kernel_schedule_keeps_every_tile_chain(soft_kernel, monkeypatch, shape):
    monkeypatch.setattr(G, "_compiled", soft_kernel)
    monkeypatch.setattr(G, "_require_native", lambda: None)
    m, k, n = shape
    rng = np.random.default_rng(m * 7 + k + n)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    c = rng.integers(-2**31, 2**31, (m, n), dtype=np.int64).astype(np.int32)
    want, want_c = _oracle(a, b, None), _oracle(a, b, c)
    options = [dict(threads=1), dict(threads=1, k_block=2), dict(threads=3, k_block=2, order="m"),
               dict(threads=2, k_block=3, order="n", prefetch=2, block_m=32, block_n=64),
               dict(threads=4, k_block=1, order="m", pack_a=False, runtime="spawn"),
               dict(threads=2, k_block=4, block_m=64, block_n=32, runtime="spawn"),
               dict(threads=5, k_block=100, prefetch=1),
               dict(threads=3, schedule="dynamic", block_m=32, block_n=64, k_block=2),
               dict(threads=4, schedule="dynamic", order="m", pack_a=False, runtime="spawn"),
               # the micro-kernels: column-first TDP order; double-buffered halves (odd and even K blocks, the
               # tail step of an odd block), TILELOADDT1 operands
               dict(threads=1, micro="col", k_block=2, order="m", t1="b"),
               dict(threads=2, micro="db", k_block=3, order="m", prefetch=2),
               dict(threads=1, micro="db", t1="ab"),
               dict(threads=3, micro="db", k_block=2, order="n", pack_a=False, schedule="dynamic", block_m=32,
                    block_n=64),
               dict(threads=2, micro="col", t1="a", prefetch=1, runtime="spawn"),
               # padded panels (A's tile-contiguous copies and B's VNNI panels; B below also packed apart)
               dict(threads=1, pad=0, k_block=2, order="m"), dict(threads=2, pad=64, k_block=3, micro="db"),
               dict(threads=3, pad=1024, order="n", schedule="dynamic", block_m=32, block_n=64),
               dict(threads=2, pad=192, k_block=1, order="m", micro="col", runtime="spawn")]
    for opt in options:
        assert np.array_equal(G.matmul(a, b, **opt), want), opt
        assert np.array_equal(G.matmul(a, b, c=c, **opt), want_c), opt
        # C given as a strided view: copied into the padded buffer, the same sums
        cc = np.zeros((m, 2 * n), np.int32)
        cc[:, ::2] = c
        assert np.array_equal(G.matmul(a, b, c=cc[:, ::2], **opt), want_c), opt
    # B packed with another padding than the call's A panels
    for bpad, apad in ((320, 64), (0, 1024), (1024, 0)):
        pb = G.pack_b(b, pad=bpad)
        assert pb.pad == bpad and pb.data.size == pb.np_ // 16 * (pb.panel_bytes + bpad)
        assert np.array_equal(G.matmul(a, pb, pad=apad, threads=2, k_block=2), want), (bpad, apad)
