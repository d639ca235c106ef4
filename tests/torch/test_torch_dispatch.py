"""Every op dispatched under systolic.torch.emulate equals the direct engine call on the same operands, bit for bit.

The oracle (torch_oracle.py) converts and quantises with numpy/ml_dtypes and calls systolic.amx.matmul /
systolic.xmx.matmul directly; nothing of systolic.torch is used to build an expected value.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import systolic.torch as st
from systolic.errors import UnsupportedOperation
from torch_oracle import ENGINES, IDS, addmm, gemm, scale

pytestmark = pytest.mark.parametrize("eng", ENGINES, ids=IDS)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _r(*shape, seed=0):
    return torch.randn(*shape, generator=_gen(seed))


def _same(t: torch.Tensor, expected: np.ndarray):
    got = t.detach().contiguous()
    exp = np.asarray(expected)
    exp = np.ascontiguousarray(exp) if exp.ndim else exp
    assert tuple(got.shape) == exp.shape
    if got.dtype == torch.bfloat16:
        gb = got.view(torch.int16).numpy().view(np.uint16)
    else:
        gb = got.numpy().view(np.uint32 if got.dtype == torch.float32 else np.uint16)
    eb = exp.view(gb.dtype)
    bad = np.argwhere(gb != eb)
    assert bad.size == 0, f"{len(bad)} elements differ, first at {bad[0]}: {got.numpy().ravel()[:4]}"


def _np(t):
    return t.detach().to(torch.float32).numpy()


def test_mm_transposed_weight(eng):
    name, opts = eng
    a, w = _r(7, 37, seed=1), _r(20, 37, seed=2)
    with st.emulate(name, **opts):
        y = torch.mm(a, w.t())                          # b is a transposed (column-major) view
    _same(y, gemm(name, opts, _np(a), _np(w).T))


def test_addmm_bias_alpha_beta(eng):
    name, opts = eng
    a, b, bias = _r(9, 33, seed=3), _r(33, 18, seed=4), _r(18, seed=5)
    with st.emulate(name, **opts):
        y1 = torch.addmm(bias, a, b)
        y2 = torch.addmm(bias, a, b, beta=0.5, alpha=2.0)
        y3 = bias.expand(9, 18).clone().addmm_(a, b)  # in-place form
    _same(y1, addmm(name, opts, _np(bias), _np(a), _np(b)))
    _same(y2, addmm(name, opts, _np(bias), _np(a), _np(b), beta=0.5, alpha=2.0))
    _same(y3, addmm(name, opts, _np(bias), _np(a), _np(b)))


def test_linear_2d_3d(eng):
    name, opts = eng
    x, w, bias = _r(2, 5, 24, seed=6), _r(11, 24, seed=7), _r(11, seed=8)
    with st.emulate(name, **opts):
        y2 = F.linear(x[0], w, bias)
        y3 = F.linear(x, w, bias)
        n3 = torch.nn.functional.linear(x, w)
    _same(y2, addmm(name, opts, _np(bias), _np(x[0]), _np(w).T))
    _same(y3, addmm(name, opts, _np(bias), _np(x).reshape(10, 24), _np(w).T).reshape(2, 5, 11))
    _same(n3, gemm(name, opts, _np(x).reshape(10, 24), _np(w).T).reshape(2, 5, 11))


def test_bmm_baddbmm_strided(eng):
    name, opts = eng
    a, b = _r(3, 6, 40, seed=9), _r(3, 13, 40, seed=10).transpose(1, 2)   # b: non-contiguous batch of views
    bias = _r(13, seed=11)
    with st.emulate(name, **opts):
        y = torch.bmm(a, b)
        z = torch.baddbmm(bias, a, b, alpha=0.75)
    _same(y, np.stack([gemm(name, opts, _np(a[i]), _np(b[i]), weight=False) for i in range(3)]))
    _same(z, np.stack([addmm(name, opts, _np(bias), _np(a[i]), _np(b[i]), weight=False, alpha=0.75)
                       for i in range(3)]))


def test_bmm_broadcast_weight(eng):
    """bmm with B broadcast over the batch (stride 0), as nn.Linear on a non-contiguous 3-D input reaches it: float
    engines give the per-batch GEMMs' bits (rows are independent); int8 quantises it as the weight of one GEMM."""
    name, opts = eng
    lin = torch.nn.Linear(24, 11).requires_grad_(False)
    x = _r(5, 3, 24, seed=38).transpose(0, 1)                      # (3, 5, 24), non-contiguous
    with st.emulate(name, **opts) as mode:
        y = lin(x)
    assert mode.counts["bmm"] == 1
    w, b = _np(lin.weight).T, _np(lin.bias)
    if opts["precision"] == "int8":
        e = gemm(name, opts, _np(x).reshape(15, 24), w).reshape(3, 5, 11)
    else:
        e = np.stack([gemm(name, opts, _np(x[i]), w) for i in range(3)])
    _same(y, (e + b).astype(np.float32))


def test_matmul_shapes(eng):
    name, opts = eng
    x4, y4 = _r(2, 3, 5, 16, seed=12), _r(2, 3, 16, 7, seed=13)
    x3, w = _r(4, 5, 16, seed=14), _r(16, 9, seed=15)
    v, u = _r(16, seed=16), _r(16, seed=17)
    with st.emulate(name, **opts):
        r4 = torch.matmul(x4, y4)                        # batched -> bmm over 6
        r3 = x3 @ w                                      # folded to mm (B is the weight)
        rv = torch.matmul(w.t(), v)                      # mv
        rd = torch.matmul(v, u)                          # dot
    e4 = np.stack([gemm(name, opts, _np(x4).reshape(6, 5, 16)[i], _np(y4).reshape(6, 16, 7)[i], weight=False)
                   for i in range(6)]).reshape(2, 3, 5, 7)
    _same(r4, e4)
    _same(r3, gemm(name, opts, _np(x3).reshape(20, 16), _np(w)).reshape(4, 5, 9))
    _same(rv, gemm(name, opts, _np(w).T, _np(v)[:, None])[:, 0])
    _same(rd, gemm(name, opts, _np(v)[None, :], _np(u)[:, None]).reshape(()))


def _im2col(x, kh, kw, stride, padding, dilation):
    """Rows = output pixels (n, oh, ow), columns = (c, i, j): loops, no torch.unfold."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    rows = np.empty((n, oh, ow, c, kh, kw), np.float32)
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dilation[0], j * dilation[1]
            patch = xp[:, :, r0:r0 + stride[0] * (oh - 1) + 1:stride[0], c0:c0 + stride[1] * (ow - 1) + 1:stride[1]]
            rows[..., i, j] = patch.transpose(0, 2, 3, 1)
    return rows.reshape(n * oh * ow, c * kh * kw), oh, ow


@pytest.mark.parametrize("groups,stride,padding,dilation", [(1, (1, 1), (1, 1), (1, 1)), (2, (2, 1), (0, 2), (1, 2))])
def test_conv2d_im2col(eng, groups, stride, padding, dilation):
    name, opts = eng
    x, w, bias = _r(2, 4, 7, 6, seed=18), _r(6, 4 // groups, 3, 2, seed=19), _r(6, seed=20)
    with st.emulate(name, **opts):
        y = F.conv2d(x, w, bias, stride=stride, padding=padding, dilation=dilation, groups=groups)
    cg, ocg = 4 // groups, 6 // groups
    outs = []
    for g in range(groups):
        a, oh, ow = _im2col(_np(x)[:, g * cg:(g + 1) * cg], 3, 2, stride, padding, dilation)
        b = _np(w)[g * ocg:(g + 1) * ocg].reshape(ocg, -1).T
        outs.append(addmm(name, opts, _np(bias)[g * ocg:(g + 1) * ocg], a, b, a_scale=scale(_np(x))))
    e = np.concatenate(outs, axis=1).reshape(2, oh, ow, 6).transpose(0, 3, 1, 2)
    _same(y, e)


@pytest.mark.parametrize("order", ["chw", "hwc"])
def test_conv2d_weight_that_cannot_be_viewed(eng, order):
    """A weight view whose (OC, C*KH*KW) form is not a view (kh and kw transposed): the same GEMM as its copy."""
    name, opts = eng
    x, w = _r(2, 4, 6, 5, seed=36), _r(6, 2, 3, 3, seed=37).transpose(2, 3)
    assert not w.is_contiguous()
    with st.emulate(name, conv_k_order=order, **opts):
        y = F.conv2d(x, w, groups=2)
    outs = []
    for g in range(2):
        a, oh, ow = _im2col(_np(x)[:, 2 * g:2 * g + 2], 3, 3, (1, 1), (0, 0), (1, 1))   # columns (c, i, j)
        b = np.ascontiguousarray(_np(w)[3 * g:3 * g + 3])                               # (o, c, i, j)
        if order == "hwc":                                                              # columns (i, j, c)
            a = a.reshape(-1, 2, 3, 3).transpose(0, 2, 3, 1).reshape(a.shape[0], -1)
            b = b.transpose(0, 2, 3, 1)
        outs.append(gemm(name, opts, a, b.reshape(3, -1).T, a_scale=scale(_np(x))))
    _same(y, np.concatenate(outs, axis=1).reshape(2, oh, ow, 6).transpose(0, 3, 1, 2))


def test_sdpa_two_gemms(eng):
    name, opts = eng
    q, k, v = _r(1, 2, 5, 16, seed=21), _r(1, 2, 6, 16, seed=22), _r(1, 2, 6, 8, seed=23)
    mask = torch.rand(5, 6, generator=_gen(24)) > 0.3
    mask[:, 0] = True
    with st.emulate(name, **opts) as mode:
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert mode.counts["scaled_dot_product_attention"] == 1 and mode.gemms == 4
    out = []
    for h in range(2):
        s = torch.from_numpy(gemm(name, opts, _np(q[0, h]), _np(k[0, h]).T, weight=False)) * (1 / 4.0)
        p = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
        out.append(gemm(name, opts, p.numpy(), _np(v[0, h]), weight=False))
    _same(y, np.stack(out)[None])


def test_half_models_round_output(eng):
    """A model in bf16/fp16: the fp32 accumulator is rounded (RNE) to the model's dtype."""
    name, opts = eng
    for dt, npdt in ((torch.bfloat16, "bf16"), (torch.float16, np.float16)):
        a, b = _r(6, 32, seed=25).to(dt), _r(32, 10, seed=26).to(dt)
        with st.emulate(name, **opts):
            y = a @ b
        assert y.dtype == dt
        e = gemm(name, opts, _np(a), _np(b))
        import ml_dtypes
        _same(y, e.astype(ml_dtypes.bfloat16 if npdt == "bf16" else np.float16))


def test_bias_as_accumulator(eng):
    name, opts = eng
    a, b, bias = _r(5, 20, seed=27), _r(20, 12, seed=28), _r(12, seed=29)
    if opts["precision"] == "int8":
        with st.emulate(name, bias="accumulator", **opts):   # int8: the bias stays in the epilogue
            y = torch.addmm(bias, a, b)
        _same(y, addmm(name, opts, _np(bias), _np(a), _np(b)))
        return
    with st.emulate(name, bias="accumulator", **opts):
        y = torch.addmm(bias, a, b)
    _same(y, gemm(name, opts, _np(a), _np(b), np.broadcast_to(_np(bias), (5, 12)).copy()))


def test_unsupported_ops_raise_and_fallback_counts(eng):
    name, opts = eng
    x, w = _r(1, 3, 10, seed=30), _r(2, 3, 3, seed=31)
    with pytest.raises(UnsupportedOperation) as ei, st.emulate(name, **opts):
        F.conv1d(x, w)
    assert ei.value.values["op"] == "convolution" and "2-D" in str(ei.value)
    with pytest.raises(UnsupportedOperation) as ei, st.emulate(name, **opts):
        torch.addbmm(_r(4, 4), _r(2, 4, 3), _r(2, 3, 4))
    assert ei.value.values["op"] == "addbmm"
    with pytest.raises(UnsupportedOperation) as ei, st.emulate(name, **opts):
        torch.mm(_r(3, 4).double(), _r(4, 2).double())
    assert ei.value.values["op"] == "mm" and "float64" in str(ei.value)
    with st.emulate(name, fallback="native", **opts) as mode:
        y = torch.addbmm(_r(4, 4), _r(2, 4, 3), _r(2, 3, 4))
        z = torch.mm(_r(3, 4).double(), _r(4, 2).double())
    assert mode.fallbacks == {"addbmm": 1, "mm": 1} and y.shape == (4, 4) and z.dtype == torch.float64
    for f, op in ((lambda: torch.cdist(_r(3, 4), _r(5, 4)), "_cdist_forward"),
                  (lambda: torch.cdist(_r(30, 4), _r(30, 4)), "_euclidean_dist"),     # > 25 rows: the mm form
                  (lambda: torch.addr(_r(3, 3), _r(3), _r(3)), "addr"),
                  (lambda: F.bilinear(_r(2, 3), _r(2, 3), _r(4, 3, 3)), "_trilinear")):
        with pytest.raises(UnsupportedOperation) as ei, st.emulate(name, **opts):
            f()
        assert ei.value.values["op"] == op


def test_out_and_vdot(eng):
    name, opts = eng
    a, b, v, u = _r(4, 20, seed=32), _r(20, 6, seed=33), _r(20, seed=34), _r(20, seed=35)
    out = torch.empty(1)
    with st.emulate(name, **opts) as mode:
        r = torch.mm(a, b, out=out)
        d = torch.vdot(v, u)
    assert r is out and mode.counts == {"mm": 1, "vdot": 1}
    _same(out, gemm(name, opts, _np(a), _np(b)))
    _same(d, gemm(name, opts, _np(v)[None, :], _np(u)[:, None]).reshape(()))
