"""A compiled fast path (LLVM via llvmlite) for the "stage" and "sequential" float models.

The kernel runs, per output element, exactly the steps of
:func:`systolic.xmx.kernels.round_sum_fp32` for the common case: the products
(exact in binary64) are added to the fp32 accumulator by a TwoSum cascade, the
error terms by a second cascade, the total becomes ``hi + lo`` and is rounded
to odd in binary64 then to nearest-even fp32 (``fptrunc``). LLVM is given no
fast-math flags, so every IEEE operation is kept as written; the loop over
output columns is vectorised by LLVM.

Whenever an element leaves the proven common case (the second cascade is
inexact, a NaN or infinity appears, or a step's sum is exactly zero, whose
sign rule needs the terms) the kernel flags it; the caller recomputes flagged
elements with the numpy path from their initial C. Results are therefore
bit-identical to the numpy path (and property-tested against it).

If llvmlite cannot compile here, :func:`available` is False and callers use the
numpy path.
"""

from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["available", "stage_mma"]

_LOCK = threading.Lock()
#: columns per vector in the explicit-vector kernel (two AVX2 registers of doubles)
VW = 8
#: rows processed together by the vector kernel (independent dependency chains)
VR = 4
_CACHE: dict[int, object] = {}
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
    if "error" in _STATE:
        return None
    if "llvm" not in _STATE:
        try:
            import llvmlite.binding as llvm
            try:
                llvm.initialize_native_target()
                llvm.initialize_native_asmprinter()
            except Exception:  # older llvmlite needs initialize() first
                llvm.initialize()
                llvm.initialize_native_target()
                llvm.initialize_native_asmprinter()
            target = llvm.Target.from_default_triple()
            tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                              features=llvm.get_host_cpu_features().flatten(), opt=3)
            _STATE["llvm"], _STATE["tm"] = llvm, tm
            _STATE["engines"] = []
        except Exception as exc:  # pragma: no cover - depends on the installation
            _STATE["error"] = repr(exc)
            return None
    return _STATE["llvm"]


def _kernel(T: int):
    with _LOCK:
        if T in _CACHE:
            return _CACHE[T]
        llvm = _engine()
        if llvm is None:
            return None
        try:
            tm = _STATE["tm"]
            mod = llvm.parse_assembly(_ir(T) + _vir(T, VW, VR) + _vir(T, VW, 1) + _vir_exact(T, VW, VR))
            mod.triple = tm.triple
            mod.data_layout = str(tm.target_data)
            mod.verify()
            pto = llvm.create_pipeline_tuning_options(speed_level=3)
            pto.loop_vectorization = True
            pto.slp_vectorization = True
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
            ee = llvm.create_mcjit_compiler(mod, tm)
            ee.finalize_object()
            _STATE["engines"].append(ee)  # keep the code alive
            proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), *([ctypes.c_int64] * 6))
            fn = tuple(proto(ee.get_function_address(name))
                       for name in (f"mma{T}", f"vmma{T}_{VR}", f"vmma{T}_1", f"emma{T}_{VR}"))
        except Exception as exc:  # pragma: no cover
            _STATE["error"] = repr(exc)
            fn = None
        _CACHE[T] = fn
        return fn


def available() -> bool:
    """Whether the compiled kernel can run here (llvmlite present and able to JIT for this CPU)."""
    if os.environ.get("SYSTOLIC_NO_NATIVE"):
        return False
    return _kernel(1) is not None


def stage_mma(a32: np.ndarray, b32: np.ndarray, c: np.ndarray, T: int, *, threads: int | None = None,
              col_block: int = 128):
    """Run the compiled kernel: returns (acc fp32 values as float64 M x N, flag uint8 M x N).

    ``a32`` (M x K) and ``b32`` (K x N) are float32 arrays holding the exact input values (K a multiple of T),
    ``c`` the initial fp32 accumulator values (float64). Flagged elements must be recomputed by the caller.
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
    mr = m // VR * VR

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
