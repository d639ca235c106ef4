"""scaled_dot_product_attention under emulate: the rules PyTorch defines (fully masked rows, argument checks) and
the fallback rule of the mode.

Oracles: plain PyTorch under ``SDPBackend.MATH`` where PyTorch defines the value (a fully masked query row is 0:
``_safe_softmax``, torch >= 2.5) or the error; for the rows the engine computes, the two GEMMs through the direct
engine call (torch_oracle) with fp32 scale, mask and softmax between them, as in test_torch_dispatch.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import systolic.torch as st
from systolic.errors import UnsupportedOperation
from torch_oracle import gemm


def _r(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _oracle(q, k, v, keep, opts=None):
    """Per (batch, head): S = Q K^T on the engine, * 1/sqrt(E), masked (keep: bool L x S), softmax, P V."""
    opts = opts or {"precision": "bf16"}
    out = np.empty(q.shape[:-1] + (v.shape[-1],), np.float32)
    sc = 1 / np.sqrt(q.shape[-1])
    for i in np.ndindex(*q.shape[:-2]):
        s = torch.from_numpy(gemm("amx:spr", opts, q[i].numpy(), k[i].numpy().T, weight=False)) * sc
        p = torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1)
        out[i] = gemm("amx:spr", opts, p.numpy(), v[i].numpy(), weight=False)
    return out


@pytest.mark.parametrize("kind", ["bool", "additive", "mha-flash-op"])
def test_fully_masked_rows_are_zero_as_torch(kind):
    q, k, v = _r(2, 3, 5, 8, seed=1), _r(2, 3, 6, 8, seed=2), _r(2, 3, 6, 4, seed=3)
    keep = torch.rand(5, 6, generator=torch.Generator().manual_seed(4)) > 0.4
    keep[:, 0] = True
    keep[1] = False                                    # row 1: every key masked
    keep[4] = False
    mask = keep if kind == "bool" else torch.zeros(5, 6).masked_fill(~keep, float("-inf"))
    with sdpa_kernel(SDPBackend.MATH):
        want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    with st.emulate("amx:spr") as mode:
        if kind == "mha-flash-op":                     # the ATen op nn.MultiheadAttention reaches
            got = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, False, attn_mask=mask)[0]
        else:
            got = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert mode.counts["scaled_dot_product_attention"] == 1
    assert not got.isnan().any()
    assert torch.equal(got[:, :, [1, 4]], want[:, :, [1, 4]]) and not want[:, :, [1, 4]].any()
    exp = _oracle(q, k, v, keep)
    rows = [0, 2, 3]
    assert np.array_equal(got[:, :, rows].numpy().view(np.uint32), exp[:, :, rows].view(np.uint32))


# ------------------------------------------------- the mode's rules apply to attention too

_Q, _K, _V = _r(1, 2, 4, 8, seed=5), _r(1, 2, 6, 8, seed=6), _r(1, 2, 6, 8, seed=7)


def test_float64_attention_follows_the_fallback_rule():
    q, k, v = _Q.double(), _K.double(), _V.double()
    with st.emulate("amx:spr") as mode, pytest.raises(UnsupportedOperation, match="float64") as ei:
        F.scaled_dot_product_attention(q, k, v)
    assert ei.value.values["op"] == "scaled_dot_product_attention" and mode.gemms == 0
    want = F.scaled_dot_product_attention(q, k, v)
    with st.emulate("amx:spr", fallback="native") as mode:
        got = F.scaled_dot_product_attention(q, k, v)
    assert got.dtype == torch.float64 and torch.equal(got, want)
    assert mode.gemms == 0 and mode.fallbacks == {"scaled_dot_product_attention": 1}


@pytest.mark.parametrize("via", ["F.sdpa", "flash-op"])
def test_dropout_follows_the_fallback_rule(via):
    """Refused by name; with fallback="native" run by plain torch (whose CPU flash op itself refuses dropout)."""
    def call():
        torch.manual_seed(123)
        if via == "F.sdpa":
            return F.scaled_dot_product_attention(_Q, _K, _V, dropout_p=0.3)
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(_Q, _K, _V, 0.3, False)[0]
    with st.emulate("amx:spr"), pytest.raises(UnsupportedOperation, match="dropout") as ei:
        call()
    assert ei.value.values["op"] in ("scaled_dot_product_attention", "_scaled_dot_product_flash_attention_for_cpu")
    try:
        want = call()
    except RuntimeError as e:                      # plain torch's own refusal: the native fallback gives the same
        with st.emulate("amx:spr", fallback="native") as mode, pytest.raises(RuntimeError) as emu:
            call()
        assert str(emu.value) == str(e) and mode.gemms == 0
        return
    with st.emulate("amx:spr", fallback="native") as mode:
        got = call()
    assert torch.equal(got, want) and mode.gemms == 0 and sum(mode.fallbacks.values()) == 1


def test_mask_with_is_causal_is_refused_as_torch():
    mask = torch.ones(4, 6, dtype=torch.bool)
    with sdpa_kernel(SDPBackend.MATH), pytest.raises(RuntimeError) as plain:
        F.scaled_dot_product_attention(_Q, _K, _V, attn_mask=mask, is_causal=True)
    with st.emulate("amx:spr") as mode, pytest.raises(RuntimeError) as emu:
        F.scaled_dot_product_attention(_Q, _K, _V, attn_mask=mask, is_causal=True)
    assert type(emu.value) is type(plain.value) and str(emu.value) == str(plain.value) and mode.gemms == 0
