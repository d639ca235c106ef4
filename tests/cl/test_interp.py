"""The interpreter's LLVM semantics, sub-group functions, divergence and local memory, each against an oracle
written in Python (C integer semantics, numpy for the sub-group data movement)."""
import numpy as np
import pytest

import systolic.cl as cl

INT_SRC = r"""
kernel void ints(global const int* a, global const int* b, global int* out)
{
    int i = get_global_id(0);
    int x = a[i], y = b[i];
    global int* o = out + i * 12;
    o[0] = x / y;  o[1] = x % y;  o[2] = (int)((uint)x / (uint)y);  o[3] = x >> 3;
    o[4] = (int)((uint)x >> 3);  o[5] = x << 5;  o[6] = max(x, y);  o[7] = (int)max((uint)x, (uint)y);
    o[8] = convert_char_sat(x);  o[9] = convert_uchar_sat(x);  o[10] = abs(x);  o[11] = x * y;
}
"""


def _c_div(x, y):
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _wrap32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


@pytest.fixture(scope="module")
def ctx():
    return cl.Context(device="pvc")


def test_integer_semantics_match_c(ctx):
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, INT_SRC).build()
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.integers(-2**31, 2**31, 28), [-7, 7, -2**31, 2**31 - 1]]).astype(np.int32)
    b = np.concatenate([rng.integers(-1000, 1000, 28), [2, -2, 3, -5]]).astype(np.int32)
    b[b == 0] = 1
    out = np.zeros(32 * 12, np.int32)
    ob = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, out.nbytes)
    prg.ints(q, (32,), (16,), cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=a),
             cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=b), ob)
    cl.enqueue_copy(q, out, ob)
    for i, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
        ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
        want = [_wrap32(_c_div(x, y)), _wrap32(x - _c_div(x, y) * y), _wrap32(ux // uy), x >> 3, _wrap32(ux >> 3),
                _wrap32(x << 5), max(x, y), _wrap32(max(ux, uy)), max(-128, min(127, x)), max(0, min(255, x)),
                _wrap32(abs(x)), _wrap32(x * y)]
        assert out[i * 12:(i + 1) * 12].tolist() == want, (x, y)


SG_SRC = r"""
__attribute__((intel_reqd_sub_group_size(16)))
kernel void sg(global const int* a, global int* out)
{
    int i = get_global_id(0);
    int x = a[i];
    uint l = get_sub_group_local_id();
    global int* o = out + i * 9;
    o[0] = intel_sub_group_shuffle(x, (l * 5) % 16);
    o[1] = intel_sub_group_shuffle_xor(x, 3u);
    o[2] = intel_sub_group_shuffle_down(x, x + 1000, 3u);
    o[3] = intel_sub_group_shuffle_up(x - 1000, x, 2u);
    o[4] = sub_group_broadcast(x, 7u);
    o[5] = sub_group_reduce_add(x);
    o[6] = sub_group_reduce_max(x);
    o[7] = sub_group_scan_inclusive_add(x);
    o[8] = sub_group_scan_exclusive_min(x);
}
"""


def test_sub_group_functions_match_numpy(ctx):
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, SG_SRC).build()
    a = np.random.default_rng(2).integers(-1000, 1000, 64).astype(np.int32)
    out = np.zeros(64 * 9, np.int32)
    ob = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, out.nbytes)
    prg.sg(q, (64,), (32,), cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=a), ob)
    cl.enqueue_copy(q, out, ob)
    o = out.reshape(4, 16, 9)
    x = a.reshape(4, 16)
    lid = np.arange(16)
    both_down = np.concatenate([x, x + 1000], axis=1)
    both_up = np.concatenate([x - 1000, x], axis=1)
    assert (o[..., 0] == x[:, (lid * 5) % 16]).all()
    assert (o[..., 1] == x[:, lid ^ 3]).all()
    assert (o[..., 2] == both_down[:, lid + 3]).all()
    assert (o[..., 3] == both_up[:, lid - 2 + 16]).all()
    assert (o[..., 4] == x[:, 7:8]).all()
    assert (o[..., 5] == x.sum(axis=1, keepdims=True)).all()
    assert (o[..., 6] == x.max(axis=1, keepdims=True)).all()
    assert (o[..., 7] == np.cumsum(x, axis=1)).all()
    excl = np.concatenate([np.full((4, 1), np.iinfo(np.int32).max), np.minimum.accumulate(x, axis=1)[:, :-1]], 1)
    assert (o[..., 8] == excl).all()


DIV_SRC = r"""
__attribute__((intel_reqd_sub_group_size(16)))
kernel void div(global int* out)
{
    int i = get_global_id(0);
    int v = 0;
    if (i % 3 == 0) {
        for (int k = 0; k < i % 7; k++) v += k;
        if (i & 1) { out[i] = -1; return; }          // some work-items leave early
    } else if (i % 3 == 1) {
        v = i * 10;
    } else {
        while (v < i) v += 4;
    }
    out[i] = v + 1000 * (i % 2);
}
"""


def test_divergent_branches_loops_and_early_return(ctx):
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, DIV_SRC).build()
    ob = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 4 * 48)
    prg.div(q, (48,), (48,), ob)
    out = np.zeros(48, np.int32)
    cl.enqueue_copy(q, out, ob)
    want = []
    for i in range(48):
        if i % 3 == 0:
            v = sum(range(i % 7))
            if i & 1:
                want.append(-1)
                continue
        elif i % 3 == 1:
            v = i * 10
        else:
            v = 0
            while v < i:
                v += 4
        want.append(v + 1000 * (i % 2))
    assert out.tolist() == want


def test_fma_is_fused_once_rounded():
    from fractions import Fraction

    from systolic.cl.library import fma_exact
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(2000).astype(np.float32) * np.float32(2.0) ** rng.integers(-30, 30, 2000)
               .astype(np.float32) for _ in range(3))
    got = fma_exact(a, b, c)
    for x, y, z, g in zip(a.tolist(), b.tolist(), c.tolist(), got.tolist()):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        # the correctly rounded float32 of the exact value: compare with both neighbours
        f = np.float32(float(exact))
        cands = [f, np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(-np.inf))]
        best = min(cands, key=lambda t: (abs(Fraction(float(t)) - exact), int(np.float32(t).view(np.uint32)) & 1))
        assert np.float32(g) == best


def test_vload_vstore_and_conversions(ctx):
    src = r"""
    kernel void v(global const float* x, global float* y, global int* z) {
        int i = get_global_id(0);
        float4 f = vload4(i, x);
        vstore4(f * 2.0f, i, y);
        z[i] = convert_int_rte(f.x) + convert_int_rtz(f.y) * 1000;
    }"""
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, src).build()
    x = np.array([0.5, 2.7, 1.5, 0, -1.5, -2.7, 2.5, 0, 3.5, 9.9, 0, 0, -0.5, -9.9, 0, 0], np.float32)
    y = np.zeros(16, np.float32)
    z = np.zeros(4, np.int32)
    yb, zb = cl.Buffer(ctx, 0, size=64), cl.Buffer(ctx, 0, size=16)
    prg.v(q, (4,), (4,), cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=x), yb, zb)
    cl.enqueue_copy(q, y, yb)
    cl.enqueue_copy(q, z, zb)
    assert (y == x * 2).all()
    assert z.tolist() == [0 + 2000, -2 - 2000, 4 + 9000, 0 - 9000]


def test_atomics_on_global_and_local_memory(ctx):
    src = r"""
    kernel void at(global int* hist, global int* total, global int* firsts) {
        local int seen;
        int i = get_global_id(0);
        if (get_local_id(0) == 0) seen = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        atomic_inc(&hist[i % 5]);
        atomic_add(total, i);
        int old = atomic_cmpxchg(&seen, 0, i + 1);     // one work-item per work-group wins
        barrier(CLK_LOCAL_MEM_FENCE);
        if (old == 0) firsts[get_group_id(0)] = seen;
    }"""
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, src).build()
    hist, total, firsts = (cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=np.zeros(n, np.int32))
                           for n in (5, 1, 4))
    prg.at(q, (64,), (16,), hist, total, firsts)
    h, t, f = np.zeros(5, np.int32), np.zeros(1, np.int32), np.zeros(4, np.int32)
    for buf, arr in ((hist, h), (total, t), (firsts, f)):
        cl.enqueue_copy(q, arr, buf)
    assert h.tolist() == [13, 13, 13, 13, 12] and t[0] == sum(range(64))
    assert all(g * 16 + 1 <= v <= g * 16 + 16 for g, v in enumerate(f.tolist()))
