"""Native AMX GEMM (systolic.amx.native_gemm) vs torch.matmul / torch._int_mm (oneDNN) on the same CPU.

    PYTHONPATH=src python3 benchmarks/bench_native_gemm.py [--sizes 1024,4096] [--md FILE]

For each size n (n x n x n), dtype (bf16 -> fp32, int8 -> int32) and thread count (1 and all CPUs), it
times ours with B pre-packed (the kernel's contract) and, separately, ours including the packing of B,
and torch on the same inputs; median of several runs after a warm-up. It checks correctness first:
int8 against exact integer arithmetic, bf16 against a float64 product (relative Frobenius error) and
against torch. Ratios are ours / torch in throughput (higher is better); measured in one run.
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


def _median_time(fn, reps: int, warm: int = 1) -> float:
    # let the other library's idle threads stop spinning (OpenMP / our pool) before timing this one
    time.sleep(0.3)
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1024,4096")
    ap.add_argument("--threads", default=None, help="comma list; default 1 and all CPUs")
    ap.add_argument("--md", default=None)
    ap.add_argument("--sweep", action="store_true", help="first time kernel variants (A packing, block sizes)")
    a = ap.parse_args(argv)
    import torch

    from systolic import host
    from systolic.amx import native_gemm as G

    ncpu = os.cpu_count() or 1
    threads = [int(x) for x in a.threads.split(",")] if a.threads else [1, ncpu]
    sizes = [int(x) for x in a.sizes.split(",")]
    rng = np.random.default_rng(0)
    rows = []
    for n in sizes:
        for dt in ("bf16", "int8"):
            if dt == "bf16":
                an = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
                bn = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
                at = torch.from_numpy(an.view(np.int16)).view(torch.bfloat16)
                bt = torch.from_numpy(bn.view(np.int16)).view(torch.bfloat16)
                tfn = lambda: torch.matmul(at, bt)  # noqa: E731
                tname = "torch.matmul bf16"
            else:
                an = rng.integers(-128, 128, (n, n), dtype=np.int8)
                bn = rng.integers(-128, 128, (n, n), dtype=np.int8)
                at, bt = torch.from_numpy(an), torch.from_numpy(bn)
                tfn = lambda: torch._int_mm(at, bt)  # noqa: E731
                tname = "torch._int_mm int8"
            pb = G.pack_b(bn)
            ours = G.matmul(an, pb)
            # correctness before timing
            if dt == "int8":
                if n <= 1024:
                    exact = an.astype(np.int64) @ bn.astype(np.int64)
                    ok = np.array_equal(((exact + 2**31) % 2**32 - 2**31).astype(np.int32), ours)
                else:
                    ok = None
                try:
                    tres = tfn().numpy()
                    same_torch = bool(np.array_equal(tres, ours))
                except Exception as e:  # noqa: BLE001
                    print(f"torch int8 unavailable: {e}", flush=True)
                    tfn, same_torch = None, None
                check = f"exact int: {ok}, equals torch: {same_torch}"
            else:
                tres = tfn().float().numpy()
                if n <= 1024:
                    ref = an.astype(np.float64) @ bn.astype(np.float64)
                    err = np.linalg.norm(ours - ref) / np.linalg.norm(ref)
                    terr = np.linalg.norm(tres - ref) / np.linalg.norm(ref)
                    check = f"rel err ours {err:.2e}, torch {terr:.2e}"
                else:
                    check = f"rel diff vs torch {np.linalg.norm(ours - tres) / np.linalg.norm(tres):.2e}"
            print(f"n={n} {dt}: {check}", flush=True)
            flop = 2.0 * n ** 3
            if a.sweep:
                variants = [dict(pack_a=True), dict(pack_a=False), dict(pack_a=True, runtime="spawn"),
                            dict(pack_a=True, block_m=256, block_n=256), dict(pack_a=True, block_m=256, block_n=128),
                            dict(pack_a=False, block_m=128, block_n=512), dict(pack_a=True, block_m=64, block_n=256)]
                for t in threads:
                    for v in variants:
                        if t == 1 and n >= 4096 and v != variants[0] and v != variants[1]:
                            continue
                        tv = _median_time(lambda: G.matmul(an, pb, threads=t, **v), 3 if n >= 4096 else 7)
                        same = np.array_equal(G.matmul(an, pb, threads=t, **v).view(np.uint32), ours.view(np.uint32))
                        print(f"  sweep threads={t:2d} {v}: {flop / tv / 1e12:.2f} TOP/s ({tv * 1e3:.2f} ms) "
                              f"identical={same}", flush=True)
            for t in threads:
                torch.set_num_threads(t)
                reps = 3 if n >= 4096 and t == 1 else 7
                t_ours = _median_time(lambda: G.matmul(an, pb, threads=t), reps)
                t_pack = _median_time(lambda: G.matmul(an, bn, threads=t), max(3, reps // 2))
                t_torch = _median_time(tfn, reps) if tfn else float("nan")
                row = dict(n=n, dtype=dt, threads=t, ours_s=t_ours, ours_pack_s=t_pack, torch_s=t_torch,
                           ours_tops=flop / t_ours / 1e12, torch_tops=flop / t_torch / 1e12,
                           ratio=t_torch / t_ours, ratio_pack=t_torch / t_pack, check=check, tname=tname)
                rows.append(row)
                print(f"  threads={t:2d} ours {row['ours_tops']:.2f} TOP/s ({t_ours * 1e3:.1f} ms; with packing "
                      f"{t_pack * 1e3:.1f} ms) | {tname} {row['torch_tops']:.2f} TOP/s ({t_torch * 1e3:.1f} ms) | "
                      f"ratio {row['ratio']:.2f} (with packing {row['ratio_pack']:.2f})", flush=True)
    lines = [
        "# Native AMX GEMM vs oneDNN (torch)",
        "",
        f"CPU: {host.cpu_model_name()} ({', '.join(host.amx_features())}; LLVM host CPU "
        f"{__import__('llvmlite.binding', fromlist=['x']).get_host_cpu_name()}), {ncpu} CPUs; "
        f"torch {torch.__version__}; Python {platform.python_version()}; "
        f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "Command: `PYTHONPATH=src python3 benchmarks/bench_native_gemm.py " + " ".join(
            argv if argv is not None else sys.argv[1:]) + "`",
        "",
        "Throughput in tera-operations per second (2 n^3 / median time); ratio = ours / torch (higher is better).",
        "`ours` takes B pre-packed in VNNI panels (the kernel's contract); `ours+pack` includes packing B in numpy.",
        "",
        "| n | dtype | threads | ours TOP/s | ours+pack TOP/s | torch TOP/s | ratio | ratio incl. packing | reference |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['n']} | {r['dtype']} | {r['threads']} | {r['ours_tops']:.2f} | "
                     f"{2.0 * r['n'] ** 3 / r['ours_pack_s'] / 1e12:.2f} | {r['torch_tops']:.2f} | "
                     f"{r['ratio']:.2f} | {r['ratio_pack']:.2f} | {r['tname']} |")
    lines.append("")
    lines.append("Correctness checks in the same run: " + "; ".join(
        sorted({f"n={r['n']} {r['dtype']}: {r['check']}" for r in rows})))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
