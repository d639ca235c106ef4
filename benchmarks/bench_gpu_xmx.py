"""XMX GEMM on the CUDA backend vs PyTorch on the same GPU, in the same run (and the CPU path on the host).

Cases (``cases(n)``, pluggable into benchmarks/bench_gpu.py; also runnable alone):

* ``xmx bf16 sequential`` and ``xmx bf16 stage`` (platform pvc) against ``torch.matmul`` in float32 with
  TF32 off (``torch.backends.cuda.matmul.allow_tf32 = False``: cuBLAS's SIMT SGEMM);
* ``xmx s8 x s8`` against ``torch._int_mm`` (cuBLASLt int8 -> int32).

Inputs live on the GPU as torch tensors (random normal / uniform integers, never zeros), so the timed call is
the whole ``systolic.xmx.matmul(..., backend="cuda")`` call (intake, decode, kernels, flag handling).
Times: CUDA events around each call after a warm-up, median of ``--reps``. With ``--cpu`` the CPU path runs on
the same inputs at the first size (all host cores) and its result is compared bit for bit with the GPU's.

    python benchmarks/bench_gpu_xmx.py --sizes 4096 8192 --cpu
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np


def _events_ms(fn, reps: int, warm: int = 2) -> list[float]:
    import torch
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        out.append(s.elapsed_time(e))
    return out


def cases(n: int, seed: int = 0):
    """[(name, reference name, our fn, reference fn, flops)] for an n x n x n GEMM on torch CUDA tensors."""
    import torch
    from systolic.xmx import matmul
    g = torch.Generator(device="cuda").manual_seed(seed)
    a32 = torch.randn(n, n, device="cuda", generator=g)
    b32 = torch.randn(n, n, device="cuda", generator=g)
    a16, b16 = a32.to(torch.bfloat16), b32.to(torch.bfloat16)
    a8 = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8, generator=g)
    b8 = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8, generator=g)
    b8t = b8.t().contiguous().t()  # _int_mm wants B column-major
    fl = 2.0 * n ** 3

    def ref_fp32():
        return torch.matmul(a32, b32)

    def ref_int8():
        return torch._int_mm(a8, b8t)

    return [
        ("xmx bf16 sequential", "torch fp32 (TF32 off)", lambda: matmul(a16, b16, model="sequential", backend="cuda"),
         ref_fp32, fl, (a16, b16, "sequential")),
        ("xmx bf16 stage", "torch fp32 (TF32 off)", lambda: matmul(a16, b16, model="stage", backend="cuda"),
         ref_fp32, fl, (a16, b16, "stage")),
        ("xmx s8 x s8", "torch._int_mm", lambda: matmul(a8, b8, backend="cuda"), ref_int8, fl, (a8, b8, "stage")),
    ]


def run(sizes, reps: int, cpu: bool) -> list[dict]:
    import torch
    from systolic.gpu import xmx_kernels as XK
    from systolic.xmx import matmul
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    for n in sizes:
        for name, rname, ours, ref, fl, (ta, tb, model) in cases(n):
            t_ref = _events_ms(ref, reps)
            t_ours = _events_ms(ours, reps)
            t_ref2 = _events_ms(ref, reps)  # again, around ours: drift shows as a spread
            mo, mr = statistics.median(t_ours), statistics.median(t_ref + t_ref2)
            row = {"case": name, "n": n, "ours_ms": mo, "ref": rname, "ref_ms": mr, "ratio": mo / mr,
                   "ours_tflops": fl / mo / 1e9, "ref_tflops": fl / mr / 1e9,
                   "ours_ms_all": t_ours, "ref_ms_all": t_ref + t_ref2, "last_run": dict(XK.last_run)}
            if cpu and n == sizes[0]:
                ha, hb = ta.cpu(), tb.cpu()
                ha = ha.view(torch.int16).numpy().view(_bf16()) if ta.dtype == torch.bfloat16 else ha.numpy()
                hb = hb.view(torch.int16).numpy().view(_bf16()) if tb.dtype == torch.bfloat16 else hb.numpy()
                t0 = time.perf_counter()
                want = matmul(ha, hb, model=model, backend="cpu")
                row["cpu_s"] = time.perf_counter() - t0
                row["cpu_ratio_vs_ours"] = row["cpu_s"] * 1e3 / mo
                got = ours().cpu().numpy()
                row["bits_equal"] = bool(np.array_equal(got.view(np.uint32), want.view(np.uint32)))
                row["elements_compared"] = int(want.size)
            rows.append(row)
            print(f"{name:22s} n={n:5d}  ours {mo:9.2f} ms ({row['ours_tflops']:6.1f} TFLOP/s)  {rname:22s} "
                  f"{mr:8.2f} ms ({row['ref_tflops']:6.1f})  ratio {row['ratio']:5.2f}  "
                  + (f"cpu {row['cpu_s']:.2f} s bits_equal={row['bits_equal']} " if 'cpu_s' in row else "")
                  + f"{row['last_run']}", flush=True)
    return rows


def variants(n: int, reps: int, jvs=None) -> list[dict]:
    """The stage kernels: xmx_stage32 (FP32 pipe; xmx_source.STAGE32_VARIANTS) and the binary64 kernel's variants
    (xmx_source.STAGE_VARIANTS: DP/INT rounding split, blocks per SM): main kernel and fix-up device times, bf16
    and fp16, and whether every variant gives the same bits; then the s8 GEMM."""
    from systolic.gpu.xmx_source import STAGE32_VARIANTS, STAGE_VARIANTS
    import torch
    from systolic.gpu import xmx_kernels as XK
    from systolic.xmx import matmul
    g = torch.Generator(device="cuda").manual_seed(1)
    rows = []
    for dt in (torch.bfloat16, torch.float16):
        a = torch.randn(n, n, device="cuda", generator=g).to(dt)
        b = torch.randn(n, n, device="cuda", generator=g).to(dt)
        ref = None
        XK.profile = True
        for v in (jvs or tuple(("fp32", u) for u in STAGE32_VARIANTS) + tuple(("simt", jv) for jv in STAGE_VARIANTS)):
            XK.stage32_variant = v[1] if v[0] == "fp32" else None
            XK.stage_variant = v[1] if v[0] == "simt" else XK.STAGE_VARIANT
            runs = []
            for _ in range(reps):
                out = matmul(a, b, model="stage", backend="cuda")
                runs.append(dict(XK.last_run))
            bits = out.view(torch.int32).cpu().numpy()
            same = True if ref is None else bool(np.array_equal(bits, ref))
            ref = bits if ref is None else ref
            main = statistics.median(r["main_ms"] for r in runs)
            fix = statistics.median(r["fix_ms"] for r in runs)
            row = {"dtype": str(dt), "n": n, "variant": repr(v), "path": runs[-1]["path"], "main_ms": main,
                   "fix_ms": fix, "flagged": runs[-1]["flagged"], "cpu": runs[-1]["cpu"],
                   "same_bits_as_first": same, "main_tflops": 2.0 * n ** 3 / main / 1e9,
                   "kernel": runs[-1].get("variant"), "phases_ms": runs[-1].get("phases_ms")}
            rows.append(row)
            print(f"stage {str(dt):15s} n={n} {v} ({row['path']}): main {main:8.2f} ms "
                  f"({row['main_tflops']:5.1f} TFLOP/s) fix-up {fix:7.2f} ms flagged {row['flagged']} "
                  f"cpu {row['cpu']} same={same} {row['kernel']} phases {row['phases_ms']}", flush=True)
        XK.profile = False
        XK.stage_variant = XK.STAGE_VARIANT
        XK.stage32_variant = XK.STAGE32_VARIANT
    a8 = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8, generator=g)
    b8 = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8, generator=g)
    t = statistics.median(_events_ms(lambda: matmul(a8, b8, backend="cuda"), reps))
    ti = statistics.median(_events_ms(lambda: torch._int_mm(a8, b8.t().contiguous().t()), reps))
    rows.append({"case": "s8 x s8", "n": n, "ms": t, "tflops": 2.0 * n ** 3 / t / 1e9, "int_mm_ms": ti})
    print(f"s8 x s8 n={n}: {t:8.3f} ms ({2.0 * n ** 3 / t / 1e9:6.1f} TFLOP/s); _int_mm (B col) {ti:.3f} ms",
          flush=True)
    return rows


def _bf16():
    import ml_dtypes
    return ml_dtypes.bfloat16


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--cpu", action="store_true", help="also run the CPU path at the first size and compare bits")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--variants", action="store_true", help="time the stage kernel's variants at the last size "
                    "instead")
    args = ap.parse_args()
    if args.variants:
        rows = variants(args.sizes[-1], args.reps)
    else:
        rows = run(args.sizes, args.reps, args.cpu)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
