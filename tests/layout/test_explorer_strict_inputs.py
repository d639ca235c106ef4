"""The explorer's Python verbs take element coordinates and view names as given (no int() coercion: 1.9 had
meant row 1 on SYCL layouts and a bare IndexError on DPAS ones), and the SYCL MMA picture is one of the device's
combinations (it had drawn an int8 MMA with an fp32 accumulator, which no device has)."""

from __future__ import annotations

import pytest

from systolic import layout
from systolic.errors import InvalidValue, UnsupportedCombination
from systolic.explorer import explain
from systolic.explorer.resolve import mma_layouts
from systolic.explorer.verbs import table, where
from systolic.layout.picture import layout_svg

_LAYOUTS = [lambda: layout.get("sycl", "a", device="pvc", type="bf16", rows=8, cols=16),
            lambda: layout.get("dpas", "b", device="pvc", precision="bf16")]


@pytest.mark.parametrize("make", _LAYOUTS)
@pytest.mark.parametrize("bad", [1.9, 1.0, "3", True, None])
def test_where_refuses_non_integer_coordinates(make, bad):
    L = make()
    for args in ((bad, 2), (1, bad)):
        with pytest.raises(InvalidValue, match="element coordinates are integers"):
            where(L, *args)
        with pytest.raises(InvalidValue, match="element coordinates are integers"):
            layout.where(L, *args)


@pytest.mark.parametrize("bad", [1.5, "1", True])
def test_explain_refuses_non_integer_coordinates(bad):
    with pytest.raises(InvalidValue, match="element coordinates are integers"):
        explain("dpas", bad, 0)


def test_where_still_answers_integers():
    L = _LAYOUTS[0]()
    w = where(L, 1, 2)
    assert (w["row"], w["col"]) == (1, 2)


@pytest.mark.parametrize("render", [lambda L, v: table(L, view=v), lambda L, v: layout_svg(L, view=v)])
def test_unknown_view_refused(render):
    L = _LAYOUTS[1]()
    with pytest.raises(InvalidValue, match="unknown view") as ei:
        render(L, "zz")
    assert ei.value.values == {"view": "zz"}
    assert render(L, "holder") and render(L, "lane")


def test_sycl_mma_picture_is_a_device_combination():
    # intel/llvm's pvc combinations: int8 x int8 accumulates in int32 only
    d = mma_layouts("sycl", device="pvc", type="int8", m=8, n=16, k=32)
    assert d["C"].element == "int32" and (d["C"].rows, d["C"].cols) == (8, 16)
    assert mma_layouts("sycl", device="pvc", type="bf16", m=8, n=16, k=16)["C"].element == "fp32"
    for ct in ("fp16", "fp32"):
        with pytest.raises(UnsupportedCombination, match="no combination sint8 x sint8"):
            mma_layouts("sycl", device="pvc", type="int8", m=8, n=16, k=32, ctype=ct)
