"""``explain`` against oracles of its own: exact integers, and float32 chains computed here with numpy.

The inputs are given explicitly; the expected intermediates follow the manuals' stated order of operations
(visa-DPAS.md stage order with the "stage" model's one rounding per stage; SDM TDPBF16PS's two FMA chains),
computed with numpy float32 arithmetic on values where float32 is exact except for the rounding under test.
"""

import numpy as np
import pytest
from click.testing import CliRunner

from systolic import layout as LY
from systolic.cli import cli
from systolic.errors import InvalidValue
from systolic.explorer.explain import explain, format_explain


def test_dpas_int8_exact_and_wrap():
    rng = np.random.default_rng(11)
    A = rng.integers(-128, 128, size=(3, 32))
    B = rng.integers(-128, 128, size=(32, 8))
    C = np.full((3, 8), 2**31 - 5)                          # forces the int32 wraparound
    rep = explain("dpas", 2, 6, device="dg2", precision="s8", rc=3, a=A, b=B, c=C)
    assert [p for st in rep["stages"] for p in st["products"]] == [int(A[2, k] * B[k, 6]) for k in range(32)]
    exact = int(C[2, 6]) + int(sum(int(A[2, k]) * int(B[k, 6]) for k in range(32)))
    assert rep["exact_sum"] == exact
    assert rep["result"] == (exact + 2**31) % 2**32 - 2**31 and rep["consistent"]
    acc = int(C[2, 6])
    for st in rep["stages"]:                                 # each stage: exact dot4 added, wrapped to int32
        acc = (acc + sum(st["products"]) + 2**31) % 2**32 - 2**31
        assert st["acc"] == acc
    assert rep["stages"][1]["a"][0] == {"value": int(A[2, 4]), "grf": 2, "dword": 1, "bits": [0, 7]}  # byte 2*32 + 4


def test_dpas_bf16_stage_model_rounds_once_per_stage():
    import ml_dtypes
    bf = ml_dtypes.bfloat16
    # C = 1 and products 2**-24 (+ exact partners): every stage's exact sum needs rounding in fp32
    A = np.zeros((1, 16), dtype=bf)
    B = np.zeros((16, 16), dtype=bf)
    A[0, :] = [1.0 + 2.0 ** -7 * (k % 3) for k in range(16)]
    B[:, 0] = [2.0 ** -23 * (1 + (k % 5) / 8) for k in range(16)]
    C = np.zeros((1, 16), dtype=np.float32)
    C[0, 0] = 1.0
    rep = explain("dpas", 0, 0, device="pvc", precision="bf16", rc=1, a=A, b=B, c=C, model="stage")
    acc = np.float32(1.0)
    for d, s in enumerate(rep["sums"]):
        p = [float(A[0, k]) * float(B[k, 0]) for k in (2 * d, 2 * d + 1)]
        acc = np.float32(float(acc) + p[0] + p[1])           # binary64 sum exact here; one RNE to float32
        assert s["value"] == float(acc) and s["terms"][1:] == p
    assert rep["result"] == float(acc)
    assert rep["result"] != rep["exact_sum"]                 # the roundings are visible
    rep2 = explain("dpas", 0, 0, device="pvc", precision="bf16", rc=1, a=A, b=B, c=C, model="exact")
    assert rep2["result"] == float(np.float32(rep2["exact_sum"])) and len(rep2["sums"]) == 1
    text = format_explain(rep)
    assert "stage 7" in text and "one RNE" in text


def test_amx_bf16_two_chains():
    import ml_dtypes
    bf = ml_dtypes.bfloat16
    rng = np.random.default_rng(4)
    A = (rng.standard_normal((2, 8)) * 4).astype(bf)
    B = (rng.standard_normal((8, 3)) * 4).astype(bf)
    C = rng.standard_normal((2, 3)).astype(np.float32)
    rep = explain("amx", 1, 2, instruction="tdpbf16ps", m=2, n=3, k=8, a=A, b=B, c=C)
    even = odd = np.float32(0)
    for k2, st in enumerate(rep["steps"]):
        # bf16 x bf16 is exact in float32, so the FMA is one float32 add (no denormals in this data)
        even = np.float32(even + np.float32(float(A[1, 2 * k2]) * float(B[2 * k2, 2])))
        odd = np.float32(odd + np.float32(float(A[1, 2 * k2 + 1]) * float(B[2 * k2 + 1, 2])))
        assert (st["even_chain"]["value"], st["odd_chain"]["value"]) == (float(even), float(odd))
    assert rep["chains_sum"]["value"] == float(np.float32(even + odd))
    assert rep["result"] == float(np.float32(C[1, 2] + np.float32(even + odd))) and rep["consistent"]


def test_amx_int8_exact():
    rng = np.random.default_rng(9)
    A = rng.integers(0, 256, size=(4, 16))
    B = rng.integers(-128, 128, size=(16, 4))
    rep = explain("amx", 3, 1, instruction="tdpbusd", m=4, n=4, k=16, a=A, b=B, c=np.zeros((4, 4), int))
    assert rep["result"] == int(A[3] @ B[:, 1]) and [s["dot"] for s in rep["steps"]] == [
        int(A[3, 4 * j:4 * j + 4] @ B[4 * j:4 * j + 4, 1]) for j in range(4)]


def test_explain_errors_and_cli():
    with pytest.raises(InvalidValue):
        explain("opencl", 0, 0)
    with pytest.raises(InvalidValue):
        explain("dpas", 9, 0, device="pvc", precision="bf16")
    with pytest.raises(InvalidValue):
        explain("amx", 0, 0, model="stage")
    r = CliRunner().invoke(cli, ["layout", "explain", "dpas", "1", "2", "--platform", "pvc", "--precision", "hf",
                                 "--model", "sequential"], catch_exceptions=False)
    assert r.exit_code == 0 and "product 1" in r.output and "read back from" in r.output
    assert LY.explain("amx", 0, 0, instruction="tdpbssd", m=1, n=1, k=4)["consistent"]


def test_opencl_builtin_explained_as_its_dpas():
    pytest.importorskip("systolic.opencl", reason="the OpenCL layer is not built yet")
    rng = np.random.default_rng(2)
    A = rng.integers(-128, 128, size=(4, 32))
    B = rng.integers(0, 256, size=(32, 8))
    C = rng.integers(-1000, 1000, size=(4, 8))
    rep = explain("opencl", 3, 7, name="intel_sub_group_i8_u8_matrix_mad_k32", device="dg2", m=4, a=A, b=B, c=C)
    assert "intel_sub_group_i8_u8_matrix_mad_k32" in rep["lowered_from"]
    assert rep["result"] == int(C[3, 7]) + int(A[3] @ B[:, 7])


def test_bf16_destination_rounding_shown():
    import ml_dtypes
    A = np.full((1, 16), 1.0, dtype=ml_dtypes.bfloat16)
    B = np.zeros((16, 16), dtype=ml_dtypes.bfloat16)
    B[0, 0] = 2.0 ** -9                                  # 1 + 2**-9 is not a bf16: D rounds to 1.0
    C = np.zeros((1, 16), dtype=ml_dtypes.bfloat16)
    C[0, 0] = 1.0
    rep = explain("dpas", 0, 0, device="pvc", precision="bf16", rc=1, dst_type="bf16", a=A, b=B, c=C)
    assert rep["sums"][-1]["value"] == 1 + 2.0 ** -9 and rep["result"] == 1.0 and "rounded to bf16" in rep["to_dst"]
