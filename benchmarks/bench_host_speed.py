"""Issue 24's targets: the emulators at the host's full speed, as ratios to numpy float32 matmul in the same run.

    PYTHONPATH=src python3 benchmarks/bench_host_speed.py [--size 1024] [--rounds 5] [--peak] [--md FILE]

Cases (1024^3 by default; inputs standard normal, integers uniform over their range): amx.matmul int8 (TDPBSSD)
and bf16 (TDPBF16PS) with packing included (the call as a user makes it: native AMX where the host has it and
passes the self-check, else the emulator's compiled kernels), XMX s8 / u8 (xmx.matmul int: AMX-INT8 where
available), XMX bf16 / fp16 "sequential" and "stage" (the JIT kernels at the host's vector width). Each case is
timed interleaved with numpy's float32 matmul of the same shape (one call of each per round); the ratio is
median(case) / median(numpy). The path each case took (counters.path_taken) and the JIT vector width are printed.
``--pause S --warm`` (the float XMX rows' protocol, below): each timed call follows a rest of S seconds
(numpy's OpenBLAS threads spin ~0.1 s after each sgemm and would otherwise share the cores with the next case)
and one untimed call of the same function (numpy then runs with its threads awake). CPU-time ratios (all
threads of the process) are printed beside the wall ratios. Every result is checked on the way: integers
against int64 products, floats against the numpy path (SYSTOLIC_NATIVE=0 / the numpy chains) on a corner.
``--peak`` also probes the host's tile-resident AMX peak (TDP* on tiles that stay in registers, all CPUs) for
the percentage-of-peak figures of the native GEMM.
Targets (issue 24, the 2-vCPU machine): AMX int8 / bf16 <= 0.5x, XMX s8 / u8 <= 1.0x, XMX sequential <= 2x,
XMX stage <= 4x.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import ml_dtypes
import numpy as np

TARGETS = {"amx int8": 0.5, "amx bf16": 0.5, "xmx s8": 1.0, "xmx u8": 1.0, "xmx bf16 sequential": 2.0,
           "xmx fp16 sequential": 2.0, "xmx bf16 stage": 4.0, "xmx fp16 stage": 4.0}


#: Why the float XMX rows use ``--pause 0.25 --warm``: OpenBLAS's worker threads keep spinning for about 2**28
#: cycles (its thread timeout, ~0.1 s) after each sgemm, and a call made right after numpy shares the cores with
#: them (measured on the 2-vCPU machine: the XMX sequential GEMM 165-184 ms right after numpy, 90-104 ms after a
#: 0.3 s pause; in f24's first device call this penalised whichever case ran first after numpy). A pause alone
#: makes numpy's own call cold (10.5-12.4 ms on 2 Xeon cores where back-to-back calls took 7.9-10.9 ms; 8 ms
#: instead of 2.5 ms on 16 cores): ``--warm`` adds one untimed call of the same function after the pause, so
#: that each function is timed in its own steady state.
FLOAT_PROTOCOL = "--pause 0.25 --warm"


def interleaved(fn, ref, rounds, pause=0.0, warm=False):
    """(median wall time of fn, of ref, median CPU time of fn, of ref), fn and ref timed alternately; ``pause``
    seconds before each call (``--pause``: lets another library's spinning worker threads go idle first, e.g.
    OpenBLAS's after numpy's call); ``warm``: then one untimed call of the same function before the timed one.
    CPU time (all threads of the process) is less sensitive to other jobs on a shared machine."""
    fn(), ref()
    tf, tr, cf, cr = [], [], [], []
    for _ in range(rounds):
        for f, t, c in ((fn, tf, cf), (ref, tr, cr)):
            if pause:
                time.sleep(pause)
            if warm:
                f()
            c0, t0 = time.process_time(), time.perf_counter()
            f()
            t.append(time.perf_counter() - t0)
            c.append(time.process_time() - c0)
    return statistics.median(tf), statistics.median(tr), statistics.median(cf), statistics.median(cr)


def cases(n, rng):
    from systolic import amx, xmx
    a8, b8 = rng.integers(-128, 128, (n, n), dtype=np.int8), rng.integers(-128, 128, (n, n), dtype=np.int8)
    u8a, u8b = rng.integers(0, 256, (n, n), dtype=np.uint8), rng.integers(0, 256, (n, n), dtype=np.uint8)
    bfa = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    bfb = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    hfa = rng.standard_normal((n, n)).astype(np.float16)
    hfb = rng.standard_normal((n, n)).astype(np.float16)
    exact8 = a8[:64].astype(np.int64) @ b8.astype(np.int64)
    exactu = u8a[:64].astype(np.int64) @ u8b.astype(np.int64)
    return [
        ("amx int8", "amx.matmul tdpbssd", lambda: amx.matmul(a8, b8),
         lambda r: np.array_equal(r[:64], exact8.astype(np.int32))),
        ("amx bf16", "amx.matmul tdpbf16ps", lambda: amx.matmul(bfa, bfb),
         lambda r: np.array_equal(r[:32].view(np.uint32),
                                  amx.matmul(bfa[:32], bfb, method="numpy").view(np.uint32))),
        ("xmx s8", "xmx.matmul s8xs8", lambda: xmx.matmul(a8, b8),
         lambda r: np.array_equal(r[:64], exact8.astype(np.int32))),
        ("xmx u8", "xmx.matmul u8xu8", lambda: xmx.matmul(u8a, u8b),
         lambda r: np.array_equal(r[:64], exactu.astype(np.uint32).view(np.int32))),
        ("xmx bf16 sequential", None, lambda: xmx.matmul(bfa, bfb, model="sequential"),
         lambda r: _same_as_numpy_path(r, bfa, bfb, "sequential")),
        ("xmx fp16 sequential", None, lambda: xmx.matmul(hfa, hfb, model="sequential"),
         lambda r: _same_as_numpy_path(r, hfa, hfb, "sequential")),
        ("xmx bf16 stage", None, lambda: xmx.matmul(bfa, bfb, model="stage"),
         lambda r: _same_as_numpy_path(r, bfa, bfb, "stage")),
        ("xmx fp16 stage", None, lambda: xmx.matmul(hfa, hfb, model="stage"),
         lambda r: _same_as_numpy_path(r, hfa, hfb, "stage")),
    ]


def _same_as_numpy_path(r, a, b, model):
    """The first 8 rows against the numpy path (SYSTOLIC_NO_NATIVE: no compiled kernel)."""
    from systolic import xmx
    old = os.environ.get("SYSTOLIC_NO_NATIVE")
    os.environ["SYSTOLIC_NO_NATIVE"] = "1"
    try:
        want = xmx.matmul(a[:8], b, model=model)
    finally:
        if old is None:
            del os.environ["SYSTOLIC_NO_NATIVE"]
        else:
            os.environ["SYSTOLIC_NO_NATIVE"] = old
    return np.array_equal(np.asarray(r)[:8].view(np.uint32), want.view(np.uint32))


def tile_peak(mnemonic: str, threads: int, seconds: float = 0.3, tries: int = 3) -> float:
    """TDP* per second x operations per TDP*, all ``threads`` CPUs issuing TDP* on tiles that stay resident
    (four independent accumulator tiles, as in the GEMM's micro-kernel); the best of ``tries``."""
    import ctypes
    from concurrent.futures import ThreadPoolExecutor

    from llvmlite import ir

    from systolic import jit
    from systolic.amx.native import require_native
    from systolic.amx.native_gemm import _CFG
    from systolic.jit.build import I64, PTR, VOID, Loop, define
    from systolic.amx.isa import get as amx_record
    from systolic.jit.x86amx import Amx
    require_native()      # Linux grants this process the tile data (arch_prctl) before any tile instruction
    m = ir.Module(name="peak")
    amx = Amx(m)
    _, b, (cfg, buf, iters) = define(m, "peak", VOID, [PTR, PTR, I64])
    amx.ldtilecfg(b, cfg)
    for t in range(8):
        amx.tileloadd(b, t, buf, 64)
    lp = Loop(b, 0, iters, 1, name="it")
    for d, s1, s2 in ((0, 4, 6), (1, 4, 7), (2, 5, 6), (3, 5, 7)):
        amx.dot(b, amx_record(mnemonic).intrinsic, d, s1, s2)
    lp.close()
    amx.tilestored(b, 0, buf, 64)
    amx.tilerelease(b)
    b.ret_void()
    mod = jit.compile_module(m, amx=True)
    fn = mod.cfunc("peak", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    bufs = [np.zeros(1024, np.uint8) for _ in range(threads)]
    fn(_CFG.ctypes.data, bufs[0].ctypes.data, 1000)
    t0 = time.perf_counter()
    fn(_CFG.ctypes.data, bufs[0].ctypes.data, 100000)
    iters = max(100000, int(100000 * seconds / (time.perf_counter() - t0)))   # ~``seconds`` per thread
    import threading
    start = threading.Barrier(threads + 1)

    def work(i):
        start.wait()
        fn(_CFG.ctypes.data, bufs[i].ctypes.data, iters)
    best = None
    for _ in range(tries):        # the best of a few tries: a VM's neighbours only ever slow a try down
        with ThreadPoolExecutor(threads) as ex:
            futs = [ex.submit(work, i) for i in range(threads)]
            start.wait()              # every thread is up: time from the common start to the last one done
            t0 = time.perf_counter()
            for f in futs:
                f.result()
            dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    ops = 16 * 16 * (32 if mnemonic == "tdpbf16ps" else 64) * 2
    return threads * iters * 4 * ops / best


#: tdp_probe's working sets (bytes of A, bytes of B): both in L1, A in L1 and B in L2, both in L2, B beyond L2
PROBE_SETS = {"L1/L1": (8 << 10, 8 << 10), "L1/L2": (16 << 10, 512 << 10), "L2/L2": (512 << 10, 512 << 10),
              "L1/L3": (16 << 10, 32 << 20)}


def tdp_probe(mnemonic: str, pattern: str, a_bytes: int, b_bytes: int, seconds: float = 0.15) -> float:
    """One thread's rate of the GEMM micro-kernel's K step with its loads, on synthetic operands: TDP* per second
    (or, for pattern "loads", TILELOADD per second). Each step reads the next 2 KiB of A (wrapping in a_bytes) and
    the next 2 KiB (1 KiB for "db") of B (wrapping in b_bytes), stride 64, as packed operands.

    * "row": 2x2 C tiles (tmm0-3), A in tmm4-5, B in tmm6-7, TDP order 00 01 10 11 (the default micro-kernel);
    * "col": the same, order 00 10 01 11;
    * "db": two C tiles (tmm0-1), two A and one B tile per step in register sets alternating between steps
      (tmm2-4, tmm5-7): loads never reuse a register the previous step's TDPs read;
    * "loads": the "row" step's four loads without the TDPs.
    Against tile_peak (no loads), it separates the cost of the loads (L1, L2 or beyond) from the reuse of tile
    registers."""
    import ctypes

    from llvmlite import ir

    from systolic import jit
    from systolic.amx.isa import get as amx_record
    from systolic.amx.native import require_native
    from systolic.amx.native_gemm import _CFG, aligned_empty
    from systolic.jit.build import I8, I64, PTR, VOID, Loop, at, define, i64
    from systolic.jit.x86amx import Amx
    require_native()
    tmul = amx_record(mnemonic).intrinsic
    m = ir.Module(name=f"probe_{pattern}")
    amx = Amx(m)
    _, b, (cfg, abuf, bbuf, iters, amask, bmask) = define(m, "probe", VOID, [PTR, PTR, PTR, I64, I64, I64])
    amx.ldtilecfg(b, cfg)
    for t in range(8):
        amx.tilezero(b, t)
    lp = Loop(b, 0, iters, 2, name="it")
    for half in (0, 1):
        s = b.add(lp.index, i64(half))
        pa = at(b, I8, abuf, b.and_(b.mul(s, i64(2048)), amask))
        bstep = 1024 if pattern == "db" else 2048
        pb = at(b, I8, bbuf, b.and_(b.mul(s, i64(bstep)), bmask))
        pa1, pb1 = at(b, I8, pa, 1024), at(b, I8, pb, 1024)
        if pattern == "db":
            ta0, ta1, tb = (2, 3, 4) if half == 0 else (5, 6, 7)
            amx.tileloadd(b, ta0, pa, 64)
            amx.tileloadd(b, tb, pb, 64)
            amx.dot(b, tmul, 0, ta0, tb)
            amx.tileloadd(b, ta1, pa1, 64)
            amx.dot(b, tmul, 1, ta1, tb)
            continue
        amx.tileloadd(b, 4, pa, 64)
        amx.tileloadd(b, 6, pb, 64)
        steps = ((0, 4, 6), ("ld", 7, pb1), (1, 4, 7), ("ld", 5, pa1), (2, 5, 6), (3, 5, 7))
        if pattern == "col":
            steps = ((0, 4, 6), ("ld", 5, pa1), (2, 5, 6), ("ld", 7, pb1), (1, 4, 7), (3, 5, 7))
        for x, y, z in steps:
            if x == "ld":
                amx.tileloadd(b, y, z, 64)
            elif pattern != "loads":
                amx.dot(b, tmul, x, y, z)
    lp.close()
    amx.tilestored(b, 0, abuf, 64)
    amx.tilerelease(b)
    b.ret_void()
    mod = jit.compile_module(m, amx=True)
    fn = mod.cfunc("probe", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                   ctypes.c_int64)
    abuf_, bbuf_ = aligned_empty(a_bytes, np.uint8), aligned_empty(b_bytes, np.uint8)
    abuf_[:] = 0
    bbuf_[:] = 0

    def call(n):
        fn(_CFG.ctypes.data, abuf_.ctypes.data, bbuf_.ctypes.data, n, a_bytes - 1, b_bytes - 1)
    call(2000)
    t0 = time.perf_counter()
    call(20000)
    iters = max(20000, int(20000 * seconds / (time.perf_counter() - t0))) // 2 * 2
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        call(iters)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return iters * (2 if pattern == "db" else 4) / best


def breakdown(n, rng, ref, rounds, pause=0.0):
    """The native path's parts at n^3: native_gemm.matmul with B pre-packed, pack_b alone, and both."""
    from systolic.amx import native_gemm as G
    out = []
    for dt, a, b in (("int8", rng.integers(-128, 128, (n, n), dtype=np.int8),
                      rng.integers(-128, 128, (n, n), dtype=np.int8)),
                     ("bf16", rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16),
                      rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16))):
        pb = G.pack_b(b)
        for name, fn in ((f"{dt} native_gemm, B pre-packed", lambda: G.matmul(a, pb)),
                         (f"{dt} pack_b", lambda: G.pack_b(b)),
                         (f"{dt} native_gemm incl. pack_b", lambda: G.matmul(a, b))):
            t, r, _, _ = interleaved(fn, ref, rounds, pause)
            out.append((name, t, r))
            print(f"{name:36s} {t * 1e3:8.2f} ms  numpy f32 {r * 1e3:7.2f} ms  ratio {t / r:5.2f}x", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--peak", action="store_true")
    ap.add_argument("--only", default=None, help="comma list of case names (prefix match)")
    ap.add_argument("--md", default=None)
    ap.add_argument("--pause", type=float, default=0.0, help="seconds of sleep before every timed call")
    ap.add_argument("--warm", action="store_true",
                    help="after the pause, one untimed call of the same function (each timed in its steady state)")
    ap.add_argument("--breakdown", action="store_true",
                    help="AMX rows: also time the native GEMM's parts (B pre-packed, pack_b alone), interleaved")
    args = ap.parse_args(argv)
    from systolic import counters, host, jit
    n = args.size
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    ref = lambda: x @ y  # noqa: E731
    rows = []
    for name, key, fn, check in cases(n, rng):
        if args.only and not any(name.startswith(p) for p in args.only.split(",")):
            continue
        r0 = fn()
        path = counters.path_taken(key) if key else f"JIT {jit.vector_bits()}-bit"   # before the check's own calls
        ok = check(r0)
        t, r, ct, cr = interleaved(fn, ref, args.rounds, args.pause, args.warm)
        target = TARGETS[name]
        rows.append((name, t, r, t / r, ct / cr, target, path, ok))
        print(f"{name:22s} {t * 1e3:8.1f} ms  numpy f32 {r * 1e3:7.1f} ms  ratio {t / r:5.2f}x (CPU time "
              f"{ct / cr:5.2f}x; target <= {target}x) path {path}  bits ok {ok}", flush=True)
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if args.breakdown:
        rows_bd = breakdown(n, rng, ref, args.rounds, args.pause)
    lines = [f"CPU: {host.cpu_model_name()}, {ncpu} CPUs in the affinity mask ({os.cpu_count()} online), "
             f"AMX {host.amx_features() or 'none'}; JIT vector "
             f"width {jit.vector_bits()} bits; numpy {np.__version__}; Python {platform.python_version()}; "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             "Command: `PYTHONPATH=src python3 benchmarks/bench_host_speed.py " + " ".join(
                 argv if argv is not None else sys.argv[1:]) + "`", "",
             f"| case ({n}^3) | ms | numpy f32 ms | ratio | CPU-time ratio | target | path | bits checked |",
             "|---|---|---|---|---|---|---|---|"]
    for name, t, r, q, cq, target, path, ok in rows:
        lines.append(f"| {name} | {t * 1e3:.1f} | {r * 1e3:.1f} | {q:.2f}x | {cq:.2f}x | <= {target}x | {path} | "
                     f"{ok} |")
    if args.breakdown:
        lines += ["", "Native AMX parts (same run, each interleaved with numpy f32; ms, ratio to numpy):", ""]
        lines += [f"- {name}: {t * 1e3:.2f} ms (numpy {r * 1e3:.2f} ms, {t / r:.2f}x)" for name, t, r in rows_bd]
    if args.peak:
        lines += ["", "Tile-resident AMX peak (same run):", ""]
        for mn in ("tdpbf16ps", "tdpbssd"):
            for t in sorted({1, ncpu}):
                p = tile_peak(mn, t)
                lines.append(f"- {mn}, {t} thread(s): {p / 1e12:.2f} TOP/s")
                print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
