"""XMX cases of benchmarks/bench_gpu.py (imported by it when present): ``systolic.xmx.matmul(backend="cuda")``
on torch CUDA tensors, end to end (decode, kernels, flag fix-ups), platform pvc, against the references of
bench_gpu.py timed in the same run. Targets of issue 14: bf16 "sequential" <= 2x torch fp32 (TF32 off), bf16
"stage" <= 4x, int8 <= 2x ``torch._int_mm``. The stage kernel's variants: benchmarks/bench_gpu_xmx.py --variants.
"""

from __future__ import annotations

import importlib
import sys

_main = sys.modules.get("__main__")
_bg = _main if hasattr(_main, "case") else importlib.import_module("bench_gpu")
case = _bg.case


def _float_sets(n, rng, fp16=False):
    import ml_dtypes
    import numpy as np
    torch = _bg._torch()
    dt, tt = (np.float16, torch.float16) if fp16 else (ml_dtypes.bfloat16, torch.bfloat16)
    out = []
    for _ in range(2):
        a = rng.standard_normal((n, n)).astype(np.float32).astype(dt)
        b = rng.standard_normal((n, n)).astype(np.float32).astype(dt)
        out.append(((a, b), (torch.from_numpy(a.view(np.int16)).view(tt).cuda(),
                             torch.from_numpy(b.view(np.int16)).view(tt).cuda())))
    return out


def _xmx_float(n, rng, model, fp16=False):
    from systolic.xmx import matmul
    sets = _float_sets(n, rng, fp16)
    gpu = [lambda ta=ta, tb=tb: matmul(ta, tb, device="pvc", model=model, backend="cuda") for _, (ta, tb) in sets]
    (a, b), _ = sets[0]
    return gpu, (lambda: matmul(a, b, device="pvc", model=model, backend="cpu"))


@case("XMX bf16 sequential", "torch fp32 (TF32 off)", target=2.0, note="binary32 FMA chain per output")
def xmx_bf16_sequential(n, rng):
    return _xmx_float(n, rng, "sequential")


@case("XMX bf16 stage", "torch fp32 (TF32 off)", target=4.0,
      note="FP32 pipe (xmx_stage32): RD/RU bounds per stage, RN of both equal -> proven, else exact sum of three")
def xmx_bf16_stage(n, rng):
    return _xmx_float(n, rng, "stage")


@case("XMX fp16 stage", "torch fp32 (TF32 off)", cpu=False, note="11-bit significands: more flagged elements")
def xmx_fp16_stage(n, rng):
    return _xmx_float(n, rng, "stage", fp16=True)


@case("XMX s8 x s8", "torch int8 _int_mm", target=2.0, note="cuBLAS int8 GEMM (int_gemm), B transposed first")
def xmx_int8(n, rng):
    import numpy as np
    from systolic.xmx import matmul
    torch = _bg._torch()
    sets = []
    for _ in range(2):
        a = rng.integers(-128, 128, (n, n)).astype(np.int8)
        b = rng.integers(-128, 128, (n, n)).astype(np.int8)
        sets.append(((a, b), (torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda())))
    gpu = [lambda ta=ta, tb=tb: matmul(ta, tb, backend="cuda") for _, (ta, tb) in sets]
    (a, b), _ = sets[0]
    return gpu, (lambda: matmul(a, b, backend="cpu"))
