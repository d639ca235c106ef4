"""Native AMX GEMM: a blocked tile micro-kernel generated as LLVM IR, JIT-compiled, called on numpy arrays.

The micro-kernel holds a 32x32 block of C in four accumulator tiles (tmm0-3, 2x2 tiles of 16x16 dwords),
streams two A tiles (tmm4-5: 16 rows x 64 bytes of A) and two B tiles (tmm6-7: 16 rows x 64 bytes of B
pre-packed in VNNI panels of 16 columns) per K step, and issues four TDP* per step. For each region of C
a worker takes::

    (pack the region's rows of A into tile-contiguous form by TILELOADD/TILESTORED, unless pack_a=False)
    for each K block [kb, kb + k_block) (one block with the whole K when k_block = 0):
      for each 32x32 block of the region (order "n": B pair outer, the region's A blocks inner; "m": the reverse):
        tmm0..3 = C given (first K block, accumulate) / 0 (first K block) / the worker's partial sums (later)
        for s in the K block:              # K step: 32 bf16 or 64 int8 elements
          TILELOADD tmm4 <- A[m:m+16, s], tmm6 <- Bp[n/16, s];  TDP tmm0, tmm4, tmm6
          TILELOADD tmm7 <- Bp[n/16+1, s];                      TDP tmm1, tmm4, tmm7
          TILELOADD tmm5 <- A[m+16:m+32, s];                    TDP tmm2, tmm5, tmm6;  TDP tmm3, tmm5, tmm7
          (prefetch the streamed operand's tiles ``prefetch`` steps ahead, when compiled in)
        TILESTORED tmm0..3 -> C[m:m+32, n:n+32] (last K block) / the partial-sum buffer (stride 64)

Every 16x16 tile of C is therefore the chain of TDP* instructions over the K steps in increasing order,
starting from zero (or the given C): exactly what the tile machine computes for the same blocking
(:func:`reference_blocked`, and ``systolic.amx.matmul``), bit for bit, because a tile store/load round
trip is exact. Shapes are zero-padded to multiples of 32 (M, N) and of the K step; zero products added to
a chain that starts at +0 change nothing.

Threads (default: the CPUs of the affinity mask, :func:`cpus`): with the static schedule the workers form a
grid over C (:func:`plan`, :func:`grid`) and each walks its rectangle; with the dynamic one every worker claims
the next region of a shared list by an atomic fetch-and-add. By default a resident pool of worker threads,
parked on Linux futexes inside JIT code (:func:`systolic.amx.native_gemm_ir.pool_module`, a futex word per
worker), runs the shares; the caller runs share 0; one ctypes call (GIL released) publishes the job and waits,
so no Python runs while the threads work. ``runtime="spawn"`` instead creates a binary tree of POSIX threads
for the call (``gemm_mt``). Defaults of the schedule options: :func:`tuning`.

Sources: SDM vol. 2 TDPBF16PS / TDPB[SU]{2}D (tile semantics), REFERENCE.md sections 6-7 (intrinsics).
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from .. import jit
from ..errors import InvalidValue
from ..jit.scratch import aligned_empty
from ..jit.workers import cpus
from . import isa, native_gemm_ir
from .native_gemm_ir import (CTRL_SHARES, CTRL_STOP, CTRL_WORKERS, FLAG_ACCUMULATE, FLAG_APAD_SHIFT, FLAG_KC_SHIFT,
                             FLAG_M_OUTER, FLAG_PACK_A, PACK_SLOTS, POOL_FN, SHARE_FIELDS)

__all__ = ["PackedB", "pack_b", "matmul", "reference_blocked", "KERNELS"]


def _kernels() -> dict[tuple[str, str], tuple[str, int, type]]:
    from .. import types as T
    out = {}
    for r in isa.GEMM_TMULS:
        ta, tb = T.get(r.types[0]), T.get(r.types[1])
        out[(np.dtype(ta.dtype).name, np.dtype(tb.dtype).name)] = (
            r.mnemonic, ta.storage_bits // 8, np.int32 if r.types[2] == "s32" else np.float32)
    return out


#: (a dtype, b dtype) -> (mnemonic, element bytes, C dtype), from the instruction records (amx/isa.py GEMM_TMULS:
#: TDPB*D, TDPBF16PS and TDPFP16PS, the last on AMX-FP16 hosts only)
KERNELS = _kernels()


def kernel_ir(mnemonic: str = "tdpbf16ps", prefetch: int = 0, micro: str = "row", t1: str = ""):
    """The GEMM micro-kernel module for ``mnemonic`` (an ``llvmlite.ir.Module``, built by
    :mod:`systolic.amx.native_gemm_ir`; for ``systolic.jit.emit_asm``, ``str()`` or inspection), with software
    prefetch ``prefetch`` K steps ahead (0: none), micro-kernel ``micro`` and TILELOADDT1 for the operands in
    ``t1`` (:func:`systolic.amx.native_gemm_ir.kernel_module`)."""
    if mnemonic not in {k[0] for k in KERNELS.values()}:
        raise InvalidValue("no GEMM kernel for this instruction", rule="native GEMM: " + ", ".join(
            sorted({k[0] for k in KERNELS.values()})), values={"mnemonic": mnemonic})
    return native_gemm_ir.kernel_module(mnemonic, prefetch=prefetch, micro=micro, t1=t1)


_lock = threading.Lock()


def _bind_pthreads() -> None:
    """Point the JIT's pthread_create / pthread_join / syscall at this process's C library (once, under the
    JIT lock: LLVM's symbol table is global)."""
    if _symbols_bound:
        return
    llvm = jit.llvm()
    libc = ctypes.CDLL(None)
    with jit.engine._lock:
        for name in ("pthread_create", "pthread_join", "syscall"):
            llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
    _symbols_bound.append(True)


_compiled_cache: dict = {}
_symbols_bound: list = []


def _require_native() -> None:
    from .native import require_native
    require_native()


def _compiled(mnemonic: str, prefetch: int = 0, micro: str = "row", t1: str = ""):
    """(module, gemm, gemm_mt) for ``mnemonic`` and the compile-time options (prefetch distance, micro-kernel,
    TILELOADDT1 operands): compiled once per process, kept for its lifetime (threads may be running the code),
    thread-safe."""
    _require_native()  # cached: cheap, and honours SYSTOLIC_NO_NATIVE even after a compile
    key = (mnemonic, prefetch, micro, t1)
    got = _compiled_cache.get(key)
    if got is not None:
        return got
    with _lock:
        got = _compiled_cache.get(key)
        if got is None:
            _bind_pthreads()
            mod = jit.compile_module(kernel_ir(mnemonic, prefetch, micro, t1), amx=True)
            vp, i64 = ctypes.c_void_p, ctypes.c_int64
            f = mod.cfunc("gemm", None, vp, vp, i64, vp, i64, vp, i64, i64, vp, i64, vp, i64, vp, vp, i64, vp)
            fmt = mod.cfunc("gemm_mt", None, vp, i64, vp)
            got = _compiled_cache[key] = (mod, f, fmt)
    return got


def _stop_workers(ctrl: np.ndarray, size: int, pid: int, lock: threading.Lock, threads: list) -> None:
    """Tell a pool's workers to return (stop flag, then each generation moved and woken) and join them. A no-op
    in a forked child (the workers are the parent's; the lock may have been copied held)."""
    if os.getpid() != pid:
        return
    with lock:
        ctrl[CTRL_STOP // 8] = 1
        libc = ctypes.CDLL(None)
        for w in range(1, size):
            g = ctrl[(CTRL_WORKERS + 64 * w) // 8:(CTRL_WORKERS + 64 * w) // 8 + 1].view(np.int32)
            g[0] += 1
            # FUTEX_WAKE_PRIVATE on the worker's generation word, through the C library
            libc.syscall(ctypes.c_long(202), ctypes.c_void_p(g.ctypes.data), ctypes.c_long(129), ctypes.c_int(1))
    for t in threads:
        t.join(timeout=1.0)


class _Pool:
    """Resident worker threads (``size - 1`` of them; the caller is worker 0), parked in pool_worker. They are
    told to return when the pool is collected or the interpreter exits (a finalizer that holds the control block,
    so no worker ever touches freed memory)."""

    def __init__(self, size: int):
        self.size = size
        self.pid = os.getpid()
        self.mod = jit.compile_module(native_gemm_ir.pool_module(), optimise=False)   # as tuned: no -O3 passes
        vp, i64 = ctypes.c_void_p, ctypes.c_int64
        self._run = self.mod.cfunc("pool_run", None, vp, i64)
        self._worker = self.mod.cfunc("pool_worker", None, vp, i64)
        self.ctrl = np.zeros((CTRL_WORKERS + 64 * size) // 8, np.int64)
        self.ctrl_at = self.ctrl.ctypes.data
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._worker, args=(self.ctrl.ctypes.data, w), daemon=True,
                                         name=f"amx-gemm-{w}") for w in range(1, size)]
        for t in self.threads:
            t.start()
        self._finalizer = weakref.finalize(self, _stop_workers, self.ctrl, size, self.pid, self.lock, self.threads)

    def run(self, shares: np.ndarray, address: int) -> None:
        """Run the len(shares) <= size shares (at ``address``): share 0 here, share w on worker w (only those
        are woken)."""
        if not 1 <= len(shares) <= self.size:
            # pool_run would index control words past the block (or loop 2**64 times on zero shares)
            raise InvalidValue("a pool job has 1 to size shares", rule="native GEMM pool: 1 <= shares <= workers",
                               values={"shares": len(shares), "size": self.size})
        with self.lock:
            self.ctrl[CTRL_SHARES // 8] = address
            self._run(self.ctrl_at, len(shares))

    def stop(self) -> None:
        self._finalizer()


_pool_obj: list = []


def _pool() -> _Pool:
    with _lock:
        _bind_pthreads()
        if _pool_obj and _pool_obj[0].pid != os.getpid():
            _pool_obj.clear()  # a forked child has the pool's memory but not its threads: start a new one
        if not _pool_obj:
            _pool_obj.append(_Pool(cpus()))
        return _pool_obj[0]


def _after_fork_in_child() -> None:
    """A child forked while another thread held the module lock (compiling, packing, making the pool) would
    deadlock on its first GEMM: it gets a fresh lock, and no pool (the parent's workers are not its own)."""
    global _lock
    _lock = threading.Lock()
    _pool_obj.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


#: all eight tiles 16 rows x 64 bytes
_CFG = np.zeros(64, np.uint8)
_CFG[0] = 1
_CFG[16:32] = np.tile(np.array([64, 0], np.uint8), 8)
_CFG[48:56] = 16
_CFG_AT = _CFG.ctypes.data


def _dtype_name(a: np.ndarray) -> str:
    return a.dtype.name          # ml_dtypes' bfloat16 is named "bfloat16"


def _kstep(esize: int) -> int:
    return 64 // esize


#: bytes of padding after every packed panel (B's VNNI panels, and the tile-contiguous copies of A's 16-row
#: panels). Without it, at K = 4096 every panel is a multiple of 64 KiB long, so the tiles of one K step in all
#: the panels of a block sit at the same virtual offset modulo the L2's set period (128 KiB: 2 MiB, 16 ways); one
#: tile of padding moves each panel's K window by 16 sets. That aliasing is real only where physical memory is
#: contiguous beyond 4 KiB (huge pages): the device host of call 6 had transparent huge pages on madvise only and
#: none in use, and there the padding measured within the noise (pad 1024 against 0 / 64 / 256 at 4096^3, 1 and
#: 16 workers: geometric mean 2.05 against 1.88 / 1.74 / 1.84 TOP/s, cells going either way;
#: benchmarks/results/native_gemm_wave2.md, call 6). Kept at one tile (it changes no bit, costs 1 KiB a panel,
#: and the final table of call 6 ran with it). A multiple of 64 (tile rows stay on cache lines). ``pad=`` per
#: call, or set here for the process.
PANEL_PAD = 1024


def _check_pad(pad) -> int:
    if pad is None:
        pad = PANEL_PAD
    if not isinstance(pad, (int, np.integer)) or pad < 0 or pad % 64 or pad >= 1 << 28:
        raise InvalidValue("panel padding must be a multiple of 64 bytes", rule="native GEMM pad: 0, 64, 128, ...",
                           values={"pad": pad})
    return int(pad)


@dataclass(frozen=True)
class PackedB:
    """B (K x N) pre-packed for the kernel: VNNI panels of 16 columns, each (Kp*esize/4 rows x 64 bytes), panel j
    from byte j * (panel_bytes + pad) of data (the padding bytes are zero)."""

    data: np.ndarray      # uint8, contiguous
    k: int                # logical K
    n: int                # logical N
    kp: int               # padded K (multiple of the K step)
    np_: int              # padded N (multiple of 32)
    dtype: str
    esize: int
    pad: int = 0          # bytes after each panel

    @property
    def panel_bytes(self) -> int:
        return self.kp * self.esize * 16

    @property
    def panel_stride(self) -> int:
        """Bytes from one panel to the next (the kernel's ``panel`` argument)."""
        return self.panel_bytes + self.pad

    def panels(self) -> np.ndarray:
        """The packed panels without their padding: (N / 16, panel_bytes) uint8 (a view)."""
        return np.lib.stride_tricks.as_strided(self.data, (self.np_ // 16, self.panel_bytes), (self.panel_stride, 1))


#: B of at least this many packed bytes is packed by the worker pool (smaller: on the calling thread). The
#: vector packer moves about 10 GB/s on one thread (1024 x 1024 bf16 in 0.2 ms), less than waking workers costs
#: where other threads hold the CPUs (device call 3: 0.7-1.5 ms through the pool on 2 CPUs beside OpenBLAS)
PACK_PARALLEL_BYTES = 8 << 20


def pack_b(b: np.ndarray, threads: int | None = None, pad: int | None = None) -> PackedB:
    """Pack B (K x N, bf16 / int8 / uint8) into VNNI panels: panel j holds columns 16j..16j+15,
    row r of a panel = the (64/esize)... elements B[r*g:(r+1)*g, 16j:16j+16] interleaved (g = 4/esize).

    The packing runs in compiled code (:func:`systolic.amx.native_gemm_ir.pack_module`), one pass over B with
    the zero padding written in place, split by rows over ``threads`` workers of the resident pool (default:
    :func:`cpus`) when B is large (:data:`PACK_PARALLEL_BYTES`); :func:`pack_b_numpy` is the same layout in
    numpy (the tests' oracle, and the path where llvmlite cannot JIT). ``pad``: zero bytes after every panel
    (default :data:`PANEL_PAD`; the layout of the panels themselves does not change)."""
    if b.ndim != 2:
        raise InvalidValue("B must be a matrix", rule="matmul: B is K x N", values={"shape": b.shape})
    if b.dtype.name not in {y for _, y in KERNELS}:
        raise InvalidValue(f"B must be one of {sorted({y for _, y in KERNELS})}",
                           rule="native GEMM dtypes: " + ", ".join(f"{x}x{y}" for x, y in KERNELS),
                           values={"dtype": str(b.dtype)})
    esize = b.dtype.itemsize
    pad = _check_pad(pad)
    k, n = b.shape
    step = _kstep(esize)
    kp = -(-k // step) * step
    npad = -(-n // 32) * 32
    fn = _pack_fn(esize)
    if fn is None:
        return pack_b_numpy(b, pad)
    if b.strides[1] != esize or b.strides[0] < 0:
        b = np.ascontiguousarray(b)
    stride = kp * esize * 16 + pad
    data = aligned_empty(npad // 16 * stride, np.uint8)
    if pad:
        data.reshape(npad // 16, stride)[:, stride - pad:] = 0
    src = b.ctypes.data if b.size else data.ctypes.data
    rows = kp * esize // 4
    parts = min(max(1, threads or cpus()), rows // 64) if data.size >= PACK_PARALLEL_BYTES else 1
    if parts > 1:
        pool = _pool()
        parts = min(parts, pool.size)
        shares = np.zeros((parts, SHARE_FIELDS), np.int64)
        cuts = _split(rows, parts)
        for name, v in (("src", src), ("dst", data.ctypes.data), ("ld", b.strides[0]), ("k", k), ("n", n),
                        ("kp", kp), ("npad", npad), ("stride", stride)):
            shares[:, PACK_SLOTS[name]] = v
        shares[:, PACK_SLOTS["r0"]] = cuts[:-1]
        shares[:, PACK_SLOTS["r1"]] = cuts[1:]
        shares[:, POOL_FN] = _pack_fns[esize][2]
        pool.run(shares, shares.ctypes.data)
    elif data.size:
        fn(src, b.strides[0], k, n, kp, npad, data.ctypes.data, stride)
    return PackedB(data, k, n, kp, npad, _dtype_name(b), esize, pad)


def pack_b_numpy(b: np.ndarray, pad: int | None = None) -> PackedB:
    """:func:`pack_b` written with numpy transposes (the same layout)."""
    pad = _check_pad(pad)
    esize = b.dtype.itemsize
    k, n = b.shape
    step = _kstep(esize)
    kp = -(-k // step) * step
    npad = -(-n // 32) * 32
    g = 4 // esize
    bb = np.zeros((kp, npad), b.dtype)
    bb[:k, :n] = b
    # (kp/g, g, npad/16, 16) -> (npad/16, kp/g, 16, g): panel, k-group row, column, element within dword
    v = bb.reshape(kp // g, g, npad // 16, 16).transpose(2, 0, 3, 1)
    pbytes = kp * esize * 16
    panels = np.ascontiguousarray(v).view(np.uint8).reshape(npad // 16, pbytes)
    data = np.zeros((npad // 16, pbytes + pad), np.uint8)
    data[:, :pbytes] = panels
    return PackedB(data.reshape(-1), k, n, kp, npad, _dtype_name(b), esize, pad)


_pack_fns: dict = {}


def _pack_fn(esize: int):
    """The compiled packer for ``esize``-byte elements (None where llvmlite cannot JIT here)."""
    if esize not in _pack_fns:
        with _lock:
            if esize not in _pack_fns:
                try:
                    mod = jit.compile_module(native_gemm_ir.pack_module(esize), vectorize=True)
                    i64 = ctypes.c_int64
                    _pack_fns[esize] = (mod, mod.cfunc(f"pack_b_{esize}", None, ctypes.c_void_p, i64, i64, i64,
                                                       i64, i64, ctypes.c_void_p, i64),
                                        mod.address(f"pack_b_{esize}_rows"))
                except (ImportError, RuntimeError):
                    _pack_fns[esize] = None
    got = _pack_fns[esize]
    return None if got is None else got[1]


_tls = threading.local()


def _bufs(kind: str, n: int, nbytes: int) -> np.ndarray:
    """The addresses (an int64 array) of ``n`` scratch buffers of ``nbytes`` (packed A rows, or partial sums of C
    between K blocks), one per worker, kept per calling thread between calls (so they are not page-faulted in
    again on every call, and concurrent callers do not share them)."""
    store = getattr(_tls, "bufs", None)
    if store is None:
        store = _tls.bufs = {}
    got = store.get(kind)
    if got is None or len(got[0]) < n or got[0][0].size < nbytes:
        old = got[0] if got else []
        size = max(nbytes, 64, old[0].size if old else 0)
        bufs = [aligned_empty(size, np.uint8) for _ in range(max(n, len(old)))]
        got = store[kind] = (bufs, np.array([x.ctypes.data for x in bufs], np.int64))
    return got[1]


@functools.lru_cache(maxsize=256)
def _work(mp: int, np_: int, threads: int, block_m, block_n, schedule: str):
    """(table, bm, bn, regions) for a call: table[w] = (address of worker w's regions, their count, w); the
    region arrays come along (the caller holds them during its call: the addresses stay valid). The dynamic
    schedule gives every worker the same list (claimed through the call's counter)."""
    if schedule == "dynamic":
        bm = max(32, (block_m or BLOCK_M) // 32 * 32)
        bn = max(32, (block_n or BLOCK_N) // 32 * 32)
        units = np.array([(x, min(x + bm, mp), y, min(y + bn, np_)) for x in range(0, mp, bm)
                          for y in range(0, np_, bn)], np.int64).reshape(-1, 4)
        regs = [units] * min(threads, len(units))
    else:
        shares, bm, bn = plan(mp, np_, threads, block_m, block_n)
        regs = [np.array(sh, np.int64).reshape(-1, 4) for sh in shares]
    table = np.array([(r.ctypes.data, len(r), w) for w, r in enumerate(regs)], np.int64)
    return table, bm, bn, regs


def _fn_address(f) -> int:
    got = _fn_addresses.get(id(f))
    if got is None or got[0] is not f:
        got = _fn_addresses[id(f)] = (f, ctypes.cast(f, ctypes.c_void_p).value)
    return got[1]


_fn_addresses: dict = {}


#: default region of C per K pass (rows x columns; see :func:`plan`)
BLOCK_M, BLOCK_N = 128, 512


#: at most this many (32 x 32 blocks of C) x (K steps) count as a small product (1024^3 bf16: 32 * 32 * 32;
#: 4096^3: 128 * 128 * 128 or * 64)
SMALL_WORK = 2 * 32 * 32 * 32


def tuning(mp: int, np_: int, ksteps: int, threads: int, esize: int) -> dict:
    """The default K block, loop order, prefetch distance, schedule and region size for a GEMM of a padded
    mp x np_ C over ``ksteps`` K steps on ``threads`` workers with ``esize``-byte elements, from the device
    sweeps (benchmarks/results/native_gemm_wave2.md; ``bench_native_gemm.py --sweep``). None of them changes a bit.

    * several workers on a small product: the dynamic schedule over 64 x 256 regions (workers woken late take
      fewer; 2 and 16 workers at 1024^3 gained 10-60% over the static rectangles), 32 x 256 over the whole K on
      8 or more workers (measured on 16: benchmarks/results/native_gemm_wave3.md, call 6);
    * otherwise the static rectangles of :func:`plan`, 128 x 512 regions;
    * bf16 on many workers: K blocks of 16 steps, B pair resident; int8 on many workers: whole K, prefetch 2;
      few workers on a short K: K blocks of 8 (16 on one worker), A pair resident;
    * bf16 on few workers, long K: K blocks of 8 steps, A pair resident, the column-first micro-kernel (device
      call 5: 0.44 TOP/s against 0.30 for the whole-K default at 4096^3 on one worker, same run; call 6's final
      table: 0.72 TOP/s, 1.56x oneDNN); else whole K.
    The micro-kernel stays "row" elsewhere and no operand is loaded with TILELOADDT1: the double-buffered "db"
    kernel ran the synthetic K step 3-4x faster than "row" (tdp_probe) but no faster inside the GEMM (call 5)."""
    small = (mp // 32) * (np_ // 32) * ksteps <= SMALL_WORK
    out = dict(micro="row", t1="", schedule="dynamic" if small and threads > 1 else "static",
               block_m=64 if small and threads > 1 else BLOCK_M, block_n=256 if small and threads > 1 else BLOCK_N)
    if threads >= 8:
        out.update(dict(k_block=16, order="n", prefetch=0) if esize == 2 else dict(k_block=0, order="n", prefetch=2))
        if small:
            # 32-row regions over the whole K (device call 6 of benchmarks/results/native_gemm_wave3.md, 1024^3 on
            # 16 workers only: above the previous default in all four rounds, 3-9%, and the best of ten
            # region/K-block variants in three of them)
            out.update(block_m=32, k_block=0)
    elif ksteps <= 32:
        out.update(dict(k_block=16, order="m", prefetch=2) if threads == 1 else dict(k_block=8, order="m", prefetch=0))
    elif esize == 2:
        out.update(k_block=8, order="m", prefetch=0, micro="col")
    else:
        out.update(k_block=0, order="n", prefetch=0)
    return out


def _split(total: int, parts: int) -> list[int]:
    """Cut points of ``total`` units into ``parts`` near-equal runs."""
    return [total * p // parts for p in range(parts + 1)]


def grid(mb: int, nb: int, threads: int) -> tuple[int, int]:
    """(rows, columns) of the worker grid over an mb x nb array of 32x32 blocks of C: rows * columns workers,
    each taking one rectangle, chosen to minimise what one worker reads (its rows of A plus its columns of B,
    mb / rows + nb / columns; on a tie, more row groups, since a column group packs its rows of A again); fewer
    workers when no factorisation fits."""
    threads = max(1, min(threads, mb * nb))
    while True:
        best = None
        for tr in range(1, threads + 1):
            tc, rem = divmod(threads, tr)
            if rem or tr > mb or tc > nb:
                continue
            cost = -(-mb // tr) + -(-nb // tc)
            if best is None or cost <= best[0]:    # ties: more row groups (each packs only its own rows of A)
                best = (cost, tr, tc)
        if best is not None:
            return best[1], best[2]
        threads -= 1


def plan(m: int, n: int, threads: int, block_m: int | None = None, block_n: int | None = None):
    """The work of a padded m x n C (multiples of 32) for ``threads`` workers: (shares, bm, bn), shares[w] the
    regions (m0, m1, n0, n1) of worker w.

    The workers form a grid (:func:`grid`); each owns one rectangle of C and walks it in regions of at most
    ``block_m`` x ``block_n`` (default :data:`BLOCK_M` x :data:`BLOCK_N`), row block by row block, so its
    consecutive regions share rows of A (packed once) and a worker reads only its rectangle's rows of A and
    columns of B."""
    bm = max(32, (block_m or BLOCK_M) // 32 * 32)
    bn = max(32, (block_n or BLOCK_N) // 32 * 32)
    mb, nb = m // 32, n // 32
    tr, tc = grid(mb, nb, threads)
    rs, cs = _split(mb, tr), _split(nb, tc)
    shares = []
    for i in range(tr):
        for j in range(tc):
            r0, r1, c0, c1 = 32 * rs[i], 32 * rs[i + 1], 32 * cs[j], 32 * cs[j + 1]
            shares.append([(x, min(x + bm, r1), y, min(y + bn, c1)) for x in range(r0, r1, bm)
                           for y in range(c0, c1, bn)])
    return shares, bm, bn


def _whole(name: str, v, low: int, step: int = 1) -> None:
    """An integer option, None (the default) or an int >= ``low`` and a multiple of ``step``: never rounded."""
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low or v % step):
        rule = f"native GEMM {name}: an integer >= {low}" + (f", a multiple of {step}" if step > 1 else "")
        raise InvalidValue(f"{name} must be an integer >= {low}" + (f" and a multiple of {step}" if step > 1 else ""),
                           rule=rule, values={name: v})


def _check_schedule_options(runtime, order, prefetch, micro, t1, schedule, threads=None, k_block=None,
                            block_m=None, block_n=None) -> None:
    """The schedule options of :func:`matmul` (none changes a bit): each outside its set is an InvalidValue."""
    _whole("threads", threads, 1)
    _whole("k_block", k_block, 0)
    _whole("prefetch", prefetch, 0)
    _whole("block_m", block_m, 32, 32)
    _whole("block_n", block_n, 32, 32)
    if runtime not in ("pool", "spawn"):
        raise InvalidValue("unknown runtime", rule="matmul runtime: pool, spawn", values={"runtime": runtime})
    if order not in (None, "n", "m"):
        raise InvalidValue("unknown loop order", rule="native GEMM order: n, m", values={"order": order})
    if prefetch is not None and not 0 <= int(prefetch) <= 15:
        raise InvalidValue("prefetch distance out of range", rule="native GEMM prefetch: 0..15 K steps",
                           values={"prefetch": prefetch})
    if micro not in (None,) + native_gemm_ir.MICRO_KERNELS:
        raise InvalidValue("unknown micro-kernel", rule="native GEMM micro: " + ", ".join(
            native_gemm_ir.MICRO_KERNELS), values={"micro": micro})
    if t1 is not None and (not isinstance(t1, str) or set(t1) - set("ab")):
        raise InvalidValue("t1 names the operands loaded with TILELOADDT1", rule="native GEMM t1: '', a, b, ab",
                           values={"t1": t1})
    if schedule not in (None, "static", "dynamic"):
        raise InvalidValue("unknown schedule", rule="native GEMM schedule: static, dynamic",
                           values={"schedule": schedule})


def _writes_into(out, a: np.ndarray, c, padded: bool, packed=None) -> bool:
    """Whether the kernel can store its tiles straight into the caller's ``out`` (no result buffer, no copy, no
    fresh pages to fault in): unpadded, rows of unit-stride elements on a non-negative row stride, and no memory
    possibly shared with A, C or packed B (the kernel reads them while other workers write; numpy's cautious
    overlap test: an exact one can take long on interleaved views, and a false alarm only costs a copy)."""
    return (out is not None and not padded and out.strides[1] == out.itemsize and out.strides[0] >= out.shape[1]
            * out.itemsize and out.flags.writeable
            and not any(x is not None and np.may_share_memory(out, x) for x in (a, c, packed)))


def _kernel_operands(a: np.ndarray, pb: PackedB, c, cdt, mp: int, out=None):
    """A as the kernel reads it (M padded to ``mp`` rows and K to the packed K, zeros; ``a`` itself where it
    already fits), the C the kernel writes (``out`` itself where :func:`_writes_into` allows), the C it starts
    from, and whether the result is a padded view."""
    m, k = a.shape
    if mp != m or pb.kp != k or not a.flags.c_contiguous:
        ap = aligned_empty((mp, pb.kp), a.dtype)
        ap[:m, :k] = a
        ap[m:] = 0
        ap[:m, k:] = 0
    else:
        ap = a
    padded = mp != m or pb.np_ != pb.n
    direct = _writes_into(out, a, c, padded, pb.data)
    if c is None:
        cp = out if direct else aligned_empty((mp, pb.np_), cdt)
        return ap, cp, cp, padded
    if padded or c.strides[1] != c.itemsize:
        cp = np.zeros((mp, pb.np_), cdt)
        cp[:m, :pb.n] = c
        return ap, cp, cp, padded
    # the kernel reads the caller's C in place and writes the sum to a buffer of its own (or to out)
    return ap, out if direct else aligned_empty((mp, pb.np_), cdt), c, padded


def _with_defaults(tuned: dict, k_block, order, prefetch, schedule, micro, t1, block_m, block_n):
    """The schedule options with :func:`tuning`'s choice for each one not given."""
    k_block = tuned["k_block"] if k_block is None else max(0, int(k_block))
    order = tuned["order"] if order is None else order
    prefetch = tuned["prefetch"] if prefetch is None else int(prefetch)
    schedule = tuned["schedule"] if schedule is None else schedule
    micro = tuned["micro"] if micro is None else micro
    t1 = tuned["t1"] if t1 is None else "".join(sorted(set(t1)))
    if block_m is None and block_n is None and schedule == tuned["schedule"]:
        block_m, block_n = tuned["block_m"], tuned["block_n"]
    return k_block, order, prefetch, schedule, micro, t1, block_m, block_n


def matmul(a: np.ndarray, b, *, threads: int | None = None, block_m: int | None = None,
           block_n: int | None = None, pack_a: bool = True, runtime: str = "pool", k_block: int | None = None,
           order: str | None = None, prefetch: int | None = None, schedule: str | None = None,
           micro: str | None = None, t1: str | None = None, pad: int | None = None, out: np.ndarray | None = None,
           c: np.ndarray | None = None) -> np.ndarray:
    """C = A @ B on the AMX unit (A: M x K; B: K x N or a :class:`PackedB`); with ``c`` (M x N, the C dtype),
    C = c + A @ B: the tiles start from c instead of zero (TDP* accumulates into its destination).

    bf16 x bf16 -> fp32 (TDPBF16PS), int8/uint8 pairs -> int32 (TDPB[SU][SU]D, wrapping). ``threads``:
    workers (default: the CPUs of this process's affinity mask, :func:`cpus`), laid out as a grid over C, each
    walking its rectangle in regions of ``block_m`` x ``block_n`` (:func:`plan`). ``pack_a``: copy each region's
    rows of A into tile-contiguous form first (by tile moves). ``runtime``: ``"pool"`` (resident worker threads
    parked on futexes, the default) or ``"spawn"`` (a tree of POSIX threads created for the call).
    ``k_block``: K steps (32 bf16 / 64 int8 each) per K block, 0 = the whole K at once; between K blocks the C
    tiles wait in a per-worker buffer (a tile store / load round trip: exact). ``order``: ``"n"`` (the B panel
    pair of a 32-column block stays while the region's 32-row blocks of A stream past) or ``"m"`` (the other
    way round). ``prefetch``: software prefetch of the streamed operand this many K steps ahead (0: none).
    ``schedule``: ``"static"`` (the workers' rectangles of :func:`plan`) or ``"dynamic"`` (regions of
    ``block_m`` x ``block_n`` claimed one at a time from a shared counter, so late-starting workers take fewer).
    ``micro``: the micro-kernel (``"row"``, ``"col"``: 2x2 C tiles, TDP order by rows or by columns; ``"db"``:
    each 16-column half of a 32x32 block in turn, operands double-buffered over alternate K steps). ``t1``: the
    operands (``"a"``, ``"b"``, ``"ab"``, ``""``) loaded with TILELOADDT1. ``pad``: bytes of padding after each
    packed panel of A (and of B when B is packed here; default :data:`PANEL_PAD`). ``out``: where the result goes
    (M x N, the C dtype); the tiles are stored straight into it where its rows are unit-stride and it shares no
    memory with ``a`` or ``c`` (no result buffer and no copy), else copied. The result does not depend on any of
    these: every 16 x 16 tile of C is the same chain of TDP* over the K
    steps in increasing order. Raises AmxUnavailable where the CPU cannot run it.
    """
    if a.ndim != 2:
        raise InvalidValue("A must be a matrix", rule="matmul: A is M x K", values={"shape": a.shape})
    pad = _check_pad(pad)
    pb = b if isinstance(b, PackedB) else pack_b(np.asarray(b), threads, pad)
    key = (_dtype_name(a), pb.dtype)
    if key not in KERNELS:
        raise InvalidValue("unsupported dtype pair", rule="native GEMM dtypes: " + ", ".join(
            f"{x}x{y}" for x, y in KERNELS), values={"a": key[0], "b": key[1]})
    if a.shape[1] != pb.k:
        raise InvalidValue("inner dimensions differ", rule="matmul: A.shape[1] == B.shape[0]",
                           values={"a": a.shape, "b": (pb.k, pb.n)})
    mnemonic, esize, cdt = KERNELS[key]
    m, k = a.shape
    if c is not None and (c.shape != (m, pb.n) or c.dtype != cdt):
        raise InvalidValue(f"c must be ({m}, {pb.n}) {np.dtype(cdt)}", rule="native GEMM: c is M x N of the C dtype",
                           values={"shape": c.shape, "dtype": str(c.dtype)})
    _check_schedule_options(runtime, order, prefetch, micro, t1, schedule, threads, k_block, block_m, block_n)
    if out is not None and (not isinstance(out, np.ndarray) or out.shape != (m, pb.n) or out.dtype != cdt
                            or not out.flags.writeable):
        raise InvalidValue(f"out must be a writeable ({m}, {pb.n}) {np.dtype(cdt)} array", rule="native GEMM: out "
                           "is a writeable M x N array of the C dtype", values={
                               "shape": getattr(out, "shape", None),
                               "dtype": str(getattr(out, "dtype", type(out).__name__)),
                               "writeable": bool(getattr(getattr(out, "flags", None), "writeable", False))})
    if m == 0 or pb.n == 0 or k == 0:
        # nothing to multiply (the kernel's loops run at least once): the empty sum is +0, or c untouched
        res = np.zeros((m, pb.n), cdt) if c is None else c.copy()
        if out is not None:
            out[...] = res
            return out
        return res
    _require_native()          # before any allocation or thread: AmxUnavailable says why
    mp = -(-m // 32) * 32
    ap, cp, cin, padded = _kernel_operands(a, pb, c, cdt, mp, out)
    lda, ldc = ap.strides[0], cp.strides[0]
    ksteps = pb.kp * esize // 64
    pool = _pool() if runtime == "pool" else None
    nthreads = max(1, threads or cpus())
    if pool is not None:
        nthreads = min(nthreads, pool.size)
    tuned = tuning(mp, pb.np_, ksteps, nthreads, esize)
    k_block, order, prefetch, schedule, micro, t1, block_m, block_n = _with_defaults(
        tuned, k_block, order, prefetch, schedule, micro, t1, block_m, block_n)
    _, f, fmt = _compiled(mnemonic, prefetch, micro, t1)
    table, bm, bn, _regions = _work(mp, pb.np_, nthreads, block_m, block_n, schedule)
    nthreads = len(table)
    counter = np.zeros(8, np.int64) if schedule == "dynamic" else None   # a cache line of its own
    kb = k_block if 0 < k_block < ksteps else 0
    abufs = _bufs("a", nthreads, bm // 16 * (ksteps * 1024 + pad) if pack_a else 0)
    cbufs = _bufs("c", nthreads, bm * bn * 4 if kb else 0)
    args = np.empty((nthreads, SHARE_FIELDS), np.int64)
    flags = ((FLAG_PACK_A if pack_a else 0) | (0 if c is None else FLAG_ACCUMULATE)
             | (FLAG_M_OUTER if order == "m" else 0) | (kb << FLAG_KC_SHIFT) | ((pad // 64) << FLAG_APAD_SHIFT))
    args_at = args.ctypes.data
    args[:] = (_CFG_AT, ap.ctypes.data, lda, pb.data.ctypes.data, pb.panel_stride, cp.ctypes.data, ldc, ksteps, 0, 0,
               0, flags, 0, cin.ctypes.data, cin.strides[0], 0 if counter is None else counter.ctypes.data, 0,
               nthreads, args_at, 0)
    # per worker: its regions and their count, its scratch buffers, its index (addresses cached: a numpy
    # array's .ctypes costs microseconds, and a call has a few dozen of them otherwise)
    args[:, 8:10] = table[:, 0:2]
    args[:, 10] = abufs[:nthreads]
    args[:, 12] = cbufs[:nthreads]
    args[:, 16] = table[:, 2]
    if pool is not None:
        args[:, POOL_FN] = _fn_address(f)
        pool.run(args, args_at)
    else:
        # one call: share 0 runs here, the others on POSIX threads created and joined inside (GIL released)
        tids = np.zeros(nthreads, np.uint64)
        args[:, 19] = tids.ctypes.data
        fmt(args_at, nthreads, tids.ctypes.data)
    res = cp[:m, :pb.n]
    if out is not None:
        if cp is not out:
            out[...] = res
        return out
    return np.ascontiguousarray(res) if padded else res


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
