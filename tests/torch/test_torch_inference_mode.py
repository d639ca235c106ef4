"""Under ``torch.inference_mode()`` the GEMMs still reach the engine.

Inference mode turns the Autograd dispatch keys off, so the Python dispatch mode receives the
CompositeImplicitAutograd ops themselves (``aten.linear``, ``conv2d``, ``matmul``, ``einsum``) instead of the
``addmm``/``mm``/``bmm``/``convolution`` they decompose into. Oracles: the same call under ``torch.no_grad()``
(bit for bit, same GEMM count) and, for Linear, the direct engine call (torch_oracle).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import systolic.torch as st
from torch_oracle import addmm

_G = torch.Generator().manual_seed(41)
_LIN = torch.nn.Linear(24, 9)
_CONV = torch.nn.Conv2d(3, 4, 3, padding=1)
_X2, _X3 = torch.randn(5, 24, generator=_G), torch.randn(2, 5, 24, generator=_G)
_XI = torch.randn(2, 3, 6, 5, generator=_G)
_W, _Y4 = torch.randn(24, 7, generator=_G), torch.randn(2, 3, 24, 4, generator=_G)

CASES = {
    "nn.Linear": lambda: _LIN(_X2),
    "nn.Linear 3-D": lambda: _LIN(_X3),
    "F.conv2d": lambda: F.conv2d(_XI, _CONV.weight, _CONV.bias, padding=1),
    "nn.Conv2d": lambda: _CONV(_XI),
    "matmul": lambda: torch.matmul(_X3, _W),
    "matmul batched": lambda: _X3.unsqueeze(1).expand(2, 3, 5, 24) @ _Y4,
    "einsum": lambda: torch.einsum("bik,kj->bij", _X3, _W),
}


@pytest.mark.parametrize("engine,opts", [("amx:spr", {}), ("xmx:dg2", {"precision": "int8"})], ids=["bf16", "int8"])
@pytest.mark.parametrize("case", list(CASES))
def test_inference_mode_equals_no_grad(case, engine, opts):
    fn = CASES[case]
    with torch.no_grad(), st.emulate(engine, **opts) as ref:
        want = fn()
    for fallback in ("raise", "native"):
        with torch.inference_mode(), st.emulate(engine, fallback=fallback, **opts) as mode:
            got = fn()
        assert torch.equal(got, want), case
        assert mode.gemms == ref.gemms > 0 and mode.counts == ref.counts and not mode.fallbacks


def test_inference_mode_linear_is_the_engine_gemm():
    opts = {"precision": "bf16"}
    with torch.inference_mode(), st.emulate("amx:spr") as mode:
        y = _LIN(_X2)
    w, b = _LIN.weight.detach().numpy(), _LIN.bias.detach().numpy()
    want = addmm("amx:spr", opts, b, _X2.numpy(), np.ascontiguousarray(w.T))
    assert mode.counts == {"addmm": 1} and mode.gemms == 1
    assert np.array_equal(y.numpy().view(np.uint32), want.view(np.uint32))
