"""The CUDA backend against PyTorch on the same GPU, in the same run (and the CPU path on the host's cores).

    PYTHONPATH=src python3 benchmarks/bench_gpu.py [--sizes 4096 8192] [--cpu-sizes 4096] [--json out.json]

Each *case* times one emulated GEMM (``n x n x n``, inputs already on the GPU as torch tensors, end to end:
input conversion, kernels, NaN fix-ups) and names its *reference*, timed on the same GPU in the same run:

* ``torch fp32``: ``torch.matmul`` of float32 with TF32 off (``torch.backends.cuda.matmul.allow_tf32 = False``):
  cuBLAS SGEMM, the non-tensor-core fp32 rate a bit-exact fp32 chain kernel competes with;
* ``torch int8``: ``torch._int_mm`` (int8 x int8 -> int32 on the tensor cores).

Cases are data: :data:`CASES` holds :class:`Case` objects (engine GEMMs add theirs with :func:`case`; the XMX
cases live beside the AMX ones). GPU times: CUDA events, median of ``--reps`` after warm-ups, rotating between
two input sets. CPU times: wall clock, best of ``--cpu-reps``. The table gives ms, TFLOP/s (2 n^3 / time) and
the ratio to the reference; the targets of issue 14 are AMX bf16 <= 2x torch fp32, int8 <= 2x torch int8.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))


@dataclass
class Case:
    """One emulated GEMM: ``make(n, rng)`` -> (gpu_fn, cpu_fn or None), each a zero-argument call of one GEMM."""

    name: str
    reference: str                      # a key of REFERENCES
    make: Callable
    note: str = ""
    cpu: bool = True                    # time the CPU path too (on --cpu-sizes)
    target: float | None = None         # issue target: time <= target x reference
    tags: tuple = field(default_factory=tuple)


CASES: list[Case] = []


def case(name, reference, *, note="", cpu=True, target=None):
    """Decorator: register ``make(n, rng)`` as a benchmark case."""
    def deco(fn):
        CASES.append(Case(name, reference, fn, note, cpu, target))
        return fn
    return deco


# ------------------------------------------------------------------------------------------ references

def _torch():
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def ref_fp32(n, rng):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(int(rng.integers(1 << 30)))
    xs = [(torch.randn(n, n, device="cuda", generator=g), torch.randn(n, n, device="cuda", generator=g)) for _ in range(2)]
    return [lambda a=a, b=b: torch.matmul(a, b) for a, b in xs]


def ref_int8(n, rng):
    torch = _torch()
    xs = []
    for _ in range(2):
        a = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
        b = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
        xs.append((a, b))
    # _int_mm's fastest layout is B column-major; time both and keep the faster as the reference
    fns = [lambda a=a, b=b: torch._int_mm(a, b) for a, b in xs]
    fns_t = [lambda a=a, b=b.t().contiguous().t(): torch._int_mm(a, b) for a, b in xs]
    return fns, fns_t


REFERENCES = {"torch fp32 (TF32 off)": ref_fp32, "torch int8 _int_mm": ref_int8}


# ------------------------------------------------------------------------------------------ AMX cases

def _bf16_pair(n, rng, tiny=False, fp16=False):
    import ml_dtypes
    import numpy as np
    torch = _torch()
    dt = np.float16 if fp16 else ml_dtypes.bfloat16
    out = []
    for _ in range(2):
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        if tiny:                                 # products near 2^-126: the kernels' FTZ check runs
            a *= 2.0 ** -62
            b *= 2.0 ** -62
        a, b = a.astype(dt), b.astype(dt)
        tt = torch.float16 if fp16 else torch.bfloat16
        ta = torch.from_numpy(a.view(np.int16)).view(tt).cuda()
        tb = torch.from_numpy(b.view(np.int16)).view(tt).cuda()
        out.append(((a, b), (ta, tb)))
    return out


def _amx_float(n, rng, tiny=False, fp16=False):
    from systolic.amx import matmul
    cpu = "graniterapids" if fp16 else "sapphirerapids"
    sets = _bf16_pair(n, rng, tiny, fp16)
    gpu = [lambda ta=ta, tb=tb: matmul(ta, tb, device=cpu) for _, (ta, tb) in sets]
    (a, b), _ = sets[0]
    return gpu, (lambda: matmul(a, b, device=cpu, backend="cpu"))


@case("AMX bf16 (TDPBF16PS)", "torch fp32 (TF32 off)", target=2.0, note="random normal inputs: no FTZ check")
def amx_bf16(n, rng):
    return _amx_float(n, rng)


@case("AMX bf16, FTZ-check path", "torch fp32 (TF32 off)", cpu=False, note="inputs near 2^-62: check at every FMA")
def amx_bf16_tiny(n, rng):
    return _amx_float(n, rng, tiny=True)


@case("AMX fp16 (TDPFP16PS)", "torch fp32 (TF32 off)", cpu=False)
def amx_fp16(n, rng):
    return _amx_float(n, rng, fp16=True)


@case("AMX int8 (TDPBSSD)", "torch int8 _int_mm", target=2.0)
def amx_int8(n, rng):
    import numpy as np
    from systolic.amx import matmul
    torch = _torch()
    sets = []
    for _ in range(2):
        a = rng.integers(-128, 128, (n, n)).astype(np.int8)
        b = rng.integers(-128, 128, (n, n)).astype(np.int8)
        sets.append(((a, b), (torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda())))
    gpu = [lambda ta=ta, tb=tb: matmul(ta, tb) for _, (ta, tb) in sets]
    (a, b), _ = sets[0]
    return gpu, (lambda: matmul(a, b, backend="cpu"))


@case("AMX int8 (TDPBSSD), B column-major", "torch int8 _int_mm", cpu=False, target=2.0,
      note="B as a transposed view of an (N, K) tensor (_int_mm's own best layout): no transpose pass")
def amx_int8_bcol(n, rng):
    from systolic.amx import matmul
    torch = _torch()
    sets = []
    for _ in range(2):
        a = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
        b = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda").t().contiguous().t()
        sets.append((a, b))
    return [lambda a=a, b=b: matmul(a, b) for a, b in sets], None


@case("AMX uint8 x int8 (TDPBUSD)", "torch int8 _int_mm", cpu=False)
def amx_u8s8(n, rng):
    import numpy as np
    from systolic.amx import matmul
    torch = _torch()
    sets = []
    for _ in range(2):
        a = torch.from_numpy(rng.integers(0, 256, (n, n)).astype(np.uint8)).cuda()
        b = torch.from_numpy(rng.integers(-128, 128, (n, n)).astype(np.int8)).cuda()
        sets.append((a, b))
    return [lambda a=a, b=b: matmul(a, b) for a, b in sets], None


# ------------------------------------------------------------------------------------------ timing

def time_gpu(fns, reps, warmup=3):
    """Median ms of ``reps`` calls (rotating over ``fns``), timed with CUDA events."""
    import torch
    for i in range(warmup):
        fns[i % len(fns)]()
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fns[i % len(fns)]()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times), min(times), max(times)


def time_cpu(fn, reps):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def host_overhead():
    """Median wall ms of a 64^3 GEMM call (launches + Python): the floor under every GPU time above."""
    import numpy as np
    import torch
    from systolic.amx import matmul
    out = {}
    for name, (a, b) in {"int8": (torch.ones(64, 64, dtype=torch.int8, device="cuda"),) * 2,
                         "bf16": (torch.ones(64, 64, dtype=torch.bfloat16, device="cuda"),) * 2}.items():
        ts = []
        for _ in range(30):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            matmul(a, b)
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t0) * 1e3)
        out[name] = round(float(np.median(ts[5:])), 3)
    return out


def host_per_call(n=4096, calls=50):
    """Host wall time of one int8 n^3 call up to its return (launches queued, no sync), cached launch path
    against the general path, plus the cProfile top entries of the general path: where the host time goes."""
    import cProfile
    import io
    import pstats
    import numpy as np
    import torch
    from systolic.amx import matmul
    from systolic.gpu import amx_kernels as G
    a = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
    b = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
    out = {}
    prof_text = ""
    for label, fast in (("cached launch path", True), ("general path", False)):
        prev = G.set_int8_fast_path(fast)
        try:
            for _ in range(3):
                matmul(a, b)
            ts = []
            for _ in range(calls):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                matmul(a, b)
                ts.append((time.perf_counter() - t0) * 1e6)
            torch.cuda.synchronize()
            out[label] = round(float(np.median(ts)), 1)
            if not fast:
                pr = cProfile.Profile()
                pr.enable()
                for _ in range(20):
                    matmul(a, b)
                pr.disable()
                torch.cuda.synchronize()
                buf = io.StringIO()
                pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(8)
                prof_text = buf.getvalue()
        finally:
            G.set_int8_fast_path(prev)
    # back to back (no sync between calls): the host cost alone, while the GPU queue absorbs the kernels
    for label, fast in (("cached launch path, back to back", True), ("general path, back to back", False)):
        prev = G.set_int8_fast_path(fast)
        try:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                matmul(a, b)
            out[label] = round((time.perf_counter() - t0) * 1e6 / calls, 1)
            torch.cuda.synchronize()
        finally:
            G.set_int8_fast_path(prev)
    # the GEMM alone: cuBLAS int8 on A and B^T (B given column-major: the plan's only launch) between two events
    from systolic.gpu import int_gemm as IG
    bt = b.t().contiguous()
    c32 = torch.empty((n, n), dtype=torch.int32, device="cuda")
    h = IG._handle()

    def launch():                            # on CuPy's current stream: the legacy default stream, as torch's
        IG._gemm_tn(h, bt.data_ptr(), a.data_ptr(), c32.data_ptr(), n, n, n, n, beta=False)
    for _ in range(3):
        launch()
    s_, e_ = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s_.record()
    for _ in range(20):
        launch()
    e_.record()
    e_.synchronize()
    out["kernel: cuBLAS int8 gemm (us)"] = round(s_.elapsed_time(e_) * 1e3 / 20, 1)
    return out, prof_text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--cpu-sizes", type=int, nargs="*", default=[4096], help="sizes at which the CPU path is timed")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--cpu-reps", type=int, default=1)
    ap.add_argument("--cases", nargs="*", help="substrings of case names to run (default: all)")
    ap.add_argument("--variants", action="store_true", help="also time every float tile variant (AMX bf16)")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--profile", action="store_true", help="print cProfile's top entries of the int8 general path")
    args = ap.parse_args(argv)
    import numpy as np
    import torch
    from systolic.gpu import availability
    ok, why = availability()
    if not ok:
        print(f"CUDA backend unavailable: {why}")
        return 1
    try:
        import xmx_cases  # noqa: F401  (optional module beside this file that registers more cases)
    except ImportError:
        pass
    cases = [c for c in CASES if not args.cases or any(s in c.name for s in args.cases)]
    overhead = host_overhead()
    print(f"host time of one small call (n=64, int8 and bf16, torch inputs): {overhead}")
    if any("int8" in c.name for c in cases):
        per_call, prof = host_per_call()
        print(f"int8 4096^3: host us per call (after a sync: median of 50; back to back: mean of 50) and the "
              f"kernels alone (20 back to back between events): {per_call}")
        if args.profile:
            print(prof)
    rows = []
    dev = torch.cuda.get_device_name()
    print(f"device: {dev}; host cores: {os.cpu_count()}; torch {torch.__version__}")
    for n in args.sizes:
        flops = 2.0 * n ** 3
        refs = {}
        for name in {c.reference for c in cases}:
            rng = np.random.default_rng(n)
            made = REFERENCES[name](n, rng)
            if isinstance(made, tuple):          # several layouts: keep the fastest
                t = min((time_gpu(f, args.reps) for f in made), key=lambda x: x[0])
            else:
                t = time_gpu(made, args.reps)
            refs[name] = t[0]
            rows.append(dict(n=n, case=name, ms=t[0], ms_min=t[1], ms_max=t[2], tflops=flops / t[0] / 1e9,
                             reference=None, ratio=None, where="gpu"))
            print(f"n={n} {name}: {t[0]:.3f} ms ({flops / t[0] / 1e9:.1f} TFLOP/s)", flush=True)
            del made
            torch.cuda.empty_cache()
        for c in cases:
            rng = np.random.default_rng(n + 1)
            gpu_fns, cpu_fn = c.make(n, rng)
            t = time_gpu(gpu_fns, args.reps)
            ratio = t[0] / refs[c.reference]
            rows.append(dict(n=n, case=c.name, ms=t[0], ms_min=t[1], ms_max=t[2], tflops=flops / t[0] / 1e9,
                             reference=c.reference, ratio=ratio, target=c.target, where="gpu", note=c.note))
            print(f"n={n} {c.name}: {t[0]:.3f} ms ({flops / t[0] / 1e9:.1f} TFLOP/s) = {ratio:.2f}x {c.reference}",
                  flush=True)
            if args.variants and c.name.startswith("AMX int8"):      # before/after: the general path, same run
                from systolic.gpu import amx_kernels as G
                prev = G.set_int8_fast_path(False)
                tv = time_gpu(gpu_fns, args.reps)
                G.set_int8_fast_path(prev)
                rows.append(dict(n=n, case=f"{c.name} [general path]", ms=tv[0], ms_min=tv[1], ms_max=tv[2],
                                 tflops=flops / tv[0] / 1e9, reference=c.reference, ratio=tv[0] / refs[c.reference],
                                 where="gpu", note="cached launch path off"))
                print(f"   general path: {tv[0]:.3f} ms ({flops / tv[0] / 1e9:.1f} TFLOP/s) = "
                      f"{tv[0] / refs[c.reference]:.2f}x", flush=True)
            if args.variants and c.name.startswith("AMX bf16") and "column" not in c.name:
                from systolic.gpu import amx_float_cuda as FC, amx_kernels as G
                kind = "check" if "check" in c.name else "fast"
                saved = G.float_variant()
                names = {"check": FC.CHECK_VARIANTS, "fast": FC.FAST_VARIANTS}[kind]
                for v in names:
                    G.set_float_variant(**{kind: v})
                    tv = time_gpu(gpu_fns, max(3, args.reps // 2))
                    rows.append(dict(n=n, case=f"{c.name} [{v}]", ms=tv[0], ms_min=tv[1], ms_max=tv[2],
                                     tflops=flops / tv[0] / 1e9, reference=c.reference, ratio=tv[0] / refs[c.reference],
                                     where="gpu", note="tile variant"))
                    print(f"   variant {v}: {tv[0]:.3f} ms ({flops / tv[0] / 1e9:.1f} TFLOP/s)", flush=True)
                G.set_float_variant(**saved)
            if c.cpu and cpu_fn is not None and n in args.cpu_sizes:
                tc = time_cpu(cpu_fn, args.cpu_reps)
                rows.append(dict(n=n, case=c.name + " (CPU path)", ms=tc, tflops=flops / tc / 1e9,
                                 reference=c.reference, ratio=tc / refs[c.reference], where="cpu",
                                 note=f"{os.cpu_count()} cores"))
                print(f"n={n} {c.name} CPU path: {tc:.1f} ms ({flops / tc / 1e9:.2f} TFLOP/s); GPU is "
                      f"{tc / t[0]:.0f}x faster", flush=True)
            del gpu_fns, cpu_fn
            torch.cuda.empty_cache()
    print()
    print(f"| n | case | ms (median) | TFLOP/s | vs reference | target |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        ratio = "" if r.get("ratio") is None else f"{r['ratio']:.2f}x {r['reference']}"
        tgt = "" if not r.get("target") else f"<= {r['target']:.0f}x: {'met' if r['ratio'] <= r['target'] else 'MISSED'}"
        print(f"| {r['n']} | {r['case']} | {r['ms']:.3f} | {r['tflops']:.1f} | {ratio} | {tgt} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=dev, cores=os.cpu_count(), torch=torch.__version__, rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
