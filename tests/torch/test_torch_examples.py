"""The examples/torch programs run (short versions) and dispatch what they claim."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import systolic.torch as st

EX = Path(__file__).resolve().parents[2] / "examples" / "torch"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EX / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_transformer_block_gemms():
    ex = _load("transformer_block")
    torch.manual_seed(0)
    block = ex.Block().eval()
    x = torch.randn(2, 8, 64)
    rep = st.compare(block, x, engines=["amx:spr", ("xmx:dg2", {"precision": "int8"})], include_fp32=False)
    for run in rep.as_dict()["runs"]:
        # qkv, proj, fc1, fc2 (addmm on the flattened tokens) + 2 GEMMs x 2 batches x 4 heads of attention
        assert run["ops"] == {"addmm": 4, "scaled_dot_product_attention": 1} and run["gemms"] == 4 + 16
        assert run["top1"] > 0.9 and not run["fallbacks"]


def test_digits_cnn_one_epoch(capsys):
    pytest.importorskip("sklearn",
                        reason="the digits example needs scikit-learn: pip install 'systolic[torch-examples]'")
    ex = _load("digits_cnn")
    rep = ex.main(["--epochs", "1", "--limit", "40"])
    out = capsys.readouterr().out
    assert "xmx:pvc bf16 stage" in out and "xmx:dg2 int8" in out and "amx:sapphirerapids bf16" in out
    d = rep.as_dict()
    assert len(d["runs"]) == 1 + len(ex.ENGINES)
    assert all(r["gemms"] == 4 and r["ops"] == {"convolution": 2, "addmm": 2} for r in d["runs"][1:])
    # integer GEMMs are exact: AMX and XMX int8 runs agree to the last bit in every layer
    i8 = [r for r in d["runs"] if r["engine"].endswith("int8")]
    assert len(i8) == 2 and i8[0]["layers"] == i8[1]["layers"]
