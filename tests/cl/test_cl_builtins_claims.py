"""docs/cl.md "Semantics" and "Built-ins" claims, each run by a small kernel against an independent reference
(Python ints, exact fractions, permutation counts): atomics (atomic_*, atom_*, atomic_fetch_*, compare-exchange;
global and local), mul_hi, mad24, clamp, llvm.vector.reduce.*, division by zero, fused fma / mad / llvm.fmuladd
for float and half, MemoryFault naming the region and the offset."""
from fractions import Fraction

import numpy as np
import pytest

import systolic.cl as cl
from systolic.errors import InvalidValue, MemoryFault

N = 64
INTS = r"""
kernel void ints(global const int* a, global const int* b, global const uint* ua, global const uint* ub,
                 global const long* la, global const long* lb, global const ulong* qa, global const ulong* qb,
                 global int* oi, global uint* ou, global long* ol, global ulong* oq) {
    int i = get_global_id(0);
    oi[3 * i] = mul_hi(a[i], b[i]);
    oi[3 * i + 1] = mad24(a[i] >> 8, b[i] >> 8, a[i]);
    oi[3 * i + 2] = clamp(a[i], -1000, 70000);
    ou[2 * i] = mul_hi(ua[i], ub[i]);
    ou[2 * i + 1] = clamp(ua[i], 3u, 1u << 31);
    ol[i] = mul_hi(la[i], lb[i]);
    oq[i] = mul_hi(qa[i], qb[i]);
}
kernel void reduce4(global const int* a, global int* o, global uint* omax) {
    int i = get_global_id(0);
    int8 v = vload8(i, a);
    o[i] = v.s0 + v.s1 + v.s2 + v.s3 + v.s4 + v.s5 + v.s6 + v.s7;
    uint8 u = as_uint8(v);
    omax[i] = max(max(max(u.s0, u.s1), max(u.s2, u.s3)), max(max(u.s4, u.s5), max(u.s6, u.s7)));
}
kernel void divide(global const int* a, global const int* b, global int* o) {
    int i = get_global_id(0);
    o[i] = a[i] / b[i];
}
kernel void store(global int* o) { o[get_global_id(0)] = 1; }
"""

ATOMICS = r"""
kernel void global_atomics(global int* g, global int* old, global uint* ug) {
    int i = get_global_id(0);
    old[4 * i] = atomic_add(&g[0], i + 1);
    old[4 * i + 1] = atom_inc(&g[1]);
    old[4 * i + 2] = atomic_cmpxchg(&g[2], 0, i + 1);
    old[4 * i + 3] = atomic_xchg(&g[3], i);
    atomic_max(&g[4], (i * 37) % 64 - 20);
    atomic_min(&g[5], (i * 37) % 64 - 20);
    atom_sub(&g[6], i);
    atomic_or(&ug[0], 1u << (i % 32));
    atomic_and(&ug[1], ~(1u << (i % 16)));
    atomic_xor(&ug[2], (uint)i);
    atomic_dec(&g[7]);
}
kernel void local_atomics(global int* out) {
    local int l[3];
    int lid = get_local_id(0);
    if (lid == 0) { l[0] = 0; l[1] = 0; l[2] = -1; }
    barrier(CLK_LOCAL_MEM_FENCE);
    atomic_add(&l[0], lid);
    atomic_inc(&l[1]);
    atomic_cmpxchg(&l[2], -1, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) { out[3 * get_group_id(0)] = l[0]; out[3 * get_group_id(0) + 1] = l[1];
                    out[3 * get_group_id(0) + 2] = l[2]; }
}
"""

C11 = r"""
kernel void c11_atomics(global atomic_int* g, global int* old, global int* won) {
    int i = get_global_id(0);
    old[i] = atomic_fetch_add_explicit(&g[0], 2, memory_order_relaxed);
    atomic_fetch_max(&g[1], i);
    int expected = 0;
    won[i] = atomic_compare_exchange_strong(&g[2], &expected, i + 1);
}
"""

FLOATS = r"""
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
kernel void f32(global const float* a, global const float* b, global const float* c, global float* o) {
    int i = get_global_id(0);
    o[3 * i] = fma(a[i], b[i], c[i]);
    o[3 * i + 1] = mad(a[i], b[i], c[i]);
    o[3 * i + 2] = a[i] * b[i] + c[i];
}
kernel void f16(global const half* a, global const half* b, global const half* c, global half* o) {
    int i = get_global_id(0);
    o[3 * i] = fma(a[i], b[i], c[i]);
    o[3 * i + 1] = mad(a[i], b[i], c[i]);
    o[3 * i + 2] = a[i] * b[i] + c[i];
}
"""


@pytest.fixture(scope="module")
def ctx():
    return cl.Context(device="pvc")


def _run(ctx, prg, name, gsize, lsize, *arrays):
    q = cl.CommandQueue(ctx)
    bufs = [cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=a) for a in arrays]
    getattr(prg, name)(q, (gsize,), lsize and (lsize,), *bufs)
    outs = [np.empty_like(a) for a in arrays]
    for o, b in zip(outs, bufs):
        cl.enqueue_copy(q, o, b)
    return outs


def _wrap(v, bits, signed=True):
    v %= 1 << bits
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def test_mul_hi_mad24_clamp_against_python_ints(ctx):
    prg = cl.Program(ctx, INTS).build()
    rng = np.random.default_rng(5)
    big = lambda dt: rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, N, dtype=dt, endpoint=True)  # noqa: E731
    a, b, ua, ub, la, lb, qa, qb = (big(np.int32), big(np.int32), big(np.uint32), big(np.uint32), big(np.int64),
                                    big(np.int64), big(np.uint64), big(np.uint64))
    oi, ou, ol, oq = np.zeros(3 * N, np.int32), np.zeros(2 * N, np.uint32), np.zeros(N, np.int64), np.zeros(N, np.uint64)
    *_, oi, ou, ol, oq = _run(ctx, prg, "ints", N, 16, a, b, ua, ub, la, lb, qa, qb, oi, ou, ol, oq)
    for i in range(N):
        A, B = int(a[i]), int(b[i])
        assert int(oi[3 * i]) == (A * B) >> 32, ("mul_hi int", A, B)
        assert int(oi[3 * i + 1]) == _wrap((A >> 8) * (B >> 8) + A, 32), ("mad24", A, B)
        assert int(oi[3 * i + 2]) == min(max(A, -1000), 70000), ("clamp int", A)
        assert int(ou[2 * i]) == (int(ua[i]) * int(ub[i])) >> 32, ("mul_hi uint", ua[i], ub[i])
        assert int(ou[2 * i + 1]) == min(max(int(ua[i]), 3), 1 << 31), ("clamp uint", ua[i])
        assert int(ol[i]) == (int(la[i]) * int(lb[i])) >> 64, ("mul_hi long", la[i], lb[i])
        assert int(oq[i]) == (int(qa[i]) * int(qb[i])) >> 64, ("mul_hi ulong", qa[i], qb[i])


def test_vector_reduce_intrinsics(ctx):
    prg = cl.Program(ctx, INTS).build()
    assert "llvm.vector.reduce" in prg.ir, "clang did not emit llvm.vector.reduce.*: the test would test nothing"
    rng = np.random.default_rng(6)
    a = rng.integers(-2 ** 31, 2 ** 31, 8 * N, dtype=np.int64).astype(np.int32)
    _, o, om = _run(ctx, prg, "reduce4", N, 16, a, np.zeros(N, np.int32), np.zeros(N, np.uint32))
    for i in range(N):
        row = [int(x) for x in a[8 * i:8 * i + 8]]
        assert int(o[i]) == _wrap(sum(row), 32), i
        assert int(om[i]) == max(x % 2 ** 32 for x in row), i


def test_integer_division_by_zero_raises_invalid_value(ctx):
    prg = cl.Program(ctx, INTS).build()
    a = np.arange(N, dtype=np.int32)
    b = np.ones(N, np.int32)
    _, _, o = _run(ctx, prg, "divide", N, 16, a, b, np.zeros(N, np.int32))
    assert (o == a).all()
    b[37] = 0
    with pytest.raises(InvalidValue, match="division") as e:
        _run(ctx, prg, "divide", N, 16, a, b, np.zeros(N, np.int32))
    assert "37" in str(e.value)


def test_memory_fault_names_region_and_offset(ctx):
    prg = cl.Program(ctx, INTS).build()
    with pytest.raises(MemoryFault) as e:
        _run(ctx, prg, "store", 32, 16, np.zeros(20, np.int32))    # 80 bytes; work-item 20 stores at byte 80
    v = e.value.values
    assert "argument 0" in v["region"] and "80 bytes" in v["region"], v
    assert v["offset"] == 80 and v["work_item"] == (20,), v


def test_global_atomics_against_a_serial_reference(ctx):
    prg = cl.Program(ctx, ATOMICS).build()
    G = 48
    g = np.array([0, 0, 0, -1, -100, 100, 0, 0], np.int32)
    ug = np.array([0, 0xFFFFFFFF, 0], np.uint32)
    g, old, ug = _run(ctx, prg, "global_atomics", G, 16, g, np.zeros(4 * G, np.int32), ug)
    old = old.reshape(G, 4)
    vals = [(i * 37) % 64 - 20 for i in range(G)]
    assert g[0] == sum(range(1, G + 1))
    # atomic_add's old values: the prefix sums of the adds in some order - each add's old + its own add is
    # another's old or the final value
    adds = {int(old[i, 0]): i + 1 for i in range(G)}
    assert len(adds) == G and 0 in adds
    assert sorted(int(old[i, 0]) + i + 1 for i in range(G)) == sorted(set(adds) - {0}) + [int(g[0])]
    assert sorted(old[:, 1].tolist()) == list(range(G)) and g[1] == G              # atom_inc: a permutation
    assert (old[:, 2] == 0).sum() == 1 and g[2] == 1 + int(np.flatnonzero(old[:, 2] == 0)[0])  # one cmpxchg wins
    assert sorted(old[:, 3].tolist() + [int(g[3])]) == sorted(list(range(G)) + [-1])          # xchg chain
    assert g[4] == max(vals) and g[5] == min(vals) and g[6] == -sum(range(G)) and g[7] == -G
    assert ug[0] == 0xFFFFFFFF and ug[1] == 0xFFFF0000
    x = 0
    for i in range(G):
        x ^= i
    assert ug[2] == x


def test_local_atomics_per_work_group(ctx):
    prg = cl.Program(ctx, ATOMICS).build()
    (out,) = _run(ctx, prg, "local_atomics", 64, 32, np.zeros(6, np.int32))
    for wg in range(2):
        assert out[3 * wg] == sum(range(32)) and out[3 * wg + 1] == 32 and 0 <= out[3 * wg + 2] < 32


def test_c11_atomics_and_compare_exchange(ctx):
    prg = cl.Program(ctx, C11).build(options="-cl-std=CL2.0")
    G = 32
    g, old, won = _run(ctx, prg, "c11_atomics", G, 16, np.zeros(3, np.int32), np.zeros(G, np.int32),
                       np.zeros(G, np.int32))
    assert g[0] == 2 * G and sorted(old.tolist()) == list(range(0, 2 * G, 2))
    assert g[1] == G - 1
    assert won.sum() == 1 and g[2] == 1 + int(np.flatnonzero(won)[0])


def _exact_cases(dtype, mant_bits, n, seed):
    """a, b, c of ``dtype`` whose a*b+c is exact in float64 (checked with Fractions), so the fused result is
    float64(exact) rounded once; and the unfused one round(round(a*b) + c)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        a, b, c = (dtype(float(rng.integers(1 << (mant_bits - 1), 1 << mant_bits)) * rng.choice([-1, 1])
                         * 2.0 ** int(rng.integers(-mant_bits - 3, -mant_bits + 3))) for _ in range(3))
        exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
        if Fraction(float(exact)) == exact:
            out.append((a, b, c, dtype(float(exact))))
    return out


@pytest.mark.parametrize("kind, dtype, bits", [("f32", np.float32, 24), ("f16", np.float16, 11)])
def test_fma_mad_and_fmuladd_are_fused(ctx, kind, dtype, bits):
    prg = cl.Program(ctx, FLOATS).build()
    assert "llvm.fmuladd" in prg.ir or "llvm.fma" in prg.ir
    cases = _exact_cases(dtype, bits, N, 7)
    a, b, c, want = (np.array([x[j] for x in cases], dtype) for j in range(4))
    *_, o = _run(ctx, prg, kind, N, 16, a, b, c, np.zeros(3 * N, dtype))
    o = o.reshape(N, 3)
    unfused = ((a * b).astype(dtype) + c).astype(dtype)
    assert (unfused != want).any(), "every case rounds the same fused or not: the test would not tell them apart"
    for j, what in enumerate(("fma", "mad", "a*b+c (llvm.fmuladd)")):
        bad = np.flatnonzero(o[:, j].view(np.uint16 if dtype is np.float16 else np.uint32)
                             != want.view(np.uint16 if dtype is np.float16 else np.uint32))
        assert bad.size == 0, (what, [(a[k], b[k], c[k], o[k, j], want[k]) for k in bad[:3]])
