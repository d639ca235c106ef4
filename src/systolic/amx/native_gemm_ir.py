"""The native AMX GEMM's code, built with llvmlite's IR builder: the tile micro-kernel, the thread tree, the
resident worker pool and the B packer (the driver and planning are in :mod:`systolic.amx.native_gemm`).

* ``gemm(cfg, A, lda, Bp, panel, C, ldc, ksteps, regions, nregions, abuf, flags, cbuf, cin, ldcin, counter)`` --
  the 32x32 micro-kernel (tmm0-3 hold C, tmm4-5 A, tmm6-7 B) over a list of regions of C. flags
  (:data:`FLAG_PACK_A` ...): pack A (each region's rows of A copied by tile moves into abuf, one contiguous 1 KiB
  tile per K step; consecutive regions with the same rows reuse the copy); accumulate (the first K block loads C
  from cin, row stride ldcin, instead of zeroing the tiles); M-outer order; K steps per K block from
  :data:`FLAG_KC_SHIFT` (0: all). Between K blocks the C tiles wait in cbuf (4 KiB per 32x32 block of the region,
  tile-contiguous): an exact round trip, the TDP chain of every C tile is unchanged. counter: null (the regions
  in order) or the address of an i64 the workers fetch-and-add to claim regions (dynamic schedule). The
  software prefetch distance is a constant of the module (:func:`kernel_module`).
* ``gemm_mt(shares, n, tids)`` -- n shares of work on a binary tree of POSIX threads.
* ``pool_worker(ctrl, w)`` / ``pool_run(ctrl, n)`` -- the resident pool parked on Linux futexes (a word per worker).
* ``pack_b_<bytes>(src, ld, k, n, kp, npad, dst)`` -- B (K x N, row stride ld bytes) into VNNI panels of 16
  columns, zero-padded, by vector shuffles (compiled packing: no numpy temporaries); ``pack_b_<bytes>_rows``
  does a range of rows with @gemm's signature, for the pool.
"""

from __future__ import annotations

from llvmlite import ir

from ..errors import InvalidValue

from ..jit.build import (I1, I8, I16, I32, I64, PTR, VOID, Loop, at, declare, define, function_pointer, i64,
                         store_atomic, umin, vec)
from ..jit.x86amx import Amx
from . import isa

__all__ = ["kernel_module", "MICRO_KERNELS", "pool_module", "pack_module", "PACK_SLOTS", "SHARE_FIELDS", "POOL_FN",
           "FLAG_PACK_A", "FLAG_ACCUMULATE", "FLAG_M_OUTER", "FLAG_KC_SHIFT", "FLAG_APAD_SHIFT", "CTRL_PENDING", "CTRL_SHARES",
           "CTRL_STOP", "CTRL_DONE", "CTRL_WORKERS", "CTRL_INVITE", "INVITED", "JOINED", "REVOKED"]

#: i64 fields of one worker's share: the 16 arguments of @gemm, then its index, the worker count, the
#: address of share 0 and the address of the thread-id array
SHARE_FIELDS = 20
#: control block of the resident worker pool (byte offsets of i64 slots; futex words are their low 32 bits);
#: worker w's generation word at CTRL_WORKERS + 64 w (a cache line each), its invitation word (i64) at
#: CTRL_WORKERS + 64 w + CTRL_INVITE
CTRL_PENDING, CTRL_SHARES, CTRL_STOP, CTRL_DONE, CTRL_WORKERS = 8, 16, 32, 40, 64
CTRL_INVITE = 8
#: the invitation word: generation << 2 | state
INVITED, JOINED, REVOKED = 1, 2, 3
#: in a pool share, slot 16 holds the address of the @gemm to call (the pool serves every kernel)
POOL_FN = 16

_GEMM_ARGS = [PTR, PTR, I64, PTR, I64, PTR, I64, I64, PTR, I64, PTR, I64, PTR, PTR, I64, PTR]
_GEMM_PTR_SLOTS = (0, 1, 3, 5, 8, 10, 12, 13, 15)
_GEMM_NAMES = ("cfg", "A", "lda", "B", "panel", "C", "ldc", "ksteps", "regions", "nreg", "abuf", "flags", "cbuf",
               "cin", "ldcin", "counter")
#: flags of @gemm: pack A; accumulate (the first K block loads C from cin); M-outer order (A slice resident);
#: K steps per block from FLAG_KC_SHIFT (0: all; 32 bits); the padding between packed A panels, in 64-byte lines,
#: from FLAG_APAD_SHIFT
FLAG_PACK_A, FLAG_ACCUMULATE, FLAG_M_OUTER, FLAG_KC_SHIFT, FLAG_APAD_SHIFT = 1, 2, 4, 8, 40


def _gemm(m: ir.Module, mnemonic: str, amx_class=Amx, prefetch_steps: int = 0, micro: str = "row",
          t1: str = "") -> ir.Function:
    amx = amx_class(m)
    prefetch = declare(m, "llvm.prefetch.p0", VOID, [PTR, I32, I32, I32])
    fn, b, args = define(m, "gemm", VOID, _GEMM_ARGS, names=_GEMM_NAMES)
    cfg, A, lda, B, panel, C, ldc, ksteps, regions, nreg, abuf, flags, cbuf, cin, ldcin, counter = args
    amx.ldtilecfg(b, cfg)
    ldc16 = b.mul(ldc, i64(16))
    ldcin16 = b.mul(ldcin, i64(16))
    dopack = b.icmp_unsigned("!=", b.and_(flags, i64(FLAG_PACK_A)), i64(0))
    accumulate = b.icmp_unsigned("!=", b.and_(flags, i64(FLAG_ACCUMULATE)), i64(0))
    mouter = b.icmp_unsigned("!=", b.and_(flags, i64(FLAG_M_OUTER)), i64(0))
    kcfield = b.and_(b.lshr(flags, i64(FLAG_KC_SHIFT)), i64((1 << 32) - 1))
    kc = b.select(b.or_(b.icmp_unsigned("==", kcfield, i64(0)), b.icmp_unsigned(">", kcfield, ksteps)), ksteps,
                  kcfield)
    astep = b.select(dopack, i64(1024), i64(64))
    astride = b.select(dopack, i64(64), lda)
    # packed A: one panel of 16 rows per ksteps tiles, then the padding (so that the panels of a region, and the
    # B panels, do not all start at the same offset modulo the cache's set period)
    pstride = b.add(b.mul(ksteps, i64(1024)), b.mul(b.lshr(flags, i64(FLAG_APAD_SHIFT)), i64(64)))
    anext = b.select(dopack, pstride, b.mul(lda, i64(16)))
    # the streamed operand (prefetched): A in N-outer order (the B pair stays in L1 across the M blocks), B in
    # M-outer order (the A pair stays)
    pfstep = b.select(mouter, i64(1024), astep)
    # regions: nreg x (m0, m1, n0, n1)
    # the regions in list order, or (with a counter: the dynamic schedule) each one claimed by an atomic
    # fetch-and-add on the counter shared by all workers, so a worker that starts late takes fewer
    dynamic = b.icmp_unsigned("!=", b.ptrtoint(counter, I64), i64(0))
    pre = b.block
    head, claim, seq, join, body, rexit = (fn.append_basic_block(x) for x in
                                           ("r.head", "r.claim", "r.seq", "r.join", "r.body", "r.exit"))
    b.branch(head)
    b.position_at_end(head)
    nseq = b.phi(I64, name="seq")
    nseq.add_incoming(i64(0), pre)
    prevm0 = b.phi(I64, name="prevm0")
    prevm0.add_incoming(i64(-1), pre)
    b.cbranch(dynamic, claim, seq)
    b.position_at_end(claim)
    claimed = b.atomic_rmw("add", counter, i64(1), "monotonic")
    b.branch(join)
    b.position_at_end(seq)
    b.branch(join)
    b.position_at_end(join)
    r = b.phi(I64, name="r")
    r.add_incoming(claimed, claim)
    r.add_incoming(nseq, seq)
    b.cbranch(b.icmp_unsigned("<", r, nreg), body, rexit)
    b.position_at_end(body)
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
    nmb = b.udiv(b.sub(m1, m0), i64(32))          # 32-row blocks of the region
    npr = b.udiv(b.sub(n1, n0), i64(32))          # 32-column blocks (B panel pairs)
    lkb = Loop(b, i64(0), ksteps, kc, name="kb", unsigned=True, do_while=True)
    kb = lkb.index
    kend0 = b.add(kb, kc)
    kend = umin(b, kend0, ksteps)
    first = b.icmp_unsigned("==", kb, i64(0))
    last = b.icmp_unsigned("==", kend, ksteps)
    # the region's 32x32 blocks, one order or the other (a division per block: nothing next to its K loop)
    lb = Loop(b, i64(0), b.mul(nmb, npr), 1, name="blk", unsigned=True, do_while=True)
    i = lb.index
    mi = b.select(mouter, b.udiv(i, npr), b.urem(i, nmb))
    ni = b.select(mouter, b.urem(i, npr), b.udiv(i, nmb))
    mrow = b.add(m0, b.mul(mi, i64(32)))
    n = b.add(n0, b.mul(ni, i64(32)))
    b0base = at(b, I8, B, b.mul(b.udiv(n, i64(16)), panel))
    b1base = at(b, I8, b0base, panel)
    aoff = b.select(dopack, b.mul(b.mul(mi, i64(2)), pstride), b.mul(mrow, lda))
    a0base = at(b, I8, b.select(dopack, abuf, A), aoff)
    a1base = at(b, I8, a0base, anext)
    pf0 = b.select(mouter, b0base, a0base)
    pf1 = b.select(mouter, b1base, a1base)
    cn = b.mul(n, i64(4))
    c00 = at(b, I8, C, b.add(b.mul(mrow, ldc), cn))
    ctiles = (c00, at(b, I8, c00, 64), at(b, I8, c00, ldc16), at(b, I8, at(b, I8, c00, ldc16), 64))
    i00 = at(b, I8, cin, b.add(b.mul(mrow, ldcin), cn))
    itiles = (i00, at(b, I8, i00, 64), at(b, I8, i00, ldcin16), at(b, I8, at(b, I8, i00, ldcin16), 64))
    cb = at(b, I8, cbuf, b.mul(i, i64(4096)))     # the block's partial sums between K blocks: 4 tiles, stride 64

    tmul = isa.get(mnemonic).intrinsic         # the TMUL's physical-register intrinsic (its record)

    def fetch_ahead(s, base):
        # the streamed operand's tile `prefetch_steps` K steps ahead, as a tile-contiguous 1 KiB (packed A, or B)
        if prefetch_steps:
            pfo = b.mul(b.add(s, i64(prefetch_steps)), pfstep)
            for rr in range(16):
                p = at(b, I8, base, b.add(pfo, i64(64 * rr)))
                b.call(prefetch, [p, ir.Constant(I32, 0), ir.Constant(I32, 3), ir.Constant(I32, 1)])

    def load_a(t, base, s):
        amx.tileloadd(b, t, at(b, I8, base, b.mul(s, astep)), astride, t1="a" in t1)

    def load_b(t, base, s):
        amx.tileloadd(b, t, at(b, I8, base, b.mul(s, i64(1024))), 64, t1="b" in t1)

    def c_tiles_in(tiles):
        """Each (register, C tile) pair starts its K block: from the caller's C (accumulate) or zero in the first
        block, from the worker's partial-sum buffer in the later ones."""
        with b.if_else(first) as (fst, later):
            with fst:
                with b.if_else(accumulate) as (acc, zero):
                    with acc:
                        for t, i in tiles:
                            amx.tileloadd(b, t, itiles[i], ldcin)
                    with zero:
                        for t, _ in tiles:
                            amx.tilezero(b, t)
            with later:
                for t, i in tiles:
                    amx.tileloadd(b, t, at(b, I8, cb, 1024 * i), 64)

    def c_tiles_out(tiles):
        """Each (register, C tile) pair ends its K block: into C after the last block, else into the buffer."""
        with b.if_else(last) as (fin, part):
            with fin:
                for t, i in tiles:
                    amx.tilestored(b, t, ctiles[i], ldc)
            with part:
                for t, i in tiles:
                    amx.tilestored(b, t, at(b, I8, cb, 1024 * i), 64)

    if micro == "db":
        # two passes over the K block per 32x32 block, one per 16-column half; the half's two C tiles (tmm0-1)
        # take two A tiles and one B tile per step, in two register sets used on alternate K steps (tmm2-4,
        # tmm5-7), so a step's loads never wait for the previous step's TDPs to release their sources
        for h, bbase in enumerate((b0base, b1base)):
            c_tiles_in(((0, h), (1, 2 + h)))

            def dbstep(s, ta0, ta1, tb, bbase=bbase):
                load_a(ta0, a0base, s)
                load_b(tb, bbase, s)
                amx.dot(b, tmul, 0, ta0, tb)
                if h == 0:      # both streamed tiles (the second half reads them again from L1)
                    fetch_ahead(s, pf0)
                    fetch_ahead(s, pf1)
                load_a(ta1, a1base, s)
                amx.dot(b, tmul, 1, ta1, tb)

            lk = Loop(b, kb, kend, 2, name=f"s{h}", unsigned=True, do_while=True)
            s = lk.index
            dbstep(s, 2, 3, 4)
            s1 = b.add(s, i64(1))
            with b.if_then(b.icmp_unsigned("<", s1, kend)):
                dbstep(s1, 5, 6, 7)
            lk.close()
            c_tiles_out(((0, h), (1, 2 + h)))
    else:
        c_tiles_in(tuple((t, t) for t in range(4)))
        lk = Loop(b, kb, kend, 1, name="s", unsigned=True, do_while=True)
        s = lk.index
        load_a(4, a0base, s)
        load_b(6, b0base, s)
        amx.dot(b, tmul, 0, 4, 6)
        fetch_ahead(s, pf0)
        if micro == "col":
            # column-first: tmm4 (A rows 0-15) read by the 1st and 3rd TDP, tmm6 (B columns 0-15) by the 1st and
            # 2nd: the B tiles are free one TDP earlier for the next step's loads (the streamed operand in M-outer
            # order), the A tiles one later
            load_a(5, a1base, s)
            amx.dot(b, tmul, 2, 5, 6)
            load_b(7, b1base, s)
            amx.dot(b, tmul, 1, 4, 7)
        else:
            load_b(7, b1base, s)
            amx.dot(b, tmul, 1, 4, 7)
            load_a(5, a1base, s)
            amx.dot(b, tmul, 2, 5, 6)
        fetch_ahead(s, pf1)
        amx.dot(b, tmul, 3, 5, 7)
        lk.close()
        c_tiles_out(tuple((t, t) for t in range(4)))
    lb.close()
    lkb.close()
    nseq.add_incoming(b.add(nseq, i64(1)), b.block)
    prevm0.add_incoming(m0, b.block)
    b.branch(head)
    b.position_at_end(rexit)
    amx.tilerelease(b)
    b.ret_void()
    return fn


def _share_args(b, sh):
    """The @gemm arguments stored in a share (i64 slots; pointers converted back)."""
    vals = []
    for i in range(len(_GEMM_ARGS)):
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
    idx, cnt = (b.load(at(b, I64, a, j), typ=I64) for j in (16, 17))
    base, tids = (b.inttoptr(b.load(at(b, I64, a, j), typ=I64), PTR) for j in (18, 19))
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


#: micro-kernels of @gemm: "row" (2x2 C tiles; TDP order 00, 01, 10, 11), "col" (2x2; 00, 10, 01, 11), "db"
#: (each 16-column half of the 32x32 block in turn: 2 C tiles, operands double-buffered over alternate K steps)
MICRO_KERNELS = ("row", "col", "db")


def kernel_module(mnemonic: str, amx_class=Amx, prefetch: int = 0, micro: str = "row", t1: str = "") -> ir.Module:
    """@gemm for ``mnemonic`` and the thread tree @gemm_mt around it. ``amx_class`` emits the tile
    instructions (:class:`systolic.jit.x86amx.Amx`; the tests pass one that calls software tiles instead, to run
    the kernel's loops and addressing on a CPU without AMX). ``prefetch``: K steps ahead to prefetch the
    streamed operand's tiles into L1 (a constant of the code: 0 builds no prefetch at all). ``micro``: one of
    :data:`MICRO_KERNELS`. ``t1``: the operands ("a", "b", "ab" or "") loaded with TILELOADDT1 (the hint that
    the data will not be reused soon). All are compile-time constants; none changes a bit of the result (every
    C tile is the same TDP chain over the K steps in increasing order)."""
    if micro not in MICRO_KERNELS or set(t1) - set("ab"):
        raise InvalidValue("unknown micro-kernel or TILELOADDT1 operands", rule="native GEMM micro: "
                           + ", ".join(MICRO_KERNELS) + "; t1: '', a, b, ab", values={"micro": micro, "t1": t1})
    tag = (f"_pf{prefetch}" if prefetch else "") + ("" if micro == "row" else f"_{micro}") + (f"_t1{t1}" if t1 else "")
    m = ir.Module(name=f"amx_gemm_{mnemonic}{tag}")
    _threads(m, _gemm(m, mnemonic, amx_class, prefetch, micro, t1))
    return m


def pool_module() -> ir.Module:
    """A resident pool of worker threads for the GEMM (Linux futexes; no Python while it works).

    Each worker has its own futex word (a generation counter, one cache line each from :data:`CTRL_WORKERS`), so
    a call wakes exactly the workers it uses. pool_worker(ctrl, w): worker w waits (spins briefly, then
    FUTEX_WAIT) until its generation moves, then accepts the call's invitation (a compare-and-swap of its
    invitation word from INVITED to JOINED for that generation); if it got in, it runs share w (an indirect call
    of the share's @gemm), counts ``pending`` down and wakes the caller when it was the last; returns when
    ``stop`` is set. pool_run(ctrl, n): the caller publishes a job of n shares (shares already stored), invites
    workers 1..n-1 and wakes them, runs share 0 itself, then revokes every invitation not yet accepted (the same
    compare-and-swap, to REVOKED) and runs those shares itself, and waits only for the workers that joined.

    Why the revocation: on a VM a parked worker's vCPU can take milliseconds to run again (device call 4,
    benchmarks/results/native_gemm_wave3.md: 16 workers on 16 vCPUs cost 0.66 ms a call back to back where 8
    cost 0.056 ms). With the dynamic schedule every region has been claimed when the caller's share returns, so
    a revoked share claims nothing and the call no longer waits for a worker that never came; with static
    rectangles the caller computes the latecomer's rectangle. A worker that wakes after being revoked finds its
    compare-and-swap failing and parks again without reading the call's shares (which may be gone by then)."""
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

    def invitation(b, g, state):
        return b.or_(b.shl(b.zext(g, I64), i64(2)), i64(state))

    # one party moves an invitation on: the worker (INVITED -> JOINED) or the caller (INVITED -> REVOKED)
    take, b, (invp, g, state) = define(m, "take", I1, [PTR, I32, I64], internal=True)
    got = b.cmpxchg(invp, invitation(b, g, INVITED), b.or_(b.shl(b.zext(g, I64), i64(2)), state), "acq_rel",
                    "acquire")
    b.ret(b.extract_value(got, 1))

    fn, b, (ctrl, w) = define(m, "pool_worker", VOID, [PTR, I64])
    pendp, sharesp, stopp, donep = (at(b, I8, ctrl, off) for off in (CTRL_PENDING, CTRL_SHARES, CTRL_STOP, CTRL_DONE))
    genp = at(b, I8, ctrl, b.add(i64(CTRL_WORKERS), b.mul(w, i64(64))))
    invp = at(b, I8, genp, CTRL_INVITE)
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
    with b.if_then(b.call(take, [invp, g, i64(JOINED)])):      # else: revoked, the caller ran the share
        b.call(run_share, [b.load(sharesp, typ=PTR), w])
        old = b.atomic_rmw("sub", pendp, i64(1), "acq_rel")
        with b.if_then(b.icmp_unsigned("==", old, i64(1))):
            store_atomic(b, ir.Constant(I32, 1), donep, "release", 4)
            b.call(wake, [donep, ir.Constant(I32, 1)])
    seen.add_incoming(g, b.block)
    b.branch(loop)
    b.position_at_end(exit_)
    b.ret_void()

    # pool_run(ctrl, n): the shares are stored in ctrl by the caller; workers 1..n-1 run shares 1..n-1
    fn, b, (ctrl, n) = define(m, "pool_run", VOID, [PTR, I64])
    pendp, sharesp, donep = (at(b, I8, ctrl, off) for off in (CTRL_PENDING, CTRL_SHARES, CTRL_DONE))
    helpers = b.sub(n, i64(1))
    store_atomic(b, helpers, pendp, "release", 8)
    store_atomic(b, ir.Constant(I32, 0), donep, "release", 4)
    some = b.icmp_unsigned("!=", helpers, i64(0))
    lastp = b.alloca(I1)                  # the caller counted `pending` down to zero itself (no one sets done)
    b.store(ir.Constant(I1, 0), lastp)
    with b.if_then(some):
        # the invitation first, then the generation: a worker that sees the new generation finds it
        lw = Loop(b, i64(1), n, 1, name="w", unsigned=True, do_while=True)
        gp = at(b, I8, ctrl, b.add(i64(CTRL_WORKERS), b.mul(lw.index, i64(64))))
        gnew = b.add(b.load(gp, typ=I32), ir.Constant(I32, 1))      # only this (locked) caller moves generations
        store_atomic(b, invitation(b, gnew, INVITED), at(b, I8, gp, CTRL_INVITE), "release", 8)
        b.atomic_rmw("add", gp, ir.Constant(I32, 1), "acq_rel")
        b.call(wake, [gp, ir.Constant(I32, 1)])
        lw.close()
    b.call(run_share, [b.load(sharesp, typ=PTR), i64(0)])
    with b.if_then(some):
        lr = Loop(b, i64(1), n, 1, name="r", unsigned=True, do_while=True)
        gp = at(b, I8, ctrl, b.add(i64(CTRL_WORKERS), b.mul(lr.index, i64(64))))
        with b.if_then(b.call(take, [at(b, I8, gp, CTRL_INVITE), b.load(gp, typ=I32), i64(REVOKED)])):
            b.call(run_share, [b.load(sharesp, typ=PTR), lr.index])
            left = b.atomic_rmw("sub", pendp, i64(1), "acq_rel")
            with b.if_then(b.icmp_unsigned("==", left, i64(1))):
                b.store(ir.Constant(I1, 1), lastp)
        lr.close()
        with b.if_then(b.not_(b.load(lastp, typ=I1))):
            b.call(wait_change, [donep, ir.Constant(I32, 0), i64(200000)])
    b.ret_void()
    return m


#: the argument slots (of @gemm's signature, so the resident pool can run it) of @pack_b_<esize>_rows
PACK_SLOTS = {"src": 0, "dst": 1, "ld": 2, "stride": 3, "k": 4, "n": 6, "kp": 7, "npad": 9, "r0": 11, "r1": 14}


def pack_module(esize: int) -> ir.Module:
    """``pack_b_<esize>(src, ld, k, n, kp, npad, dst, stride)``: B (k x n elements of ``esize`` bytes, row stride ld
    bytes) into VNNI panels of 16 columns: panel j, dword row r, column c holds B[r g + e, 16 j + c] at byte e
    (g = 4 / esize elements per dword), zero outside k x n. dst: npad / 16 panels of kp / g rows x 64 bytes, panel
    j from byte j * stride (stride >= kp / g * 64: the bytes between panels are not written).

    Row by row of dwords: inside B, the g rows' 16-column pieces are loaded as vectors and interleaved by
    shuffles into one 64-byte line of the panel (a whole cache line per store); the edges element by element.
    ``pack_b_<esize>_rows`` does the dword rows [r0, r1) only, with @gemm's signature (:data:`PACK_SLOTS`), so
    the GEMM's worker pool can pack B in parallel."""
    m = ir.Module(name=f"amx_pack_b_{esize}")
    rows_fn = _pack_rows(m, esize)
    fn, b, (src, ld, k, n, kp, npad, dst, stride) = define(
        m, f"pack_b_{esize}", VOID, [PTR, I64, I64, I64, I64, I64, PTR, I64],
        names=("src", "ld", "k", "n", "kp", "npad", "dst", "stride"))
    args = [ir.Constant(PTR, None) if t == PTR else i64(0) for t in _GEMM_ARGS]
    for name, v in (("src", src), ("dst", dst), ("ld", ld), ("k", k), ("n", n), ("kp", kp), ("npad", npad),
                    ("r0", i64(0)), ("r1", b.udiv(kp, i64(4 // esize))), ("stride", b.inttoptr(stride, PTR))):
        args[PACK_SLOTS[name]] = v
    b.call(rows_fn, args)
    b.ret_void()
    return m


def _pack_rows(m: ir.Module, esize: int) -> ir.Function:
    ety = I8 if esize == 1 else I16
    g = 4 // esize
    fn, b, args = define(m, f"pack_b_{esize}_rows", VOID, _GEMM_ARGS, noalias=(PACK_SLOTS["src"], PACK_SLOTS["dst"]))
    src, dst, ld, k, n, kp, npad, r0, r1, pstride = (args[PACK_SLOTS[x]] for x in
                                                     ("src", "dst", "ld", "k", "n", "kp", "npad", "r0", "r1", "stride"))
    panel_bytes = b.ptrtoint(pstride, I64)      # bytes from one panel to the next (a pointer slot of @gemm's signature)
    lr = Loop(b, r0, r1, 1, name="r")
    r = lr.index
    krow = b.mul(r, i64(g))
    kfull = b.icmp_signed("<=", b.add(krow, i64(g)), k)
    lj = Loop(b, i64(0), b.udiv(npad, i64(16)), 1, name="j")
    j = lj.index
    obase = b.add(b.mul(j, panel_bytes), b.mul(r, i64(64)))      # byte offset of the output line
    full = b.and_(kfull, b.icmp_signed("<=", b.mul(b.add(j, i64(1)), i64(16)), n))
    with b.if_else(full) as (inside, edge):
        with inside:
            col = b.mul(j, i64(16 * esize))
            vs = [b.load(at(b, I8, src, b.add(b.mul(b.add(krow, i64(e)), ld), col)), typ=vec(ety, 16), align=1)
                  for e in range(g)]
            pairs = ir.Constant(vec(I32, 32), [x for c in range(16) for x in (c, 16 + c)])
            if g == 2:
                line = b.shuffle_vector(vs[0], vs[1], pairs)
            else:
                lo = b.bitcast(b.shuffle_vector(vs[0], vs[1], pairs), vec(I16, 16))
                hi = b.bitcast(b.shuffle_vector(vs[2], vs[3], pairs), vec(I16, 16))
                line = b.shuffle_vector(lo, hi, pairs)
            b.store(line, at(b, I8, dst, obase), align=1)
        with edge:
            lc = Loop(b, i64(0), i64(16), 1, name="c")
            c = lc.index
            colj = b.add(b.mul(j, i64(16)), c)
            colok = b.icmp_signed("<", colj, n)
            for e in range(g):
                kk = b.add(krow, i64(e))
                ok = b.and_(colok, b.icmp_signed("<", kk, k))
                # a select on the address: rows / columns outside B read element 0 (in bounds), then zero is taken
                off = b.select(ok, b.add(b.mul(kk, ld), b.mul(colj, i64(esize))), i64(0))
                v = b.load(at(b, I8, src, off), typ=ety, align=1)
                v = b.select(ok, v, ir.Constant(ety, 0))
                b.store(v, at(b, I8, dst, b.add(obase, b.mul(b.add(b.mul(c, i64(g)), i64(e)), i64(esize)))),
                        align=1)
            lc.close()
    lj.close()
    lr.close()
    b.ret_void()
    return fn
