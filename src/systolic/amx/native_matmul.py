"""``amx.matmul`` on the host's own AMX unit, where that gives the emulator's bits.

:func:`systolic.amx.matmul` (``method="auto"``, CPU) runs a GEMM on native AMX (:mod:`systolic.amx.native_gemm`)
when all of these hold, and on the emulator otherwise:

* the environment does not turn it off: ``SYSTOLIC_NATIVE=0`` (or ``SYSTOLIC_NO_NATIVE=1``, which also
  refuses the native tile-machine backend); ``SYSTOLIC_NATIVE`` other than ``0``, ``1`` or empty is an
  :class:`~systolic.errors.InvalidValue`;
* this process can execute AMX (CPUID AMX-TILE, LLVM sees it, Linux granted XTILEDATA:
  :func:`systolic.amx.native.availability`) and the host has the instruction's extension (AMX-INT8, AMX-BF16,
  AMX-FP16);
* the requested CPU model's TMUL rules for that instruction are the host's: the emulator has one definition of
  each TMUL instruction, verified on Sapphire Rapids silicon (tests/data/amx_silicon) and shared by the models
  listed in :data:`SAME_RULES`; a model outside that list (Diamond Rapids: unverified) stays on the emulator;
* the per-process self-check of the instruction passed: at first use, 3840 dot products (2 x 48 x 40) of random
  values with specials (signed zeros, DAZ denormals, FTZ-range products, overflow, infinities, quiet and
  signalling NaNs; C with the same) are computed natively and by the emulator, and must agree bit for bit. A
  failure is remembered (:func:`status`) and the process stays on the emulator for that instruction.

The native kernel tiles C in 16 x 16 blocks and walks K in full tile-K blocks (64 bytes of A per row), starting
each C tile from the given C: the chain of TDP* instructions the emulator models for the same blocking. The last
K block, when K is not a multiple of the tile-K block (float instructions only: integer sums are exact in any
order, so padding with zeros changes nothing), runs on the emulator from the native result, since a partial
tile-K block does fewer FMAs than a zero-padded full one (an FTZ -0 chain plus +0 is +0).

Which path ran is recorded: :func:`systolic.counters.path_taken` and the ``path`` field of the ``amx`` counter
events; ``systolic info`` shows :func:`status`.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from .. import counters
from .. import types as T
from ..errors import InvalidValue
from . import isa

__all__ = ["ENV", "SAME_RULES", "enabled", "usable", "status", "run", "self_check"]

ENV = "SYSTOLIC_NATIVE"
#: CPU models whose TMUL instructions the emulator defines identically (the SPR-family AMX)
SAME_RULES = frozenset({"sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d"})
#: instruction -> native_gemm dtype pair (the native GEMM kernels)
_NATIVE = {r.mnemonic: tuple(np.dtype(T.get(t).dtype).name for t in r.types[:2]) for r in isa.GEMM_TMULS}
_KSTEP_BYTES = 64           # one tile-K block: 64 bytes of an A row (16 dwords)

_lock = threading.Lock()
_checks: dict[str, tuple[bool, str]] = {}
#: the emulator's amx.matmul (a, b, c, cpu) -> array, registered by systolic.amx.gemm (which imports this module)
_emulator: list = []


def register_emulator(fn) -> None:
    """Set the reference the self-check compares native AMX with (systolic.amx.gemm does, at import)."""
    _emulator[:] = [fn]


def enabled() -> tuple[bool, str]:
    """Whether the environment allows the native path (checked at every call: tests switch it).

    ``SYSTOLIC_NATIVE`` is ``0`` (off), ``1`` or unset/empty (on); any other value is refused with
    :class:`~systolic.errors.InvalidValue` rather than guessed (a typo such as ``off`` or ``no`` must not leave the
    native path on while the user believes it off)."""
    val = os.environ.get(ENV, "").strip()
    if val not in ("", "0", "1"):
        raise InvalidValue(f"{ENV} must be 0 (emulator only) or 1 (native AMX where usable)",
                           rule="native AMX switch of amx.matmul / integer xmx.matmul", values={ENV: val})
    if val == "0":
        return False, f"turned off by {ENV}=0"
    if os.environ.get("SYSTOLIC_NO_NATIVE", "") not in ("", "0"):
        return False, "turned off by SYSTOLIC_NO_NATIVE"
    return True, "on"


def _host_reason(mnemonic: str) -> str | None:
    """Why this host cannot run ``mnemonic`` natively, or None."""
    from . import native
    ok, why = native.availability()
    if not ok:
        return why
    if not native.host_supports(mnemonic):
        from .jit import DOT_INTRINSICS
        return f"the host has no {DOT_INTRINSICS[mnemonic][1]}"
    return None


def usable(mnemonic: str, model_name: str) -> tuple[bool, str]:
    """(True, "native") when amx.matmul may run ``mnemonic`` for CPU model ``model_name`` on native AMX here,
    else (False, why). Runs the instruction's self-check on first use."""
    ok, why = enabled()
    if not ok:
        return False, why
    if mnemonic not in _NATIVE:
        return False, f"no native GEMM kernel for {mnemonic}"
    if model_name not in SAME_RULES:
        return False, f"the {model_name} model's TMUL rules are not known to equal this host's"
    why = _host_reason(mnemonic)
    if why:
        return False, why
    passed, detail = self_check(mnemonic)
    return (True, "native") if passed else (False, f"self-check failed: {detail}")


# ------------------------------------------------------------------ the self-check

def _specials(mnemonic: str) -> np.ndarray:
    """Bit patterns of input specials (16-bit for bf16/fp16)."""
    if mnemonic == "tdpbf16ps":
        return np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x0001, 0x8040, 0x007F,
                         0x0080, 0x8080, 0x7F7F, 0xFF7F, 0x1F80, 0x9F80, 0x3F80, 0xBF80], np.uint16)
    return np.array([0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x7C01, 0x0001, 0x8200, 0x03FF,
                     0x0400, 0x8400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00], np.uint16)


def _c_specials() -> np.ndarray:
    return np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,
                     0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x0C000000, 0x8C000000],
                    np.uint32)


def _self_check_operands(mnemonic: str, seed: int):
    """A (48 x 3 tile-K blocks), B, C: random values, a tenth of them specials; rows of tiny and of huge values
    (FTZ and overflow ranges)."""
    import ml_dtypes
    rng = np.random.default_rng(seed)
    m, n = 48, 40
    if mnemonic in ("tdpbf16ps", "tdpfp16ps"):
        k = 3 * _KSTEP_BYTES // 2
        dt = ml_dtypes.bfloat16 if mnemonic == "tdpbf16ps" else np.float16
        a = rng.standard_normal((m, k)).astype(dt)
        b = rng.standard_normal((k, n)).astype(dt)
        if mnemonic == "tdpbf16ps":
            a[:8] = (rng.standard_normal((8, k)) * 2.0 ** -64).astype(dt)      # products near 2^-128: FTZ
            a[8:12] = (rng.standard_normal((4, k)) * 2.0 ** 100).astype(dt)    # sums beyond FLT_MAX
            b[:, :4] = (rng.standard_normal((k, 4)) * 2.0 ** 27).astype(dt)
        else:
            a[:8] = (rng.standard_normal((8, k)) * 2.0 ** -14).astype(dt)
            a[8:12] = (rng.standard_normal((4, k)) * 2.0 ** 15).astype(dt)
        sp = _specials(mnemonic)
        for x in (a, b):
            pick = rng.random(x.shape) < 0.1
            x.view(np.uint16)[pick] = rng.choice(sp, pick.sum())
        c = (rng.standard_normal((m, n)) * 2.0 ** rng.integers(-130, 100, (m, n))).astype(np.float32)
        pick = rng.random(c.shape) < 0.1
        c.view(np.uint32)[pick] = rng.choice(_c_specials(), pick.sum())
    else:
        k = 3 * _KSTEP_BYTES
        ta, tb = (np.dtype(x) for x in _NATIVE[mnemonic])
        a = rng.integers(np.iinfo(ta).min, np.iinfo(ta).max + 1, (m, k)).astype(ta)
        b = rng.integers(np.iinfo(tb).min, np.iinfo(tb).max + 1, (k, n)).astype(tb)
        a[0], b[:, 0] = np.iinfo(ta).min, np.iinfo(tb).min                      # the extreme products
        c = rng.integers(-2 ** 31, 2 ** 31, (m, n)).astype(np.int32)
        c[0, :4] = [2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1, -1]                        # wrap-around
    return a, b, c


def self_check(mnemonic: str) -> tuple[bool, str]:
    """Compare native AMX with the emulator on 3840 dot products with specials (once per process per
    instruction; the outcome is kept, except where the emulator's reference itself could not run: then
    (False, why) now and the next use checks again). Returns (passed, detail)."""
    with _lock:
        got = _checks.get(mnemonic)
        if got is not None:
            return got
        if not _emulator:
            # systolic.amx loads gemm lazily: a first native use through xmx.matmul (or this function called
            # directly) comes before it, and the check must not fail for want of its reference
            # systolic.amx.matmul (the package's lazy attribute) loads systolic.amx.gemm, which registers it
            from . import matmul  # noqa: F401
        # the check's own TMULs are not the caller's: kept out of any counters.recording() that is open
        with counters.suspended():
            # the reference first, outside the verdict: an emulator that cannot run now (out of memory, say)
            # says nothing about the hardware, so no outcome is kept (the next use checks again) and this call
            # takes the emulator path, which reports its own failure with the caller's shapes
            try:
                refs = _references(mnemonic, _emulator[0])
            except Exception as exc:
                return False, f"the emulator's reference could not run ({type(exc).__name__}: {exc}); not kept"
            try:
                from . import native_gemm
                bad, total = _compare(refs, native_gemm)
                got = (bad == 0, f"{total} dot products, {bad} differ" if bad else f"{total} dot products agree")
            except Exception as exc:  # a failing native call must leave the emulator working
                got = (False, f"{type(exc).__name__}: {exc}")
        _checks[mnemonic] = got
        return got


def _references(mnemonic, emulate) -> list:
    """The self-check's operands (two seeds) with the emulator's results (never the native path)."""
    cpu = "graniterapids" if mnemonic == "tdpfp16ps" else "sapphirerapids"
    out = []
    for seed in (1, 2):
        a, b, c = _self_check_operands(mnemonic, seed)
        out.append((a, b, c, emulate(a, b, c, cpu)))
    return out


def _compare(refs, native_gemm) -> tuple[int, int]:
    """(differing, total) dot products of the self-check's operands, native against the emulator."""
    bad = total = 0
    for a, b, c, want in refs:
        have = native_gemm.matmul(a, b, c=c, threads=1)
        total += want.size
        bad += int(np.count_nonzero(want.view(np.uint32) != have.view(np.uint32)))
    return bad, total


def status() -> dict:
    """Per instruction with a native kernel: whether amx.matmul would run it natively (for the SPR-family
    models) and why; the self-check outcome where it ran. For ``systolic info``; runs no self-check."""
    ok, why = enabled()
    out = {}
    for mn in _NATIVE:
        reason = why if not ok else _host_reason(mn)
        chk = _checks.get(mn)
        if reason is None:
            reason = "native" if chk is None or chk[0] else f"self-check failed: {chk[1]}"
        out[mn] = {"native": reason == "native", "reason": reason,
                   "self_check": None if chk is None else chk[1]}
    return out


# ------------------------------------------------------------------ the run

def run(mnemonic: str, a: np.ndarray, b: np.ndarray, c: np.ndarray | None, threads: int | None):
    """C + A @ B for amx.matmul (K already padded to whole dwords; C None: zero, the tiles start from TILEZERO,
    the same +0 a zero-filled C loads): the full tile-K blocks natively, a partial last one (float instructions)
    on the emulator from the native result. Returns the array and the number of K elements that ran natively."""
    from . import native_gemm
    esize = a.dtype.itemsize
    step = _KSTEP_BYTES // esize
    k = a.shape[1]
    integer = a.dtype.kind in "iu"
    kn = k if integer else k // step * step
    if kn == 0:
        return None, 0
    an = a if kn == k else a[:, :kn]
    bn = b if kn == k else b[:kn]
    if not an.flags.c_contiguous:
        an = np.ascontiguousarray(an)
    out = native_gemm.matmul(an, native_gemm.pack_b(bn), c=None if c is None else np.ascontiguousarray(c),
                             threads=threads)
    return out, kn
