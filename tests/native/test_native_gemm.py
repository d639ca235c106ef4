"""Native GEMM: B packing (index oracle), the blocked reference (exact integers), and - on AMX - the
JIT-compiled micro-kernel bit-identical to the tile machine with the same blocking."""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from systolic.amx import native_gemm as G
from systolic.amx import native_gemm_ir as GI
from systolic.errors import InvalidValue

from .conftest import NATIVE, NATIVE_WHY

DTYPES = {"bf16": ml_dtypes.bfloat16, "int8": np.int8, "uint8": np.uint8}


def _rand(rng, shape, dt, adversarial=False):
    if dt is ml_dtypes.bfloat16:
        if adversarial:
            bits = rng.integers(0, 1 << 16, shape, dtype=np.uint16)
            return bits.view(ml_dtypes.bfloat16)
        return rng.standard_normal(shape).astype(ml_dtypes.bfloat16)
    info = np.iinfo(dt)
    if adversarial:
        return rng.choice(np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2], dt), shape)
    return rng.integers(info.min, info.max + 1, shape).astype(dt)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 80), st.integers(1, 70), st.sampled_from(["bf16", "int8", "uint8"]), st.integers(0, 99),
       st.sampled_from([None, 0, 64, 1024]))
def test_pack_b_layout_against_index_oracle(k, n, dt, seed, pad):
    b = _rand(np.random.default_rng(seed), (k, n), DTYPES[dt])
    pb = G.pack_b(b, pad=pad)
    es = b.dtype.itemsize
    g = 4 // es
    assert pb.kp % (64 // es) == 0 and pb.kp >= k and pb.np_ % 32 == 0 and pb.np_ >= n
    assert pb.pad == (G.PANEL_PAD if pad is None else pad)
    # panel j from byte j * (panel_bytes + pad); the padding is zero
    whole = pb.data.reshape(pb.np_ // 16, pb.panel_bytes + pb.pad)
    assert not whole[:, pb.panel_bytes:].any()
    raw = b.view(np.uint8 if es == 1 else np.uint16)
    packed = np.ascontiguousarray(whole[:, :pb.panel_bytes]).reshape(-1).view(raw.dtype)
    rows_per_panel = pb.kp // g
    for p in range(pb.np_ // 16):
        for r in range(rows_per_panel):
            for c in range(16):
                for e in range(g):
                    kk, nn = r * g + e, 16 * p + c
                    want = raw[kk, nn] if kk < k and nn < n else 0
                    got = packed[((p * rows_per_panel + r) * 16 + c) * g + e]
                    assert got == want, (p, r, c, e)


@pytest.mark.parametrize("dt, shape", [("bf16", (1100, 600)), ("int8", (1500, 700)), ("uint8", (2049, 333))])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_parallel_pack_b_equals_numpy_layout(dt, shape, threads, monkeypatch):
    """Large B is packed by the worker pool in row ranges (the vector interior, the element-wise edges): the same
    bytes as the numpy transposes, for any number of workers."""
    monkeypatch.setattr(G, "PACK_PARALLEL_BYTES", 1 << 19)    # these shapes count as large
    b = _rand(np.random.default_rng(threads), shape, DTYPES[dt])
    got, want = G.pack_b(b, threads=threads, pad=64 * threads), G.pack_b_numpy(b, pad=64 * threads)
    assert got.data.size >= G.PACK_PARALLEL_BYTES
    assert (got.kp, got.np_) == (want.kp, want.np_) and np.array_equal(got.data, want.data)
    sliced = b[::2, 1:]                     # a strided view: copied to rows first
    assert np.array_equal(G.pack_b(sliced, threads=threads).data, G.pack_b_numpy(sliced).data)


@pytest.mark.parametrize("pair", [("int8", "int8"), ("int8", "uint8"), ("uint8", "int8"), ("uint8", "uint8")])
def test_blocked_reference_is_the_exact_integer_product(pair):
    rng = np.random.default_rng(7)
    a = _rand(rng, (20, 70), DTYPES[pair[0]], adversarial=True)
    b = _rand(rng, (70, 18), DTYPES[pair[1]])
    exact = a.astype(np.int64) @ b.astype(np.int64)
    want = ((exact + 2**31) % 2**32 - 2**31).astype(np.int32)
    assert np.array_equal(G.reference_blocked(a, b), want)


def test_blocked_reference_bf16_is_the_tile_chain():
    """One K block: the reference is a single TDPBF16PS per tile, which for small integers is exact."""
    rng = np.random.default_rng(3)
    a = rng.integers(-4, 5, (17, 40)).astype(ml_dtypes.bfloat16)
    b = rng.integers(-4, 5, (40, 5)).astype(ml_dtypes.bfloat16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.array_equal(G.reference_blocked(a, b), want.astype(np.float32))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 32), st.sampled_from([None, 32, 64, 100, 256]),
       st.sampled_from([None, 32, 96, 512]))
def test_plan_covers_c_exactly_once(mb, nb, threads, bm, bn):
    m, n = 32 * mb, 32 * nb
    shares, _, _ = G.plan(m, n, threads, bm, bn)
    count = np.zeros((m // 32, n // 32), int)
    assert 1 <= len(shares) <= min(threads, mb * nb)
    for share in shares:
        assert share, "every worker gets work"
        rows = {(m0, m1) for m0, m1, _, _ in share}
        cols = {(n0, n1) for _, _, n0, n1 in share}
        assert len(share) == len(rows) * len(cols), "a worker's regions tile one rectangle"
        for i, (m0, m1, n0, n1) in enumerate(share):
            assert m0 % 32 == 0 and n0 % 32 == 0 and m1 % 32 == 0 and n1 % 32 == 0 and m0 < m1 and n0 < n1
            assert m1 - m0 <= (bm or G.BLOCK_M) and n1 - n0 <= (bn or G.BLOCK_N)
            if i:
                assert share[i - 1][0] <= m0, "row block by row block (A packed once per row block)"
            count[m0 // 32:m1 // 32, n0 // 32:n1 // 32] += 1
    assert (count == 1).all()


@pytest.mark.parametrize("mb, nb, threads, want", [(32, 32, 16, (4, 4)), (32, 32, 2, (2, 1)), (1, 40, 8, (1, 8)),
                                                    (128, 4, 16, (16, 1)), (3, 3, 7, (3, 2)), (2, 2, 64, (2, 2))])
def test_worker_grid(mb, nb, threads, want):
    """The grid minimises rows of A + columns of B read per worker; fewer workers where none fits."""
    assert G.grid(mb, nb, threads) == want


def test_cpus_follow_the_affinity_mask():
    import os
    if hasattr(os, "sched_getaffinity"):
        assert G.cpus() == len(os.sched_getaffinity(0))
    assert G.cpus() >= 1


@pytest.mark.native
@pytest.mark.skipif(not NATIVE, reason=f"native AMX unavailable: {NATIVE_WHY}")
def test_pool_serves_concurrent_callers():
    """Several Python threads calling matmul at once share the resident pool without mixing results."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(11)
    cases = [(_rand(rng, (96, 128), np.int8), _rand(rng, (128, 64), np.int8)) for _ in range(12)]
    wants = [G.reference_blocked(a, b) for a, b in cases]
    with ThreadPoolExecutor(6) as ex:
        gots = list(ex.map(lambda ab: G.matmul(*ab, threads=8), cases * 3))
    for got, want in zip(gots, wants * 3):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("pair", [("bf16", "bf16"), ("uint8", "int8")])
def test_blocked_reference_equals_amx_matmul_definition(pair):
    """Our blocking (TILEZERO, K zero-padded to whole tiles) is systolic.amx.matmul's (partial last tile)."""
    from systolic.amx import matmul
    rng = np.random.default_rng(5)
    a = _rand(rng, (18, 75), DTYPES[pair[0]], adversarial=True)
    b = _rand(rng, (75, 20), DTYPES[pair[1]], adversarial=True)
    want = matmul(a, b, method="instructions")
    assert np.array_equal(G.reference_blocked(a, b).view(np.uint32), want.view(np.uint32))


@pytest.mark.native
@pytest.mark.skipif(not NATIVE, reason=f"native AMX unavailable: {NATIVE_WHY}")
@pytest.mark.parametrize("pair", [("bf16", "bf16"), ("int8", "int8"), ("uint8", "uint8")])
@pytest.mark.parametrize("shape", [(256, 512, 256), (100, 300, 130), (64, 4096, 64)])
@pytest.mark.parametrize("adversarial", [False, True])
def test_native_gemm_equals_amx_matmul(pair, shape, adversarial):
    from systolic.amx import matmul
    m, k, n = shape
    rng = np.random.default_rng(zlib.crc32(repr((pair, shape, adversarial, "mm")).encode()))
    a = _rand(rng, (m, k), DTYPES[pair[0]], adversarial)
    b = _rand(rng, (k, n), DTYPES[pair[1]], adversarial)
    assert np.array_equal(G.matmul(a, b).view(np.uint32), matmul(a, b).view(np.uint32))
    assert np.array_equal(G.matmul(a, b, k_block=8).view(np.uint32), matmul(a, b).view(np.uint32))


@pytest.mark.parametrize("shape", [(0, 5, 3), (4, 0, 3), (4, 5, 0)])
def test_empty_products_are_zeros_without_running_anything(shape):
    m, k, n = shape
    got = G.matmul(np.zeros((m, k), np.int8), np.zeros((k, n), np.int8))
    assert got.shape == (m, n) and got.dtype == np.int32 and not got.any()
    got = G.matmul(np.zeros((m, k), ml_dtypes.bfloat16), np.zeros((k, n), ml_dtypes.bfloat16))
    assert got.dtype == np.float32 and not got.view(np.uint32).any()


@pytest.mark.native
@pytest.mark.skipif(not NATIVE, reason=f"native AMX unavailable: {NATIVE_WHY}")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_pool_survives_fork():
    """A forked child must not wait for the parent's pool threads (it starts its own pool)."""
    import multiprocessing as mp
    a = np.arange(64 * 128, dtype=np.int64).reshape(64, 128).astype(np.int8)
    b = np.ones((128, 64), np.int8)
    want = G.matmul(a, b)  # the parent's pool exists now
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as p:
        got = p.apply_async(G.matmul, (a, b)).get(timeout=60)
    assert np.array_equal(got, want)


def test_bad_arguments_are_typed_errors():
    with pytest.raises(InvalidValue, match="inner dimensions"):
        G.matmul(np.zeros((4, 5), np.int8), G.pack_b(np.zeros((6, 4), np.int8)))
    with pytest.raises(InvalidValue, match="unsupported dtype pair"):
        G.matmul(np.zeros((4, 6), np.int8), G.pack_b(np.zeros((6, 4), ml_dtypes.bfloat16)))
    with pytest.raises(InvalidValue):
        G.pack_b(np.zeros((4, 4), np.float32))
    with pytest.raises(InvalidValue):
        G.matmul(np.zeros(4, np.int8), np.zeros((4, 4), np.int8))
    for pad in (32, -64, 1.5):
        with pytest.raises(InvalidValue, match="multiple of 64"):
            G.pack_b(np.zeros((4, 4), np.int8), pad=pad)
    # the schedule options and out are refused, not rounded or converted (checked before any AMX is needed)
    a, pb = np.zeros((4, 8), np.int8), G.pack_b(np.zeros((8, 4), np.int8))
    for bad in (dict(threads=0), dict(threads=1.5), dict(k_block=-1), dict(k_block=2.7), dict(prefetch=2.9),
                dict(prefetch="3"), dict(block_m=100), dict(block_n=0), dict(block_m=True)):
        with pytest.raises(InvalidValue, match="must be an integer"):
            G.matmul(a, pb, **bad)
    ro = np.zeros((4, 4), np.int32)
    ro.flags.writeable = False          # (was numpy's bare ValueError when the result was copied into it)
    for out in (np.zeros((4, 4), np.float32), np.zeros((4, 5), np.int32), [[0] * 4] * 4, ro):
        with pytest.raises(InvalidValue, match="out must be"):
            G.matmul(a, pb, out=out)


@pytest.mark.native
@pytest.mark.skipif(not NATIVE, reason=f"native AMX unavailable: {NATIVE_WHY}")
@pytest.mark.parametrize("pair", [("bf16", "bf16"), ("int8", "int8"), ("int8", "uint8"), ("uint8", "int8"),
                                  ("uint8", "uint8")])
@pytest.mark.parametrize("shape", [(32, 64, 32), (33, 65, 47), (1, 1, 1), (64, 200, 96), (100, 37, 130)])
@pytest.mark.parametrize("adversarial", [False, True])
def test_native_gemm_equals_tile_machine_blocking(pair, shape, adversarial):
    m, k, n = shape
    rng = np.random.default_rng(zlib.crc32(repr((pair, shape, adversarial)).encode()))
    a = _rand(rng, (m, k), DTYPES[pair[0]], adversarial)
    b = _rand(rng, (k, n), DTYPES[pair[1]], adversarial)
    want = G.reference_blocked(a, b)
    for threads, bm, bn, pa, rt, kb in ((1, None, None, True, "pool", 0), (4, 32, 32, False, "pool", 1),
                                        (3, 64, 96, True, "spawn", 2), (16, None, None, False, "spawn", 0),
                                        (2, 256, 32, True, "pool", 3), (64, 32, 32, True, "pool", 100)):
        got = G.matmul(a, b, threads=threads, block_m=bm, block_n=bn, pack_a=pa, runtime=rt, k_block=kb)
        assert got.dtype == want.dtype and got.shape == (m, n)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (threads, bm, bn, pa, rt, kb)
    assert np.array_equal(G.matmul(a, G.pack_b(b)).view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("mb", [1, 8, 32, 128])
@pytest.mark.parametrize("ksteps", [1, 16, 32, 64, 128])
@pytest.mark.parametrize("threads", [1, 2, 7, 16])
@pytest.mark.parametrize("esize", [1, 2])
def test_tuned_defaults_are_valid_options(mb, ksteps, threads, esize):
    t = G.tuning(32 * mb, 32 * mb, ksteps, threads, esize)
    assert t["schedule"] in ("static", "dynamic") and t["order"] in ("n", "m")
    assert 0 <= t["prefetch"] <= 15 and t["k_block"] >= 0
    assert t["block_m"] % 32 == 0 and t["block_n"] % 32 == 0
    assert t["micro"] in GI.MICRO_KERNELS and set(t["t1"]) <= set("ab")
    if threads == 1:
        assert t["schedule"] == "static"        # nobody to share a counter with


def test_writes_into_only_where_the_tiles_can_land_directly():
    """out= is written by the kernel itself only when unpadded, unit-stride rows, and no memory shared with the
    operands the workers still read (else the result is copied into it)."""
    a, c = np.zeros((32, 64), np.int8), np.zeros((32, 32), np.int32)
    out = np.zeros((32, 32), np.int32)
    assert G._writes_into(out, a, None, False)
    assert G._writes_into(out, a, c, False)
    assert not G._writes_into(out, a, None, True)                      # padded: the kernel writes mp x np_
    assert not G._writes_into(None, a, None, False)
    wide = np.zeros((32, 64), np.int32)
    assert G._writes_into(wide[:, :32], a, None, False)                # a row stride beyond the row: fine
    assert not G._writes_into(wide[:, ::2], a, None, False)            # columns not unit-stride
    assert not G._writes_into(wide[::-1, :32], a, None, False)         # negative row stride
    assert not G._writes_into(c, a, c, False)                          # in place over c: copied
    assert not G._writes_into(a.view(np.int32)[:, :16][:, :16], a, None, False)   # aliases A
    ro = np.zeros((32, 32), np.int32)
    ro.flags.writeable = False
    assert not G._writes_into(ro, a, None, False)


@pytest.mark.native
@pytest.mark.skipif(not NATIVE, reason=f"native AMX unavailable: {NATIVE_WHY}")
@pytest.mark.parametrize("dt", ["bf16", "int8"])
def test_out_written_directly_or_copied_equals_the_plain_call(dt):
    """Every form of out= gives the bits of the call without it, and leaves memory outside out untouched."""
    rng = np.random.default_rng(7)
    a, b = _rand(rng, (64, 96), DTYPES[dt]), _rand(rng, (96, 64), DTYPES[dt])
    cdt = np.float32 if dt == "bf16" else np.int32
    c = _rand(rng, (64, 64), np.int8).astype(cdt)
    for cc in (None, c):
        want = G.matmul(a, b, c=cc)
        direct = np.full((64, 64), 7, cdt)
        assert G.matmul(a, b, c=cc, out=direct) is direct
        assert np.array_equal(direct.view(np.uint32), want.view(np.uint32))
        wide = np.full((64, 100), 9, cdt)
        assert G.matmul(a, b, c=cc, out=wide[:, 3:67]) is not None
        assert np.array_equal(wide[:, 3:67].view(np.uint32), want.view(np.uint32))
        assert (wide[:, :3] == 9).all() and (wide[:, 67:] == 9).all()
    inplace = c.copy()                                   # out is c: copied after the kernel, not written over
    G.matmul(a, b, c=inplace, out=inplace)
    assert np.array_equal(inplace.view(np.uint32), G.matmul(a, b, c=c).view(np.uint32))
    odd = np.zeros((33, 64), cdt)                        # padded M: computed in a buffer, then copied
    assert np.array_equal(G.matmul(a[:33], b, out=odd).view(np.uint32), G.matmul(a[:33], b).view(np.uint32))
