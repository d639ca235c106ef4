"""A compiled kernel for whole bf16/fp16 GEMMs with the AMX chain order (LLVM IR, JIT-compiled by llvmlite).

What it computes, for every output element, is exactly what
:func:`systolic.amx.kernels` / the SDM compute per TDPBF16PS / TDPFP16PS: per
K tile two fp32 chains (even / odd element of each pair) start at +0 and take
one FMA per dword step; then ``t = even + odd`` and ``C = C + t``; C is carried
from K tile to K tile.

Why the machine's own fp32 FMA gives the SDM's result (inputs are finite here;
the caller routes rows / columns with inf or NaN inputs to the numpy path):

* DAZ: the caller flushes denormal inputs (bf16 denormals, C) to signed zeros;
  the chains themselves never hold a denormal (FTZ below).
* ``llvm.fma.f32`` is one correctly rounded FMA (RNE; MXCSR is set to its
  default 0x1F80 for the duration of the call and restored after).
* FTZ with tininess after rounding: where the hardware returns a denormal
  or exactly +-2^-126 (the only results where gradual underflow and "tiny
  after rounding to 24 bits" can disagree), the exact sum is tiny, so all operands are small
  (|acc| < 2^-100); the same FMA on operands scaled by 2^64 is then exact in
  its scaling and rounds in the normal range, i.e. with an unbounded exponent;
  the result is 2^-126 (with the sign) when that rounded value is >= 2^-62,
  else a signed zero. The adds use the same fix.
* Overflow gives inf and inf - inf the default NaN; the caller rewrites every
  NaN of this path to 0xFFC00000 (x86's default NaN) so the result does not
  depend on the host's NaN conventions.

The loops run K tile -> column group (32 columns: 8 chains in AVX registers)
-> row, so the 4 KiB of B a (K tile, group) needs stays in L1 while the rows of
A stream past it; rows are split between threads (ctypes releases the GIL during
the call).
"""

from __future__ import annotations

import ctypes
import functools

__all__ = ["available", "chain_gemm", "pack_b", "GROUP"]

#: 8-lane vectors per column group: with the FTZ check 2 (4 chains + the check's values fit in 16 ymm
#: registers), without it 4 (8 independent chains hide the FMA latency)
U_CHECK, U_FAST = 2, 4
GROUP = 8 * U_FAST   # columns per group; N is padded to a multiple of it
PREFETCH_ROWS = 8    # rows ahead whose A and C pieces are prefetched

HEAD = r"""
declare <8 x float> @llvm.fma.v8f32(<8 x float>, <8 x float>, <8 x float>)
declare <8 x float> @llvm.fabs.v8f32(<8 x float>)
declare <8 x float> @llvm.copysign.v8f32(<8 x float>, <8 x float>)
declare <8 x i32> @llvm.umin.v8i32(<8 x i32>, <8 x i32>)
declare i1 @llvm.vector.reduce.or.v8i1(<8 x i1>)
declare void @llvm.x86.sse.ldmxcsr(ptr)
declare void @llvm.prefetch.p0(ptr, i32, i32, i32)
declare void @llvm.x86.sse.stmxcsr(ptr)

; constants: 2^-126 = 0x3810000000000000, 2^64 = 0x43F0000000000000, 2^-62 = 0x3C10000000000000

; (|bits(r)| - 1) as unsigned: below 2^23 exactly where r is a denormal or +-2^-126
define internal <8 x i32> @key(<8 x float> %r) alwaysinline {
  %ri = bitcast <8 x float> %r to <8 x i32>
  %ab = and <8 x i32> %ri, splat (i32 2147483647)
  %k = sub <8 x i32> %ab, splat (i32 1)
  ret <8 x i32> %k
}

; replace lanes of r that are denormal or +-2^-126 by the FTZ-after-rounding result; rs = the same
; operation on operands scaled by 2^64 (exact there, rounded in the normal range)
define internal <8 x float> @fix(<8 x float> %r, <8 x float> %rs) alwaysinline {
  %k = call <8 x i32> @key(<8 x float> %r)
  %sub = icmp ult <8 x i32> %k, splat (i32 8388608)
  %ars = call <8 x float> @llvm.fabs.v8f32(<8 x float> %rs)
  %up = fcmp oge <8 x float> %ars, splat (float 0x3C10000000000000)
  %mag = select <8 x i1> %up, <8 x float> splat (float 0x3810000000000000), <8 x float> zeroinitializer
  %fx = call <8 x float> @llvm.copysign.v8f32(<8 x float> %mag, <8 x float> %r)
  %out = select <8 x i1> %sub, <8 x float> %fx, <8 x float> %r
  ret <8 x float> %out
}

define internal <8 x float> @add_plain(<8 x float> %x, <8 x float> %y) alwaysinline {
  %r = fadd <8 x float> %x, %y
  ret <8 x float> %r
}

define internal <8 x float> @add_ftz(<8 x float> %x, <8 x float> %y) alwaysinline {
  %r = fadd <8 x float> %x, %y
  %xs = fmul <8 x float> %x, splat (float 0x43F0000000000000)
  %ys = fmul <8 x float> %y, splat (float 0x43F0000000000000)
  %rs = fadd <8 x float> %xs, %ys
  %o = call <8 x float> @fix(<8 x float> %r, <8 x float> %rs)
  ret <8 x float> %o
}
"""


def group_fn(name: str, U: int, check: bool) -> str:
    """IR of one row of A times an (8 U)-column group of B over one K tile (2 U chains in registers)."""
    L = []
    w = L.append
    w("; one row of A times a column group of B over one K tile: the chains (even/odd x U vectors) in registers,")
    w("; then C += even + odd. a: A row at dword k0 (2 floats per dword), be/bo: B even/odd rows at (k0, column),")
    w("; ldb: floats per B row, c: C row at the group's first column; chk: run the FTZ check")
    w(f"define internal void @{name}(ptr noalias %a, ptr noalias %be, ptr noalias %bo, i64 %ldb, i64 %klen, "
      "ptr noalias %c) alwaysinline {")
    w("entry:")
    w("  %has = icmp sgt i64 %klen, 0")
    w("  br i1 %has, label %kloop, label %kend")
    w("kloop:")
    w("  %k = phi i64 [0, %entry], [%k1, %knext]")
    for u in range(U):
        for ch in "eo":
            w(f"  %{ch}{u} = phi <8 x float> [zeroinitializer, %entry], [%n{ch}{u}, %knext]")
    w("  %k2 = shl i64 %k, 1")
    w("  %pae = getelementptr inbounds float, ptr %a, i64 %k2")
    w("  %pao = getelementptr inbounds float, ptr %pae, i64 1")
    w("  %sae = load float, ptr %pae")
    w("  %sao = load float, ptr %pao")
    for ch in "eo":
        w(f"  %v{ch}0 = insertelement <8 x float> poison, float %sa{ch}, i64 0")
        w(f"  %va{ch} = shufflevector <8 x float> %v{ch}0, <8 x float> poison, <8 x i32> zeroinitializer")
    w("  %boff = mul i64 %k, %ldb")
    w("  %pbe = getelementptr inbounds float, ptr %be, i64 %boff")
    w("  %pbo = getelementptr inbounds float, ptr %bo, i64 %boff")
    for u in range(U):
        for ch in "eo":
            w(f"  %qb{ch}{u} = getelementptr inbounds float, ptr %pb{ch}, i64 {8 * u}")
            w(f"  %b{ch}{u} = load <8 x float>, ptr %qb{ch}{u}, align 4")
            w(f"  %r{ch}{u} = call <8 x float> @llvm.fma.v8f32(<8 x float> %va{ch}, <8 x float> %b{ch}{u}, <8 x float> %{ch}{u})")
    w(f"  br label %{'check' if check else 'knext'}")
    w("check:" if check else "; (no FTZ check in this variant)")
    if check:
        names = [f"r{ch}{u}" for u in range(U) for ch in "eo"]
        for nm in names:
            w(f"  %key_{nm} = call <8 x i32> @key(<8 x float> %{nm})")
        acc = f"%key_{names[0]}"
        for i, nm in enumerate(names[1:]):
            w(f"  %mn{i} = call <8 x i32> @llvm.umin.v8i32(<8 x i32> {acc}, <8 x i32> %key_{nm})")
            acc = f"%mn{i}"
        w(f"  %lo = icmp ult <8 x i32> {acc}, splat (i32 8388608)")
        w("  %any = call i1 @llvm.vector.reduce.or.v8i1(<8 x i1> %lo)")
        w("  br i1 %any, label %fixit, label %knext")
        w("fixit:")
        for ch in "eo":
            w(f"  %vas{ch} = fmul <8 x float> %va{ch}, splat (float 0x43F0000000000000)")
        for u in range(U):
            for ch in "eo":
                w(f"  %ts{ch}{u} = fmul <8 x float> %{ch}{u}, splat (float 0x43F0000000000000)")
                w(f"  %rs{ch}{u} = call <8 x float> @llvm.fma.v8f32(<8 x float> %vas{ch}, <8 x float> %b{ch}{u}, <8 x float> %ts{ch}{u})")
                w(f"  %f{ch}{u} = call <8 x float> @fix(<8 x float> %r{ch}{u}, <8 x float> %rs{ch}{u})")
        w("  br label %knext")
    w("knext:")
    for u in range(U):
        for ch in "eo":
            if check:
                w(f"  %n{ch}{u} = phi <8 x float> [%r{ch}{u}, %check], [%f{ch}{u}, %fixit]")
            else:
                w(f"  %n{ch}{u} = phi <8 x float> [%r{ch}{u}, %kloop]")
    w("  %k1 = add nuw nsw i64 %k, 1")
    w("  %kmore = icmp slt i64 %k1, %klen")
    w("  br i1 %kmore, label %kloop, label %kend")
    w("kend:")
    for u in range(U):
        for ch in "eo":
            w(f"  %z{ch}{u} = phi <8 x float> [zeroinitializer, %entry], [%n{ch}{u}, %knext]")
    # without the check every value is a multiple of 2^g, g >= -126 (gemm._ftz_possible): plain adds are exact
    add = "add_ftz" if check else "add_plain"
    for u in range(U):
        w(f"  %t{u} = call <8 x float> @{add}(<8 x float> %ze{u}, <8 x float> %zo{u})")
        w(f"  %pc{u} = getelementptr inbounds float, ptr %c, i64 {8 * u}")
        w(f"  %c{u} = load <8 x float>, ptr %pc{u}, align 4")
        w(f"  %s{u} = call <8 x float> @{add}(<8 x float> %c{u}, <8 x float> %t{u})")
        w(f"  store <8 x float> %s{u}, ptr %pc{u}, align 4")
    w("  ret void")
    w("}")
    return "\n".join(L)


DRIVER = r"""
; rows m0 ... m1-1; N: columns (a multiple of GROUP_COLS, the C row length), K2: dwords of K, KT: dwords per
; K tile; chk != 0: run the FTZ check at every chain step. Loop order K tile -> column group -> row, so the
; 4 KiB of B a (K tile, group) needs stays in L1 while every row of A streams past it.
define void @chain_gemm(ptr noalias %A, ptr noalias %BE, ptr noalias %BO, ptr noalias %C,
                        i64 %m0, i64 %m1, i64 %N, i64 %K2, i64 %KT, i64 %chk64) {
entry:
  %saved = alloca i32
  %mx = alloca i32
  call void @llvm.x86.sse.stmxcsr(ptr %saved)
  store i32 8064, ptr %mx            ; 0x1F80: RNE, exceptions masked, no FTZ, no DAZ
  call void @llvm.x86.sse.ldmxcsr(ptr %mx)
  %chk = icmp ne i64 %chk64, 0
  %lda = shl i64 %K2, 1
  br label %kt_head
kt_head:
  %k0 = phi i64 [0, %entry], [%k0_next, %g_end]
  %kt_more = icmp slt i64 %k0, %K2
  br i1 %kt_more, label %kt_body, label %exit
kt_body:
  %krest = sub i64 %K2, %k0
  %ksmall = icmp slt i64 %krest, %KT
  %klen = select i1 %ksmall, i64 %krest, i64 %KT
  %k02 = shl i64 %k0, 1
  br label %g_head
g_head:
  %g = phi i64 [0, %kt_body], [%g_next, %m_end]
  %g_more = icmp slt i64 %g, %N
  br i1 %g_more, label %g_body, label %g_end
g_body:
  ; B is packed in column panels: panel p = g / GROUP_COLS holds K2 rows of GROUP_COLS floats
  %panel = udiv i64 %g, GROUP_COLS
  %prow = mul i64 %panel, %K2
  %prow2 = add i64 %prow, %k0
  %bidx = mul i64 %prow2, GROUP_COLS
  %pbe = getelementptr inbounds float, ptr %BE, i64 %bidx
  %pbo = getelementptr inbounds float, ptr %BO, i64 %bidx
  br label %m_head
m_head:
  %m = phi i64 [%m0, %g_body], [%m_next, %m_done]
  %m_more = icmp slt i64 %m, %m1
  br i1 %m_more, label %m_body, label %m_end
m_body:
  %arow = mul i64 %m, %lda
  %aidx = add i64 %arow, %k02
  %pa = getelementptr inbounds float, ptr %A, i64 %aidx
  %crow = mul i64 %m, %N
  %cidx = add i64 %crow, %g
  %pc = getelementptr inbounds float, ptr %C, i64 %cidx
  ; prefetch the A and C pieces of row m + PF: they are 4-8 KiB apart, so the hardware prefetcher may not
  ; see them coming, and a miss on C at the end of a group stalls retirement (no effect on results)
  %pfa_off = mul i64 %lda, PF
  %pfc_off = mul i64 %N, PF
  %pfa = getelementptr float, ptr %pa, i64 %pfa_off
  %pfc = getelementptr float, ptr %pc, i64 %pfc_off
  %pfa2 = getelementptr float, ptr %pfa, i64 16
  %pfc2 = getelementptr float, ptr %pfc, i64 16
  call void @llvm.prefetch.p0(ptr %pfa, i32 0, i32 3, i32 1)
  call void @llvm.prefetch.p0(ptr %pfa2, i32 0, i32 3, i32 1)
  call void @llvm.prefetch.p0(ptr %pfc, i32 1, i32 3, i32 1)
  call void @llvm.prefetch.p0(ptr %pfc2, i32 1, i32 3, i32 1)
  br i1 %chk, label %g_chk, label %g_fast
g_fast:
  call void @group_fast(ptr %pa, ptr %pbe, ptr %pbo, i64 GROUP_COLS, i64 %klen, ptr %pc)
  br label %m_done
g_chk:
CHECK_CALLS
  br label %m_done
m_done:
  %m_next = add i64 %m, 1
  br label %m_head
m_end:
  %g_next = add i64 %g, GROUP_COLS
  br label %g_head
g_end:
  %k0_next = add i64 %k0, %KT
  br label %kt_head
exit:
  call void @llvm.x86.sse.ldmxcsr(ptr %saved)
  ret void
}
"""


def _check_calls() -> str:
    """The checked variant covers a group in pieces of 8 * U_CHECK columns."""
    w, L = 8 * U_CHECK, []
    for j in range(GROUP // w):
        L.append(f"  %pbe_c{j} = getelementptr inbounds float, ptr %pbe, i64 {w * j}")
        L.append(f"  %pbo_c{j} = getelementptr inbounds float, ptr %pbo, i64 {w * j}")
        L.append(f"  %pc_c{j} = getelementptr inbounds float, ptr %pc, i64 {w * j}")
        L.append(f"  call void @group_chk(ptr %pa, ptr %pbe_c{j}, ptr %pbo_c{j}, i64 {GROUP}, i64 %klen, "
                 f"ptr %pc_c{j})")
    return "\n".join(L)


def _ir() -> str:
    return "\n".join([HEAD, group_fn("group_chk", U_CHECK, True), group_fn("group_fast", U_FAST, False),
                      DRIVER.replace("GROUP_COLS", str(GROUP)).replace("PF", str(PREFETCH_ROWS)).replace("CHECK_CALLS", _check_calls())])




@functools.lru_cache(maxsize=1)
def _compiled():
    """(engine, ctypes function) or None where llvmlite / an x86-64 host is missing."""
    from .. import hostjit
    try:
        hostjit.llvm()
    except (ImportError, RuntimeError):  # no llvmlite, or not an x86-64 host: the numpy chains remain
        return None
    engine = hostjit.compile_host(_ir(), vectorize=True)
    addr = engine.get_function_address("chain_gemm")
    proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), *([ctypes.c_int64] * 6))
    return engine, proto(addr)


def available() -> bool:
    try:
        return _compiled() is not None
    except Exception:  # a broken LLVM must not break the library: the numpy path remains
        return False


def pack_b(b_rows):
    """(K2, N) -> the column-panel layout (N / 16, K2, 16) the kernel reads."""
    import numpy as np
    k2, n = b_rows.shape
    return np.ascontiguousarray(b_rows.reshape(k2, n // GROUP, GROUP).transpose(1, 0, 2))


def chain_gemm(a32, be, bo, c, m0: int, m1: int, kt: int, check: bool = True) -> None:
    """Run the kernel on rows m0 ... m1-1 (arrays: float32, C-contiguous; c updated in place).

    ``a32``: (M, 2*K2) DAZ-flushed fp32 inputs; ``be`` / ``bo``: the even / odd rows of B, (K2, N), packed
    by :func:`pack_b` into column panels (N / 16, K2, 16) so a K tile of a panel is 1 KiB of contiguous
    memory (rows of B 4 KiB apart would all fall in one L1 set); and
    ``c``: (M, N) fp32 accumulators, N a multiple of GROUP (16); ``kt``: dwords per K tile (16 for a full tile);
    ``check=False`` skips the FTZ check (only valid when no chain value can be tiny: see gemm.py).
    """
    _, fn = _compiled()
    n = c.shape[1]
    if n % GROUP or be.shape != bo.shape or be.shape[0] * GROUP != n or be.shape[2] != GROUP:
        raise ValueError("chain_gemm: N must be a multiple of 16 and B packed by pack_b")
    k2 = be.shape[1]
    fn(a32.ctypes.data, be.ctypes.data, bo.ctypes.data, c.ctypes.data, m0, m1, n, k2, kt, int(check))
