"""``systolic.xmx.matmul(..., backend="cuda")``: the XMX GEMM on an NVIDIA GPU, bit for bit the CPU path's.

Same arguments, same errors (the validation is :func:`systolic.xmx.gemm.plan`, shared with the CPU path),
same bits. How each model is kept identical (docs/gpu.md, "XMX"):

* **integers** (every s8/u8/s4/u4/s2/u2 pair): sub-byte values widened to s8/u8 (they fit), then the
  integer GEMM of :mod:`systolic.gpu.int_gemm` (cuBLAS int8, unsigned operands shifted into int8 with the
  shift added back as rank-one terms, K chunks that keep every partial sum inside int32): C plus the exact
  products modulo 2**32, whatever order the tensor cores add in -- the same function as AMX's TDPB[SU][SU]D.
* **"sequential"** (every float precision) and **tf32 "stage"**: one product per step, so the step
  ``x = RN_fp32(x + a*b)`` is IEEE 754 binary32 fusedMultiplyAdd; the kernel is a chain of ``__fmaf_rn`` in K
  order per output (denormals kept: NVRTC ``--ftz=false``). NaN results are written as the model's NaN.
* **bf16 "stage"** (2 products per stage, every product exact in binary32, :func:`_fp32_exact`): the FP32-pipe
  kernel ``xmx_stage32``: per stage ``rl = RN(x + RD(p0 + p1))`` and ``rh = RN(x + RU(p0 + p1))``, equal by
  the monotonicity of rounding exactly when either is the stage's result; the rare others recomputed exactly
  (Boldo-Melquiond sum of three); zero and non-finite results flagged to the robust kernel below.
* **"stage"** otherwise, with 2, 4 or 8 products per stage (fp16, bf8/hf8, e2m1; bf16 outside that
  precondition): the binary64 kernel of
  :mod:`systolic.xmx.native`'s proof: each stage summed with binary64 FMAs, rounded once to 24 bits by
  Veltkamp's splitting, the element proven afterwards from per-chunk granularity bounds and the recorded
  largest |x| (proof in native.py); unproven elements are recomputed on the GPU by the TwoSum / round-to-odd
  kernel (IEEE specials, zero-sign rule), and the few that kernel cannot settle (three-level cancellation)
  by the CPU's exact numpy path.
* ``"exact"``, ``"block(L,F)"`` and models with ``ftz_result``: computed by the CPU path (no GPU kernel),
  the result handed back like the GPU ones.

Inputs: numpy arrays (decoded on the host exactly as the CPU path decodes them, then copied) or GPU arrays
(CuPy, PyTorch CUDA tensors, ``__cuda_array_interface__`` / ``__dlpack__`` objects; taken zero-copy by
:func:`systolic.gpu.intake.intake`: bf16/fp16 bit patterns, float32 for tf32 and int8/uint8 are decoded on
the device). The result comes back as the kind of the first GPU input (numpy when all inputs are numpy).
:data:`last_run` records what the last call did (elements flagged, sent to the robust kernel, to the CPU).
"""

from __future__ import annotations

import numpy as np

from .. import counters, fpenv
from .. import types as T
from ..errors import InvalidValue
from ..xmx import gemm as G
from ..xmx import kernels as KN
from . import int_gemm, intake
from . import runtime as R
from .xmx_source import (ALL_NAMES, NAMES, S_SMEM, SOURCE, STAGE32_MAX_SIG, STAGE32_PLAIN, STAGE32_VARIANT,
                          STAGE_VARIANT, stage32_kernel)

__all__ = ["matmul", "last_run"]

#: xmx_source's "no set bit" lsb (a zero constrains nothing)
BIG_LSB = 4000

#: what the last call did: {"path", "flagged", "robust", "cpu"} (tests and benchmarks read it); with
#: :data:`profile` set, also the device time of the main kernel and of the fix-up ("main_ms", "fix_ms") and,
#: for the stage path, of every phase of the call ("phases_ms": decode, stats, main, fix-up)
last_run: dict = {}
#: time the stage kernel and its fix-up with CUDA events (benchmarks; adds synchronisations)
profile = False
#: the CUDA events of the current float call's phases while :data:`profile` is set: [(name, event)]
_marks: list = []


def _mark(cp, name: str) -> None:
    """Record a CUDA event ending phase ``name`` of the current float call (only while profiling)."""
    if profile:
        ev = cp.cuda.Event()
        ev.record()
        _marks.append((name, ev))
#: the stage kernel's (JV, MINB) variant (xmx_source.STAGE_VARIANT; benchmarks try the others with bf16)
stage_variant = STAGE_VARIANT
#: T = 2 "stage" of bf16 operands on the FP32 pipe (xmx_stage32) when every product is exact in binary32: its
#: variant (xmx_source.STAGE32_VARIANTS), or None for the binary64 kernel (xmx_source.STAGE32_VARIANT)
stage32_variant = STAGE32_VARIANT
#: the widest significand (bits) sent to xmx_stage32 (tests raise it to 11 to run fp16 through it)
stage32_max_sig = STAGE32_MAX_SIG


_FNS: dict = {}


def _fn(name: str, smem: int = 0):
    """The compiled kernel ``name`` on the current device (cached here: a call's host time matters at 4096^3),
    with its dynamic shared-memory limit raised to ``smem`` bytes once."""
    cp = R.require()
    key = (name, cp.cuda.Device().id)
    fn = _FNS.get(key)
    if fn is None:
        fn = R.kernel(SOURCE, name, names=NAMES if name in NAMES or '<' not in name else ALL_NAMES)
        if smem:
            fn.max_dynamic_shared_size_bytes = smem
        _FNS[key] = fn
    return fn


def _ptr(x):
    """A kernel pointer argument: the array, or a null pointer for None."""
    return np.uint64(0) if x is None else x


def _grid1(n: int, block: int = 256) -> tuple:
    return (max(1, min(-(-n // block), 65535 * 8)),)


def _gpu_kind(*xs) -> str:
    for x in xs:
        if x is not None and intake.is_gpu_array(x):
            return "torch" if intake._is_torch(x) else "cupy"
    return "numpy"


class _Meta:
    """dtype/shape/ndim of an argument without copying it (what gemm.plan reads).

    For integer torch / CuPy arrays the metadata is read off the object and the intake (DLPack or CUDA array
    interface) is made only when a kernel needs it: the s8/u8 calls that the AMX kernel's cached launch path
    takes never pay for it (host time per call is what limits a 4096^3 int8 GEMM).
    """

    def __init__(self, x, name):
        self._x, self._name, self._intake = x, name, None
        if intake.is_gpu_array(x):
            self._gpu = True
            light = _integer_meta(x)
            if light is None:
                self._intake = intake.intake(x, name)
                self.dtype = np.dtype(self._intake.dtype)
                self.shape = tuple(int(s) for s in self._intake.shape)
            else:
                self.dtype, self.shape = light
            self.host = None
        else:
            self._gpu = False
            self.host = np.asarray(x)
            self.dtype = self.host.dtype
            self.shape = self.host.shape
        self.ndim = len(self.shape)

    @property
    def intake(self):
        """The device view of a GPU argument (made on first use), None for a host array."""
        if self._gpu and self._intake is None:
            self._intake = intake.intake(self._x, self._name)
        return self._intake

    def to_host(self) -> np.ndarray:
        if self.host is None:
            d = self.intake.data.get()
            self.host = d.view(self.dtype) if d.dtype != self.dtype else d
        return self.host


_INT_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.uint32))


def _integer_meta(x):
    """(dtype, shape) of an integer torch tensor or CuPy array read off the object, else None."""
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        dt = intake._torch_dtype_map().get(x.dtype)
    elif mod == "cupy":
        dt = np.dtype(x.dtype)
    else:
        return None
    if dt is None or dt not in _INT_DTYPES:
        return None
    return dt, tuple(int(s) for s in x.shape)


#: the precisions the AMX int8 kernel takes as they are (int8 / uint8 containers)
_I8P = ("s8", "u8")

#: s8/u8 calls whose metadata gemm.plan() accepted and the AMX cached path ran: key -> (DPAS count, counter
#: fields). plan() reads only metadata (shapes, dtypes, platform, model, precision, row_block), all in the key,
#: so a hit would pass it again; an argument it rejects is never cached and raises on every call.
_FAST: dict = {}
_FAST_TYPES = {"torch", "cupy"}


def _amx_int8_fast(a, b, c):
    """The s8/u8 GEMM's in-place intake (:func:`systolic.gpu.intake.int8_in_place`, shared with the AMX engine:
    C + exact products mod 2**32 is the function of s8/u8 DPAS and of TDPB[SU][SU]D) on the operands as they
    are, or None when they do not fit it. The caller has checked the arguments (gemm.plan)."""
    got = intake.int8_in_place(a, b, c, ("xmx",), _int8_plan) if intake.IN_PLACE["fast"] else None
    if got is None:
        return None
    last_run.clear()
    last_run.update(path="amx-int8-fast", flagged=0, robust=0, cpu=0)
    return got[0]


def _int8_plan(M, K, N, da, db, c_meta, b_layout):
    return intake.int8_plan(M, K, N, da, db, c_meta is not None, b_layout)


def _fast_key(a, b, c, platform, model, precision, row_block):
    """The cache key of an int8/uint8 torch / CuPy call with plain-string platform and model, else None."""
    if precision is not None or type(a).__module__.split(".")[0] not in _FAST_TYPES:
        return None
    try:
        key = (type(a), type(b), str(a.dtype), str(b.dtype), tuple(a.shape), tuple(b.shape),
               None if c is None else (type(c), str(c.dtype), tuple(c.shape)), platform, model, row_block)
        hash(key)
    except (AttributeError, TypeError):          # not array-like, or an unhashable platform / model / row_block
        return None
    return key


def matmul(a, b, c=None, platform="pvc", model="stage", precision=None, *, row_block=None):
    """:func:`systolic.xmx.matmul` on the CUDA device (see the module docstring); call it through
    ``systolic.xmx.matmul(..., backend="cuda")``."""
    key = _fast_key(a, b, c, platform, model, precision, row_block)
    hit = _FAST.get(key) if key is not None else None
    if hit is not None:
        # an s8/u8 call whose metadata plan() already accepted: straight to the AMX kernel's cached launch path
        out = _amx_int8_fast(a, b, c)
        if out is not None:
            counters.count("dpas", hit[0], **hit[1])
            return out
    A, B = _Meta(a, "a"), _Meta(b, "b")
    P, p2, p1, m, k, n, ops, kd, kp, mdl, is_int = G.plan(A, B, platform, model, precision, row_block)
    cp = R.require()        # after plan(): bad arguments raise the CPU path's errors with or without a GPU
    kind = _gpu_kind(a, b, c)
    n_dpas = -(-m // 8) * -(-n // P.exec_size) * (kp // kd)
    how = dict(op="dpas", platform=P.name, a=p2, b=p1, sd=8, rc=8, exec=P.exec_size,
               dst="int32" if is_int else "fp32", via="matmul-cuda")
    # counted once every argument has passed its checks (operand values, C), as the CPU path counts

    def tally():
        counters.count("dpas", n_dpas, **how)
    if (is_int and precision is None and p1 in _I8P and p2 in _I8P and m and n and k
            and (c is None or tuple(getattr(c, "shape", ())) == (m, n))):
        # s8/u8 DPAS and AMX TDPB[SU][SU]D are one function (C + exact products mod 2**32): GPU inputs the AMX
        # kernel can read in place take its cached launch path (no intake, no argument re-checks: plan() above
        # already raised what the CPU path raises, and a C of another shape goes the general way to get the
        # XMX error); None means they do not fit it and the general path runs
        out = _amx_int8_fast(a, b, c)
        if out is not None:
            if key is not None:
                _FAST[key] = (n_dpas, how)
            tally()
            return out
    Cm = None if c is None else _Meta(c, "c")
    if is_int:
        a8, b8 = _int_operand(cp, A, p2), _int_operand(cp, B, p1)     # (values out of range raise here)
        cv = None if Cm is None else _int_c(cp, Cm, m, n)
        tally()
        if m == 0 or n == 0:
            return intake.give_back(cp.zeros((m, n), dtype=cp.int32), kind)
        last_run.clear()
        last_run.update(path="int-gemm", flagged=0, robust=0, cpu=0)
        return intake.give_back(_int_gemm(cp, a8, b8, cv, p2, p1), kind)

    with fpenv.default():  # the host's share of a float GEMM (flagged elements, exact fallbacks) reads MXCSR
        return _float_matmul(cp, kind, A, B, Cm, P, p2, p1, m, k, n, ops, kd, kp, mdl, precision, row_block, tally)


def _float_matmul(cp, kind, A, B, Cm, P, p2, p1, m, k, n, ops, kd, kp, mdl, precision, row_block, tally):
    cv = None if Cm is None else _float_c(cp, Cm, m, n)
    tally()
    if m == 0 or n == 0:
        out = cp.zeros((m, n), dtype=cp.float32) if cv is None else cv.astype(cp.float32)
        return intake.give_back(out, kind)
    if mdl.name not in ("stage", "sequential") or mdl.ftz_result:
        # no GPU kernel for these models: the CPU path computes them (same bits by definition)
        last_run.clear()
        last_run.update(path="cpu-model", flagged=0, robust=0, cpu=m * n)
        with counters.suspended():   # counted above already, as this call's DPAS
            out = G.matmul(A.to_host(), B.to_host(), None if cv is None else cv.get(), device=P, model=mdl,
                           precision=precision, row_block=row_block)
        return intake.give_back(cp.asarray(out), kind)
    n4 = -(-n // 4) * 4
    _marks.clear()
    _mark(cp, "start")
    av = _float_operand(cp, A, p2, mdl.flushes(p2, P), m, k, m, kp)       # m x kp
    bv = _float_operand(cp, B, p1, mdl.flushes(p1, P), k, n, kp, n4)      # kp x n4
    _mark(cp, "decode")
    step = ops if mdl.name == "stage" else 1
    if step == 1:
        d = _fma32(cp, av, bv, cv, m, n, kp, n4, mdl.nan_bits)
        last_run.clear()
        last_run.update(path="fma32", flagged=0, robust=0, cpu=0)
    else:
        d = _stage(cp, av, bv, cv, m, n, kp, n4, step, ops, kd, mdl, (G._sig_bits(p2), G._sig_bits(p1)))
    return intake.give_back(d.view(cp.float32), kind)


# ------------------------------------------------------------------------------------------ operands

def _float_operand(cp, X: _Meta, p: str, flush: bool, rows: int, cols: int, prow: int, pcols: int):
    """The exact fp32 values of X (rows x cols), flushed per the rule, in a zero-padded prow x pcols buffer."""
    out = cp.empty((prow, pcols), dtype=cp.float32)
    t = T.get(p)
    mode = None
    if X.intake is not None:
        ld = X.dtype
        if p == "bf16" and ld.name == "bfloat16":
            mode = 0
        elif p == "fp16" and ld == np.float16:
            mode = 1
        elif p == "tf32" and ld == np.float32:
            mode = 2
    if mode is not None:
        src = X.intake.data
    else:  # decoded on the host exactly as the CPU path decodes (fp8, e2m1, odd dtypes), then copied
        v = G._float_values(X.to_host(), p, flush)
        src = cp.asarray(np.ascontiguousarray(v, dtype=np.float32))
        mode, flush = 3, False
    total = prow * pcols
    if total:
        _fn("xmx_decode")(_grid1(total), (256,), (src, out, np.int64(rows), np.int64(cols), np.int64(prow),
                                                   np.int64(pcols), np.int32(mode), np.int32(bool(flush)),
                                                   np.float32(t.fmt.min_normal)))
    return out


def _float_c(cp, Cm: _Meta, m: int, n: int):
    """C as a device float32 M x N array, checked as the CPU path checks it (gemm.check_float_c)."""
    if Cm.intake is not None and Cm.dtype == np.float32:
        if Cm.shape != (m, n):
            raise InvalidValue("C must be M x N", values={"c": Cm.shape, "expected": (m, n)})
        return Cm.intake.data
    return cp.asarray(np.ascontiguousarray(G.check_float_c(Cm.to_host(), m, n), dtype=np.float32))


def _int_c(cp, Cm: _Meta, m: int, n: int):
    """C as device uint32 bits (mod 2**32), checked as the CPU path checks it (gemm.check_int_c)."""
    if Cm.intake is not None and Cm.dtype.kind in "iu":
        if Cm.shape != (m, n):
            raise InvalidValue("C must be M x N", values={"c": Cm.shape, "expected": (m, n)})
        cv = Cm.intake.data
        if cv.size:
            lo, hi = int(cv.min()), int(cv.max())
            if lo < -2 ** 31 or hi > 2 ** 32 - 1:
                raise InvalidValue("C does not fit the 32-bit accumulator",
                                   rule="visa-DPAS.md: Src0 is D or UD (32-bit)", values={"min": lo, "max": hi})
        return (cv.astype(cp.int64) & 0xFFFFFFFF).astype(cp.uint32).view(cp.int32)
    cv = G.check_int_c(Cm.to_host(), m, n)
    return cp.asarray((cv.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32))


# ------------------------------------------------------------------------------------------ integers

def _int_operand(cp, X: _Meta, p: str):
    """Integer elements as a device int8 (signed precisions) or uint8 (unsigned) array: every DPAS integer
    precision fits one of them."""
    t = T.get(p)
    dt = np.int8 if t.signed else np.uint8
    if X.intake is not None and X.dtype == dt and t.dtype == X.dtype:
        return X.intake.data
    return cp.asarray(np.ascontiguousarray(G._int_values(X.to_host(), p).astype(dt)))


def _int_gemm(cp, a8, b8, cv, pa: str, pb: str):
    # XMX integer DPAS and AMX TDPB[SU][SU]D compute the same function of s8/u8 operands (C + sum of exact
    # products modulo 2**32): one GEMM serves both engines
    # (u4 / u2 values, 0..15, are the same bytes as int8: no shift needed)
    ta, tb = T.get(pa), T.get(pb)
    return int_gemm.gemm(cp, a8, b8, cv, ta.signed or ta.bits < 8, tb.signed or tb.bits < 8)


# ------------------------------------------------------------------------------------------ floats

def _fma32(cp, av, bv, cv, m, n, kp, n4, nan_bits):
    d = cp.empty((m, n), dtype=cp.uint32)
    grid = (-(-n // 128), -(-m // 128))
    _fn("xmx_fma32")(grid, (256,), (av, bv, _ptr(cv), d, np.int32(m), np.int32(n), np.int32(kp), np.int32(n4),
                                   np.uint32(nan_bits)))
    return d


def _stats(cp, av, bv, m, kp, n4, sig):
    """Per 16-chunk (lsb, max) of A's rows and B's columns, and the same over each whole operand (tot: A's
    min lsb and max pattern, then B's)."""
    nch = kp // 16
    lea = cp.empty((m, nch, 2), dtype=cp.int32)
    leb = cp.empty((nch, n4, 2), dtype=cp.int32)
    tot = cp.asarray(np.array([BIG_LSB, 0, BIG_LSB, 0], dtype=np.int32))
    _fn("xmx_stats_a")(_grid1(m * nch), (256,), (av, lea, np.int64(m), np.int64(kp), np.int32(sig[0]), tot[0:2]))
    _fn("xmx_stats_b")(_grid1(nch * n4), (256,), (bv, leb, np.int64(kp), np.int64(n4), np.int32(sig[1]), tot[2:4]))
    return lea, leb, tot


def _ebound(bits: int) -> int:
    """xmx_source's ebound(): every magnitude <= the fp32 pattern ``bits`` is below 2**(E+1)."""
    if bits == 0:
        return -2000
    e = bits >> 23
    return -127 if e == 0 else e - 127


def _fp32_exact(tot) -> bool:
    """Whether every product a * b of the operands is exact in binary32 (xmx_stage32's precondition): all are
    multiples of 2**(min lsb(a) + min lsb(b)) >= 2**-149 and below 2**(Ea + Eb + 2) <= 2**126 (from the whole
    operands' statistics, :func:`_stats`; zeros constrain nothing; an inf / NaN operand fails unless the other is
    all zeros, where its NaN results are flagged and recomputed anyway). Products of significands of at most
    stage32_max_sig bits have at most twice that: <= 24 bits, hence the assertion."""
    assert 2 * stage32_max_sig <= 24, "a product of two significands must fit binary32's 24 bits"
    la, ma, lb, mb = (int(v) for v in tot.get())
    return la + lb >= -149 and _ebound(ma & 0xFFFFFFFF) + _ebound(mb & 0xFFFFFFFF) + 2 <= 126


def _tc_mode(sig, tot) -> int | None:
    """The operand type xmx_stage32tc can take the operands in (0: bf16, 1: fp16), or None, from the whole
    operands' statistics (:func:`_stats`: min lsb as xmx_source's lsb_of, exponent - (sig - 1), -149 for
    binary32 subnormals, so the smallest exponent is min lsb + sig - 1). The tensor cores' handling of
    subnormals is not relied on: every operand value must be zero or normal in the type, at most 8 significant
    bits and a normal binary32 exponent (bf16 has binary32's range), or at most 11 bits, exponent >= -14 and
    magnitude below 2**16 (fp16); and every nonzero product a normal binary32 number: the smallest exponents
    sum to >= -126."""
    la, ma, lb, mb = (int(v) for v in tot.get())
    if min(la, lb) == -149:                          # a binary32 subnormal operand value
        return None
    ea, eb = la + sig[0] - 1, lb + sig[1] - 1        # the smallest exponents (huge when all zero)
    if ea + eb < -126:
        return None
    if max(sig) <= 8:
        return 0
    if max(sig) <= 11 and min(ea, eb) >= -14 and max(_ebound(ma & 0xFFFFFFFF), _ebound(mb & 0xFFFFFFFF)) <= 15:
        return 1
    return None


def _stage(cp, av, bv, cv, m, n, kp, n4, T_, ops, kd, mdl, sig):
    jv, mb = stage_variant if T_ == 2 else STAGE_VARIANT
    ev = [cp.cuda.Event() for _ in range(3)] if profile else None
    lea, leb, tot = _stats(cp, av, bv, m, kp, n4, sig)
    _mark(cp, "stats")
    d = cp.empty((m, n), dtype=cp.uint32)
    flag = cp.empty((m, n), dtype=cp.uint8)
    if ev:
        ev[0].record()
    dims = (np.int32(m), np.int32(n), np.int32(kp), np.int32(n4))
    if T_ == 2 and stage32_variant and max(sig) <= stage32_max_sig and _fp32_exact(tot):
        kernel = "fp32"
        variant, mode = stage32_variant, 0
        if variant[2] == 0:                               # tensor cores for the first products
            mode = _tc_mode(sig, tot)
            if mode is None:
                variant, mode = STAGE32_PLAIN, 0
        name, rows = stage32_kernel(variant, mode)
        _fn(name)((-(-n // 128), -(-m // rows)), (256,), (av, bv, _ptr(cv), d, flag) + dims)
    else:
        kernel = "simt"
        _fn(f"xmx_stage<{T_}, {jv}, {mb}>", S_SMEM)((-(-n // 128), -(-m // 64)), (256,),
                                                    (av, bv, _ptr(cv), lea, leb, d, flag) + dims, shared_mem=S_SMEM)
    if ev:
        ev[1].record()
    nflag = int(cp.count_nonzero(flag))
    last_run.clear()
    last_run.update(path="stage-" + kernel, flagged=nflag, robust=0, cpu=0,
                    variant=(jv, mb) if kernel == "simt" else name)
    if nflag == 0:
        _timing(cp, ev)
        return d
    idx = cp.flatnonzero(flag).astype(cp.int64)
    hard = cp.zeros(nflag, dtype=cp.uint8)
    _fn(f"xmx_stage_robust<{T_}>")(_grid1(nflag, 128), (128,), (av, bv, _ptr(cv), idx, np.int64(nflag), d, hard,
                                                                 np.int32(n), np.int32(kp), np.int32(n4),
                                                                 np.uint32(mdl.nan_bits)))
    hidx = idx[hard.astype(cp.bool_)].get()
    last_run.update(robust=nflag, cpu=int(hidx.size))
    if hidx.size:
        _cpu_elements(cp, av, bv, cv, d, hidx, n, kp, ops, kd, mdl)
    _timing(cp, ev)
    return d


def _timing(cp, ev):
    if ev:
        ev[2].record()
        ev[2].synchronize()
        last_run.update(main_ms=cp.cuda.get_elapsed_time(ev[0], ev[1]), fix_ms=cp.cuda.get_elapsed_time(ev[1], ev[2]))
        marks = _marks + [("main", ev[1]), ("fix-up", ev[2])]
        last_run["phases_ms"] = {name: cp.cuda.get_elapsed_time(e0, e1)
                                 for (_, e0), (name, e1) in zip(marks, marks[1:])}
        _marks.clear()


def _cpu_elements(cp, av, bv, cv, d, hidx, n, kp, ops, kd, mdl):
    """Recompute elements on the CPU's exact numpy path (kernels._chain: TwoSum cascades, Fractions where
    needed), from the same decoded values, in chunks that bound the temporaries."""
    rows, cols = hidx // n, hidx % n
    chunk = max(1, (1 << 22) // max(1, kp))
    for s0 in range(0, hidx.size, chunk):
        r, c = rows[s0:s0 + chunk], cols[s0:s0 + chunk]
        with np.errstate(invalid="ignore"):  # signalling NaNs widen to NaNs: intended, no warning
            ar = av[cp.asarray(r)].get().astype(np.float64)
            bc = bv[:, cp.asarray(c)].get().astype(np.float64)
            acc0 = np.zeros(r.size) if cv is None else cv[cp.asarray(r), cp.asarray(c)].get().astype(np.float64)
        bits = KN._chain(lambda kk: ar[:, kk] * bc[kk], acc0, kp, ops, kd, mdl)
        d[cp.asarray(r), cp.asarray(c)] = cp.asarray(bits.astype(np.uint32))
