"""Bad input to joint_matrix load/store/apply/fill (review findings F1, F2, F5): typed errors naming the rule.

Oracles: intel/llvm sycl/include/sycl/ext/oneapi/matrix/matrix-intel.hpp declares the checked forms'
``Height, Width, CoordX, CoordY`` and the stride ``size_t`` (no negative value exists); the stride is the leading
dimension in elements, so a row in memory (row_major: cols; col_major: rows; checked forms: width) must fit.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from systolic import sycl
from systolic.errors import InvalidValue
from systolic.sycl import matrix as jm


def _launch(body, device="pvc"):
    src = np.arange(16, dtype=np.float32).reshape(4, 4) + 1
    out = np.zeros((8, 16), np.float32)

    def k(item):
        sg = item.get_sub_group()
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 8, 16)
        body(sg, c, src, out)
    sycl.queue(device).parallel_for(sycl.nd_range((1, 16), (1, 16)), k).wait()
    return out


@pytest.mark.parametrize("h, w, x, y, bad", [(4, 4, -3, -5, "x"), (4, 4, 0, -1, "y"), (-4, 4, 0, 0, "height"),
                                              (4, -1, 0, 0, "width"), (4, 4, 1.5, 0, "x")])
def test_checked_coordinates_are_size_t(h, w, x, y, bad):
    # before: x=-3, y=-5 pasted the 4x4 matrix at row 3, column 5 of the tile
    with pytest.raises(InvalidValue, match=f"{bad} must be a non-negative integer") as ei:
        _launch(lambda sg, c, src, out: jm.joint_matrix_load_checked(sg, c, sycl.ptr(src), 4, jm.layout.row_major,
                                                                     h, w, x, y))
    assert "size_t" in ei.value.rule
    with pytest.raises(InvalidValue, match=f"{bad} must be"):
        _launch(lambda sg, c, src, out: jm.joint_matrix_store_checked(sg, c, sycl.ptr(src), 4, jm.layout.row_major,
                                                                      h, w, x, y))


def test_checked_fill_coordinates_are_size_t():
    with pytest.raises(InvalidValue, match="x must be a non-negative integer"):
        _launch(lambda sg, c, src, out: jm.joint_matrix_fill_checked(sg, c, 1.0, 8, 16, -1, 0))


@pytest.mark.parametrize("stride, lay", [(0, "row_major"), (15, "row_major"), (7, "col_major"), (16.0, "row_major")])
def test_stride_is_at_least_a_row(stride, lay):
    # before: stride 0 loaded/stored every row onto row 0
    L = getattr(jm.layout, lay)
    with pytest.raises(InvalidValue, match="stride") as ei:
        _launch(lambda sg, c, src, out: jm.joint_matrix_store(sg, c, sycl.ptr(out), stride, L))
    assert "size_t" in ei.value.rule or "leading dimension" in ei.value.rule
    with pytest.raises(InvalidValue, match="stride"):
        _launch(lambda sg, c, src, out: jm.joint_matrix_load(sg, c, sycl.ptr(out), stride, L))


def test_checked_stride_is_at_least_the_width():
    with pytest.raises(InvalidValue, match="shorter than a row"):
        _launch(lambda sg, c, src, out: jm.joint_matrix_load_checked(sg, c, sycl.ptr(src), 3, jm.layout.row_major,
                                                                     4, 4, 0, 0))


def test_exact_strides_still_load():
    # row_major 8x16 accumulator: stride 16 (cols); col_major: stride 8 (rows); checked: stride == width
    out = _launch(lambda sg, c, src, out: (jm.joint_matrix_load_checked(sg, c, sycl.ptr(src), 4, jm.layout.row_major,
                                                                        4, 4, 0, 0),
                                           jm.joint_matrix_store(sg, c, sycl.ptr(out), 16, jm.layout.row_major)))
    assert (out[:4, :4] == np.arange(16).reshape(4, 4) + 1).all() and not out[4:].any() and not out[:, 4:].any()
    buf = np.zeros(8 * 16, np.float32)
    _launch(lambda sg, c, src, out: jm.joint_matrix_store(sg, c, sycl.ptr(buf), 8, jm.layout.col_major))


@pytest.mark.parametrize("ret", ["str", "3", object(), [1, 2]])
def test_apply_returning_a_non_number(ret):
    with pytest.raises(InvalidValue, match="f must return a number") as ei:
        _launch(lambda sg, c, src, out: jm.joint_matrix_apply(sg, c, lambda x: ret))
    assert ei.value.values["T"] == "fp32"


def test_fill_out_of_range_is_inf_without_warning():
    # C++ (IEEE host): (float)1e40 is +inf; no numpy RuntimeWarning may leak
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _launch(lambda sg, c, src, out: (jm.joint_matrix_fill(sg, c, 1e40),
                                               jm.joint_matrix_store(sg, c, sycl.ptr(out), 16, jm.layout.row_major)))
    assert np.isposinf(out).all()
