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
* ``gmma_{R}_{V}_{KC}(A f32*, B f32*, C f32*, Pk f32*, bad i8*, M, N, K, p0, p1, i0, i1, hasC)`` -- binary32
  FMA chains on the caller's arrays, B's panels packed by the thread that uses them.
* ``fmma{T}_{R}_{V}_{S}(A64 f64*, B f32*, C f32*, MX f64*, F i8*, Pk f64*, RB f64*, MB f64*, RAC f64*, MAC f64*,
  M, N, K, KC, p0, p1, i0, i1, hasC, sigB)`` -- the unchecked kernel and its test, B's panels widened to
  binary64 with their statistics by the thread that uses them; ``astat`` -- A in binary64 and its statistics.
* ``rfn{SV}`` -- the refinement's per-element statistics; ``tpose{SV}`` -- B transposed for it.
* ``widen_{bf16,fp16}_{SV}`` -- the inputs as float32, input denormals flushed.

Helpers that kernels share: :func:`masked_load` / :func:`masked_store` (tails without padding copies),
:func:`lane_mask`, :func:`pack_panel`.
"""

from __future__ import annotations

from llvmlite import ir

from ..jit.build import (F32, F64, I1, I8, I16, I32, I64, PTR, VOID, Loop, at, broadcast, declare, define, f64_bits,
                         i64, intrinsic, load_volatile, or_all, smin, splat, store_volatile, two_sum, vec, vload, vstore)

__all__ = ["checked_module", "fma32_module", "fast_module", "refine_module", "widen_module", "EXP_MASK", "masked_load",
           "masked_store", "lane_mask", "pack_panel"]

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


def fma32_module(R: int, V: int, SV: int, KC: int = 0) -> ir.Module:
    m = ir.Module(name="xmx_fma32")
    build_gmma(m, R, V, SV, KC)
    return m


def _vec_suffix(ty) -> str:
    e = ty.element
    return f"v{ty.count}" + ("f32" if e == F32 else "f64" if e == F64 else f"i{e.width}")


def masked_load(b, ty, ptr, mask, passthru, align: int):
    """``llvm.masked.load``: the lanes of ``mask`` from memory, the others from ``passthru`` (no access to the
    masked-off lanes' addresses: a tail may end at the array's end)."""
    fn = declare(b.module, f"llvm.masked.load.{_vec_suffix(ty)}.p0", ty, [PTR, I32, mask.type, ty])
    return b.call(fn, [ptr, ir.Constant(I32, align), mask, passthru])


def masked_store(b, value, ptr, mask, align: int) -> None:
    """``llvm.masked.store``: only the lanes of ``mask`` are written."""
    fn = declare(b.module, f"llvm.masked.store.{_vec_suffix(value.type)}.p0", VOID, [value.type, PTR, I32,
                                                                                    mask.type])
    b.call(fn, [value, ptr, ir.Constant(I32, align), mask])


def lane_mask(b, base, limit, lanes: int):
    """<lanes x i1>: lane l is set where base + l < limit (signed)."""
    iota = ir.Constant(vec(I64, lanes), list(range(lanes)))
    return b.icmp_signed("<", b.add(broadcast(b, base, lanes), iota), broadcast(b, limit, lanes))


def _any(b, bits):
    """i1: some lane of the <n x i1> vector ``bits`` is set."""
    return b.icmp_unsigned("!=", b.bitcast(bits, ir.IntType(bits.type.count)), ir.Constant(ir.IntType(
        bits.type.count), 0))


def pack_panel(b, src, dst, row_stride, col0, limit, K, lanes: int, V: int, ety) -> None:
    """dst[k * W + l] = src[k * row_stride + col0 + l] for k < K, l < W = lanes * V, and 0 where col0 + l >=
    limit: one panel of B (K x W, contiguous) from a row-major K x N array, the tail columns zero."""
    ty = vec(ety, lanes)
    masks = [lane_mask(b, b.add(col0, i64(lanes * v)), limit, lanes) for v in range(V)]
    lk = Loop(b, i64(0), K, 1, name="pk")
    k = lk.index
    srow = b.add(b.mul(k, row_stride), col0)
    drow = b.mul(k, i64(lanes * V))
    for v in range(V):
        x = masked_load(b, ty, at(b, ety, src, b.add(srow, i64(lanes * v))), masks[v], splat(ty, 0.0), 4)
        vstore(b, x, dst, b.add(drow, i64(lanes * v)), align=4)
    lk.close()
    return masks


def build_gmma(m: ir.Module, R: int, V: int, SV: int, KC: int = 0) -> str:
    """``gmma_{R}_{V}_{KC}(A f32*, B f32*, C f32*, Pk f32*, bad i8*, M, N, K, p0, p1, i0, i1, hasC)``: binary32
    FMA chains (x = fma(a, b, x) on SV-float vectors) on the caller's own arrays: A row-major M x K, B row-major
    K x N, C row-major M x N (read first where ``hasC``, else +0; written with the results). Each panel of
    W = SV V columns of B is packed into the scratch ``Pk`` (KC x W, or K x W for KC = 0) by the thread that
    uses it, K in chunks of KC (the accumulators go through C between chunks: fp32 values, exact; the chain
    keeps its K order), rows R at a time and then one at a time, the tail columns masked: no copy of A, B or C
    is made outside. ``bad[0]`` = 1 where some result is not finite (the caller's exact path then recomputes
    those)."""
    name = f"gmma_{R}_{V}_{KC}"
    W = SV * V
    Fv = vec(F32, SV)
    fma = intrinsic(m, "fma", Fv, 3)
    fabs = intrinsic(m, "fabs", Fv, 1)
    fn, b, args = define(m, name, VOID, [PTR, PTR, PTR, PTR, PTR, I64, I64, I64, I64, I64, I64, I64, I64],
                         names=("A", "B", "C", "Pk", "bad", "M", "N", "K", "p0", "p1", "i0", "i1", "hasC"),
                         noalias=(0, 1, 2, 3, 4))
    A, B, C, Pk, bad, M, N, K, p0, p1, i0, i1, hasC = args
    badv = b.alloca(I8)
    b.store(ir.Constant(I8, 0), badv)
    inf = splat(Fv, _INF)
    kstep = i64(KC) if KC else b.add(K, i64(1))
    lp = Loop(b, p0, p1, 1, name="p")
    pcol = b.mul(lp.index, i64(W))
    lc = Loop(b, i64(0), K, kstep, name="kc")
    kc0 = lc.index
    kc1 = smin(b, b.add(kc0, kstep), K)
    klen = b.sub(kc1, kc0)
    masks = pack_panel(b, at(b, F32, B, b.mul(kc0, N)), Pk, N, pcol, N, klen, SV, V, F32)
    load_c = b.or_(b.icmp_signed("!=", hasC, i64(0)), b.icmp_signed(">", kc0, i64(0)))
    cmasks = [b.and_(mk, broadcast(b, load_c, SV)) for mk in masks]
    nfull = b.add(i0, b.mul(b.sdiv(b.sub(i1, i0), i64(R)), i64(R)))
    for rb, start, stop in ((R, i0, nfull), (1, nfull, i1)):
        li = Loop(b, start, stop, rb, name=f"i{rb}")
        i = li.index
        pa, ci = [], {}
        for r in range(rb):
            row = b.add(i, i64(r))
            pa.append(at(b, F32, A, b.add(b.mul(row, K), kc0)))
            cb = b.add(b.mul(row, N), pcol)
            for v in range(V):
                ci[r, v] = at(b, F32, C, b.add(cb, i64(SV * v)))
        RV = [(r, v) for r in range(rb) for v in range(V)]
        c0 = [masked_load(b, Fv, ci[r, v], cmasks[v], splat(Fv, 0.0), 4) for r, v in RV]
        lk = Loop(b, i64(0), klen, 1, name=f"k{rb}", carry=c0)
        k = lk.index
        bo = b.mul(k, i64(W))
        bv = [vload(b, Fv, Pk, b.add(bo, i64(SV * v)), align=4) for v in range(V)]
        av = [broadcast(b, vload(b, F32, pa[r], k), SV) for r in range(rb)]
        xs = lk.close([b.call(fma, [av[r], bv[v], x]) for (r, v), x in zip(RV, lk.values)])
        nonfin = None
        for (r, v), x in zip(RV, xs):
            masked_store(b, x, ci[r, v], masks[v], 4)
            nf = b.and_(_not(b, b.fcmp_ordered("<", b.call(fabs, [x]), inf)), masks[v])
            nonfin = nf if nonfin is None else b.or_(nonfin, nf)
        b.store(b.or_(b.load(badv, typ=I8), b.zext(_any(b, nonfin), I8)), badv)
        li.close()
    lc.close()
    lp.close()
    b.store(b.load(badv, typ=I8), bad)
    b.ret_void()
    return name


def build_widen(m: ir.Module, fmt: str, SV: int) -> str:
    """``widen_{fmt}(src i16*, dst f32*, n, minnorm f32)``: dst[i] = the bf16 / fp16 element src[i] as float32
    (exact), a nonzero magnitude below ``minnorm`` made a zero of its sign (the flush of input denormals; pass
    0 for none). NaN payloads are not kept (a NaN input makes the model's NaN whatever its bits)."""
    name = f"widen_{fmt}_{SV}"
    Fv, Iv = vec(F32, SV), vec(I16, SV)
    fabs = intrinsic(m, "fabs", Fv, 1)
    fn, b, (src, dst, n, minnorm) = define(m, name, VOID, [PTR, PTR, I64, F32],
                                           names=("src", "dst", "n", "minnorm"), noalias=(0, 1))
    mn = broadcast(b, minnorm, SV)
    zero = splat(Fv, 0.0)
    sign = splat(vec(I32, SV), 0x80000000)

    def convert(x):
        if fmt == "bf16":
            v = b.bitcast(b.shl(b.zext(x, vec(I32, SV)), splat(vec(I32, SV), 16)), Fv)
        else:
            v = b.fpext(b.bitcast(x, vec(ir.HalfType(), SV)), Fv)
        tiny = b.and_(b.fcmp_ordered("<", b.call(fabs, [v]), mn), b.fcmp_ordered("!=", v, zero))
        signed0 = b.bitcast(b.and_(b.bitcast(v, vec(I32, SV)), sign), Fv)
        return b.select(tiny, signed0, v)

    nv = b.mul(b.sdiv(n, i64(SV)), i64(SV))
    lv = Loop(b, i64(0), nv, SV, name="v")
    vstore(b, convert(vload(b, Iv, src, lv.index, align=2)), dst, lv.index, align=4)
    lv.close()
    mask = lane_mask(b, nv, n, SV)
    x = masked_load(b, Iv, at(b, I16, src, nv), mask, splat(Iv, 0), 2)
    masked_store(b, convert(x), at(b, F32, dst, nv), mask, 4)
    b.ret_void()
    return name


def widen_module(SV: int) -> ir.Module:
    m = ir.Module(name="xmx_widen")
    build_widen(m, "bf16", SV)
    build_widen(m, "fp16", SV)
    return m


def _pow2(b, e, ty):
    """2**e as binary64 (scalar or vector) from integer exponents ``e`` (i64 lanes) in [-1022, 1023]."""
    ity = _int_like(ty)
    return b.bitcast(b.shl(b.add(e, splat(ity, 1023)), splat(ity, 52)), ty)


def _granularity(b, lo, hi, sig, shift: int, lanes: int | None):
    """The statistics of a line from the running (min of bits - 1) and (max of bits) of its magnitudes as
    binary32 patterns (i32 lanes or scalars): (2**(shift + L), max magnitude as binary64) with L the exponent
    of :func:`systolic.xmx.native._line_stats` (every element a multiple of 2**L; all zeros: _BIG); ``sig``:
    an i32 value, the significant bits of the line's format."""
    ity = vec(I32, lanes) if lanes else I32
    low = b.add(lo, splat(ity, 1))
    E = b.lshr(low, splat(ity, 23))
    E = b.select(b.icmp_unsigned("<", E, splat(ity, 1)), splat(ity, 1), E)
    off = b.add(broadcast(b, sig, lanes) if lanes else sig, splat(ity, 126))
    lsb = b.select(b.icmp_unsigned("==", low, splat(ity, 0)), splat(ity, BIG), b.sub(E, off))
    ety = vec(I64, lanes) if lanes else I64
    dty = vec(F64, lanes) if lanes else F64
    fty = vec(F32, lanes) if lanes else F32
    return _pow2(b, b.add(b.sext(lsb, ety), splat(ety, shift)), dty), b.fpext(b.bitcast(hi, fty), dty)


#: "no constraint" exponent of an all-zero line (native._BIG)
BIG = 600


def build_astat(m: ir.Module) -> str:
    """``astat(A f32*, A64 f64*, RAC f64*, MAC f64*, i0, i1, K, KC, sig, ST f64)``: rows i0..i1 of A (M x K)
    widened to binary64 into A64, and per row and chunk of KC elements RAC = 2**(51 + L), MAC = ST * max|a|
    (the fast kernel's test statistics, native.fast_mma)."""
    name = "astat"
    fn, b, args = define(m, name, VOID, [PTR, PTR, PTR, PTR, I64, I64, I64, I64, I64, F64],
                         names=("A", "A64", "RAC", "MAC", "i0", "i1", "K", "KC", "sig", "ST"), noalias=(0, 1, 2, 3))
    A, A64, RAC, MAC, i0, i1, K, KC, sig, ST = args
    sig = b.trunc(sig, I32)
    nch = b.sdiv(K, KC)
    umin, umax = intrinsic(m, "umin", I32, 2), intrinsic(m, "umax", I32, 2)
    li = Loop(b, i0, i1, 1, name="i")
    row = b.mul(li.index, K)
    lc = Loop(b, i64(0), nch, 1, name="ch")
    base = b.add(row, b.mul(lc.index, KC))
    lk = Loop(b, i64(0), KC, 1, name="k", carry=[ir.Constant(I32, -1), ir.Constant(I32, 0)])
    idx = b.add(base, lk.index)
    x = vload(b, F32, A, idx)
    vstore(b, b.fpext(x, F64), A64, idx)
    u = b.and_(b.bitcast(x, I32), ir.Constant(I32, 0x7FFFFFFF))
    lo, hi = lk.close([b.call(umin, [lk.values[0], b.sub(u, ir.Constant(I32, 1))]),
                       b.call(umax, [lk.values[1], u])])
    r2, mx = _granularity(b, lo, hi, sig, 51, None)
    si = b.add(b.mul(li.index, nch), lc.index)
    vstore(b, r2, RAC, si)
    vstore(b, b.fmul(mx, ST), MAC, si)
    lc.close()
    li.close()
    b.ret_void()
    return name


def build_fmma(m: ir.Module, T: int, R: int, V: int, fma: bool, S: int, FV: int, grow: float) -> str:
    """``fmma{T}_{R}_{V}_{S}(A64 f64*, B f32*, C f32*, MX f64*, F i8*, Pk f64*, RB f64*, MB f64*, RAC f64*,
    MAC f64*, M, N, K, KC, p0, p1, i0, i1, hasC, sigB)``: the unchecked kernel (binary64 stages, Veltkamp rounding,
    the largest |x| recorded every S stages in a stack slot through volatile memory, so that LLVM keeps only
    the accumulators in registers) and the test from the per-chunk statistics; FV doubles per vector, panels
    of W = FV V columns. A64 is A (M x K) in binary64, B (K x N) the caller's float32 array: each panel is
    widened into the scratch Pk (K x W) by the thread that uses it, with its columns' statistics per chunk
    (RB, MB: nch x W); C (M x N, read where ``hasC``, else +0) gets the results, MX the largest |x| and F the
    flags of the elements the test does not prove; rows R at a time, then one at a time; tail columns masked.
    The proof: the comment above :func:`systolic.xmx.native.fast_mma`."""
    name = f"fmma{T}_{R}_{V}_{S}"
    W = FV * V
    D, Fv, Iv = vec(F64, FV), vec(F32, FV), vec(I32, FV)
    fmaf = intrinsic(m, "fma", D, 3)
    fabs = intrinsic(m, "fabs", D, 1)
    umin, umax = intrinsic(m, "umin", Iv, 2), intrinsic(m, "umax", Iv, 2)
    fn, b, args = define(m, name, VOID, [PTR] * 10 + [I64] * 10,
                         names=("A", "B", "C", "MX", "F", "Pk", "RB", "MB", "RAC", "MAC", "M", "N", "K", "KC",
                                "p0", "p1", "i0", "i1", "hasC", "sigB"), noalias=tuple(range(10)))
    A, B, C, MX, F, Pk, RB, MB, RAC, MAC, M, N, K, KC, p0, p1, i0, i1, hasC, sigB = args
    sig_b = b.trunc(sigB, I32)
    nch = b.sdiv(K, KC)
    slots = {(r, v): b.alloca(D) for r in range(R) for v in range(V)}
    withc = broadcast(b, b.icmp_signed("!=", hasC, i64(0)), FV)
    lp = Loop(b, p0, p1, 1, name="p")
    pcol = b.mul(lp.index, i64(W))
    masks = [lane_mask(b, b.add(pcol, i64(FV * v)), N, FV) for v in range(V)]
    cmasks = [b.and_(mk, withc) for mk in masks]
    # the panel: B's columns widened into Pk, and their statistics per chunk
    lc = Loop(b, i64(0), nch, 1, name="pch")
    ch = lc.index
    lk = Loop(b, i64(0), KC, 1, name="pk", carry=[splat(Iv, -1)] * V + [splat(Iv, 0)] * V)
    k = b.add(b.mul(ch, KC), lk.index)
    srow = b.add(b.mul(k, N), pcol)
    nlo, nhi = [], []
    for v in range(V):
        x = masked_load(b, Fv, at(b, F32, B, b.add(srow, i64(FV * v))), masks[v], splat(Fv, 0.0), 4)
        vstore(b, b.fpext(x, D), Pk, b.add(b.mul(k, i64(W)), i64(FV * v)), align=8)
        u = b.and_(b.bitcast(x, Iv), splat(Iv, 0x7FFFFFFF))
        nlo.append(b.call(umin, [lk.values[v], b.sub(u, splat(Iv, 1))]))
        nhi.append(b.call(umax, [lk.values[V + v], u]))
    outs = lk.close(nlo + nhi)
    for v in range(V):
        r2, mx = _granularity(b, outs[v], outs[V + v], sig_b, 0, FV)
        si = b.add(b.mul(ch, i64(W)), i64(FV * v))
        vstore(b, r2, RB, si, align=8)
        vstore(b, mx, MB, si, align=8)
    lc.close()
    nfull = b.add(i0, b.mul(b.sdiv(b.sub(i1, i0), i64(R)), i64(R)))
    for rb, start, stop in ((R, i0, nfull), (1, nfull, i1)):
        _fmma_rows(b, rb, start, stop, T, V, FV, S, fma, grow, fmaf, fabs, slots, masks, cmasks, pcol,
                   A, C, MX, F, Pk, RB, MB, RAC, MAC, N, K, nch)
    lp.close()
    b.ret_void()
    return name


def _fmma_rows(b, R, start, stop, T, V, FV, S, fma, grow, fmaf, fabs, slots, masks, cmasks, pcol,
               A, C, MX, F, Pk, RB, MB, RAC, MAC, N, K, nch):
    """Rows start..stop, R at a time, of the panel at ``pcol``: :func:`build_fmma`'s stage loop and test."""
    W = FV * V
    D, Fv = vec(F64, FV), vec(F32, FV)
    li = Loop(b, start, stop, R, name=f"i{R}")
    i = li.index
    RV = [(r, v) for r in range(R) for v in range(V)]
    pa, srow, ci, c0 = [], [], {}, []
    for r in range(R):
        row = b.add(i, i64(r))
        pa.append(at(b, F64, A, b.mul(row, K)))
        srow.append(b.mul(row, nch))
        cb = b.add(b.mul(row, N), pcol)
        for v in range(V):
            ci[r, v] = b.add(cb, i64(FV * v))
    for r, v in RV:
        cf = masked_load(b, Fv, at(b, F32, C, ci[r, v]), cmasks[v], splat(Fv, 0.0), 4)
        x0 = b.fpext(cf, D)
        store_volatile(b, b.call(fabs, [x0]), slots[r, v], align=8)
        c0.append(x0)
    # the stage loop: S stages per step, then the recorded maxima
    lk = Loop(b, i64(0), K, T * S, name=f"k{R}", carry=c0)
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
                bv[t, v] = vload(b, D, Pk, b.add(bo, i64(FV * v)), align=8)
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
        mo = load_volatile(b, slots[rv], D, align=8)
        ab = b.call(fabs, [h[rv]])
        store_volatile(b, b.select(b.fcmp_ordered(">", ab, mo), ab, mo), slots[rv], align=8)
    xs = dict(zip(RV, lk.close([h[rv] for rv in RV])))
    # the statistics of the test, chunk by chunk: t = min RAC*RB, q = max MAC*MB
    inf = splat(D, _INF)
    ls = Loop(b, i64(0), nch, 1, name=f"ch{R}", carry=[inf] * len(RV) + [splat(D, 0.0)] * len(RV))
    ch = ls.index
    tc = dict(zip(RV, ls.values[:len(RV)]))
    qc = dict(zip(RV, ls.values[len(RV):]))
    rb, mb = [], []
    for v in range(V):
        sbi = b.add(b.mul(ch, i64(W)), i64(FV * v))
        rb.append(vload(b, D, RB, sbi, align=8))
        mb.append(vload(b, D, MB, sbi, align=8))
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
    for r, v in RV:
        x = xs[r, v]
        # x is an fp32 value (a rounded stage or C): the conversion is exact
        masked_store(b, b.fptrunc(x, Fv), at(b, F32, C, ci[r, v]), masks[v], 4)
        mc = load_volatile(b, slots[r, v], D, align=8)
        # (max|x| + S*T*P) * _GROW <= 2**(53+L), <= FLT_MAX, L >= -149, and the final x finite
        sg = b.fmul(b.fadd(mc, qc[r, v]), growc)
        okmp = b.fcmp_ordered("<=", sg, b.fmul(tc[r, v], four))
        okov = b.fcmp_ordered("<=", sg, fmax)
        oksb = b.fcmp_ordered(">=", tc[r, v], tmin)
        okf = b.fcmp_ordered("<", b.call(fabs, [x]), inf)
        bad = _not(b, b.and_(b.and_(b.and_(okmp, okov), oksb), okf))
        masked_store(b, b.zext(bad, vec(I8, FV)), at(b, I8, F, ci[r, v]), masks[v], 1)
        # max|x| only where the caller reads it (flagged elements; every element when C is given): the other
        # pages of MX are never touched (page faults cost 1-3 us each in a VM)
        masked_store(b, mc, at(b, F64, MX, ci[r, v]), b.or_(b.and_(masks[v], bad), cmasks[v]), 8)
    li.close()


def build_rfn(m: ir.Module, SV: int) -> str:
    """``rfn{SV}(A f32*, Bt f32*, K, rows i64*, cols i64*, n, L out i64*, P out f64*, sigA, sigB)``: for the
    elements (rows[t], cols[t]), t < n, of C + A B (Bt = B transposed, K each): L = min over k of (L(a_ik) +
    L(b_kj)) and P = max over k of |a_ik b_kj|, the per-element statistics of native._refine, SV lanes at a
    time. P is computed in binary32: whenever the test can pass (L >= -149) every product is a multiple of
    2**-149 of at most 22 significant bits, an exact binary32 number unless it overflows, and an overflowing
    product (infinity) fails the test as the model's overflow requires; a NaN product makes P NaN. With
    L(x) = max(E(x), 1) - 126 - sig (E: x's binary32 exponent field; zeros and non-finite values: no
    constraint), L(a) + L(b) is accumulated as max(Ea, 1) + max(Eb, 1) and the constants taken off once."""
    name = f"rfn{SV}"
    Fv, Iv = vec(F32, SV), vec(I32, SV)
    smin = intrinsic(m, "smin", Iv, 2)
    fabs = intrinsic(m, "fabs", Fv, 1)
    rmin = declare(m, f"llvm.vector.reduce.smin.v{SV}i32", I32, [Iv])
    rmax = declare(m, f"llvm.vector.reduce.fmax.v{SV}f32", F32, [Fv])
    ror = declare(m, f"llvm.vector.reduce.or.v{SV}i1", I1, [vec(I1, SV)])
    fn, b, args = define(m, name, VOID, [PTR, PTR, I64, PTR, PTR, I64, PTR, PTR, I64, I64],
                         names=("A", "Bt", "K", "rows", "cols", "n", "Lo", "Po", "sigA", "sigB"),
                         noalias=(0, 1, 3, 4, 6, 7))
    A, Bt, K, rows, cols, n, Lo, Po, sigA, sigB = args
    free = splat(Iv, 8 * BIG)  # a zero or non-finite element: no constraint
    inf = splat(Fv, _INF)
    kv = b.mul(b.sdiv(K, i64(SV)), i64(SV))
    lt = Loop(b, i64(0), n, 1, name="t")
    t = lt.index
    pa = at(b, F32, A, b.mul(vload(b, I64, rows, t), K))
    pb = at(b, F32, Bt, b.mul(vload(b, I64, cols, t), K))

    def expo(x):
        u = b.and_(b.bitcast(x, Iv), splat(Iv, 0x7FFFFFFF))
        E = b.lshr(u, splat(Iv, 23))
        E1 = b.select(b.icmp_unsigned("<", E, splat(Iv, 1)), splat(Iv, 1), E)
        bad = b.or_(b.icmp_unsigned("==", u, splat(Iv, 0)), b.icmp_unsigned("==", E, splat(Iv, 255)))
        return b.select(bad, free, E1)

    def step(xa, xb, vals):
        Ls, pm, bad = vals
        Ls = b.call(smin, [Ls, b.add(expo(xa), expo(xb))])
        p = b.call(fabs, [b.fmul(xa, xb)])
        bad = b.or_(bad, _not(b, b.fcmp_ordered("<", p, inf)))
        return [Ls, b.select(b.fcmp_ordered(">", p, pm), p, pm), bad]

    init = [splat(Iv, 16 * BIG), splat(Fv, 0.0), splat(vec(I1, SV), 0)]
    lk = Loop(b, i64(0), kv, SV, name="k", carry=init)
    k = lk.index
    outs = lk.close(step(vload(b, Fv, pa, k, align=4), vload(b, Fv, pb, k, align=4), lk.values))
    mk = lane_mask(b, kv, K, SV)   # the tail: masked-off lanes are zeros (no constraint, product 0)
    Lv, Pv, badv = step(masked_load(b, Fv, at(b, F32, pa, kv), mk, splat(Fv, 0.0), 4),
                        masked_load(b, Fv, at(b, F32, pb, kv), mk, splat(Fv, 0.0), 4), outs)
    P = b.select(b.call(ror, [badv]), ir.Constant(F64, float("nan")), b.fpext(b.call(rmax, [Pv]), F64))
    Lsum = b.sext(b.call(rmin, [Lv]), I64)
    vstore(b, b.sub(b.sub(b.sub(Lsum, i64(252)), sigA), sigB), Lo, t)
    vstore(b, P, Po, t)
    lt.close()
    b.ret_void()
    return name


def build_tpose(m: ir.Module, SV: int) -> str:
    """``tpose{SV}(B f32*, Bt f32*, K, N, c0, c1)``: Bt[c, k] = B[k, c] for columns c0..c1 (c1 - c0 and c0
    multiples of SV, or c1 = N), SV columns at a time: one vector load per row of B, SV scalar stores."""
    name = f"tpose{SV}"
    Fv = vec(F32, SV)
    fn, b, (B, Bt, K, N, c0, c1) = define(m, name, VOID, [PTR, PTR, I64, I64, I64, I64],
                                           names=("B", "Bt", "K", "N", "c0", "c1"), noalias=(0, 1))
    cv = b.add(c0, b.mul(b.sdiv(b.sub(c1, c0), i64(SV)), i64(SV)))
    lc = Loop(b, c0, cv, SV, name="c")
    c = lc.index
    lk = Loop(b, i64(0), K, 1, name="k")
    k = lk.index
    x = vload(b, Fv, B, b.add(b.mul(k, N), c), align=4)
    for lane in range(SV):
        vstore(b, b.extract_element(x, ir.Constant(I32, lane)), Bt, b.add(b.mul(b.add(c, i64(lane)), K), k))
    lk.close()
    lc.close()
    lt = Loop(b, cv, c1, 1, name="ct")
    lk2 = Loop(b, i64(0), K, 1, name="k2")
    vstore(b, vload(b, F32, B, b.add(b.mul(lk2.index, N), lt.index)), Bt, b.add(b.mul(lt.index, K), lk2.index))
    lk2.close()
    lt.close()
    b.ret_void()
    return name


def refine_module(SV: int) -> ir.Module:
    m = ir.Module(name="xmx_refine")
    build_rfn(m, SV)
    build_tpose(m, SV)
    return m


def fast_module(T: int, R: int, V: int, fma: bool, S: int, FV: int, grow: float) -> ir.Module:
    m = ir.Module(name="xmx_fast")
    build_fmma(m, T, R, V, fma, S, FV, grow)
    build_astat(m)
    return m
