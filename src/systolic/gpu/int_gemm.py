"""Integer GEMM ``D = C + A @ B mod 2**32`` of s8/u8 operands on the GPU through cuBLAS (``cublasGemmEx``).

This one function is AMX's TDPBSSD / TDPBSUD / TDPBUSD / TDPBUUD (SDM vol. 2: products exact, every addition
modulo 2**32) and XMX's integer DPAS of every precision pair (sub-byte values are widened to s8/u8 first):
addition modulo 2**32 is associative and commutative, so any summation order -- the tensor cores', cuBLAS's --
gives the same bits as the instruction's. What is left to keep exact is the range:

* cuBLAS takes int8 x int8 -> int32 (``CUBLAS_COMPUTE_32I``). An unsigned operand is shifted into int8,
  ``u = s + 128`` with ``s = u ^ 0x80``, and the shift is put back as rank-one terms:
  ``(A' + a J)(B' + b J) = A'B' + b rowsum(A') + a colsum(B') + a b K`` (``a``, ``b`` = 128 for an unsigned
  operand, 0 otherwise), all modulo 2**32, added to C by one small kernel before the GEMM adds into it.
* Each cuBLAS call covers at most :data:`K_CHUNK` = 131056 values of K: ``|s8 * s8| <= 2**14`` and
  131056 * 2**14 < 2**31, so no partial sum inside cuBLAS can leave int32, whatever order it adds in. Longer K runs as several calls, each adding
  into the previous result with ``beta = 1``. That epilogue add, and C's, are the only additions that can
  wrap; cuBLAS's int32 epilogue wraps modulo 2**32 (measured on the H100, at the wrap, in
  ``tests/gpu/test_amx_gemm.py``), which is the instruction's arithmetic.

Layout (``cublasGemmEx`` is column-major): the row-major ``M x N`` result is the column-major ``N x M``
matrix ``B^T A^T``; cuBLAS's fast integer kernels want both operands K-contiguous ("TN"), so B is read as
``BT`` (``N x K`` row-major): a column-major B (a transposed view of an ``(N, K)`` array, ``torch._int_mm``'s
own preferred layout) already is, a row-major B is transposed first by :func:`transpose` (one pass).

:class:`Plan` holds everything that depends only on shapes, signs and B's layout, so that a repeated call is
a few pointer operations and one ``gemmEx`` (the cached launch paths of :mod:`systolic.gpu.amx_kernels`).
"""

from __future__ import annotations

import numpy as np

from . import runtime

__all__ = ["K_CHUNK", "Plan", "gemm"]

#: at most this many K values per cuBLAS call (a multiple of 16): 131056 * 2**14 < 2**31, so no partial sum
#: leaves int32 (131072 would reach 2**31 exactly, with all 2**14 products: -128 * -128)
K_CHUNK = 131056
_R8I, _R32I, _COMPUTE_32I, _ALGO = 3, 10, 72, -1      # cudaDataType / cublasComputeType_t / CUBLAS_GEMM_DEFAULT
_OP_N, _OP_T = 0, 1
_ONE = np.array(1, np.int32)                           # host scalars for cuBLAS (pointer mode host)
_ZERO = np.array(0, np.int32)
_u64 = np.uint64
_NULL = np.uint64(0)

SOURCE = runtime.source("int_gemm.cu")  # the CUDA C text: src/systolic/gpu/int_gemm.cu (package data)

_FUNCS: dict = {}


def _fn(name: str):
    import cupy as cp
    key = (name, cp.cuda.Device().id)
    f = _FUNCS.get(key)
    if f is None:
        f = _FUNCS[key] = runtime.module(SOURCE).get_function(name).kernel
    return f


def _handle():
    import cupy as cp
    return cp.cuda.device.get_cublas_handle()


def _gemm_tn(handle, bt: int, a: int, out: int, M: int, N: int, K: int, ld: int, beta: bool):
    """out (M x N int32, row-major) = A @ BT^T (+ out when beta): A (M x ld bytes), BT (N x ld bytes), first K.
    Runs on CuPy's current stream (CuPy's cuBLAS wrappers set the handle's stream to it on every call; set here
    too, so that nothing depends on that)."""
    from cupy.cuda import cublas, get_current_stream
    cublas.setStream(handle, get_current_stream().ptr)
    cublas.gemmEx(handle, _OP_T, _OP_N, N, M, K, _ONE.ctypes.data, bt, _R8I, ld, a, _R8I, ld,
                  (_ONE if beta else _ZERO).ctypes.data, out, _R32I, N, _COMPUTE_32I, _ALGO)


class Plan:
    """One GEMM shape: ``M x K`` A, ``K x N`` B (``b_col``: given column-major, i.e. as BT), signs, C or not.

    :meth:`run` takes raw device pointers and an allocator, so torch tensors and CuPy arrays share it."""

    def __init__(self, M: int, K: int, N: int, signed_a: bool, signed_b: bool, b_col: bool, has_c: bool):
        self.M, self.K, self.N = M, K, N
        self.sa, self.sb, self.b_col, self.has_c = signed_a, signed_b, b_col, has_c
        self.Kp = -(-K // 16) * 16                  # cuBLAS int8: leading dimensions a multiple of 4 (16: speed)
        # rowsum(A') is needed when B is unsigned, colsum(B') when A is (the rank-one terms below)
        self.sum_a, self.sum_b = not signed_b, not signed_a
        self.copy_a = not signed_a or self.Kp != K or self.sum_a
        self.copy_b = not signed_b or self.Kp != K or not b_col or self.sum_b
        self.bias = not signed_a or not signed_b or has_c
        ca, cb = (0 if signed_a else 128), (0 if signed_b else 128)
        # (A' + ca J)(B' + cb J) = A'B' + cb rowsum(A') + ca colsum(B') + ca cb K
        self.cu, self.cv, self.k0 = np.uint32(cb), np.uint32(ca), np.uint32((ca * cb * K) & 0xFFFFFFFF)
        self.chunks = [(k0, min(self.Kp, k0 + K_CHUNK)) for k0 in range(0, self.Kp, K_CHUNK)]
        # (the kernels are looked up per call, _fn's cache: a Plan is plain data, testable without a GPU)

    def run(self, pa: int, pb: int, pc: int | None, pout: int, alloc, stream) -> None:
        """``pout = C + A @ B`` (mod 2**32). ``pa``: A (M x K bytes, C-contiguous); ``pb``: B (K x N, C-contiguous)
        or BT (N x K, C-contiguous) when ``b_col``; ``pc``: C (M x N int32) or None; ``alloc(nbytes) -> ptr``
        (memory that lives until the GEMM is done, on ``stream``); ``stream``: a CuPy stream object, made
        CuPy's current stream for the call so that cuBLAS runs on it too (the caller's torch stream: ordered with
        its other work, its scratch memory safe to reuse)."""
        # (not 'with stream:': leaving it would drop a stream the user made current with use(), CuPy #8377)
        from cupy.cuda import get_current_stream
        prev = get_current_stream()
        if stream == prev:
            self._run(pa, pb, pc, pout, alloc, stream)
            return
        stream.use()
        try:
            self._run(pa, pb, pc, pout, alloc, stream)
        finally:
            prev.use()

    def _run(self, pa, pb, pc, pout, alloc, stream) -> None:
        M, K, N, Kp = self.M, self.K, self.N, self.Kp
        shift, tr, bias_k = _fn("shift_rows"), _fn("transpose_b"), _fn("bias_c")
        i32 = np.int32
        sums_a = sums_b = _NULL
        if self.copy_a or pa & 15:                  # (an unaligned operand is copied: cuBLAS reads 16-byte rows)
            ap = alloc(M * Kp)
            if self.sum_a:
                sums_a = _u64(alloc(4 * M))
            shift((M,), (256,), (_u64(pa), _u64(ap), sums_a, i32(K), i32(K), i32(Kp),
                                        i32(0 if self.sa else 0x80)), stream=stream)
            pa = ap
        if self.copy_b or pb & 15:
            bt = alloc(N * Kp)
            src, ld = pb, K
            if not self.b_col:                      # B row-major: transpose first (zeros past K)
                tr((-(-N // 64), min(65535, -(-Kp // 64))), (256,), (_u64(pb), _u64(bt), i32(K), i32(N),
                                                                            i32(Kp)), stream=stream)
                src, ld = bt, Kp
            if self.sum_b:
                sums_b = _u64(alloc(4 * N))
            if not self.sb or self.sum_b or src == pb:  # flip / sums / pad K; in place after a transpose
                shift((N,), (256,), (_u64(src), _u64(bt), sums_b, i32(K), i32(ld), i32(Kp),
                                            i32(0 if self.sb else 0x80)), stream=stream)
            pb = bt
        if self.bias:
            n = M * N
            bias_k((min(4096, -(-n // 256)),), (256,), (_NULL if pc is None else _u64(pc), _u64(pout), sums_a,
                                                            sums_b, np.int64(M), np.int64(N), self.cu, self.cv,
                                                            self.k0), stream=stream)
        handle = _handle()                          # CuPy's handle of this thread and device
        for i, (k0, k1) in enumerate(self.chunks):
            _gemm_tn(handle, pb + k0, pa + k0, pout, M, N, k1 - k0, Kp, beta=self.bias or i > 0)


def gemm(cp, a, b, c, signed_a: bool, signed_b: bool):
    """``C + A @ B mod 2**32`` as a new CuPy int32 array: ``a`` (M x K), ``b`` (K x N) CuPy int8/uint8 arrays of
    any strides (taken in place when C- or, for B, Fortran-contiguous), ``c`` an int32 CuPy array or None."""
    M, K = a.shape
    N = b.shape[1]
    out = cp.empty((M, N), dtype=cp.int32)
    if M == 0 or N == 0:
        return out
    if K == 0:
        out[...] = 0 if c is None else c
        return out
    a = cp.ascontiguousarray(a)
    b_col = b.flags.f_contiguous and not b.flags.c_contiguous
    b = b if b_col else cp.ascontiguousarray(b)
    c = None if c is None else cp.ascontiguousarray(c)
    plan = Plan(M, K, N, signed_a, signed_b, b_col, c is not None)
    keep = []

    def alloc(nbytes):
        keep.append(cp.empty(max(1, nbytes), dtype=cp.uint8))
        return keep[-1].data.ptr

    plan.run(a.data.ptr, b.data.ptr, None if c is None else c.data.ptr, out.data.ptr, alloc,
             cp.cuda.get_current_stream())
    return out
