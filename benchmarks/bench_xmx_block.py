"""The XMX block(L, F) model: its compiled kernel (systolic.xmx.native_block) against numpy's float32 matmul and
against the numpy path xmx.matmul took before, each ratio in one run.

    PYTHONPATH=src python3 benchmarks/bench_xmx_block.py [--size 1024] [--before-size 512] [--rounds 5] [--md FILE]

Part 1, at --size^3 (1024 by default): xmx.matmul with the block model (the compiled kernel, the path recorded by
counters.path_taken) timed interleaved with numpy's float32 matmul of the same shape, one call of each per round;
ratio = median(case) / median(numpy). Part 2, at --before-size^3 (512 by default: the numpy path takes about 10 s
a call there and over a minute at 1024^3): the same call with SYSTOLIC_NO_NATIVE=1 (the numpy path, what
xmx.matmul ran for block models before) against the compiled one, one call each, alternating, and numpy f32.
Every compiled result is checked bit for bit against the numpy path (part 2: the whole result; part 1: the first
8 rows). Inputs standard normal; the JIT compilation is done before timing (one warm-up call).
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

MODELS = ("block(16,24)", "block(8,24)", "block(2,12)")
PRECS = (("bf16", ml_dtypes.bfloat16), ("fp16", np.float16), ("tf32", np.float32))


def _call(x, y, model, prec, numpy_path=False):
    from systolic import xmx
    kw = {"precision": "tf32"} if prec == "tf32" else {}
    if not numpy_path:
        return xmx.matmul(x, y, model=model, **kw)
    os.environ["SYSTOLIC_NO_NATIVE"] = "1"
    try:
        return xmx.matmul(x, y, model=model, **kw)
    finally:
        del os.environ["SYSTOLIC_NO_NATIVE"]


def _timed(fn):
    t0 = time.perf_counter()
    r = fn()
    return time.perf_counter() - t0, r


def part1(n, rounds, rng, rows):
    from systolic import counters, jit
    for prec, dt in PRECS:
        x = rng.standard_normal((n, n)).astype(dt)
        y = rng.standard_normal((n, n)).astype(dt)
        xf, yf = x.astype(np.float32), y.astype(np.float32)
        for model in MODELS:
            _call(x[:8], y, model, prec)                      # JIT warm-up
            path = counters.path_taken(f"xmx.matmul {prec}x{prec}")
            tc, tn = [], []
            for _ in range(rounds):
                t, r = _timed(lambda: _call(x, y, model, prec))
                tc.append(t)
                tn.append(_timed(lambda: xf @ yf)[0])
            ok = np.array_equal(r[:8].view(np.uint32), _call(x[:8], y, model, prec, True).view(np.uint32))
            mc, mn = statistics.median(tc), statistics.median(tn)
            rows.append((f"{n}^3", prec, model, path, f"{mc * 1e3:.0f} ms", f"{mn * 1e3:.1f} ms",
                         f"{mc / mn:.1f}x", "-", "yes" if ok else "NO"))
            print(*rows[-1], f"(vector bits {jit.vector_bits()})", flush=True)


def part2(n, rng, rows):
    for prec, dt in PRECS:
        x = rng.standard_normal((n, n)).astype(dt)
        y = rng.standard_normal((n, n)).astype(dt)
        xf, yf = x.astype(np.float32), y.astype(np.float32)
        model = MODELS[0]
        _call(x[:8], y, model, prec)
        tb, rb = _timed(lambda: _call(x, y, model, prec, True))
        tc, rc = _timed(lambda: _call(x, y, model, prec))
        tn = statistics.median(_timed(lambda: xf @ yf)[0] for _ in range(5))
        ok = np.array_equal(rb.view(np.uint32), rc.view(np.uint32))
        rows.append((f"{n}^3", prec, model, "emulator -> jit-block", f"{tb * 1e3:.0f} -> {tc * 1e3:.0f} ms",
                     f"{tn * 1e3:.1f} ms", f"{tb / tn:.0f}x -> {tc / tn:.1f}x", f"{tb / tc:.0f}x",
                     "yes" if ok else "NO"))
        print(*rows[-1], flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--before-size", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--md", help="write the table as markdown to this file")
    args = ap.parse_args(argv)
    from systolic import jit
    rng = np.random.default_rng(2024)
    rows = []
    part1(args.size, args.rounds, rng, rows)
    part2(args.before_size, rng, rows)
    head = ("shape", "precision", "model", "path", "time", "numpy f32", "ratio vs numpy f32", "speed-up",
            "bit-identical")
    host = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, vector bits "
            f"{jit.vector_bits()}, load average {os.getloadavg()[0]:.1f}")
    md = [f"# XMX block(L, F) model: compiled kernel vs numpy f32 and the numpy path\n", f"Host: {host}\n",
          "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(md) + "\n"
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    print(text)
    return 0 if all(r[-1] == "yes" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
