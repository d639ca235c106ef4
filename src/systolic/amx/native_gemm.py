"""Native AMX GEMM: a blocked tile micro-kernel generated as LLVM IR, JIT-compiled, called on numpy arrays.

The micro-kernel holds a 32x32 block of C in four accumulator tiles (tmm0-3, 2x2 tiles of 16x16 dwords),
streams two A tiles (tmm4-5: 16 rows x 64 bytes of A) and two B tiles (tmm6-7: 16 rows x 64 bytes of B
pre-packed in VNNI panels of 16 columns) per K step, and issues four TDP* per step. For each region of C
given to a worker::

    (pack the region's rows of A into tile-contiguous form by TILELOADD/TILESTORED, unless pack_a=False)
    for n in [n0, n1) step 32:            # B panel pair reused for every m block of the region
      for each K block [kb, kb + k_block) (one block with the whole K by default):
        for m in [m0, m1) step 32:
          tmm0..3 = 0 (TILEZERO) in the first K block, else TILELOADD them back from C
          for s in the K block:            # K step: 32 bf16 or 64 int8 elements
            TILELOADD tmm4 <- A[m:m+16, s], tmm5 <- A[m+16:m+32, s]
            TILELOADD tmm6 <- Bp[n/16, s],  tmm7 <- Bp[n/16+1, s]
            TDP tmm0,tmm4,tmm6; TDP tmm1,tmm4,tmm7; TDP tmm2,tmm5,tmm6; TDP tmm3,tmm5,tmm7
          TILESTORED tmm0..3 -> C[m:m+32, n:n+32]

Every 16x16 tile of C is therefore the chain of TDP* instructions over the K steps in increasing order,
starting from zero: exactly what the tile machine computes for the same blocking
(:func:`reference_blocked`, and ``systolic.amx.matmul``), bit for bit, because a tile store/load round
trip is exact. Shapes are zero-padded to multiples of 32 (M, N) and of the K step; zero products added to
a chain that starts at +0 change nothing.

Threads: regions of C (:func:`plan`) are dealt to workers in contiguous runs. By default a resident pool
of worker threads, parked on Linux futexes inside JIT code (:func:`pool_ir`), takes the runs; the caller
runs the first one; one ctypes call (GIL released) publishes the job and waits, so no Python runs while
the threads work. ``runtime="spawn"`` instead creates a binary tree of POSIX threads for the call
(``gemm_mt``).

Sources: SDM vol. 2 TDPBF16PS / TDPB[SU]{2}D (tile semantics), REFERENCE.md sections 6-7 (intrinsics).
"""

from __future__ import annotations

import ctypes
import os
import threading
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
; gemm(cfg, A, lda, Bp, panel, C, ldc, ksteps, regions, nregions, abuf, flags)
; flags: bit 0 = pack A; bits 8.. = K steps per K block (0: all). With K blocks, C tiles are stored after
; each block and loaded again for the next (an exact round trip), so a B panel slice stays in L1 while the
; region's row blocks pass it; the TDP chain of every C tile is unchanged.
; regions: nregions x (m0, m1, n0, n1) i64; with packa != 0 each region's rows of A are first copied by
; tile moves (TILELOADD stride lda -> TILESTORED stride 64) into abuf, one contiguous 1 KiB tile per K step,
; so the inner loop reads A tiles at stride 64 (no 4 KiB aliasing of rows, few pages); consecutive regions
; with the same rows (same m0 and m1) reuse the packed copy.
define void @gemm({p} %cfg, {p} %A, i64 %lda, {p} %B, i64 %panel, {p} %C, i64 %ldc, i64 %ksteps,
                  {p} %regions, i64 %nreg, {p} %abuf, i64 %packa) {{
entry:
  call void @llvm.x86.ldtilecfg({p} %cfg)
  %ldc16 = mul i64 %ldc, 16
  %packbit = and i64 %packa, 1
  %dopack = icmp ne i64 %packbit, 0
  %kcfield = lshr i64 %packa, 8
  %kcnone = icmp eq i64 %kcfield, 0
  %kc = select i1 %kcnone, i64 %ksteps, i64 %kcfield
  %astep = select i1 %dopack, i64 1024, i64 64
  %astride = select i1 %dopack, i64 64, i64 %lda
  %pstride = mul i64 %ksteps, 1024
  %apanel = select i1 %dopack, i64 %pstride, i64 0
  %lda16 = mul i64 %lda, 16
  %anext = select i1 %dopack, i64 %pstride, i64 %lda16
  %none = icmp eq i64 %nreg, 0
  br i1 %none, label %done, label %rloop
rloop:
  %r = phi i64 [ 0, %entry ], [ %rnext, %rlatch ]
  %prevm0 = phi i64 [ -1, %entry ], [ %m0, %rlatch ]
  %r4 = mul i64 %r, 4
  %q0 = getelementptr i64, {p} %regions, i64 %r4
  %m0 = load i64, {p} %q0
  %q1 = getelementptr i64, {p} %q0, i64 1
  %m1 = load i64, {p} %q1
  %q2 = getelementptr i64, {p} %q0, i64 2
  %n0 = load i64, {p} %q2
  %q3 = getelementptr i64, {p} %q0, i64 3
  %n1 = load i64, {p} %q3
  %newrows = icmp ne i64 %m0, %prevm0
  %packnow = and i1 %dopack, %newrows
  br i1 %packnow, label %ppanel, label %rbody
ppanel:
  %pm = phi i64 [ %m0, %rloop ], [ %pmnext, %ppanel_latch ]
  %pao = mul i64 %pm, %lda
  %pabase = getelementptr i8, {p} %A, i64 %pao
  %prow = sub i64 %pm, %m0
  %ppan = udiv i64 %prow, 16
  %pdo = mul i64 %ppan, %pstride
  %pdbase = getelementptr i8, {p} %abuf, i64 %pdo
  br label %pstep
pstep:
  %ps = phi i64 [ 0, %ppanel ], [ %psnext, %pstep ]
  %psa = mul i64 %ps, 64
  %psrc = getelementptr i8, {p} %pabase, i64 %psa
  %psd = mul i64 %ps, 1024
  %pdst = getelementptr i8, {p} %pdbase, i64 %psd
  call void @llvm.x86.tileloadd64(i8 4, {p} %psrc, i64 %lda)
  call void @llvm.x86.tilestored64(i8 4, {p} %pdst, i64 64)
  %psnext = add i64 %ps, 1
  %pmore = icmp ult i64 %psnext, %ksteps
  br i1 %pmore, label %pstep, label %ppanel_latch
ppanel_latch:
  %pmnext = add i64 %pm, 16
  %pmmore = icmp ult i64 %pmnext, %m1
  br i1 %pmmore, label %ppanel, label %rbody
rbody:
  br label %nloop
nloop:
  %n = phi i64 [ %n0, %rbody ], [ %nnext, %nlatch ]
  %np = udiv i64 %n, 16
  %boff0 = mul i64 %np, %panel
  %b0base = getelementptr i8, {p} %B, i64 %boff0
  %b1base = getelementptr i8, {p} %b0base, i64 %panel
  %cn = mul i64 %n, 4
  br label %kbloop
kbloop:
  %kb = phi i64 [ 0, %nloop ], [ %kbnext, %kblatch ]
  %kend0 = add i64 %kb, %kc
  %kover = icmp ugt i64 %kend0, %ksteps
  %kend = select i1 %kover, i64 %ksteps, i64 %kend0
  %first = icmp eq i64 %kb, 0
  br label %mloop
mloop:
  %m = phi i64 [ %m0, %kbloop ], [ %mnext, %store ]
  %mrel = sub i64 %m, %m0
  %mpan = udiv i64 %mrel, 16
  %aoffp = mul i64 %mpan, %apanel
  %aoffd = mul i64 %m, %lda
  %aoff = select i1 %dopack, i64 %aoffp, i64 %aoffd
  %abase = select i1 %dopack, {p} %abuf, {p} %A
  %a0base = getelementptr i8, {p} %abase, i64 %aoff
  %a1base = getelementptr i8, {p} %a0base, i64 %anext
  %coff = mul i64 %m, %ldc
  %coff2 = add i64 %coff, %cn
  %c00 = getelementptr i8, {p} %C, i64 %coff2
  %c01 = getelementptr i8, {p} %c00, i64 64
  %c10 = getelementptr i8, {p} %c00, i64 %ldc16
  %c11 = getelementptr i8, {p} %c10, i64 64
  br i1 %first, label %zeroc, label %loadc
zeroc:
  call void @llvm.x86.tilezero(i8 0)
  call void @llvm.x86.tilezero(i8 1)
  call void @llvm.x86.tilezero(i8 2)
  call void @llvm.x86.tilezero(i8 3)
  br label %kpre
loadc:
  call void @llvm.x86.tileloadd64(i8 0, {p} %c00, i64 %ldc)
  call void @llvm.x86.tileloadd64(i8 1, {p} %c01, i64 %ldc)
  call void @llvm.x86.tileloadd64(i8 2, {p} %c10, i64 %ldc)
  call void @llvm.x86.tileloadd64(i8 3, {p} %c11, i64 %ldc)
  br label %kpre
kpre:
  br label %kloop
kloop:
  %s = phi i64 [ %kb, %kpre ], [ %snext, %kloop ]
  %ao = mul i64 %s, %astep
  %bo = mul i64 %s, 1024
  %pa0 = getelementptr i8, {p} %a0base, i64 %ao
  %pa1 = getelementptr i8, {p} %a1base, i64 %ao
  %pb0 = getelementptr i8, {p} %b0base, i64 %bo
  %pb1 = getelementptr i8, {p} %b1base, i64 %bo
  call void @llvm.x86.tileloadd64(i8 4, {p} %pa0, i64 %astride)
  call void @llvm.x86.tileloadd64(i8 6, {p} %pb0, i64 64)
  call void @{intr}(i8 0, i8 4, i8 6)
  call void @llvm.x86.tileloadd64(i8 7, {p} %pb1, i64 64)
  call void @{intr}(i8 1, i8 4, i8 7)
  call void @llvm.x86.tileloadd64(i8 5, {p} %pa1, i64 %astride)
  call void @{intr}(i8 2, i8 5, i8 6)
  call void @{intr}(i8 3, i8 5, i8 7)
  %snext = add i64 %s, 1
  %kmore = icmp ult i64 %snext, %kend
  br i1 %kmore, label %kloop, label %store
store:
  call void @llvm.x86.tilestored64(i8 0, {p} %c00, i64 %ldc)
  call void @llvm.x86.tilestored64(i8 1, {p} %c01, i64 %ldc)
  call void @llvm.x86.tilestored64(i8 2, {p} %c10, i64 %ldc)
  call void @llvm.x86.tilestored64(i8 3, {p} %c11, i64 %ldc)
  %mnext = add i64 %m, 32
  %mmore = icmp ult i64 %mnext, %m1
  br i1 %mmore, label %mloop, label %kblatch
kblatch:
  %kbnext = add i64 %kb, %kc
  %kbmore = icmp ult i64 %kbnext, %ksteps
  br i1 %kbmore, label %kbloop, label %nlatch
nlatch:
  %nnext = add i64 %n, 32
  %nmore = icmp ult i64 %nnext, %n1
  br i1 %nmore, label %nloop, label %rlatch
rlatch:
  %rnext = add i64 %r, 1
  %rmore = icmp ult i64 %rnext, %nreg
  br i1 %rmore, label %rloop, label %done
done:
  call void @llvm.x86.tilerelease()
  ret void
}}
"""


#: i64 fields of one worker's share: the 12 arguments of @gemm, then its index, the worker count, the
#: address of share 0 and the address of the thread-id array
SHARE_FIELDS = 16


def _threads_ir() -> str:
    """gemm_mt(shares, n, tids): run ``n`` shares of work on a tree of POSIX threads: worker i first starts
    workers 2i+1 and 2i+2 (so thread creation takes log2(n) steps instead of n), then does its share, then
    joins its children. Worker 0 is the calling thread; a worker whose thread cannot be created runs on its
    parent. shares: n x SHARE_FIELDS i64."""
    p = jit.ptr_type()
    loads = "".join(f"  %q{i} = getelementptr i64, {p} %a, i64 {i}\n  %v{i} = load i64, {p} %q{i}\n"
                    for i in range(SHARE_FIELDS))
    ptrs = "".join(f"  %x{i} = inttoptr i64 %v{i} to {p}\n" for i in (0, 1, 3, 5, 8, 10, 14, 15))
    return f"""
declare i32 @pthread_create({p}, {p}, {p}, {p})
declare i32 @pthread_join(i64, {p})

define internal void @spawn(i64 %child, i64 %n, {p} %base, {p} %tids) {{
entry:
  %ok = icmp ult i64 %child, %n
  br i1 %ok, label %go, label %out
go:
  %off = mul i64 %child, {SHARE_FIELDS}
  %arg = getelementptr i64, {p} %base, i64 %off
  %tid = getelementptr i64, {p} %tids, i64 %child
  %rc = call i32 @pthread_create({p} %tid, {p} null, {p} @worker, {p} %arg)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %inline, label %out
inline:
  store i64 0, {p} %tid
  %r = call {p} @worker({p} %arg)
  br label %out
out:
  ret void
}}

define internal void @join(i64 %child, i64 %n, {p} %tids) {{
entry:
  %ok = icmp ult i64 %child, %n
  br i1 %ok, label %look, label %out
look:
  %tid = getelementptr i64, {p} %tids, i64 %child
  %t = load i64, {p} %tid
  %running = icmp ne i64 %t, 0
  br i1 %running, label %go, label %out
go:
  %r = call i32 @pthread_join(i64 %t, {p} null)
  br label %out
out:
  ret void
}}

define {p} @worker({p} %a) {{
{loads}{ptrs}  %i2 = mul i64 %v12, 2
  %c1 = add i64 %i2, 1
  %c2 = add i64 %i2, 2
  call void @spawn(i64 %c1, i64 %v13, {p} %x14, {p} %x15)
  call void @spawn(i64 %c2, i64 %v13, {p} %x14, {p} %x15)
  call void @gemm({p} %x0, {p} %x1, i64 %v2, {p} %x3, i64 %v4, {p} %x5, i64 %v6, i64 %v7, {p} %x8, i64 %v9,
                  {p} %x10, i64 %v11)
  call void @join(i64 %c1, i64 %v13, {p} %x15)
  call void @join(i64 %c2, i64 %v13, {p} %x15)
  ret {p} null
}}

define void @gemm_mt({p} %shares, i64 %n, {p} %tids) {{
  %r = call {p} @worker({p} %shares)
  ret void
}}
"""


#: control block of the resident worker pool (i64 slots; futex words are the low 32 bits of their slot)
CTRL_GEN, CTRL_PENDING, CTRL_SHARES, CTRL_N, CTRL_STOP, CTRL_DONE, CTRL_FIELDS = 0, 8, 16, 24, 32, 40, 64
#: in a pool share, slot 12 holds the address of the @gemm to call (the pool serves every kernel)
POOL_FN = 12


def pool_ir() -> str:
    """A resident pool of worker threads for the GEMM (Linux futexes; no Python while it works).

    pool_worker(ctrl, w): worker w waits (spins briefly, then FUTEX_WAIT) until the generation counter
    moves, runs share w if w < n (an indirect call of the share's @gemm), counts ``pending`` down and wakes
    the caller when it was the last; returns when ``stop`` is set.
    pool_run(ctrl): the caller publishes a job (shares, n already stored), bumps the generation, wakes
    the workers, runs share 0 itself and waits until every worker has reported."""
    p = jit.ptr_type()
    gemm_t = f"void ({p}, {p}, i64, {p}, i64, {p}, i64, i64, {p}, i64, {p}, i64)"
    loads = "".join(f"  %q{i} = getelementptr i64, {p} %sh, i64 {i}\n  %v{i} = load i64, {p} %q{i}\n"
                    for i in range(13))
    ptrs = "".join(f"  %x{i} = inttoptr i64 %v{i} to {p}\n" for i in (0, 1, 3, 5, 8, 10, 12))
    return f"""
declare i64 @syscall(i64, ...)
declare void @llvm.x86.sse2.pause()

define internal void @run_share({p} %shares, i64 %w) {{
  %off = mul i64 %w, {SHARE_FIELDS}
  %sh = getelementptr i64, {p} %shares, i64 %off
{loads}{ptrs}  call {gemm_t} %x12({p} %x0, {p} %x1, i64 %v2, {p} %x3, i64 %v4, {p} %x5, i64 %v6, i64 %v7,
                      {p} %x8, i64 %v9, {p} %x10, i64 %v11)
  ret void
}}

; wait until the i32 at %addr differs from %val: spin %spins times, then sleep in FUTEX_WAIT_PRIVATE
define internal i32 @wait_change({p} %addr, i32 %val, i64 %spins) {{
entry:
  br label %spin
spin:
  %i = phi i64 [ 0, %entry ], [ %inext, %again ]
  %cur = load atomic i32, {p} %addr acquire, align 4
  %moved = icmp ne i32 %cur, %val
  br i1 %moved, label %out, label %again
again:
  call void @llvm.x86.sse2.pause()
  %inext = add i64 %i, 1
  %more = icmp ult i64 %inext, %spins
  br i1 %more, label %spin, label %sleep
sleep:
  %cur2 = load atomic i32, {p} %addr acquire, align 4
  %moved2 = icmp ne i32 %cur2, %val
  br i1 %moved2, label %out2, label %dosleep
dosleep:
  %r = call i64 (i64, ...) @syscall(i64 202, {p} %addr, i64 128, i32 %val, {p} null)
  br label %sleep
out:
  ret i32 %cur
out2:
  ret i32 %cur2
}}

define internal void @wake({p} %addr, i32 %count) {{
  %r = call i64 (i64, ...) @syscall(i64 202, {p} %addr, i64 129, i32 %count)
  ret void
}}

define void @pool_worker({p} %ctrl, i64 %w) {{
entry:
  %genp = getelementptr i8, {p} %ctrl, i64 {CTRL_GEN}
  %pendp = getelementptr i8, {p} %ctrl, i64 {CTRL_PENDING}
  %sharesp = getelementptr i8, {p} %ctrl, i64 {CTRL_SHARES}
  %np = getelementptr i8, {p} %ctrl, i64 {CTRL_N}
  %stopp = getelementptr i8, {p} %ctrl, i64 {CTRL_STOP}
  %donep = getelementptr i8, {p} %ctrl, i64 {CTRL_DONE}
  br label %loop
loop:
  %seen = phi i32 [ 0, %entry ], [ %g, %next ]
  %g = call i32 @wait_change({p} %genp, i32 %seen, i64 20000)
  %stop = load atomic i64, {p} %stopp acquire, align 8
  %stopping = icmp ne i64 %stop, 0
  br i1 %stopping, label %exit, label %work
work:
  %n = load i64, {p} %np
  %mine = icmp ult i64 %w, %n
  br i1 %mine, label %run, label %finish
run:
  %shares = load {p}, {p} %sharesp
  call void @run_share({p} %shares, i64 %w)
  br label %finish
finish:
  %old = atomicrmw sub {p} %pendp, i64 1 acq_rel
  %last = icmp eq i64 %old, 1
  br i1 %last, label %signal, label %next
signal:
  store atomic i32 1, {p} %donep release, align 4
  call void @wake({p} %donep, i32 1)
  br label %next
next:
  br label %loop
exit:
  ret void
}}

; pool_run(ctrl, workers): shares and n are stored in ctrl by the caller; workers = threads in the pool
define void @pool_run({p} %ctrl, i64 %workers) {{
entry:
  %genp = getelementptr i8, {p} %ctrl, i64 {CTRL_GEN}
  %pendp = getelementptr i8, {p} %ctrl, i64 {CTRL_PENDING}
  %sharesp = getelementptr i8, {p} %ctrl, i64 {CTRL_SHARES}
  %donep = getelementptr i8, {p} %ctrl, i64 {CTRL_DONE}
  store atomic i64 %workers, {p} %pendp release, align 8
  store atomic i32 0, {p} %donep release, align 4
  %none = icmp eq i64 %workers, 0
  br i1 %none, label %mine, label %publish
publish:
  %old = atomicrmw add {p} %genp, i32 1 acq_rel
  call void @wake({p} %genp, i32 2147483647)
  br label %mine
mine:
  %shares = load {p}, {p} %sharesp
  call void @run_share({p} %shares, i64 0)
  br i1 %none, label %done, label %wait
wait:
  %d = call i32 @wait_change({p} %donep, i32 0, i64 200000)
  br label %done
done:
  ret void
}}
"""


def kernel_ir(mnemonic: str = "tdpbf16ps") -> str:
    """The LLVM IR of the GEMM micro-kernel for ``mnemonic`` (for ``emit_asm`` or inspection)."""
    if mnemonic not in {k[0] for k in KERNELS.values()}:
        raise InvalidValue("no GEMM kernel for this instruction", rule="native GEMM: " + ", ".join(
            sorted({k[0] for k in KERNELS.values()})), values={"mnemonic": mnemonic})
    return _kernel_ir(mnemonic) + _threads_ir()


_lock = threading.Lock()


def _bind_pthreads() -> None:
    """Point the JIT's pthread_create / pthread_join / syscall at this process's C library (once, under the
    JIT lock: LLVM's symbol table is global)."""
    if _symbols_bound:
        return
    import llvmlite.binding as llvm
    libc = ctypes.CDLL(None)
    with jit._lock:
        for name in ("pthread_create", "pthread_join", "syscall"):
            llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
    _symbols_bound.append(True)


_compiled_cache: dict = {}
_symbols_bound: list = []


def _compiled(mnemonic: str):
    """(module, gemm, gemm_mt) for ``mnemonic``: compiled once per process, kept for its lifetime (threads
    may be running the code), thread-safe."""
    from .native import require_native
    require_native()  # cached: cheap, and honours SYSTOLIC_NO_NATIVE even after a compile
    got = _compiled_cache.get(mnemonic)
    if got is not None:
        return got
    with _lock:
        got = _compiled_cache.get(mnemonic)
        if got is None:
            _bind_pthreads()
            mod = jit.JitModule(kernel_ir(mnemonic))
            vp, i64 = ctypes.c_void_p, ctypes.c_int64
            f = mod.cfunc("gemm", None, vp, vp, i64, vp, i64, vp, i64, i64, vp, i64, vp, i64)
            fmt = mod.cfunc("gemm_mt", None, vp, i64, vp)
            got = _compiled_cache[mnemonic] = (mod, f, fmt)
    return got


class _Pool:
    """Resident worker threads (``size - 1`` of them; the caller is worker 0), parked in pool_worker."""

    def __init__(self, size: int):
        self.size = size
        self.pid = os.getpid()
        self.mod = jit.JitModule(pool_ir())
        vp, i64 = ctypes.c_void_p, ctypes.c_int64
        self._run = self.mod.cfunc("pool_run", None, vp, i64)
        self._worker = self.mod.cfunc("pool_worker", None, vp, i64)
        self.ctrl = np.zeros(CTRL_FIELDS // 8, np.int64)
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._worker, args=(self.ctrl.ctypes.data, w), daemon=True,
                                         name=f"amx-gemm-{w}") for w in range(1, size)]
        for t in self.threads:
            t.start()

    def run(self, shares: np.ndarray) -> None:
        with self.lock:
            self.ctrl[CTRL_SHARES // 8] = shares.ctypes.data
            self.ctrl[CTRL_N // 8] = len(shares)
            self._run(self.ctrl.ctypes.data, self.size - 1)

    def stop(self) -> None:
        with self.lock:
            self.ctrl[CTRL_STOP // 8] = 1
            self.ctrl[CTRL_N // 8] = 0
            g = self.ctrl[CTRL_GEN // 8:CTRL_GEN // 8 + 1].view(np.int32)
            g[0] += 1
            libc = ctypes.CDLL(None)  # FUTEX_WAKE_PRIVATE on the generation word, through the C library
            libc.syscall(ctypes.c_long(202), ctypes.c_void_p(self.ctrl.ctypes.data), ctypes.c_long(129),
                         ctypes.c_int(2**31 - 1))
        for t in self.threads:
            t.join(timeout=1.0)


_pool_obj: list = []


def _pool() -> _Pool:
    with _lock:
        _bind_pthreads()
        if _pool_obj and _pool_obj[0].pid != os.getpid():
            _pool_obj.clear()  # a forked child has the pool's memory but not its threads: start a new one
        if not _pool_obj:
            import atexit
            pool = _Pool(max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                             else os.cpu_count() or 1))
            _pool_obj.append(pool)
            atexit.register(pool.stop)
        return _pool_obj[0]


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


_tls = threading.local()


def _abufs(n: int, nbytes: int) -> list[np.ndarray]:
    """``n`` buffers for packed A rows, one per worker, kept per calling thread between calls (so they are
    not page-faulted in again on every call, and concurrent callers do not share them)."""
    bufs = getattr(_tls, "abufs", None)
    if bufs is None or len(bufs) < n or bufs[0].size < nbytes:
        bufs = [np.empty(max(nbytes, 64), np.uint8) for _ in range(max(n, len(bufs or [])))]
        _tls.abufs = bufs
    return bufs


def plan(m: int, n: int, threads: int, block_m: int | None = None, block_n: int | None = None):
    """Regions (m0, m1, n0, n1) of a padded m x n C, and how they are dealt to ``threads`` workers.

    Default blocks: 128 x 512 (best of the sweeps in benchmarks/results/native_gemm.md), shrunk (to at least 32 x 32) until every worker has at least two regions,
    so small products still use all threads. Regions are listed row-block by row-block and dealt to the
    workers in contiguous runs, so a worker's consecutive regions share rows of A (packed once per run)."""
    bm = block_m or 128
    bn = block_n or 512
    if block_m is None and block_n is None:
        while (-(-m // bm)) * (-(-n // bn)) < 2 * threads and (bm > 32 or bn > 32):
            if bn >= bm and bn > 32:
                bn //= 2
            else:
                bm //= 2
    bm, bn = max(32, bm // 32 * 32), max(32, bn // 32 * 32)
    regions = [(m0, min(m0 + bm, m), n0, min(n0 + bn, n)) for m0 in range(0, m, bm) for n0 in range(0, n, bn)]
    return regions, bm, bn


def matmul(a: np.ndarray, b, *, threads: int | None = None, block_m: int | None = None,
           block_n: int | None = None, pack_a: bool = True, runtime: str = "pool", k_block: int = 0,
           out: np.ndarray | None = None) -> np.ndarray:
    """C = A @ B on the AMX unit (A: M x K; B: K x N or a :class:`PackedB`).

    bf16 x bf16 -> fp32 (TDPBF16PS), int8/uint8 pairs -> int32 (TDPB[SU][SU]D, wrapping). ``threads``:
    workers (POSIX threads created by the JIT code; default all CPUs) over regions of
    ``block_m`` x ``block_n`` of C (:func:`plan`). ``pack_a``: copy each region's rows of A into
    tile-contiguous form first (by tile moves). ``runtime``: ``"pool"`` (resident worker threads parked
    on futexes, the default) or ``"spawn"`` (a tree of POSIX threads created for the call). The result
    does not depend on threads, blocks, pack_a or runtime. ``k_block``: K steps (32 bf16 / 64 int8 each)
    per K block, 0 = the whole K at once; C is stored and reloaded between K blocks (exact), which
    changes nothing in the result either.
    Raises AmxUnavailable where the CPU cannot run it.
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
    m, k = a.shape
    if m == 0 or pb.n == 0 or k == 0:
        # nothing to multiply (the kernel's loops run at least once): the empty sum is +0
        res = np.zeros((m, pb.n), cdt)
        if out is not None:
            out[...] = res
            return out
        return res
    _, f, fmt = _compiled(mnemonic)
    mp = -(-m // 32) * 32
    if mp != m or pb.kp != k or not a.flags.c_contiguous:
        ap = np.zeros((mp, pb.kp), a.dtype)
        ap[:m, :k] = a
    else:
        ap = a
    cp = np.empty((mp, pb.np_), cdt)
    lda, ldc = ap.strides[0], cp.strides[0]
    ksteps = pb.kp * esize // 64
    if runtime not in ("pool", "spawn"):
        raise InvalidValue("unknown runtime", rule="matmul runtime: pool, spawn", values={"runtime": runtime})
    pool = _pool() if runtime == "pool" else None
    nthreads = max(1, threads or os.cpu_count() or 1)
    if pool is not None:
        nthreads = min(nthreads, pool.size)
    regions, bm, _ = plan(mp, pb.np_, nthreads, block_m, block_n)
    nthreads = min(nthreads, len(regions))
    reg = np.array(regions, np.int64).reshape(-1, 4)
    shares = [np.ascontiguousarray(x) for x in np.array_split(reg, nthreads)]
    abytes = bm * ksteps * 64 if pack_a else 0
    bufs = _abufs(nthreads, abytes)
    args = np.empty((nthreads, SHARE_FIELDS), np.int64)
    tids = np.zeros(nthreads, np.uint64)
    args[:] = (_CFG.ctypes.data, ap.ctypes.data, lda, pb.data.ctypes.data, pb.panel_bytes, cp.ctypes.data, ldc,
               ksteps, 0, 0, 0, (1 if pack_a else 0) | (max(0, int(k_block)) << 8), 0, nthreads, args.ctypes.data,
               tids.ctypes.data)
    for w, sh in enumerate(shares):
        args[w, 8], args[w, 9], args[w, 10], args[w, 12] = sh.ctypes.data, len(sh), bufs[w].ctypes.data, w
    if pool is not None:
        args[:, POOL_FN] = ctypes.cast(f, ctypes.c_void_p).value
        pool.run(args)
    else:
        # one call: share 0 runs here, the others on POSIX threads created and joined inside (GIL released)
        fmt(args.ctypes.data, nthreads, tids.ctypes.data)
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
