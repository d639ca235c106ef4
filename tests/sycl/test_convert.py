"""Element conversions of joint_matrix_fill / apply / copy (systolic.sycl.matrix_core.convert) as C++ does them.

Oracles, independent of numpy and systolic: ``struct`` packs a Python float as C ``float`` and as IEEE half
(both round to nearest even); bfloat16 is float's top 16 bits, rounded to nearest even by integer arithmetic
here; integer targets use Python ints and ``math.trunc``. C++ semantics: intel/llvm's joint_matrix_fill does
``static_cast<storage_element_type>(v)``, and ``sycl::half`` / ``bfloat16`` are constructed from ``float`` only,
so a double becomes a float first (two roundings); float -> integer truncates toward zero ([conv.fpint]).
"""

from __future__ import annotations

import math
import struct

import ml_dtypes
import numpy as np
import pytest

from systolic import sycl
from systolic.sycl import matrix as jm
from systolic.sycl.matrix_core import convert, type_info


def _f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _via_float_half(x: float) -> int:
    f = struct.unpack("<f", struct.pack("<f", x))[0]
    return struct.unpack("<H", struct.pack("<e", f))[0]


def _via_float_bf16(x: float) -> int:
    b = _f32_bits(x)
    low, high = b & 0xFFFF, b >> 16
    return high + (low > 0x8000 or (low == 0x8000 and high & 1))


def _c_int(x: float, bits: int, signed: bool) -> int:
    n = math.trunc(x) % (1 << bits)
    return n - (1 << bits) if signed and n >= 1 << (bits - 1) else n


# doubles whose float rounding lands on a half / bfloat16 tie: one direct rounding would go the other way
TIES = [2049 + 2 ** -20, -(2049 + 2 ** -20), 1 + 2 ** -8 + 2 ** -30, 22.33593705, 111.84374966]


def test_double_to_half_and_bfloat16_go_through_float():
    rng = np.random.default_rng(3)
    xs = TIES + rng.normal(0, 100, 300).tolist() + [0.1, -0.0, 65519.99, 1e-7]
    half = convert(np.array(xs), type_info(np.float16))
    assert half.view(np.uint16).tolist() == [_via_float_half(x) for x in xs]
    assert half[0] == 2048           # a single rounding of 2049 + 2**-20 gives 2050
    bf = convert(np.array(xs), type_info(ml_dtypes.bfloat16))
    assert bf.view(np.uint16).tolist() == [_via_float_bf16(x) for x in xs]
    f = convert(np.array(xs), type_info(np.float32))
    assert f.view(np.uint32).tolist() == [_f32_bits(x) for x in xs]


def test_out_of_range_floats_are_infinities():
    with np.errstate(all="raise"):
        assert np.isposinf(convert(np.array([1e40]), type_info(np.float32))).all()
        assert np.isneginf(convert(np.array([-70000.0]), type_info(np.float16))).all()


@pytest.mark.parametrize("t, bits, signed", [(np.int8, 8, True), (np.uint8, 8, False), (np.int32, 32, True)])
def test_float_to_integer_truncates_integers_wrap(t, bits, signed):
    # in range after truncation: [conv.fpint]; out of range (undefined in C++) is refused:
    # tests/sycl/test_bad_input_more.py
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    xs = [x for x in [300.7, -300.7, 1.5, -1.5, -0.5, 127.9, -128.9, 255.9, 2.0 ** 31 - 1, -3e9]
          if lo <= math.trunc(x) <= hi]
    got = convert(np.array(xs), type_info(t))
    assert got.tolist() == [math.trunc(x) for x in xs]
    assert convert(np.array([300, -129]), type_info(t)).tolist() == [_c_int(v, bits, signed) for v in (300, -129)]


def test_fill_and_apply_convert_as_cpp():
    # fill(2049 + 2**-20), then apply stores 22.33593705 on the diagonal (a per-element run: f branches on r, c)
    out = np.zeros((8, 16), np.float16)

    def kernel(item):
        sg = item.get_sub_group()
        c = jm.joint_matrix(sg, np.float16, jm.use.accumulator, 8, 16)
        jm.joint_matrix_fill(sg, c, TIES[0])
        jm.joint_matrix_apply(sg, c, lambda x, r, col: TIES[3] if r == col else x)
        jm.joint_matrix_store(sg, c, sycl.ptr(out), 16, jm.layout.row_major)
    sycl.queue("pvc").parallel_for(sycl.nd_range((1, 16), (1, 16)), kernel).wait()
    diag = np.eye(8, 16, dtype=bool)
    assert (out.view(np.uint16)[~diag] == _via_float_half(TIES[0])).all()
    assert (out.view(np.uint16)[diag] == _via_float_half(TIES[3])).all()


@pytest.mark.parametrize("mode", ["vector", "per-item"])
def test_fill_keeps_each_sub_groups_signed_zero(mode):
    """fill((g - 1) * 0.0): work-group 0 fills -0.0, work-group 1 +0.0 (C++: -1 * 0.0 = -0.0, 0 * 0.0 = +0.0).
    The vector mode had taken one value for all sub-groups because -0.0 == +0.0."""
    q = sycl.queue("pvc", mode=mode)
    mem = q.malloc_shared(2 * 8 * 16, np.float32)

    def kernel(it):
        sg = it.get_sub_group()
        g = it.get_group(0)
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 8, 16)
        jm.joint_matrix_fill(sg, c, (g - 1) * 0.0)
        jm.joint_matrix_store(sg, c, mem + g * 128, 16, jm.layout.row_major)
    q.parallel_for(sycl.nd_range((2, 16), (1, 16)), kernel).wait()
    bits = np.asarray(mem).reshape(2, 128).view(np.uint32)
    assert (bits[0] == 0x80000000).all() and (bits[1] == 0).all()
