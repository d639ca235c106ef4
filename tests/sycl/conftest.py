"""Shared test data and kernels of the SYCL joint_matrix conformance suite (``tests/sycl/test_e2e_*.py``).

Everything here is either *test data with provenance* (the runtime combination tables of intel/llvm, the
sub-group sizes of the devices) or *user code* (SYCL kernels written against ``systolic.sycl`` exactly as a SYCL
programmer writes them). Nothing here computes an expected value with the code under test: the oracles are
exact integer arithmetic (numpy int64 / Python ints) on inputs chosen so that every float product and partial
sum is an integer exactly representable in the accumulator type (so the numerics model cannot matter), and, for
"the same blocking" checks, the engines (``systolic.xmx.matmul`` / ``systolic.amx.matmul``) that the model
layer must lower onto.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

BF16 = np.dtype(ml_dtypes.bfloat16)

# --------------------------------------------------------------------------------------------- devices
#: The device families the conformance suite runs on (issue 12, item 5): AMX CPUs and XMX GPUs.
AMX = ("spr", "gnr")
XMX = ("dg2", "pvc", "bmg", "lnl")
FAMILIES = AMX + XMX
ALL_DEVICES = ("spr", "emr", "gnr", "dmr", "dg2", "arl", "pvc", "bmg", "lnl")

#: Sub-group size a joint_matrix kernel runs with: 1 on AMX (the 2021 text: "SG_SIZE has to be equal to one"),
#: the DPAS exec size on XMX (REFERENCE.md section 2: 8 on DG2/ARL, 16 on PVC and Xe2).
SUB_GROUP = {"spr": 1, "emr": 1, "gnr": 1, "dmr": 1, "dg2": 8, "arl": 8, "pvc": 16, "bmg": 16, "lnl": 16}

#: The default (one-instruction) shape per device and A type: M, N, K (intel/llvm device_info.hpp, below).
_SHAPE = {
    "amx": {"s8": (16, 16, 64), "u8": (16, 16, 64), "bf16": (16, 16, 32), "fp16": (16, 16, 32), "tf32": (16, 16, 16)},
    "dg2": {"s8": (8, 8, 32), "u8": (8, 8, 32), "bf16": (8, 8, 16), "fp16": (8, 8, 16)},
    "pvc": {"s8": (8, 16, 32), "u8": (8, 16, 32), "bf16": (8, 16, 16), "fp16": (8, 16, 16), "tf32": (8, 16, 8)},
}
_KIND = {"spr": "amx", "emr": "amx", "gnr": "amx", "dmr": "amx", "dg2": "dg2", "arl": "dg2",
         "pvc": "pvc", "bmg": "pvc", "lnl": "pvc"}


def shape(device: str, ta: str) -> tuple[int, int, int]:
    return _SHAPE[_KIND[device]][ta]


def is_amx(device: str) -> bool:
    return _KIND[device] == "amx"


def kind(device: str) -> str:
    return _KIND[device]


#: A types a device multiplies (its combinations' atype set), from the table below.
def a_types(device: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(r[6] for r in COMBINATIONS[device]))


# --------------------------------------------------------------------------------------------- runtime table
# intel/llvm sycl/source/detail/device_info.hpp, get_matrix_combinations() (the runtime answer of
# info::device::matrix_combinations), transcribed as data. Record order: (max_msize, max_nsize, max_ksize, msize,
# nsize, ksize, atype, btype, ctype, dtype) with matrix_type names sint8/uint8/sint32/bf16/fp16/fp32/tf32.
_INT8 = [("uint8", "uint8"), ("uint8", "sint8"), ("sint8", "uint8"), ("sint8", "sint8")]


def _amx_table(*extra):
    rows = [(16, 16, 64, 0, 0, 0, a, b, "sint32", "sint32") for a, b in _INT8]
    rows.append((16, 16, 32, 0, 0, 0, "bf16", "bf16", "fp32", "fp32"))
    if "fp16" in extra:
        rows.append((16, 16, 32, 0, 0, 0, "fp16", "fp16", "fp32", "fp32"))
    if "tf32" in extra:
        rows.append((16, 16, 16, 0, 0, 0, "tf32", "tf32", "fp32", "fp32"))
    return rows


def _pvc_table():
    rows = [(8, 0, 0, 0, 16, 32, a, b, "sint32", "sint32") for a, b in _INT8]
    fixed = [(16, 16, 16), (1, 64, 16), (32, 64, 16), (1, 64, 32), (32, 64, 32)]
    # the (ctype, dtype) pairs in the file's own order, which differs between blocks
    h, b, f = "fp16", "bf16", "fp32"
    rows += [(8, 0, 0, 0, 16, 16, h, h, c, d) for c, d in ((f, f), (h, f), (f, h), (h, h))]
    rows += [(0, 0, 0, m, n, k, h, h, c, d) for m, n, k in fixed for c, d in ((f, f), (f, h), (h, f), (h, h))]
    rows += [(8, 0, 0, 0, 16, 16, b, b, c, d) for c, d in ((b, b), (f, b), (b, f), (f, f))]
    rows += [(0, 0, 0, m, n, k, b, b, c, d) for m, n, k in fixed for c, d in ((f, f), (b, f), (f, b), (b, b))]
    rows.append((8, 0, 0, 0, 16, 8, "tf32", "tf32", "fp32", "fp32"))
    return rows


def _dg2_table():
    rows = [(8, 0, 0, 0, 8, 32, a, b, "sint32", "sint32") for a, b in _INT8]
    rows.append((8, 0, 0, 0, 8, 16, "fp16", "fp16", "fp32", "fp32"))
    rows.append((8, 0, 0, 0, 8, 16, "bf16", "bf16", "fp32", "fp32"))
    rows.append((0, 0, 0, 32, 32, 16, "bf16", "bf16", "fp32", "fp32"))
    return rows


#: intel/llvm's matrix_combinations (device_info.hpp), transcribed as the file has them
PEER_COMBINATIONS = {
    "spr": _amx_table(),
    # intel/llvm has no intel_cpu_emr row; Emerald Rapids has Sapphire Rapids' AMX (AMX-TILE/INT8/BF16)
    "emr": _amx_table(),
    "gnr": _amx_table("fp16"),
    "dmr": _amx_table("fp16", "tf32"),
    "dg2": _dg2_table(),
    "arl": _dg2_table(),
    "pvc": _pvc_table(),
    "bmg": _pvc_table(),
    "lnl": _pvc_table(),
}

#: the peer's rows systolic deliberately does not answer, each one a Device.not_lowered record (docs/sycl.md): dmr's
#: tf32 16 x 16 x 16 - AMX-TF32 left the ISE, so no instruction computes it and the query agrees with the operation
DEVIATIONS = {"dmr": [(16, 16, 16, 0, 0, 0, "tf32", "tf32", "fp32", "fp32")]}

#: what systolic's query answers: the peer's table less the deviations above, nothing else
COMBINATIONS = {d: [r for r in rows if r not in DEVIATIONS.get(d, [])] for d, rows in PEER_COMBINATIONS.items()}

FIELDS = ("max_msize", "max_nsize", "max_ksize", "msize", "nsize", "ksize", "atype", "btype", "ctype", "dtype")

# --------------------------------------------------------------------------------------------- element types
_MEM = {"s8": np.dtype(np.int8), "u8": np.dtype(np.uint8), "bf16": BF16, "fp16": np.dtype(np.float16),
        "fp32": np.dtype(np.float32), "s32": np.dtype(np.int32), "tf32": np.dtype(np.float32)}
VNNI = {"s8": 4, "u8": 4, "bf16": 2, "fp16": 2, "tf32": 1}


def mem_dtype(t: str) -> np.dtype:
    """The numpy dtype of memory holding elements of type ``t`` (tf32 lives in float32 memory)."""
    return _MEM[t]


def jm_type(t: str):
    """The ``T`` template argument of a joint_matrix of element type ``t``."""
    if t == "tf32":
        from systolic.sycl import matrix as jm
        return jm.precision.tf32
    return _MEM[t].type


def acc_type(ta: str) -> str:
    return "s32" if ta in ("s8", "u8") else "fp32"


# --------------------------------------------------------------------------------------------- data + oracles
def small_ints(rng, shape, t, lo=None, hi=None):
    """Random values of type ``t`` that are small integers (exact in every type involved)."""
    if lo is None:
        lo, hi = {"s8": (-128, 127), "u8": (0, 255)}.get(t, (-3, 3))
    v = rng.integers(lo, hi + 1, size=shape)
    return (v.astype(np.float64) if t in ("bf16", "fp16", "tf32", "fp32") else v).astype(mem_dtype(t))


def exact(x) -> np.ndarray:
    """Values as int64, asserting that they are integers (the oracle side never rounds)."""
    a = np.asarray(x)
    if a.dtype.kind in "iub":
        return a.astype(np.int64)
    f = a.astype(np.float64)
    assert np.all(np.isfinite(f)) and np.all(f == np.round(f)), "oracle inputs must be integers"
    return f.astype(np.int64)


def oracle_gemm(A, B, C=None) -> np.ndarray:
    """``C + A @ B`` exactly, in int64 (Python-int exactness: |values| stay far below 2**63)."""
    out = exact(A) @ exact(B)
    if C is not None:
        out = out + exact(C)
    return out


def wrap32(x: np.ndarray) -> np.ndarray:
    """The low 32 bits of exact integers, as int32 (DPAS and TDPB*D wrap modulo 2**32)."""
    return ((np.asarray(x, dtype=np.int64) + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


def vnni(B: np.ndarray, vf: int) -> np.ndarray:
    """Intel's VNNI ("ext_intel_packed") image of a K x N matrix: (K/vf) x (N*vf), vf consecutive K per column."""
    K, N = B.shape
    out = np.empty((K // vf, N * vf), B.dtype)
    for r in range(K // vf):
        for n in range(N):
            for i in range(vf):
                out[r, n * vf + i] = B[r * vf + i, n]
    return out


def as_result(x, t: str) -> np.ndarray:
    """A result array read back as exact int64 (float results must be integers there too)."""
    return exact(np.asarray(x).astype(mem_dtype(t), copy=False))


# --------------------------------------------------------------------------------------------- kernels
def device_buffer(q, host: np.ndarray, how: str = "malloc"):
    """Copy ``host`` into USM (``q.malloc_shared``) or wrap a copy of it (``systolic.sycl.ptr``)."""
    from systolic import sycl
    flat = np.ascontiguousarray(host).reshape(-1)
    if how == "ptr":
        return sycl.ptr(flat.copy())
    p = q.malloc_shared(flat.size, flat.dtype)
    np.asarray(p)[:] = flat
    return p


def read(p, shape) -> np.ndarray:
    return np.array(np.asarray(p)).reshape(shape)


def gemm(device, A, B, C, tm, tn, tk, *, ta, tb=None, tc="fp32", td=None, a_layout="row_major",
         b_layout="ext_intel_packed", c_layout="row_major", checked=False, how="malloc", fill=None):
    """``D = C + A @ B`` by a joint_matrix kernel, one sub-group per tm x tn tile of D (test-e2e's GEMM).

    ``A`` (M x K) and ``B`` (K x N) are logical matrices; they are put in memory in ``a_layout`` / ``b_layout``
    (col_major = the transpose stored row-major; ext_intel_packed = the VNNI image) and loaded with that
    layout. ``C`` (M x N, type ``tc``) is loaded (or, with ``fill``, the accumulator is filled with ``fill``);
    D (type ``td``) is stored in ``c_layout``. With ``td != tc`` the kernel is test-e2e's 16-bit one:
    ``mad(D, A, B, C)`` then ``copy(D -> C)`` per K step. ``checked``: M, N, K need not be tile multiples; every
    load/store/fill is the bounds-checked form (test-e2e joint_matrix_out_bounds).
    """
    from systolic import sycl
    from systolic.sycl import matrix as jm
    td = td or tc
    q = sycl.queue(device)
    sg_size = SUB_GROUP[device]
    M, K = A.shape
    N = B.shape[1]
    vf = VNNI[ta]
    amem = A.T if a_layout == "col_major" else A
    bmem = B.T if b_layout == "col_major" else (vnni(B, vf) if b_layout == "ext_intel_packed" else B)
    pA = device_buffer(q, amem, how)
    pB = device_buffer(q, bmem, how)
    pC = device_buffer(q, C if C is not None else np.zeros((M, N), mem_dtype(tc)), how)
    pD = device_buffer(q, np.zeros((N, M) if c_layout == "col_major" else (M, N), mem_dtype(td)), how)
    Ta, Tb, Tc, Td = jm_type(ta), jm_type(tb or ta), jm_type(tc), jm_type(td)
    La, Lb = getattr(jm.layout, a_layout), getattr(jm.layout, b_layout)
    Lc = getattr(jm.layout, c_layout)
    tiles_m, tiles_n = -(-M // tm), -(-N // tn)

    def kernel(it):
        gx, gy = it.get_global_id(0), it.get_global_id(1)
        sx, sy = gx - it.get_local_id(0), gy - it.get_local_id(1)
        sg = it.get_sub_group()
        m0, n0 = sx * tm, sy // sg_size * tn
        a = jm.joint_matrix(sg, Ta, jm.use.a, tm, tk, La)
        b = jm.joint_matrix(sg, Tb, jm.use.b, tk, tn, Lb)
        c = jm.joint_matrix(sg, Tc, jm.use.accumulator, tm, tn)
        d = c if td == tc else jm.joint_matrix(sg, Td, jm.use.accumulator, tm, tn)
        if checked:
            jm.joint_matrix_fill_checked(sg, c, 0 if fill is None else fill, M, N, m0, n0)
        elif fill is not None:
            jm.joint_matrix_fill(sg, c, fill)
        else:
            jm.joint_matrix_load(sg, c, pC + m0 * N + n0, N, jm.layout.row_major)
        for k in range(0, K, tk):
            if checked:
                if a_layout == "col_major":
                    jm.joint_matrix_load_checked(sg, a, pA, M, K, M, k, m0)
                else:
                    jm.joint_matrix_load_checked(sg, a, pA, K, M, K, m0, k)
                if b_layout == "col_major":
                    jm.joint_matrix_load_checked(sg, b, pB, K, N, K, n0, k)
                elif b_layout == "ext_intel_packed":
                    jm.joint_matrix_load_checked(sg, b, pB, N * vf, K // vf, N * vf, k // vf, n0 * vf)
                else:
                    jm.joint_matrix_load_checked(sg, b, pB, N, K, N, k, n0)
            else:
                if a_layout == "col_major":
                    jm.joint_matrix_load(sg, a, pA + k * M + m0, M)
                else:
                    jm.joint_matrix_load(sg, a, pA + m0 * K + k, K)
                if b_layout == "col_major":
                    jm.joint_matrix_load(sg, b, pB + n0 * K + k, K)
                elif b_layout == "ext_intel_packed":
                    jm.joint_matrix_load(sg, b, pB + (k // vf) * (N * vf) + n0 * vf, N * vf)
                else:
                    jm.joint_matrix_load(sg, b, pB + k * N + n0, N)
            jm.joint_matrix_mad(sg, d, a, b, c)
            if d is not c:
                jm.joint_matrix_copy(sg, d, c)
        if checked:
            if c_layout == "col_major":
                jm.joint_matrix_store_checked(sg, d, pD, M, Lc, M, N, m0, n0)
            else:
                jm.joint_matrix_store_checked(sg, d, pD, N, Lc, M, N, m0, n0)
        elif c_layout == "col_major":
            jm.joint_matrix_store(sg, d, pD + n0 * M + m0, M, Lc)
        else:
            jm.joint_matrix_store(sg, d, pD + m0 * N + n0, N, Lc)

    q.parallel_for(sycl.nd_range((tiles_m, tiles_n * sg_size), (1, sg_size)), kernel).wait()
    out = read(pD, (N, M) if c_layout == "col_major" else (M, N))
    return out.T if c_layout == "col_major" else out


def engine_gemm(device, A, B, C=None, *, precision=None):
    """The engine GEMM the joint_matrix kernel must lower onto, for the same K blocking (one instruction per K
    step): ``systolic.amx.matmul`` on AMX devices, ``systolic.xmx.matmul`` on XMX ones."""
    if is_amx(device):
        from systolic import amx
        return amx.matmul(A, B, C, device=device)
    from systolic import xmx
    plat = {"arl": "dg2"}.get(device, device)
    return xmx.matmul(A, B, C, device=plat, precision=precision)


def bits(x) -> np.ndarray:
    """Bit patterns, for bit-for-bit comparisons of float arrays (NaN payloads and signed zeros included)."""
    x = np.ascontiguousarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


@pytest.fixture
def rng(request):
    """A generator seeded by the test's node id: failures reproduce, tests differ from each other."""
    import zlib
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
