"""The cached int8 launch path of ``systolic.amx.matmul(..., backend="cuda")`` (amx_kernels._int8_fast).

torch CUDA tensors and CuPy arrays (A and C C-contiguous, B C-contiguous or column-major) skip intake and CuPy's
array machinery and run from a cached int_gemm.Plan; B given column-major skips the transpose, unaligned or
oddly shaped operands are copied inside the plan. Here that path is proven to be the one that ran (the general
path is made to fail), bit-identical to the CPU path (an independent implementation: fp32 BLAS on shifted
operands, itself checked against TileMachine and silicon) for every sign mix, with and without C at the int32
wrap, both B layouts, odd K, a side stream; and it keeps every typed error.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from systolic.amx import matmul
from systolic.errors import InvalidValue

from .conftest import assert_same_bits, needs_gpu

SIGNS = [(True, True), (True, False), (False, True), (False, False)]


def inputs(seed, M, K, N, sa, sb):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (M, K)).astype(np.uint8).view(np.int8 if sa else np.uint8)
    b = rng.integers(0, 256, (K, N)).astype(np.uint8).view(np.int8 if sb else np.uint8)
    # extremes in A and B, C at and around the int32 wrap
    a[0, :] = a.dtype.type(-128 if sa else 255)
    b[:, 0] = b.dtype.type(-128 if sb else 255)
    c = rng.choice(np.array([2 ** 31 - 1, -2 ** 31, 2 ** 31 - 100000, -2 ** 31 + 5, 0], np.int64),
                   (M, N)).astype(np.int32)
    return a, b, c


@pytest.fixture
def general_path_fails(monkeypatch):
    """Make the general int8 path raise: whatever still works went the cached launch path."""
    from systolic.gpu import amx_kernels as G

    def boom(*_a, **_k):
        raise AssertionError("the general int8 path ran")
    monkeypatch.setattr(G, "_int8", boom)
    monkeypatch.setattr(G, "_INT8", dict(G._INT8, fast=True))
    return G


@needs_gpu
@pytest.mark.parametrize("signs", SIGNS, ids=["ss", "su", "us", "uu"])
@pytest.mark.parametrize("b_layout", ["row", "col"])
def test_torch_fast_path_equals_cpu(signs, b_layout, general_path_fails):
    torch = pytest.importorskip("torch")
    M, K, N = (256, 512, 200) if b_layout == "row" else (128, 384, 256)
    a, b, c = inputs(zlib.crc32(repr((signs, b_layout)).encode()), M, K, N, *signs)
    ta, tc = torch.from_numpy(a).cuda(), torch.from_numpy(c).cuda()
    tb = torch.from_numpy(b).cuda() if b_layout == "row" else torch.from_numpy(b.T.copy()).cuda().t()
    assert tb.is_contiguous() == (b_layout == "row")
    for _ in range(2):                                  # first call builds the plan, the second uses it
        got = matmul(ta, tb, tc)
        assert isinstance(got, torch.Tensor) and got.dtype == torch.int32 and got.is_cuda
        assert_same_bits(got.cpu().numpy(), matmul(a, b, c, backend="cpu"), f"{signs} {b_layout} with C")
        assert_same_bits(matmul(ta, tb).cpu().numpy(), matmul(a, b, backend="cpu"), f"{signs} {b_layout} no C")


@needs_gpu
@pytest.mark.parametrize("signs", SIGNS, ids=["ss", "su", "us", "uu"])
@pytest.mark.parametrize("b_layout", ["row", "col"])
def test_cupy_fast_path_equals_cpu(signs, b_layout, general_path_fails):
    import cupy as cp
    M, K, N = 128, 256, 384
    a, b, c = inputs(7 + len(b_layout), M, K, N, *signs)
    gb = cp.asarray(b) if b_layout == "row" else cp.asfortranarray(cp.asarray(b))
    got = matmul(cp.asarray(a), gb, cp.asarray(c))
    assert isinstance(got, cp.ndarray)
    assert_same_bits(got, matmul(a, b, c, backend="cpu"), f"{signs} {b_layout}")
    assert_same_bits(matmul(cp.asarray(a), gb), matmul(a, b, backend="cpu"))


@needs_gpu
@pytest.mark.parametrize("K", [4, 30, 260])
def test_odd_k_through_the_fast_path(K, general_path_fails):
    """K not a multiple of 16 (copied with zero padding inside the plan), both B layouts, every sign mix."""
    torch = pytest.importorskip("torch")
    for signs in SIGNS:
        a, b, c = inputs(3 + K, 256, K, 256, *signs)
        ta, tb, tc = (torch.from_numpy(x).cuda() for x in (a, b, c))
        assert_same_bits(matmul(ta, tb, tc).cpu().numpy(), matmul(a, b, c, backend="cpu"), f"{signs} K={K}")
        tbc = torch.from_numpy(b.T.copy()).cuda().t()
        assert_same_bits(matmul(ta, tbc).cpu().numpy(), matmul(a, b, backend="cpu"), f"{signs} K={K} B col")


@needs_gpu
def test_side_stream(general_path_fails):
    """The plan launches on the caller's current torch stream: results are ordered with its other work."""
    torch = pytest.importorskip("torch")
    a, b, c = inputs(11, 256, 256, 128, False, True)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        ta, tb, tc = (torch.from_numpy(x).to("cuda", non_blocking=False) for x in (a, b, c))
        tc.add_(0)                                       # queued on s before the GEMM reads C
        got = matmul(ta, tb, tc)
        host = got.to("cpu", non_blocking=False)
    s.synchronize()
    assert_same_bits(host.numpy(), matmul(a, b, c, backend="cpu"))


@needs_gpu
def test_unaligned_operands_and_odd_shapes():
    """Operands that are not 16-byte aligned (A, and a row-major B whose transpose would read 16 bytes at a
    time) and shapes off every tile are copied inside the plan: same bits, no misaligned access."""
    torch = pytest.importorskip("torch")
    M, K, N = 128, 256, 256
    a, b, c = inputs(13, M, K, N, True, True)
    want = matmul(a, b, c, backend="cpu")

    def unaligned(x):
        flat = torch.zeros(x.size + 1, dtype=torch.int8, device="cuda")
        t = flat[1:].view(x.shape)                       # storage offset 1: not 16-byte aligned
        t.copy_(torch.from_numpy(x))
        assert t.data_ptr() % 16 and t.is_contiguous()
        return t
    tb, tc = torch.from_numpy(b).cuda(), torch.from_numpy(c).cuda()
    assert_same_bits(matmul(unaligned(a), tb, tc).cpu().numpy(), want, "unaligned A")
    assert_same_bits(matmul(torch.from_numpy(a).cuda(), unaligned(b), tc).cpu().numpy(), want, "unaligned B")
    a2, b2, c2 = inputs(14, 100, 100, 70, False, False)  # M, K not multiples of the tile
    assert_same_bits(matmul(*(torch.from_numpy(x).cuda() for x in (a2, b2, c2))).cpu().numpy(),
                     matmul(a2, b2, c2, backend="cpu"), "odd shape")


@needs_gpu
def test_typed_errors_every_time(general_path_fails):
    """The plan caches checks that passed, never failures: each bad call raises the CPU path's error."""
    torch = pytest.importorskip("torch")
    a = torch.zeros((128, 128), dtype=torch.int8, device="cuda")
    for _ in range(2):
        with pytest.raises(InvalidValue, match="a \\(M, K\\) and b \\(K, N\\)"):
            matmul(a, torch.zeros((256, 128), dtype=torch.int8, device="cuda"))
        with pytest.raises(InvalidValue, match="c must be"):
            matmul(a, a, torch.zeros((128, 64), dtype=torch.int32, device="cuda"))
        with pytest.raises(InvalidValue, match="c must be"):
            matmul(a, a, torch.zeros((128, 128), dtype=torch.float32, device="cuda"))
        with pytest.raises(InvalidValue, match="threads"):
            matmul(a, a, threads=0)
        with pytest.raises(InvalidValue, match="method"):
            matmul(a, a, method="instructions")
        with pytest.raises(InvalidValue, match="no AMX instruction"):
            matmul(a, torch.zeros((128, 128), dtype=torch.int16, device="cuda"))
    with pytest.raises(InvalidValue, match="cpu|CPU"):
        matmul(a, a, device="no-such-cpu")
