"""Register blocking of the XMX float kernels at the host's vector width: rows R x vectors V of accumulators.

    PYTHONPATH=src python3 benchmarks/bench_xmx_blocking.py [--size 1024] [--rounds 3] [--threads N]
        [--stage-blocks 6x2,8x2,4x4] [--seq-blocks 6x2,12x2,6x4,8x3,14x2]

Times ``native.fast_mma`` (bf16 and fp16 "stage", T = 2) and ``native.fma32_mma`` ("sequential") for several
(R, V) at the width systolic.jit.vector_bits() picks (SYSTOLIC_VECTOR_BITS to force one), interleaved in one run
with numpy's float32 matmul of the same shape, and checks every variant's result bits against the first. Used
to choose the defaults (xmx/native.py FAST_BLOCKS, SEQ_BLOCKS) per width.
"""

from __future__ import annotations

import argparse
import statistics
import time

import ml_dtypes
import numpy as np


def _blocks(text: str):
    return [tuple(int(x) for x in b.split("x")) for b in text.split(",") if b]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--stage-blocks", default="6x2,8x2,4x4")
    ap.add_argument("--seq-blocks", default="6x2,12x2,6x4,8x3,14x2")
    ap.add_argument("--settle", type=float, default=0.25, help="seconds of rest before each timed call")
    args = ap.parse_args(argv)
    from systolic import jit
    from systolic.xmx import native
    n = args.size
    rng = np.random.default_rng(0)
    bf = [rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16).astype(np.float32) for _ in range(2)]
    hf = [rng.standard_normal((n, n)).astype(np.float16).astype(np.float32) for _ in range(2)]
    x, y = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    print(f"vector width {jit.vector_bits()} bits, n = {n}, threads {args.threads or 'all'}")
    for label, (a, b), call, blocks in (
            ("bf16 stage", bf, lambda a, b, R, V: native.fast_mma(a, b, None, 2, sig_bits=(8, 8), R=R, V=V,
                                                                  threads=args.threads),
             _blocks(args.stage_blocks)),
            ("fp16 stage", hf, lambda a, b, R, V: native.fast_mma(a, b, None, 2, sig_bits=(11, 11), R=R, V=V,
                                                                  threads=args.threads),
             _blocks(args.stage_blocks)),
            ("sequential", bf, lambda a, b, R, V: native.fma32_mma(a, b, None, R=R, V=V, threads=args.threads),
             _blocks(args.seq_blocks))):
        ref = None
        fns = {}
        for R, V in blocks:
            out = call(a, b, R, V)
            bits = out[0].view(np.uint32), out[1]
            if ref is None:
                ref = bits
            same = np.array_equal(bits[0][~ref[1]], ref[0][~ref[1]])
            fns[(R, V)] = (lambda R=R, V=V: call(a, b, R, V), same)
        fns["numpy"] = (lambda: x @ y, True)
        times = {k: [] for k in fns}
        for _ in range(args.rounds):
            for k, (f, _) in fns.items():
                time.sleep(args.settle)   # bench_host_speed.FLOAT_PROTOCOL: OpenBLAS's threads spin after sgemm,
                f()                       # and each function is then timed in its own steady state
                t0 = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - t0)
        ref_t = statistics.median(times["numpy"])
        print(label + f" (numpy f32 {ref_t * 1e3:.1f} ms): " + ", ".join(
            f"{k[0]}x{k[1]} {statistics.median(t) * 1e3:.1f} ms ({statistics.median(t) / ref_t:.2f}x)"
            f"{'' if fns[k][1] else ' BITS DIFFER'}" for k, t in times.items() if k != "numpy"), flush=True)


if __name__ == "__main__":
    main()
