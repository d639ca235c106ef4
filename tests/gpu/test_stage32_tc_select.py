"""When the tensor-core stage kernel (xmx_stage32tc) may take the operands, checked without a GPU.

xmx_kernels._tc_mode decides from the whole operands' statistics (min lsb, max magnitude pattern, as the
stats kernels compute them) whether every operand value is exact and normal in bf16 (mode 0) or fp16 (mode 1)
and every nonzero product a normal binary32 number. Soundness is checked against the values themselves:
round trips through ml_dtypes, magnitudes and exact float64 products."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from systolic.gpu import xmx_kernels as XK
from systolic.gpu.xmx_source import STAGE32_VARIANTS, stage32_kernel

SIG = {"bf16": 8, "fp16": 11}
DT = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16}


class _Host:
    """Stands in for the device array of statistics (the kernels read it with .get())."""

    def __init__(self, v):
        self.v = np.asarray(v)

    def get(self):
        return self.v


def _stats(v: np.ndarray, sig: int) -> tuple[int, int]:
    """(min lsb, max magnitude pattern) of binary32 values as the stats kernels define them (lsb_of, mag_of)."""
    u = v.astype(np.float32).view(np.uint32) & 0x7FFFFFFF
    e = (u >> 23).astype(np.int64)
    lsb = np.where(u == 0, XK.BIG_LSB, np.where(e == 0, -149, e - 127 - (sig - 1)))
    mag = np.minimum(u, 0x7F800000)
    return int(lsb.min(initial=XK.BIG_LSB)), int(mag.max(initial=0))


def _mode(a, b, p):
    la, ma = _stats(a, SIG[p])
    lb, mb = _stats(b, SIG[p])
    return XK._tc_mode((SIG[p], SIG[p]), _Host([la, ma, lb, mb]))


def _exact_normal(v: np.ndarray, p: str) -> bool:
    f = v.astype(np.float64)
    back = f.astype(np.float32).astype(DT[p]).astype(np.float64)
    tiny = 2.0 ** -126 if p == "bf16" else 2.0 ** -14
    return bool(np.array_equal(back, f) and np.all((f == 0) | (np.abs(f) >= tiny)))


@settings(max_examples=300, deadline=None)
@given(p=st.sampled_from(["bf16", "fp16"]), ea=st.integers(-140, 40), eb=st.integers(-140, 40),
       spread=st.integers(0, 30), seed=st.integers(0, 2 ** 32 - 1), zeros=st.booleans())
def test_tc_mode_is_sound(p, ea, eb, spread, seed, zeros):
    rng = np.random.default_rng(seed)

    def vals(e0, shape):
        v = rng.standard_normal(shape) * 2.0 ** rng.integers(e0, e0 + spread + 1, shape)
        if zeros:
            v[rng.random(shape) < 0.3] = 0.0
        with np.errstate(over="ignore"):
            return v.astype(np.float32).astype(DT[p]).astype(np.float32)

    a, b = vals(ea, (6, 5)), vals(eb, (5, 7))
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return
    mode = _mode(a, b, p)
    if mode is None:
        return
    q = "bf16" if mode == 0 else "fp16"
    assert _exact_normal(a, q) and _exact_normal(b, q), (mode, a, b)
    prods = np.abs(a.astype(np.float64).reshape(-1, 1) * b.astype(np.float64).reshape(1, -1))
    assert np.all((prods == 0) | (prods >= 2.0 ** -126)), mode


def test_tc_mode_takes_ordinary_operands_and_refuses_the_rest():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16).astype(np.float32)
    b = rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16).astype(np.float32)
    assert _mode(a, b, "bf16") == 0                                      # randn bf16: the tensor cores
    assert _mode(a * 2.0 ** -70, b * 2.0 ** -70, "bf16") is None         # products below 2**-126
    one = np.float32([[1.0, 0.0]])
    assert _mode(one * 2.0 ** -63, one.T * 2.0 ** -63, "bf16") == 0       # 2**-126: the smallest normal
    assert _mode(one * 2.0 ** -63, one.T * 2.0 ** -64, "bf16") is None    # 2**-127: a subnormal product
    assert _mode(np.zeros((2, 2), np.float32), b, "bf16") == 0            # all zeros constrain nothing
    assert _mode(np.float32([[2.0 ** -130]]), np.float32([[2.0 ** 20]]), "bf16") is None   # binary32 subnormal
    h = np.float32([[1.5, -2.0], [0.25, 1024.0]])
    assert _mode(h, h, "fp16") == 1
    assert _mode(h * 64, h, "fp16") is None                              # 65536: past fp16's range
    assert _mode(np.float32([[2.0 ** -20]]), h, "fp16") is None          # fp16 subnormals
    assert _mode(np.float32([[2.0 ** -15]]), h, "fp16") is None
    assert _mode(np.float32([[2.0 ** -14]]), h, "fp16") == 1             # fp16's smallest normal


def test_stage32_kernel_names_and_block_rows():
    assert stage32_kernel((2, 2, 4, 0, 8)) == ("xmx_stage32<2, 2, 4, 0, 8>", 64)
    assert stage32_kernel((1, 1, 8, 1, 8)) == ("xmx_stage32<1, 1, 8, 1, 8>", 128)
    assert stage32_kernel((2, 2, 4, 0, 0, 2)) == ("xmx_stage32<2, 2, 4, 0, 0, 2>", 64)     # NB: tiles per barrier
    assert stage32_kernel((4, 2, 0, 0, 0), 1) == ("xmx_stage32tc<4, 2, 1>", 64)
    assert any(v[2] == 0 for v in STAGE32_VARIANTS)            # a tensor-core variant is compiled and measured
