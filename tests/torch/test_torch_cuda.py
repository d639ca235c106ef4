"""CUDA tensors under emulate run on the engines' CUDA backend and give the CPU emulator's bits (device only)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import systolic.torch as st
from torch_oracle import ENGINES, IDS


def _cuda_ready():
    if not torch.cuda.is_available():
        return False, "no CUDA device for torch"
    from systolic.gpu import runtime
    return runtime.availability()


_ok, _why = _cuda_ready()
pytestmark = [pytest.mark.skipif(not _ok, reason=f"CUDA backend unavailable: {_why}"),
              pytest.mark.parametrize("eng", ENGINES, ids=IDS)]


def _bits(t):
    t = t.detach().cpu().contiguous()
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32).numpy()


def test_model_on_cuda_equals_cpu_emulator(eng):
    name, opts = eng
    g = torch.Generator().manual_seed(5)
    x, w, b = torch.randn(37, 70, generator=g), torch.randn(45, 70, generator=g), torch.randn(45, generator=g)
    img, k = torch.randn(2, 3, 9, 9, generator=g), torch.randn(8, 3, 3, 3, generator=g)
    q = torch.randn(1, 2, 7, 16, generator=g)
    outs = {}
    for dev in ("cpu", "cuda"):
        with st.emulate(name, **opts) as mode:
            y1 = F.linear(x.to(dev), w.to(dev), b.to(dev))
            y2 = F.conv2d(img.to(dev), k.to(dev), padding=1)
            y3 = F.scaled_dot_product_attention(q.to(dev), q.to(dev), q.to(dev), is_causal=True)
        assert not mode.fallbacks and all(t.device.type == dev for t in (y1, y2, y3))
        outs[dev] = (y1, y2, y3)
    # the GEMM-only ops give the same bits; SDPA's softmax is plain torch on each device (CPU and CUDA exp may
    # differ in the last bit), so there only closeness is a property of ours
    for c, g_ in zip(outs["cpu"][:2], outs["cuda"][:2]):
        assert np.array_equal(_bits(c), _bits(g_))
    assert torch.allclose(outs["cpu"][2], outs["cuda"][2].cpu(), rtol=1e-2, atol=1e-2)
