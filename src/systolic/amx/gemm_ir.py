"""The AMX float chain GEMM kernel (TDPBF16PS / TDPFP16PS chain order on the host's FMA), built with llvmlite's
IR builder. What it computes and why it is the SDM's result: :mod:`systolic.amx.gemm_jit` (the driver).

``chain_gemm(A, BE, BO, C, m0, m1, N, K2, KT, chk)``: rows m0 .. m1-1; N columns (a multiple of the group, the
C row length); K2 dwords of K, KT dwords per K tile; chk != 0 runs the FTZ check at every chain step. Loop order
K tile -> column group -> row, so the piece of B a (K tile, group) needs stays in L1 while the rows of A stream
past it. ``lanes`` floats per vector (8: AVX2, 16: AVX-512), ``U`` vectors per chain set.
"""

from __future__ import annotations

from llvmlite import ir

from ..jit.build import (F32, F64, I1, I8, I32, I64, PTR, VOID, Loop, at, broadcast, declare, define, i64, intrinsic,
                         no_unroll, smin, splat, vec, vload, vstore)

__all__ = ["module", "fast_module", "TWO_M126", "TWO_64", "TWO_M62", "TILE_DWORDS"]

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
    klen = smin(b, krest, KT)
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


# ---------------------------------------------------------------- the register-blocked kernel (no FTZ check)
#
# Where no chain value can be tiny (gemm._ftz_possible is False) every chain step is one plain fp32 FMA (RNE),
# so the chains can run as an ordinary register-blocked GEMM: lane 2h of a vector holds the even chain and lane
# 2h + 1 the odd chain of one output column, A's pair (a[2k], a[2k+1]) is broadcast as one 64-bit word, and B's
# pair row k holds (b[2k, c], b[2k+1, c]) side by side. After each K tile (16 dwords) the two chains of a column
# are added (t = even + odd) and C += t. The columns of a vector pair X, Y are placed so that the even/odd sums
# come out in column order: in each 128-bit block q, X holds columns 4q, 4q+1 and Y columns 4q+2, 4q+3 (the
# horizontal-add pattern); every operation is still exactly the SDM's fma / add on the same operands.

TILE_DWORDS = 16
PREFETCH_B = True    # prefetch the next panel's block of B while the current one runs (measured: see fgemm)
_BF16, _FP16 = "bf16", "fp16"


def _lane_columns(lanes: int):
    """(X, Y): for each lane of the two vectors of a column group, (column within the group, element e of the pair)."""
    xs, ys = [], []
    for q in range(lanes // 4):
        for h in range(2):
            for e in range(2):
                xs.append((4 * q + h, e))
                ys.append((4 * q + 2 + h, e))
    return xs, ys


def _to_f32_bits(b, w, kind: str):
    """16-bit inputs (i16 or a vector of them) -> their fp32 bit patterns as the FMAs read them: bf16 with DAZ
    (a denormal becomes the zero of its sign), fp16 widened exactly (its denormals are normal fp32 numbers)."""
    vt = w.type
    wide = vec(I32, vt.count) if isinstance(vt, ir.VectorType) else I32
    if kind == _FP16:
        ht = vec(ir.HalfType(), vt.count) if isinstance(vt, ir.VectorType) else ir.HalfType()
        ft = vec(F32, vt.count) if isinstance(vt, ir.VectorType) else F32
        return b.bitcast(b.fpext(b.bitcast(w, ht), ft), wide)
    x = b.zext(w, wide)
    cst = (lambda v: splat(wide, v)) if isinstance(vt, ir.VectorType) else (lambda v: ir.Constant(I32, v))
    den = b.icmp_unsigned("==", b.and_(x, cst(0x7F80)), cst(0))
    return b.shl(b.select(den, b.and_(x, cst(0x8000)), x), cst(16))


def _key(b, x):
    """(exponent bits - 2^23) as unsigned: its minimum over the nonzero finite values gives the smallest exponent
    (zeros wrap to the top; gemm._min_exponent reads it). Also: is x an inf or NaN."""
    vt = x.type
    cst = (lambda v: splat(vt, v)) if isinstance(vt, ir.VectorType) else (lambda v: ir.Constant(I32, v))
    e = b.and_(x, cst(0x7F800000))
    return b.sub(e, cst(0x00800000)), b.icmp_unsigned("==", e, cst(0x7F800000))


def _umin(m, ty):
    return intrinsic(m, "umin", ty, 2)


def _pack_a_fast(m: ir.Module, kind: str, R: int) -> None:
    """``fpacka_<kind>(src, lds, M, K2, dst, q0, q1, stat, bad)``: row panels q0 .. q1-1 of A as fp32 pairs
    (panel q, dword k, row r: a[qR + r, 2k], a[qR + r, 2k + 1]; rows past M zero); ``stat[0]`` = min of its
    keys (:func:`_key`) over those rows, ``bad[i]`` = 1 where row i holds an inf or NaN, else 0."""
    _, b, (src, lds, M, K2, dst, q0, q1, stat, bad) = define(
        m, f"fpacka_{kind}", VOID, [PTR, I64, I64, I64, PTR, I64, I64, PTR, PTR],
        names=("src", "lds", "M", "K2", "dst", "q0", "q1", "stat", "bad"), noalias=(0, 4, 7, 8))
    umin = _umin(m, I32)
    I16 = ir.IntType(16)
    P2 = vec(I16, 2)
    lq = Loop(b, q0, q1, 1, name="q", carry=[ir.Constant(I32, -1)])
    q = lq.index
    kmin = lq.values[0]
    pbase = b.mul(q, b.mul(K2, i64(2 * R)))
    for r in range(R):
        i = b.add(b.mul(q, i64(R)), i64(r))
        inside = b.icmp_signed("<", i, M)
        n = b.select(inside, K2, i64(0))
        srow = at(b, I16, src, b.mul(b.select(inside, i, i64(0)), lds))
        drow = at(b, I32, dst, b.add(pbase, i64(2 * r)))
        lk = Loop(b, i64(0), n, 1, name=f"k{r}", carry=[ir.Constant(I32, -1), ir.Constant(I1, 0)])
        k = lk.index
        w = b.load(at(b, P2, srow, k), typ=P2, align=2)
        x = _to_f32_bits(b, w, kind)
        key, isbad = _key(b, x)
        red = declare(m, "llvm.vector.reduce.umin.v2i32", I32, [vec(I32, 2)])
        anyb = declare(m, "llvm.vector.reduce.or.v2i1", I1, [vec(I1, 2)])
        vstore(b, x, drow, b.mul(k, i64(2 * R)), align=4)
        mn, bd = lk.close([b.call(umin, [lk.values[0], b.call(red, [key])]),
                           b.or_(lk.values[1], b.call(anyb, [isbad]))])
        kmin = b.call(umin, [kmin, mn])
        with b.if_then(inside):
            b.store(b.zext(bd, I8), at(b, I8, bad, i))
        lz = Loop(b, n, K2, 1, name=f"z{r}")                 # rows past M: zeros
        vstore(b, ir.Constant(vec(I32, 2), [0, 0]), drow, b.mul(lz.index, i64(2 * R)), align=4)
        lz.close()
    (kmin,) = lq.close([kmin])
    b.store(kmin, stat)
    b.ret_void()


def _pack_b_fast(m: ir.Module, kind: str, lanes: int, G: int) -> None:
    """``fpackb_<kind>(src, lds, K2, N, dst, p0, p1, stat, bad)``: panels p0 .. p1-1 (G lanes-column groups each)
    of B in the kernel's layout (pair row k of panel p: for each group its X and Y vectors, :func:`_lane_columns`;
    zero past N); ``stat[0]`` = min key over those columns, ``bad[c]`` = 1 where column c holds an inf or NaN."""
    I16 = ir.IntType(16)
    NR = G * lanes
    _, b, (src, lds, K2, N, dst, p0, p1, stat, bad) = define(
        m, f"fpackb_{kind}", VOID, [PTR, I64, I64, I64, PTR, I64, I64, PTR, PTR],
        names=("src", "lds", "K2", "N", "dst", "p0", "p1", "stat", "bad"), noalias=(0, 4, 7, 8))
    Iv, I1v = vec(I32, lanes), vec(I1, lanes)
    umin_v = _umin(m, Iv)
    umin = _umin(m, I32)
    red = declare(m, f"llvm.vector.reduce.umin.v{lanes}i32", I32, [Iv])
    xs, ys = _lane_columns(lanes)
    mask = lambda cols: ir.Constant(vec(I32, lanes), [c + lanes * e for c, e in cols])  # noqa: E731
    lp = Loop(b, p0, p1, 1, name="p", carry=[ir.Constant(I32, -1)])
    p = lp.index
    kmin = lp.values[0]
    pbase = b.mul(p, b.mul(K2, i64(2 * NR)))
    for g in range(G):
        col = b.add(b.mul(p, i64(NR)), i64(g * lanes))
        whole = b.icmp_signed("<=", b.add(col, i64(lanes)), N)
        with b.if_else(whole) as (then, otherwise):
            with then:
                lk = Loop(b, i64(0), K2, 1, name=f"k{g}", carry=[splat(Iv, -1), ir.Constant(I1v, [0] * lanes)])
                k = lk.index
                s0 = at(b, I16, src, b.add(b.mul(b.shl(k, i64(1)), lds), col))
                ev = _to_f32_bits(b, vload(b, vec(I16, lanes), s0, 0, align=2), kind)
                od = _to_f32_bits(b, vload(b, vec(I16, lanes), at(b, I16, s0, lds), 0, align=2), kind)
                o = b.add(pbase, b.mul(k, i64(2 * NR)))
                vstore(b, b.shuffle_vector(ev, od, mask(xs)), dst, b.add(o, i64(2 * lanes * g)), align=4)
                vstore(b, b.shuffle_vector(ev, od, mask(ys)), dst, b.add(o, i64(2 * lanes * g + lanes)), align=4)
                ke, be = _key(b, ev)
                ko, bo = _key(b, od)
                mn, bd = lk.close([b.call(umin_v, [lk.values[0], b.call(umin_v, [ke, ko])]),
                                   b.or_(lk.values[1], b.or_(be, bo))])
                vstore(b, b.zext(bd, vec(I8, lanes)), bad, col, align=1)
                m_whole = b.call(red, [mn])
                blk_whole = b.block
            with otherwise:   # the last, partial group: element by element
                lk = Loop(b, i64(0), K2, 1, name=f"q{g}", carry=[ir.Constant(I32, -1)])
                k = lk.index
                o = b.add(pbase, b.mul(k, i64(2 * NR)))
                kacc = lk.values[0]
                for j, (c, e) in enumerate(xs + ys):
                    cc = b.add(col, i64(c))
                    ok = b.icmp_signed("<", cc, N)
                    off = b.select(ok, b.add(b.mul(b.add(b.shl(k, i64(1)), i64(e)), lds), cc), i64(0))
                    x = _to_f32_bits(b, b.load(at(b, I16, src, off), typ=I16), kind)
                    x = b.select(ok, x, ir.Constant(I32, 0))
                    b.store(x, at(b, I32, dst, b.add(o, i64(2 * lanes * g + j))))
                    key, _ = _key(b, x)
                    kacc = b.call(umin, [kacc, key])
                (m_part,) = lk.close([kacc])
                lc = Loop(b, col, N, 1, name=f"c{g}")    # bad columns of the partial group: a pass down each
                lr = Loop(b, i64(0), b.shl(K2, i64(1)), 1, name=f"r{g}", carry=[ir.Constant(I1, 0)])
                x = _to_f32_bits(b, b.load(at(b, I16, src, b.add(b.mul(lr.index, lds), lc.index)), typ=I16), kind)
                (bd,) = lr.close([b.or_(lr.values[0], _key(b, x)[1])])
                b.store(b.zext(bd, I8), at(b, I8, bad, lc.index))
                lc.close()
                blk_part = b.block
        phi = b.phi(I32)
        phi.add_incoming(m_whole, blk_whole)
        phi.add_incoming(m_part, blk_part)
        kmin = b.call(umin, [kmin, phi])
    (kmin,) = lp.close([kmin])
    b.store(kmin, stat)
    b.ret_void()


def _micro_fast(ops: _Ops, R: int, G: int):
    """``fmicro(a, bp, c, ldc, klen, nrows, ncols)``: the R x (G lanes) block of C at ``c``, over ``klen`` dwords
    (K tiles of 16 from the block's start: klen is a multiple of 16 except at the end of K)."""
    m, L, F = ops.m, ops.lanes, ops.F
    NR = G * L
    fn, b, (a, bp, c, ldc, klen, nrows, ncols) = define(
        m, "fmicro", VOID, [PTR, PTR, PTR, I64, I64, I64, I64],
        names=("a", "bp", "c", "ldc", "klen", "nrows", "ncols"), internal=True, inline=True, noalias=(0, 1, 2))
    # output lane j (column j of the group): block q = j // 4; columns 4q, 4q+1 are in X's block q (lanes 4q+2h+e),
    # columns 4q+2, 4q+3 in Y's block q
    ev_idx, od_idx = [], []
    for j in range(L):
        q, h = divmod(j, 4)
        src_base = 0 if h < 2 else L
        lane = 4 * q + 2 * (h % 2)
        ev_idx.append(src_base + lane)
        od_idx.append(src_base + lane + 1)
    ev_mask = ir.Constant(vec(I32, L), ev_idx)
    od_mask = ir.Constant(vec(I32, L), od_idx)
    I1v = vec(I1, L)
    mload = declare(m, f"llvm.masked.load.v{L}f32.p0", F, [PTR, I32, I1v, F])
    mstore = declare(m, f"llvm.masked.store.v{L}f32.p0", VOID, [F, PTR, I32, I1v])
    zero = splat(F, 0.0)
    lt = Loop(b, i64(0), klen, TILE_DWORDS, name="t")
    t0 = lt.index
    rest = b.sub(klen, t0)
    tl = smin(b, rest, i64(TILE_DWORDS))
    def step(k, accs):
        """One dword step of every chain of the block: 2G vectors of B, R broadcast pairs of A, 2 R G FMAs."""
        brow = at(b, F32, bp, b.mul(k, i64(2 * NR)))
        arow = at(b, F32, a, b.mul(k, i64(2 * R)))
        bv = [vload(b, F, brow, L * j, align=4) for j in range(2 * G)]
        new = []
        for r in range(R):
            pair = b.load(at(b, F64, arow, i64(r)), typ=F64, align=4)   # (a[2k], a[2k+1]) as one 64-bit word
            av = b.bitcast(broadcast(b, pair, L // 2), F)
            for j in range(2 * G):
                new.append(b.call(ops.fma, [av, bv[j], accs[r * 2 * G + j]]))
        return new

    # a whole tile: its 16 steps written out (no loop exit to predict at every tile); a partial last tile: a loop
    whole = b.icmp_signed("==", tl, i64(TILE_DWORDS))
    blk_whole = b.append_basic_block("tile.whole")
    blk_part = b.append_basic_block("tile.part")
    blk_join = b.append_basic_block("tile.join")
    b.cbranch(whole, blk_whole, blk_part)
    b.position_at_end(blk_whole)
    accs = [zero] * (R * 2 * G)
    for s_ in range(TILE_DWORDS):
        accs = step(b.add(t0, i64(s_)), accs)
    end_whole = b.block
    b.branch(blk_join)
    b.position_at_end(blk_part)
    lk = Loop(b, i64(0), tl, 1, name="k", carry=[zero] * (R * 2 * G))
    part = lk.close(step(b.add(t0, lk.index), lk.values))
    no_unroll(m, lk)
    end_part = b.block
    b.branch(blk_join)
    b.position_at_end(blk_join)
    acc = []
    for x, y in zip(accs, part):
        phi = b.phi(F)
        phi.add_incoming(x, end_whole)
        phi.add_incoming(y, end_part)
        acc.append(phi)
    full = b.icmp_signed(">=", ncols, i64(NR))
    masks = []
    nc = b.trunc(ncols, I32)
    for g in range(G):
        masks.append(b.icmp_signed("<", ir.Constant(vec(I32, L), [g * L + j for j in range(L)]),
                                   broadcast(b, nc, L)))
    four = ir.Constant(I32, 4)
    for r in range(R):
        with b.if_then(b.icmp_signed(">", nrows, i64(r))):
            crow = at(b, F32, c, b.mul(i64(r), ldc))
            for g in range(G):
                x, y = acc[r * 2 * G + 2 * g], acc[r * 2 * G + 2 * g + 1]
                t = b.fadd(b.shuffle_vector(x, y, ev_mask), b.shuffle_vector(x, y, od_mask))   # even + odd
                pc = at(b, F32, crow, L * g)
                with b.if_else(full) as (then, otherwise):
                    with then:
                        old = vload(b, F, pc, 0, align=4)
                        vstore(b, b.fadd(old, t), pc, 0, align=4)
                    with otherwise:
                        old = b.call(mload, [pc, four, masks[g], zero])
                        b.call(mstore, [b.fadd(old, t), pc, four, masks[g]])
    lt.close()
    b.ret_void()
    return fn


def fast_module(lanes: int, R: int, G: int) -> ir.Module:
    """``fgemm(Ap, Bp, C, M, N, ldc, K2, p0, p1, kc, mc)`` (C[:M, panels p0 .. p1-1] += the chains; ``kc`` a
    multiple of 16 dwords, ``mc`` of R rows; MXCSR at its default for the call) and the packs
    ``fpacka_<kind>``, ``fpackb_<kind>`` (kind bf16 / fp16) and ``fnan``."""
    m = ir.Module(name="amx_fast_gemm")
    ops = _Ops(m, lanes)
    NR = G * lanes
    micro = _micro_fast(ops, R, G)
    ldmxcsr = declare(m, "llvm.x86.sse.ldmxcsr", VOID, [PTR])
    stmxcsr = declare(m, "llvm.x86.sse.stmxcsr", VOID, [PTR])
    prefetch = declare(m, "llvm.prefetch.p0", VOID, [PTR, I32, I32, I32])
    _, b, args = define(m, "fgemm", VOID, [PTR, PTR, PTR] + [I64] * 8,
                        names=("Ap", "Bp", "C", "M", "N", "ldc", "K2", "p0", "p1", "kc", "mc"), noalias=(0, 1, 2))
    Ap, Bp, C, M, N, ldc, K2, p0, p1, kc, mc = args
    saved, mx = b.alloca(I32), b.alloca(I32)
    b.call(stmxcsr, [saved])
    b.store(ir.Constant(I32, 0x1F80), mx)      # RNE, exceptions masked, no FTZ, no DAZ
    b.call(ldmxcsr, [mx])
    mp = b.mul(b.sdiv(b.add(M, i64(R - 1)), i64(R)), i64(R))
    lk = Loop(b, i64(0), K2, kc, name="kb")
    k0 = lk.index
    rest = b.sub(K2, k0)
    klen = smin(b, rest, kc)
    lm = Loop(b, i64(0), mp, mc, name="mb")
    i0 = lm.index
    iend = b.add(i0, mc)
    i1 = smin(b, iend, mp)
    lp = Loop(b, p0, p1, 1, name="p")
    p = lp.index
    bblk = at(b, F32, Bp, b.mul(b.add(b.mul(p, K2), k0), i64(2 * NR)))
    col = b.mul(p, i64(NR))
    ncol = b.sub(N, col)
    ncol = smin(b, ncol, i64(NR))
    # while the row blocks run on this panel's block of B (in L1), the next panel's block is prefetched in equal
    # shares (at the first row block it would come from L3 / memory at the kernel's pace otherwise)
    nxt = at(b, F32, Bp, b.mul(b.add(b.mul(b.add(p, i64(1)), K2), k0), i64(2 * NR)))
    has_next = b.icmp_signed("<", b.add(p, i64(1)), p1)
    lines = b.sdiv(b.add(b.mul(klen, i64(2 * NR * 4)), i64(63)), i64(64))
    nblocks = b.sdiv(b.add(b.sub(i1, i0), i64(R - 1)), i64(R))
    share = b.sdiv(b.add(lines, b.sub(nblocks, i64(1))), nblocks)
    li = Loop(b, i0, i1, R, name="i")
    i = li.index
    with b.if_then(b.and_(has_next, ir.Constant(I1, int(PREFETCH_B)))):
        first = b.mul(b.sdiv(b.sub(i, i0), i64(R)), share)
        last = b.add(first, share)
        last = smin(b, last, lines)
        lf = Loop(b, first, last, 1, name="pf")
        b.call(prefetch, [at(b, I8, nxt, b.mul(lf.index, i64(64))), ir.Constant(I32, 0), ir.Constant(I32, 3),
                          ir.Constant(I32, 1)])
        lf.close()
    ablk = at(b, F32, Ap, b.mul(b.add(b.mul(i, K2), b.mul(k0, i64(R))), i64(2)))
    b.call(micro, [ablk, bblk, at(b, F32, C, b.add(b.mul(i, ldc), col)), ldc, klen, b.sub(M, i), ncol])
    li.close()
    lp.close()
    lm.close()
    lk.close()
    b.call(ldmxcsr, [saved])
    b.ret_void()
    for kind in (_BF16, _FP16):
        _pack_a_fast(m, kind, R)
        _pack_b_fast(m, kind, lanes, G)
    _nan_fix(m)
    _prep_c(m)
    return m


def _prep_c(m: ir.Module) -> None:
    """``fprepc(c, out, n, stat)``: out = C with DAZ (a denormal accumulator reads as the zero of its sign);
    ``stat[0]`` = min key (:func:`_key`) of the flushed values, ``stat[1]`` = 1 if C holds a NaN, else 0."""
    _, b, (c, out, n, stat) = define(m, "fprepc", VOID, [PTR, PTR, I64, PTR], names=("c", "out", "n", "stat"),
                                     noalias=(0, 1, 3))
    umin = _umin(m, I32)
    lp = Loop(b, i64(0), n, 1, name="e", carry=[ir.Constant(I32, -1), ir.Constant(I32, 0)])
    x = b.load(at(b, I32, c, lp.index), typ=I32)
    den = b.icmp_unsigned("==", b.and_(x, ir.Constant(I32, 0x7F800000)), ir.Constant(I32, 0))
    x = b.select(den, b.and_(x, ir.Constant(I32, 0x80000000 - (1 << 32))), x)
    b.store(x, at(b, I32, out, lp.index))
    key, _ = _key(b, x)
    nan = b.zext(b.icmp_unsigned(">", b.and_(x, ir.Constant(I32, 0x7FFFFFFF)), ir.Constant(I32, 0x7F800000)), I32)
    mn, anynan = lp.close([b.call(umin, [lp.values[0], key]), b.or_(lp.values[1], nan)])
    b.store(mn, stat)
    b.store(anynan, at(b, I32, stat, i64(1)))
    b.ret_void()


def _nan_fix(m: ir.Module) -> None:
    """``fnan(out, c, n, hasc)``: every NaN of out (fp32 bits) becomes x86's default NaN 0xFFC00000, or, where
    C (``hasc``) is a NaN there, C's NaN made quiet (C is the first operand of every C + t)."""
    _, b, (out, c, n, hasc) = define(m, "fnan", VOID, [PTR, PTR, I64, I64], names=("out", "c", "n", "hasc"),
                                     noalias=(0, 1))
    lp = Loop(b, i64(0), n, 1, name="e")
    po = at(b, I32, out, lp.index)
    x = b.load(po, typ=I32)
    isnan = b.icmp_unsigned(">", b.and_(x, ir.Constant(I32, 0x7FFFFFFF)), ir.Constant(I32, 0x7F800000))
    with b.if_then(isnan):
        cv = b.select(b.icmp_signed("!=", hasc, i64(0)), b.load(at(b, I32, c, lp.index), typ=I32),
                      ir.Constant(I32, 0))
        cnan = b.icmp_unsigned(">", b.and_(cv, ir.Constant(I32, 0x7FFFFFFF)), ir.Constant(I32, 0x7F800000))
        b.store(b.select(cnan, b.or_(cv, ir.Constant(I32, 0x00400000)), ir.Constant(I32, 0xFFC00000 - (1 << 32))),
                po)
    lp.close()
    b.ret_void()
