"""Compiled fast paths (LLVM via llvmlite) for the "stage" and "sequential" float models.

Three kernels, all bit-identical to the numpy path of :mod:`systolic.xmx.kernels` (property-tested, and
against the exact Fraction oracle in tests/xmx/test_fast_gemm.py); LLVM gets no fast-math flags, so every
IEEE operation is kept as written:

* :func:`fma32_mma` -- one product per step (tf32 "stage", every "sequential" step): the step is exactly a
  binary32 fused multiply-add, so a chain of them in K order is the model (see the comment above it).
* :func:`fast_mma` -- several products per stage (bf16/fp16/fp8 "stage"): each stage summed in binary64
  without checks, rounded once to fp32, and every element proven afterwards from a recorded maximum and
  per-chunk statistics of A and B (the proof is in the comment above :func:`_fir`); unproven elements are
  returned flagged.
* :func:`stage_mma` -- the per-operation checked kernels: the TwoSum cascade with the error terms rounded to
  odd (``hi + lo`` rounded to odd in binary64, then to nearest-even fp32), or the faster variant that checks
  every binary64 addition for exactness; they flag three-level cancellation, NaN/infinity and exact zeros
  (whose sign rule needs the terms), or any inexact addition.

Callers recompute flagged elements with the next kernel down and finally the numpy path, from their initial
C. If llvmlite cannot compile here, :func:`available` is False and callers use the numpy path.
"""

from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import hostjit

__all__ = ["available", "stage_mma"]

_LOCK = threading.Lock()
#: columns per vector in the explicit-vector kernel (two AVX2 registers of doubles)
VW = 8
#: rows processed together by the vector kernel (independent dependency chains)
VR = 4
_CACHE: dict[tuple, object] = {}
_STATE: dict[str, object] = {}


def _two_sum(lines, a, b, s, e, tag):
    lines += [
        f"  {s} = fadd double {a}, {b}",
        f"  %bb{tag} = fsub double {s}, {a}",
        f"  %t1{tag} = fsub double {s}, %bb{tag}",
        f"  %t2{tag} = fsub double {a}, %t1{tag}",
        f"  %t3{tag} = fsub double {b}, %bb{tag}",
        f"  {e} = fadd double %t2{tag}, %t3{tag}",
    ]


def _ir(T: int) -> str:
    """LLVM IR of the kernel adding T products per step (T = OPS_PER_CHAN for "stage", 1 for "sequential")."""
    L = [f"define void @mma{T}(float* noalias nocapture readonly %A, float* noalias nocapture readonly %B, "
         "double* noalias nocapture %C, i8* noalias nocapture %F, i64 %N, i64 %K, i64 %i0, i64 %i1, i64 %j0, "
         "i64 %j1) {",
         "entry:", "  br label %iloop",
         "iloop:", "  %i = phi i64 [%i0, %entry], [%inext, %ilatch]", "  %icond = icmp slt i64 %i, %i1",
         "  br i1 %icond, label %kpre, label %exit",
         "kpre:", "  %arow = mul i64 %i, %K", "  %crow = mul i64 %i, %N", "  br label %kloop",
         "kloop:", "  %k = phi i64 [0, %kpre], [%knext, %klatch]", "  %kcond = icmp slt i64 %k, %K",
         "  br i1 %kcond, label %kbody, label %ilatch",
         "kbody:", "  %abase = add i64 %arow, %k"]
    for t in range(T):
        L += [f"  %aidx{t} = add i64 %abase, {t}",
              f"  %pa{t} = getelementptr inbounds float, float* %A, i64 %aidx{t}",
              f"  %af{t} = load float, float* %pa{t}",
              f"  %a{t} = fpext float %af{t} to double",
              f"  %kt{t} = add i64 %k, {t}",
              f"  %brow{t} = mul i64 %kt{t}, %N"]
    L += ["  br label %jloop",
          "jloop:", "  %j = phi i64 [%j0, %kbody], [%jnext, %jbody]", "  %jcond = icmp slt i64 %j, %j1",
          "  br i1 %jcond, label %jbody, label %klatch",
          "jbody:", "  %cidx = add i64 %crow, %j", "  %pc = getelementptr inbounds double, double* %C, i64 %cidx",
          "  %x = load double, double* %pc"]
    s_prev, E_prev = "%x", None
    bad = []
    for t in range(T):
        L += [f"  %bidx{t} = add i64 %brow{t}, %j",
              f"  %pb{t} = getelementptr inbounds float, float* %B, i64 %bidx{t}",
              f"  %bf{t} = load float, float* %pb{t}",
              f"  %b{t} = fpext float %bf{t} to double",
              f"  %p{t} = fmul double %a{t}, %b{t}"]
        _two_sum(L, s_prev, f"%p{t}", f"%s{t}", f"%e{t}", f"s{t}")
        s_prev = f"%s{t}"
        if E_prev is None:
            E_prev = f"%e{t}"
        else:
            _two_sum(L, E_prev, f"%e{t}", f"%E{t}", f"%ee{t}", f"E{t}")
            L.append(f"  %bad{t} = fcmp une double %ee{t}, 0.0")
            bad.append(f"%bad{t}")
            E_prev = f"%E{t}"
    _two_sum(L, s_prev, E_prev, "%hi", "%lo", "H")
    L += ["  %hb = bitcast double %hi to i64",
          "  %lsb = and i64 %hb, 1", "  %even = icmp eq i64 %lsb, 0",
          "  %lonz = fcmp one double %lo, 0.0", "  %need = and i1 %even, %lonz",
          "  %lopos = fcmp ogt double %lo, 0.0", "  %hineg = fcmp olt double %hi, 0.0",
          "  %same = xor i1 %lopos, %hineg", "  %delta = select i1 %same, i64 1, i64 -1",
          "  %hb2 = add i64 %hb, %delta", "  %hn = bitcast i64 %hb2 to double",
          "  %y = select i1 %need, double %hn, double %hi",
          "  %r = fptrunc double %y to float", "  %rd = fpext float %r to double",
          "  store double %rd, double* %pc",
          "  %expo = and i64 %hb, 9218868437227405312", "  %nonfin = icmp eq i64 %expo, 9218868437227405312",
          "  %zero = fcmp ueq double %hi, 0.0"]
    acc = "%nonfin"
    for n, b in enumerate(bad + ["%zero"]):
        L.append(f"  %or{n} = or i1 {acc}, {b}")
        acc = f"%or{n}"
    L += [f"  %badb = zext i1 {acc} to i8",
          "  %pf = getelementptr inbounds i8, i8* %F, i64 %cidx", "  %f0 = load i8, i8* %pf",
          "  %f1 = or i8 %f0, %badb", "  store i8 %f1, i8* %pf",
          "  %jnext = add i64 %j, 1", "  br label %jloop",
          "klatch:", f"  %knext = add i64 %k, {T}", "  br label %kloop",
          "ilatch:", "  %inext = add i64 %i, 1", "  br label %iloop",
          "exit:", "  ret void", "}"]
    return "\n".join(L) + "\n"


def _vconst(W: int, ty: str, v) -> str:
    return "<" + ", ".join(f"{ty} {v}" for _ in range(W)) + ">"


def _store_flags(u: str, lanes: int) -> list[str]:
    """IR lines storing F[ci] = not %ok (one byte a lane): the element is not proven."""
    B1, B8 = f"<{lanes} x i1>", f"<{lanes} x i8>"
    return [f"  %bad{u} = xor {B1} %ok{u}, {_vconst(lanes, 'i1', 'true')}",
            f"  %badb{u} = zext {B1} %bad{u} to {B8}",
            f"  %pf{u} = getelementptr inbounds i8, i8* %F, i64 %ci{u}",
            f"  %pfv{u} = bitcast i8* %pf{u} to {B8}*",
            f"  store {B8} %badb{u}, {B8}* %pfv{u}, align 1"]


def _vir(T: int, W: int, R: int) -> str:
    """Explicit-vector kernel ``@vmma{T}_{R}``: W columns per vector, R rows at once (R independent dependency
    chains for the out-of-order core), the accumulators kept in registers across K; rows i0..i1 step R."""
    D, I, Fv, B1 = f"<{W} x double>", f"<{W} x i64>", f"<{W} x float>", f"<{W} x i1>"
    Z = "zeroinitializer"
    one, mone = _vconst(W, "i64", 1), _vconst(W, "i64", -1)
    expm = _vconst(W, "i64", 9218868437227405312)
    L = [f"define void @vmma{T}_{R}(float* noalias nocapture readonly %A, float* noalias nocapture readonly %B, "
         "double* noalias nocapture %C, i8* noalias nocapture %F, i64 %N, i64 %K, i64 %i0, i64 %i1, i64 %j0, "
         "i64 %j1) {",
         "entry:", "  br label %iloop",
         "iloop:", "  %i = phi i64 [%i0, %entry], [%inext, %ilatch]", "  %icond = icmp slt i64 %i, %i1",
         "  br i1 %icond, label %ipre, label %exit", "ipre:"]
    for r in range(R):
        L += [f"  %ir{r} = add i64 %i, {r}", f"  %arow{r} = mul i64 %ir{r}, %K", f"  %crow{r} = mul i64 %ir{r}, %N"]
    L += ["  br label %jloop",
          "jloop:", "  %j = phi i64 [%j0, %ipre], [%jnext, %jlatch]", "  %jcond = icmp slt i64 %j, %j1",
          "  br i1 %jcond, label %jpre, label %ilatch", "jpre:"]
    for r in range(R):
        L += [f"  %cidx{r} = add i64 %crow{r}, %j",
              f"  %pc{r} = getelementptr inbounds double, double* %C, i64 %cidx{r}",
              f"  %pcv{r} = bitcast double* %pc{r} to {D}*",
              f"  %acc0{r} = load {D}, {D}* %pcv{r}, align 8"]
    L += ["  br label %kloop", "kloop:", "  %k = phi i64 [0, %jpre], [%knext, %kbody]"]
    for r in range(R):
        L += [f"  %x{r} = phi {D} [%acc0{r}, %jpre], [%rd{r}, %kbody]",
              f"  %fl{r} = phi {B1} [{Z}, %jpre], [%flnew{r}, %kbody]"]
    L += ["  %kcond = icmp slt i64 %k, %K", "  br i1 %kcond, label %kbody, label %jlatch", "kbody:"]
    for t in range(T):
        L += [f"  %kt{t} = add i64 %k, {t}", f"  %brow{t} = mul i64 %kt{t}, %N", f"  %bidx{t} = add i64 %brow{t}, %j",
              f"  %pb{t} = getelementptr inbounds float, float* %B, i64 %bidx{t}",
              f"  %pbv{t} = bitcast float* %pb{t} to {Fv}*", f"  %bf{t} = load {Fv}, {Fv}* %pbv{t}, align 4",
              f"  %b{t} = fpext {Fv} %bf{t} to {D}"]

    def two_sum(a, b, s_, e_, tag):
        L.extend([f"  {s_} = fadd {D} {a}, {b}", f"  %bb{tag} = fsub {D} {s_}, {a}",
                  f"  %t1{tag} = fsub {D} {s_}, %bb{tag}", f"  %t2{tag} = fsub {D} {a}, %t1{tag}",
                  f"  %t3{tag} = fsub {D} {b}, %bb{tag}", f"  {e_} = fadd {D} %t2{tag}, %t3{tag}"])

    for r in range(R):
        for t in range(T):
            L += [f"  %aidx{t}_{r} = add i64 %arow{r}, %kt{t}",
                  f"  %pa{t}_{r} = getelementptr inbounds float, float* %A, i64 %aidx{t}_{r}",
                  f"  %af{t}_{r} = load float, float* %pa{t}_{r}", f"  %ad{t}_{r} = fpext float %af{t}_{r} to double",
                  f"  %ai{t}_{r} = insertelement {D} undef, double %ad{t}_{r}, i32 0",
                  f"  %a{t}_{r} = shufflevector {D} %ai{t}_{r}, {D} undef, <{W} x i32> {Z}",
                  f"  %p{t}_{r} = fmul {D} %a{t}_{r}, %b{t}"]
        # the steps of kernels.round_sum_fp32: TwoSum cascade, error cascade (flag if inexact), round to odd
        s_prev, E_prev, bad = f"%x{r}", None, []
        for t in range(T):
            two_sum(s_prev, f"%p{t}_{r}", f"%s{t}_{r}", f"%e{t}_{r}", f"s{t}_{r}")
            s_prev = f"%s{t}_{r}"
            if E_prev is None:
                E_prev = f"%e{t}_{r}"
            else:
                two_sum(E_prev, f"%e{t}_{r}", f"%E{t}_{r}", f"%ee{t}_{r}", f"E{t}_{r}")
                L.append(f"  %bad{t}_{r} = fcmp une {D} %ee{t}_{r}, {Z}")
                bad.append(f"%bad{t}_{r}")
                E_prev = f"%E{t}_{r}"
        two_sum(s_prev, E_prev, f"%hi{r}", f"%lo{r}", f"H{r}")
        L += [f"  %hb{r} = bitcast {D} %hi{r} to {I}",
              f"  %lsb{r} = and {I} %hb{r}, {one}", f"  %even{r} = icmp eq {I} %lsb{r}, {Z}",
              f"  %lonz{r} = fcmp one {D} %lo{r}, {Z}", f"  %need{r} = and {B1} %even{r}, %lonz{r}",
              f"  %lopos{r} = fcmp ogt {D} %lo{r}, {Z}", f"  %hineg{r} = fcmp olt {D} %hi{r}, {Z}",
              f"  %same{r} = xor {B1} %lopos{r}, %hineg{r}",
              f"  %delta{r} = select {B1} %same{r}, {I} {one}, {I} {mone}",
              f"  %hb2{r} = add {I} %hb{r}, %delta{r}", f"  %hn{r} = bitcast {I} %hb2{r} to {D}",
              f"  %y{r} = select {B1} %need{r}, {D} %hn{r}, {D} %hi{r}",
              f"  %rr{r} = fptrunc {D} %y{r} to {Fv}", f"  %rd{r} = fpext {Fv} %rr{r} to {D}",
              f"  %expo{r} = and {I} %hb{r}, {expm}", f"  %nonfin{r} = icmp eq {I} %expo{r}, {expm}",
              f"  %zero{r} = fcmp ueq {D} %hi{r}, {Z}"]
        acc = f"%nonfin{r}"
        for n, b in enumerate(bad + [f"%zero{r}"]):
            L.append(f"  %or{n}_{r} = or {B1} {acc}, {b}")
            acc = f"%or{n}_{r}"
        L.append(f"  %flnew{r} = or {B1} {acc}, %fl{r}")
    L += [f"  %knext = add i64 %k, {T}", "  br label %kloop", "jlatch:"]
    for r in range(R):
        L += [f"  store {D} %x{r}, {D}* %pcv{r}, align 8",
              f"  %flb{r} = zext {B1} %fl{r} to <{W} x i8>",
              f"  %pf{r} = getelementptr inbounds i8, i8* %F, i64 %cidx{r}",
              f"  %pfv{r} = bitcast i8* %pf{r} to <{W} x i8>*",
              f"  store <{W} x i8> %flb{r}, <{W} x i8>* %pfv{r}, align 1"]
    L += [f"  %jnext = add i64 %j, {W}", "  br label %jloop",
          "ilatch:", f"  %inext = add i64 %i, {R}", "  br label %iloop",
          "exit:", "  ret void", "}"]
    return "\n".join(L) + "\n"


def _vir_exact(T: int, W: int, R: int) -> str:
    """Explicit-vector kernel ``@emma{T}_{R}``: the common case where every addition of the step is exact.

    hi = (((x + p0) + p1) + ...) in binary64; each addition s = a + b is checked exact by ``s - a == b and
    s - b == a`` (if it rounded, Fast2Sum on the larger operand gives s - a (or s - b) exactly, which then
    differs from the other operand). When all are exact, hi is the exact sum and ``fptrunc`` rounds it once to
    nearest even; IEEE signed-zero addition then also matches the models' zero rule. Any lane with an inexact
    addition or a non-finite value is flagged for the exact path.
    """
    D, I, Fv, B1 = f"<{W} x double>", f"<{W} x i64>", f"<{W} x float>", f"<{W} x i1>"
    Z = "zeroinitializer"
    expm = _vconst(W, "i64", 9218868437227405312)
    src = _vir(T, W, R)
    head, rest = src.split("kbody:\n", 1)
    head = head.replace(f"@vmma{T}_{R}(", f"@emma{T}_{R}(")
    tail = rest[rest.index(f"  %knext = add i64 %k, {T}"):]
    L = ["kbody:"]
    for t in range(T):
        L += [f"  %kt{t} = add i64 %k, {t}", f"  %brow{t} = mul i64 %kt{t}, %N", f"  %bidx{t} = add i64 %brow{t}, %j",
              f"  %pb{t} = getelementptr inbounds float, float* %B, i64 %bidx{t}",
              f"  %pbv{t} = bitcast float* %pb{t} to {Fv}*", f"  %bf{t} = load {Fv}, {Fv}* %pbv{t}, align 4",
              f"  %b{t} = fpext {Fv} %bf{t} to {D}"]
    for r in range(R):
        prev, oks = f"%x{r}", []
        for t in range(T):
            L += [f"  %aidx{t}_{r} = add i64 %arow{r}, %kt{t}",
                  f"  %pa{t}_{r} = getelementptr inbounds float, float* %A, i64 %aidx{t}_{r}",
                  f"  %af{t}_{r} = load float, float* %pa{t}_{r}", f"  %ad{t}_{r} = fpext float %af{t}_{r} to double",
                  f"  %ai{t}_{r} = insertelement {D} undef, double %ad{t}_{r}, i32 0",
                  f"  %a{t}_{r} = shufflevector {D} %ai{t}_{r}, {D} undef, <{W} x i32> {Z}",
                  f"  %p{t}_{r} = fmul {D} %a{t}_{r}, %b{t}",
                  f"  %h{t}_{r} = fadd {D} {prev}, %p{t}_{r}",
                  f"  %da{t}_{r} = fsub {D} %h{t}_{r}, {prev}", f"  %db{t}_{r} = fsub {D} %h{t}_{r}, %p{t}_{r}",
                  f"  %ca{t}_{r} = fcmp une {D} %da{t}_{r}, %p{t}_{r}", f"  %cb{t}_{r} = fcmp une {D} %db{t}_{r}, {prev}",
                  f"  %nx{t}_{r} = or {B1} %ca{t}_{r}, %cb{t}_{r}"]
            oks.append(f"%nx{t}_{r}")
            prev = f"%h{t}_{r}"
        # NaN and infinity are checked once per element after the K loop: once non-finite, a chain stays so
        L += [f"  %rr{r} = fptrunc {D} {prev} to {Fv}", f"  %rd{r} = fpext {Fv} %rr{r} to {D}"]
        acc = oks[0]
        for n, b in enumerate(oks[1:]):
            L.append(f"  %or{n}_{r} = or {B1} {acc}, {b}")
            acc = f"%or{n}_{r}"
        L.append(f"  %flnew{r} = or {B1} {acc}, %fl{r}")
    fin = []
    for r in range(R):
        fin += [f"  %xb{r} = bitcast {D} %x{r} to {I}", f"  %xe{r} = and {I} %xb{r}, {expm}",
                f"  %xnf{r} = icmp eq {I} %xe{r}, {expm}", f"  %flx{r} = or {B1} %fl{r}, %xnf{r}"]
    tail = tail.replace("jlatch:\n", "jlatch:\n" + "\n".join(fin) + "\n", 1)
    for r in range(R):
        tail = tail.replace(f"  %flb{r} = zext {B1} %fl{r} to", f"  %flb{r} = zext {B1} %flx{r} to")
    return head + "\n".join(L) + "\n" + tail


def _engine():
    """llvmlite with the host target ready (:mod:`systolic.hostjit`), or None where it cannot JIT here."""
    if "error" in _STATE:
        return None
    try:
        return hostjit.llvm()
    except Exception as exc:  # pragma: no cover - depends on the installation
        _STATE["error"] = repr(exc)
        return None


def _compiled(key, error_key: str, build):
    """The JIT-compiled function(s) for ``key``, built once (under the lock) by ``build()``; None where this
    host cannot JIT (llvmlite missing) or the build failed, its reason kept in ``_STATE[error_key]``."""
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
        fn = None
        if _engine() is not None:
            try:
                fn = build()
            except Exception as exc:  # pragma: no cover - depends on the host
                _STATE[error_key] = repr(exc)
        _CACHE[key] = fn
        return fn


def _kernel(T: int):
    def build():
        ee = hostjit.compile_host(_ir(T) + _vir(T, VW, VR) + _vir(T, VW, 1) + _vir_exact(T, VW, VR),
                                  vectorize=True)
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), *([ctypes.c_int64] * 6))
        return tuple(proto(ee.get_function_address(name))
                     for name in (f"mma{T}", f"vmma{T}_{VR}", f"vmma{T}_1", f"emma{T}_{VR}"))
    return _compiled(("checked", T), "error", build)


def ready(T: int, k: int) -> bool:
    """Whether the kernel a GEMM of ``k`` products with ``T`` per stage runs first -- the binary32 FMA chain
    (T = 1, :func:`fma32_mma`) or the unchecked kernel (:func:`fast_mma`) -- is already compiled in this process,
    so that using it costs no JIT time."""
    key = ("fma32", SR, SVN) if T == 1 else ("fast", T, FR, FVN, _record_every(k, T))
    return _CACHE.get(key) is not None


def available() -> bool:
    """Whether the compiled kernel can run here (llvmlite present and able to JIT for this CPU)."""
    if os.environ.get("SYSTOLIC_NO_NATIVE"):
        return False
    return _kernel(1) is not None


def stage_mma(a32: np.ndarray, b32: np.ndarray, c: np.ndarray, T: int, *, threads: int | None = None,
              col_block: int = 128, robust: bool = False):
    """Run the compiled kernel: returns (acc fp32 values as float64 M x N, flag uint8 M x N).

    ``a32`` (M x K) and ``b32`` (K x N) are float32 arrays holding the exact input values (K a multiple of T),
    ``c`` the initial fp32 accumulator values (float64). Flagged elements must be recomputed by the caller.
    ``robust``: every row through the TwoSum / round-to-odd kernel (flags only three-level cancellation, exact
    zeros and non-finite values) instead of the faster kernel that flags every inexact binary64 addition.
    """
    fn = _kernel(T)
    if fn is None:
        raise RuntimeError("native kernel unavailable: " + str(_STATE.get("error")))
    a32 = np.ascontiguousarray(a32, dtype=np.float32)
    b32 = np.ascontiguousarray(b32, dtype=np.float32)
    acc = np.array(c, dtype=np.float64, order="C", copy=True)
    flag = np.zeros(acc.shape, dtype=np.uint8)
    m, k = a32.shape
    n = b32.shape[1]
    if m == 0 or n == 0:
        return acc, flag
    pa, pb, pc, pf = (x.ctypes.data for x in (a32, b32, acc, flag))
    jobs = [(j0, min(n, j0 + col_block)) for j0 in range(0, n, col_block)]
    nthreads = threads or min(os.cpu_count() or 1, len(jobs))

    scalar_fn, _, vector_fn, vector_rows = fn
    mr = 0 if robust else m // VR * VR

    def work(job):
        j0, j1 = job
        jv = j0 + (j1 - j0) // VW * VW
        if jv > j0:  # ctypes releases the GIL during each call
            if mr:
                vector_rows(pa, pb, pc, pf, n, k, 0, mr, j0, jv)
            if m > mr:
                vector_fn(pa, pb, pc, pf, n, k, mr, m, j0, jv)
        if j1 > jv:
            scalar_fn(pa, pb, pc, pf, n, k, 0, m, jv, j1)

    if nthreads <= 1:
        for job in jobs:
            work(job)
    else:
        with ThreadPoolExecutor(nthreads) as ex:
            list(ex.map(work, jobs))
    return acc, flag


# ------------------------------------------------------------------ the unchecked kernel and its a-posteriori test
#
# Why most elements need no per-operation exactness check (the proof the fast path rests on).
#
# Let L be an integer such that C and every product a_k * b_k of one output element are integer multiples of
# 2**L (zeros are multiples of everything), and let P >= max_k |a_k * b_k|.
#
# (1) Every accumulator value x is a multiple of 2**L.  C is.  If x is, the stage's exact sum S = x + p_0 + ...
#     + p_{T-1} is; x' = RN24(S) is either S itself or a multiple of ulp32(S) (the fp32 spacing at S, including
#     the subnormal spacing 2**-149); in the second case S is not an fp32 number although it is a multiple of
#     2**L, so ulp32(S) > 2**L and, both being powers of two, ulp32(S) is a multiple of 2**L.  (Overflow gives
#     infinity, which the caller treats as not proven.)
# (2) If |x| + T*P <= 2**(53+L) at the entry of a stage, every partial sum x + p_0 + ... + p_t is a multiple of
#     2**L of magnitude <= 2**(53+L): an integer of at most 53 bits times 2**L, a binary64 number (L >= -298 for
#     every DPAS input format, far above binary64's 2**-1074).  So each binary64 operation h = RN53(h + p_t)
#     (an FMA or a multiply then add: the product is exact in binary64, at most 22 significant bits) returns the
#     exact partial sum, and the last one is S.
# (3) The rounding RN24(S) is Veltkamp's splitting in binary64: c = RN53(S * (2**29 + 1)), x' = RN53(c -
#     RN53(c - S)) is S rounded to 53 - 29 = 24 significant bits, to nearest, ties to even (Veltkamp/Dekker,
#     a rounding to nearest by the classical analysis, e.g. Boldo 2006; the ties-to-even behaviour is checked
#     exhaustively in small precisions and on 3e7 binary64 ties and near-ties by
#     tools/analysis/veltkamp_rne.py, and the kernel against the exact Fraction oracle in the tests).  That is
#     fp32's RNE while the result is a normal fp32 number; a result below 2**-126 is also right when L >= -149,
#     for then S is a multiple of 2**-149 of at most 23 significant bits, an fp32 subnormal, and both roundings
#     return S itself.  Three binary64
#     operations instead of fptrunc + fpext: on Zen 3 the conversions cost 0.86 ns per 4 lanes and stage in a
#     register-only loop, Veltkamp 0.62 (benchmarks/bench_stage_rounding.py).
# (4) Overflow: Veltkamp does not make infinities, so the test also requires the bound on |x| (below) to stay at
#     or under FLT_MAX: then no stage rounds to 2**128, where the model would have overflowed.
# (5) Signed zeros: an exact binary64 sum is -0 only when both operands are -0 (IEEE 754 6.3, RNE), so the
#     chain gives -0 exactly when x and every product are -0, which is the model's zero rule; Veltkamp keeps
#     it (c = -0, c - S = +0, -0 - +0 = -0) and maps +0 to +0.
# (6) Non-finite inputs and NaN: an infinity or NaN in A, B or C makes a statistic infinite or NaN (max|a| *
#     max|b| is NaN for an infinity times an all-zero chunk), and the kernel keeps a NaN statistic; a NaN or
#     infinite x stays NaN to the end (NaN propagates, and Veltkamp turns an infinity into NaN: inf - inf), and
#     the test requires the final x finite.  So every such element fails the test and goes to the exact path,
#     which writes the model's NaN (0x7FC00000, where x86 would leave its default NaN, sign bit set) and
#     infinities.
#
# The kernel therefore computes blindly and records, per element, the largest |x| seen (the initial C and the
# result of every S-th stage).  Between two records |x| grows by at most T*P per stage (times 1 + 2**-24 for the
# rounding), so every stage entry has |x| + T*P <= (max|x| + S*T*P) * (1 + 2**-24)**S.  The element is proven
# when (max|x| + S*T*P) * (1 + 2**-20) <= min(2**(53+L), FLT_MAX) and L >= -149, the factor covering that
# growth (S <= 8) and the test's own three binary64 roundings.  L and P come from numbers known before the
# run, per K chunk of KC elements: with La_ic, Lb_jc the granularities and Ma_ic, Mb_jc the maxima of row i of
# A and column j of B in chunk c, every product is a multiple of 2**min_c(La_ic + Lb_jc) and at most
# max_c Ma_ic * Mb_jc in magnitude; C's own granularity enters when C is not zero.  The kernel evaluates the
# test per element after its stage loop; the caller retries the failures with finer statistics (_refine:
# chunks of 4, then element by element) and recomputes what stays unproven with the per-operation checked
# kernel or the numpy path.  Failures are rare: a tiny element in a chunk lowers L for that chunk of its row or
# column.

#: doubles per vector register (AVX2: 4); the fast kernel keeps R rows x V vectors of accumulators in registers
FV = 4


def _panel_loop_open(ty: str, W: int, entry: tuple[str, ...] = ()) -> list[str]:
    """The IR of the panel kernels' loop nest down to one row block (``ipre:``): panels p0..p1 of W columns of
    Bp (element type ``ty``, K x W each), row blocks from i0 to i1; ``entry`` adds lines to the entry block."""
    return ["entry:", f"  %pstride = mul i64 %K, {W}", *entry, "  br label %ploop",
            "ploop:", "  %p = phi i64 [%p0, %entry], [%pnext, %platch]", "  %pcond = icmp slt i64 %p, %p1",
            "  br i1 %pcond, label %ppre, label %exit",
            "ppre:", "  %pb0 = mul i64 %p, %pstride", f"  %pcol = mul i64 %p, {W}",
            f"  %bpan = getelementptr inbounds {ty}, {ty}* %Bp, i64 %pb0", "  br label %iloop",
            "iloop:", "  %i = phi i64 [%i0, %ppre], [%inext, %ilatch]", "  %icond = icmp slt i64 %i, %i1",
            "  br i1 %icond, label %ipre, label %platch", "ipre:"]


def _panel_loop_close(R: int) -> list[str]:
    """The end of a row block of R rows (the ``ilatch`` block is open) and of the panel loop and the function."""
    return [f"  %inext = add i64 %i, {R}", "  br label %iloop",
            "platch:", "  %pnext = add i64 %p, 1", "  br label %ploop",
            "exit:", "  ret void", "}"]


def _fir(T: int, R: int, V: int, fma: bool, S: int = 1) -> str:
    """Unchecked kernel ``@fmma{T}_{R}_{V}_{S}``: panels p0..p1 of W = 4V columns, rows i0..i1 (step R), full K
    (a multiple of T*S); the largest |accumulator| is recorded every S stages, then the test is evaluated from
    the per-chunk statistics.

    A: M x K doubles (row-major); Bp: panels of K x W doubles; C (fp32 in/out), MX (binary64 out: the recorded
    largest |x|, an fp32 value), F (out: 1 = not proven): row stride N. Per K chunk c of KC elements,
    RAC[i, c] = 2**(51 + La_ic) and MAC[i, c] = S*T*max|a_i,chunk| (row-major M x nch), RBC[c, j] = 2**Lb_jc and
    MBC[c, j] = max|b_j,chunk| (nch x N): with t = min_c RAC*RBC = 2**(51+L) and q = max_c MAC*MBC = S*T*P, the
    element's test is ``(max|x| + q) * _GROW <= min(4t, FLT_MAX)`` and ``t >= 2**-98`` (L >= -149).

    The stage loop keeps only the accumulators in registers: the maxima live in MX (volatile, so LLVM keeps
    them there), and the statistics are read after the loop -- measured on Zen 3, the in-loop chunk statistics
    and register-resident maxima cost 24% and 20% of the kernel's time.
    """
    W = FV * V
    D, B1 = f"<{FV} x double>", f"<{FV} x i1>"
    Fv = f"<{FV} x float>"
    Z = "zeroinitializer"
    name = f"fmma{T}_{R}_{V}_{S}"
    RV = [(r, v) for r in range(R) for v in range(V)]
    sigma = _vconst(FV, "double", "0x41C0000000800000")  # 2**29 + 1: Veltkamp's constant, 53 - 29 = 24 bits

    def bcast(dst, ptr):
        return [f"  %{dst}s = load double, double* {ptr}",
                f"  %{dst}i = insertelement {D} undef, double %{dst}s, i32 0",
                f"  %{dst} = shufflevector {D} %{dst}i, {D} undef, <{FV} x i32> {Z}"]

    def vptr(dst, base, idx, ty="double", vt=D):
        return [f"  %{dst}p = getelementptr inbounds {ty}, {ty}* {base}, i64 {idx}",
                f"  %{dst}q = bitcast {ty}* %{dst}p to {vt}*"]

    def vload(dst, base, idx, ty="double", vt=D, al=8):
        return vptr(dst, base, idx, ty, vt) + [f"  %{dst} = load {vt}, {vt}* %{dst}q, align {al}"]

    L = [f"define void @{name}(double* noalias nocapture readonly %A, double* noalias nocapture readonly %Bp, "
         "float* noalias nocapture %C, double* noalias nocapture %MX, i64 %N, i64 %K, i64 %i0, i64 %i1, "
         "i64 %p0, i64 %p1, double* noalias nocapture readonly %RAC, double* noalias nocapture readonly %MAC, "
         "double* noalias nocapture readonly %RBC, double* noalias nocapture readonly %MBC, "
         "i8* noalias nocapture %F, i64 %KC) {",
         *_panel_loop_open("double", W, ("  %nch = udiv i64 %K, %KC",))]
    for r in range(R):
        L += [f"  %ir{r} = add i64 %i, {r}", f"  %arow{r} = mul i64 %ir{r}, %K",
              f"  %pa{r} = getelementptr inbounds double, double* %A, i64 %arow{r}",
              f"  %srow{r} = mul i64 %ir{r}, %nch",
              f"  %crow{r} = mul i64 %ir{r}, %N", f"  %cb{r} = add i64 %crow{r}, %pcol"]
        for v in range(V):
            u = f"{r}_{v}"
            L += [f"  %ci{u} = add i64 %cb{r}, {FV * v}"]
            L += vload(f"cf{u}", "%C", f"%ci{u}", "float", Fv, 4)
            L += vptr(f"mx{u}", "%MX", f"%ci{u}")
            L += [f"  %c0{u} = fpext {Fv} %cf{u} to {D}",
                  f"  %m0{u} = call {D} @llvm.fabs.v{FV}f64({D} %c0{u})",
                  f"  store volatile {D} %m0{u}, {D}* %mx{u}q, align 8"]
    # the stage loop: S stages per step, then the recorded maxima
    L += ["  br label %kloop", "kloop:", "  %k = phi i64 [0, %ipre], [%knext, %kbody]"]
    for r, v in RV:
        L += [f"  %x{r}_{v} = phi {D} [%c0{r}_{v}, %ipre], [%xs{S - 1}_{r}_{v}, %kbody]"]
    L += ["  %kcond = icmp slt i64 %k, %K", "  br i1 %kcond, label %kbody, label %kexit", "kbody:"]
    h = {rv: f"%x{rv[0]}_{rv[1]}" for rv in RV}
    for st in range(S):
        for t0 in range(T):
            t = st * T + t0  # k offset inside the body
            L += [f"  %kt{t} = add i64 %k, {t}", f"  %bo{t} = mul i64 %kt{t}, {W}"]
            for v in range(V):
                L += [f"  %bi{t}_{v} = add i64 %bo{t}, {FV * v}"] + vload(f"b{t}_{v}", "%bpan", f"%bi{t}_{v}")
            for r in range(R):
                L += [f"  %pae{t}_{r} = getelementptr inbounds double, double* %pa{r}, i64 %kt{t}"]
                L += bcast(f"a{t}_{r}", f"%pae{t}_{r}")
        for r, v in RV:
            for t0 in range(T):  # the stage's exact sum in binary64, x first (proof (2))
                t = st * T + t0
                out = f"%h{t}_{r}_{v}"
                if fma:
                    L.append(f"  {out} = call {D} @llvm.fma.v{FV}f64({D} %a{t}_{r}, {D} %b{t}_{v}, {D} {h[r, v]})")
                else:  # the product is exact in binary64, so multiply-then-add equals the fused operation
                    L += [f"  %q{t}_{r}_{v} = fmul {D} %a{t}_{r}, %b{t}_{v}",
                          f"  {out} = fadd {D} {h[r, v]}, %q{t}_{r}_{v}"]
                h[r, v] = out
            # the end of a systolic stage: one RNE to 24 significant bits by Veltkamp's splitting (proof (3))
            u = f"{st}_{r}_{v}"
            L += [f"  %vc{u} = fmul {D} {h[r, v]}, {sigma}", f"  %vt{u} = fsub {D} %vc{u}, {h[r, v]}",
                  f"  %xs{u} = fsub {D} %vc{u}, %vt{u}"]
            h[r, v] = f"%xs{u}"
    for r, v in RV:  # the largest |x|, every S stages
        u = f"{r}_{v}"
        L += [f"  %mo{u} = load volatile {D}, {D}* %mx{u}q, align 8",
              f"  %ab{u} = call {D} @llvm.fabs.v{FV}f64({D} {h[r, v]})",
              f"  %gt{u} = fcmp ogt {D} %ab{u}, %mo{u}",
              f"  %mn{u} = select {B1} %gt{u}, {D} %ab{u}, {D} %mo{u}",
              f"  store volatile {D} %mn{u}, {D}* %mx{u}q, align 8"]
    L += [f"  %knext = add i64 %k, {T * S}", "  br label %kloop", "kexit:"]
    # the statistics of the test, chunk by chunk: t = min RAC*RBC, q = max MAC*MBC
    inf = _vconst(FV, "double", "0x7FF0000000000000")
    L += ["  br label %sloop", "sloop:", "  %ch = phi i64 [0, %kexit], [%chnext, %sbody]"]
    for r, v in RV:
        L += [f"  %tc{r}_{v} = phi {D} [{inf}, %kexit], [%tn{r}_{v}, %sbody]",
              f"  %qc{r}_{v} = phi {D} [{Z}, %kexit], [%qn{r}_{v}, %sbody]"]
    L += ["  %scond = icmp slt i64 %ch, %nch", "  br i1 %scond, label %sbody, label %ilatch", "sbody:",
          "  %chnext = add i64 %ch, 1", "  %srb = mul i64 %ch, %N", "  %srb2 = add i64 %srb, %pcol"]
    for v in range(V):
        L += [f"  %sbi{v} = add i64 %srb2, {FV * v}"]
        L += vload(f"rb{v}", "%RBC", f"%sbi{v}") + vload(f"mb{v}", "%MBC", f"%sbi{v}")
    for r in range(R):
        L += [f"  %sai{r} = add i64 %srow{r}, %ch",
              f"  %prac{r} = getelementptr inbounds double, double* %RAC, i64 %sai{r}",
              f"  %pmac{r} = getelementptr inbounds double, double* %MAC, i64 %sai{r}"]
        L += bcast(f"ra{r}", f"%prac{r}") + bcast(f"ma{r}", f"%pmac{r}")
        for v in range(V):
            L += [f"  %tt{r}_{v} = fmul {D} %ra{r}, %rb{v}", f"  %tl{r}_{v} = fcmp olt {D} %tt{r}_{v}, %tc{r}_{v}",
                  f"  %tn{r}_{v} = select {B1} %tl{r}_{v}, {D} %tt{r}_{v}, {D} %tc{r}_{v}",
                  f"  %qq{r}_{v} = fmul {D} %ma{r}, %mb{v}",
                  # a NaN statistic (an infinity in A times an all-zero chunk of B) is taken and then kept
                  f"  %ql{r}_{v} = fcmp ugt {D} %qq{r}_{v}, %qc{r}_{v}",
                  f"  %qs{r}_{v} = select {B1} %ql{r}_{v}, {D} %qq{r}_{v}, {D} %qc{r}_{v}",
                  f"  %qu{r}_{v} = fcmp uno {D} %qc{r}_{v}, %qc{r}_{v}",
                  f"  %qn{r}_{v} = select {B1} %qu{r}_{v}, {D} %qc{r}_{v}, {D} %qs{r}_{v}"]
    L += ["  br label %sloop", "ilatch:"]
    grow = _vconst(FV, "double", "0x%016X" % np.float64(_GROW).view(np.uint64))
    four = _vconst(FV, "double", "4.0")
    fmax = _vconst(FV, "double", "0x47EFFFFFE0000000")  # FLT_MAX
    tmin = _vconst(FV, "double", "0x39D0000000000000")  # 2**-98 = 2**(51 - 149)
    for r, v in RV:
        u = f"{r}_{v}"
        # x is an fp32 value (a rounded stage or C): the conversion is exact
        L += [f"  %xf{u} = fptrunc {D} %x{u} to {Fv}", f"  store {Fv} %xf{u}, {Fv}* %cf{u}q, align 4",
              f"  %mc{u} = load volatile {D}, {D}* %mx{u}q, align 8",
              # (max|x| + S*T*P) * _GROW <= 2**(53+L) (proof (2), (5)), <= FLT_MAX (proof (4)), L >= -149 (3)
              f"  %sm{u} = fadd {D} %mc{u}, %qc{u}", f"  %sg{u} = fmul {D} %sm{u}, {grow}",
              f"  %t4{u} = fmul {D} %tc{u}, {four}", f"  %okmp{u} = fcmp ole {D} %sg{u}, %t4{u}",
              f"  %okov{u} = fcmp ole {D} %sg{u}, {fmax}", f"  %oksb{u} = fcmp oge {D} %tc{u}, {tmin}",
              # and the final x finite (proof (6): an inf*0 or a NaN input makes it NaN, and the model writes
              # its own NaN, 0x7FC00000, where x86 would leave the default NaN with its sign bit set)
              f"  %xa{u} = call {D} @llvm.fabs.v{FV}f64({D} %x{u})", f"  %okf{u} = fcmp olt {D} %xa{u}, {inf}",
              f"  %ok1{u} = and {B1} %okmp{u}, %okov{u}", f"  %ok2{u} = and {B1} %ok1{u}, %oksb{u}",
              f"  %ok{u} = and {B1} %ok2{u}, %okf{u}"] + _store_flags(u, FV)
    L += _panel_loop_close(R)
    return "\n".join(L) + "\n"


_FDECL = (f"declare <{FV} x double> @llvm.fma.v{FV}f64(<{FV} x double>, <{FV} x double>, <{FV} x double>)\n"
          f"declare <{FV} x double> @llvm.fabs.v{FV}f64(<{FV} x double>)\n")
#: rows x vectors of the fast kernel's register block (Zen 3, bf16 1024^3, one thread, kernel only, ns per 4
#: stage-lanes: 6x2 0.9-1.1, 5x2 0.9-1.0, 4x2 1.1, 3x3 1.0-1.4 -- within this machine's noise; 12 chains of 17
#: cycles' latency keep the two FMA pipes busy, fewer do not)
FR, FVN = 6, 2


def _fast_kernel(T: int, R: int = FR, V: int = FVN, S: int = 1):
    def build():  # a failure leaves the checked kernels usable
        fma = "+fma" in hostjit.host_features()
        ee = hostjit.compile_host(_FDECL + _fir(T, R, V, fma, S))
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), *([ctypes.c_int64] * 6),
                                 *([ctypes.c_void_p] * 5), ctypes.c_int64)
        return proto(ee.get_function_address(f"fmma{T}_{R}_{V}_{S}"))
    return _compiled(("fast", T, R, V, S), "fast_error", build)


def _by_panels(ex: ThreadPoolExecutor, call, panels: int, nthreads: int) -> None:
    """``call(p0, p1)`` over panels 0..panels in about four runs per thread (ctypes releases the GIL during
    each call, so the kernels run in parallel)."""
    step = -(-panels // (nthreads * 4))
    list(ex.map(lambda p0: call(p0, min(panels, p0 + step)), range(0, panels, step)))


def _line_stats(x: np.ndarray, sig_bits: int, axis: int):
    """Per line along ``axis`` of a float32 array: the exponent L such that every element is a multiple of
    2**L, and the largest magnitude (float64). L is _elem_lsb's bound for the smallest nonzero magnitude (the
    bound grows with the magnitude, so it holds for the whole line); all-zero lines get _BIG; a NaN or an
    infinity makes the maximum NaN or infinite. Works on the bit patterns: nonnegative floats order like their
    bits, and (bits - 1) wraps zeros to the largest value, out of the minimum's way."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) & np.uint32(0x7FFFFFFF)
    low = (u - np.uint32(1)).min(axis=axis) + np.uint32(1)  # 0: every element was zero
    top = u.max(axis=axis)
    E = (low >> np.uint32(23)).astype(np.int64)
    lsb = np.where(low == 0, _BIG, np.maximum(E, 1) - 126 - sig_bits)
    with np.errstate(invalid="ignore"):     # a signalling NaN widens to a NaN: intended, no warning
        return lsb, top.view(np.float32).astype(np.float64)


#: K elements per chunk of the kernel's test (statistics of A and B per chunk: a tiny element lowers L only for
#: its own chunk). Measured on fp16 1024^3 standard-normal data: line-wide statistics flag 11% of the elements,
#: chunks of 64 0.7%, of 32 0.4%, of 16 0.2%; 32 gave the best total time (finer chunks add per-chunk work to the
#: kernel, coarser ones more refinement of flagged elements in numpy).
KC = 32
#: 1 + 2**-20 >= (1 + 2**-24)**S * (1 + 2**-52)**3 for S <= 8: the growth of |x| over the S - 1 unrecorded
#: stages and the rounding of the test's own additions and multiplications
_GROW = 1.0 + 2.0 ** -20
#: the largest finite fp32 value
_FLT_MAX = float(np.finfo(np.float32).max)
_BIG = 600  # "no constraint": 2**(51+600) * 2**600 overflows to inf, a test that then always passes


def _elem_lsb(x32: np.ndarray, sig_bits: int) -> np.ndarray:
    """Per element of a float32 array: L (int16) with the element a multiple of 2**L, from its exponent field E:
    max(E, 1) - 126 - sig_bits (a normal value is a multiple of 2**(E-127-(sig-1)); an fp32 subnormal of a
    format with fp32's exponent range, of 2**(-125-sig)); zeros and non-finite values: 2*_BIG (the maxima
    catch the latter)."""
    u = np.ascontiguousarray(x32, dtype=np.float32).view(np.int32) & 0x7FFFFFFF
    E = (u >> 23).astype(np.int16)
    lsb = np.maximum(E, 1) - np.int16(126 + sig_bits)
    return np.where((u == 0) | (E == 255), np.int16(2 * _BIG), lsb).astype(np.int16)


def _record_every(k: int, T: int) -> int:
    """fast_mma's default S: record |x| every 4 stages where the stage count allows, else 2, else 1."""
    return next(s for s in (4, 2, 1) if (k // T) % s == 0)


def fast_mma(a32: np.ndarray, b32: np.ndarray, c: np.ndarray, T: int, *, sig_bits: tuple[int, int] = (24, 24),
             threads: int | None = None, R: int = FR, V: int = FVN, S: int | None = None):
    """Run the unchecked kernel and the proof's test: returns (acc float32 M x N, flag bool M x N).

    ``c``: the fp32 values of C (float64), or None for +0. Flagged elements are not proven (see the proof
    above) and must be recomputed by the caller; the others are the model's results. ``sig_bits``: a true bound
    on the significant bits of A's and B's elements (24 for any float32 value; 8 for bf16, 11 for fp16, tf32).

    The kernel records |x| every S stages (default 4 where the stage count allows; measured at 1024^3 with the
    per-chunk test, whole path, two threads, before the Veltkamp rounding: bf16 S=2 0.122 s, S=4 0.096 s, S=8
    0.092 s; fp16 0.195, 0.174, 0.227 s -- a larger S weakens the test, S*T*P, and fp16 then refines more); the
    proof above covers the stages in between. With the Veltkamp rounding and the statistics moved after the
    stage loop the bf16 kernel alone got 5-20% faster (one thread, alternating runs: 0.136 vs 0.143-0.170 s);
    the whole two-thread path moved within the machine's noise (0.078-0.091 vs 0.089 s); fp16 did not change.
    """
    m, k = a32.shape
    if S is None:
        S = _record_every(k, T)
    fn = _fast_kernel(T, R, V, S)
    if fn is None:
        raise RuntimeError("native kernel unavailable: " + str(_STATE.get("fast_error", _STATE.get("error"))))
    n = b32.shape[1]
    zero_c = c is None  # C = +0 everywhere: no conversion, no test of C's granularity
    with np.errstate(invalid="ignore"):         # a signalling NaN in C widens to a NaN: intended
        c = np.zeros((m, b32.shape[1])) if zero_c else np.asarray(c, dtype=np.float64)
    if m == 0 or n == 0 or k == 0:
        return c.astype(np.float32), ~np.isfinite(c)
    W = FV * V
    mp, npn = -(-m // R) * R, -(-n // W) * W
    kc = KC if k % KC == 0 and KC % (T * S) == 0 else k
    nch = k // kc
    panels = npn // W
    nthreads = threads or min(os.cpu_count() or 1, panels)
    out = {}

    def prep_a():  # A widened to binary64, and its per-chunk statistics
        A = np.empty((mp, k))
        with np.errstate(invalid="ignore"):  # signalling NaNs widen to NaNs (numpy's cast may flag them)
            A[:m] = a32
        A[m:] = 0
        la, ma = _line_stats(a32.reshape(m, nch, kc), sig_bits[0], 2)  # M x nch
        RAC = np.zeros((mp, nch))
        RAC[:m] = np.ldexp(1.0, (51 + np.clip(la, -_BIG, _BIG)).astype(np.int32))
        MAC = np.zeros((mp, nch))
        MAC[:m] = S * T * ma
        out.update(A=A, ma=ma, RAC=RAC, MAC=MAC)

    def prep_b():  # B packed into panels of W columns, and its per-chunk statistics
        Bp = np.empty((panels, k, W))
        with np.errstate(invalid="ignore"):  # as in prep_a
            if npn == n:
                Bp[:] = b32.reshape(k, panels, W).transpose(1, 0, 2)
            else:
                Bpad = np.zeros((k, npn))
                Bpad[:, :n] = b32
                Bp[:] = Bpad.reshape(k, panels, W).transpose(1, 0, 2)
        lb, mb = _line_stats(b32.reshape(nch, kc, n), sig_bits[1], 1)  # nch x N
        RBC = np.zeros((nch, npn))
        RBC[:, :n] = np.ldexp(1.0, np.clip(lb, -_BIG, _BIG).astype(np.int32))
        MBC = np.zeros((nch, npn))
        MBC[:, :n] = mb
        out.update(Bp=Bp, mb=mb, RBC=RBC, MBC=MBC)

    if zero_c:
        C = np.zeros((mp, npn), dtype=np.float32)
    elif mp == m and npn == n:
        C = c.astype(np.float32, order="C")  # fp32 values: exact
    else:
        C = np.zeros((mp, npn), dtype=np.float32)
        C[:m, :n] = c
    MX = np.empty((mp, npn))
    F = np.empty((mp, npn), dtype=np.uint8)
    ptr = lambda x: x.ctypes.data  # noqa: E731
    if nthreads <= 1:
        prep_a()
        prep_b()
    with ThreadPoolExecutor(max(1, nthreads)) as ex:  # numpy and ctypes release the GIL in the long parts
        if nthreads > 1:
            list(ex.map(lambda f: f(), (prep_a, prep_b)))
        head = (ptr(out["A"]), ptr(out["Bp"]), ptr(C), ptr(MX), npn, k, 0, mp)
        tail = (ptr(out["RAC"]), ptr(out["MAC"]), ptr(out["RBC"]), ptr(out["MBC"]), ptr(F), kc)
        if nthreads <= 1:
            fn(*head, 0, panels, *tail)
        else:
            _by_panels(ex, lambda p0, p1: fn(*head, p0, p1, *tail), panels, nthreads)
    ma, mb = out["ma"], out["mb"]
    acc, mx, flag = C[:m, :n], MX[:m, :n], F[:m, :n].view(bool)
    with np.errstate(invalid="ignore", over="ignore"):
        if not zero_c and np.any(c != 0):  # C's own granularity: (|x| + S*T*P) * _GROW <= 2**(53+Lc) as well
            lc = _fp32_lsb(c)
            P = (ma.max(axis=1)[:, None] * mb.max(axis=0)[None, :])[:m, :n]
            flag = flag | ~((mx + S * T * P) * _GROW <= np.ldexp(1.0, 53 + lc))
        if flag.any():
            flag = flag.copy()
            _refine(a32, b32, c, acc, mx, flag, S * T, sig_bits)
    return acc, flag


def _fp32_lsb(c: np.ndarray) -> np.ndarray:
    """Per element of an array of fp32 values (float64): L (int32) with the element a multiple of 2**L (every
    fp32 value is a multiple of 2**-149); zeros and non-finite values: _BIG (the maxima catch the latter)."""
    ac = np.abs(c)
    with np.errstate(invalid="ignore"):
        lc = np.frexp(np.where(np.isfinite(ac), ac, 1.0))[1].astype(np.int64) - 24
        return np.where((ac == 0) | ~np.isfinite(ac), _BIG, np.clip(lc, -149, _BIG)).astype(np.int32)


def _refine(a32, b32, c, acc, mx, flag, T, sig_bits, kc: int = 4, chunk: int = 1 << 21) -> None:
    """(``T`` here: the S*T of :func:`fast_mma`.) Retry the test for flagged elements with their own L and P:
    L = min over k of (L(a_ik) + L(b_kj)), P >= max over k of |a_ik b_kj| (a tiny element of a row only pairs
    with its own column's entries): first from statistics of K chunks of ``kc`` elements, then, for what is
    still flagged, element by element. Clears the flags it proves."""
    rows, cols = np.nonzero(flag)
    k = a32.shape[1]
    with np.errstate(invalid="ignore", over="ignore"):
        cc = np.abs(c[rows, cols])
        lc = _fp32_lsb(cc)
        base_ok = np.isfinite(cc) & np.isfinite(acc[rows, cols])
        m0 = mx[rows, cols]

        def test(t, L, P):
            L = np.minimum(L, lc[t])
            top = (m0[t] + T * P) * _GROW
            ok = top <= np.ldexp(1.0, np.clip(53 + L, -2000, 2000).astype(np.int32))
            # the kernel's two other conditions: no stage near fp32 overflow, no fp32 subnormal rounding
            return ok & (top <= _FLT_MAX) & (L >= -149) & base_ok[t] & np.isfinite(P)

        todo = np.arange(rows.size)
        if k % kc == 0 and k > kc:
            ur, ir = np.unique(rows, return_inverse=True)
            uc, ic = np.unique(cols, return_inverse=True)
            nch = k // kc
            asub, bsub = a32[ur], b32[:, uc]
            LA = _elem_lsb(asub, sig_bits[0]).reshape(len(ur), nch, kc).min(axis=2)
            MA = np.abs(asub).reshape(len(ur), nch, kc).max(axis=2).astype(np.float64)
            LB = _elem_lsb(bsub, sig_bits[1]).reshape(nch, kc, len(uc)).min(axis=1).T
            MB = np.abs(bsub).reshape(nch, kc, len(uc)).max(axis=1).T.astype(np.float64)
            LB, MB = np.ascontiguousarray(LB), np.ascontiguousarray(MB)
            keep = []
            step = max(1, chunk // nch)
            for s0 in range(0, todo.size, step):
                t = todo[s0:s0 + step]
                r, q = ir[t], ic[t]
                ok = test(t, (LA[r].astype(np.int32) + LB[q]).min(axis=1), (MA[r] * MB[q]).max(axis=1))
                keep.append(t[~ok])
            todo = np.concatenate(keep) if keep else todo[:0]
        step = max(1, chunk // max(1, k))
        keep = []
        for s0 in range(0, todo.size, step):
            t = todo[s0:s0 + step]
            ar, bc = a32[rows[t]], b32[:, cols[t]].T
            L = (_elem_lsb(ar, sig_bits[0]).astype(np.int32) + _elem_lsb(bc, sig_bits[1])).min(axis=1)
            P = np.abs(ar.astype(np.float64) * bc).max(axis=1)
            ok = test(t, L, P)
            keep.append(t[~ok])
        todo = np.concatenate(keep) if keep else todo[:0]
    flag[rows, cols] = False
    flag[rows[todo], cols[todo]] = True


# ------------------------------------------------------------------ one product per stage: fp32 FMA lanes
#
# With one product per stage ("stage" for tf32, every "sequential" step) the model's step is
# x' = RN24(x + a*b) with a, b, x fp32 values: exactly IEEE 754's fused multiply-add in binary32 (the product
# exact, one rounding to nearest even, subnormals kept -- the JIT code runs with the default MXCSR, no FTZ/DAZ --
# overflow to infinity, and an exact zero sum is -0 only when x and a*b both are -0, IEEE 754 6.3).  So a chain
# of binary32 FMAs in K order is the model itself, with no exactness test; only non-finite results (whose NaN
# the hardware writes with its own sign and payload) are flagged for the exact path.  A non-finite value never
# becomes finite again, so the final value tells.

SV = 8  # floats per vector register (AVX2)


def _sir(R: int, V: int) -> str:
    """Kernel ``@smma_{R}_{V}``: x = fma(a, b, x) in binary32, panels p0..p1 of W = 8V columns, rows i0..i1."""
    W = SV * V
    Fv = f"<{SV} x float>"
    Z = "zeroinitializer"
    RV = [(r, v) for r in range(R) for v in range(V)]
    L = [f"define void @smma_{R}_{V}(float* noalias nocapture readonly %A, float* noalias nocapture readonly %Bp, "
         "float* noalias nocapture %C, i8* noalias nocapture %F, i64 %N, i64 %K, i64 %i0, i64 %i1, i64 %p0, "
         "i64 %p1) {",
         *_panel_loop_open("float", W)]
    for r in range(R):
        L += [f"  %ir{r} = add i64 %i, {r}", f"  %arow{r} = mul i64 %ir{r}, %K",
              f"  %pa{r} = getelementptr inbounds float, float* %A, i64 %arow{r}",
              f"  %crow{r} = mul i64 %ir{r}, %N", f"  %cb{r} = add i64 %crow{r}, %pcol"]
        for v in range(V):
            L += [f"  %ci{r}_{v} = add i64 %cb{r}, {SV * v}",
                  f"  %pc{r}_{v} = getelementptr inbounds float, float* %C, i64 %ci{r}_{v}",
                  f"  %pcv{r}_{v} = bitcast float* %pc{r}_{v} to {Fv}*",
                  f"  %c0{r}_{v} = load {Fv}, {Fv}* %pcv{r}_{v}, align 4"]
    L += ["  br label %kloop", "kloop:", "  %k = phi i64 [0, %ipre], [%knext, %kbody]"]
    for r, v in RV:
        L.append(f"  %x{r}_{v} = phi {Fv} [%c0{r}_{v}, %ipre], [%h{r}_{v}, %kbody]")
    L += ["  %kcond = icmp slt i64 %k, %K", "  br i1 %kcond, label %kbody, label %ilatch", "kbody:",
          f"  %bo = mul i64 %k, {W}"]
    for v in range(V):
        L += [f"  %bi{v} = add i64 %bo, {SV * v}",
              f"  %pbe{v} = getelementptr inbounds float, float* %bpan, i64 %bi{v}",
              f"  %pbv{v} = bitcast float* %pbe{v} to {Fv}*", f"  %b{v} = load {Fv}, {Fv}* %pbv{v}, align 4"]
    for r in range(R):
        L += [f"  %pae{r} = getelementptr inbounds float, float* %pa{r}, i64 %k",
              f"  %as{r} = load float, float* %pae{r}",
              f"  %ai{r} = insertelement {Fv} undef, float %as{r}, i32 0",
              f"  %a{r} = shufflevector {Fv} %ai{r}, {Fv} undef, <{SV} x i32> {Z}"]
        for v in range(V):
            L.append(f"  %h{r}_{v} = call {Fv} @llvm.fma.v{SV}f32({Fv} %a{r}, {Fv} %b{v}, {Fv} %x{r}_{v})")
    L += ["  %knext = add i64 %k, 1", "  br label %kloop", "ilatch:"]
    inf = _vconst(SV, "float", "0x7FF0000000000000")
    for r, v in RV:
        u = f"{r}_{v}"
        L += [f"  store {Fv} %x{u}, {Fv}* %pcv{u}, align 4",
              f"  %xa{u} = call {Fv} @llvm.fabs.v{SV}f32({Fv} %x{u})", f"  %ok{u} = fcmp olt {Fv} %xa{u}, {inf}"]
        L += _store_flags(u, SV)
    L += _panel_loop_close(R)
    return "\n".join(L) + "\n"


_SDECL = (f"declare <{SV} x float> @llvm.fma.v{SV}f32(<{SV} x float>, <{SV} x float>, <{SV} x float>)\n"
          f"declare <{SV} x float> @llvm.fabs.v{SV}f32(<{SV} x float>)\n")
SR, SVN = 6, 2


def _fma32_kernel(R: int = SR, V: int = SVN):
    def build():  # a failure leaves the binary64 kernels usable
        if "+fma" not in hostjit.host_features():
            raise RuntimeError("no FMA instruction on this host")  # a libm call per element: too slow
        ee = hostjit.compile_host(_SDECL + _sir(R, V))
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), *([ctypes.c_int64] * 6))
        return proto(ee.get_function_address(f"smma_{R}_{V}"))
    return _compiled(("fma32", R, V), "fma32_error", build)


def fma32_mma(a32: np.ndarray, b32: np.ndarray, c: np.ndarray, *, threads: int | None = None,
              R: int = SR, V: int = SVN):
    """One product per step as binary32 FMAs (see above): returns (acc float32 M x N, flag bool M x N); flagged
    elements (non-finite results) must be recomputed by the caller. Raises RuntimeError where no FMA kernel."""
    fn = _fma32_kernel(R, V)
    if fn is None:
        raise RuntimeError("fp32 FMA kernel unavailable: " + str(_STATE.get("fma32_error", _STATE.get("error"))))
    m, k = a32.shape
    n = b32.shape[1]
    zero_c = c is None
    with np.errstate(invalid="ignore"):         # a signalling NaN in C widens to a NaN: intended
        c = np.zeros((m, b32.shape[1])) if zero_c else np.asarray(c, dtype=np.float64)
    if m == 0 or n == 0 or k == 0:
        return c.astype(np.float32), ~np.isfinite(c)
    W = SV * V
    mp, npn = -(-m // R) * R, -(-n // W) * W
    A = np.zeros((mp, k), dtype=np.float32)
    A[:m] = a32
    Bpad = b32 if npn == n else np.concatenate([b32, np.zeros((k, npn - n), dtype=np.float32)], axis=1)
    Bp = np.ascontiguousarray(np.asarray(Bpad, dtype=np.float32).reshape(k, npn // W, W).transpose(1, 0, 2))
    C = np.zeros((mp, npn), dtype=np.float32)
    if not zero_c:
        C[:m, :n] = c  # fp32 values: exact
    F = np.empty((mp, npn), dtype=np.uint8)
    panels = npn // W
    nthreads = threads or min(os.cpu_count() or 1, panels)
    args = (A.ctypes.data, Bp.ctypes.data, C.ctypes.data, F.ctypes.data, npn, k, 0, mp)
    if nthreads <= 1:
        fn(*args, 0, panels)
    else:
        with ThreadPoolExecutor(nthreads) as ex:
            _by_panels(ex, lambda p0, p1: fn(*args, p0, p1), panels, nthreads)
    return C[:m, :n], F[:m, :n].view(bool)
