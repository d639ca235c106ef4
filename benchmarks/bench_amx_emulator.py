"""AMX emulator GEMM benchmark: systolic.amx.matmul vs numpy float32 matmul on the same machine, as ratios.

    python benchmarks/bench_amx_emulator.py [--size 1024] [--repeat 7] [--out benchmarks/results/amx_emulator.md]

The emulated GEMM and numpy's float32 matmul of the same shape are timed *interleaved* (one of each per
round, ``--repeat`` rounds) and each is reported as its best time, so a busy machine slows both alike.
Every emulated result is checked on the way (int8 against an int64 oracle, bf16 against the instruction-
by-instruction definition on a corner of the matrix): a fast wrong answer is worthless.
Targets (issue #3): bf16 <= 4x and int8 <= 2x the float32 matmul time.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import ml_dtypes
import numpy as np

from systolic.amx import gemm_jit, matmul

TARGETS = {"int8": 2.0, "bf16": 4.0}


def interleaved(fn, ref, repeat):
    """Best wall time and best CPU time (all threads of the process) of fn and of ref, timed alternately."""
    w_fn, w_ref, c_fn, c_ref = [], [], [], []
    for _ in range(repeat):
        for f, w, c in ((fn, w_fn, c_fn), (ref, w_ref, c_ref)):
            t0, p0 = time.perf_counter(), time.process_time()
            f()
            w.append(time.perf_counter() - t0)
            c.append(time.process_time() - p0)
    return min(w_fn), min(w_ref), min(c_fn), min(c_ref)


def cases(n, rng):
    a8 = rng.integers(-128, 128, (n, n), dtype=np.int8)
    b8 = rng.integers(-128, 128, (n, n), dtype=np.int8)
    au = rng.integers(0, 256, (n, n), dtype=np.uint8)
    bf = ml_dtypes.bfloat16
    abf = rng.standard_normal((n, n)).astype(bf)
    bbf = rng.standard_normal((n, n)).astype(bf)
    cf = rng.standard_normal((n, n)).astype(np.float32)
    return [
        ("int8", "int8 x int8 -> int32 (TDPBSSD)", a8, b8, None),
        ("int8", "uint8 x int8 -> int32 (TDPBUSD)", au, b8, None),
        ("bf16", "bf16 x bf16 -> fp32 (TDPBF16PS), C = 0", abf, bbf, None),
        ("bf16", "bf16 x bf16 -> fp32 (TDPBF16PS), C random", abf, bbf, cf),
    ]


def check(kind, a, b, c, out):
    if kind == "int8":
        ref = a.astype(np.int64) @ b.astype(np.int64)
        assert (out == ref.astype(np.uint32).view(np.int32)).all(), "int8 GEMM differs from the int64 oracle"
    else:  # a 24 x (K) x 40 corner against the instruction loop (the definition)
        cc = None if c is None else c[:24, :40]
        ref = matmul(a[:24], b[:, :40], cc, method="instructions")
        assert (out[:24, :40].view(np.uint32) == ref.view(np.uint32)).all(), "bf16 GEMM differs from its definition"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default=None, help="write a markdown summary here")
    args = ap.parse_args(argv)
    n = args.size
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, n)).astype(np.float32)
    y = rng.standard_normal((n, n)).astype(np.float32)
    ref = lambda: x @ y  # noqa: E731
    ref()
    rows = []
    for kind, name, a, b, c in cases(n, rng):
        out = matmul(a, b, c)  # warm up (JIT compile) and check
        check(kind, a, b, c, out)
        t, tr, ct, ctr = interleaved(lambda: matmul(a, b, c), ref, args.repeat)
        ratio = t / tr
        rows.append((name, t, tr, ratio, ct / ctr, TARGETS[kind]))
        print(f"{name:45s} {t * 1e3:8.1f} ms  numpy f32 {tr * 1e3:7.1f} ms  ratio {ratio:5.2f} "
              f"(CPU time ratio {ct / ctr:5.2f})  target <= {TARGETS[kind]:.0f}x: "
              f"{'ok' if ratio <= TARGETS[kind] else 'MISSED'}")
    if args.out:
        load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",) * 3
        lines = [
            "# AMX emulator GEMM benchmark",
            "",
            f"`python benchmarks/bench_amx_emulator.py --size {n} --repeat {args.repeat}`: "
            f"{n}^3 GEMMs through `systolic.amx.matmul` (bit-exact AMX tiling) against numpy float32 matmul "
            "of the same shape, timed interleaved in one run (best of each).",
            "",
            f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, "
            f"numpy {np.__version__}, compiled chain kernel: {'yes' if gemm_jit.available() else 'no'}; "
            f"load average at the end {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}.",
            "",
            "| GEMM | emulated (ms) | numpy f32 (ms) | ratio (wall) | ratio (CPU time) | target |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, t, tr, ratio, cratio, target in rows:
            lines.append(f"| {name} | {t * 1e3:.1f} | {tr * 1e3:.1f} | {ratio:.2f} | {cratio:.2f} | <= {target:.0f} |")
        lines.append("")
        with open(args.out, "w") as f:
            f.write("\n".join(lines))


if __name__ == "__main__":
    main()
