"""XMX GEMM benchmark: systolic.xmx.matmul vs numpy float32 matmul on the same machine, as ratios.

    python benchmarks/bench_xmx.py [--size 1024] [--repeat 3] [--out benchmarks/results/xmx.md]

Each case is timed as the best of ``--repeat`` runs; the reference is numpy's float32 matmul of the same shape
(best of 5). Integer results are checked against an int64 oracle on the way (a benchmark of a wrong answer is
worthless). Targets (issue #6): int8 <= 2x, bf16 "stage" <= 4x.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import ml_dtypes
import numpy as np

from systolic.xmx import matmul, native


def best(fn, repeat):
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def best_cpu(fn, repeat):
    """Smallest CPU time (all threads of the process): less sensitive than wall time to other jobs' load."""
    t = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        t.append(time.process_time() - t0)
    return min(t)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--platform", default="pvc")
    ap.add_argument("--out", default=None, help="write a markdown table here")
    ap.add_argument("--quick", action="store_true", help="integer and bf16 stage only")
    args = ap.parse_args(argv)
    n = args.size
    rng = np.random.default_rng(0)
    a32 = rng.standard_normal((n, n)).astype(np.float32)
    b32 = rng.standard_normal((n, n)).astype(np.float32)
    a32 @ b32
    t_ref = best(lambda: a32 @ b32, 5)
    cases = []
    a8 = rng.integers(-128, 128, (n, n)).astype(np.int8)
    b8 = rng.integers(-128, 128, (n, n)).astype(np.int8)
    r = matmul(a8, b8, device=args.platform)
    assert np.array_equal(r, (a8.astype(np.int64) @ b8.astype(np.int64)).astype(np.int32))
    cases.append(("s8 x s8 -> int32", lambda: matmul(a8, b8, device=args.platform), 2.0))
    au = rng.integers(0, 256, (n, n)).astype(np.uint8)
    cases.append(("u8 x u8 -> int32", lambda: matmul(au, au, device=args.platform), None))
    abf, bbf = a32.astype(ml_dtypes.bfloat16), b32.astype(ml_dtypes.bfloat16)
    cases.append(('bf16 "stage"', lambda: matmul(abf, bbf, device=args.platform, model="stage"), 4.0))
    if not args.quick:
        ahf, bhf = a32.astype(np.float16), b32.astype(np.float16)
        cases.append(('fp16 "stage"', lambda: matmul(ahf, bhf, device=args.platform, model="stage"), None))
        cases.append(('bf16 "sequential"', lambda: matmul(abf, bbf, device=args.platform, model="sequential"),
                      None))
        cases.append(('tf32 "stage"', lambda: matmul(a32, b32, device=args.platform, model="stage",
                                                     precision="tf32"), None))
        cases.append(('bf16 "exact"', lambda: matmul(abf, bbf, device=args.platform, model="exact"), None))
    rows = []
    for name, fn, target in cases:
        fn()  # warm-up (JIT compilation of the native kernel)
        # the reference is re-timed next to each case: on a shared machine the load changes within a run
        ref = best(lambda: a32 @ b32, 5)
        t = best(fn, args.repeat)
        ref = min(ref, best(lambda: a32 @ b32, 5))
        cpu = best_cpu(fn, args.repeat)
        cref = best_cpu(lambda: a32 @ b32, 5)
        rows.append((name, t, ref, t / ref, cpu / cref, target))
        print(f"{name:22s} {t:8.3f} s  {t / ref:7.1f} x numpy ({ref * 1e3:.1f} ms); CPU time {cpu / cref:.1f} x"
              + (f"   (target <= {target}x)" if target else ""), flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [f"# XMX GEMM benchmark ({n} x {n} x {n})", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (load average "
             f"{load:.1f} at the end); numpy {np.__version__}; native kernel: "
             f"{'yes' if native.available() else 'no'}; platform model: {args.platform}.", "",
             "Reference: numpy float32 matmul of the same shape, re-timed around each case (best of 5 before and "
             f"5 after the case; the first reference of the run took {t_ref * 1e3:.1f} ms).", "",
             "CPU-time ratio: the process's CPU time (both threads) for the case over numpy's, best of each; it "
             "measures work and moves less with other jobs' load than the wall-time ratio.", "",
             "| case | time (s) | numpy f32 (ms) | ratio vs numpy f32 | CPU-time ratio | target |",
             "|---|---|---|---|---|---|"]
    for name, t, ref, ratio, cratio, target in rows:
        ok = "" if target is None else (f"<= {target}x " + ("met" if ratio <= target else "**not met**"))
        lines.append(f"| {name} | {t:.3f} | {ref * 1e3:.1f} | {ratio:.1f} | {cratio:.1f} | {ok} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return rows


if __name__ == "__main__":
    main()
