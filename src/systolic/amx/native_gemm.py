"""Native AMX GEMM: a blocked tile micro-kernel generated as LLVM IR, JIT-compiled, called on numpy arrays.

The micro-kernel holds a 32x32 block of C in four accumulator tiles (tmm0-3, 2x2 tiles of 16x16 dwords),
streams two A tiles (tmm4-5: 16 rows x 64 bytes of A) and two B tiles (tmm6-7: 16 rows x 64 bytes of B
pre-packed in VNNI panels of 16 columns) per K step, and issues four TDP* per step::

    for n in [n0, n1) step 32:            # B panel pair reused for every m block of the region
      for m in [m0, m1) step 32:
        tmm0..3 = 0 (TILEZERO)             (or C, when accumulating)
        for s in 0 .. K*esize/64 - 1:      # K step: 32 bf16 or 64 int8 elements
          TILELOADD tmm4 <- A[m:m+16, s], tmm5 <- A[m+16:m+32, s]
          TILELOADD tmm6 <- Bp[n/16, s],  tmm7 <- Bp[n/16+1, s]
          TDP tmm0,tmm4,tmm6; TDP tmm1,tmm4,tmm7; TDP tmm2,tmm5,tmm6; TDP tmm3,tmm5,tmm7
        TILESTORED tmm0..3 -> C[m:m+32, n:n+32]

Every 16x16 tile of C is therefore the chain of TDP* instructions over the K blocks in increasing order,
starting from zero: exactly what the tile machine computes for the same blocking
(:func:`reference_blocked`), bit for bit, because a tile store/load round trip is exact. Regions of C
(``block_m`` rows x ``block_n`` columns) are spread over Python threads; each calls the kernel through
ctypes, which releases the GIL. Shapes are zero-padded to multiples of 32 (M, N) and of the K step.

Sources: SDM vol. 2 TDPBF16PS / TDPB[SU]{2}D (tile semantics), REFERENCE.md sections 6-7 (intrinsics).
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..errors import InvalidValue
from . import jit

__all__ = ["PackedB", "pack_b", "matmul", "reference_blocked", "KERNELS"]

#: (a dtype, b dtype) -> (mnemonic, element bytes, C dtype)
KERNELS = {
    ("bfloat16", "bfloat16"): ("tdpbf16ps", 2, np.float32),
    ("int8", "int8"): ("tdpbssd", 1, np.int32),
    ("int8", "uint8"): ("tdpbsud", 1, np.int32),
    ("uint8", "int8"): ("tdpbusd", 1, np.int32),
    ("uint8", "uint8"): ("tdpbuud", 1, np.int32),
}


def _kernel_ir(mnemonic: str) -> str:
    p = jit.ptr_type()
    intr = jit.DOT_INTRINSICS[mnemonic][0]
    return jit.declarations([mnemonic]) + f"""
define void @gemm({p} %cfg, {p} %A, i64 %lda, {p} %B, i64 %panel, {p} %C, i64 %ldc, i64 %ksteps,
                  i64 %m0, i64 %m1, i64 %n0, i64 %n1, i64 %acc) {{
entry:
  call void @llvm.x86.ldtilecfg({p} %cfg)
  %lda16 = mul i64 %lda, 16
  %ldc16 = mul i64 %ldc, 16
  %doacc = icmp ne i64 %acc, 0
  br label %nloop
nloop:
  %n = phi i64 [ %n0, %entry ], [ %nnext, %nlatch ]
  %np = udiv i64 %n, 16
  %boff0 = mul i64 %np, %panel
  %b0base = getelementptr i8, {p} %B, i64 %boff0
  %b1base = getelementptr i8, {p} %b0base, i64 %panel
  %cn = mul i64 %n, 4
  br label %mloop
mloop:
  %m = phi i64 [ %m0, %nloop ], [ %mnext, %mlatch ]
  %aoff = mul i64 %m, %lda
  %a0base = getelementptr i8, {p} %A, i64 %aoff
  %a1base = getelementptr i8, {p} %a0base, i64 %lda16
  %coff = mul i64 %m, %ldc
  %coff2 = add i64 %coff, %cn
  %c00 = getelementptr i8, {p} %C, i64 %coff2
  %c01 = getelementptr i8, {p} %c00, i64 64
  %c10 = getelementptr i8, {p} %c00, i64 %ldc16
  %c11 = getelementptr i8, {p} %c10, i64 64
  br i1 %doacc, label %loadc, label %zeroc
loadc:
  call void @llvm.x86.tileloadd64(i8 0, {p} %c00, i64 %ldc)
  call void @llvm.x86.tileloadd64(i8 1, {p} %c01, i64 %ldc)
  call void @llvm.x86.tileloadd64(i8 2, {p} %c10, i64 %ldc)
  call void @llvm.x86.tileloadd64(i8 3, {p} %c11, i64 %ldc)
  br label %kpre
zeroc:
  call void @llvm.x86.tilezero(i8 0)
  call void @llvm.x86.tilezero(i8 1)
  call void @llvm.x86.tilezero(i8 2)
  call void @llvm.x86.tilezero(i8 3)
  br label %kpre
kpre:
  br label %kloop
kloop:
  %s = phi i64 [ 0, %kpre ], [ %snext, %kloop ]
  %ao = mul i64 %s, 64
  %bo = mul i64 %s, 1024
  %pa0 = getelementptr i8, {p} %a0base, i64 %ao
  %pa1 = getelementptr i8, {p} %a1base, i64 %ao
  %pb0 = getelementptr i8, {p} %b0base, i64 %bo
  %pb1 = getelementptr i8, {p} %b1base, i64 %bo
  call void @llvm.x86.tileloadd64(i8 4, {p} %pa0, i64 %lda)
  call void @llvm.x86.tileloadd64(i8 6, {p} %pb0, i64 64)
  call void @{intr}(i8 0, i8 4, i8 6)
  call void @llvm.x86.tileloadd64(i8 7, {p} %pb1, i64 64)
  call void @{intr}(i8 1, i8 4, i8 7)
  call void @llvm.x86.tileloadd64(i8 5, {p} %pa1, i64 %lda)
  call void @{intr}(i8 2, i8 5, i8 6)
  call void @{intr}(i8 3, i8 5, i8 7)
  %snext = add i64 %s, 1
  %kmore = icmp ult i64 %snext, %ksteps
  br i1 %kmore, label %kloop, label %store
store:
  call void @llvm.x86.tilestored64(i8 0, {p} %c00, i64 %ldc)
  call void @llvm.x86.tilestored64(i8 1, {p} %c01, i64 %ldc)
  call void @llvm.x86.tilestored64(i8 2, {p} %c10, i64 %ldc)
  call void @llvm.x86.tilestored64(i8 3, {p} %c11, i64 %ldc)
  br label %mlatch
mlatch:
  %mnext = add i64 %m, 32
  %mmore = icmp ult i64 %mnext, %m1
  br i1 %mmore, label %mloop, label %nlatch
nlatch:
  %nnext = add i64 %n, 32
  %nmore = icmp ult i64 %nnext, %n1
  br i1 %nmore, label %nloop, label %done
done:
  call void @llvm.x86.tilerelease()
  ret void
}}
"""


def kernel_ir(mnemonic: str = "tdpbf16ps") -> str:
    """The LLVM IR of the GEMM micro-kernel for ``mnemonic`` (for ``emit_asm`` or inspection)."""
    if mnemonic not in {k[0] for k in KERNELS.values()}:
        raise InvalidValue("no GEMM kernel for this instruction", rule="native GEMM: " + ", ".join(
            sorted({k[0] for k in KERNELS.values()})), values={"mnemonic": mnemonic})
    return _kernel_ir(mnemonic)


_lock = threading.Lock()


@functools.lru_cache(maxsize=None)
def _compiled(mnemonic: str):
    from .native import require_native
    require_native()
    with _lock:
        mod = jit.JitModule(_kernel_ir(mnemonic))
        vp, i64 = ctypes.c_void_p, ctypes.c_int64
        f = mod.cfunc("gemm", None, vp, vp, i64, vp, i64, vp, i64, i64, i64, i64, i64, i64, i64)
        return mod, f


#: all eight tiles 16 rows x 64 bytes
_CFG = np.zeros(64, np.uint8)
_CFG[0] = 1
_CFG[16:32] = np.tile(np.array([64, 0], np.uint8), 8)
_CFG[48:56] = 16


def _dtype_name(a: np.ndarray) -> str:
    if a.dtype == ml_dtypes.bfloat16:
        return "bfloat16"
    return a.dtype.name


def _kstep(esize: int) -> int:
    return 64 // esize


@dataclass(frozen=True)
class PackedB:
    """B (K x N) pre-packed for the kernel: VNNI panels of 16 columns, each (Kp*esize/4 rows x 64 bytes)."""

    data: np.ndarray      # uint8, contiguous
    k: int                # logical K
    n: int                # logical N
    kp: int               # padded K (multiple of the K step)
    np_: int              # padded N (multiple of 32)
    dtype: str
    esize: int

    @property
    def panel_bytes(self) -> int:
        return self.kp * self.esize * 16


def pack_b(b: np.ndarray) -> PackedB:
    """Pack B (K x N, bf16 / int8 / uint8) into VNNI panels: panel j holds columns 16j..16j+15,
    row r of a panel = the (64/esize)... elements B[r*g:(r+1)*g, 16j:16j+16] interleaved (g = 4/esize)."""
    if b.ndim != 2:
        raise InvalidValue("B must be a matrix", rule="matmul: B is K x N", values={"shape": b.shape})
    esize = b.dtype.itemsize
    if esize not in (1, 2):
        raise InvalidValue("B must be bf16, int8 or uint8", values={"dtype": str(b.dtype)})
    k, n = b.shape
    step = _kstep(esize)
    kp = -(-k // step) * step
    npad = -(-n // 32) * 32
    g = 4 // esize
    bb = np.zeros((kp, npad), b.dtype)
    bb[:k, :n] = b
    # (kp/g, g, npad/16, 16) -> (npad/16, kp/g, 16, g): panel, k-group row, column, element within dword
    v = bb.reshape(kp // g, g, npad // 16, 16).transpose(2, 0, 3, 1)
    data = np.ascontiguousarray(v).view(np.uint8).reshape(-1)
    return PackedB(data, k, n, kp, npad, _dtype_name(b), esize)


_pools: dict[int, ThreadPoolExecutor] = {}


def _pool(n: int) -> ThreadPoolExecutor:
    if n not in _pools:
        _pools[n] = ThreadPoolExecutor(max_workers=n, thread_name_prefix="amx-gemm")
    return _pools[n]


def matmul(a: np.ndarray, b, *, threads: int | None = None, block_m: int = 128, block_n: int = 256,
           out: np.ndarray | None = None) -> np.ndarray:
    """C = A @ B on the AMX unit (A: M x K; B: K x N or a :class:`PackedB`).

    bf16 x bf16 -> fp32 (TDPBF16PS), int8/uint8 pairs -> int32 (TDPB[SU][SU]D, wrapping). ``threads``:
    Python threads over regions of ``block_m`` x ``block_n`` (default: all CPUs). Raises AmxUnavailable
    where the CPU cannot run it.
    """
    if a.ndim != 2:
        raise InvalidValue("A must be a matrix", rule="matmul: A is M x K", values={"shape": a.shape})
    pb = b if isinstance(b, PackedB) else pack_b(np.asarray(b))
    key = (_dtype_name(a), pb.dtype)
    if key not in KERNELS:
        raise InvalidValue("unsupported dtype pair", rule="native GEMM dtypes: " + ", ".join(
            f"{x}x{y}" for x, y in KERNELS), values={"a": key[0], "b": key[1]})
    if a.shape[1] != pb.k:
        raise InvalidValue("inner dimensions differ", rule="matmul: A.shape[1] == B.shape[0]",
                           values={"a": a.shape, "b": (pb.k, pb.n)})
    mnemonic, esize, cdt = KERNELS[key]
    _, f = _compiled(mnemonic)
    m, k = a.shape
    mp = -(-m // 32) * 32
    if mp != m or pb.kp != k or not a.flags.c_contiguous:
        ap = np.zeros((mp, pb.kp), a.dtype)
        ap[:m, :k] = a
    else:
        ap = a
    cp = np.empty((mp, pb.np_), cdt)
    lda, ldc = ap.strides[0], cp.strides[0]
    ksteps = pb.kp * esize // 64
    bm = max(32, block_m // 32 * 32)
    bn = max(32, block_n // 32 * 32)
    regions = [(m0, min(m0 + bm, mp), n0, min(n0 + bn, pb.np_)) for n0 in range(0, pb.np_, bn)
               for m0 in range(0, mp, bm)]
    pa, pbd, pc, pcfg = ap.ctypes.data, pb.data.ctypes.data, cp.ctypes.data, _CFG.ctypes.data
    panel = pb.panel_bytes

    def work(r):
        f(pcfg, pa, lda, pbd, panel, pc, ldc, ksteps, r[0], r[1], r[2], r[3], 0)

    nthreads = threads or os.cpu_count() or 1
    if nthreads == 1 or len(regions) == 1:
        for r in regions:
            work(r)
    else:
        list(_pool(nthreads).map(work, regions))
    res = cp[:m, :pb.n]
    if out is not None:
        out[...] = res
        return out
    return res if (mp == m and pb.np_ == pb.n) else np.ascontiguousarray(res)


def reference_blocked(a: np.ndarray, b: np.ndarray, machine_factory=None) -> np.ndarray:
    """The same product computed by the tile machine (emulator by default) with the kernel's blocking:
    each 16x16 tile of C is TILEZERO, then TDP* over the K blocks in increasing order, then TILESTORED.
    Slow (one machine instruction per tile per K block): for tests on small shapes."""
    from . import TileMachine, TileConfig
    key = (_dtype_name(a), _dtype_name(b))
    mnemonic, esize, cdt = KERNELS[key]
    step = _kstep(esize)
    m, k = a.shape
    n = b.shape[1]
    mp, kp, npad = -(-m // 16) * 16, -(-k // step) * step, -(-n // 16) * 16
    ap = np.zeros((mp, kp), a.dtype)
    ap[:m, :k] = a
    bp = np.zeros((kp, npad), b.dtype)
    bp[:k, :n] = b
    g = 4 // esize
    mach = machine_factory() if machine_factory else TileMachine()
    mach.ldtilecfg(TileConfig(palette=1, tiles={0: (16, 64), 1: (16, 64), 2: (16, 64)}))
    c = np.zeros((mp, npad), cdt)
    amem = ap.view(np.uint8).reshape(-1)
    # B rows of one K block in VNNI: (step/g rows) x (16 columns x g elements)
    for i in range(0, mp, 16):
        for j in range(0, npad, 16):
            mach.tilezero(0)
            for s in range(0, kp, step):
                mach.tileloadd(1, amem, (i * kp + s) * esize, kp * esize)
                blk = bp[s:s + step, j:j + 16].reshape(step // g, g, 16).transpose(0, 2, 1)
                bmem = np.ascontiguousarray(blk).view(np.uint8).reshape(-1)
                mach.tileloadd(2, bmem, 0, 64)
                getattr(mach, mnemonic)(0, 1, 2)
            cmem = np.zeros(1024, np.uint8)
            mach.tilestored(0, cmem, 0, 64)
            c[i:i + 16, j:j + 16] = cmem.view(cdt).reshape(16, 16)
    return c[:m, :n]
