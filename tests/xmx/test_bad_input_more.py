"""Bad input to the XMX Python API (audit findings 15, 16): typed errors naming the rule and the values."""


import ml_dtypes
import numpy as np
import pytest

from systolic import xmx
from systolic.errors import InvalidValue
from systolic.xmx import gemm as xmx_gemm


# ------------------------------------------------------------------ finding 15: GEMMs beyond memory
@pytest.mark.parametrize("dtype", [np.int8, ml_dtypes.bfloat16])
def test_matmul_memory_error_while_computing_is_typed(monkeypatch, dtype):
    def boom(*args, **kw):
        raise MemoryError("Unable to allocate 32. GiB")
    monkeypatch.setattr(xmx_gemm.KN, "int_mma", boom)
    monkeypatch.setattr(xmx_gemm.KN, "float_mma", boom)
    from systolic.jit import int_gemm
    monkeypatch.setattr(int_gemm, "gemm", boom)          # the integer fast path of hosts without AMX
    from systolic.amx import native_matmul
    monkeypatch.setattr(native_matmul, "run", boom)      # and of hosts with AMX-INT8 (xmx on AMX)
    with pytest.raises(InvalidValue) as e:
        xmx.matmul(np.ones((8, 32), dtype), np.ones((32, 16), dtype))
    assert e.value.values == {"M": 8, "K": 32, "N": 16}
    assert "out of memory" in str(e.value) and "32. GiB" in str(e.value)


# ------------------------------------------------------------------ finding 16: GRF.view, dpas/dpasw trace
from systolic.xmx import GRF, dpas, dpasw  # noqa: E402

_KW = dict(dst=0, src0=None, src1=1024, src2=2048, dst_type="f", src1_precision="bf", src2_precision="bf", rc=8)
_KW_W = dict(_KW, src1=512, src2=1024)


@pytest.mark.parametrize("dtype,value", [("bogus", "'bogus'"), (object, "object"), ("U4", "<U4")])
def test_grf_view_dtype(dtype, value):
    with pytest.raises(InvalidValue) as e:
        GRF("pvc").view(0, dtype, 1)
    assert e.value.values == {"dtype": value}
    assert "numeric numpy dtype" in e.value.rule


@pytest.mark.parametrize("count", [-1, 1.0, True, "4"])
def test_grf_view_count(count):
    with pytest.raises(InvalidValue) as e:
        GRF("pvc").view(0, np.uint32, count)
    assert e.value.values == {"count": count}


@pytest.mark.parametrize("trace,values", [
    ({}, {"missing": "row"}),
    ({"row": 0}, {"missing": "col"}),
    ({"row": 8, "col": 0}, {"row": 8, "limit": 8}),            # rc = 8 rows: 0..7
    ({"row": 0, "col": 16}, {"col": 16, "limit": 16}),         # pvc: exec size 16
    ({"row": -1, "col": 0}, {"row": -1, "limit": 8}),
    ({"row": 0.0, "col": 0}, {"row": 0.0, "limit": 8}),
    ({"row": True, "col": 0}, {"row": True, "limit": 8}),
])
def test_dpas_trace_names_one_channel(trace, values):
    g = GRF("pvc")
    before = g.data.copy()
    with pytest.raises(InvalidValue) as e:
        dpas(g, **_KW, trace=trace)
    assert e.value.values == values
    assert "row in 0..7 and col in 0..15" in e.value.rule
    assert (g.data == before).all()                              # refused before executing


@pytest.mark.parametrize("trace", ["x", [0, 0], 3])
def test_dpas_trace_must_be_a_dict(trace):
    with pytest.raises(InvalidValue) as e:
        dpas(GRF("pvc"), **_KW, trace=trace)
    assert e.value.values == {"trace": type(trace).__name__}


def test_dpas_trace_valid_still_records():
    t = {"row": 7, "col": 15}
    dpas(GRF("pvc"), **_KW, trace=t)
    assert "result_bits" in t and len(t["stages"]) == 8


@pytest.mark.parametrize("eu", [5, 2, -1, "x", 1.0])
def test_dpasw_trace_eu_is_0_or_1(eu):
    with pytest.raises(InvalidValue) as e:
        dpasw(GRF("dg2"), pair=GRF("dg2"), **_KW_W, trace={"row": 0, "col": 0, "eu": eu})
    assert e.value.values == {"eu": eu, "limit": 2}
    assert "eu 0 or 1" in e.value.rule


@pytest.mark.parametrize("eu", [0, 1])
def test_dpasw_trace_eu_records(eu):
    t = {"row": 0, "col": 0, "eu": eu}
    dpasw(GRF("dg2"), pair=GRF("dg2"), **_KW_W, trace=t)
    assert "result_bits" in t


def test_dpasw_trace_row_range_is_checked_too():
    with pytest.raises(InvalidValue) as e:
        dpasw(GRF("dg2"), pair=GRF("dg2"), **_KW_W, trace={"row": 0, "col": 8})   # dg2: exec size 8
    assert e.value.values == {"col": 8, "limit": 8}
