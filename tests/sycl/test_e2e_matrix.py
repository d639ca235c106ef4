"""SYCL joint_matrix conformance: intel/llvm ``sycl/test-e2e/Matrix`` ported in spirit, on every device family.

Each test is a SYCL kernel written in Python against ``systolic.sycl`` as a SYCL user writes it (one
sub-group per tile, ``nd_range({M/TM, N/TN*SG}, {1, SG})``, the pointer arithmetic of the C++ tests), with an
oracle that does not use the code under test: exact int64 arithmetic on small integers (so the float
accumulation model cannot matter), Python-side VNNI/transposition, the intel/llvm runtime tables and IGC's
coordinate formula as test data, and, for "the same blocking", the engines the model lowers onto
(``systolic.xmx.matmul`` / ``systolic.amx.matmul``) compared bit for bit.

Mapping (test-e2e category -> tests here, with the number of tests per device). Columns: the device families
(AMX spr/gnr, XMX dg2 and pvc/bmg/lnl); emr, dmr and arl appear in the queries. ``test_mapping_table`` checks
these rows against the collected suite; regenerate them with ``python -m tests.sycl.test_e2e_matrix``.

category             spr  gnr  dg2  pvc  bmg  lnl  emr  dmr  arl
----------------------------------------------------------------
gemm_type_sign         7    8    8    9    9    9    5    6    6
    test-e2e: joint_matrix_{ss,su,us,uu}_int8, _bfloat16, _half, _tf32, _int8_vnni
    tests: test_gemm_type_sign, test_gemm_int32_wraps, test_gemm_random_configurations
same_blocking          4    5    6   10   10   10    0    0    0
    test-e2e: (issue 12: equality with xmx/amx.matmul; DPAS/TMUL counts)
    tests: test_gemm_same_as_engine, test_instruction_counts
accumulator_types      2    2    1   18   18   18    0    0    0
    test-e2e: joint_matrix_{bfloat16,half}_accumulator (16bit_impl), _down_convert, _copy
    tests: test_accumulator_types, test_down_convert, test_copy_accumulator
layouts               10   10   10   10   10   10    0    0    0
    test-e2e: joint_matrix_rowmajorA_rowmajorB, _colmajorA_colmajorB, _colA_rowB_colC, _transposeC,
      _bfloat16_packedB
    tests: test_layouts
cache_blocked_bf16     4    4    5    7    7    7    0    0    0
    test-e2e: joint_matrix_bf16_fill_k_cache{,_OOB,_prefetch}, rowmajorB
    tests: test_bf16_fill_k_cache
element_wise          41   44   44   47   47   47    0    0    0
    test-e2e: element_wise_all_ops{,_half,_int8,_int8_packed,_tf32}, element_wise_ops,
      joint_matrix_apply_{bf16,two_matrices}
    tests: test_element_wise_ops, test_element_wise_types, test_gemm_then_apply, test_apply_coordinates,
      test_apply_two_matrices
get_coord              8    8   13   15   15   15    0    0    0
    test-e2e: get_coordinate_ops, get_coord_{int8,bf16,float}_mat{A,B,C}
    tests: test_get_coord_sums, test_work_item_slices
all_sizes             20   20   16   16   16   16    0    0    0
    test-e2e: joint_matrix_all_sizes, element_wise_all_sizes
    tests: test_all_sizes, test_amx_any_shape
out_of_bounds          6    6    6    9    9    9    0    0    0
    test-e2e: joint_matrix_out_bounds{,_colmajor}, *_checked
    tests: test_out_of_bounds, test_checked_store_drops, test_checked_load_zero
queries                8    7    9   10    8    8    1    1    1
    test-e2e: joint_matrix_query_default, runtime matrix_combinations
    tests: test_matrix_combinations, test_matrix_params_defaults, test_query_default_gemm,
      test_unsupported_combination
collectives            2    2    7    7    7    7    0    0    0
    test-e2e: (SYCL group-operation rules)
    tests: test_divergent_collective, test_uniform_branch_is_fine, test_divergence_outside_collectives
bad_input              6    6    8    8    8    8    0    0    0
    test-e2e: (typed errors from systolic.errors)
    tests: test_bad_input
nd_item                1    1    1    1    1    1    0    0    0
    test-e2e: (SYCL 2020 nd_item / sub_group ids)
    tests: test_nd_item_ids
seed_2021              7    1    1    1    0    0    0    0    0
    test-e2e: the seed's 2021 example (test_e2e_seed.py)
    tests: test_seed_example_2021, test_seed_any_size, test_seed_gemm_today
examples               5    3    3    3    2    2    0    0    0
    test-e2e: examples/sycl program files (test_e2e_seed.py)
    tests: test_example_program, test_seed_script_runs
total                131  127  138  171  167  167    6    7    7

Device-specific choices follow the test-e2e ``main()`` functions: combinations with ``nsize == 0`` are Intel AMX
(tiles 16 x 16 x K up to 64 bytes), ``nsize == 16`` PVC/Xe2 (8 x 16 x 16 plus the fixed big shapes), ``nsize == 8``
DG2 (8 x 8 x 16, 32 x 32 x 16). Matrix sizes are scaled down from test-e2e's (e.g. 1024+20 -> 2*T+edge) to keep
the whole suite within a minute on two cores; the shapes of the joint_matrix objects are test-e2e's.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from systolic.errors import (
    DivergentCollective,
    UnsupportedCombination,
    UnsupportedOperation,
)

from .conftest import (
    AMX,
    BF16,
    COMBINATIONS,
    FAMILIES,
    FIELDS,
    SUB_GROUP,
    VNNI,
    XMX,
    a_types,
    acc_type,
    as_result,
    bits,
    device_buffer,
    engine_gemm,
    exact,
    gemm,
    is_amx,
    jm_type,
    kind,
    mem_dtype,
    oracle_gemm,
    read,
    shape,
    small_ints,
    vnni,
    wrap32,
)

ROOT = Path(__file__).resolve().parents[2]
PVC_LIKE = ("pvc", "bmg", "lnl")
ALL9 = ("spr", "emr", "gnr", "dmr", "dg2", "arl", "pvc", "bmg", "lnl")

# category id -> (test-e2e files, test functions); the table in the docstring is rendered from this
CATEGORIES = {
    "gemm_type_sign": ("joint_matrix_{ss,su,us,uu}_int8, _bfloat16, _half, _tf32, _int8_vnni",
                       ["test_gemm_type_sign", "test_gemm_int32_wraps", "test_gemm_random_configurations"]),
    "same_blocking": ("(issue 12: equality with xmx/amx.matmul; DPAS/TMUL counts)", ["test_gemm_same_as_engine",
                                                                                     "test_instruction_counts"]),
    "accumulator_types": ("joint_matrix_{bfloat16,half}_accumulator (16bit_impl), _down_convert, _copy",
                          ["test_accumulator_types", "test_down_convert", "test_copy_accumulator"]),
    "layouts": ("joint_matrix_rowmajorA_rowmajorB, _colmajorA_colmajorB, _colA_rowB_colC, _transposeC, "
                "_bfloat16_packedB", ["test_layouts"]),
    "cache_blocked_bf16": ("joint_matrix_bf16_fill_k_cache{,_OOB,_prefetch}, rowmajorB", ["test_bf16_fill_k_cache"]),
    "element_wise": ("element_wise_all_ops{,_half,_int8,_int8_packed,_tf32}, element_wise_ops, "
                     "joint_matrix_apply_{bf16,two_matrices}",
                     ["test_element_wise_ops", "test_element_wise_types", "test_gemm_then_apply",
                      "test_apply_coordinates", "test_apply_two_matrices"]),
    "get_coord": ("get_coordinate_ops, get_coord_{int8,bf16,float}_mat{A,B,C}",
                  ["test_get_coord_sums", "test_work_item_slices"]),
    "all_sizes": ("joint_matrix_all_sizes, element_wise_all_sizes", ["test_all_sizes", "test_amx_any_shape"]),
    "out_of_bounds": ("joint_matrix_out_bounds{,_colmajor}, *_checked", ["test_out_of_bounds",
                                                                         "test_checked_store_drops",
                                                                         "test_checked_load_zero"]),
    "queries": ("joint_matrix_query_default, runtime matrix_combinations",
                ["test_matrix_combinations", "test_matrix_params_defaults", "test_query_default_gemm",
                 "test_unsupported_combination"]),
    "collectives": ("(SYCL group-operation rules)", ["test_divergent_collective", "test_uniform_branch_is_fine",
                                                     "test_divergence_outside_collectives"]),
    "bad_input": ("(typed errors from systolic.errors)", ["test_bad_input"]),
    "nd_item": ("(SYCL 2020 nd_item / sub_group ids)", ["test_nd_item_ids"]),
    "seed_2021": ("the seed's 2021 example (test_e2e_seed.py)", ["test_seed_example_2021", "test_seed_any_size",
                                                                 "test_seed_gemm_today"]),
    "examples": ("examples/sycl program files (test_e2e_seed.py)", ["test_example_program", "test_seed_script_runs"]),
}


def _devs(*groups):
    return [d for g in groups for d in g]


# ===================================================================================== GEMM per type and sign
def _type_cases():
    for dev in ALL9:
        for r in COMBINATIONS[dev]:
            a, b, c, d = r[6:]
            if r[0] and c == d and c in ("fp32", "sint32"):   # the variable-M record with a 32-bit accumulator
                name = {"sint8": "s8", "uint8": "u8"}.get(a, a), {"sint8": "s8", "uint8": "u8"}.get(b, b)
                yield pytest.param(dev, *name, id=f"{dev}-{name[0]}x{name[1]}")


@pytest.mark.parametrize("device,ta,tb", list(_type_cases()))
def test_gemm_type_sign(device, ta, tb, rng):
    """C + A @ B for every A x B type pair of every device's runtime list (test-e2e ss/su/us/uu int8, bfloat16,
    half, tf32), on all nine devices."""
    tm, tn, tk = shape(device, ta)
    M, N, K = 2 * tm, 2 * tn, 2 * tk
    A = small_ints(rng, (M, K), ta)
    B = small_ints(rng, (K, N), tb)
    tc = acc_type(ta)
    C = small_ints(rng, (M, N), tc, -1000, 1000)
    D = gemm(device, A, B, C, tm, tn, tk, ta=ta, tb=tb, tc=tc)
    assert np.array_equal(as_result(D, tc), oracle_gemm(A, B, C))


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_gemm_random_configurations(data):
    """Random device, types, tile shape (any M, N, K up to the AMX maxima; any M up to 8 on XMX), grid, layouts
    and C: exact against the int64 oracle (hypothesis; the CI profile replays a fixed set)."""
    device = data.draw(st.sampled_from(FAMILIES), "device")
    ta = data.draw(st.sampled_from([t for t in ("s8", "u8", "bf16", "fp16") if
                                    {"s8": "sint8", "u8": "uint8"}.get(t, t) in a_types(device)]), "ta")
    tb = ta if ta not in ("s8", "u8") else data.draw(st.sampled_from(["s8", "u8"]), "tb")
    tm, tn, tk = shape(device, ta)
    vf = VNNI[ta]
    if is_amx(device):
        tm = data.draw(st.integers(1, tm), "tm")
        tn = data.draw(st.integers(1, tn), "tn")
        tk = vf * data.draw(st.integers(1, tk // vf), "tk/vf")
    else:
        tm = data.draw(st.integers(1, tm), "tm")
    la, lb, lc = data.draw(st.sampled_from(LAYOUTS), "layouts")
    M, N, K = (tm * data.draw(st.integers(1, 3), "m tiles"), tn * data.draw(st.integers(1, 2), "n tiles"),
               tk * data.draw(st.integers(1, 3), "k steps"))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    A, B = small_ints(rng, (M, K), ta), small_ints(rng, (K, N), tb)
    tc = acc_type(ta)
    C = small_ints(rng, (M, N), tc, -99, 99)
    D = gemm(device, A, B, C, tm, tn, tk, ta=ta, tb=tb, tc=tc, a_layout=la, b_layout=lb, c_layout=lc)
    assert np.array_equal(as_result(D, tc), oracle_gemm(A, B, C))


test_gemm_random_configurations.e2e_devices = FAMILIES


@pytest.mark.parametrize("device", FAMILIES)
def test_gemm_int32_wraps(device, rng):
    """int8 products are accumulated modulo 2**32 (TDPB*D and DPAS wrap, no saturation)."""
    tm, tn, tk = shape(device, "s8")
    A = np.full((tm, tk), -128, np.int8)
    B = np.full((tk, tn), -128, np.int8)
    C = np.full((tm, tn), 2 ** 31 - 1000, np.int32)
    D = gemm(device, A, B, C, tm, tn, tk, ta="s8", tc="s32")
    assert np.array_equal(D.astype(np.int32), wrap32(oracle_gemm(A, B, C)))
    assert int(D[0, 0]) < 0          # the exact value exceeds 2**31 - 1


# ===================================================================================== same blocking as the engine
def _engine_cases():
    for dev in FAMILIES:
        for ta in a_types(dev):
            t = {"sint8": "s8", "uint8": "u8"}.get(ta, ta)
            if t == "u8":
                continue
            yield pytest.param(dev, t, id=f"{dev}-{t}")


@pytest.mark.parametrize("device,ta", list(_engine_cases()))
def test_gemm_same_as_engine(device, ta, rng):
    """Random (non-integer) inputs: the joint_matrix GEMM is bit-identical to the engine GEMM whose K blocking is
    one instruction per joint_matrix_mad (DPAS depth on XMX, one 64-byte TMUL on AMX)."""
    tm, tn, tk = shape(device, ta)
    M, N, K = 2 * tm, 2 * tn, 3 * tk
    if ta == "s8":
        A = rng.integers(-128, 128, (M, K)).astype(np.int8)
        B = rng.integers(-128, 128, (K, N)).astype(np.int8)
        C = rng.integers(-2 ** 31, 2 ** 31, (M, N)).astype(np.int32)
        tc = "s32"
    else:
        A = rng.standard_normal((M, K)).astype(mem_dtype(ta))
        B = rng.standard_normal((K, N)).astype(mem_dtype(ta))
        C = rng.standard_normal((M, N)).astype(np.float32)
        tc = "fp32"
    D = gemm(device, A, B, C, tm, tn, tk, ta=ta, tc=tc)
    want = engine_gemm(device, A, B, C, precision="tf32" if ta == "tf32" else None)
    assert np.array_equal(bits(D.astype(mem_dtype(tc))), bits(want))


# ===================================================================================== instruction counts
def _count_cases():
    for dev in FAMILIES:
        for ta in ("s8", "bf16"):
            yield pytest.param(dev, ta, shape(dev, ta), 1, id=f"{dev}-{ta}")
    for dev in PVC_LIKE:     # IGC's big shapes: RC-8 DPAS over the rows, exec-16 over the columns, K/16 steps
        for t, per in (((16, 16, 16), 2), ((32, 64, 16), 16), ((1, 64, 32), 8), ((32, 64, 32), 32)):
            yield pytest.param(dev, "bf16", t, per, id=f"{dev}-bf16-{t[0]}x{t[1]}x{t[2]}")
    yield pytest.param("dg2", "bf16", (32, 32, 16), 16, id="dg2-bf16-32x32x16")


@pytest.mark.parametrize("device,ta,tiles,per_mad", list(_count_cases()))
def test_instruction_counts(device, ta, tiles, per_mad, rng):
    """The engine instructions a GEMM kernel executes (systolic.counters) are the hand count: one DPAS / TMUL
    per joint_matrix_mad of a one-instruction shape, and for the big XMX shapes the number of DPAS IGC builds
    them from (ceil(TM/8) x TN/exec x TK/(8*ops))."""
    from systolic import counters
    tm, tn, tk = tiles
    M, N, K = 2 * tm, 2 * tn, 3 * tk
    A, B = small_ints(rng, (M, K), ta), small_ints(rng, (K, N), ta)
    tc = acc_type(ta)
    with counters.recording() as rec:
        D = gemm(device, A, B, None, tm, tn, tk, ta=ta, tc=tc)
    assert np.array_equal(as_result(D, tc), oracle_gemm(A, B))
    mads = (M // tm) * (N // tn) * (K // tk)
    if is_amx(device):
        op = {"s8": "tdpbssd", "bf16": "tdpbf16ps"}[ta]
        assert rec.total("amx", op=op) == mads * per_mad
    else:
        assert rec.total("dpas") == mads * per_mad


# ===================================================================================== accumulator types
def _acc_cases():
    for dev in PVC_LIKE:
        for t in ("bf16", "fp16"):
            for tm, tn, tk in ((8, 16, 16), (32, 64, 32)):
                for tc, td in (("fp32", "fp32"), (t, "fp32"), ("fp32", t), (t, t)):
                    yield pytest.param(dev, t, tc, td, tm, tn, tk, id=f"{dev}-{t}-{tc}-{td}-{tm}x{tn}x{tk}")


@pytest.mark.parametrize("device,ta,tc,td,tm,tn,tk", list(_acc_cases()))
def test_accumulator_types(device, ta, tc, td, tm, tn, tk, rng):
    """16-bit accumulators (C and/or D bf16 or fp16): mad(D, A, B, C) then copy(D -> C) per K step
    (test-e2e joint_matrix_16bit_impl). Values stay integers of at most 8 bits: exact in bf16 and fp16."""
    M, N, K = 2 * tm, 2 * tn, 2 * tk
    A = small_ints(rng, (M, K), ta, -1, 1)
    B = small_ints(rng, (K, N), ta, -1, 1)
    C = small_ints(rng, (M, N), tc, -3, 3)
    D = gemm(device, A, B, C, tm, tn, tk, ta=ta, tc=tc, td=td)
    assert D.dtype == mem_dtype(td)
    assert np.array_equal(exact(D), oracle_gemm(A, B, C))


@pytest.mark.parametrize("device", AMX + PVC_LIKE)
def test_down_convert(device, rng):
    """An fp32 accumulator copied into a bf16 ``use::a`` matrix rounds each element to nearest even
    (test-e2e joint_matrix_down_convert); the oracle is ml_dtypes' conversion of the same floats."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    tm, tn, _ = shape(device, "bf16")         # the A tile it becomes is tm x tn too (K = 16: AMX any, PVC fixed;
                                              # DG2 has no 8 x 8 bf16 A tile, so it has no such copy)
    sg_size = SUB_GROUP[device]
    src = (rng.standard_normal((tm, tn)) * 100).astype(np.float32)
    src[0, :3] = [np.float32(1 + 2 ** -8), np.float32(1 + 3 * 2 ** -8), np.float32(-0.0)]   # ties to even, -0
    q = sycl.queue(device)
    pC = device_buffer(q, src)
    pA = q.malloc_shared(tm * tn, BF16)

    def kernel(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, tm, tn)
        a = jm.joint_matrix(sg, BF16.type, jm.use.a, tm, tn, jm.layout.row_major)
        jm.joint_matrix_load(sg, c, pC, tn, jm.layout.row_major)
        jm.joint_matrix_copy(sg, c, a)
        jm.joint_matrix_store(sg, a, pA, tn)       # Intel's store of a: the declared layout

    try:
        q.parallel_for(sycl.nd_range((1, sg_size), (1, sg_size)), kernel).wait()
    except UnsupportedCombination as e:
        pytest.fail(f"a {tm}x{tn} bf16 use::a tile is not accepted for a copy: {e}")
    assert np.array_equal(bits(read(pA, (tm, tn))), bits(src.astype(BF16)))


@pytest.mark.parametrize("device", FAMILIES)
def test_copy_accumulator(device, rng):
    """joint_matrix_copy between two accumulators of the same type is an exact copy (NaN and -0 included)."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    tm, tn, _ = shape(device, "bf16")
    sg_size = SUB_GROUP[device]
    src = rng.standard_normal((tm, tn)).astype(np.float32)
    src[0, 0], src[-1, -1] = np.float32(-0.0), np.float32(np.nan)
    q = sycl.queue(device)
    pS = device_buffer(q, src, "ptr")
    pD = device_buffer(q, np.zeros((tm, tn), np.float32), "ptr")

    def kernel(it):
        sg = it.get_sub_group()
        s = jm.joint_matrix(sg, np.float32, jm.use.accumulator, tm, tn)
        d = jm.joint_matrix(sg, np.float32, jm.use.accumulator, tm, tn)
        jm.joint_matrix_load(sg, s, pS, tn, jm.layout.row_major)
        jm.joint_matrix_copy(sg, s, d)
        jm.joint_matrix_store(sg, d, pD, tn, jm.layout.row_major)

    q.parallel_for(sycl.nd_range((1, sg_size), (1, sg_size)), kernel).wait()
    assert np.array_equal(bits(read(pD, (tm, tn))), bits(src))


# ===================================================================================== layouts
LAYOUTS = [("row_major", "row_major", "row_major"), ("row_major", "ext_intel_packed", "row_major"),
           ("col_major", "col_major", "row_major"), ("col_major", "row_major", "col_major"),
           ("row_major", "ext_intel_packed", "col_major")]


@pytest.mark.parametrize("device", FAMILIES)
@pytest.mark.parametrize("ta", ["s8", "bf16"])
@pytest.mark.parametrize("la,lb,lc", LAYOUTS, ids=lambda v: {"row_major": "R", "col_major": "C",
                                                             "ext_intel_packed": "P"}[v])
def test_layouts(device, ta, la, lb, lc, rng):
    """A row/col major, B row/col major or VNNI-packed, D stored row or col major (test-e2e rowmajorA_rowmajorB,
    colmajorA_colmajorB, colA_rowB_colC, transposeC, packedB); memory images are built here by transposition
    and a Python VNNI loop, never by the code under test."""
    tm, tn, tk = shape(device, ta)
    M, N, K = 2 * tm, 2 * tn, 2 * tk
    A = small_ints(rng, (M, K), ta)
    B = small_ints(rng, (K, N), ta)
    tc = acc_type(ta)
    C = small_ints(rng, (M, N), tc, -50, 50)
    D = gemm(device, A, B, C, tm, tn, tk, ta=ta, tc=tc, a_layout=la, b_layout=lb, c_layout=lc)
    assert np.array_equal(as_result(D, tc), oracle_gemm(A, B, C))


# ===================================================================================== cache-blocked bf16 GEMM
def _example(name):
    spec = importlib.util.spec_from_file_location(f"systolic_example_{name}", ROOT / "examples" / "sycl" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# test-e2e fill_k_cache main(): AMX 16x16x32 (NCache1 32, KCache1 32); PVC 8x16x16, 16x16x16, 32x64x16, 32x64x32
# (NCache1 64, KCache1 16 or 32); DG2 8x8x16, 32x32x16 (NCache1 32). MCache1 32, MCache2 = NCache2 = 64 here
# (256 there), KCache2 32.
_CACHE_TILES = {"amx": [(16, 16, 32)], "pvc": [(8, 16, 16), (16, 16, 16), (32, 64, 16), (32, 64, 32)],
                "dg2": [(8, 8, 16), (32, 32, 16)]}


def _cache_cases():
    for dev in FAMILIES:
        tiles = _CACHE_TILES[kind(dev)]
        for t in tiles:
            variants = ["vnni", "rowmajor", "oob", "prefetch"] if t == tiles[0] else ["vnni"]
            for v in variants:
                yield pytest.param(dev, t, v, id=f"{dev}-{t[0]}x{t[1]}x{t[2]}-{v}")


@pytest.mark.parametrize("device,tiles,variant", list(_cache_cases()))
def test_bf16_fill_k_cache(device, tiles, variant, rng):
    """The cache-blocked bf16 GEMM of examples/sycl/gemm_bf16.py (test-e2e joint_matrix_bf16_fill_k_cache,
    SLM-free; variants VNNI / row-major B, OOB (checked forms, M and N off the tile grid), PREFETCH; _unroll and
    _init are C++ compile-time forms of the same kernel): exact on small integers, and bit-identical to the engine
    on random bf16 (same K order)."""
    ex = _example("gemm_bf16")
    tk = tiles[2]
    caches = {"mcache1": 32, "ncache1": 64 if kind(device) == "pvc" else 32, "kcache1": tk, "mcache2": 64,
              "ncache2": 64, "kcache2": 32}
    size = 64
    M = N = K = size
    oob = variant == "oob"
    if oob:
        M, N = size - 5, size - 3                # the kernel's grid still covers 64 x 64
    a = small_ints(rng, (M, K), "bf16", -2, 2)
    b = small_ints(rng, (K, N), "bf16", -2, 2)
    got = ex.run(device, a, b, packed_b=variant != "rowmajor", checked=oob, tiles=tiles,
                 prefetch=variant == "prefetch", **caches)
    assert np.array_equal(exact(got), oracle_gemm(a, b))
    if variant == "vnni":
        ar = rng.standard_normal((M, K)).astype(BF16)
        br = rng.standard_normal((K, N)).astype(BF16)
        got = ex.run(device, ar, br, packed_b=True, tiles=tiles, **caches)
        assert np.array_equal(bits(got), bits(engine_gemm(device, ar, br)))


# ===================================================================================== element-wise operations
# test-e2e element_wise_all_ops: fill(l), apply(x = op(x, r)), store; expected value of every element
OPS = {
    "add": (5.0, 2.0, 7.0, lambda l, r: l + r),
    "sub": (5.0, 2.0, 3.0, lambda l, r: l - r),
    "mul": (5.0, 2.0, 10.0, lambda l, r: l * r),
    "div": (5.0, 2.0, 2.5, lambda l, r: l / r),
    "logical": (5.0, 5.0, 5.0, lambda l, r: l if l == r else 1.0),
    "eq": (5.0, 4.0, 4.0, lambda l, r: l if l == r else r),
    "ne": (5.0, 5.0, 1.0, lambda l, r: l if l != r else 1.0),
    "gt": (5.0, 2.0, 3.0, lambda l, r: 3.0 if l > r else 2.0),
    "lt": (5.0, 2.0, 2.0, lambda l, r: 3.0 if l < r else 2.0),
    "ge": (5.0, 2.0, 3.0, lambda l, r: 3.0 if l >= r else 2.0),
    "le": (5.0, 2.0, 2.0, lambda l, r: 3.0 if l <= r else 2.0),
}
USES = ("a", "b", "accumulator")


def _tile(device, use, t="bf16"):
    """(rows, cols, T, layout, vf) of the test-e2e element-wise tile for ``use`` (logical rows x cols)."""
    tm, tn, tk = shape(device, t)
    if use == "a":
        return tm, tk, t, "row_major", 1
    if use == "b":
        return tk, tn, t, "ext_intel_packed" if VNNI[t] > 1 else "row_major", VNNI[t]
    return tm, tn, acc_type(t), "row_major", 1


def _run_tiles(device, use, body, *, t="bf16", init=None):
    """A 2 x 2 grid of sub-groups, each filling/loading one tile, running ``body(sg, m, it)`` and storing the tile
    (test-e2e verify_op_ab / verify_op_c); returns the stored memory image (VNNI for packed B)."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    rows, cols, te, lay, vf = _tile(device, use, t)
    R, Ccols = 2 * rows, 2 * cols
    sg_size = SUB_GROUP[device]
    q = sycl.queue(device)
    img_shape = (R // vf, Ccols * vf)
    mem = device_buffer(q, np.zeros(img_shape, mem_dtype(te)) if init is None else init)
    L = getattr(jm.layout, lay)
    u = getattr(jm.use, use)

    def kernel(it):
        sx = it.get_global_id(0) - it.get_local_id(0)
        sy = it.get_global_id(1) - it.get_local_id(1)
        sg = it.get_sub_group()
        if use == "accumulator":
            m = jm.joint_matrix(sg, jm_type(te), u, rows, cols)
        else:
            m = jm.joint_matrix(sg, jm_type(te), u, rows, cols, L)
        off = (sx * rows // vf) * Ccols * vf + sy // sg_size * cols * vf
        body(sg, m, it, mem + off, Ccols * vf)
        # an accumulator's store takes the layout; a and b are stored in their declared one (no argument)
        jm.joint_matrix_store(sg, m, mem + off, Ccols * vf, *((L,) if use == "accumulator" else ()))

    q.parallel_for(sycl.nd_range((2, 2 * sg_size), (1, sg_size)), kernel).wait()
    return read(mem, img_shape), (rows, cols, te, vf)


@pytest.mark.parametrize("device", FAMILIES)
@pytest.mark.parametrize("use", USES)
@pytest.mark.parametrize("op", list(OPS))
def test_element_wise_ops(device, use, op):
    from systolic.sycl import matrix as jm
    l, r, want, f = OPS[op]

    def body(sg, m, it, p, stride):
        jm.joint_matrix_fill(sg, m, l)
        jm.joint_matrix_apply(sg, m, lambda x: f(x, r))

    img, _ = _run_tiles(device, use, body)
    assert np.array_equal(img.astype(np.float64), np.full(img.shape, want))


def _ew_type_cases():
    for dev in FAMILIES:
        for t in ("s8", "fp16", "tf32"):
            if t in a_types(dev) or (t == "s8" and "sint8" in a_types(dev)):
                for use in USES:
                    yield pytest.param(dev, t, use, id=f"{dev}-{t}-{use}")


@pytest.mark.parametrize("device,t,use", list(_ew_type_cases()))
def test_element_wise_types(device, t, use):
    """The eleven operations of test_element_wise_ops on int8 (packed B), half and tf32 tiles (test-e2e
    element_wise_all_ops_{int8,int8_packed,half,tf32}): one kernel, one matrix per operation. Integer division
    is C++'s (5 / 2 == 2: ``//`` on these positive values)."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    rows, cols, te, lay, vf = _tile(device, use, t)
    integer = mem_dtype(te).kind in "iu"
    ops = {k: (v if not (integer and k == "div") else (5, 2, 2, lambda l, r: l // r)) for k, v in OPS.items()}
    sg_size = SUB_GROUP[device]
    q = sycl.queue(device)
    size = rows * cols
    mem = q.malloc_shared(size * len(ops), mem_dtype(te))
    L = getattr(jm.layout, lay)

    def kernel(it):
        sg = it.get_sub_group()
        for i, (l, r, _, f) in enumerate(ops.values()):
            if use == "accumulator":
                m = jm.joint_matrix(sg, jm_type(te), jm.use.accumulator, rows, cols)
            else:
                m = jm.joint_matrix(sg, jm_type(te), getattr(jm.use, use), rows, cols, L)
            jm.joint_matrix_fill(sg, m, int(l) if integer else l)
            rr = int(r) if integer else r
            jm.joint_matrix_apply(sg, m, lambda x, f=f, rr=rr: f(x, rr))
            jm.joint_matrix_store(sg, m, mem + i * size, cols * vf, *((L,) if use == "accumulator" else ()))

    q.parallel_for(sycl.nd_range((1, sg_size), (1, sg_size)), kernel).wait()
    got = read(mem, (len(ops), size)).astype(np.float64)
    for i, (name, (_, _, want, _)) in enumerate(ops.items()):
        assert np.all(got[i] == want), (name, got[i][:4])


@pytest.mark.parametrize("device", FAMILIES)
def test_gemm_then_apply(device, rng):
    """GEMM, then apply(x * 2) on the accumulator before the store (test-e2e element_wise_ops)."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    tm, tn, tk = shape(device, "s8")
    sg_size = SUB_GROUP[device]
    A = small_ints(rng, (tm, 2 * tk), "s8")
    B = small_ints(rng, (2 * tk, tn), "s8")
    q = sycl.queue(device)
    pA, pB = device_buffer(q, A), device_buffer(q, vnni(B, 4))
    pC = q.malloc_shared(tm * tn, np.int32)

    def kernel(it):
        sg = it.get_sub_group()
        a = jm.joint_matrix(sg, np.int8, jm.use.a, tm, tk, jm.layout.row_major)
        b = jm.joint_matrix(sg, np.int8, jm.use.b, tk, tn, jm.layout.ext_intel_packed)
        c = jm.joint_matrix(sg, np.int32, jm.use.accumulator, tm, tn)
        jm.joint_matrix_fill(sg, c, 0)
        for k in range(0, 2 * tk, tk):
            jm.joint_matrix_load(sg, a, pA + k, 2 * tk)
            jm.joint_matrix_load(sg, b, pB + (k // 4) * tn * 4, tn * 4)
            jm.joint_matrix_mad(sg, c, a, b, c)
        jm.joint_matrix_apply(sg, c, lambda x: x * 2)
        jm.joint_matrix_store(sg, c, pC, tn, jm.layout.row_major)

    q.parallel_for(sycl.nd_range((1, sg_size), (1, sg_size)), kernel).wait()
    assert np.array_equal(read(pC, (tm, tn)).astype(np.int64), 2 * oracle_gemm(A, B))


@pytest.mark.parametrize("device", FAMILIES)
@pytest.mark.parametrize("use", USES)
def test_apply_coordinates(device, use):
    """Intel's apply(f(x, row, col)) gives logical coordinates inside the tile (before VNNI): each element becomes
    ``x + 3*row + col`` after a fill with 1; the packed B image is compared with a Python VNNI of the expectation."""
    from systolic.sycl import matrix as jm

    def body(sg, m, it, p, stride):
        jm.joint_matrix_fill(sg, m, 1)
        jm.joint_matrix_apply(sg, m, lambda x, row, col: x + 3 * row + col)

    img, (rows, cols, _te, vf) = _run_tiles(device, use, body)
    tile = np.array([[1 + 3 * r + c for c in range(cols)] for r in range(rows)], np.int64)
    logical = np.block([[tile, tile], [tile, tile]])
    want = vnni(logical, vf) if vf > 1 else logical
    assert np.array_equal(exact(img), want)


@pytest.mark.parametrize("device", FAMILIES)
def test_apply_two_matrices(device, rng):
    """apply on one accumulator reading a second matrix by coordinates (test-e2e apply_two_matrices): a ReLU of
    C and, from the same coordinates, C's square written into a host array."""
    from systolic.sycl import matrix as jm
    tm, tn, _ = shape(device, "bf16")
    init = small_ints(rng, (2 * tm, 2 * tn), "fp32", -9, 9)
    squares = np.zeros((2 * tm, 2 * tn), np.int64)

    def body(sg, m, it, p, stride):
        jm.joint_matrix_load(sg, m, p, stride, jm.layout.row_major)
        m0 = (it.get_global_id(0) - it.get_local_id(0)) * tm
        n0 = (it.get_global_id(1) - it.get_local_id(1)) // SUB_GROUP[device] * tn

        def relu_and_square(x, row, col):
            squares[m0 + row, n0 + col] = int(x) * int(x)
            return x if x > 0 else 0.0
        jm.joint_matrix_apply(sg, m, relu_and_square)

    img, _ = _run_tiles(device, "accumulator", body, init=init)
    assert np.array_equal(exact(img), np.maximum(exact(init), 0))
    assert np.array_equal(squares, exact(init) ** 2)


# ===================================================================================== get_coord
def _coord_cases():
    for dev in FAMILIES:
        for ta in ("bf16", "s8"):
            tm, tn, tk = shape(dev, ta)
            yield pytest.param(dev, ta, "a", "row_major", tm, tk, id=f"{dev}-{ta}-A")
            yield pytest.param(dev, ta, "b", "row_major", tk, tn, id=f"{dev}-{ta}-B")
            yield pytest.param(dev, ta, "b", "ext_intel_packed", tk, tn, id=f"{dev}-{ta}-Bpacked")
            yield pytest.param(dev, acc_type(ta), "accumulator", "row_major", tm, tn, id=f"{dev}-{acc_type(ta)}-C")


@pytest.mark.parametrize("device,t,use,lay,rows,cols", list(_coord_cases()))
def test_get_coord_sums(device, t, use, lay, rows, cols):
    """Row and column sums of a matrix M[i][j] = i + j (stored VNNI'd for packed B) gathered through
    apply(f(x, row, col)) over a 2 x 2 grid of tiles (test-e2e get_coordinate_ops); oracle in Python ints."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    vf = VNNI[t] if lay == "ext_intel_packed" else 1
    R, Cc = 2 * rows, 2 * cols
    logical = wrap_to(np.add.outer(np.arange(R), np.arange(Cc)), t)
    img = vnni(logical, vf) if vf > 1 else logical
    sg_size = SUB_GROUP[device]
    q = sycl.queue(device)
    p = device_buffer(q, img)
    row_sums, col_sums = [0] * R, [0] * Cc

    def kernel(it):
        gx, gy = it.get_global_id(0), it.get_global_id(1)
        sx, sy = gx - it.get_local_id(0), gy - it.get_local_id(1)
        sg = it.get_sub_group()
        if use == "accumulator":
            m = jm.joint_matrix(sg, jm_type(t), jm.use.accumulator, rows, cols)
        else:
            m = jm.joint_matrix(sg, jm_type(t), getattr(jm.use, use), rows, cols, getattr(jm.layout, lay))
        off = (sx * rows // vf) * Cc * vf + sy // sg_size * cols * vf
        if use == "accumulator":
            jm.joint_matrix_load(sg, m, p + off, Cc, jm.layout.row_major)
        else:
            jm.joint_matrix_load(sg, m, p + off, Cc * vf)

        def gather(x, row, col):
            row_sums[int(row + gx * rows)] += int(x)
            col_sums[int(col + gy // sg_size * cols)] += int(x)
            return x
        jm.joint_matrix_apply(sg, m, gather)

    q.parallel_for(sycl.nd_range((2, 2 * sg_size), (1, sg_size)), kernel).wait()
    stored = [[int(v) for v in row] for row in logical]     # int8 holds i + j modulo 256, as in C++
    assert row_sums == [sum(stored[i][j] for j in range(Cc)) for i in range(R)]
    assert col_sums == [sum(stored[i][j] for i in range(R)) for j in range(Cc)]


def wrap_to(v, t):
    """Integers converted to type ``t`` the way a C++ cast does (two's complement wrap for int8)."""
    if t == "s8":
        return ((np.asarray(v) + 128) % 256 - 128).astype(np.int8)
    return np.asarray(v).astype(mem_dtype(t))


IGC = json.loads((ROOT / "tests" / "data" / "layouts" / "igc_get_coord.json").read_text())


def _igc_coord(e, wi, index):
    """IGC's DEFINE_GET_COORD (IBiF_matrix.cl), as stored with the data (C integer division)."""
    pack = e["contrib_bits"] // e["elem_bits"]
    sg_cols = (e["C"] * e["VF"]) // pack
    skip = e["sg"] // sg_cols
    return ((wi // sg_cols + index // pack * skip) * e["VF"] + index % e["VF"],
            (wi % sg_cols * pack + index % pack) // e["VF"])


def _slice_cases():
    for e in IGC["entries"]:
        devs = ("dg2",) if e["platform"] == "dg2" else PVC_LIKE
        for dev in devs:
            yield pytest.param(dev, e, id=f"{dev}-{e['layout']}-{e['elem_bits']}b-{e['R']}x{e['C']}")


@pytest.mark.parametrize("device,e", list(_slice_cases()))
def test_work_item_slices(device, e):
    """Which logical elements each work-item's apply() sees on XMX: the set IGC's coordinate formula gives for that
    work-item (tests/data/layouts/igc_get_coord.json, copied from IBiF_matrix.cl)."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    R, C = e["R"], e["C"]
    t = {8: "s8", 16: "bf16", 32: "fp32"}[e["elem_bits"]]
    sg_size = e["sg"]
    assert SUB_GROUP[device] == sg_size
    seen: dict[int, set] = {w: set() for w in range(sg_size)}
    q = sycl.queue(device)

    def kernel(it):
        sg = it.get_sub_group()
        if e["layout"] == "PackedA":
            m = jm.joint_matrix(sg, jm_type(t), jm.use.a, R, C, jm.layout.row_major)
        elif e["layout"] == "PackedB":
            m = jm.joint_matrix(sg, jm_type(t), jm.use.b, R, C, jm.layout.ext_intel_packed)
        else:
            m = jm.joint_matrix(sg, np.float32, jm.use.accumulator, R, C)
        jm.joint_matrix_fill(sg, m, 0)
        wi = sg.get_local_id()

        def note(x, row, col):
            seen[int(wi)].add((int(row), int(col)))
            return x
        jm.joint_matrix_apply(sg, m, note)

    q.parallel_for(sycl.nd_range((1, sg_size), (1, sg_size)), kernel).wait()
    n_idx = R * C // sg_size
    for wi in range(sg_size):
        assert seen[wi] == {_igc_coord(e, wi, i) for i in range(n_idx)}, wi


# ===================================================================================== all sizes
@pytest.mark.parametrize("device", FAMILIES)
@pytest.mark.parametrize("ta", ["bf16", "s8"])
@pytest.mark.parametrize("tm", range(1, 9))
def test_all_sizes(device, ta, tm, rng):
    """Every M from 1 to 8 with the device's N and K (test-e2e joint_matrix_all_sizes, M = 2 * TM here)."""
    _, tn, tk = shape(device, ta)
    M, N, K = 2 * tm, 2 * tn, 2 * tk
    A = small_ints(rng, (M, K), ta)
    B = small_ints(rng, (K, N), ta)
    tc = acc_type(ta)
    C = np.ones((M, N), mem_dtype(tc))
    D = gemm(device, A, B, C, tm, tn, tk, ta=ta, tc=tc)
    assert np.array_equal(as_result(D, tc), oracle_gemm(A, B, C))


@pytest.mark.parametrize("device", AMX)
@pytest.mark.parametrize("ta,tm,tn,tk", [("s8", 3, 5, 8), ("s8", 16, 1, 4), ("bf16", 1, 16, 32),
                                         ("bf16", 7, 9, 10)])
def test_amx_any_shape(device, ta, tm, tn, tk, rng):
    """AMX records have only max_* sizes: any M <= 16, N <= 16 and K up to 64 bytes is one tile."""
    M, N, K = 2 * tm, 2 * tn, 3 * tk
    A = small_ints(rng, (M, K), ta)
    B = small_ints(rng, (K, N), ta)
    tc = acc_type(ta)
    D = gemm(device, A, B, None, tm, tn, tk, ta=ta, tc=tc)
    assert np.array_equal(as_result(D, tc), oracle_gemm(A, B))


# ===================================================================================== out of bounds
def _oob_cases():
    for dev in FAMILIES:
        for ta in ("bf16", "s8"):
            tiles = [shape(dev, ta)]
            if dev in PVC_LIKE and ta == "bf16":
                tiles += [(16, 16, 16), (1, 64, 16), (32, 64, 32)]
            for t in tiles:
                for la, lb in (("row_major", "ext_intel_packed"), ("col_major", "col_major")):
                    if t != tiles[0] and la == "col_major":
                        continue
                    yield pytest.param(dev, ta, t, la, lb, id=f"{dev}-{ta}-{t[0]}x{t[1]}x{t[2]}-{la[:3]}-{lb[:3]}")


@pytest.mark.parametrize("device,ta,tiles,la,lb", list(_oob_cases()))
def test_out_of_bounds(device, ta, tiles, la, lb, rng):
    """M, N, K not multiples of the tile: checked fill (1), checked loads (zeros outside), checked store
    (dropped outside) (test-e2e joint_matrix_out_bounds; M, N = 2T + edge, K = 2T + one VNNI group)."""
    tm, tn, tk = tiles
    vf = VNNI[ta]
    M, N, K = 2 * tm + (3 if tm > 1 else 1), 2 * tn + 5, 2 * tk + 2 * vf
    A = small_ints(rng, (M, K), ta)
    B = small_ints(rng, (K, N), ta)
    tc = acc_type(ta)
    D = gemm(device, A, B, None, tm, tn, tk, ta=ta, tc=tc, a_layout=la, b_layout=lb, checked=True, fill=1)
    assert np.array_equal(as_result(D, tc), oracle_gemm(A, B) + 1)


@pytest.mark.parametrize("device", FAMILIES)
def test_checked_store_drops(device):
    """store_checked of a tile hanging over the bottom-right corner of a height x width matrix writes only the
    elements inside it: the rest of the allocation (stride > width, rows below) keeps its sentinel."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    tm, tn, _ = shape(device, "s8")
    h, w, stride = tm + max(tm // 2, 1), tn + tn // 2 + 1, 2 * tn + 3
    sg_size = SUB_GROUP[device]
    q = sycl.queue(device)
    mem = device_buffer(q, np.full((2 * tm + 2, stride), -7, np.int32))

    def kernel(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, np.int32, jm.use.accumulator, tm, tn)
        jm.joint_matrix_fill(sg, c, 5)
        # tile (1, 1): rows tm..2tm-1, cols tn..2tn-1, partly outside h x w
        jm.joint_matrix_store_checked(sg, c, mem, stride, jm.layout.row_major, h, w, tm, tn)

    q.parallel_for(sycl.nd_range((1, sg_size), (1, sg_size)), kernel).wait()
    want = np.full((2 * tm + 2, stride), -7, np.int64)
    want[tm:min(2 * tm, h), tn:min(2 * tn, w)] = 5
    assert np.array_equal(read(mem, want.shape).astype(np.int64), want)


@pytest.mark.parametrize("device", FAMILIES)
def test_checked_load_zero(device):
    """load_checked of a tile hanging over the edge gives 0 outside height x width, even where the allocation
    holds other values (here 9), seen through apply with coordinates."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    tm, tn, _ = shape(device, "s8")
    h, w, stride = max(tm - 1, 1), tn - 3, tn + 2
    sg_size = SUB_GROUP[device]
    q = sycl.queue(device)
    mem = device_buffer(q, np.full((tm + 1, stride), 9, np.int32))
    out = device_buffer(q, np.full((tm, tn), -1, np.int32))

    def kernel(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, np.int32, jm.use.accumulator, tm, tn)
        jm.joint_matrix_load_checked(sg, c, mem, stride, jm.layout.row_major, h, w, 0, 0)
        jm.joint_matrix_store(sg, c, out, tn, jm.layout.row_major)

    q.parallel_for(sycl.nd_range((1, sg_size), (1, sg_size)), kernel).wait()
    want = np.zeros((tm, tn), np.int64)
    want[:h, :w] = 9
    assert np.array_equal(read(out, (tm, tn)).astype(np.int64), want)


# ===================================================================================== queries


@pytest.mark.parametrize("device", ALL9)
def test_matrix_combinations(device):
    """q.get_device().get_info("matrix_combinations") is intel/llvm's runtime list (device_info.hpp, as data)."""
    from systolic import sycl
    recs = sycl.queue(device).get_device().get_info("matrix_combinations")
    got = sorted(tuple(getattr(r, f) for f in FIELDS) for r in recs)
    assert got == sorted(COMBINATIONS[device])


@pytest.mark.parametrize("device", ALL9)
def test_deviations_from_the_peer_table_are_exactly_the_not_lowered_records(device):
    """Each row of intel/llvm's table that the query leaves out is one of the device's not_lowered records (the
    deviation is explicit and bounded), and every not_lowered record is a row of the peer's table."""
    from systolic.sycl.devices import get_device
    from .conftest import DEVIATIONS, PEER_COMBINATIONS
    dropped = [r for r in PEER_COMBINATIONS[device] if r not in COMBINATIONS[device]]
    recorded = [tuple(getattr(r, f) for f in FIELDS) for r in get_device(device).not_lowered]
    assert sorted(dropped) == sorted(recorded) == sorted(DEVIATIONS.get(device, []))


# matrix_params defaults: joint_matrix_query_default on AMX (int8 -> 16 x 16 x 64); GPUs: max M, fixed N, K
_DEFAULTS = [("spr", "s8", (16, 16, 64)), ("spr", "bf16", (16, 16, 32)), ("gnr", "fp16", (16, 16, 32)),
             ("dg2", "s8", (8, 8, 32)), ("dg2", "bf16", (8, 8, 16)),
             ("pvc", "s8", (8, 16, 32)), ("pvc", "bf16", (8, 16, 16)), ("pvc", "tf32", (8, 16, 8)),
             ("bmg", "fp16", (8, 16, 16)), ("lnl", "u8", (8, 16, 32))]


@pytest.mark.parametrize("device,ta,mnk", _DEFAULTS, ids=[f"{d}-{t}" for d, t, _ in _DEFAULTS])
def test_matrix_params_defaults(device, ta, mnk):
    from systolic.sycl import matrix as jm
    tc = {"s8": np.int32, "u8": np.int32}.get(ta, np.float32)
    p = jm.matrix_params(device, jm_type(ta), jm_type(ta), tc, tc)
    assert (p.M, p.N, p.K) == mnk


@pytest.mark.parametrize("device", FAMILIES)
def test_query_default_gemm(device, rng):
    """The int8 GEMM sized by matrix_params' defaults (test-e2e joint_matrix_query_default), B VNNI-packed."""
    from systolic.sycl import matrix as jm
    p = jm.matrix_params(device, np.int8, np.int8, np.int32, np.int32)
    M, N, K = 2 * p.M, 2 * p.N, 2 * p.K
    A = np.add.outer(np.arange(M), 2 * np.arange(K)).astype(np.int8)      # test-e2e: A[i][j] = i + 2j
    B = np.add.outer(np.arange(K), np.arange(N)).astype(np.int8)
    C = np.ones((M, N), np.int32)
    D = gemm(device, A, B, C, p.M, p.N, p.K, ta="s8", tc="s32")
    assert np.array_equal(D.astype(np.int64), oracle_gemm(A, B, C))


_UNSUPPORTED = {   # device -> [(why, (ta, tc, M, N, K))]; each outside the device's combinations (table above)
    "spr": [("M_17", ("s8", "s32", 17, 16, 64)), ("K_128", ("s8", "s32", 16, 16, 128)),
            ("fp16_needs_amx_fp16", ("fp16", "fp32", 16, 16, 32)), ("bf16_accumulator", ("bf16", "bf16", 16, 16, 32))],
    "gnr": [("M_17", ("s8", "s32", 17, 16, 64)), ("K_128", ("s8", "s32", 16, 16, 128)),
            ("tf32_needs_dmr", ("tf32", "fp32", 16, 16, 16)), ("bf16_accumulator", ("bf16", "bf16", 16, 16, 32))],
    "dg2": [("M_9", ("s8", "s32", 9, 8, 32)), ("K_64", ("s8", "s32", 8, 8, 64)), ("N_16", ("s8", "s32", 8, 16, 32)),
            ("bf16_accumulator", ("bf16", "bf16", 8, 8, 16)), ("tf32", ("tf32", "fp32", 8, 8, 8))],
    "pvc": [("M_9", ("s8", "s32", 9, 16, 32)), ("K_64", ("s8", "s32", 8, 16, 64)), ("N_8", ("s8", "s32", 8, 8, 32)),
            ("tf32_K_16", ("tf32", "fp32", 8, 16, 16)), ("int8_32x64", ("s8", "s32", 32, 64, 32))],
}
_UNSUPPORTED["bmg"] = _UNSUPPORTED["lnl"] = _UNSUPPORTED["pvc"]


def _unsupported_cases():
    return [pytest.param(d, why, case, id=f"{d}-{why}") for d in FAMILIES for why, case in _UNSUPPORTED[d]]


@pytest.mark.parametrize("device,why,case", _unsupported_cases())
def test_unsupported_combination(device, why, case):
    """A shape/type outside the device's combinations raises UnsupportedCombination, from matrix_params and from a
    kernel's joint_matrix_mad, and the message lists what the device supports."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    ta, tc, tm, tn, tk = case
    with pytest.raises(UnsupportedCombination) as ei:
        jm.matrix_params(device, jm_type(ta), jm_type(ta), jm_type(tc), jm_type(tc), tm, tn, tk)
    text = str(ei.value)
    supported = [r for r in COMBINATIONS[device]]
    assert any(r[6] in text for r in supported), text          # names at least one supported type
    sg_size = SUB_GROUP[device]
    q = sycl.queue(device)

    def kernel(it):
        sg = it.get_sub_group()
        a = jm.joint_matrix(sg, jm_type(ta), jm.use.a, tm, tk, jm.layout.row_major)
        b = jm.joint_matrix(sg, jm_type(ta), jm.use.b, tk, tn, jm.layout.ext_intel_packed)
        c = jm.joint_matrix(sg, jm_type(tc), jm.use.accumulator, tm, tn)
        jm.joint_matrix_fill(sg, a, 1)
        jm.joint_matrix_fill(sg, b, 1)
        jm.joint_matrix_fill(sg, c, 0)
        jm.joint_matrix_mad(sg, c, a, b, c)

    with pytest.raises(UnsupportedCombination):
        q.parallel_for(sycl.nd_range((1, sg_size), (1, sg_size)), kernel).wait()


# ===================================================================================== group-operation rules
def _div_cases():
    for dev in XMX:
        for case in ("branch", "stride", "pointer", "fill_value", "early_exit"):
            yield pytest.param(dev, case, id=f"{dev}-{case}")


@pytest.mark.parametrize("device,case", list(_div_cases()))
def test_divergent_collective(device, case):
    """A joint_matrix call from divergent control flow, or with arguments that differ between the work-items of
    a sub-group, is a DivergentCollective naming the call (sycl_ext_oneapi_matrix: group operations)."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    tm, tn, _ = shape(device, "s8")
    sg_size = SUB_GROUP[device]
    q = sycl.queue(device)
    mem = q.malloc_shared(tm * tn * 4, np.int32)

    def kernel(it):
        sg = it.get_sub_group()
        lid = sg.get_local_id()
        c = jm.joint_matrix(sg, np.int32, jm.use.accumulator, tm, tn)
        if case == "branch":
            if lid < sg_size // 2:
                jm.joint_matrix_load(sg, c, mem, tn, jm.layout.row_major)
            jm.joint_matrix_store(sg, c, mem, tn, jm.layout.row_major)
        elif case == "stride":
            jm.joint_matrix_load(sg, c, mem, tn + lid, jm.layout.row_major)
        elif case == "pointer":
            jm.joint_matrix_load(sg, c, mem + lid, tn, jm.layout.row_major)
        elif case == "fill_value":
            jm.joint_matrix_fill(sg, c, lid)
        else:
            if lid == 0:
                return
            jm.joint_matrix_fill(sg, c, 1)

    with pytest.raises(DivergentCollective) as ei:
        q.parallel_for(sycl.nd_range((1, sg_size), (1, sg_size)), kernel).wait()
    assert "joint_matrix" in str(ei.value)


@pytest.mark.parametrize("device", FAMILIES)
def test_uniform_branch_is_fine(device):
    """Control flow that is the same for every work-item of a sub-group (a branch on the sub-group's id) is
    convergent: each sub-group takes its own branch and the collectives run."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    tm, tn, _ = shape(device, "s8")
    sg_size = SUB_GROUP[device]
    q = sycl.queue(device)
    mem = q.malloc_shared(2 * tm * tn, np.int32)

    def kernel(it):
        sg = it.get_sub_group()
        g = it.get_group(0)
        c = jm.joint_matrix(sg, np.int32, jm.use.accumulator, tm, tn)
        if g == 0:
            jm.joint_matrix_fill(sg, c, 11)
        else:
            jm.joint_matrix_fill(sg, c, 22)
        jm.joint_matrix_store(sg, c, mem + g * tm * tn, tn, jm.layout.row_major)

    q.parallel_for(sycl.nd_range((2, sg_size), (1, sg_size)), kernel).wait()
    got = read(mem, (2, tm, tn)).astype(np.int64)
    assert np.array_equal(got, np.stack([np.full((tm, tn), 11), np.full((tm, tn), 22)]))


@pytest.mark.parametrize("device", FAMILIES)
def test_divergence_outside_collectives(device, rng):
    """Work-item-dependent control flow that reaches no group operation is legal SYCL: a GEMM whose work-items
    also each increment their own USM element and then negate it on odd ids only gives the exact product and
    +1 / -1 per element: each work-item's writes happen once, however the emulator executes the divergent
    kernel."""
    from systolic import sycl
    from systolic.sycl import matrix as jm
    tm, tn, tk = shape(device, "s8")
    sg_size = SUB_GROUP[device]
    M, N, K = 2 * tm, 2 * tn, 2 * tk
    A, B = small_ints(rng, (M, K), "s8"), small_ints(rng, (K, N), "s8")
    q = sycl.queue(device)
    pA, pB = device_buffer(q, A), device_buffer(q, vnni(B, 4))
    pC = q.malloc_shared(M * N, np.int32)
    n_items = 2 * 2 * sg_size
    ids = q.malloc_shared(n_items, np.int32)

    def kernel(it):
        gx, gy = it.get_global_id(0), it.get_global_id(1)
        lin = gx * (2 * sg_size) + gy
        ids[lin] = ids[lin] + 1          # before the divergent branch: must happen once per work-item
        if lin % 2 == 1:
            ids[lin] = ids[lin] * -1
        sg = it.get_sub_group()
        m0, n0 = (gx - it.get_local_id(0)) * tm, (gy - it.get_local_id(1)) // sg_size * tn
        a = jm.joint_matrix(sg, np.int8, jm.use.a, tm, tk, jm.layout.row_major)
        b = jm.joint_matrix(sg, np.int8, jm.use.b, tk, tn, jm.layout.ext_intel_packed)
        c = jm.joint_matrix(sg, np.int32, jm.use.accumulator, tm, tn)
        jm.joint_matrix_fill(sg, c, 0)
        for k in range(0, K, tk):
            jm.joint_matrix_load(sg, a, pA + m0 * K + k, K)
            jm.joint_matrix_load(sg, b, pB + (k // 4) * N * 4 + n0 * 4, N * 4)
            jm.joint_matrix_mad(sg, c, a, b, c)
        jm.joint_matrix_store(sg, c, pC + m0 * N + n0, N, jm.layout.row_major)

    q.parallel_for(sycl.nd_range((2, 2 * sg_size), (1, sg_size)), kernel).wait()
    assert np.array_equal(read(pC, (M, N)).astype(np.int64), oracle_gemm(A, B))
    assert read(ids, (n_items,)).tolist() == [1 if i % 2 == 0 else -1 for i in range(n_items)]


@pytest.mark.parametrize("device", FAMILIES)
def test_nd_item_ids(device):
    """Every work-item's ids (SYCL 2020 4.9.1: global = group * local range + local; sub-groups cut the work-group's
    row-major linear local id into runs of the sub-group size), written by the work-item itself into USM; the
    expectations are computed here from those definitions."""
    from systolic import sycl
    sg_size = SUB_GROUP[device]
    G, L = (4, 4 * sg_size), (2, 2 * sg_size)
    q = sycl.queue(device)
    n = G[0] * G[1]
    fields = ("gid0", "gid1", "lid0", "lid1", "grp0", "grp1", "grange1", "lrange1", "sg_lid", "sg_gid", "sg_lrange")
    out = {f: q.malloc_shared(n, np.int32) for f in fields}

    def kernel(it):
        sg = it.get_sub_group()
        w = it.get_global_id(0) * G[1] + it.get_global_id(1)
        vals = (it.get_global_id(0), it.get_global_id(1), it.get_local_id(0), it.get_local_id(1), it.get_group(0),
                it.get_group(1), it.get_global_range(1), it.get_local_range(1), sg.get_local_id(), sg.get_group_id(),
                sg.get_local_range())
        for f, v in zip(fields, vals):
            out[f][w] = v

    q.parallel_for(sycl.nd_range(G, L), kernel).wait()
    got = {f: read(p, (n,)).tolist() for f, p in out.items()}
    for g0 in range(G[0]):
        for g1 in range(G[1]):
            w = g0 * G[1] + g1
            l0, l1 = g0 % L[0], g1 % L[1]
            lin = l0 * L[1] + l1
            want = (g0, g1, l0, l1, g0 // L[0], g1 // L[1], G[1], L[1], lin % sg_size, lin // sg_size, sg_size)
            assert tuple(got[f][w] for f in fields) == want, (g0, g1)


# ===================================================================================== bad input
_BAD = ("past_the_end", "negative_offset", "pointer_type", "mad_shapes", "apply_arity", "swapped_uses",
        "work_group_size", "matrix_2021_on_gpu")


def _bad_cases():
    for dev in FAMILIES:
        for case in _BAD:
            if case in ("work_group_size", "matrix_2021_on_gpu") and is_amx(dev):
                continue
            yield pytest.param(dev, case, id=f"{dev}-{case}")


@pytest.mark.parametrize("device,case", list(_bad_cases()))
def test_bad_input(device, case):
    """A broken rule is a typed error from systolic.errors naming it, never an IndexError or a silent answer:
    loads outside the USM allocation (MemoryFault), a pointer of another element type, mad operands whose shapes
    or uses do not fit, an apply function of the wrong arity (InvalidValue), a work-group that is not whole
    sub-groups, and the 2021 revision (AMX only) on a GPU (UnsupportedCombination)."""
    from systolic import errors, sycl
    from systolic.sycl import matrix as jm
    tm, tn, tk = shape(device, "s8")
    sg_size = SUB_GROUP[device]
    q = sycl.queue(device)
    small = q.malloc_shared(tm * tn - 1, np.int32)
    big = q.malloc_shared(4 * tm * tn, np.int32)
    wrong = q.malloc_shared(4 * tm * tn, np.float32)
    expected = {"past_the_end": errors.MemoryFault, "negative_offset": errors.MemoryFault,
                "pointer_type": errors.InvalidValue, "mad_shapes": errors.SystolicError,
                "apply_arity": errors.InvalidValue, "swapped_uses": errors.InvalidValue,
                "work_group_size": errors.InvalidValue, "matrix_2021_on_gpu": errors.UnsupportedCombination}[case]

    def kernel(it):
        sg = it.get_sub_group()
        if case == "matrix_2021_on_gpu":
            from systolic.sycl import matrix_2021 as m21
            m21.joint_matrix(sg, np.int8, tm, tk)
            return
        c = jm.joint_matrix(sg, np.int32, jm.use.accumulator, tm, tn)
        a = jm.joint_matrix(sg, np.int8, jm.use.a, tm, tk, jm.layout.row_major)
        b = jm.joint_matrix(sg, np.int8, jm.use.b, tk, tn, jm.layout.ext_intel_packed)
        if case == "past_the_end":
            jm.joint_matrix_load(sg, c, small, tn, jm.layout.row_major)
        elif case == "negative_offset":
            jm.joint_matrix_load(sg, c, big + (-1), tn, jm.layout.row_major)
        elif case == "pointer_type":
            jm.joint_matrix_load(sg, c, wrong, tn, jm.layout.row_major)
        elif case == "mad_shapes":
            d = jm.joint_matrix(sg, np.int32, jm.use.accumulator, max(tm // 2, 1), tn)
            jm.joint_matrix_mad(sg, d, a, b, d)
        elif case == "apply_arity":
            jm.joint_matrix_apply(sg, c, lambda x, y: x)
        elif case == "swapped_uses":
            jm.joint_matrix_mad(sg, c, b, a, c)
        else:
            jm.joint_matrix_fill(sg, c, 0)

    local = (1, sg_size // 2) if case == "work_group_size" else (1, sg_size)
    with pytest.raises(expected) as ei:
        q.parallel_for(sycl.nd_range(local, local), kernel).wait()
    assert ei.value.rule or ei.value.values         # the message names the rule or the values


# ===================================================================================== the mapping table
COLUMNS = ("spr", "gnr", "dg2", "pvc", "bmg", "lnl", "emr", "dmr", "arl")


def collected_counts(items):
    """(category, device) -> number of collected tests, from the test names and their device parameter
    (tests without one name their devices in an ``e2e_devices`` attribute)."""
    by_test = {t: cat for cat, (_, tests) in CATEGORIES.items() for t in tests}
    counts: dict = {}
    for it in items:
        cat = by_test.get(getattr(it, "originalname", it.name))
        if cat is None:
            continue
        spec = getattr(it, "callspec", None)
        dev = spec.params.get("device") if spec is not None else None
        for d in ([dev] if dev else list(getattr(it.function, "e2e_devices", ()))):
            counts[(cat, d)] = counts.get((cat, d), 0) + 1
    return counts


def render_table(counts) -> list[str]:
    """The body rows of the docstring's mapping table."""
    import textwrap
    rows = []
    for cat, (files, tests) in CATEGORIES.items():
        rows.append(f"{cat:<19}" + "".join(f"{counts.get((cat, d), 0):>5}" for d in COLUMNS))
        rows += textwrap.wrap(f"test-e2e: {files}", 112, initial_indent="    ", subsequent_indent="      ")
        rows += textwrap.wrap(f"tests: {', '.join(tests)}", 112, initial_indent="    ", subsequent_indent="      ")
    rows.append(f"{'total':<19}" + "".join(f"{sum(v for (c, d), v in counts.items() if d == dev):>5}"
                                           for dev in COLUMNS))
    return rows


def test_mapping_table(request):
    """The docstring's table is the collected suite: every category's count per device (regenerate it with
    ``python -m tests.sycl.test_e2e_matrix`` from the repository root after adding tests)."""
    items = request.session.items
    counts = collected_counts(items)
    have = {getattr(it, "originalname", it.name) for it in items}
    wanted = {t for _, tests in CATEGORIES.values() for t in tests}
    if not wanted <= have:
        pytest.skip("part of tests/sycl was not collected (a -k/-m selection or single files)")
    body = [ln.rstrip() for ln in __doc__.splitlines()]
    assert all(r.rstrip() in body for r in render_table(counts)), "\n".join(render_table(counts))


if __name__ == "__main__":        # print the table rows for the docstring
    class _Grab:
        def pytest_collection_finish(self, session):
            self.items = session.items
    g = _Grab()
    pytest.main(["-q", "--collect-only", "-p", "no:xdist", str(Path(__file__).parent)], plugins=[g])
    print("\n".join(render_table(collected_counts(g.items))))
