"""systolic.torch outside the per-op equalities: engine names and their checks, import hygiene, compare()."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import systolic.torch as st
from systolic.errors import BackendUnavailable, InvalidValue, UnsupportedCombination, UnsupportedOperation


def test_import_does_not_shadow_torch_and_is_lazy():
    code = ("import sys, systolic; assert 'torch' not in sys.modules, 'import systolic pulled torch';"
            "import systolic.torch as st, torch; assert torch.__name__ == 'torch' and hasattr(torch, 'mm');"
            "assert st.__name__ == 'systolic.torch' and torch.__file__ != st.__file__; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize("engine,opts,err", [
    ("amx:spr", {"precision": "fp16"}, UnsupportedCombination),     # TDPFP16PS needs AMX-FP16
    ("amx:spr", {"precision": "tf32"}, UnsupportedCombination),
    ("xmx:dg2", {"precision": "tf32"}, UnsupportedCombination),     # no tf32 DPAS on XeHPG
    ("amx:spr", {"model": "stage"}, InvalidValue),
    ("xmx:pvc", {"model": "nonsense"}, InvalidValue),
    ("xmx:pvc", {"precision": "int8", "model": "stage"}, InvalidValue),
    ("tpu:v5", {}, InvalidValue),
    ("spr", {}, InvalidValue),
    ("amx:spr", {"precision": "fp8"}, InvalidValue),
    ("amx:spr", {"fallback": "maybe"}, InvalidValue),
])
def test_engine_checks(engine, opts, err):
    with pytest.raises(err):
        st.emulate(engine, **opts)


def test_engine_names():
    assert st.parse_engine("amx:spr").name == "amx:sapphirerapids bf16"
    assert st.parse_engine("xmx:acm", precision="fp16").name == "xmx:dg2 fp16 stage"
    assert st.parse_engine("amx:gnr", precision="float16").precision == "fp16"


def test_cuda_backend_unavailable_is_typed():
    """backend="cuda" on a machine without a usable CUDA backend: a typed error, never a silent CPU run."""
    from systolic.gpu import runtime
    ok, why = runtime.availability()
    if ok:
        pytest.skip("a CUDA backend is available here")
    x = torch.randn(4, 8)
    for engine in ("amx:spr", "xmx:pvc"):
        with pytest.raises(BackendUnavailable), st.emulate(engine, backend="cuda"):
            x @ x.t()


def test_no_grad_inside_and_restored():
    w = torch.randn(3, 4, requires_grad=True)
    with st.emulate("amx:spr"):
        y = torch.randn(2, 4) @ w.t()
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled() and not y.requires_grad


def test_layer_stats_ulp_and_rel():
    from systolic.torch.compare import _stats
    r = np.array([1.0, 2.0, 0.0, -4.0])
    x = r + np.array([2.0 ** -23, 0.0, 0.0, -3 * 2.0 ** -21])   # 1 ulp at 1, exact, exact, 3 ulp at 4
    s = _stats("l", x, r)
    assert s.max_ulp == 3.0 and s.mean_ulp == 1.0
    assert s.max_rel == (3 * 2.0 ** -21) / 4.0
    assert s.mean_rel == np.mean(np.abs(x - r)) / np.mean(np.abs(r))


def test_compare_report_table_json():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 5))
    x = torch.randn(64, 16)
    rep = st.compare(model, x, engines=["amx:spr", ("xmx:dg2", {"precision": "int8"})],
                     targets=model(x).argmax(-1))
    text = str(rep)
    for needle in ("fp32 (plain torch)", "amx:sapphirerapids bf16", "xmx:dg2 int8", "0", "<output>"):
        assert needle in text
    d = json.loads(rep.to_json())
    assert [r["engine"] for r in d["runs"]] == ["fp32 (plain torch)", "amx:sapphirerapids bf16", "xmx:dg2 int8"]
    fp32, bf16, i8 = d["runs"]
    assert fp32["gemms"] == 0 and bf16["gemms"] == 2 and bf16["ops"] == {"addmm": 2}
    assert [s["layer"] for s in bf16["layers"]] == ["0", "1", "2", "<output>"]
    # fp32 GEMMs stay within a few ulp of fp64; bf16 inputs move results by ~2^-8 relative
    assert fp32["layers"][0]["max_rel"] < 1e-6 < bf16["layers"][0]["max_rel"] < 1e-2
    assert fp32["top1"] == 1.0 and d["reference_accuracy"] == 1.0


def test_compare_plot(tmp_path):
    pytest.importorskip("matplotlib")
    model = torch.nn.Sequential(torch.nn.Linear(8, 4))
    rep = st.compare(model, torch.randn(4, 8), engines=["amx:spr"])
    rep.plot(tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_transformer_layer_without_fast_path():
    """nn.TransformerEncoderLayer in eval mode would call fused kernels; emulate turns the fast path off, so
    its GEMMs run on the engine (and nothing falls back)."""
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    with st.emulate("xmx:pvc") as mode:
        y = layer(x)
    assert mode.gemms > 0 and not mode.fallbacks and y.shape == x.shape
    assert (y - layer(x)).abs().max() < 0.1


def test_fused_attention_ops_are_refused():
    q = torch.randn(1, 1, 4, 8)
    with pytest.raises(UnsupportedOperation) as ei, st.emulate("amx:spr"):
        torch.ops.aten._scaled_dot_product_efficient_attention(q, q, q, None, False)
    assert "attention" in ei.value.values["op"]


def test_mha_nested_sdpa_runs_on_engine():
    """nn.MultiheadAttention calls SDPA from inside another torch function: it reaches the dispatch mode as the
    CPU flash kernel, which runs as the same two GEMMs."""
    torch.manual_seed(2)
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True).eval()
    x = torch.randn(1, 5, 16)
    with st.emulate("amx:spr") as mode:
        y, _ = mha(x, x, x, need_weights=False)
    assert mode.counts["scaled_dot_product_attention"] == 1 and not mode.fallbacks
    assert (y - mha(x, x, x, need_weights=False)[0]).abs().max() < 0.05


@pytest.mark.parametrize("engine", ["amx:spr", "xmx:dg2"])
def test_int8_weight_scales_per_tensor(engine):
    from torch_oracle import gemm
    g = torch.Generator().manual_seed(40)
    a, w = torch.randn(6, 50, generator=g), torch.randn(9, 50, generator=g) * torch.linspace(0.1, 3, 9)[:, None]
    with st.emulate(engine, precision="int8", weight_scales="tensor"):
        y_t = a @ w.t()
    with st.emulate(engine, precision="int8"):
        y_c = a @ w.t()
    opts = {"precision": "int8"}
    assert np.array_equal(y_t.numpy(), gemm(engine, opts, a.numpy(), w.numpy().T, weight=False))
    assert np.array_equal(y_c.numpy(), gemm(engine, opts, a.numpy(), w.numpy().T, weight=True))
    assert not np.array_equal(y_t.numpy(), y_c.numpy())     # the channel scales differ 30x: results must move


@pytest.mark.parametrize("engine, opts, v, want", [
    # 1 + 2**-8 + 2**-40 lies above the bf16 midpoint 1 + 2**-8: RNE gives 1 + 2**-7 (through float32 it
    # becomes the midpoint itself and rounds to even, 1.0)
    ("amx:spr", {}, 1 + 2.0 ** -8 + 2.0 ** -40, 1 + 2.0 ** -7),
    # fp16: 1 + 2**-11 + 2**-40 above its midpoint: 1 + 2**-10
    ("xmx:pvc", {"precision": "fp16"}, 1 + 2.0 ** -11 + 2.0 ** -40, 1 + 2.0 ** -10),
    # tf32 (10 fraction bits, like fp16's): the same value, the same answer
    ("xmx:pvc", {"precision": "tf32"}, 1 + 2.0 ** -11 + 2.0 ** -40, 1 + 2.0 ** -10),
])
def test_float64_operands_are_rounded_once(engine, opts, v, want):
    """A float64 operand reaches the engine rounded once from its exact value (worked by hand above); a GEMM
    with one nonzero term returns it exactly."""
    e = st.parse_engine(engine, **opts)
    a = torch.zeros((8, 32), dtype=torch.float64)
    b = torch.zeros((32, 16), dtype=torch.float64)
    a[0, 0], b[0, 0] = v, 1.0
    out = e.gemm(a, b)
    assert out[0, 0].item() == want and out.dtype == torch.float32
    assert float(torch.count_nonzero(out)) == 1
