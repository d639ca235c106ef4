"""int8 scales follow the documented recipe (docs/torch.md "int8 recipe"), not ATen's routing of the op.

One activation scale per tensor (max|A| / 127 over the whole activation tensor, whatever GEMMs it is cut into),
per-output-channel weight scales. Oracle: exact integer arithmetic with numpy int64 on operands quantised with
numpy (float32 division, np.rint = half to even), then the recipe's fp32 dequantisation; nothing of
systolic.torch, and no engine: an int8 GEMM is exact, so the int64 product is what TDPBSSD / s8 DPAS give.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import systolic.torch as st

ENGINES = ["amx:spr", "xmx:dg2"]


def _r(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _scale(x, axis=None):
    m = np.abs(np.asarray(x, np.float32)).max(axis=axis)
    s = (np.asarray(m, np.float32) / np.float32(127)).astype(np.float32)
    return np.where(s == 0, np.float32(1), s).astype(np.float32)


def _q(x, s):
    return np.clip(np.rint(np.asarray(x, np.float32) / s), -127, 127).astype(np.int64)


def _int8(a, b, sa, bias=None):
    """float32(q(a) @ q(b)) * (sa * sb) [+ bias]: the int64 product is exact; sb per column of b."""
    sb = _scale(b, axis=0)
    acc = _q(a, sa) @ _q(b, sb)
    assert np.abs(acc).max() < 2 ** 24                      # the int32 -> fp32 conversion is exact
    y = acc.astype(np.float32) * (np.float32(sa) * sb).astype(np.float32)
    return y if bias is None else (y + np.asarray(bias, np.float32)).astype(np.float32)


def _same(t, e):
    t = t.detach().contiguous().numpy()
    assert t.shape == e.shape and np.array_equal(t.view(np.uint32), np.ascontiguousarray(e).view(np.uint32))


@pytest.mark.parametrize("engine", ENGINES)
def test_linear_noncontiguous_3d_input_is_one_activation_tensor(engine):
    lin = torch.nn.Linear(10, 7).requires_grad_(False)      # weight without grad: ATen routes it as bmm
    with torch.no_grad():
        lin.weight.copy_(_r(7, 10, seed=1))
        lin.bias.copy_(_r(7, seed=2))
    x = _r(3, 4, 10, seed=3).transpose(0, 1)                # (4, 3, 10), non-contiguous
    x[0, 0, 0] = 9.0                                         # the largest |x|: in one batch element only
    with st.emulate(engine, precision="int8"):
        y = lin(x)
        yc = lin(x.contiguous())
    xn = x.contiguous().numpy().reshape(12, 10)
    e = _int8(xn, lin.weight.numpy().T, _scale(xn), lin.bias.numpy()).reshape(4, 3, 7)
    _same(y, e)
    _same(yc, e)


@pytest.mark.parametrize("engine", ENGINES)
def test_bmm_with_a_broadcast_weight_is_one_gemm(engine):
    a, w = _r(3, 5, 12, seed=4), _r(12, 6, seed=5)
    a[2] *= 50
    with st.emulate(engine, precision="int8") as mode:
        y = torch.bmm(a, w.expand(3, 12, 6))
        z = torch.baddbmm(_r(6, seed=6), a, w.expand(3, 12, 6), alpha=0.5)
    assert mode.gemms == 2
    an = a.numpy().reshape(15, 12)
    _same(y, _int8(an, w.numpy(), _scale(an)).reshape(3, 5, 6))
    zz = (_int8(an, w.numpy(), _scale(an)) * np.float32(0.5)).astype(np.float32) + _r(6, seed=6).numpy()
    _same(z, zz.reshape(3, 5, 6))


@pytest.mark.parametrize("engine", ENGINES)
def test_bmm_of_two_activations_keeps_per_batch_scales(engine):
    """Both operands vary with the batch (attention): per-tensor scales per batch element, as documented."""
    a, b = _r(2, 4, 8, seed=7), _r(2, 8, 3, seed=8)
    a[1] *= 30
    with st.emulate(engine, precision="int8"):
        y = torch.bmm(a, b)
    e = []
    for i in range(2):
        an, bn = a[i].numpy(), b[i].numpy()
        sb = _scale(bn)
        acc = _q(an, _scale(an)) @ _q(bn, sb)
        e.append(acc.astype(np.float32) * np.float32(_scale(an) * sb))
    _same(y, np.stack(e))


def _im2col(x, kh, kw, stride):
    """(n, c, h, w) -> rows (n, oh, ow), columns (c, i, j); no padding, no dilation; loops."""
    n, c, h, w = x.shape
    oh, ow = (h - kh) // stride[0] + 1, (w - kw) // stride[1] + 1
    rows = np.empty((n, oh, ow, c, kh, kw), np.float32)
    for p in range(oh):
        for q in range(ow):
            rows[:, p, q] = x[:, :, p * stride[0]:p * stride[0] + kh, q * stride[1]:q * stride[1] + kw]
    return rows.reshape(n * oh * ow, c * kh * kw), oh, ow


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("groups,stride", [(2, (1, 1)), (4, (1, 1)), (1, (2, 2)), (2, (2, 3))],
                         ids=["groups2", "depthwise", "stride2", "groups2-stride"])
def test_conv_activation_scale_is_over_the_whole_input(engine, groups, stride):
    x, w, b = _r(2, 4, 7, 8, seed=9), _r(4, 4 // groups, 3, 3, seed=10), _r(4, seed=11)
    x[:, 0] *= 40                                      # channel 0 (group 0) large: other groups' im2col is small
    x[1, 3, 6, 7] = 500.0                              # the largest |x| at a pixel stride 2 skips (and 3 x 3 reaches)
    with st.emulate(engine, precision="int8"):
        y = F.conv2d(x, w, b, stride=stride, groups=groups)
    xn, wn, sa = x.numpy(), w.numpy(), _scale(x.numpy())
    cg = ocg = 4 // groups
    outs = []
    for g in range(groups):
        a, oh, ow = _im2col(xn[:, g * cg:(g + 1) * cg], 3, 3, stride)
        outs.append(_int8(a, wn[g * ocg:(g + 1) * ocg].reshape(ocg, -1).T, sa, b.numpy()[g * ocg:(g + 1) * ocg]))
    _same(y, np.concatenate(outs, axis=1).reshape(2, oh, ow, 4).transpose(0, 3, 1, 2))
