"""Bad input to systolic.torch found by the bad-input audit.

Oracles: plain PyTorch (what it returns for empty attention, that it refuses an ``out=`` tensor of another
dtype), and hand-made arrays for compare's statistics.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import systolic.torch as st  # noqa: E402
from systolic.errors import InvalidValue, UnsupportedOperation  # noqa: E402


# ------------------------------------------------- emulate: empty attention, out= dtypes, meta tensors

@pytest.mark.parametrize("qs, ks, vs", [((1, 2, 0, 8), (1, 2, 0, 8), (1, 2, 0, 8)),    # L = S = 0 (audit)
                                        ((1, 2, 0, 8), (1, 2, 4, 8), (1, 2, 4, 8)),    # L = 0
                                        ((1, 2, 4, 8), (1, 2, 0, 8), (1, 2, 0, 8)),    # S = 0: zeros
                                        ((0, 2, 4, 8), (0, 2, 4, 8), (0, 2, 4, 8)),    # no batch
                                        ((1, 2, 4, 0), (1, 2, 4, 0), (1, 2, 4, 8))])   # E = 0: mean of V
def test_sdpa_empty_matches_plain_torch(qs, ks, vs):
    q, k = torch.ones(qs), torch.ones(ks)
    v = torch.arange(float(np.prod(vs))).reshape(vs)      # small integers: exact in bf16 and their means too
    want = F.scaled_dot_product_attention(q, k, v)
    with st.emulate("amx:spr"):
        got = F.scaled_dot_product_attention(q, k, v)
    assert got.shape == want.shape and torch.equal(got, want)


@pytest.mark.parametrize("call", [
    lambda o: torch.addmm(torch.ones(4, 3), torch.ones(4, 8), torch.ones(8, 3), out=o(4, 3)),
    lambda o: torch.mm(torch.ones(4, 8), torch.ones(8, 3), out=o(4, 3)),
    lambda o: torch.bmm(torch.ones(2, 4, 8), torch.ones(2, 8, 3), out=o(2, 4, 3)),
    lambda o: torch.mv(torch.ones(4, 8), torch.ones(8), out=o(4)),
])
@pytest.mark.parametrize("dtype", [torch.int32, torch.float64])
def test_out_of_another_dtype_is_refused_as_torch_does(call, dtype):
    def out(*shape):
        return torch.empty(*shape, dtype=dtype)
    with pytest.raises(RuntimeError) as plain:
        call(out)
    with st.emulate("amx:spr"), pytest.raises(RuntimeError, match="dtype") as emu:
        call(out)
    assert type(emu.value) is type(plain.value)
    # the message names the out dtype: as torch.int32 or, in other torch versions' kernels, as C's int / double
    names = {torch.int32: ("int32", "int"), torch.float64: ("float64", "double")}[dtype]
    assert any(n in str(emu.value).lower() for n in names)


def test_out_of_the_right_dtype_still_works():
    o = torch.empty(4, 3)
    with st.emulate("amx:spr"):
        r = torch.addmm(torch.ones(4, 3), torch.ones(4, 8), torch.ones(8, 3), out=o)
    assert r is o and (o == 9).all()


@pytest.mark.parametrize("fn, op", [
    (lambda: torch.ones(4, 8, device="meta") @ torch.ones(8, 3, device="meta"), "mm"),
    (lambda: F.linear(torch.ones(4, 8, device="meta"), torch.ones(3, 8, device="meta"),
                      torch.ones(3, device="meta")), "addmm"),
    (lambda: F.conv2d(torch.ones(1, 2, 5, 5, device="meta"), torch.ones(3, 2, 3, 3, device="meta")), "convolution"),
])
def test_meta_tensors_follow_the_fallback_rule(fn, op):
    with st.emulate("amx:spr"), pytest.raises(UnsupportedOperation, match="meta tensors carry no values") as ei:
        fn()
    assert ei.value.values["op"] == op
    want = fn()                                                 # plain torch: shapes only
    with st.emulate("amx:spr", fallback="native") as m:
        got = fn()
    assert got.device.type == "meta" and got.shape == want.shape and m.fallbacks[op] == 1 and m.gemms == 0


def test_meta_sdpa_follows_the_fallback_rule():
    q = torch.ones(1, 2, 4, 8, device="meta")
    with st.emulate("amx:spr"), pytest.raises(UnsupportedOperation, match="meta tensors"):
        F.scaled_dot_product_attention(q, q, q)
    with st.emulate("amx:spr", fallback="native") as m:
        got = F.scaled_dot_product_attention(q, q, q)
    assert got.shape == (1, 2, 4, 8) and got.device.type == "meta" and sum(m.fallbacks.values()) >= 1


# ------------------------------------------------- compare: typed argument errors

_X = torch.ones(4, 8)


@pytest.mark.parametrize("kwargs, key, value", [
    (dict(model="x"), "model", "str"),
    (dict(k=-1), "k", -1),
    (dict(k=0), "k", 0),
    (dict(k=True), "k", True),
    (dict(engines=[("xmx:pvc", "str")]), "engines entry", "('xmx:pvc', 'str')"),
    (dict(engines=[("xmx:pvc",)]), "engines entry", "('xmx:pvc',)"),
    (dict(engines=[("xmx:pvc", {"precison": "fp16"})]), "options", ["precison"]),
    (dict(targets=[0, 1, 2, 0, 1]), "labels", 5),                     # 4 output rows
    (dict(targets=[0.0, 1.0, 2.0, 0.0]), "dtype", "torch.float32"),
])
def test_compare_arguments_are_typed(kwargs, key, value):
    model = kwargs.pop("model", torch.nn.Linear(8, 3))
    with pytest.raises(InvalidValue) as ei:
        st.compare(model, _X, **kwargs)
    assert ei.value.values[key] == value


def test_compare_targets_not_labels():
    with pytest.raises(InvalidValue, match="targets are integer class labels") as ei:
        st.compare(torch.nn.Linear(8, 3), _X, targets=["nope"])
    assert ei.value.values["targets"] == "['nope']"


# ------------------------------------------------- compare: NaN/inf are reported, never a perfect match

def test_stats_shared_nan_is_not_a_match():
    from systolic.torch.compare import _stats
    r = np.array([np.nan, np.nan])
    s = _stats("l", r.copy(), r)
    assert np.isnan(s.max_ulp) and np.isnan(s.mean_ulp) and np.isnan(s.max_rel) and s.nonfinite == 2


def test_stats_nonfinite_counted_and_left_out():
    from systolic.torch.compare import _stats
    r = np.array([1.0, 2.0, np.nan, np.inf, 4.0])
    x = np.array([1.0 + 2.0 ** -23, 2.0, np.nan, np.inf, np.nan])   # 1 ulp, exact, shared, shared, new NaN
    s = _stats("l", x, r)
    assert s.nonfinite == 3                     # both shared elements and the new NaN
    assert s.max_ulp == np.inf                  # the NaN the reference does not have
    assert s.mean_ulp == np.inf
    s2 = _stats("l", x[:4], r[:4])              # only shared non-finite: measured over the finite elements
    assert s2.nonfinite == 2 and s2.max_ulp == 1.0 and s2.mean_ulp == 0.5


def test_compare_nan_input_reports_it():
    rep = st.compare(torch.nn.Linear(8, 3), torch.full((4, 8), float("nan")), engines=["amx:spr"])
    for run in rep.runs:
        (out,) = run.layers
        assert out.nonfinite == 12 and np.isnan(out.max_ulp)
    assert "non-finite" in rep.table() and rep.as_dict()["runs"][0]["layers"][0]["nonfinite"] == 12


# ------------------------------------------------- operands of different dtypes: torch's own error

_f, _b, _h = torch.float32, torch.bfloat16, torch.float16


def _t(*shape, dt=_f):
    return torch.ones(*shape).to(dt)


@pytest.mark.parametrize("call", [
    lambda: F.linear(_t(4, 8), _t(3, 8, dt=_b)),
    lambda: F.linear(_t(4, 8), _t(3, 8), _t(3, dt=_b)),
    lambda: torch.mm(_t(2, 3), _t(3, 2, dt=_b)),
    lambda: torch.bmm(_t(2, 3, 4, dt=_h), _t(2, 4, 5)),
    lambda: torch.baddbmm(_t(2, 3, 5, dt=_h), _t(2, 3, 4), _t(2, 4, 5)),
    lambda: torch.mv(_t(2, 3), _t(3, dt=_h)),
    lambda: torch.dot(_t(3), _t(3, dt=_h)),
    lambda: _t(4, 8) @ _t(2, 8, 3, dt=_b),
    lambda: F.conv2d(_t(1, 2, 4, 4), _t(3, 2, 3, 3, dt=_b)),
    lambda: F.conv2d(_t(1, 2, 4, 4), _t(3, 2, 3, 3), _t(3, dt=_b)),
    lambda: _t(4, 3, dt=_b).addmm_(_t(4, 8), _t(8, 3)),
    lambda: F.scaled_dot_product_attention(_t(1, 2, 3, 4), _t(1, 2, 3, 4, dt=_b), _t(1, 2, 3, 4)),
], ids=["linear", "linear-bias", "mm", "bmm", "baddbmm", "mv", "dot", "matmul", "conv2d", "conv2d-bias", "addmm_", "sdpa"])
def test_mixed_dtypes_raise_torchs_error(call):
    with pytest.raises(RuntimeError) as plain:
        call()
    with st.emulate("amx:spr") as mode, pytest.raises(RuntimeError) as emu:
        call()
    assert type(emu.value) is type(plain.value) and str(emu.value) == str(plain.value)
    assert mode.gemms == 0



# ------------------------------------------------- int8 with an empty K: zeros, as plain torch

@pytest.mark.parametrize("engine", ["amx:spr", "xmx:dg2"])
@pytest.mark.parametrize("weight_scales", ["channel", "tensor"])
@pytest.mark.parametrize("call", [
    lambda: torch.mm(torch.randn(3, 0), torch.randn(0, 4)),
    lambda: torch.addmm(torch.arange(4.0), torch.randn(3, 0), torch.randn(0, 4)),
    lambda: F.linear(torch.randn(2, 0), torch.randn(5, 0), torch.arange(5.0)),
    lambda: torch.bmm(torch.randn(2, 3, 0), torch.randn(2, 0, 4)),
    lambda: torch.mv(torch.randn(3, 0), torch.randn(0)),
], ids=["mm", "addmm", "linear", "bmm", "mv"])
def test_int8_empty_k_gives_torchs_zeros(call, engine, weight_scales):
    want = call()
    with st.emulate(engine, precision="int8", weight_scales=weight_scales):
        got = call()
    assert got.shape == want.shape and got.dtype == want.dtype and torch.equal(got, want)


# ------------------------------------------------- conv2d output memory format: torch's

_CL = torch.channels_last


@pytest.mark.parametrize("xf, wf", [(_CL, None), (None, _CL), (_CL, _CL), (None, None)])
@pytest.mark.parametrize("xshape", [(2, 3, 6, 5), (3, 6, 5), (2, 1, 6, 5)], ids=["nchw", "unbatched", "c1"])
def test_conv2d_output_strides_are_torchs(xf, wf, xshape):
    x, w = torch.randn(xshape), torch.randn(4, xshape[-3], 3, 3)
    if xf is not None and x.dim() == 4:
        x = x.to(memory_format=xf)
    if wf is not None:
        w = w.to(memory_format=wf)
    want = F.conv2d(x, w)
    with st.emulate("amx:spr"):
        got = F.conv2d(x, w)
    assert got.shape == want.shape and got.stride() == want.stride()


# ------------------------------------------------- compare leaves the model's training flags as they were

def test_compare_restores_training_flags():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Dropout(0.5), torch.nn.Linear(3, 2)).train()
    model[2].eval()
    before = [m.training for m in model.modules()]
    st.compare(model, torch.randn(5, 4), engines=["amx:spr"])
    assert [m.training for m in model.modules()] == before == [True, True, True, False]


@pytest.mark.parametrize("kw", [{"precision": np.array([1, 2])}, {"model": np.array([1, 2])}])
def test_an_array_option_is_a_typed_error(kw):
    # hypothesis (tests/fuzz/test_fuzz_torch.py) found `precision or "bf16"` asking an array its truth value
    with pytest.raises(InvalidValue):
        st.parse_engine("xmx:dg2", **kw)
