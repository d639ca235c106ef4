"""An exact integer GEMM for hosts without AMX: (C + A @ B) mod 2**32 with 16-bit multiply-add pairs (PMADDWD).

The elements of every integer AMX / DPAS operand (int2 ... int8, uint2 ... uint8) are exactly 16-bit integers;
PMADDWD multiplies 16-bit pairs exactly and adds each pair into one 32-bit lane (two products of at most 2**16
in magnitude: no overflow), and the accumulation in int32 lanes wraps modulo 2**32, which is the models' result
(the sum modulo 2**32 is the same in any order). So no chunking, centring or float conversion is needed, and
the K blocking below changes no bit.

Everything runs in compiled code (built with llvmlite's IR builder), in two phases over the host's CPUs:

* packing: ``packa_<t>`` widens A (int8, uint8 or int16: ``t`` = s8, u8, s16) to int16 words (a word = the
  pair (a[i, 2k], a[i, 2k+1]); K padded with zeros to pairs) in panels of R rows, pair row by pair row (rows
  past M zero);
  ``packb_<t>`` widens B into panels of W columns: panel p, pair row r, column c holds (b[2r, c], b[2r+1, c])
  as two adjacent int16 (zero past K and N);
* the product ``igemm``: for its panels of B, K blocks of ``kc`` pair rows, M blocks of ``mc`` rows, the
  panels one by one (a K block of a panel, kc x W words, stays in L1; the next panel's block is prefetched
  meanwhile) and the R-row blocks of the M block (each a stream of R-word pair rows, from L2): R rows x V vectors
  of int32 accumulators in registers (A's pair broadcast as one 32-bit word, B's row of the panel loaded as V
  vectors, one PMADDWD and one add per accumulator and pair),
  then added to C (int32, wrapping; rows past M and columns past N are not written): the first K block reads the
  caller's C (or zero) and writes the result array, so C is neither copied nor zeroed first. The packed copies live
  in reused buffers (:mod:`systolic.jit.scratch`).

The vector width follows the host (AVX2: 8 lanes, AVX-512: 16; :func:`systolic.jit.vector_bits`).
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np
from llvmlite import ir

from . import scratch, workers
from .build import (I8, I16, I32, I64, PTR, VOID, Loop, at, broadcast, declare, define, i64, no_unroll, smin, vec, vload,
                    vstore)

__all__ = ["available", "gemm", "module", "BLOCK", "KC", "MC", "SMALL_WORK"]

#: rows x vectors of accumulators per register block, by vector bits (16 ymm / 32 zmm registers)
BLOCK = {256: (6, 2), 512: (8, 3), 128: (4, 2)}
KC = 512      # pair rows per K block: a panel's block is kc x W words (32 KiB with AVX2; measured faster than 256)
MC = 96       # rows per M block (a multiple of every R): the A block, mc x kc words, stays in L2
PREFETCH_B = True      # prefetch the next panel's block of B while the current one runs
SMALL_WORK = 1 << 22   # 2 M K N below this: one thread (starting work on others costs more than it saves)
_PMADD = {128: "llvm.x86.sse2.pmadd.wd", 256: "llvm.x86.avx2.pmadd.wd", 512: "llvm.x86.avx512.pmaddw.d.512"}
_SRC = {"s8": (I8, "sext", np.int8), "u8": (I8, "zext", np.uint8), "s16": (I16, None, np.int16)}
_lock = threading.Lock()
_cache: dict = {}


def module(bits: int, R: int, V: int) -> ir.Module:
    lanes = bits // 32
    W = lanes * V
    m = ir.Module(name="int_gemm")
    _igemm(m, bits, R, V)
    for t in _SRC:
        _pack_a(m, t, R)
        _pack_b(m, t, W)
    return m


def _igemm(m: ir.Module, bits: int, R: int, V: int) -> None:
    """``igemm(Ap, Bp, C, M, N, ldc, K2, p0, p1, kc, mc)``: C[:M, the columns of panels p0 .. p1-1] += A @ B
    (C's rows ``ldc`` apart; ``kc`` pair rows per K block, ``mc`` rows per M block, a multiple of R)."""
    lanes = bits // 32
    W = lanes * V
    I16v, I32v = vec(I16, 2 * lanes), vec(I32, lanes)
    pmadd = _generic_pmadd(m, lanes) if bits == 512 else declare(m, _PMADD[bits], I32v, [I16v, I16v])
    micro = _micro(m, lanes, R, V, pmadd)
    prefetch = declare(m, "llvm.prefetch.p0", VOID, [PTR, I32, I32, I32])
    _, b, args = define(m, "igemm", VOID, [PTR, PTR, PTR, PTR] + [I64] * 8,
                        names=("Ap", "Bp", "Cin", "C", "M", "N", "ldc", "K2", "p0", "p1", "kc", "mc"),
                        noalias=(0, 1, 3))
    Ap, Bp, Cin, C, M, N, ldc, K2, p0, p1, kc, mc = args
    has_cin = b.icmp_unsigned("!=", b.ptrtoint(Cin, I64), i64(0))
    mp = b.mul(b.sdiv(b.add(M, i64(R - 1)), i64(R)), i64(R))           # M rounded up to whole R-row blocks
    lk = Loop(b, i64(0), K2, kc, name="kb")
    k0 = lk.index
    rest = b.sub(K2, k0)
    klen = smin(b, rest, kc)
    first = b.icmp_signed("==", k0, i64(0))
    src = b.select(first, Cin, C)                  # the first K block reads C's initial values, the others its sums
    useold = b.zext(b.or_(b.not_(first), has_cin), I64)
    lm = Loop(b, i64(0), mp, mc, name="mb")
    i0 = lm.index
    iend = b.add(i0, mc)
    i1 = smin(b, iend, mp)
    lp = Loop(b, p0, p1, 1, name="p")
    p = lp.index
    bblk = at(b, I32, Bp, b.mul(b.add(b.mul(p, K2), k0), i64(W)))     # panel p, pair row k0
    col = b.mul(p, i64(W))
    ncol = b.sub(N, col)
    ncol = smin(b, ncol, i64(W))
    # while the row blocks run on this panel's block of B (in L1), the next panel's block is prefetched in equal
    # shares (its first row block would otherwise wait for it from L3 / memory)
    nxt = at(b, I32, Bp, b.mul(b.add(b.mul(b.add(p, i64(1)), K2), k0), i64(W)))
    has_next = b.and_(b.icmp_signed("<", b.add(p, i64(1)), p1), ir.Constant(ir.IntType(1), int(PREFETCH_B)))
    lines = b.sdiv(b.add(b.mul(klen, i64(4 * W)), i64(63)), i64(64))
    nblocks = b.sdiv(b.add(b.sub(i1, i0), i64(R - 1)), i64(R))
    share = b.sdiv(b.add(lines, b.sub(nblocks, i64(1))), nblocks)
    li = Loop(b, i0, i1, R, name="i")
    i = li.index
    with b.if_then(has_next):
        first = b.mul(b.sdiv(b.sub(i, i0), i64(R)), share)
        last = b.add(first, share)
        lf = Loop(b, first, smin(b, last, lines), 1, name="pf")
        b.call(prefetch, [at(b, I8, nxt, b.mul(lf.index, i64(64))), ir.Constant(I32, 0), ir.Constant(I32, 3),
                          ir.Constant(I32, 1)])
        lf.close()
    ablk = at(b, I32, Ap, b.add(b.mul(i, K2), b.mul(k0, i64(R))))  # row panel i / R, pair row k0
    coff = b.add(b.mul(i, ldc), col)
    b.call(micro, [ablk, bblk, at(b, I32, src, coff), at(b, I32, C, coff), ldc, klen, b.sub(M, i), ncol, useold])
    li.close()
    lp.close()
    lm.close()
    lk.close()
    b.ret_void()


def _micro(m: ir.Module, lanes: int, R: int, V: int, pmadd):
    """``micro(a, bp, cs, c, ldc, klen, nrows, ncols, useold)``: the R x W block of C at ``c`` = the block at ``cs``
    (zero where ``useold`` is 0) + a row panel block of A (``klen`` pair rows of R words) times a panel block of B
    (``klen`` pair rows of W words); only ``nrows`` rows and ``ncols`` columns of C exist (the rest of the block is
    padding: computed, not stored)."""
    W = lanes * V
    I16v, I32v = vec(I16, 2 * lanes), vec(I32, lanes)
    fn, b, (a, bp, cs, c, ldc, klen, nrows, ncols, useold) = define(
        m, "micro", VOID, [PTR, PTR, PTR, PTR, I64, I64, I64, I64, I64],
        names=("a", "bp", "cs", "c", "ldc", "klen", "nrows", "ncols", "useold"), internal=True, inline=True,
        noalias=(0, 1, 3))
    old_ok = b.icmp_signed("!=", useold, i64(0))
    zero = ir.Constant(I32v, [ir.Constant(I32, 0)] * lanes)
    lk = Loop(b, i64(0), klen, 1, name="k", carry=[zero] * (R * V))
    k = lk.index
    brow = at(b, I32, bp, b.mul(k, i64(W)))
    arow = at(b, I32, a, b.mul(k, i64(R)))
    bv = [b.bitcast(vload(b, I32v, brow, lanes * v, align=4), I16v) for v in range(V)]
    new = []
    for r in range(R):
        av = b.bitcast(broadcast(b, vload(b, I32, arow, r), lanes), I16v)
        for v in range(V):
            new.append(b.add(lk.values[r * V + v], b.call(pmadd, [av, bv[v]])))
    acc = lk.close(new)
    no_unroll(m, lk)
    full = b.icmp_signed(">=", ncols, i64(W))
    with b.if_else(full) as (then, otherwise):
        with then:
            for r in range(R):
                with b.if_then(b.icmp_signed(">", nrows, i64(r))):
                    crow = at(b, I32, c, b.mul(i64(r), ldc))
                    srow = at(b, I32, cs, b.mul(i64(r), ldc))
                    for v in range(V):
                        old = _if_load(b, old_ok, lambda: vload(b, I32v, srow, lanes * v, align=4), zero)
                        vstore(b, b.add(old, acc[r * V + v]), crow, lanes * v, align=4)
        with otherwise:      # the last panel of a row: masked loads and stores of its first ncols columns
            I1v = vec(ir.IntType(1), lanes)
            mload = declare(m, f"llvm.masked.load.v{lanes}i32.p0", I32v, [PTR, I32, I1v, I32v])
            mstore = declare(m, f"llvm.masked.store.v{lanes}i32.p0", VOID, [I32v, PTR, I32, I1v])
            nc = b.trunc(ncols, I32)
            masks = [b.icmp_signed("<", ir.Constant(I32v, [lanes * v + j for j in range(lanes)]),
                                   broadcast(b, nc, lanes)) for v in range(V)]
            four = ir.Constant(I32, 4)
            for r in range(R):
                with b.if_then(b.icmp_signed(">", nrows, i64(r))):
                    crow = at(b, I32, c, b.mul(i64(r), ldc))
                    srow = at(b, I32, cs, b.mul(i64(r), ldc))
                    for v in range(V):
                        ps, pv = at(b, I32, srow, lanes * v), at(b, I32, crow, lanes * v)
                        old = _if_load(b, old_ok, lambda: b.call(mload, [ps, four, masks[v], zero]), zero)
                        b.call(mstore, [b.add(old, acc[r * V + v]), pv, four, masks[v]])
    b.ret_void()
    return fn


def _if_load(b, cond, load, zero):
    """``load()`` where ``cond`` holds, else ``zero`` (the load is only executed on that branch)."""
    here = b.block
    with b.if_then(cond):
        v = load()
        loaded = b.block
    phi = b.phi(zero.type)
    phi.add_incoming(v, loaded)
    phi.add_incoming(zero, here)
    return phi


def _generic_pmadd(m: ir.Module, lanes: int):
    """PMADDWD written in plain IR (sign-extend, multiply, add the even and odd products): the same integers by
    definition; LLVM selects VPMADDWD for it on AVX-512BW (checked in the assembly) and splits it elsewhere, so the
    512-bit kernel also runs (and is tested) on hosts without AVX-512."""
    I16v, I32v = vec(I16, 2 * lanes), vec(I32, lanes)
    fn, b, (x, y) = define(m, "pmadd", I32v, [I16v, I16v], internal=True, inline=True)
    w = vec(I32, 2 * lanes)
    prod = b.mul(b.sext(x, w), b.sext(y, w))
    even = b.shuffle_vector(prod, prod, ir.Constant(vec(I32, lanes), [2 * i for i in range(lanes)]))
    odd = b.shuffle_vector(prod, prod, ir.Constant(vec(I32, lanes), [2 * i + 1 for i in range(lanes)]))
    b.ret(b.add(even, odd))
    return fn


def _widen(b, value, t: str):
    ty, ext, _ = _SRC[t]
    if ext is None:
        return value
    target = vec(I16, value.type.count) if isinstance(value.type, ir.VectorType) else I16
    return getattr(b, ext)(value, target)


def _pack_a(m: ir.Module, t: str, R: int) -> None:
    """``packa_<t>(src, lds, M, K, K2, dst, q0, q1)``: row panels q0 .. q1-1 of the packed A: panel q, pair row k,
    row r holds the word (a[qR + r, 2k], a[qR + r, 2k + 1]) widened to int16 (src's rows ``lds`` elements apart;
    zero past K and M), so the kernel reads a panel's K block as one stream."""
    ty = _SRC[t][0]
    _, b, (src, lds, M, K, K2, dst, q0, q1) = define(
        m, f"packa_{t}", VOID, [PTR, I64, I64, I64, I64, PTR, I64, I64],
        names=("src", "lds", "M", "K", "K2", "dst", "q0", "q1"), noalias=(0, 5))
    kfull = b.sdiv(K, i64(2))
    lq = Loop(b, q0, q1, 1, name="q")
    q = lq.index
    pbase = b.mul(q, b.mul(K2, i64(R)))
    for r in range(R):
        i = b.add(b.mul(q, i64(R)), i64(r))
        inside = b.icmp_signed("<", i, M)
        srow = at(b, ty, src, b.mul(b.select(inside, i, i64(0)), lds))
        dst_r = at(b, I32, dst, b.add(pbase, i64(r)))
        nfull = b.select(inside, kfull, i64(0))
        lk = Loop(b, i64(0), nfull, 1, name=f"k{r}")
        pair = _widen(b, vload(b, vec(ty, 2), srow, b.shl(lk.index, i64(1)), align=1), t)
        b.store(b.bitcast(pair, I32), at(b, I32, dst_r, b.mul(lk.index, i64(R))))
        lk.close()
        lz = Loop(b, nfull, K2, 1, name=f"z{r}")      # an odd K's last word (its high half zero); rows past M
        e = b.shl(lz.index, i64(1))
        ok = b.and_(inside, b.icmp_signed("<", e, K))
        lo = _widen(b, b.load(at(b, ty, srow, b.select(ok, e, i64(0))), typ=ty), t)
        b.store(b.select(ok, b.zext(lo, I32), ir.Constant(I32, 0)), at(b, I32, dst_r, b.mul(lz.index, i64(R))))
        lz.close()
    lq.close()
    b.ret_void()


def _pack_b(m: ir.Module, t: str, W: int) -> None:
    """``packb_<t>(src, lds, K, N, K2, dst, p0, p1)``: panels p0 .. p1-1 of B (K x N, rows ``lds`` elements apart)
    in the kernel's layout (panel p, pair row r, column c: b[2r, pW + c], b[2r + 1, pW + c]; zero past K and N)."""
    ty = _SRC[t][0]
    _, b, (src, lds, K, N, K2, dst, p0, p1) = define(
        m, f"packb_{t}", VOID, [PTR, I64, I64, I64, I64, PTR, I64, I64],
        names=("src", "lds", "K", "N", "K2", "dst", "p0", "p1"), noalias=(0, 5))
    kfull = b.sdiv(K, i64(2))                               # pair rows with both elements inside K
    inter = ir.Constant(vec(I32, 2 * W), [x for c in range(W) for x in (c, W + c)])
    lp = Loop(b, p0, p1, 1, name="p")
    p = lp.index
    col = b.mul(p, i64(W))
    pbase = b.mul(p, b.mul(K2, i64(2 * W)))
    whole = b.icmp_signed("<=", b.add(col, i64(W)), N)
    with b.if_then(whole):       # a whole panel: two source rows of W elements -> one row of W pairs
        lr = Loop(b, i64(0), kfull, 1, name="r")
        r = lr.index
        s0 = at(b, ty, src, b.add(b.mul(b.shl(r, i64(1)), lds), col))
        x0 = _widen(b, vload(b, vec(ty, W), s0, 0, align=1), t)
        x1 = _widen(b, vload(b, vec(ty, W), at(b, ty, s0, lds), 0, align=1), t)
        vstore(b, b.shuffle_vector(x0, x1, inter), dst, b.add(pbase, b.mul(r, i64(2 * W))), align=2)
        lr.close()
    # whatever is left (an odd K's last pair row, the columns of a partial last panel): element by element
    rstart = b.select(whole, kfull, i64(0))
    lr = Loop(b, rstart, K2, 1, name="q")
    r = lr.index
    obase = b.add(pbase, b.mul(r, i64(2 * W)))
    lc = Loop(b, i64(0), i64(W), 1, name="c")
    c = lc.index
    cc = b.add(col, c)
    colok = b.icmp_signed("<", cc, N)
    for e in range(2):
        kk = b.add(b.shl(r, i64(1)), i64(e))
        ok = b.and_(colok, b.icmp_signed("<", kk, K))
        off = b.select(ok, b.add(b.mul(kk, lds), cc), i64(0))   # in bounds even where the value is not used
        v = b.select(ok, _widen(b, b.load(at(b, ty, src, off), typ=ty), t), ir.Constant(I16, 0))
        b.store(v, at(b, I16, dst, b.add(obase, b.add(b.shl(c, i64(1)), i64(e)))))
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
            mod = engine.compile_module(module(bits, R, V), vectorize=True)
            i64t, vp = ctypes.c_int64, ctypes.c_void_p
            fn = mod.cfunc("igemm", None, vp, vp, vp, vp, *([i64t] * 8))
            packs = {t: (mod.cfunc(f"packa_{t}", None, vp, *([i64t] * 4), vp, i64t, i64t),
                         mod.cfunc(f"packb_{t}", None, vp, *([i64t] * 4), vp, i64t, i64t)) for t in _SRC}
            _cache[bits] = (mod, fn, packs, R, V * bits // 32)
        return _cache[bits]


def available() -> bool:
    try:
        _kernel()
        return True
    except Exception:
        return False


def _source(x: np.ndarray):
    """(array, kind, row stride in elements): int8 / uint8 / int16 read in place where rows are contiguous;
    anything else (values fitting 16 bits) converted to int16 first."""
    for t, (_, _, dt) in _SRC.items():
        if x.dtype == dt:
            break
    else:
        x, t = x.astype(np.int16), "s16"
    if x.shape[0] > 1 and x.shape[1] > 0 and (x.strides[1] != x.itemsize or x.strides[0] % x.itemsize
                                              or x.strides[0] < x.shape[1] * x.itemsize):
        x = np.ascontiguousarray(x)
    elif x.strides[1] != x.itemsize and x.shape[1] > 1:
        x = np.ascontiguousarray(x)
    lds = x.strides[0] // x.itemsize if x.shape[0] > 1 else x.shape[1]
    return x, t, lds


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, threads: int | None = None) -> np.ndarray:
    """(C + A @ B) mod 2**32 as int32 for integer A (M x K) and B (K x N) whose values fit 16 bits (every AMX /
    DPAS integer element does); C: integers taken modulo 2**32, or None for zero. ``threads``: at most this many
    (default: the CPUs this process may run on)."""
    _, fn, packs, R, W = _kernel()
    a, b = np.asarray(a), np.asarray(b)
    m, k = a.shape
    n = b.shape[1]
    k2 = -(-k // 2)
    mp, panels = -(-m // R) * R, -(-n // W)
    cv = None if c is None else np.asarray(c)
    if cv is not None and cv.dtype != np.int32:    # other integers (UD values, Python ints) taken modulo 2**32
        cv = cv.astype(np.int64).astype(np.uint32).view(np.int32)
    if cv is not None:
        cv = np.ascontiguousarray(cv)              # read in place (the kernel's first K block adds it)
    if m == 0 or n == 0 or k == 0:
        return np.zeros((m, n), np.int32) if cv is None else cv.copy()
    C = np.empty((m, n), np.int32)
    asrc, ta, lsa = _source(a)
    bsrc, tb, lsb = _source(b)
    with scratch.buffer(mp * k2, np.int32) as Ap, scratch.buffer(panels * k2 * 2 * W, np.int16) as Bp:
        _run(fn, packs[ta][0], packs[tb][1], asrc, ta, lsa, bsrc, tb, lsb, Ap, Bp, cv, C, m, k, n, k2, mp, panels,
             R, threads)
    return C


def _run(fn, packa, packb, asrc, ta, lsa, bsrc, tb, lsb, Ap, Bp, cv, C, m, k, n, k2, mp, panels, R, threads):
    nthreads = max(1, min(threads or workers.cpus(), panels))
    if 2 * m * k * n < SMALL_WORK:
        nthreads = 1
    # phase 1: pack (pieces of rows of A and of panels of B)
    npk = 1 if nthreads == 1 else 4 * nthreads                     # pieces, handed out dynamically
    rows = [mp // R * i // npk for i in range(npk + 1)]             # row panels of A
    pans = [panels * i // npk for i in range(npk + 1)]

    def pack(i):
        packa(asrc.ctypes.data, lsa, m, k, k2, Ap.ctypes.data, rows[i], rows[i + 1])
        packb(bsrc.ctypes.data, lsb, k, n, k2, Bp.ctypes.data, pans[i], pans[i + 1])
    # phase 2: the product, in chunks of panels handed out dynamically (a thread slowed by other work gets fewer)
    nchunks = 1 if nthreads == 1 else min(panels, 4 * nthreads)
    chunks = [panels * i // nchunks for i in range(nchunks + 1)]
    args = (Ap.ctypes.data, Bp.ctypes.data, None if cv is None else cv.ctypes.data, C.ctypes.data, m, n, n, k2)

    def run(i):
        fn(*args, chunks[i], chunks[i + 1], KC, max(R, MC // R * R))
    workers.for_each(pack, range(npk), nthreads)     # the process's pool (jit.workers); one piece: inline
    workers.for_each(run, range(nchunks), nthreads)
