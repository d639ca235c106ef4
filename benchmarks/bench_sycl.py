"""SYCL joint_matrix benchmark: the cache-blocked bf16 GEMM kernel vs the engine GEMM of the same size, as ratios.

    python benchmarks/bench_sycl.py [--size 256] [--repeat 5] [--devices pvc spr] \
        [--out benchmarks/results/sycl_gemm.md]

The kernel is ``joint_matmul`` of ``examples/sycl/gemm_bf16.py`` (intel/llvm test-e2e
``joint_matrix_bf16_fill_k_cache``, SLM-free, test-e2e's cache sizes MCache1 32, NCache1 64 (PVC) or 32 (AMX),
MCache2 = NCache2 = 256, KCache2 32, B VNNI-packed). The reference is the engine the kernel lowers onto, on the
same inputs in the same run: ``systolic.xmx.matmul(device="pvc")`` and ``systolic.amx.matmul(device="spr")``. The two
are checked bit for bit first (a benchmark of a wrong answer is worthless). Runs alternate kernel / reference;
each side's best wall time and best process CPU time are kept. Target (issue 12): kernel <= 20x the engine.

Per-collective overhead: the same ND-range runs a kernel of ``--calls`` ``joint_matrix_prefetch`` calls (a
group operation with no data effect: what remains is the SIMT dispatch, the uniformity checks and the call) and
of as many ``joint_matrix_fill`` calls; time per call, and the GEMM's number of collective calls times that, as a
share of the GEMM kernel's time.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import time
from pathlib import Path

import ml_dtypes
import numpy as np

from systolic import amx, sycl, xmx
from systolic.sycl import matrix as jm

ROOT = Path(__file__).resolve().parents[1]


def load_example():
    spec = importlib.util.spec_from_file_location("gemm_bf16_example", ROOT / "examples" / "sycl" / "gemm_bf16.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def caches_for(device):
    amx_dev = device in ("spr", "emr", "gnr", "dmr")
    return dict(mcache1=32, ncache1=32 if amx_dev else (32 if device in ("dg2", "arl") else 64), mcache2=256,
                ncache2=256, kcache2=32), amx_dev


def collective_calls(n, tiles, c):
    """Group-operation calls one sub-group makes in joint_matmul, and the number of sub-groups."""
    tm, tn, tk = tiles
    mt, nt = c["mcache1"] // tm, c["ncache1"] // tn
    kc1 = tk
    per_k2 = (c["kcache2"] // kc1) * (mt + nt + mt * nt)
    per_sg = mt * nt + (n // c["kcache2"]) * per_k2 + mt * nt
    return per_sg, (n // c["mcache1"]) * (n // c["ncache1"])


def overhead(device, n, c, calls):
    """Seconds per collective call (all sub-groups of the GEMM's ND-range at once): prefetch and fill."""
    q = sycl.queue(device)
    sg_size = q.get_device().get_info("sub_group_sizes")[0]
    tm, tn, _ = load_example().tile_shape(q)
    glob = (n // c["mcache1"], n // c["ncache1"] * sg_size)
    loc = (c["mcache2"] // c["mcache1"], c["ncache2"] // c["ncache1"] * sg_size)
    mem = q.malloc_shared(n * n, ml_dtypes.bfloat16)
    out = {}
    for what in ("prefetch", "fill"):
        def kernel(it, what=what):
            sg = it.get_sub_group()
            m = jm.joint_matrix(sg, np.float32, jm.use.accumulator, tm, tn)
            for _ in range(calls):
                if what == "prefetch":
                    jm.joint_matrix_prefetch(sg, mem, 8, 32, n, jm.layout.row_major)
                else:
                    jm.joint_matrix_fill(sg, m, 1.0)
        best = min(timed(lambda: q.parallel_for(sycl.nd_range(glob, loc), kernel).wait())[1] for _ in range(3))
        out[what] = best / calls
    return out


def bench(device, n, repeat, calls, ex):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    c, amx_dev = caches_for(device)
    tiles = ex.tile_shape(sycl.queue(device))

    def kernel():
        return ex.run(device, a, b, **c)

    def engine():
        return amx.matmul(a, b, device=device) if amx_dev else xmx.matmul(a, b, device=device)

    got, ref = kernel(), engine()                       # warm-up (JIT) and the bit-for-bit check
    assert np.array_equal(got.view(np.uint32), ref.view(np.uint32)), f"{device}: kernel != engine"
    kw, kc, ew, ec = [], [], [], []
    for _ in range(repeat):
        _, w, cpu = timed(kernel)
        kw.append(w), kc.append(cpu)
        _, w, cpu = timed(engine)
        ew.append(w), ec.append(cpu)
    per_sg, n_sg = collective_calls(n, tiles, c)
    ov = overhead(device, n, c, calls)
    return {"device": device, "tiles": tiles, "caches": c, "kernel_wall": min(kw), "kernel_cpu": min(kc),
            "engine_wall": min(ew), "engine_cpu": min(ec), "calls": per_sg, "sub_groups": n_sg,
            "prefetch_s": ov["prefetch"], "fill_s": ov["fill"],
            "engine": f"amx.matmul(device='{device}')" if amx_dev else f"xmx.matmul(device='{device}')"}


def markdown(rows, n, repeat):
    host = (f"{platform.machine()}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}, "
            f"load average {os.getloadavg()[0]:.1f}")
    out = [f"# SYCL joint_matrix: cache-blocked bf16 GEMM vs the engine GEMM ({n}^3)", "",
           f"`python benchmarks/bench_sycl.py --size {n} --repeat {repeat}` on {host}; best of {repeat} "
           "alternating runs; results bit-identical (checked). Target: kernel <= 20x the engine.", "",
           "| device | tiles TMxTNxTK | kernel wall s | engine wall s | ratio wall | kernel CPU s | engine CPU s |"
           " ratio CPU | engine |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['device']} | {'x'.join(map(str, r['tiles']))} | {r['kernel_wall']:.4f} | "
                   f"{r['engine_wall']:.4f} | **{r['kernel_wall'] / r['engine_wall']:.1f}x** | {r['kernel_cpu']:.4f} | "
                   f"{r['engine_cpu']:.4f} | {r['kernel_cpu'] / r['engine_cpu']:.1f}x | `{r['engine']}` |")
    out += ["", "Per-collective overhead (one call = the group operation for every sub-group of the ND-range):", "",
            "| device | sub-groups | calls per sub-group | prefetch us/call | fill us/call |"
            " calls x prefetch cost / kernel wall |", "|---|---|---|---|---|---|"]
    for r in rows:
        share = r["calls"] * r["prefetch_s"] / r["kernel_wall"]
        out.append(f"| {r['device']} | {r['sub_groups']} | {r['calls']} | {r['prefetch_s'] * 1e6:.1f} | "
                   f"{r['fill_s'] * 1e6:.1f} | {100 * share:.0f}% |")
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200, help="collective calls in the overhead kernel")
    ap.add_argument("--devices", nargs="+", default=["pvc", "spr"])
    ap.add_argument("--out", default=None, help="write a markdown table here")
    args = ap.parse_args(argv)
    ex = load_example()
    rows = [bench(d, args.size, args.repeat, args.calls, ex) for d in args.devices]
    md = markdown(rows, args.size, args.repeat)
    print(md)
    if args.out:
        Path(args.out).write_text(md)


if __name__ == "__main__":
    main()
