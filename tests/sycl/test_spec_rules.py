"""Rules of the extension texts that an audit found unenforced (layouts, store types, fill values, prefetch,
``round_to_tf32``, ``numtiles``): each test fails on the code before the fix.

Oracles: the sentences of intel/llvm ``sycl/doc/extensions/experimental/sycl_ext_matrix/
sycl_ext_oneapi_matrix.asciidoc`` ("Matrix Layout", "Load", "Store", "Fill", "Prefetch", "Rounding TF32 values")
and ``sycl_ext_intel_matrix.asciidoc`` ("Additional Store Operations", "New Device Information Descriptor",
"Packed Layout Format"); for values, ml_dtypes and exact ``fractions.Fraction`` / bit arithmetic written here.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from systolic import sycl
from systolic.errors import InvalidValue, UnsupportedOperation
from systolic.sycl import matrix as jm

BF16 = ml_dtypes.bfloat16


def _on(dev, body):
    """Run ``body(sg)`` in one sub-group of ``dev``."""
    q = sycl.queue(dev)
    s = q.get_device().get_info("sub_group_sizes")[0]
    q.parallel_for(sycl.nd_range((1, s), (1, s)), lambda it: body(it.get_sub_group())).wait()


# ------------------------------------------------------------------------------- 1. load/store layout argument
_A = np.arange(32 * 32).astype(np.int8).reshape(32, 32)


@pytest.mark.parametrize("given", ["row_major", "col_major", "ext_intel_packed"])
def test_load_of_a_takes_no_layout_argument(given):
    # before: a row_major A loaded with layout.col_major was silently read column-major (A.T)
    def k(sg):
        a = jm.joint_matrix(sg, np.int8, jm.use.a, 8, 32, jm.layout.row_major)
        jm.joint_matrix_load(sg, a, sycl.ptr(_A), 32, getattr(jm.layout, given))
    with pytest.raises(InvalidValue, match="layout argument") as ei:
        _on("pvc", k)
    assert "only available for a `joint_matrix` type that used the default value `layout::dynamic`" in ei.value.rule
    assert ei.value.values["declared"] == "row_major" and ei.value.values["given"] == given


def test_checked_load_of_b_takes_no_layout_argument():
    B = np.zeros((32, 16), np.int8)

    def k(sg):
        b = jm.joint_matrix(sg, np.int8, jm.use.b, 32, 16, jm.layout.row_major)
        jm.joint_matrix_load_checked(sg, b, sycl.ptr(B), 16, jm.layout.col_major, 32, 16, 0, 0)
    with pytest.raises(InvalidValue, match="layout argument"):
        _on("pvc", k)


def test_intel_store_of_a_takes_no_layout_argument():
    out = np.zeros((8, 32), np.int8)

    def k(sg):
        a = jm.joint_matrix(sg, np.int8, jm.use.a, 8, 32, jm.layout.row_major)
        jm.joint_matrix_store(sg, a, sycl.ptr(out), 32, jm.layout.col_major)
    with pytest.raises(InvalidValue, match="layout argument") as ei:
        _on("pvc", k)
    assert "Additional Store Operations" in ei.value.rule


@pytest.mark.parametrize("dev", ["pvc", "spr"])
def test_a_loads_and_stores_in_its_declared_layout(dev):
    M, K = (8, 32) if dev == "pvc" else (16, 64)
    src = np.arange(K * M).astype(np.int8).reshape(K, M)      # A (M x K) stored column-major: K rows of M
    out = np.zeros((K, M), np.int8)

    def k(sg):
        a = jm.joint_matrix(sg, np.int8, jm.use.a, M, K, jm.layout.col_major)
        jm.joint_matrix_load(sg, a, sycl.ptr(src), M)
        jm.joint_matrix_store(sg, a, sycl.ptr(out), M)      # the Intel store: in the declared layout again
    _on(dev, k)
    assert np.array_equal(out, src)


# ------------------------------------------------------------------------------- 2. declaration layouts
@pytest.mark.parametrize("lay", ["row_major", "col_major", "ext_intel_packed"])
def test_accumulator_layout_must_be_dynamic(lay):
    with pytest.raises(InvalidValue, match="accumulator") as ei:
        _on("pvc", lambda sg: jm.joint_matrix(sg, np.int32, jm.use.accumulator, 8, 16, getattr(jm.layout, lay)))
    assert "The C and D matrices must be `layout::dynamic`" in ei.value.rule
    assert ei.value.values["layout"] == lay


def test_accumulator_dynamic_is_its_default():
    got = []
    _on("pvc", lambda sg: got.append(jm.joint_matrix(sg, np.int32, jm.use.accumulator, 8, 16, jm.layout.dynamic)))
    _on("pvc", lambda sg: got.append(jm.joint_matrix(sg, np.int32, jm.use.accumulator, 8, 16)))
    assert [m.spec.layout for m in got] == ["dynamic", "dynamic"]


@pytest.mark.parametrize("use", ["a", "b"])
def test_a_and_b_have_no_default_layout(use):
    rows, cols = (8, 32) if use == "a" else (32, 16)
    with pytest.raises(InvalidValue, match="no default") as ei:
        _on("pvc", lambda sg: jm.joint_matrix(sg, np.int8, getattr(jm.use, use), rows, cols))
    assert "there is no default for `Layout`" in ei.value.rule
    with pytest.raises(InvalidValue, match="dynamic") as ei:
        _on("pvc", lambda sg: jm.joint_matrix(sg, np.int8, getattr(jm.use, use), rows, cols, jm.layout.dynamic))
    assert "(but not `layout::dynamic`)" in ei.value.rule


def test_matrix_params_aliases_take_the_layout():
    # matrix_params<...>::joint_matrix_a<Group, Layout>: the alias has no default layout either
    p = jm.matrix_params("pvc", np.int8, np.int8, np.int32)
    with pytest.raises(TypeError):
        _on("pvc", lambda sg: p.joint_matrix_a(sg))
    got = []
    _on("pvc", lambda sg: got.append(p.joint_matrix_b(sg, jm.layout.ext_intel_packed)))
    assert got[0].spec.layout == "ext_intel_packed"


# ------------------------------------------------------------------------------- 3. store to another type
@pytest.mark.parametrize("dev, ptype", [("pvc", np.float16), ("pvc", BF16), ("spr", BF16), ("dg2", np.float16)])
def test_float_accumulator_store_to_16_bit_memory_is_refused(dev, ptype):
    shape = {"pvc": (8, 16), "spr": (16, 16), "dg2": (8, 8)}[dev]
    D = np.zeros(shape, ptype)

    def k(sg):
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, *shape)
        jm.joint_matrix_fill(sg, c, 7.0)
        jm.joint_matrix_store(sg, c, sycl.ptr(D), shape[1], jm.layout.row_major)
    with pytest.raises(InvalidValue, match="not the matrix's") as ei:
        _on(dev, k)
    assert "T1 must be the same as T2" in ei.value.rule
    assert ei.value.values == {"pointer": np.dtype(ptype).name, "matrix": "float32"}
    assert not D.any()


def _rne_half(x: float) -> float:
    """Round the exact value ``x`` (a float32 here) to binary16, nearest even, by exact arithmetic."""
    q = Fraction(x)
    if q == 0:
        return 0.0
    e = max(math.floor(math.log2(abs(q))), -14)
    while Fraction(2) ** e > abs(q):
        e -= 1
    while Fraction(2) ** (e + 1) <= abs(q):
        e += 1
    e = max(e, -14)
    ulp = Fraction(2) ** (e - 10)
    n = q / ulp
    r = math.floor(n)
    if n - r > Fraction(1, 2) or (n - r == Fraction(1, 2) and r % 2):
        r += 1
    v = r * ulp
    return math.copysign(math.inf, x) if abs(v) >= 65520 else float(v)


def test_copy_to_a_half_accumulator_then_store_rounds_to_nearest_even():
    # the route the refusal names: joint_matrix_copy (elementwise static_cast) into an accumulator of the
    # pointer's type, then store. Values chosen to need rounding: ties both ways, below half ulp, overflow.
    vals = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -11 + 2 ** -20, 2049.0, 2051.0, 65519.0, 65520.0,
                     -(1 + 2 ** -11), 2 ** -25, 3 * 2 ** -26, 0.1, 1 / 3], np.float32)
    C = np.resize(vals, (8, 16)).astype(np.float32)
    D = np.zeros((8, 16), np.float16)

    def k(sg):
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 8, 16)
        h = jm.joint_matrix(sg, np.float16, jm.use.accumulator, 8, 16)
        jm.joint_matrix_load(sg, c, sycl.ptr(C), 16, jm.layout.row_major)
        jm.joint_matrix_copy(sg, c, h)
        jm.joint_matrix_store(sg, h, sycl.ptr(D), 16, jm.layout.row_major)
    _on("pvc", k)
    want = np.array([_rne_half(float(x)) for x in C.reshape(-1)], np.float64).reshape(8, 16)
    assert np.array_equal(D.astype(np.float64), want)
    with np.errstate(over="ignore"):
        assert np.array_equal(D.view(np.uint16), C.astype(np.float16).view(np.uint16))   # numpy's RNE agrees


# ------------------------------------------------------------------------------- 4. round_to_tf32
def _f32(bits: int) -> np.float32:
    return np.frombuffer(struct.pack("<I", bits), np.float32)[0]


def _tf32_oracle(bits: int) -> int:
    """RNE to 10 fraction bits on the raw encoding: keep 19 bits, round the 13 dropped ones half to even (the
    carry may ripple into the exponent: the largest finite values round to inf). NaN stays NaN."""
    if (bits >> 23) & 0xFF == 0xFF:
        return bits if bits & 0x7FFFFF == 0 else None      # inf kept; NaN checked separately
    low, keep = bits & 0x1FFF, bits & ~0x1FFF & 0xFFFFFFFF
    if low > 0x1000 or (low == 0x1000 and (keep >> 13) & 1):
        keep += 0x2000
    return keep


_CASES = [0x3F800000, 0x3F801000, 0x3F803000, 0x3F801001, 0x3F800FFF, 0xBF801000, 0xBF803000,
          0x7F7FFFFF, 0x7F7FF000, 0x7F7FEFFF, 0xFF7FFFFF, 0x00000001, 0x00001000, 0x00003000, 0x00001001,
          0x007FFFFF, 0x807FF000, 0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x3EAAAAAB, 0x40490FDB]


@pytest.mark.parametrize("b", _CASES, ids=hex)
def test_round_to_tf32_bits(b):
    got = np.float32(jm.round_to_tf32(_f32(b)))
    assert got.dtype == np.float32
    assert int(got.view(np.uint32)) == _tf32_oracle(b)


def test_round_to_tf32_nan_and_arrays():
    assert np.isnan(jm.round_to_tf32(_f32(0x7FC00000)))
    assert np.isnan(jm.round_to_tf32(_f32(0x7F800001)))
    rng = np.random.default_rng(5)
    raw = rng.integers(0, 2 ** 32, size=2000, dtype=np.uint64).astype(np.uint32)
    raw = raw[((raw >> 23) & 0xFF) != 0xFF]
    got = np.asarray(jm.round_to_tf32(raw.view(np.float32))).view(np.uint32)
    assert [int(x) for x in got] == [_tf32_oracle(int(b)) for b in raw]
    # a Python float is a double: float round_to_tf32(float elem) first makes it a float (nearest even), so
    # 1 + 2**-11 + 2**-40 becomes the tie 1 + 2**-11, which rounds to even: 1.0 (from the double directly: 1 + 2**-10)
    assert jm.round_to_tf32(1 + 2 ** -11 + 2 ** -40) == np.float32(1.0)
    assert jm.round_to_tf32(1 + 2 ** -11 + 2 ** -20) == np.float32(1 + 2 ** -10)
    assert "round_to_tf32" in jm.__all__


@pytest.mark.parametrize("bad", [None, "x", 1 + 2j])
def test_round_to_tf32_non_number(bad):
    with pytest.raises(InvalidValue, match="round_to_tf32"):
        jm.round_to_tf32(bad)


# ------------------------------------------------------------------------------- 5. numtiles
NUMTILES = "ext::intel::experimental::info::device::matrix::numtiles"


@pytest.mark.parametrize("dev, n", [("spr", 8), ("emr", 8), ("gnr", 8), ("dmr", 8), ("pvc", 0), ("dg2", 0),
                                    ("bmg", 0), ("lnl", 0), ("arl", 0)])
def test_numtiles(dev, n):
    # sycl_ext_intel_matrix: "returns the number of tiles" (AMX: 8 tile names, SDM palette 1); "For other
    # devices, returns 0"
    got = sycl.queue(dev).get_device().get_info(NUMTILES)
    assert got == n and type(got) is int


# ------------------------------------------------------------------------------- 6. fill values
@pytest.mark.parametrize("v", [None, "x", 1 + 2j, b"1", [1, 2], object()])
@pytest.mark.parametrize("t", [np.int32, np.float32])
def test_fill_value_must_be_convertible(v, t):
    def k(sg):
        c = jm.joint_matrix(sg, t, jm.use.accumulator, 8, 16)
        jm.joint_matrix_fill(sg, c, v)
    with pytest.raises(InvalidValue, match="convertible") as ei:
        _on("pvc", k)
    assert "`Tv` must be convertible to the matrix elements type `T`" in ei.value.rule
    assert ei.value.values["T"] == ("sint32" if t is np.int32 else "fp32")


def test_checked_fill_value_must_be_convertible():
    def k(sg):
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 8, 16)
        jm.joint_matrix_fill_checked(sg, c, 2j, 8, 16, 0, 0)
    with pytest.raises(InvalidValue, match="convertible"):
        _on("pvc", k)


@pytest.mark.parametrize("v, want", [(True, 1), (np.int64(-3), -3), (2 ** 40 + 5, 5), (BF16(2.5), 2)])
def test_numbers_still_fill(v, want):
    out = np.zeros((8, 16), np.int32)

    def k(sg):
        c = jm.joint_matrix(sg, np.int32, jm.use.accumulator, 8, 16)
        jm.joint_matrix_fill(sg, c, v)
        jm.joint_matrix_store(sg, c, sycl.ptr(out), 16, jm.layout.row_major)
    _on("pvc", k)
    assert (out == want).all()


# ------------------------------------------------------------------------------- 7. packed A
@pytest.mark.parametrize("dev", ["pvc", "dg2", "spr"])
def test_packed_a_is_refused_at_declaration(dev):
    declared = []

    def k(sg):
        declared.append(0)
        jm.joint_matrix(sg, np.int8, jm.use.a, 8, 32, jm.layout.ext_intel_packed)
        declared.append(1)
    with pytest.raises(UnsupportedOperation, match="not modelled") as ei:
        _on(dev, k)
    assert "This layout applies only to the A and B matrices" in ei.value.rule
    assert 1 not in declared


# ------------------------------------------------------------------------------- 8. prefetch arguments
@pytest.mark.parametrize("rows, cols, stride, bad", [(-3, 32, 32, "rows"), (8, -1, 32, "cols"), (8, 32, -5, "stride"),
                                                     (8.0, 32, 32, "rows"), (8, 32, 1.5, "stride")])
def test_prefetch_sizes_are_size_t(rows, cols, stride, bad):
    p = sycl.ptr(np.zeros(1024, np.int8))
    with pytest.raises(InvalidValue, match=f"{bad} must be a non-negative integer") as ei:
        _on("pvc", lambda sg: jm.joint_matrix_prefetch(sg, p, rows, cols, stride, jm.layout.row_major))
    assert "Prefetch" in ei.value.rule and "size_t stride" in ei.value.rule


@pytest.mark.parametrize("lay", ["bogus", None, 3])
def test_prefetch_layout_is_a_layout(lay):
    p = sycl.ptr(np.zeros(1024, np.int8))
    with pytest.raises(InvalidValue, match="layout"):
        _on("pvc", lambda sg: jm.joint_matrix_prefetch(sg, p, 8, 32, 32, lay))


def test_prefetch_of_good_arguments_runs():
    p = sycl.ptr(np.zeros(1024, np.int8))
    for lay in (jm.layout.row_major, jm.layout.col_major, jm.layout.ext_intel_packed):
        _on("pvc", lambda sg, lay=lay: jm.joint_matrix_prefetch(sg, p, 8, 32, 32, lay))
