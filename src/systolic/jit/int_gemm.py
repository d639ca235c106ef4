"""An exact integer GEMM for hosts without AMX: (C + A @ B) mod 2**32 with 16-bit multiply-add pairs (PMADDWD).

The elements of every integer AMX / DPAS operand (int2 ... int8, uint2 ... uint8) are exactly 16-bit integers;
PMADDWD multiplies 16-bit pairs exactly and adds each pair into one 32-bit lane (two products of at most 2**16
in magnitude: no overflow), and the accumulation in int32 lanes wraps modulo 2**32, which is the models' result
(the sum modulo 2**32 is the same in any order). So no chunking, centring or float conversion is needed.

Layout: A as int16 (M x K, K even: pairs (a[k], a[k+1]) read as one 32-bit word and broadcast), B packed in
panels of W columns: panel p, pair row r, column c holds (b[2r, c], b[2r+1, c]) as two adjacent int16. The kernel
``igemm(A, Bp, C, N, K2, i0, i1, p0, p1)`` keeps R rows x V vectors of int32 accumulators in registers for the
whole K of a panel, then adds them to C (int32, wrapping). The vector width follows the host (AVX2: 8 lanes,
AVX-512: 16; :func:`systolic.jit.vector_bits`).
"""

from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from llvmlite import ir

from .build import I32, I64, PTR, VOID, Loop, at, broadcast, declare, define, i64, vec, vload, vstore

__all__ = ["available", "gemm", "module"]

#: rows x vectors of accumulators per register block, by vector bits (16 ymm / 32 zmm registers)
BLOCK = {256: (6, 2), 512: (8, 3), 128: (4, 2)}
_PMADD = {128: "llvm.x86.sse2.pmadd.wd", 256: "llvm.x86.avx2.pmadd.wd", 512: "llvm.x86.avx512.pmaddw.d.512"}
_lock = threading.Lock()
_cache: dict = {}


def module(bits: int, R: int, V: int) -> ir.Module:
    lanes = bits // 32
    W = lanes * V
    I16v, I32v = vec(ir.IntType(16), 2 * lanes), vec(I32, lanes)
    m = ir.Module(name="int_gemm")
    if bits == 512:
        pmadd = _generic_pmadd(m, lanes)
    else:
        pmadd = declare(m, _PMADD[bits], I32v, [I16v, I16v])
    _, b, args = define(m, "igemm", VOID, [PTR, PTR, PTR, I64, I64, I64, I64, I64, I64],
                        names=("A", "Bp", "C", "N", "K2", "i0", "i1", "p0", "p1"), noalias=(0, 1, 2))
    A, Bp, C, N, K2, i0, i1, p0, p1 = args
    lp = Loop(b, p0, p1, 1, name="p")
    p = lp.index
    bpan = at(b, I32, Bp, b.mul(p, b.mul(K2, i64(W))))         # a panel: K2 pair rows x W words
    pcol = b.mul(p, i64(W))
    li = Loop(b, i0, i1, R, name="i")
    i = li.index
    arow = [at(b, I32, A, b.mul(b.add(i, i64(r)), K2)) for r in range(R)]   # A as words: K2 per row
    zero = ir.Constant(I32v, [ir.Constant(I32, 0)] * lanes)
    lk = Loop(b, i64(0), K2, 1, name="k", carry=[zero] * (R * V))
    k = lk.index
    brow = b.mul(k, i64(W))
    bv = [b.bitcast(vload(b, I32v, bpan, b.add(brow, i64(lanes * v)), align=4), I16v) for v in range(V)]
    new = []
    for r in range(R):
        a = b.bitcast(broadcast(b, vload(b, I32, arow[r], k), lanes), I16v)
        for v in range(V):
            new.append(b.add(lk.values[r * V + v], b.call(pmadd, [a, bv[v]])))
    acc = lk.close(new)
    for r in range(R):
        crow = b.add(b.mul(b.add(i, i64(r)), N), pcol)
        for v in range(V):
            idx = b.add(crow, i64(lanes * v))
            old = vload(b, I32v, C, idx, align=4)
            vstore(b, b.add(old, acc[r * V + v]), C, idx, align=4)
    li.close()
    lp.close()
    b.ret_void()
    _pack(m, W)
    return m


def _generic_pmadd(m: ir.Module, lanes: int):
    """PMADDWD written in plain IR (sign-extend, multiply, add the even and odd products): the same integers by
    definition; LLVM selects VPMADDWD for it on AVX-512BW (checked in the assembly) and splits it elsewhere, so the
    512-bit kernel also runs (and is tested) on hosts without AVX-512."""
    I16v, I32v = vec(ir.IntType(16), 2 * lanes), vec(I32, lanes)
    fn, b, (x, y) = define(m, "pmadd", I32v, [I16v, I16v], internal=True, inline=True)
    w = vec(I32, 2 * lanes)
    prod = b.mul(b.sext(x, w), b.sext(y, w))
    even = b.shuffle_vector(prod, prod, ir.Constant(vec(I32, lanes), [2 * i for i in range(lanes)]))
    odd = b.shuffle_vector(prod, prod, ir.Constant(vec(I32, lanes), [2 * i + 1 for i in range(lanes)]))
    b.ret(b.add(even, odd))
    return fn


def _pack(m: ir.Module, W: int) -> None:
    """``ipack(B, K, N, K2, npad, Bp)``: B (K x N int16, row-major) into the kernel's panels (zero-padded)."""
    I16 = ir.IntType(16)
    _, b, (B, K, N, K2, npad, Bp) = define(m, "ipack", VOID, [PTR, I64, I64, I64, I64, PTR],
                                           names=("B", "K", "N", "K2", "npad", "Bp"), noalias=(0, 5))
    lp = Loop(b, i64(0), b.udiv(npad, i64(W)), 1, name="p")
    p = lp.index
    pbase = b.mul(p, b.mul(K2, i64(2 * W)))
    lr = Loop(b, i64(0), K2, 1, name="r")
    r = lr.index
    obase = b.add(pbase, b.mul(r, i64(2 * W)))
    lc = Loop(b, i64(0), i64(W), 1, name="c")
    c = lc.index
    col = b.add(b.mul(p, i64(W)), c)
    colok = b.icmp_signed("<", col, N)
    for e in range(2):
        kk = b.add(b.mul(r, i64(2)), i64(e))
        ok = b.and_(colok, b.icmp_signed("<", kk, K))
        off = b.select(ok, b.add(b.mul(kk, N), col), i64(0))   # in bounds even where the value is not used
        v = b.select(ok, b.load(at(b, I16, B, off), typ=I16), ir.Constant(I16, 0))
        b.store(v, at(b, I16, Bp, b.add(obase, b.add(b.mul(c, i64(2)), i64(e)))))
    lc.close()
    lr.close()
    lp.close()
    b.ret_void()


def _kernel():
    from . import engine
    bits = engine.vector_bits()
    feats = engine.host_features()
    if bits == 256 and "+avx2" not in feats:
        bits = 128
    with _lock:
        if bits not in _cache:
            R, V = BLOCK[bits]
            mod = engine.compile_module(module(bits, R, V))
            i64t = ctypes.c_int64
            fn = mod.cfunc("igemm", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, *([i64t] * 6))
            pack = mod.cfunc("ipack", None, ctypes.c_void_p, *([i64t] * 4), ctypes.c_void_p)
            _cache[bits] = (mod, fn, pack, R, V * bits // 32)
        return _cache[bits]


def available() -> bool:
    try:
        _kernel()
        return True
    except Exception:
        return False


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, threads: int | None = None) -> np.ndarray:
    """(C + A @ B) mod 2**32 as int32 for integer A (M x K) and B (K x N) whose values fit 16 bits (every AMX /
    DPAS integer element does); C: integers taken modulo 2**32, or None for zero."""
    _, fn, pack, R, W = _kernel()
    m, k = a.shape
    n = b.shape[1]
    k2 = -(-k // 2)
    mp, npad = -(-m // R) * R, -(-n // W) * W
    if mp == m and k2 * 2 == k and a.dtype == np.int16 and a.flags.c_contiguous:
        A = a
    else:
        A = np.zeros((mp, 2 * k2), np.int16)
        A[:m, :k] = a
    # panel p, pair row r, column c, element e: b[2r + e, p W + c] (compiled: one pass, padding included)
    b16 = np.ascontiguousarray(b, dtype=np.int16)
    Bp = np.empty(npad * 2 * k2, np.int16)
    pack(b16.ctypes.data, k, n, k2, npad, Bp.ctypes.data)
    if c is None:
        C = np.zeros((mp, npad), np.int32)
    elif mp == m and npad == n and np.asarray(c).dtype == np.int32:
        C = np.array(c, np.int32, order="C")
    else:
        C = np.zeros((mp, npad), np.int32)
        C[:m, :n] = np.asarray(c).astype(np.int64).astype(np.uint32).view(np.int32)
    panels = npad // W
    nthreads = max(1, min(threads or os.cpu_count() or 1, panels))
    args = (A.ctypes.data, Bp.ctypes.data, C.ctypes.data, npad, k2, 0, mp)
    if nthreads == 1:
        fn(*args, 0, panels)
    else:
        step = -(-panels // (4 * nthreads))
        with ThreadPoolExecutor(nthreads) as ex:   # ctypes releases the GIL during each call
            list(ex.map(lambda p0: fn(*args, p0, min(panels, p0 + step)), range(0, panels, step)))
    return C[:m, :n] if (mp == m and npad == n) else np.ascontiguousarray(C[:m, :n])
