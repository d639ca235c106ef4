"""``systolic.amx.matmul``: a whole GEMM exactly as a tiled AMX kernel computes it.

The kernel being modelled (the usual AMX GEMM, and what
``method="instructions"`` literally runs on a :class:`TileMachine`):

* C is cut in blocks of 16 rows x 16 int32/fp32 columns (64 bytes), edges as
  partial tiles (fewer rows, smaller colsb);
* K is cut in tile-K blocks of 64 bytes (64 int8 or 32 bf16/fp16 values =
  16 dwords), the last one partial; K is zero-padded to whole dwords (4 int8 or
  2 16-bit values), as a kernel must pack it;
* for each C block and each K block in order: TDP* C, A, B - so C is carried
  from K block to K block, and every K block starts new fp32 chains.

Each output element depends only on its own row of A, column of B and C value,
so the M/N blocking does not change any result; the K blocking does (float).

Fast paths, both proven equal to ``method="instructions"`` by the tests:

* int8: integer arithmetic modulo 2^32 is associative, so the result is
  ``(C + A @ B) mod 2^32``. ``A @ B`` runs as float32 BLAS GEMMs on K chunks
  small enough that every product and every partial sum is an integer of at
  most 2^24 in magnitude (hence exact in fp32, in any summation order), summed
  in int64 (unsigned operands are first shifted to signed; see :func:`_int8`).
* bf16 / fp16: the chains run in a compiled kernel (:mod:`systolic.amx.gemm_jit`)
  for rows/columns whose inputs are finite; rows of A and columns of B holding
  an inf or NaN (and NaN C values) go through the vectorised numpy chains
  (:mod:`systolic.amx.fp_x86`), which follow the x86 NaN rules bit for bit.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from .. import backend_registry, counters, fpenv
from ..errors import InvalidOpcode, InvalidValue
from ..host import out_of_memory, refuse_beyond_memory
from ..jit import workers
from ..vocabulary import check_path, renamed
from . import fp_x86 as fp
from . import native_matmul
from . import isa
from .cpu import get_cpu

__all__ = ["matmul", "mnemonic_for", "check_arguments"]

TILE_ROWS = 16
TILE_BYTES = 64

@functools.cache
def _gemm_tmuls() -> dict[tuple[np.dtype, np.dtype], str]:
    """(A dtype, B dtype) -> TMUL, read from the instruction records (systolic.amx.isa.GEMM_TMULS: the plain
    AMX-INT8/BF16/FP16 dot products, TDPFP16PS before the complex TCMM*FP16PS)."""
    from .. import types as T
    return {(np.dtype(T.get(r.types[0]).dtype), np.dtype(T.get(r.types[1]).dtype)): r.mnemonic
            for r in isa.GEMM_TMULS}


def mnemonic_for(a_dtype, b_dtype) -> str:
    """The TMUL instruction a GEMM of these element types uses."""
    da, db = np.dtype(a_dtype), np.dtype(b_dtype)
    if (da, db) in _gemm_tmuls():
        return _gemm_tmuls()[(da, db)]
    raise InvalidValue("no AMX instruction multiplies these element types",
                       rule="int8/uint8 x int8/uint8 (TDPB*D), bfloat16 x bfloat16 (TDPBF16PS), "
                            "float16 x float16 (TDPFP16PS)", values={"a": str(da), "b": str(db)})


def matmul(a, b, c=None, *, device: str | None = None, path: str = "fast", method: str = "auto",
           threads: int | None = None, backend: str = "auto", **renamed_keywords):
    """``c + a @ b`` computed exactly as a tiled AMX kernel on CPU model ``device`` (default: sapphirerapids)
    computes it.

    ``a``: (M, K) int8/uint8 (signedness picks TDPBSSD/SUD/USD/UUD), bfloat16
    (ml_dtypes) or float16; ``b``: (K, N) of the matching kind; ``c``: (M, N)
    int32 (int8 GEMMs) or float32, zeros if omitted. Returns a new array.
    ``method``: ``"auto"`` (fast), ``"numpy"`` (vectorised chains, no compiled
    kernel), ``"instructions"`` (drive a TileMachine tile by tile - slow, the
    definition), ``"spec"`` (the same on the spec backend - slower still); ``path="spec"`` is ``method="spec"``.
    ``cpu=`` is the older name of ``device=`` (DeprecationWarning).
    ``backend``: ``"cpu"``, ``"cuda"`` (the CUDA kernels of :mod:`systolic.gpu`, bit-identical; inputs may
    be numpy arrays or GPU arrays - CuPy, PyTorch CUDA tensors, any ``__dlpack__`` / CUDA array interface
    object - and the result comes back as the same kind) or ``"auto"`` (cuda when an input lives on a GPU,
    else cpu). Without a usable GPU, ``"cuda"`` raises :class:`systolic.errors.BackendUnavailable`.

    >>> import numpy as np
    >>> matmul(np.full((2, 3), -128, np.int8), np.full((3, 2), -128, np.int8))[0, 0]
    np.int32(49152)
    """
    cpu, method = _vocabulary(device, path, method, renamed_keywords)
    where = backend_registry.resolve(backend, a, b, c)      # loads no provider for numpy inputs
    if where != "cpu":                   # a provider above the engines (systolic.gpu) registered its kernels
        return backend_registry.lookup("amx.matmul", where)(a, b, c, cpu=cpu, method=method, threads=threads)
    return _matmul_cpu(a, b, c, cpu=cpu, method=method, threads=threads)


def _vocabulary(device, path, method, old: dict):
    """(CPU model, method) from device= / path= and the older cpu= (systolic.vocabulary)."""
    if old:             # device=None: not given, so an older cpu= beside any given device= is InvalidValue
        device = renamed(old, {"cpu": "device"}, "amx.matmul", stacklevel=4, device=device)["device"]
    device = "sapphirerapids" if device is None else device
    if check_path(path, "amx.matmul") == "spec":
        if method not in ("auto", "spec"):
            raise InvalidValue("path='spec' runs the spec backend: it takes no other method",
                               rule="amx.matmul: path='spec' is method='spec'", values={"method": method})
        method = "spec"
    return device, method


@fpenv.guarded            # the CPU path only: the GPU kernels never read MXCSR (and the guard costs ~0.1 ms)
def _matmul_cpu(a, b, c, *, cpu, method, threads):
    a, b = np.asarray(a), np.asarray(b)
    c = None if c is None else np.asarray(c)
    mn, model, integer, cdt = check_arguments(a.shape, a.dtype, b.shape, b.dtype,
                                              None if c is None else (c.shape, c.dtype), cpu, method, threads)
    M, K = a.shape
    N = b.shape[1]
    per = 4 if integer else 2                      # elements per dword
    kp = -(-K // per) * per                        # K padded to whole dwords
    # a lower bound of the path's peak (tracemalloc, tests/test_memory_guard.py). Native AMX (where it will
    # run): B packed at its own element size (A is read in place) and the 4-byte result; the emulator paths:
    # int8 (jit.int_gemm) A and B as int16 (2 bytes an element: its packed copies), C as int32; floats A and B
    # as 32-bit words (the packed fp32 copies) and 4 bytes a result (C is read in place). The native bound is
    # the smaller: charging the emulator's on an AMX host refused GEMMs that fit (device call 9, this session)
    try:           # (the native check may run the self-check, whose emulator reference may run out of memory)
        # asked once per call: the guard's charge and the body's choice of path read the same answer
        native = bool(method == "auto" and M and N and kp and native_matmul.usable(mn, model.name)[0])
        if native and (integer or kp >= 32):       # (float K below one tile-K block runs on the emulator)
            need = a.dtype.itemsize * kp * N + 4 * M * N
        else:
            need = (2 * M * kp + 2 * kp * N + 4 * M * N) if integer else (4 * (M * kp + kp * N) + 4 * M * N)
        refuse_beyond_memory("amx.matmul", M, K, N, need)
        return _matmul_cpu_body(a, b, c, mn, model, integer, cdt, method, threads, per, kp, native)
    except MemoryError as e:
        raise out_of_memory("amx.matmul", M, K, N, e) from None


def _matmul_cpu_body(a, b, c, mn, model, integer, cdt, method, threads, per, kp, native):
    M, K = a.shape
    N = b.shape[1]
    c_given = c                                    # None: the native kernel starts from TILEZERO (no zero-filled C)
    if c is None and not (method == "auto" and M and N and kp):
        c = np.zeros((M, N), cdt)
    if kp != K:
        a = np.concatenate([a, np.zeros((M, kp - K), a.dtype)], axis=1)
        b = np.concatenate([b, np.zeros((kp - K, N), b.dtype)], axis=0)
    if method in ("instructions", "spec"):
        return _by_instructions(mn, a, b, c, model, "emulator" if method == "instructions" else "spec")
    if M == 0 or N == 0 or kp == 0:
        return c.copy()                            # no TMUL runs: C is returned untouched (no DAZ either)
    if native:
        out, kn = native_matmul.run(mn, a, b, c_given, threads)
        if out is not None:
            path = "native" if kn == kp else "native+emulator"
            count_tmuls(mn, M, N, kp // per, path=path)
            counters.note_path(f"amx.matmul {mn}", path)
            if kn == kp:
                return out
            # the partial last tile-K block on the emulator, from the native result (native_matmul.run)
            return _float(mn, a[:, kn:], b[kn:], out, method, threads)
    if c is None:
        c = np.zeros((M, N), cdt)
    count_tmuls(mn, M, N, kp // per, path="emulator")
    counters.note_path(f"amx.matmul {mn}", "emulator")
    if integer:
        return _int8(a, b, c_given, threads, compiled=method != "numpy")   # None: C starts from zero
    return _float(mn, a, b, c, method, threads)


def count_tmuls(mn: str, M: int, N: int, k_dwords: int, via: str = "matmul", path: str = "emulator") -> None:
    """Record the TMULs of an M x N GEMM over ``k_dwords`` dwords of K (systolic.counters), as the tile loop nest
    issues them (tiles of 16 rows x 16 dwords of C, K blocks of 16 dwords; edge tiles smaller). The CPU and the
    CUDA paths count the same; ``path`` says which implementation ran them (emulator, native, native+emulator;
    the CUDA path names its own)."""
    counters.count_tiling("amx", {"m": M, "n": N, "k_dwords": k_dwords}, {"m": TILE_ROWS, "n": 16, "k_dwords": 16},
                          partial=True, op=mn, via=via, path=path)


def check_arguments(a_shape, a_dtype, b_shape, b_dtype, c_meta, cpu, method, threads):
    """The argument rules of :func:`matmul`, on shapes and dtypes only (shared by the CPU and CUDA paths).

    ``c_meta``: ``(shape, dtype)`` of C or None. Returns ``(mnemonic, cpu model, integer?, C dtype)``.
    """
    if len(a_shape) != 2 or len(b_shape) != 2 or a_shape[1] != b_shape[0]:
        raise InvalidValue("matmul needs a (M, K) and b (K, N)", values={"a": tuple(a_shape), "b": tuple(b_shape)})
    mn = mnemonic_for(a_dtype, b_dtype)
    model = get_cpu(cpu)
    if not model.supports(mn):
        raise InvalidOpcode(f"{mn.upper()} is not available on {model.name}",
                            rule="CPUID feature flag of the instruction", values={"cpu": model.name, "instruction": mn})
    M, N = a_shape[0], b_shape[1]
    integer = mn.startswith("tdpb") and mn.endswith("d")
    cdt = np.dtype(np.int32) if integer else np.dtype(np.float32)
    if c_meta is not None:
        c_shape, c_dtype = c_meta
        if tuple(c_shape) != (M, N) or np.dtype(c_dtype) != cdt:
            raise InvalidValue(f"c must be ({M}, {N}) {cdt}", values={"shape": tuple(c_shape), "dtype": str(c_dtype)})
    if method not in ("auto", "numpy", "instructions", "spec"):
        raise InvalidValue("unknown matmul method", rule="auto, numpy, instructions, spec", values={"method": method})
    if threads is not None and (isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer))
                                or threads < 1):
        raise InvalidValue("threads is a positive integer (or None: one per CPU this process may run on, at most 8 "
                           "in the register-blocked kernel)",
                           values={"threads": threads})
    return mn, model, integer, cdt


# ---------------------------------------------------------------- the definition: loop the instructions

def _by_instructions(mn, a, b, c, model, backend) -> np.ndarray:
    from .machine import TileMachine
    from .tilecfg import TileConfig
    from ..packing import vnni_pack
    M, kp = a.shape
    N = b.shape[1]
    eb = a.dtype.itemsize                          # bytes per element (1 or 2)
    per = 4 // eb
    amem = np.ascontiguousarray(a).view(np.uint8).reshape(-1).copy()
    bits = 8 * eb
    bv = vnni_pack(b, bits) if kp else np.zeros((0, N), np.uint32)            # (kp/per, N) dwords
    bmem = np.ascontiguousarray(bv.astype("<u4")).view(np.uint8).reshape(-1).copy()
    cmem = np.ascontiguousarray(c).view(np.uint8).reshape(-1).copy()
    arow, brow, crow = kp * eb, 4 * N, 4 * N       # bytes per row of each image
    m = TileMachine(model, path="fast" if backend == "emulator" else "spec")
    kb_elems = TILE_BYTES // eb                    # K elements per tile-K block
    for m0 in range(0, M, TILE_ROWS):
        mr = min(TILE_ROWS, M - m0)
        for n0 in range(0, N, 16):
            nc = min(16, N - n0)
            for k0 in range(0, kp, kb_elems):
                kc = min(kb_elems, kp - k0)        # elements; a multiple of per
                m.ldtilecfg(TileConfig(tiles={0: (mr, 4 * nc), 1: (mr, kc * eb), 2: (kc // per, 4 * nc)}))
                m.tileloadd(0, cmem, m0 * crow + 4 * n0, crow)
                m.tileloadd(1, amem, m0 * arow + k0 * eb, arow)
                m.tileloadd(2, bmem, (k0 // per) * brow + 4 * n0, brow)
                m.execute(mn, 0, 1, 2)
                m.tilestored(0, cmem, m0 * crow + 4 * n0, crow)
    m.tilerelease()
    return cmem.view(c.dtype).reshape(M, N).copy()


# ---------------------------------------------------------------- int8: exact integer GEMM

def _int8(a, b, c, threads: int | None = None, compiled: bool = True) -> np.ndarray:
    """``(C + A @ B) mod 2^32`` exactly, with fp32 BLAS.

    Unsigned operands are shifted to signed ones (A = A_s + alpha, alpha in {0, 128}; the same for B),
    so every product is at most 2^14 in magnitude and a K chunk of 1024 keeps every partial sum of a
    chunk an integer of at most 2^24: exact in fp32 whatever order the BLAS adds in. The shift is undone
    exactly in int64: A @ B = A_s @ B_s + beta * rowsum(A_s) + alpha * colsum(B_s) + alpha * beta * K.
    """
    from ..jit import int_gemm
    if compiled and not os.environ.get("SYSTOLIC_NO_NATIVE") and int_gemm.available():
        # int8/uint8 values fit 16 bits: PMADDWD pairs, int32 lanes wrapping modulo 2**32 (systolic.jit.int_gemm);
        # method="numpy" (the native self-check's reference) keeps the BLAS chunks below
        return int_gemm.gemm(a, b, c, threads)
    if c is None:
        c = np.zeros((a.shape[0], b.shape[1]), np.int32)
    alpha = 128 if a.dtype == np.uint8 else 0
    beta = 128 if b.dtype == np.uint8 else 0
    a_s = a.astype(np.float32)
    b_s = b.astype(np.float32)
    if alpha:
        a_s -= alpha
    if beta:
        b_s -= beta
    K = a.shape[1]
    chunk = 1 << 10                                # 1024 * 128 * 128 = 2^24
    acc = None
    for k0 in range(0, K, chunk):
        part = (a_s[:, k0:k0 + chunk] @ b_s[k0:k0 + chunk]).astype(np.int64)
        acc = part if acc is None else acc + part
    if acc is None:
        acc = np.zeros(c.shape, np.int64)
    acc += c
    if beta:
        acc += beta * a_s.sum(axis=1, dtype=np.float64).astype(np.int64)[:, None]
    if alpha:
        acc += alpha * b_s.sum(axis=0, dtype=np.float64).astype(np.int64)[None, :]
    if alpha and beta:
        acc += alpha * beta * K
    return acc.astype(np.uint32).view(np.int32)   # int64 -> uint32 keeps the low 32 bits: mod 2^32


# ---------------------------------------------------------------- bf16 / fp16: the two chains

def _to_fp32_bits(x: np.ndarray, mn: str) -> np.ndarray:
    """fp32 bit patterns of the inputs as the FMAs read them (DAZ applied)."""
    w = np.ascontiguousarray(x).view(np.uint16)
    if mn != "tdpbf16ps":
        # exact (an fp16 denormal is a normal fp32 number: DAZ has nothing to do). A signalling NaN may come
        # out quieted (F16C does that); every FMA quiets its NaN operand anyway, so results are unchanged.
        return np.ascontiguousarray(w.view(np.float16).astype(np.float32)).view(np.uint32)
    # DAZ on the 16-bit words (a bf16 is denormal exactly when its fp32 image is), only if there is one
    if ((w & np.uint16(0x7FFF)) - np.uint16(1) < np.uint16(0x7F)).any():
        w = np.where((w & np.uint16(0x7F80)) == 0, w & np.uint16(0x8000), w)
    out = np.zeros(w.shape, np.uint32)
    out.view(np.uint16).reshape(*w.shape[:-1], -1)[..., 1::2] = w   # the bf16 in the upper half (little endian)
    return out


def _chains_numpy(a32: np.ndarray, b32: np.ndarray, c32: np.ndarray, kt: int) -> np.ndarray:
    """The chains, vectorised over (M, 2N) lanes with fp_x86.fma_vec (exact, NaN rules included); bits in/out."""
    M, kp = a32.shape
    N = b32.shape[1]
    k2 = kp // 2
    lane = np.arange(2 * N) % 2
    binter = np.empty((k2, 2 * N), np.uint32)     # row k: b[2k, n] at lane 2n, b[2k+1, n] at lane 2n+1
    binter[:, 0::2] = b32[0::2]
    binter[:, 1::2] = b32[1::2]
    out = c32.copy()
    for k0 in range(0, k2, kt):
        temp = np.zeros((M, 2 * N), np.uint32)
        for k in range(k0, min(k0 + kt, k2)):
            temp = fp.fma_vec(a32[:, 2 * k + lane], binter[k][None, :], temp)
        out = fp.add_vec(out, fp.add_vec(temp[:, 0::2], temp[:, 1::2]))
    return out


def _min_exponent(bits: np.ndarray) -> int | None:
    """Smallest biased exponent among the finite nonzero fp32 values (inputs are DAZ-flushed), None if none.

    One pass: (exponent field - 1) as an unsigned number puts zeros (field 0) at the top, so the minimum
    is the smallest nonzero exponent; inf/NaN (field 255) can only be the minimum when nothing else is.
    """
    if bits.size == 0:
        return None
    e = (bits & np.uint32(0x7F800000)) - np.uint32(0x00800000)
    m = int(e.min())
    if m >= 0x7F000000:                            # only zeros, infinities and NaNs
        return None
    return (m >> 23) + 1


def _ftz_possible(a32, b32, c32, mn: str) -> bool:
    """False when every chain value and C value is provably a multiple of 2^g with g >= -126.

    A value with biased exponent e is a multiple of 2^(e - 150 + z), z = the trailing zero bits its
    format guarantees in an fp32 significand (bf16: 16, fp16: 13, fp32: 0). Products are then multiples of
    2^(ga + gb); sums and 24-bit roundings of multiples of 2^g stay multiples of 2^g, so no result is ever
    below 2^-126 in magnitude: neither gradual underflow nor FTZ can occur and the kernel may skip its check.
    """
    return ftz_possible_from_exponents(_min_exponent(a32), _min_exponent(b32), _min_exponent(c32), mn)


def ftz_possible_from_exponents(ea: int | None, eb: int | None, ec: int | None, mn: str) -> bool:
    """:func:`_ftz_possible` from the smallest biased exponents of A, B and C (None: no nonzero value)."""
    z = 16 if mn == "tdpbf16ps" else 13
    g = []
    if ea is not None and eb is not None:
        g.append((ea - 150 + z) + (eb - 150 + z))
    if ec is not None:
        g.append(ec - 150)
    return bool(g) and min(g) < -126


def _packed_panels(b32: np.ndarray, parity: int, npad: int, group: int) -> np.ndarray:
    """Rows 2k + parity of B (fp32 bits), zero-padded to npad columns, in the kernel's column panels."""
    k2, n = b32.shape[0] // 2, b32.shape[1]
    out = np.zeros((npad // group, k2, group), np.uint32)
    src = b32[parity::2]
    full = n // group
    if full:
        out[:full] = src[:, :full * group].reshape(k2, full, group).transpose(1, 0, 2)
    if n % group:
        out[full, :, :n % group] = src[:, full * group:]
    return out.view(np.float32)


def _float(mn, a, b, c, method, threads) -> np.ndarray:
    from . import gemm_jit
    M, kp = a.shape
    N = b.shape[1]
    kt = TILE_BYTES // 4                           # 16 dwords of pairs per tile-K block
    if method != "numpy" and gemm_jit.available():
        # packing in compiled code; where no chain value can be tiny, the register-blocked kernel (gemm_jit)
        with gemm_jit.FastJob(mn, a, b, c, threads) as job:
            fast = not ftz_possible_from_exponents(job.ea, job.eb, job.ec, mn)
            out = job.run() if fast else None
        if fast:
            return _with_bad_lines(mn, a, b, c, out, job.bad_rows, job.bad_cols, kt)
    a32 = _to_fp32_bits(a, mn)
    b32 = _to_fp32_bits(b, mn)
    c32 = np.ascontiguousarray(c).view(np.uint32)
    if ((c32 & np.uint32(0x7FFFFFFF)) - np.uint32(1) < np.uint32(0x7FFFFF)).any():
        c32 = fp.daz_vec(c32)                      # DAZ: denormal accumulators read as signed zeros
    if method == "numpy" or not gemm_jit.available():
        return _chains_numpy(a32, b32, c32, kt).view(np.float32)
    exp = np.uint32(0x7F800000)
    bad_rows = np.nonzero(((a32 & exp) == exp).any(axis=1))[0]
    bad_cols = np.nonzero(((b32 & exp) == exp).any(axis=0))[0]
    G = gemm_jit.group()
    npad = -(-N // G) * G                           # the kernel works on groups of 32 (AVX-512: 64) columns
    bef, bof = _packed_panels(b32, 0, npad, G), _packed_panels(b32, 1, npad, G)
    if npad == N:
        out = c32.view(np.float32).copy()
    else:
        out = np.zeros((M, npad), np.float32)
        out[:, :N] = c32.view(np.float32)
    af = np.ascontiguousarray(a32).view(np.float32)
    check = _ftz_possible(a32, b32, c32, mn)
    nthreads = threads or workers.cpus()          # an explicit threads= wins; else the affinity mask's CPUs
    nthreads = max(1, min(nthreads, M // 16 or 1))
    # several row chunks per thread, handed out dynamically: a thread slowed by other work gets fewer
    nchunks = 1 if nthreads == 1 else min(4 * nthreads, max(1, M // 16))
    bounds = [M * i // nchunks for i in range(nchunks + 1)]

    def run(i):
        gemm_jit.chain_gemm(af, bef, bof, out, int(bounds[i]), int(bounds[i + 1]), kt, check=check)
    workers.for_each(run, range(nchunks), nthreads)   # the process's pool (jit.workers): no threads started per call
    if npad != N:
        out = np.ascontiguousarray(out[:, :N])
    ob = out.view(np.uint32)
    nan = np.isnan(out)
    if nan.any():
        ob[nan] = fp.DEFAULT_NAN                   # NaNs made from finite inputs are the default NaN
        cnan = np.isnan(c32.view(np.float32))
        ob[cnan] = c32[cnan] | np.uint32(fp.QUIET_BIT)  # dst is the first operand of every C + t
    if bad_rows.size:
        ob[bad_rows] = _chains_numpy(a32[bad_rows], b32, c32[bad_rows], kt)
    if bad_cols.size:
        ob[:, bad_cols] = _chains_numpy(a32, b32[:, bad_cols], c32[:, bad_cols], kt)
    return out


def _with_bad_lines(mn, a, b, c, out, bad_rows, bad_cols, kt) -> np.ndarray:
    """``out`` with the rows of A / columns of B that hold an inf or NaN recomputed by the numpy chains."""
    if bad_rows.size or bad_cols.size:
        a32, b32 = _to_fp32_bits(a, mn), _to_fp32_bits(b, mn)
        c32 = fp.daz_vec(np.ascontiguousarray(c).view(np.uint32))
        ob = out.view(np.uint32)
        if bad_rows.size:
            ob[bad_rows] = _chains_numpy(a32[bad_rows], b32, c32[bad_rows], kt)
        if bad_cols.size:
            ob[:, bad_cols] = _chains_numpy(a32, b32[:, bad_cols], c32[:, bad_cols], kt)
    return out


# the native path's self-check compares with the emulator: this module's numpy / compiled chains
native_matmul.register_emulator(lambda a, b, c, cpu: matmul(a, b, c, device=cpu, method="numpy"))
