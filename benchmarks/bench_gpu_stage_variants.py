"""The bf16 "stage" kernels on the FP32 pipe (xmx_source.STAGE32_VARIANTS), launched directly: device time of
each variant at n^3 on two inputs -- bf16 normal values (about 0.08% of stages redone) and small integers
(never a redo: the floor without it) -- and whether its bits (outputs and flags) equal the first variant's (the
default, which tests/gpu compares with the CPU path). Device only (CuPy and a GPU).

Run: PYTHONPATH=src python3 benchmarks/bench_gpu_stage_variants.py [--n 8192] [--reps 3] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import statistics

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description="Time each fp32-pipe bf16 stage kernel variant; compare its bits.")
    ap.add_argument("--n", type=int, default=8192, help="M = N = K (a multiple of 128)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    import cupy as cp
    from systolic.gpu import runtime as R
    from systolic.gpu import xmx_source as XS
    n = args.n
    rng = cp.random.default_rng(5)

    def bf16(x):
        return (x.view(cp.uint32) & cp.uint32(0xFFFF0000)).view(cp.float32)
    data = {"normal": (bf16(rng.standard_normal((n, n), dtype=cp.float32)),
                       bf16(rng.standard_normal((n, n), dtype=cp.float32))),
            "small ints": (rng.integers(-8, 8, (n, n)).astype(cp.float32),
                           rng.integers(-8, 8, (n, n)).astype(cp.float32))}
    ref, rows = {}, []
    for v in XS.STAGE32_VARIANTS:
        name, block_rows = XS.stage32_kernel(v, 0)
        fn = R.kernel(XS.SOURCE, name, names=XS.ALL_NAMES)
        for label, (a, b) in data.items():
            d, f = cp.empty((n, n), cp.uint32), cp.empty((n, n), cp.uint8)
            kargs = (a, b, np.uint64(0), d, f, np.int32(n), np.int32(n), np.int32(n), np.int32(n))
            grid = (-(-n // 128), -(-n // block_rows))
            fn(grid, (256,), kargs)                       # warm-up (and the module's first load)
            times = []
            for _ in range(args.reps):
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record()
                fn(grid, (256,), kargs)
                e1.record()
                e1.synchronize()
                times.append(cp.cuda.get_elapsed_time(e0, e1))
            if label not in ref:
                ref[label], same = (d.copy(), f.copy()), "reference"
            else:
                same = bool((d == ref[label][0]).all() and (f == ref[label][1]).all())
            row = {"variant": list(v), "kernel": name, "data": label, "n": n, "ms": statistics.median(times),
                   "flagged": int(cp.count_nonzero(f)), "same_bits_as_first": same}
            rows.append(row)
            print(f"{name:28s} {label:10s} {row['ms']:8.2f} ms  flagged {row['flagged']:6d}  {same}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
