"""The compiled kernel of the XMX ``block(L, F)`` numerics model, built with llvmlite's IR builder.

The driver (packing, threads, which GEMMs it takes) is :mod:`systolic.xmx.native_block`; the model is
``models._block_sum_fp32`` / docs/xmx.md "Numerics models". One block step, for binary64 lanes holding the
accumulator x (an fp32 value) and the block's exact products p_0 .. p_{n-1}:

1. ``m = max(|x|, |p_0|, ..., lo)``, clamped to ``<= hi``: the largest magnitude, whose binary64 exponent field E
   gives e_max = E - 1023 = floor(log2 m). Every term is a normal binary64 number or zero (the smallest nonzero
   product of two DPAS inputs is 2**-298, an fp32 accumulator 2**-149; the largest product 2**256 < hi), so
   for finite terms that are not all zero, E is exactly the model's e_max.
   ``lo = 2**-960`` and ``hi = 2**900`` only matter where the spec does not use e_max (all terms zero, or a NaN
   or an infinity among them): they keep the scale factors below positive and finite.
2. ``inv = 2**(F - e_max)`` and ``scale = 2**(e_max - F)``, built from E by integer subtraction on the exponent
   field (both normal: E lies in [63, 1923] after the clamp and F <= 44).
3. ``N = trunc(x * inv) + sum trunc(p_t * inv)``. ``x * inv`` is exact (a power-of-two scaling to a normal
   number), ``trunc`` is the truncation toward zero to a multiple of 2**(e_max - F) that the model does, and each
   truncated term is an integer of magnitude below 2**(F + 1) (the largest term lies in [2**F, 2**(F+1))); with
   at most 65 terms and F <= 44 every partial sum is an integer below 2**52, so binary64 adds them exactly, in
   any order (the sum is a tree, for a short dependency chain).
4. ``x' = fptrunc(N * scale)``: N * scale is the exact aligned sum (a power-of-two scaling of an integer below
   2**52, normal in binary64), and ``fptrunc`` rounds it once to fp32, to nearest even, with subnormal results
   and overflow to infinity as IEEE 754 says (MXCSR at its defaults: systolic.fpenv).

Signed zeros and specials come out of IEEE arithmetic with no test: the largest nonzero term scales to at least
2**F >= 1, so N is zero only when the terms cancel exactly (then IEEE's sum is +0, the model's rule) or every
term is zero (trunc keeps each zero's sign, and IEEE's sum of zeros is -0 exactly when all are -0: the model's
rule, IEEE 754 section 6.3). A NaN term or an infinity is not changed by a positive finite scaling or by trunc,
so N is NaN or the infinity exactly as the IEEE sum of the terms is (the spec's ``_special``), and so is x'.
The final fp32 result is stored as its bits, a NaN as the model's ``nan_bits``.

Kernel (``void``; pointers noalias):
``bmma_{R}_{V}(A f64*, Bp f64*, C f32*, O i32*, N, K, i0, i1, p0, p1, F i64, NAN i32)``: A is M x K
(row-major; f32 elements with ``wide=False``, as Bp), Bp is B packed in panels of W = FV * V columns (panel p:
K rows of W), C and O are M x N (the initial accumulator; the result bits, a NaN stored as NAN); rows i0..i1 in
steps of R, panels p0..p1. K is a multiple of the instruction's K (``kd``); each instruction's kd products are
split into blocks of L in K order (the last block of an instruction shorter when L does not divide kd), so the
block layout is unrolled into the K loop's body.
"""

from __future__ import annotations

from llvmlite import ir

from ..jit.build import F32, F64, I32, I64, PTR, VOID, Loop, at, broadcast, define, i64, intrinsic, splat, vec, \
    vload, vstore

__all__ = ["block_module", "blocks", "kernel_name"]

EXP_MASK = 0x7FF0000000000000
LO, HI = 2.0 ** -960, 2.0 ** 900


def blocks(kd: int, L: int) -> list[tuple[int, int]]:
    """(start, size) of the blocks of one instruction of ``kd`` products: blocks of L in K order
    (``models.accumulate``; the spec path restarts the blocks at each instruction)."""
    return [(s, min(L, kd - s)) for s in range(0, kd, L)]


def kernel_name(R: int, V: int) -> str:
    return f"bmma_{R}_{V}"


def _vmax(b, x, y):
    """x > y ? x : y (an ordered compare: a NaN operand in x loses; the x86 MAXPD pattern)."""
    return b.select(b.fcmp_ordered(">", x, y), x, y)


def _tree(b, op, values):
    """op over ``values`` as a balanced tree (max and exact integer sums are order-free; a short chain)."""
    values = list(values)
    while len(values) > 1:
        nxt = [op(values[i], values[i + 1]) for i in range(0, len(values) - 1, 2)]
        if len(values) % 2:
            nxt.append(values[-1])
        values = nxt
    return values[0]


def block_step(b, m: ir.Module, x, prods, inv_base, f_field):
    """One block step (module docstring, steps 1-4) on binary64 values (vectors or scalars): the new fp32
    accumulator, widened back to binary64. ``inv_base`` = (F + 2046) << 52 and ``f_field`` = F << 52, as
    integers of the lanes' shape."""
    ty = x.type
    ity = vec(I64, ty.count) if isinstance(ty, ir.VectorType) else I64
    fty = vec(F32, ty.count) if isinstance(ty, ir.VectorType) else F32
    fabs = intrinsic(m, "fabs", ty, 1)
    ftrunc = intrinsic(m, "trunc", ty, 1)
    # the products' part first, the accumulator last: the chain from one block's x to the next is then short
    mp = _tree(b, lambda u, v: _vmax(b, u, v), [splat(ty, LO), *(b.call(fabs, [t]) for t in prods)])
    mx = _vmax(b, b.call(fabs, [x]), mp)
    mx = b.select(b.fcmp_ordered("<", mx, splat(ty, HI)), mx, splat(ty, HI))   # NaN -> hi as well
    ebits = b.and_(b.bitcast(mx, ity), splat(ity, EXP_MASK))                   # E << 52
    inv = b.bitcast(b.sub(inv_base, ebits), ty)                                # 2**(F - e_max)
    scale = b.bitcast(b.sub(ebits, f_field), ty)                               # 2**(e_max - F)
    ints = [b.call(ftrunc, [b.fmul(t, inv)]) for t in prods]
    n = b.fadd(_tree(b, b.fadd, ints), b.call(ftrunc, [b.fmul(x, inv)]))
    return b.fpext(b.fptrunc(b.fmul(n, scale), fty), ty)


def build_bmma(m: ir.Module, *, kd: int, L: int, FV: int, R: int, V: int, wide: bool = True) -> str:
    """``bmma_{R}_{V}``: R rows x V vectors of FV binary64 lanes of accumulators carried across K; F and the
    NaN pattern are arguments (one kernel per instruction K, L and width)."""
    name = kernel_name(R, V)
    W = FV * V
    D, Fv, Iv = vec(F64, FV), vec(F32, FV), vec(I32, FV)
    fn, b, args = define(m, name, VOID, [PTR, PTR, PTR, PTR, I64, I64, I64, I64, I64, I64, I64, I32],
                         names=("A", "Bp", "C", "O", "N", "K", "i0", "i1", "p0", "p1", "F", "NAN"),
                         noalias=(0, 1, 2, 3))
    A, Bp, C, O, N, K, i0, i1, p0, p1, Fb, NAN = args
    inv_base = broadcast(b, b.shl(b.add(Fb, i64(2046)), i64(52)), FV)
    f_field = broadcast(b, b.shl(Fb, i64(52)), FV)
    lp = Loop(b, p0, p1, 1, name="p")
    p = lp.index
    pcol = b.mul(p, i64(W))
    E = F64 if wide else F32                       # A and Bp: binary64 (wide) or binary32 elements
    Ev = vec(E, FV)
    bpan = at(b, E, Bp, b.mul(p, b.mul(K, i64(W))))
    li = Loop(b, i0, i1, R, name="i")
    i = li.index
    RV = [(r, v) for r in range(R) for v in range(V)]
    arow, ci = [], {}
    for r in range(R):
        row = b.add(i, i64(r))
        arow.append(at(b, E, A, b.mul(row, K)))
        cb = b.add(b.mul(row, N), pcol)
        for v in range(V):
            ci[r, v] = b.add(cb, i64(FV * v))
    c0 = [b.fpext(vload(b, Fv, C, ci[rv], align=4), D) for rv in RV]
    lk = Loop(b, i64(0), K, kd, name="k", carry=c0)
    k = lk.index
    acc = dict(zip(RV, lk.values))
    for s0, size in blocks(kd, L):
        av, bv = {}, {}
        for t in range(s0, s0 + size):
            kt = b.add(k, i64(t))
            bo = b.mul(kt, i64(W))
            for v in range(V):
                bv[t, v] = vload(b, Ev, bpan, b.add(bo, i64(FV * v)), align=4)
                bv[t, v] = bv[t, v] if wide else b.fpext(bv[t, v], D)
            for r in range(R):
                ae = vload(b, E, arow[r], kt)
                av[t, r] = broadcast(b, ae if wide else b.fpext(ae, F64), FV)
        for r, v in RV:
            prods = [b.fmul(av[t, r], bv[t, v]) for t in range(s0, s0 + size)]  # exact in binary64
            acc[r, v] = block_step(b, m, acc[r, v], prods, inv_base, f_field)
    outs = dict(zip(RV, lk.close([acc[rv] for rv in RV])))
    nan = broadcast(b, NAN, FV)
    for rv in RV:
        x = outs[rv]
        bits = b.bitcast(b.fptrunc(x, Fv), Iv)          # x is an fp32 value: exact
        bits = b.select(b.fcmp_unordered("uno", x, x), nan, bits)
        vstore(b, bits, O, ci[rv], align=4)
    li.close()
    lp.close()
    b.ret_void()
    return name


def block_module(*, kd: int, L: int, FV: int, R: int, V: int, wide: bool = True) -> ir.Module:
    """The module holding ``bmma_{R}_{V}`` for one instruction K (``kd``) and block size L."""
    mod = ir.Module(name=f"xmx_block_{kd}_{L}")
    build_bmma(mod, kd=kd, L=L, FV=FV, R=R, V=V, wide=wide)
    return mod
