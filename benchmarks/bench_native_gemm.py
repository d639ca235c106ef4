"""Native AMX GEMM (systolic.amx.native_gemm) vs torch.matmul / torch._int_mm (oneDNN) on the same CPU.

    PYTHONPATH=src python3 benchmarks/bench_native_gemm.py [--sizes 1024,4096] [--reps 9] [--sweep] [--peak]
        [--md FILE]

For each size n (n x n x n), dtype (bf16 -> fp32, int8 -> int32) and thread count (1 and all CPUs) it
times ours with B pre-packed (the kernel's contract), ours including the packing of B, and torch, on the
same inputs. The contenders are timed *interleaved* (one call of each per round, a pause between calls so
neither library's idle threads are still spinning), because this machine (a VM) drifts by tens of percent
over seconds; each figure is the median over the rounds. Correctness first: int8 against exact integer
arithmetic, bf16 against a float64 product (relative Frobenius error) and torch.
Ratio = ours / torch in throughput (higher is better); all figures of one table come from one run.
``--peak`` probes the tile-resident TDP* peak (bench_host_speed.tile_peak) per dtype and thread count in the same
run and reports ours as a percentage of it. Thread counts default to 1 and the CPUs of the affinity mask.
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

PAUSE = 0.05  # s between timed calls (idle spinning threads of the previous call stop by then)


def interleaved(fns: dict, rounds: int) -> dict:
    """Median seconds of each callable, timed round-robin after one warm-up call each. The order rotates by one
    every round, so no contender always follows the same one (a VM's first call after another library's often
    ran up to 2x slower: identical configurations differed that much by position alone)."""
    for f in fns.values():
        f()
    times = {k: [] for k in fns}
    keys = list(fns)
    for r in range(rounds):
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:
            f = fns[k]
            time.sleep(PAUSE)
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def bursts(fns: dict, reps: int) -> dict:
    """Median seconds of each callable timed back to back (warm thread pools), one contender after the other."""
    out = {}
    for k, f in fns.items():
        time.sleep(0.3)
        f()
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
        out[k] = statistics.median(ts)
    return out


def minor_faults(f) -> int:
    """Minor page faults of the process during one call of f (every thread: RUSAGE_SELF)."""
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    f()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1024,4096")
    ap.add_argument("--threads", default=None, help="comma list; default 1 and all CPUs")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--md", default=None)
    ap.add_argument("--sweep", action="store_true",
                    help="also time kernel variants (K blocks, order, prefetch, schedule, blocks)")
    ap.add_argument("--peak", action="store_true", help="probe the tile-resident peak and report %% of it")
    ap.add_argument("--variants", default=None,
                    help="with --sweep: the variants to time, separated by semicolons (default all)")
    ap.add_argument("--probe", action="store_true",
                    help="one worker's TDP*/s of the micro-kernel's K step on synthetic L1 / L2 / L3 operands")
    ap.add_argument("--pad", type=int, default=None,
                    help="bytes of padding after every packed panel for this run (native_gemm.PANEL_PAD)")
    ap.add_argument("--faults", action="store_true", help="print each contender's minor page faults per call")
    a = ap.parse_args(argv)
    import torch

    from systolic import host
    from systolic.amx import native_gemm as G
    if a.pad is not None:
        G.PANEL_PAD = G._check_pad(a.pad)

    ncpu = G.cpus()
    peaks = {}
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_host_speed import PROBE_SETS, tdp_probe, tile_peak
    probes = []
    if a.probe:
        for mn in ("tdpbf16ps", "tdpbssd"):
            ops = 16 * 16 * (32 if mn == "tdpbf16ps" else 64) * 2
            # the best of two probes: the process's first AMX work runs slower (call 5: 114 M TDP/s first, 155 M
            # in the --peak probe of the same run)
            resident = max(tile_peak(mn, 1), tile_peak(mn, 1)) / ops
            line = [f"resident {resident / 1e6:.0f}"]
            for pat in ("row", "col", "db", "loads"):
                for name, (ab, bb) in PROBE_SETS.items():
                    r = tdp_probe(mn, pat, ab, bb)
                    pct = "" if pat == "loads" else f" ({100 * r / resident:.0f}%)"
                    line.append(f"{pat} {name} {r / 1e6:.0f}{pct}")
            probes.append(f"| {mn} | " + ", ".join(line) + " |")
            print("probe " + probes[-1], flush=True)
    threads = [int(x) for x in a.threads.split(",")] if a.threads else [1, ncpu]
    sizes = [int(x) for x in a.sizes.split(",")]
    rng = np.random.default_rng(0)
    rows, sweeps = [], []
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
            small_a, small_b = an[:512, :64 // an.itemsize].copy(), G.pack_b(bn[:64 // an.itemsize, :512].copy())
            ours = G.matmul(an, pb)
            if dt == "int8":
                ok = None
                if n <= 1024:
                    exact = an.astype(np.int64) @ bn.astype(np.int64)
                    ok = bool(np.array_equal(((exact + 2**31) % 2**32 - 2**31).astype(np.int32), ours))
                check = f"exact int: {ok}, equals torch: {bool(np.array_equal(tfn().numpy(), ours))}"
            else:
                tres = tfn().float().numpy()
                if n <= 1024:
                    ref = an.astype(np.float64) @ bn.astype(np.float64)
                    check = (f"rel err ours {np.linalg.norm(ours - ref) / np.linalg.norm(ref):.2e}, "
                             f"torch {np.linalg.norm(tres - ref) / np.linalg.norm(ref):.2e}")
                else:
                    check = f"rel diff vs torch {np.linalg.norm(ours - tres) / np.linalg.norm(tres):.2e}"
            print(f"n={n} {dt}: {check}", flush=True)
            flop = 2.0 * n ** 3
            rounds = max(5, a.reps // 2) if n >= 4096 else a.reps
            for t in threads:
                torch.set_num_threads(t)
                fns = {"ours": lambda: G.matmul(an, pb, threads=t), "ours+pack": lambda: G.matmul(an, bn, threads=t),
                       "torch": tfn}
                if a.sweep:
                    st = dict(schedule="static", prefetch=0)
                    variants = {"kb0,n": dict(st, k_block=0, order="n"),
                                "kb0,n,col": dict(st, k_block=0, order="n", micro="col"),
                                "kb0,n,db": dict(st, k_block=0, order="n", micro="db"),
                                "kb0,n,t1a": dict(st, k_block=0, order="n", t1="a"),
                                "kb16,n": dict(st, k_block=16, order="n"),
                                "kb16,m": dict(st, k_block=16, order="m"),
                                "kb16,m,col": dict(st, k_block=16, order="m", micro="col"),
                                "kb16,m,db": dict(st, k_block=16, order="m", micro="db"),
                                "kb16,m,col,t1b": dict(st, k_block=16, order="m", micro="col", t1="b"),
                                "kb8,m,col": dict(st, k_block=8, order="m", micro="col"),
                                "kb32,m,col": dict(st, k_block=32, order="m", micro="col"),
                                "kb16,m,col,bn1024": dict(st, k_block=16, order="m", micro="col", block_n=1024),
                                "dyn64x256": dict(schedule="dynamic", block_m=64, block_n=256),
                                "dyn64x256,kb0": dict(schedule="dynamic", block_m=64, block_n=256, k_block=0),
                                "dyn128,kb0": dict(schedule="dynamic", block_m=128, block_n=128, k_block=0),
                                "dyn64x256,col": dict(schedule="dynamic", block_m=64, block_n=256, micro="col"),
                                "dyn64x256,db": dict(schedule="dynamic", block_m=64, block_n=256, micro="db")}
                    # the defaults with other panel paddings (A's copies and B's panels: B packed again), and
                    # with the double-buffered micro-kernel
                    # fewer workers than asked (a small product: each worker's share against its wake-up)
                    for w in (2, 4, 8):
                        if w < t:
                            variants[f"t{w}"] = dict(threads=w)
                    for pad in (0, 64, 256, 1024, 4096):
                        variants[f"pad{pad}"] = dict(pad=pad)
                        variants[f"pad{pad},db"] = dict(pad=pad, micro="db")
                    if a.variants:
                        variants = {k: v for k, v in variants.items() if k in a.variants.split(";")}
                    pbs = {G.PANEL_PAD: pb}
                    for name, v in variants.items():
                        vb = pb
                        if "pad" in v:
                            vb = pbs[v["pad"]] = pbs.get(v["pad"]) or G.pack_b(bn, pad=v["pad"])
                        fns[name] = (lambda v=v, vb=vb: G.matmul(an, vb, **dict(dict(threads=t), **v)))
                        if not np.array_equal(fns[name]().view(np.uint32), ours.view(np.uint32)):
                            print(f"BITS DIFFER: variant {name}", flush=True)
                            check += f"; variant {name} DIFFERS"
                    # both libraries writing into a preallocated, already faulted-in result (no fresh pages: a
                    # fresh n x n result is n*n*4/4096 page faults, microseconds each in a VM)
                    if not a.variants or "out" in a.variants.split(";"):
                        o_ours = np.zeros_like(ours)
                        fns["out"] = lambda o=o_ours: G.matmul(an, pb, threads=t, out=o)
                        if not np.array_equal(fns["out"]().view(np.uint32), ours.view(np.uint32)):
                            print("BITS DIFFER: variant out", flush=True)
                            check += "; variant out DIFFERS"
                    if not a.variants or "torch,out" in a.variants.split(";"):
                        o_t = tfn().clone()
                        fns["torch,out"] = ((lambda o=o_t: torch.matmul(at, bt, out=o)) if dt == "bf16" else
                                            (lambda o=o_t: torch._int_mm(at, bt, out=o)))
                    # the fixed cost of a call (wake-up, Python, output): one K step over 512 x 512
                    if not a.variants or "overhead" in a.variants.split(";"):
                        fns["overhead"] = lambda: G.matmul(small_a, small_b, threads=t)
                    if not a.variants or "zeros" in a.variants.split(";"):
                        # the same call on all-zero operands (the probes' tiles hold zeros: is the TMUL's rate
                        # data-dependent?)
                        za, zb = np.zeros_like(an), G.pack_b(np.zeros_like(bn))
                        fns["zeros"] = lambda: G.matmul(za, zb, threads=t)
                med = interleaved(fns, rounds)
                if a.faults:
                    print("    minor page faults per call: " + ", ".join(
                        f"{k} {minor_faults(f)}" for k, f in fns.items()), flush=True)
                warm = bursts({"ours": fns["ours"], "torch": tfn}, rounds)
                if a.peak and (dt, t) not in peaks:
                    peaks[(dt, t)] = tile_peak("tdpbf16ps" if dt == "bf16" else "tdpbssd", t)
                tdps = (-(-n // 32) * 2) ** 2 * -(-n // (32 if dt == "bf16" else 64))    # TDP* of the product
                row = dict(n=n, dtype=dt, threads=t, ours_s=med["ours"], ours_pack_s=med["ours+pack"],
                           tdp_worker=tdps / med["ours"] / t,
                           torch_s=med["torch"], check=check, tname=tname, warm_ours=warm["ours"],
                           warm_torch=warm["torch"])
                rows.append(row)
                print(f"  threads={t:2d} ours {flop / med['ours'] / 1e12:.2f} TOP/s ({med['ours'] * 1e3:.2f} ms; "
                      f"with packing {med['ours+pack'] * 1e3:.2f} ms) | {tname} {flop / med['torch'] / 1e12:.2f} "
                      f"TOP/s ({med['torch'] * 1e3:.2f} ms) | ratio {med['torch'] / med['ours']:.2f} | back to back: "
                      f"ours {warm['ours'] * 1e3:.2f} ms, torch {warm['torch'] * 1e3:.2f} ms, ratio "
                      f"{warm['torch'] / warm['ours']:.2f}", flush=True)
                if a.sweep:
                    line = ", ".join(f"{k} {flop / v / 1e12:.2f}" if k != "overhead" else f"overhead {v * 1e3:.3f} ms"
                                     for k, v in med.items())
                    sweeps.append(f"| {n} | {dt} | {t} | {line} |")
                    print(f"    sweep TOP/s: {line}", flush=True)
    lines = [
        "# Native AMX GEMM vs oneDNN (torch)",
        "",
        f"CPU: {host.cpu_model_name()} ({', '.join(host.amx_features())}; LLVM host CPU "
        f"{__import__('llvmlite.binding', fromlist=['x']).get_host_cpu_name()}), {ncpu} CPUs (Firecracker VM); "
        f"torch {torch.__version__}; Python {platform.python_version()}; "
        f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "Command: `PYTHONPATH=src python3 benchmarks/bench_native_gemm.py " + " ".join(
            argv if argv is not None else sys.argv[1:]) + "`",
        "",
        "Throughput in tera-operations per second (2 n^3 / median time). Main table: contenders timed",
        "interleaved, 50 ms apart, so every call starts with idle worker threads (both libraries pay the wake-up),",
        "the order rotated every round; medians over the rounds;",
        "ratio = ours / torch (higher is better). `ours`: B pre-packed in VNNI panels (the kernel's contract),",
        "default blocking and runtime (resident worker pool); `ours+pack` includes packing B (compiled pack_b).",
        "",
        "`% of peak`: ours against the tile-resident TDP* peak probed in this run (same dtype and threads).",
        "",
        "`TDP/s/worker`: ours' TDP* per second per worker (millions).",
        "",
        "| n | dtype | threads | ours TOP/s | ours+pack TOP/s | torch TOP/s | ratio | ratio incl. packing | % of peak "
        "| TDP/s/worker | reference |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f = 2.0 * r["n"] ** 3 / 1e12
        pk = peaks.get((r["dtype"], r["threads"]))
        pct = f"{100 * f / r['ours_s'] / (pk / 1e12):.0f}%" if pk else "-"
        lines.append(f"| {r['n']} | {r['dtype']} | {r['threads']} | {f / r['ours_s']:.2f} | "
                     f"{f / r['ours_pack_s']:.2f} | {f / r['torch_s']:.2f} | {r['torch_s'] / r['ours_s']:.2f} | "
                     f"{r['torch_s'] / r['ours_pack_s']:.2f} | {pct} | {r['tdp_worker'] / 1e6:.0f}M | {r['tname']} |")
    if peaks:
        lines += ["", "Tile-resident peak probed in this run: " + "; ".join(
            f"{'TDPBF16PS' if d == 'bf16' else 'TDPBSSD'} {t} thread(s) {p / 1e12:.2f} TOP/s"
            for (d, t), p in sorted(peaks.items()))]
    lines += ["", "Back to back (each contender called repeatedly, so its worker threads stay awake; same run):", "",
              "| n | dtype | threads | ours TOP/s | torch TOP/s | ratio |", "|---|---|---|---|---|---|"]
    for r in rows:
        f = 2.0 * r["n"] ** 3 / 1e12
        lines.append(f"| {r['n']} | {r['dtype']} | {r['threads']} | {f / r['warm_ours']:.2f} | "
                     f"{f / r['warm_torch']:.2f} | {r['warm_torch'] / r['warm_ours']:.2f} |")
    lines += ["", "Correctness checks in the same run: " + "; ".join(
        sorted({f"n={r['n']} {r['dtype']}: {r['check']}" for r in rows}))]
    if probes:
        lines += ["", "One worker's K step on synthetic operands (tdp_probe; millions of TDP*/s, or of TILELOADD/s for "
                  "`loads`; working sets A/B: L1/L1 8/8 KiB, L1/L2 16/512 KiB, L2/L2 512/512 KiB, L1/L3 16 KiB/32 MiB; "
                  "% of `resident`, the tile_peak rate of one thread):", "", "| instruction | rates |", "|---|---|"]
        lines += probes
    if sweeps:
        lines += ["", "Variants (TOP/s, same rounds):", "", "| n | dtype | threads | variants |", "|---|---|---|---|"]
        lines += sweeps
    text = "\n".join(lines) + "\n"
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
