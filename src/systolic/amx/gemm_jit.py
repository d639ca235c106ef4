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

The loops block N (``NB`` columns) and K (``KT`` dwords = one tile's K) so a K
slice of B stays in L1 while the rows of A stream past it; rows are split
between threads (ctypes releases the GIL during the call).
"""

from __future__ import annotations

import ctypes
import functools
import threading

__all__ = ["available", "chain_gemm"]

_IR = r"""
declare float @llvm.fma.f32(float, float, float)
declare <8 x float> @llvm.fma.v8f32(<8 x float>, <8 x float>, <8 x float>)
declare <8 x float> @llvm.fabs.v8f32(<8 x float>)
declare <8 x float> @llvm.copysign.v8f32(<8 x float>, <8 x float>)
declare i1 @llvm.vector.reduce.or.v8i1(<8 x i1>)
declare float @llvm.fabs.f32(float)
declare float @llvm.copysign.f32(float, float)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.x86.sse.ldmxcsr(ptr)
declare void @llvm.x86.sse.stmxcsr(ptr)

; 2^-126 = 0x3810000000000000, 2^64 = 0x43F0000000000000, 2^-62 = 0x3C10000000000000

define internal float @ftz_fix(float %r, float %rs) alwaysinline {
  %ar = call float @llvm.fabs.f32(float %r)
  %tiny = fcmp ole float %ar, 0x3810000000000000
  %nz = fcmp one float %r, 0.0
  %sub = and i1 %tiny, %nz
  %ars = call float @llvm.fabs.f32(float %rs)
  %up = fcmp oge float %ars, 0x3C10000000000000
  %mag = select i1 %up, float 0x3810000000000000, float 0.0
  %fixed = call float @llvm.copysign.f32(float %mag, float %r)
  %out = select i1 %sub, float %fixed, float %r
  ret float %out
}

define internal float @fma_ftz(float %a, float %b, float %c) alwaysinline {
  %r = call float @llvm.fma.f32(float %a, float %b, float %c)
  %as = fmul float %a, 0x43F0000000000000
  %cs = fmul float %c, 0x43F0000000000000
  %rs = call float @llvm.fma.f32(float %as, float %b, float %cs)
  %o = call float @ftz_fix(float %r, float %rs)
  ret float %o
}

define internal float @add_ftz(float %x, float %y) alwaysinline {
  %r = fadd float %x, %y
  %xs = fmul float %x, 0x43F0000000000000
  %ys = fmul float %y, 0x43F0000000000000
  %rs = fadd float %xs, %ys
  %o = call float @ftz_fix(float %r, float %rs)
  ret float %o
}

; t[n] = fma_ftz(a, b[n], t[n]) for n < len: 8 lanes at a time; the FTZ fix runs only when a lane is denormal
define internal void @chain_step(ptr noalias %t, ptr noalias %b, float %a, i64 %len) {
entry:
  %as = fmul float %a, 0x43F0000000000000
  %va0 = insertelement <8 x float> poison, float %a, i64 0
  %va = shufflevector <8 x float> %va0, <8 x float> poison, <8 x i32> zeroinitializer
  %vas0 = insertelement <8 x float> poison, float %as, i64 0
  %vas = shufflevector <8 x float> %vas0, <8 x float> poison, <8 x i32> zeroinitializer
  %nvec = and i64 %len, -8
  %hasvec = icmp sgt i64 %nvec, 0
  br i1 %hasvec, label %vloop, label %tail_entry
vloop:
  %i = phi i64 [0, %entry], [%i1, %vstore]
  %pb = getelementptr inbounds float, ptr %b, i64 %i
  %pt = getelementptr inbounds float, ptr %t, i64 %i
  %vb = load <8 x float>, ptr %pb, align 4
  %vt = load <8 x float>, ptr %pt, align 4
  %r = call <8 x float> @llvm.fma.v8f32(<8 x float> %va, <8 x float> %vb, <8 x float> %vt)
  %ri = bitcast <8 x float> %r to <8 x i32>
  %ab = and <8 x i32> %ri, splat (i32 2147483647)
  %m1 = sub <8 x i32> %ab, splat (i32 1)
  %sub = icmp ult <8 x i32> %m1, splat (i32 8388608)
  %any = call i1 @llvm.vector.reduce.or.v8i1(<8 x i1> %sub)
  br i1 %any, label %vfix, label %vstore
vfix:
  %vts = fmul <8 x float> %vt, splat (float 0x43F0000000000000)
  %rs = call <8 x float> @llvm.fma.v8f32(<8 x float> %vas, <8 x float> %vb, <8 x float> %vts)
  %ars = call <8 x float> @llvm.fabs.v8f32(<8 x float> %rs)
  %up = fcmp oge <8 x float> %ars, splat (float 0x3C10000000000000)
  %mag = select <8 x i1> %up, <8 x float> splat (float 0x3810000000000000), <8 x float> zeroinitializer
  %fx = call <8 x float> @llvm.copysign.v8f32(<8 x float> %mag, <8 x float> %r)
  %rf = select <8 x i1> %sub, <8 x float> %fx, <8 x float> %r
  br label %vstore
vstore:
  %rv = phi <8 x float> [%r, %vloop], [%rf, %vfix]
  store <8 x float> %rv, ptr %pt, align 4
  %i1 = add nuw nsw i64 %i, 8
  %vmore = icmp slt i64 %i1, %nvec
  br i1 %vmore, label %vloop, label %tail_entry
tail_entry:
  %j0 = phi i64 [0, %entry], [%nvec, %vstore]
  %hastail = icmp slt i64 %j0, %len
  br i1 %hastail, label %tloop, label %done
tloop:
  %j = phi i64 [%j0, %tail_entry], [%j1, %tloop]
  %qb = getelementptr inbounds float, ptr %b, i64 %j
  %qt = getelementptr inbounds float, ptr %t, i64 %j
  %sb = load float, ptr %qb
  %st = load float, ptr %qt
  %sr = call float @fma_ftz(float %a, float %sb, float %st)
  store float %sr, ptr %qt
  %j1 = add nuw nsw i64 %j, 1
  %tmore = icmp slt i64 %j1, %len
  br i1 %tmore, label %tloop, label %done
done:
  ret void
}

; c[n] = add_ftz(c[n], add_ftz(te[n], to[n]))
define internal void @finish(ptr noalias %c, ptr noalias %te, ptr noalias %to, i64 %len) {
entry:
  %empty = icmp sle i64 %len, 0
  br i1 %empty, label %done, label %loop
loop:
  %n = phi i64 [0, %entry], [%n1, %loop]
  %pe = getelementptr inbounds float, ptr %te, i64 %n
  %po = getelementptr inbounds float, ptr %to, i64 %n
  %pc = getelementptr inbounds float, ptr %c, i64 %n
  %ve = load float, ptr %pe
  %vo = load float, ptr %po
  %vc = load float, ptr %pc
  %t = call float @add_ftz(float %ve, float %vo)
  %r = call float @add_ftz(float %vc, float %t)
  store float %r, ptr %pc
  %n1 = add nuw nsw i64 %n, 1
  %more = icmp slt i64 %n1, %len
  br i1 %more, label %loop, label %done
done:
  ret void
}

define void @chain_gemm(ptr noalias %A, ptr noalias %BE, ptr noalias %BO, ptr noalias %C, ptr noalias %tE,
                        ptr noalias %tO, i64 %m0, i64 %m1, i64 %N, i64 %K2, i64 %KT, i64 %NB) {
entry:
  %saved = alloca i32
  %mx = alloca i32
  call void @llvm.x86.sse.stmxcsr(ptr %saved)
  store i32 8064, ptr %mx            ; 0x1F80: RNE, exceptions masked, no FTZ, no DAZ
  call void @llvm.x86.sse.ldmxcsr(ptr %mx)
  %lda = mul i64 %K2, 2
  br label %nb_head
nb_head:
  %nb = phi i64 [0, %entry], [%nb_next, %kt_end]
  %nb_more = icmp slt i64 %nb, %N
  br i1 %nb_more, label %nb_body, label %exit
nb_body:
  %nrest = sub i64 %N, %nb
  %nsmall = icmp slt i64 %nrest, %NB
  %nlen = select i1 %nsmall, i64 %nrest, i64 %NB
  %nbytes = mul i64 %nlen, 4
  br label %kt_head
kt_head:
  %k0 = phi i64 [0, %nb_body], [%k0_next, %m_end]
  %kt_more = icmp slt i64 %k0, %K2
  br i1 %kt_more, label %kt_body, label %kt_end
kt_body:
  %krest = sub i64 %K2, %k0
  %ksmall = icmp slt i64 %krest, %KT
  %klen = select i1 %ksmall, i64 %krest, i64 %KT
  %kend = add i64 %k0, %klen
  br label %m_head
m_head:
  %m = phi i64 [%m0, %kt_body], [%m_next, %k_end]
  %m_more = icmp slt i64 %m, %m1
  br i1 %m_more, label %m_body, label %m_end
m_body:
  call void @llvm.memset.p0.i64(ptr %tE, i8 0, i64 %nbytes, i1 false)
  call void @llvm.memset.p0.i64(ptr %tO, i8 0, i64 %nbytes, i1 false)
  %arow = mul i64 %m, %lda
  br label %k_head
k_head:
  %k = phi i64 [%k0, %m_body], [%k_next, %k_body]
  %k_more = icmp slt i64 %k, %kend
  br i1 %k_more, label %k_body, label %k_end
k_body:
  %k2 = mul i64 %k, 2
  %ia = add i64 %arow, %k2
  %pae = getelementptr inbounds float, ptr %A, i64 %ia
  %pao = getelementptr inbounds float, ptr %pae, i64 1
  %ae = load float, ptr %pae
  %ao = load float, ptr %pao
  %brow = mul i64 %k, %N
  %bidx = add i64 %brow, %nb
  %pbe = getelementptr inbounds float, ptr %BE, i64 %bidx
  %pbo = getelementptr inbounds float, ptr %BO, i64 %bidx
  call void @chain_step(ptr %tE, ptr %pbe, float %ae, i64 %nlen)
  call void @chain_step(ptr %tO, ptr %pbo, float %ao, i64 %nlen)
  %k_next = add i64 %k, 1
  br label %k_head
k_end:
  %crow = mul i64 %m, %N
  %cidx = add i64 %crow, %nb
  %pc = getelementptr inbounds float, ptr %C, i64 %cidx
  call void @finish(ptr %pc, ptr %tE, ptr %tO, i64 %nlen)
  %m_next = add i64 %m, 1
  br label %m_head
m_end:
  %k0_next = add i64 %k0, %KT
  br label %kt_head
kt_end:
  %nb_next = add i64 %nb, %NB
  br label %nb_head
exit:
  call void @llvm.x86.sse.ldmxcsr(ptr %saved)
  ret void
}
"""

_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _compiled():
    """(engine, ctypes function) or None where llvmlite / an x86-64 host is missing."""
    import platform
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    try:
        import llvmlite.binding as llvm
    except ImportError:  # pragma: no cover - llvmlite is a dependency
        return None
    with _lock:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                          features=llvm.get_host_cpu_features().flatten(), opt=3,
                                          codemodel="jitdefault")
        mod = llvm.parse_assembly(_IR)
        mod.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        addr = engine.get_function_address("chain_gemm")
    proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 6), *([ctypes.c_int64] * 6))
    return engine, proto(addr)


def available() -> bool:
    try:
        return _compiled() is not None
    except Exception:  # a broken LLVM must not break the library: the numpy path remains
        return False


def chain_gemm(a32, be, bo, c, m0: int, m1: int, kt: int, nb: int = 256) -> None:
    """Run the kernel on rows m0 ... m1-1 (arrays: float32, C-contiguous; c updated in place).

    ``a32``: (M, 2*K2) DAZ-flushed fp32 inputs; ``be`` / ``bo``: (K2, N) even / odd rows of B;
    ``c``: (M, N) fp32 accumulators; ``kt``: dwords per K tile (16 for a full tile).
    """
    import numpy as np
    _, fn = _compiled()
    n = c.shape[1]
    k2 = be.shape[0]
    nb = max(1, min(nb, n))
    te = np.zeros(nb, np.float32)
    to = np.zeros(nb, np.float32)
    fn(a32.ctypes.data, be.ctypes.data, bo.ctypes.data, c.ctypes.data, te.ctypes.data, to.ctypes.data,
       m0, m1, n, k2, kt, nb)
