"""The native AMX GEMM's code, built with llvmlite's IR builder: the tile micro-kernel, the thread tree and the
resident worker pool (the driver, packing and planning are in :mod:`systolic.amx.native_gemm`).

* ``gemm(cfg, A, lda, Bp, panel, C, ldc, ksteps, regions, nregions, abuf, flags)`` -- the 32x32 micro-kernel
  (tmm0-3 hold C, tmm4-5 A, tmm6-7 B) over a list of regions of C. flags: bit 0 = pack A (each region's rows of A
  copied by tile moves into abuf, one contiguous 1 KiB tile per K step; consecutive regions with the same rows
  reuse the copy); bits 8.. = K steps per K block (0: all); bit 1 = accumulate: the first K block loads C (the caller's initial values) instead
  of zeroing the tiles. With K blocks, C tiles are stored after each block
  and loaded again for the next (an exact round trip); the TDP chain of every C tile is unchanged.
* ``gemm_mt(shares, n, tids)`` -- n shares of work on a binary tree of POSIX threads.
* ``pool_worker(ctrl, w)`` / ``pool_run(ctrl, workers)`` -- the resident pool parked on Linux futexes.
* ``pack_b_<bytes>(src, ld, k, n, kp, npad, dst)`` -- B (K x N, row stride ld bytes) into VNNI panels of 16
  columns, zero-padded (compiled packing: no numpy temporaries).
"""

from __future__ import annotations

from llvmlite import ir

from ..jit.build import (I8, I16, I32, I64, PTR, VOID, Loop, at, declare, define, function_pointer, i64,
                         store_atomic)
from ..jit.x86amx import Amx
from . import isa

__all__ = ["kernel_module", "threads_ir", "pool_module", "pack_module", "SHARE_FIELDS", "POOL_FN", "CTRL_GEN",
           "CTRL_PENDING", "CTRL_SHARES", "CTRL_N", "CTRL_STOP", "CTRL_DONE", "CTRL_FIELDS"]

#: i64 fields of one worker's share: the 12 arguments of @gemm, then its index, the worker count, the
#: address of share 0 and the address of the thread-id array
SHARE_FIELDS = 16
#: control block of the resident worker pool (byte offsets of i64 slots; futex words are their low 32 bits)
CTRL_GEN, CTRL_PENDING, CTRL_SHARES, CTRL_N, CTRL_STOP, CTRL_DONE, CTRL_FIELDS = 0, 8, 16, 24, 32, 40, 64
#: in a pool share, slot 12 holds the address of the @gemm to call (the pool serves every kernel)
POOL_FN = 12

_GEMM_ARGS = [PTR, PTR, I64, PTR, I64, PTR, I64, I64, PTR, I64, PTR, I64]
_GEMM_PTR_SLOTS = (0, 1, 3, 5, 8, 10)


def _gemm(m: ir.Module, mnemonic: str) -> ir.Function:
    amx = Amx(m)
    fn, b, args = define(m, "gemm", VOID, _GEMM_ARGS,
                         names=("cfg", "A", "lda", "B", "panel", "C", "ldc", "ksteps", "regions", "nreg", "abuf",
                                "flags"))
    cfg, A, lda, B, panel, C, ldc, ksteps, regions, nreg, abuf, flags = args
    amx.ldtilecfg(b, cfg)
    ldc16 = b.mul(ldc, i64(16))
    dopack = b.icmp_unsigned("!=", b.and_(flags, i64(1)), i64(0))
    kcfield = b.lshr(flags, i64(8))
    kc = b.select(b.icmp_unsigned("==", kcfield, i64(0)), ksteps, kcfield)
    astep = b.select(dopack, i64(1024), i64(64))
    astride = b.select(dopack, i64(64), lda)
    pstride = b.mul(ksteps, i64(1024))
    apanel = b.select(dopack, pstride, i64(0))
    anext = b.select(dopack, pstride, b.mul(lda, i64(16)))
    # regions: nreg x (m0, m1, n0, n1)
    lr = Loop(b, i64(0), nreg, 1, name="r", unsigned=True, carry=[i64(-1)])
    r = lr.index
    prevm0 = lr.values[0]
    q = at(b, I64, regions, b.mul(r, i64(4)))
    m0, m1, n0, n1 = (b.load(at(b, I64, q, j), typ=I64) for j in range(4))
    packnow = b.and_(dopack, b.icmp_signed("!=", m0, prevm0))
    with b.if_then(packnow):
        # each 16-row panel of the region's rows: TILELOADD stride lda -> TILESTORED stride 64, per K step
        lpm = Loop(b, m0, m1, 16, name="pm", unsigned=True, do_while=True)
        pm = lpm.index
        pabase = at(b, I8, A, b.mul(pm, lda))
        pdbase = at(b, I8, abuf, b.mul(b.udiv(b.sub(pm, m0), i64(16)), pstride))
        lps = Loop(b, i64(0), ksteps, 1, name="ps", unsigned=True, do_while=True)
        ps = lps.index
        amx.tileloadd(b, 4, at(b, I8, pabase, b.mul(ps, i64(64))), lda)
        amx.tilestored(b, 4, at(b, I8, pdbase, b.mul(ps, i64(1024))), 64)
        lps.close()
        lpm.close()
    ln = Loop(b, n0, n1, 32, name="n", unsigned=True, do_while=True)
    n = ln.index
    b0base = at(b, I8, B, b.mul(b.udiv(n, i64(16)), panel))
    b1base = at(b, I8, b0base, panel)
    cn = b.mul(n, i64(4))
    lkb = Loop(b, i64(0), ksteps, kc, name="kb", unsigned=True, do_while=True)
    kb = lkb.index
    kend0 = b.add(kb, kc)
    kend = b.select(b.icmp_unsigned(">", kend0, ksteps), ksteps, kend0)
    # the first K block starts the C tiles at zero, unless flags bit 1 asks to accumulate into C as given
    first = b.and_(b.icmp_unsigned("==", kb, i64(0)), b.icmp_unsigned("==", b.and_(flags, i64(2)), i64(0)))
    lm = Loop(b, m0, m1, 32, name="m", unsigned=True, do_while=True)
    mrow = lm.index
    aoff = b.select(dopack, b.mul(b.udiv(b.sub(mrow, m0), i64(16)), apanel), b.mul(mrow, lda))
    a0base = at(b, I8, b.select(dopack, abuf, A), aoff)
    a1base = at(b, I8, a0base, anext)
    c00 = at(b, I8, C, b.add(b.mul(mrow, ldc), cn))
    c01 = at(b, I8, c00, 64)
    c10 = at(b, I8, c00, ldc16)
    c11 = at(b, I8, c10, 64)
    ctiles = (c00, c01, c10, c11)
    with b.if_else(first) as (zero, load):
        with zero:
            for t in range(4):
                amx.tilezero(b, t)
        with load:
            for t, p in enumerate(ctiles):
                amx.tileloadd(b, t, p, ldc)
    lk = Loop(b, kb, kend, 1, name="s", unsigned=True, do_while=True)
    s = lk.index
    ao, bo = b.mul(s, astep), b.mul(s, i64(1024))
    amx.tileloadd(b, 4, at(b, I8, a0base, ao), astride)
    amx.tileloadd(b, 6, at(b, I8, b0base, bo), 64)
    tmul = isa.get(mnemonic).intrinsic
    amx.dot(b, tmul, 0, 4, 6)
    amx.tileloadd(b, 7, at(b, I8, b1base, bo), 64)
    amx.dot(b, tmul, 1, 4, 7)
    amx.tileloadd(b, 5, at(b, I8, a1base, ao), astride)
    amx.dot(b, tmul, 2, 5, 6)
    amx.dot(b, tmul, 3, 5, 7)
    lk.close()
    for t, p in enumerate(ctiles):
        amx.tilestored(b, t, p, ldc)
    lm.close()
    lkb.close()
    ln.close()
    lr.close([m0])
    amx.tilerelease(b)
    b.ret_void()
    return fn


def _share_args(b, sh):
    """The 12 @gemm arguments stored in a share (i64 slots; pointers converted back)."""
    vals = []
    for i in range(12):
        v = b.load(at(b, I64, sh, i), typ=I64)
        vals.append(b.inttoptr(v, PTR) if i in _GEMM_PTR_SLOTS else v)
    return vals


def _threads(m: ir.Module, gemm: ir.Function) -> None:
    """gemm_mt(shares, n, tids): worker i first starts workers 2i+1 and 2i+2 (thread creation takes log2(n)
    steps), then does its share, then joins its children. Worker 0 is the calling thread; a worker whose
    thread cannot be created runs on its parent."""
    pcreate = declare(m, "pthread_create", I32, [PTR, PTR, PTR, PTR])
    pjoin = declare(m, "pthread_join", I32, [I64, PTR])
    worker = ir.Function(m, ir.FunctionType(PTR, [PTR]), "worker")
    null = ir.Constant(PTR, None)

    spawn, b, (child, n, base, tids) = define(m, "spawn", VOID, [I64, I64, PTR, PTR], internal=True)
    with b.if_then(b.icmp_unsigned("<", child, n)):
        arg = at(b, I64, base, b.mul(child, i64(SHARE_FIELDS)))
        tid = at(b, I64, tids, child)
        rc = b.call(pcreate, [tid, null, worker, arg])
        with b.if_then(b.icmp_unsigned("!=", rc, ir.Constant(I32, 0))):
            b.store(i64(0), tid)
            b.call(worker, [arg])
    b.ret_void()

    join, b, (child, n, tids) = define(m, "join", VOID, [I64, I64, PTR], internal=True)
    with b.if_then(b.icmp_unsigned("<", child, n)):
        t = b.load(at(b, I64, tids, child), typ=I64)
        with b.if_then(b.icmp_unsigned("!=", t, i64(0))):
            b.call(pjoin, [t, null])
    b.ret_void()

    b = ir.IRBuilder(worker.append_basic_block("entry"))
    a = worker.args[0]
    gargs = _share_args(b, a)
    idx, cnt = (b.load(at(b, I64, a, j), typ=I64) for j in (12, 13))
    base, tids = (b.inttoptr(b.load(at(b, I64, a, j), typ=I64), PTR) for j in (14, 15))
    c1 = b.add(b.mul(idx, i64(2)), i64(1))
    c2 = b.add(c1, i64(1))
    b.call(spawn, [c1, cnt, base, tids])
    b.call(spawn, [c2, cnt, base, tids])
    b.call(gemm, gargs)
    b.call(join, [c1, cnt, tids])
    b.call(join, [c2, cnt, tids])
    b.ret(null)

    _, b, (shares, _n, _tids) = define(m, "gemm_mt", VOID, [PTR, I64, PTR])
    b.call(worker, [shares])
    b.ret_void()


def kernel_module(mnemonic: str) -> ir.Module:
    """@gemm for ``mnemonic`` and the thread tree @gemm_mt around it."""
    m = ir.Module(name=f"amx_gemm_{mnemonic}")
    _threads(m, _gemm(m, mnemonic))
    return m


def pool_module() -> ir.Module:
    """A resident pool of worker threads for the GEMM (Linux futexes; no Python while it works).

    pool_worker(ctrl, w): worker w waits (spins briefly, then FUTEX_WAIT) until the generation counter moves,
    runs share w if w < n (an indirect call of the share's @gemm), counts ``pending`` down and wakes the caller
    when it was the last; returns when ``stop`` is set. pool_run(ctrl, workers): the caller publishes a job
    (shares, n already stored), bumps the generation, wakes the workers, runs share 0 itself and waits until
    every worker has reported."""
    m = ir.Module(name="amx_gemm_pool")
    syscall = declare(m, "syscall", I64, [I64], var_arg=True)
    pause = declare(m, "llvm.x86.sse2.pause", VOID, [])
    gemm_t = ir.FunctionType(VOID, _GEMM_ARGS)
    null = ir.Constant(PTR, None)
    FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE, SYS_FUTEX = 128, 129, 202

    run_share, b, (shares, w) = define(m, "run_share", VOID, [PTR, I64], internal=True)
    sh = at(b, I64, shares, b.mul(w, i64(SHARE_FIELDS)))
    gargs = _share_args(b, sh)
    b.call(function_pointer(b, b.load(at(b, I64, sh, POOL_FN), typ=I64), gemm_t), gargs)
    b.ret_void()

    # wait until the i32 at addr differs from val: spin `spins` times, then sleep in FUTEX_WAIT_PRIVATE
    wait_change, b, (addr, val, spins) = define(m, "wait_change", I32, [PTR, I32, I64], internal=True)
    fn = wait_change
    ls = Loop(b, i64(0), spins, 1, name="spin", unsigned=True)
    cur = b.load_atomic(addr, "acquire", 4, typ=I32)
    moved = b.icmp_unsigned("!=", cur, val)
    out = fn.append_basic_block("out")
    again = fn.append_basic_block("again")
    b.cbranch(moved, out, again)
    b.position_at_end(again)
    b.call(pause, [])
    ls.close()
    sleep = fn.append_basic_block("sleep")
    b.branch(sleep)
    b.position_at_end(sleep)
    cur2 = b.load_atomic(addr, "acquire", 4, typ=I32)
    out2 = fn.append_basic_block("out2")
    dosleep = fn.append_basic_block("dosleep")
    b.cbranch(b.icmp_unsigned("!=", cur2, val), out2, dosleep)
    b.position_at_end(dosleep)
    b.call(syscall, [i64(SYS_FUTEX), addr, i64(FUTEX_WAIT_PRIVATE), val, null])
    b.branch(sleep)
    b.position_at_end(out)
    b.ret(cur)
    b.position_at_end(out2)
    b.ret(cur2)

    wake, b, (addr, count) = define(m, "wake", VOID, [PTR, I32], internal=True)
    b.call(syscall, [i64(SYS_FUTEX), addr, i64(FUTEX_WAKE_PRIVATE), count])
    b.ret_void()

    fn, b, (ctrl, w) = define(m, "pool_worker", VOID, [PTR, I64])
    genp, pendp, sharesp, np_, stopp, donep = (at(b, I8, ctrl, off) for off in
                                                (CTRL_GEN, CTRL_PENDING, CTRL_SHARES, CTRL_N, CTRL_STOP, CTRL_DONE))
    entry = b.block
    loop = fn.append_basic_block("loop")
    b.branch(loop)
    b.position_at_end(loop)
    seen = b.phi(I32)
    seen.add_incoming(ir.Constant(I32, 0), entry)
    g = b.call(wait_change, [genp, seen, i64(20000)])
    stop = b.load_atomic(stopp, "acquire", 8, typ=I64)
    exit_ = fn.append_basic_block("exit")
    work = fn.append_basic_block("work")
    b.cbranch(b.icmp_unsigned("!=", stop, i64(0)), exit_, work)
    b.position_at_end(work)
    n = b.load(np_, typ=I64)
    with b.if_then(b.icmp_unsigned("<", w, n)):
        b.call(run_share, [b.load(sharesp, typ=PTR), w])
    old = b.atomic_rmw("sub", pendp, i64(1), "acq_rel")
    with b.if_then(b.icmp_unsigned("==", old, i64(1))):
        store_atomic(b, ir.Constant(I32, 1), donep, "release", 4)
        b.call(wake, [donep, ir.Constant(I32, 1)])
    seen.add_incoming(g, b.block)
    b.branch(loop)
    b.position_at_end(exit_)
    b.ret_void()

    # pool_run(ctrl, workers): shares and n are stored in ctrl by the caller; workers = threads in the pool
    fn, b, (ctrl, workers) = define(m, "pool_run", VOID, [PTR, I64])
    genp, pendp, sharesp, donep = (at(b, I8, ctrl, off) for off in (CTRL_GEN, CTRL_PENDING, CTRL_SHARES, CTRL_DONE))
    store_atomic(b, workers, pendp, "release", 8)
    store_atomic(b, ir.Constant(I32, 0), donep, "release", 4)
    some = b.icmp_unsigned("!=", workers, i64(0))
    with b.if_then(some):
        b.atomic_rmw("add", genp, ir.Constant(I32, 1), "acq_rel")
        b.call(wake, [genp, ir.Constant(I32, 2 ** 31 - 1)])
    b.call(run_share, [b.load(sharesp, typ=PTR), i64(0)])
    with b.if_then(some):
        b.call(wait_change, [donep, ir.Constant(I32, 0), i64(200000)])
    b.ret_void()
    return m


def pack_module(esize: int) -> ir.Module:
    """``pack_b_<esize>(src, ld, k, n, kp, npad, dst)``: B (k x n elements of ``esize`` bytes, row stride ld
    bytes) into VNNI panels of 16 columns: panel j, dword row r, column c holds B[r g + e, 16 j + c] at byte e
    (g = 4 / esize elements per dword), zero outside k x n. dst: npad / 16 panels of kp / g rows x 64 bytes."""
    m = ir.Module(name=f"amx_pack_b_{esize}")
    ety = I8 if esize == 1 else I16
    g = 4 // esize
    fn, b, (src, ld, k, n, kp, npad, dst) = define(m, f"pack_b_{esize}", VOID, [PTR, I64, I64, I64, I64, I64, PTR],
                                                   names=("src", "ld", "k", "n", "kp", "npad", "dst"),
                                                   noalias=(0, 6))
    rows = b.udiv(kp, i64(g))                   # dword rows per panel
    panel_elems = b.mul(rows, i64(16 * g))
    lj = Loop(b, i64(0), b.udiv(npad, i64(16)), 1, name="j")
    j = lj.index
    pbase = b.mul(j, panel_elems)
    lr = Loop(b, i64(0), rows, 1, name="r")
    r = lr.index
    obase = b.add(pbase, b.mul(r, i64(16 * g)))
    lc = Loop(b, i64(0), i64(16), 1, name="c")
    c = lc.index
    col = b.add(b.mul(j, i64(16)), c)
    colok = b.icmp_signed("<", col, n)
    for e in range(g):
        kk = b.add(b.mul(r, i64(g)), i64(e))
        ok = b.and_(colok, b.icmp_signed("<", kk, k))
        # a select on the address: rows / columns outside B read element 0 (in bounds), then zero is taken
        off = b.select(ok, b.add(b.mul(kk, ld), b.mul(col, i64(esize))), i64(0))
        v = b.load(at(b, I8, src, off), typ=ety, align=1)
        v = b.select(ok, v, ir.Constant(ety, 0))
        b.store(v, at(b, ety, dst, b.add(obase, b.add(b.mul(c, i64(g)), i64(e)))), align=1)
    lc.close()
    lr.close()
    lj.close()
    b.ret_void()
    return m
