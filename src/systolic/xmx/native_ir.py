"""The float XMX models' compiled kernels, built with llvmlite's IR builder (the driver is :mod:`.native`).

Every kernel computes what :mod:`systolic.xmx.kernels` computes, by the arguments written next to it in
:mod:`.native` (the TwoSum cascade with round to odd, the exactness-checked binary64 sum, the binary32 FMA chain,
the unchecked binary64 stage with Veltkamp rounding and its a-posteriori test). No fast-math flags: LLVM keeps
every IEEE operation as written. Vector widths are parameters, so the same construction gives the AVX2 kernels
(256-bit: 4 doubles, 8 floats) and the AVX-512 ones (8 doubles, 16 floats): see :func:`systolic.jit.vector_bits`.

Kernels (all ``void``; pointer arguments are noalias):

* ``mma{T}(A f32*, B f32*, C f64*, F i8*, N, K, i0, i1, j0, j1)`` -- scalar TwoSum / round-to-odd cascade.
* ``vmma{T}_{R}`` -- the same on W-column vectors, R rows at once.
* ``emma{T}_{R}`` -- the exactness-checked binary64 sum, W-column vectors.
* ``smma_{R}_{V}(A f32*, Bp f32*, C f32*, F i8*, N, K, i0, i1, p0, p1)`` -- binary32 FMA chains.
* ``fmma{T}_{R}_{V}_{S}(A f64*, Bp f64*, C f32*, MX f64*, N, K, i0, i1, p0, p1, RAC, MAC, RBC, MBC, F, KC)``
  -- the unchecked kernel and its test.
"""

from __future__ import annotations

from llvmlite import ir

from ..jit.build import (F32, F64, I1, I8, I64, PTR, VOID, Loop, at, broadcast, define, f64_bits, intrinsic, i64,
                         load_volatile, or_all, splat, store_volatile, two_sum, vec, vload, vstore)

__all__ = ["checked_module", "fma32_module", "fast_module", "EXP_MASK"]

#: binary64 exponent field
EXP_MASK = 0x7FF0000000000000
_INF = float("inf")
#: Veltkamp's constant 2**29 + 1: RN53(c - RN53(c - S)) with c = RN53(S * (2**29 + 1)) is S rounded to 24 bits
SIGMA = 2.0 ** 29 + 1
_FLT_MAX = f64_bits(0x47EFFFFFE0000000)
_TMIN = 2.0 ** -98  # 2**(51 - 149)


def _int_like(ty):
    """The integer type with the shape of ``ty`` (i64 for double, <n x i64> for <n x double>)."""
    return vec(I64, ty.count) if isinstance(ty, ir.VectorType) else I64


def _not(b, x):
    return b.xor(x, splat(x.type, 1))


def round_sum_fp32(b, x, prods):
    """The steps of ``kernels.round_sum_fp32`` on binary64 values (scalars or vectors): the TwoSum cascade of x
    and the products, the error terms cascaded too (flag if that is inexact), hi + lo rounded to odd in binary64,
    then to fp32 by fptrunc (round to nearest even). Returns (the result widened to binary64, the flag: an error
    cascade step inexact, hi non-finite, or hi zero)."""
    dty = x.type
    ity = _int_like(dty)
    zero = splat(dty, 0.0)
    s_prev, e_prev, bad = x, None, []
    for p in prods:
        s, e = two_sum(b, s_prev, p)
        s_prev = s
        if e_prev is None:
            e_prev = e
        else:
            E, ee = two_sum(b, e_prev, e)
            bad.append(b.fcmp_unordered("!=", ee, zero))
            e_prev = E
    hi, lo = two_sum(b, s_prev, e_prev)
    hb = b.bitcast(hi, ity)
    even = b.icmp_unsigned("==", b.and_(hb, splat(ity, 1)), splat(ity, 0))
    need = b.and_(even, b.fcmp_ordered("!=", lo, zero))
    same = b.xor(b.fcmp_ordered(">", lo, zero), b.fcmp_ordered("<", hi, zero))
    delta = b.select(same, splat(ity, 1), splat(ity, -1))
    hn = b.bitcast(b.add(hb, delta), dty)
    y = b.select(need, hn, hi)
    fty = vec(F32, dty.count) if isinstance(dty, ir.VectorType) else F32
    rd = b.fpext(b.fptrunc(y, fty), dty)
    nonfin = b.icmp_unsigned("==", b.and_(hb, splat(ity, EXP_MASK)), splat(ity, EXP_MASK))
    zero_hi = b.fcmp_unordered("==", hi, zero)
    return rd, or_all(b, [nonfin, *bad, zero_hi])


_CHECKED_ARGS = ("A", "B", "C", "F", "N", "K", "i0", "i1", "j0", "j1")


def _checked_sig():
    return [PTR, PTR, PTR, PTR, I64, I64, I64, I64, I64, I64]


def build_mma(m: ir.Module, T: int) -> None:
    """``mma{T}``: one element at a time, T products per step through :func:`round_sum_fp32`; F |= flag."""
    fn, b, args = define(m, f"mma{T}", VOID, _checked_sig(), names=_CHECKED_ARGS, noalias=(0, 1, 2, 3))
    A, B, C, F, N, K, i0, i1, j0, j1 = args
    li = Loop(b, i0, i1, 1, name="i")
    i = li.index
    arow, crow = b.mul(i, K), b.mul(i, N)
    lk = Loop(b, i64(0), K, T, name="k")
    k = lk.index
    a, brow = [], []
    for t in range(T):
        a.append(b.fpext(vload(b, F32, A, b.add(b.add(arow, k), i64(t))), F64))
        brow.append(b.mul(b.add(k, i64(t)), N))
    lj = Loop(b, j0, j1, 1, name="j")
    j = lj.index
    cidx = b.add(crow, j)
    pc = at(b, F64, C, cidx)
    x = b.load(pc, typ=F64)
    prods = [b.fmul(a[t], b.fpext(vload(b, F32, B, b.add(brow[t], j)), F64)) for t in range(T)]
    rd, bad = round_sum_fp32(b, x, prods)
    b.store(rd, pc)
    pf = at(b, I8, F, cidx)
    b.store(b.or_(b.load(pf, typ=I8), b.zext(bad, I8)), pf)
    lj.close()
    lk.close()
    li.close()
    b.ret_void()


def _vector_rows_kernel(m: ir.Module, name: str, T: int, W: int, R: int, step) -> None:
    """The loop nest shared by ``vmma`` and ``emma``: rows i0..i1 step R, columns j0..j1 step W, the R x W
    accumulators and their flags carried in registers across K; ``step(b, x, prods) -> (new x, flag)`` is
    the kernel's stage; ``final(b, x, fl) -> fl`` (optional attribute of step) adjusts the flags at the end."""
    fn, b, args = define(m, name, VOID, _checked_sig(), names=_CHECKED_ARGS, noalias=(0, 1, 2, 3))
    A, B, C, F, N, K, i0, i1, j0, j1 = args
    D, Fv, B1 = vec(F64, W), vec(F32, W), vec(I1, W)
    li = Loop(b, i0, i1, R, name="i")
    i = li.index
    rows = [b.add(i, i64(r)) for r in range(R)]
    arow = [b.mul(ir_, K) for ir_ in rows]
    crow = [b.mul(ir_, N) for ir_ in rows]
    lj = Loop(b, j0, j1, W, name="j")
    j = lj.index
    cidx = [b.add(crow[r], j) for r in range(R)]
    acc0 = [vload(b, D, C, cidx[r], align=8) for r in range(R)]
    lk = Loop(b, i64(0), K, T, name="k", carry=[*acc0, *([splat(B1, 0)] * R)])
    k = lk.index
    xs, fls = lk.values[:R], lk.values[R:]
    kt = [b.add(k, i64(t)) for t in range(T)]
    bv = [b.fpext(vload(b, Fv, B, b.add(b.mul(kt[t], N), j), align=4), D) for t in range(T)]
    new_x, new_fl = [], []
    for r in range(R):
        prods = []
        for t in range(T):
            ad = b.fpext(vload(b, F32, A, b.add(arow[r], kt[t])), F64)
            prods.append(b.fmul(broadcast(b, ad, W), bv[t]))
        x1, flag = step(b, xs[r], prods)
        new_x.append(x1)
        new_fl.append(b.or_(flag, fls[r]))
    outs = lk.close([*new_x, *new_fl])
    xo, flo = outs[:R], outs[R:]
    final = getattr(step, "final", None)
    for r in range(R):
        vstore(b, xo[r], C, cidx[r], align=8)
        fl = final(b, xo[r], flo[r]) if final else flo[r]
        vstore(b, b.zext(fl, vec(I8, W)), F, cidx[r], align=1)
    lj.close()
    li.close()
    b.ret_void()


def build_vmma(m: ir.Module, T: int, W: int, R: int) -> None:
    """``vmma{T}_{R}``: :func:`round_sum_fp32` on W-column vectors, R rows at once."""
    _vector_rows_kernel(m, f"vmma{T}_{R}", T, W, R, round_sum_fp32)


def _exact_step(b, x, prods):
    """hi = (((x + p0) + p1) + ...) in binary64, each addition s = a + b checked exact by ``s - a == b and
    s - b == a``; hi rounded once to fp32 (fptrunc). Flag: any inexact addition."""
    prev, nx = x, []
    for p in prods:
        h = b.fadd(prev, p)
        ca = b.fcmp_unordered("!=", b.fsub(h, prev), p)
        cb = b.fcmp_unordered("!=", b.fsub(h, p), prev)
        nx.append(b.or_(ca, cb))
        prev = h
    fty = vec(F32, x.type.count)
    return b.fpext(b.fptrunc(prev, fty), x.type), or_all(b, nx)


def _exact_final(b, x, fl):
    """NaN and infinity are checked once per element after the K loop: once non-finite, a chain stays so."""
    ity = _int_like(x.type)
    e = b.and_(b.bitcast(x, ity), splat(ity, EXP_MASK))
    return b.or_(fl, b.icmp_unsigned("==", e, splat(ity, EXP_MASK)))


_exact_step.final = _exact_final


def build_emma(m: ir.Module, T: int, W: int, R: int) -> None:
    """``emma{T}_{R}``: the common case where every addition of the step is exact (see :mod:`.native`)."""
    _vector_rows_kernel(m, f"emma{T}_{R}", T, W, R, _exact_step)


def checked_module(T: int, W: int, R: int) -> ir.Module:
    """The per-operation checked kernels for T products per step: ``mma{T}``, ``vmma{T}_1``, ``emma{T}_{R}``."""
    m = ir.Module(name=f"xmx_checked_{T}")
    build_mma(m, T)
    build_vmma(m, T, W, 1)
    build_emma(m, T, W, R)
    return m


class _Panels:
    """The panel kernels' loop nest: panels p0..p1 of W columns of Bp (element ``ety``, K x W each), row
    blocks i0..i1 step R. ``open()`` leaves the builder in a row block; ``close()`` ends both loops."""

    def __init__(self, b, ety, W: int, R: int, Bp, K, i0, i1, p0, p1):
        self.b = b
        self.pstride = b.mul(K, i64(W))
        self.lp = Loop(b, p0, p1, 1, name="p")
        p = self.lp.index
        self.pcol = b.mul(p, i64(W))
        self.bpan = at(b, ety, Bp, b.mul(p, self.pstride))
        self.li = Loop(b, i0, i1, R, name="i")
        self.i = self.li.index

    def close(self):
        self.li.close()
        self.lp.close()


def _store_flags(b, ok, F, idx, lanes: int) -> None:
    """F[idx .. idx + lanes) = not ok (one byte a lane): the element is not proven."""
    vstore(b, b.zext(_not(b, ok), vec(I8, lanes)), F, idx, align=1)


def build_smma(m: ir.Module, R: int, V: int, SV: int) -> str:
    """``smma_{R}_{V}``: x = fma(a, b, x) in binary32 on SV-float vectors, panels of W = SV V columns;
    non-finite results flagged."""
    name = f"smma_{R}_{V}"
    W = SV * V
    Fv = vec(F32, SV)
    fma = intrinsic(m, "fma", Fv, 3)
    fabs = intrinsic(m, "fabs", Fv, 1)
    fn, b, args = define(m, name, VOID, [PTR, PTR, PTR, PTR, I64, I64, I64, I64, I64, I64],
                         names=("A", "Bp", "C", "F", "N", "K", "i0", "i1", "p0", "p1"), noalias=(0, 1, 2, 3))
    A, Bp, C, F, N, K, i0, i1, p0, p1 = args
    pn = _Panels(b, F32, W, R, Bp, K, i0, i1, p0, p1)
    i = pn.i
    pa, ci = [], {}
    for r in range(R):
        row = b.add(i, i64(r))
        pa.append(at(b, F32, A, b.mul(row, K)))
        cb = b.add(b.mul(row, N), pn.pcol)
        for v in range(V):
            ci[r, v] = b.add(cb, i64(SV * v))
    RV = [(r, v) for r in range(R) for v in range(V)]
    c0 = [vload(b, Fv, C, ci[rv], align=4) for rv in RV]
    lk = Loop(b, i64(0), K, 1, name="k", carry=c0)
    k = lk.index
    bo = b.mul(k, i64(W))
    bv = [vload(b, Fv, pn.bpan, b.add(bo, i64(SV * v)), align=4) for v in range(V)]
    av = [broadcast(b, vload(b, F32, pa[r], k), SV) for r in range(R)]
    h = [b.call(fma, [av[r], bv[v], x]) for (r, v), x in zip(RV, lk.values)]
    xs = lk.close(h)
    inf = splat(Fv, _INF)
    for (r, v), x in zip(RV, xs):
        vstore(b, x, C, ci[r, v], align=4)
        ok = b.fcmp_ordered("<", b.call(fabs, [x]), inf)
        _store_flags(b, ok, F, ci[r, v], SV)
    pn.close()
    b.ret_void()
    return name


def fma32_module(R: int, V: int, SV: int) -> ir.Module:
    m = ir.Module(name="xmx_fma32")
    build_smma(m, R, V, SV)
    return m


def build_fmma(m: ir.Module, T: int, R: int, V: int, fma: bool, S: int, FV: int, grow: float) -> str:
    """``fmma{T}_{R}_{V}_{S}``: the unchecked kernel (binary64 stages, Veltkamp rounding, maxima recorded every
    S stages in MX through volatile memory so LLVM keeps only the accumulators in registers) and the test from
    the per-chunk statistics; FV doubles per vector, panels of W = FV V columns. The proof: the comment above
    :func:`systolic.xmx.native.fast_mma`."""
    name = f"fmma{T}_{R}_{V}_{S}"
    W = FV * V
    D, Fv = vec(F64, FV), vec(F32, FV)
    fmaf = intrinsic(m, "fma", D, 3)
    fabs = intrinsic(m, "fabs", D, 1)
    fn, b, args = define(m, name, VOID, [PTR, PTR, PTR, PTR, I64, I64, I64, I64, I64, I64, PTR, PTR, PTR, PTR,
                                         PTR, I64],
                         names=("A", "Bp", "C", "MX", "N", "K", "i0", "i1", "p0", "p1", "RAC", "MAC", "RBC",
                                "MBC", "F", "KC"),
                         noalias=(0, 1, 2, 3, 10, 11, 12, 13, 14))
    A, Bp, C, MX, N, K, i0, i1, p0, p1, RAC, MAC, RBC, MBC, F, KC = args
    nch = b.udiv(K, KC)
    pn = _Panels(b, F64, W, R, Bp, K, i0, i1, p0, p1)
    i = pn.i
    RV = [(r, v) for r in range(R) for v in range(V)]
    pa, srow, ci, mxp, cfp, c0 = [], [], {}, {}, {}, []
    for r in range(R):
        row = b.add(i, i64(r))
        pa.append(at(b, F64, A, b.mul(row, K)))
        srow.append(b.mul(row, nch))
        cb = b.add(b.mul(row, N), pn.pcol)
        for v in range(V):
            ci[r, v] = b.add(cb, i64(FV * v))
    for rv in RV:
        cfp[rv] = at(b, F32, C, ci[rv])
        cf = b.load(cfp[rv], typ=Fv, align=4)
        mxp[rv] = at(b, F64, MX, ci[rv])
        x0 = b.fpext(cf, D)
        store_volatile(b, b.call(fabs, [x0]), mxp[rv], align=8)
        c0.append(x0)
    # the stage loop: S stages per step, then the recorded maxima
    lk = Loop(b, i64(0), K, T * S, name="k", carry=c0)
    k = lk.index
    h = dict(zip(RV, lk.values))
    sigma = splat(D, SIGMA)
    for st in range(S):
        av, bv = {}, {}
        for t0 in range(T):
            t = st * T + t0  # k offset inside the body
            kt = b.add(k, i64(t))
            bo = b.mul(kt, i64(W))
            for v in range(V):
                bv[t, v] = vload(b, D, pn.bpan, b.add(bo, i64(FV * v)), align=8)
            for r in range(R):
                av[t, r] = broadcast(b, vload(b, F64, pa[r], kt), FV)
        for r, v in RV:
            x = h[r, v]
            for t0 in range(T):  # the stage's exact sum in binary64, x first
                t = st * T + t0
                if fma:
                    x = b.call(fmaf, [av[t, r], bv[t, v], x])
                else:  # the product is exact in binary64, so multiply-then-add equals the fused operation
                    x = b.fadd(x, b.fmul(av[t, r], bv[t, v]))
            # the end of a systolic stage: one RNE to 24 significant bits by Veltkamp's splitting
            c = b.fmul(x, sigma)
            h[r, v] = b.fsub(c, b.fsub(c, x))
    for rv in RV:  # the largest |x|, every S stages
        mo = load_volatile(b, mxp[rv], D, align=8)
        ab = b.call(fabs, [h[rv]])
        store_volatile(b, b.select(b.fcmp_ordered(">", ab, mo), ab, mo), mxp[rv], align=8)
    xs = dict(zip(RV, lk.close([h[rv] for rv in RV])))
    # the statistics of the test, chunk by chunk: t = min RAC*RBC, q = max MAC*MBC
    inf = splat(D, _INF)
    ls = Loop(b, i64(0), nch, 1, name="ch", carry=[inf] * len(RV) + [splat(D, 0.0)] * len(RV))
    ch = ls.index
    tc = dict(zip(RV, ls.values[:len(RV)]))
    qc = dict(zip(RV, ls.values[len(RV):]))
    srb = b.add(b.mul(ch, N), pn.pcol)
    rb, mb = [], []
    for v in range(V):
        sbi = b.add(srb, i64(FV * v))
        rb.append(vload(b, D, RBC, sbi, align=8))
        mb.append(vload(b, D, MBC, sbi, align=8))
    tn, qn = {}, {}
    for r in range(R):
        sai = b.add(srow[r], ch)
        ra = broadcast(b, vload(b, F64, RAC, sai), FV)
        ma = broadcast(b, vload(b, F64, MAC, sai), FV)
        for v in range(V):
            tt = b.fmul(ra, rb[v])
            tn[r, v] = b.select(b.fcmp_ordered("<", tt, tc[r, v]), tt, tc[r, v])
            qq = b.fmul(ma, mb[v])
            # a NaN statistic (an infinity in A times an all-zero chunk of B) is taken and then kept
            qs = b.select(b.fcmp_unordered(">", qq, qc[r, v]), qq, qc[r, v])
            qn[r, v] = b.select(b.fcmp_unordered("uno", qc[r, v], qc[r, v]), qc[r, v], qs)
    outs = ls.close([tn[rv] for rv in RV] + [qn[rv] for rv in RV])
    tc = dict(zip(RV, outs[:len(RV)]))
    qc = dict(zip(RV, outs[len(RV):]))
    growc, four, fmax, tmin = splat(D, grow), splat(D, 4.0), splat(D, _FLT_MAX), splat(D, _TMIN)
    for rv in RV:
        x = xs[rv]
        # x is an fp32 value (a rounded stage or C): the conversion is exact
        b.store(b.fptrunc(x, Fv), cfp[rv], align=4)
        mc = load_volatile(b, mxp[rv], D, align=8)
        # (max|x| + S*T*P) * _GROW <= 2**(53+L), <= FLT_MAX, L >= -149, and the final x finite
        sg = b.fmul(b.fadd(mc, qc[rv]), growc)
        okmp = b.fcmp_ordered("<=", sg, b.fmul(tc[rv], four))
        okov = b.fcmp_ordered("<=", sg, fmax)
        oksb = b.fcmp_ordered(">=", tc[rv], tmin)
        okf = b.fcmp_ordered("<", b.call(fabs, [x]), inf)
        ok = b.and_(b.and_(b.and_(okmp, okov), oksb), okf)
        _store_flags(b, ok, F, ci[rv], FV)
    pn.close()
    b.ret_void()
    return name


def fast_module(T: int, R: int, V: int, fma: bool, S: int, FV: int, grow: float) -> ir.Module:
    m = ir.Module(name="xmx_fast")
    build_fmma(m, T, R, V, fma, S, FV, grow)
    return m
