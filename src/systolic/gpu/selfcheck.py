"""``systolic gpu check``: small GEMMs on the GPU compared bit for bit with the CPU path.

Each check is a function ``(rng) -> (n_outputs, n_mismatches, detail)`` registered in :data:`CHECKS` with
:func:`register`: the AMX instructions and the XMX kernels (integer GEMM, the FP32-pipe and binary64 "stage"
kernels with the robust fix-up, "sequential").
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

__all__ = ["CHECKS", "register", "run_checks", "CheckResult"]

CHECKS: dict = {}


def register(name: str):
    def deco(fn):
        CHECKS[name] = fn
        return fn
    return deco


@dataclass
class CheckResult:
    name: str
    outputs: int
    mismatches: int
    seconds: float
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.mismatches == 0 and self.outputs > 0


def _bits(x):
    return np.ascontiguousarray(x).view(np.uint32)


def _pair(matmul, a, b, c, **kw):
    """(outputs, mismatches) of one engine's matmul on the CUDA backend against its CPU path, same arguments."""
    got = matmul(a, b, c, backend="cuda", **kw)
    want = matmul(a, b, c, backend="cpu", **kw)
    return got.size, int((_bits(got) != _bits(want)).sum())


def _amx_pair(a, b, c, cpu):
    from ..amx import matmul
    return _pair(matmul, a, b, c, device=cpu)


def _float_inputs(rng, shape, dt, bits16):
    M, K, N = shape
    a = rng.standard_normal((M, K)).astype(np.float32).astype(dt)
    b = rng.standard_normal((K, N)).astype(np.float32).astype(dt)
    # adversarial sprinkles: +-0, +-inf, NaN payloads, denormals (as 16-bit patterns of this format)
    for x in (a, b):
        v = x.view(np.uint16)
        w = rng.random(v.shape) < 0.02
        v[w] = rng.choice(np.array(bits16, np.uint16), int(w.sum()))
    c = rng.standard_normal((M, N)).astype(np.float32)
    return a, b, c


for _mn, _signs in (("tdpbssd", (1, 1)), ("tdpbsud", (1, 0)), ("tdpbusd", (0, 1)), ("tdpbuud", (0, 0))):
    def _int8_check(rng, _s=_signs):
        da = np.int8 if _s[0] else np.uint8
        db = np.int8 if _s[1] else np.uint8
        a = rng.integers(0, 256, (67, 300)).astype(np.uint8).view(da)
        b = rng.integers(0, 256, (300, 129)).astype(np.uint8).view(db)
        c = rng.integers(-2 ** 31, 2 ** 31, (67, 129), dtype=np.int64).astype(np.int32)
        n, bad = _amx_pair(a, b, c, "sapphirerapids")
        return n, bad, "67x300x129, C random (int32 wrap)"
    register(f"amx {_mn}")(_int8_check)


@register("amx tdpbf16ps")
def _bf16_check(rng):
    import ml_dtypes
    a, b, c = _float_inputs(rng, (67, 300, 129), ml_dtypes.bfloat16,
                            [0, 0x8000, 0x7F80, 0xFF80, 0x7FC1, 0x7F81, 0x0001, 0x8070])
    n, bad = _amx_pair(a, b, c, "sapphirerapids")
    return n, bad, "67x300x129, with +-0, inf, NaN payloads, denormals"


@register("amx tdpfp16ps")
def _fp16_check(rng):
    a, b, c = _float_inputs(rng, (67, 300, 129), np.float16, [0, 0x8000, 0x7C00, 0xFC00, 0x7E01, 0x7C01, 0x0001, 0x83FF])
    n, bad = _amx_pair(a, b, c, "graniterapids")
    return n, bad, "67x300x129, with +-0, inf, NaN payloads, fp16 denormals"


def _xmx_pair(a, b, c, **kw):
    from ..xmx import matmul
    return _pair(matmul, a, b, c, **kw)


@register("xmx s8 x u4 (pvc)")
def _xmx_int_check(rng):
    import ml_dtypes
    a = rng.integers(-128, 128, (67, 300)).astype(np.int8)
    b = rng.integers(0, 16, (300, 129)).astype(ml_dtypes.uint4)
    c = rng.integers(-2 ** 31, 2 ** 31, (67, 129), dtype=np.int64).astype(np.int32)
    n, bad = _xmx_pair(a, b, c, device="pvc")
    return n, bad, "67x300x129, C random (int32 wrap)"


@register("xmx bf16 stage (pvc)")
def _xmx_stage_check(rng):
    import ml_dtypes
    a = rng.standard_normal((67, 512)).astype(np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((512, 129)).astype(np.float32).astype(ml_dtypes.bfloat16)
    c = rng.standard_normal((67, 129)).astype(np.float32)
    n, bad = _xmx_pair(a, b, c, device="pvc", model="stage")
    return n, bad, "67x512x129 normal values (the FP32-pipe kernel)"


@register("xmx bf16 stage, specials (bmg)")
def _xmx_stage_specials_check(rng):
    import ml_dtypes
    a, b, c = _float_inputs(rng, (67, 300, 129), ml_dtypes.bfloat16,
                            [0, 0x8000, 0x7F80, 0xFF80, 0x7FC1, 0x7F81, 0x0001, 0x8070])
    n, bad = _xmx_pair(a, b, c, device="bmg", model="stage")
    return n, bad, "67x300x129 with +-0, inf, NaN payloads, denormals (binary64 kernel + robust fix-up)"


@register("xmx fp16 sequential (dg2)")
def _xmx_sequential_check(rng):
    a, b, c = _float_inputs(rng, (67, 300, 129), np.float16, [0, 0x8000, 0x7C00, 0xFC00, 0x7E01, 0x0001, 0x83FF])
    n, bad = _xmx_pair(a, b, c, device="dg2", model="sequential")
    return n, bad, "67x300x129 with +-0, inf, NaN payloads, fp16 denormals"


def run_checks(seed: int = 0) -> list[CheckResult]:
    """Run every registered check (raises BackendUnavailable first when the GPU cannot run)."""
    from . import runtime
    runtime.require()
    out = []
    for name, fn in CHECKS.items():
        rng = np.random.default_rng([seed, len(out)])
        t0 = time.perf_counter()
        n, bad, detail = fn(rng)
        out.append(CheckResult(name, int(n), int(bad), time.perf_counter() - t0, detail))
    return out
