"""The AMX float chain GEMM kernel (TDPBF16PS / TDPFP16PS chain order on the host's FMA), built with llvmlite's
IR builder. What it computes and why it is the SDM's result: :mod:`systolic.amx.gemm_jit` (the driver).

``chain_gemm(A, BE, BO, C, m0, m1, N, K2, KT, chk)``: rows m0 .. m1-1; N columns (a multiple of the group, the
C row length); K2 dwords of K, KT dwords per K tile; chk != 0 runs the FTZ check at every chain step. Loop order
K tile -> column group -> row, so the piece of B a (K tile, group) needs stays in L1 while the rows of A stream
past it. ``lanes`` floats per vector (8: AVX2, 16: AVX-512), ``U`` vectors per chain set.
"""

from __future__ import annotations

from llvmlite import ir

from ..jit.build import (F32, I1, I32, I64, PTR, VOID, Loop, at, broadcast, declare, define, i64, intrinsic,
                         splat, vec, vload, vstore)

__all__ = ["module", "TWO_M126", "TWO_64", "TWO_M62"]

TWO_M126, TWO_64, TWO_M62 = 2.0 ** -126, 2.0 ** 64, 2.0 ** -62
_BELOW_NORMAL = 1 << 23   # (|bits| - 1) below this: a denormal or +-2^-126


class _Ops:
    """The vector operations of one module for ``lanes`` floats."""

    def __init__(self, m: ir.Module, lanes: int):
        self.m, self.lanes = m, lanes
        self.F = vec(F32, lanes)
        self.I = vec(I32, lanes)
        self.fma = intrinsic(m, "fma", self.F, 3)
        self.fabs = intrinsic(m, "fabs", self.F, 1)
        self.copysign = intrinsic(m, "copysign", self.F, 2)
        self.umin = intrinsic(m, "umin", self.I, 2)
        self.any = declare(m, f"llvm.vector.reduce.or.v{lanes}i1", I1, [vec(I1, lanes)])

    def key(self, b, r):
        """(|bits(r)| - 1) as unsigned: below 2^23 exactly where r is a denormal or +-2^-126."""
        ab = b.and_(b.bitcast(r, self.I), splat(self.I, 0x7FFFFFFF))
        return b.sub(ab, splat(self.I, 1))

    def fix(self, b, r, rs):
        """Lanes of r that are denormal or +-2^-126 replaced by the FTZ-after-rounding result; rs = the same
        operation on operands scaled by 2^64 (exact there, rounded in the normal range)."""
        sub = b.icmp_unsigned("<", self.key(b, r), splat(self.I, _BELOW_NORMAL))
        up = b.fcmp_ordered(">=", b.call(self.fabs, [rs]), splat(self.F, TWO_M62))
        mag = b.select(up, splat(self.F, TWO_M126), splat(self.F, 0.0))
        return b.select(sub, b.call(self.copysign, [mag, r]), r)

    def add(self, b, x, y, ftz: bool):
        r = b.fadd(x, y)
        if not ftz:
            return r
        s = splat(self.F, TWO_64)
        return self.fix(b, r, b.fadd(b.fmul(x, s), b.fmul(y, s)))


def _group_fn(ops: _Ops, name: str, U: int, check: bool):
    """One row of A times a (lanes U)-column group of B over one K tile: the chains (even / odd x U vectors) in
    registers, then C += even + odd. Arguments: a (A row at dword k0, 2 floats per dword), be / bo (B even /
    odd rows at (k0, column)), ldb (floats per B row), klen (dwords), c (C row at the group's first column)."""
    F = ops.F
    fn, b, (a, be, bo, ldb, klen, c) = define(
        ops.m, name, VOID, [PTR, PTR, PTR, I64, I64, PTR], names=("a", "be", "bo", "ldb", "klen", "c"),
        internal=True, inline=True, noalias=(0, 1, 2, 5))
    zero = splat(F, 0.0)
    lk = Loop(b, i64(0), klen, 1, name="k", carry=[zero] * (2 * U))
    k = lk.index
    chains = {(u, ch): lk.values[2 * u + j] for u in range(U) for j, ch in enumerate("eo")}
    k2 = b.shl(k, i64(1))
    va = {"e": broadcast(b, vload(b, F32, a, k2), ops.lanes),
          "o": broadcast(b, vload(b, F32, a, b.add(k2, i64(1))), ops.lanes)}
    boff = b.mul(k, ldb)
    base = {"e": at(b, F32, be, boff), "o": at(b, F32, bo, boff)}
    bv, r = {}, {}
    for u in range(U):
        for ch in "eo":
            bv[u, ch] = vload(b, F, base[ch], ops.lanes * u, align=4)
            r[u, ch] = b.call(ops.fma, [va[ch], bv[u, ch], chains[u, ch]])
    order = [(u, ch) for u in range(U) for ch in "eo"]
    if check:
        mn = ops.key(b, r[order[0]])
        for uc in order[1:]:
            mn = b.call(ops.umin, [mn, ops.key(b, r[uc])])
        lo = b.icmp_unsigned("<", mn, splat(ops.I, _BELOW_NORMAL))
        anyb = b.call(ops.any, [lo])
        checked = b.block
        fixit = b.append_basic_block("fixit")
        nxt = b.append_basic_block("knext")
        b.cbranch(anyb, fixit, nxt)
        b.position_at_end(fixit)
        s = splat(F, TWO_64)
        vas = {ch: b.fmul(va[ch], s) for ch in "eo"}
        fixed = {}
        for uc in order:
            rs = b.call(ops.fma, [vas[uc[1]], bv[uc], b.fmul(chains[uc], s)])
            fixed[uc] = ops.fix(b, r[uc], rs)
        b.branch(nxt)
        b.position_at_end(nxt)
        new = []
        for uc in order:
            phi = b.phi(F)
            phi.add_incoming(r[uc], checked)
            phi.add_incoming(fixed[uc], fixit)
            new.append(phi)
    else:
        new = [r[uc] for uc in order]
    z = lk.close(new)
    # without the check every value is a multiple of 2^g, g >= -126 (gemm._ftz_possible): plain adds are exact
    for u in range(U):
        t = ops.add(b, z[2 * u], z[2 * u + 1], check)
        cu = vload(b, F, c, ops.lanes * u, align=4)
        vstore(b, ops.add(b, cu, t, check), c, ops.lanes * u, align=4)
    b.ret_void()
    return fn


def module(lanes: int, u_check: int, u_fast: int, prefetch_rows: int) -> ir.Module:
    """The kernel module: ``chain_gemm`` and its two inlined group functions (checked and fast)."""
    m = ir.Module(name="amx_chain_gemm")
    ops = _Ops(m, lanes)
    group = lanes * u_fast
    g_chk = _group_fn(ops, "group_chk", u_check, True)
    g_fast = _group_fn(ops, "group_fast", u_fast, False)
    ldmxcsr = declare(m, "llvm.x86.sse.ldmxcsr", VOID, [PTR])
    stmxcsr = declare(m, "llvm.x86.sse.stmxcsr", VOID, [PTR])
    prefetch = declare(m, "llvm.prefetch.p0", VOID, [PTR, I32, I32, I32])
    fn, b, args = define(m, "chain_gemm", VOID, [PTR, PTR, PTR, PTR, I64, I64, I64, I64, I64, I64],
                         names=("A", "BE", "BO", "C", "m0", "m1", "N", "K2", "KT", "chk64"), noalias=(0, 1, 2, 3))
    A, BE, BO, C, m0, m1, N, K2, KT, chk64 = args
    saved, mx = b.alloca(I32), b.alloca(I32)
    b.call(stmxcsr, [saved])
    b.store(ir.Constant(I32, 0x1F80), mx)      # RNE, exceptions masked, no FTZ, no DAZ
    b.call(ldmxcsr, [mx])
    chk = b.icmp_signed("!=", chk64, i64(0))
    lda = b.shl(K2, i64(1))
    lkt = Loop(b, i64(0), K2, KT, name="kt")
    k0 = lkt.index
    krest = b.sub(K2, k0)
    klen = b.select(b.icmp_signed("<", krest, KT), krest, KT)
    k02 = b.shl(k0, i64(1))
    lg = Loop(b, i64(0), N, group, name="g")
    g = lg.index
    # B is packed in column panels: panel p = g / group holds K2 rows of group floats
    bidx = b.mul(b.add(b.mul(b.udiv(g, i64(group)), K2), k0), i64(group))
    pbe, pbo = at(b, F32, BE, bidx), at(b, F32, BO, bidx)
    lm = Loop(b, m0, m1, 1, name="m")
    mrow = lm.index
    pa = at(b, F32, A, b.add(b.mul(mrow, lda), k02))
    pc = at(b, F32, C, b.add(b.mul(mrow, N), g))
    # prefetch the A and C pieces of row m + prefetch_rows: they are 4-8 KiB apart, so the hardware prefetcher
    # may not see them coming, and a miss on C at the end of a group stalls retirement (no effect on results)
    pfa = b.gep(pa, [b.mul(lda, i64(prefetch_rows))], source_etype=F32)
    pfc = b.gep(pc, [b.mul(N, i64(prefetch_rows))], source_etype=F32)
    c32 = lambda v: ir.Constant(I32, v)  # noqa: E731
    for p, rw in ((pfa, 0), (b.gep(pfa, [i64(16)], source_etype=F32), 0), (pfc, 1),
                  (b.gep(pfc, [i64(16)], source_etype=F32), 1)):
        b.call(prefetch, [p, c32(rw), c32(3), c32(1)])
    with b.if_else(chk) as (then, otherwise):
        with then:  # the checked variant covers a group in pieces of lanes * u_check columns
            w = lanes * u_check
            for j in range(group // w):
                b.call(g_chk, [pa, at(b, F32, pbe, w * j), at(b, F32, pbo, w * j), i64(group), klen,
                               at(b, F32, pc, w * j)])
        with otherwise:
            b.call(g_fast, [pa, pbe, pbo, i64(group), klen, pc])
    lm.close()
    lg.close()
    lkt.close()
    b.call(ldmxcsr, [saved])
    b.ret_void()
    return m
