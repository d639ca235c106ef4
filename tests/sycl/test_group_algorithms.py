"""SYCL 2020 group algorithms, group barriers, atomic_ref and local_accessor (issue 25).

Oracles are plain Python over the work-items' values (Python ints reduced modulo 2**bits for the type, small
integer-valued floats so every sum is exact), written from SYCL 2020 4.17.4's definitions: a reduction folds the
group's values, an inclusive scan gives work-item i the fold over local ids 0..i, an exclusive one over 0..i-1
starting from the identity or init, a broadcast the value of one local id. Both executions (vectorised and per
work-item) must give them; a group operation that part of a group skips is a DivergentCollective.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from systolic import sycl
from systolic.errors import DivergentCollective, InvalidValue, MemoryFault

MODES = ("vector", "per-item")
DEVICES = {"pvc": 16, "dg2": 8}
WG = 32
N = 64                 # two work-groups of 32; sub-groups of 16 (pvc) or 8 (dg2)

OPS = {
    "plus": (sycl.plus(), lambda a, b: a + b, 0),
    "multiplies": (sycl.multiplies(), lambda a, b: a * b, 1),
    "minimum": (sycl.minimum(), min, None),
    "maximum": (sycl.maximum(), max, None),
    "bit_and": (sycl.bit_and(), lambda a, b: a & b, -1),
    "bit_or": (sycl.bit_or(), lambda a, b: a | b, 0),
    "bit_xor": (sycl.bit_xor(), lambda a, b: a ^ b, 0),
}
TYPES = {"int32": np.int32, "int64": np.int64, "uint32": np.uint32, "float32": np.float32}


def wrap(v: int, dt) -> int:
    dt = np.dtype(dt)
    if dt.kind == "f":
        return v
    bits = dt.itemsize * 8
    v %= 1 << bits
    return v - (1 << bits) if dt.kind == "i" and v >= 1 << (bits - 1) else v


def values(dt, op: str) -> list:
    """One value per work-item: small (products of a group stay exact in float32 only for multiplies of 1s
    and 2s), varied, some negative for signed types."""
    rng = np.random.default_rng(zlib.crc32(f"{np.dtype(dt).name}/{op}".encode()))   # the same inputs every run
    if op == "multiplies":
        v = rng.choice([1, 1, 1, 2, 3] if np.dtype(dt).kind != "f" else [1, 1, 1, 2], size=N)
    else:
        v = rng.integers(-50 if np.dtype(dt).kind in "if" else 0, 50, size=N)
    return [int(x) for x in v]


def identity(op: str, dt):
    dt = np.dtype(dt)
    if op == "minimum":
        return float("inf") if dt.kind == "f" else int(np.iinfo(dt).max)
    if op == "maximum":
        return float("-inf") if dt.kind == "f" else int(np.iinfo(dt).min)
    return wrap(OPS[op][2], dt)


def run(dev, mode, body, *outs):
    """``body(it, sg, g, i)`` for every work-item of nd_range(N, WG); returns the outputs as arrays."""
    q = sycl.queue(dev, mode=mode)
    ptrs = [q.malloc_shared(N, dt) for dt in outs]

    def kernel(it):
        body(it, it.get_sub_group(), it.get_group(), it.get_global_linear_id(), *ptrs)
    q.parallel_for(sycl.nd_range((N,), (WG,)), kernel)
    return [np.asarray(p).copy() for p in ptrs], q.last_event


def group_of(i: int, size: int) -> range:
    return range(i // size * size, i // size * size + size)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dev", sorted(DEVICES))
@pytest.mark.parametrize("scope", ["sub_group", "group"])
@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("op", sorted(OPS))
def test_reduce_and_scans(op, tname, scope, dev, mode):
    dt = TYPES[tname]
    x = np.array(values(dt, op), dtype=np.int64).astype(dt)
    xs = [int(v) for v in x]
    sop, fold, _ = OPS[op]
    size = DEVICES[dev] if scope == "sub_group" else WG
    refused = op.startswith("bit_") and tname == "float32"      # bit operations take integers

    def body(it, sg, g, i, red, inc, exc, xp):
        grp = sg if scope == "sub_group" else g
        v = xp[i]
        red[i] = sycl.reduce_over_group(grp, v, sop)
        inc[i] = sycl.inclusive_scan_over_group(grp, v, sop)
        exc[i] = sycl.exclusive_scan_over_group(grp, v, sop)
    q = sycl.queue(dev, mode=mode)
    xp = q.malloc_shared(N, dt)
    np.asarray(xp)[:] = x
    outs = [q.malloc_shared(N, dt) for _ in range(3)]
    def launch():
        q.parallel_for(sycl.nd_range((N,), (WG,)), lambda it: body(it, it.get_sub_group(), it.get_group(),
                                                                   it.get_global_linear_id(), *outs, xp))
    if refused:
        with pytest.raises(InvalidValue, match="integer"):
            launch()
        return
    launch()
    assert q.last_event.mode == mode
    red, inc, exc = (np.asarray(p) for p in outs)
    for i in range(N):
        members = list(group_of(i, size))
        mine = [xs[j] for j in members]
        k = members.index(i)
        acc = mine[0]
        for v in mine[1:]:
            acc = wrap(fold(acc, v), dt)
        assert red[i] == acc, (i, red[i], acc)
        acc = mine[0]
        for v in mine[1:k + 1]:
            acc = wrap(fold(acc, v), dt)
        assert inc[i] == acc
        acc = identity(op, dt)
        for v in mine[:k]:
            acc = wrap(fold(acc, v), dt)
        assert exc[i] == acc, (i, exc[i], acc)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scope", ["sub_group", "group"])
def test_init_forms(scope, mode):
    """reduce(g, x, init, op), inclusive_scan(g, x, op, init), exclusive_scan(g, x, init, op)."""
    size = 16 if scope == "sub_group" else WG

    def body(it, sg, g, i, red, inc, exc):
        grp = sg if scope == "sub_group" else g
        red[i] = sycl.reduce_over_group(grp, i, 100, sycl.plus())
        inc[i] = sycl.inclusive_scan_over_group(grp, i, sycl.plus(), 100)
        exc[i] = sycl.exclusive_scan_over_group(grp, i, 100, sycl.plus())
    (red, inc, exc), _ = run("pvc", mode, body, np.int64, np.int64, np.int64)
    for i in range(N):
        m = list(group_of(i, size))
        assert red[i] == 100 + sum(m)
        assert inc[i] == 100 + sum(j for j in m if j <= i)
        assert exc[i] == 100 + sum(j for j in m if j < i)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dev", sorted(DEVICES))
@pytest.mark.parametrize("scope", ["sub_group", "group"])
def test_broadcast_any_all_none(dev, scope, mode):
    size = DEVICES[dev] if scope == "sub_group" else WG

    def body(it, sg, g, i, b, an, al, no):
        grp = sg if scope == "sub_group" else g
        b[i] = sycl.group_broadcast(grp, i * 3 + 1, size - 1)
        an[i] = sycl.any_of_group(grp, i == 5)
        al[i] = sycl.all_of_group(grp, i < 40)
        no[i] = sycl.none_of_group(grp, i % 7 == 0)
    (b, an, al, no), _ = run(dev, mode, body, np.int64, np.int32, np.int32, np.int32)
    for i in range(N):
        m = list(group_of(i, size))
        assert b[i] == m[-1] * 3 + 1
        assert an[i] == any(j == 5 for j in m)
        assert al[i] == all(j < 40 for j in m)
        assert no[i] == (not any(j % 7 == 0 for j in m))


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_default_and_id_tuple(mode):
    def body(it, sg, g, i, a, b):
        a[i] = sycl.group_broadcast(sg, i)
        b[i] = sycl.group_broadcast(g, i, (5,))
    (a, b), _ = run("pvc", mode, body, np.int64, np.int64)
    assert list(a) == [i // 16 * 16 for i in range(N)]
    assert list(b) == [i // WG * WG + 5 for i in range(N)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tname", ["int32", "float32"])
def test_joint_reduce(tname, mode):
    dt = TYPES[tname]
    q = sycl.queue("pvc", mode=mode)
    data = q.malloc_shared(40, dt)
    np.asarray(data)[:] = np.arange(40) - 7
    out = q.malloc_shared(N, dt)
    mx = q.malloc_shared(N, dt)

    def kernel(it):
        i = it.get_global_linear_id()
        out[i] = sycl.joint_reduce(it.get_group(), data + 3, data + 33, sycl.plus())
        mx[i] = sycl.joint_reduce(it.get_sub_group(), data, data + 40, -1000, sycl.maximum())
    q.parallel_for(sycl.nd_range((N,), (WG,)), kernel)
    assert list(np.asarray(out)) == [sum(range(3 - 7, 33 - 7))] * N
    assert list(np.asarray(mx)) == [32] * N


@pytest.mark.parametrize("mode", MODES)
def test_float_order_is_local_id_order(mode):
    """Floats: a left fold in local-id order, each add rounded in float32 (1 + 2**-24 ... shows the order)."""
    x = np.full(16, 2.0 ** -24, dtype=np.float32)
    x[0] = 1.0
    q = sycl.queue("pvc", mode=mode)
    xp = q.malloc_shared(16, np.float32)
    np.asarray(xp)[:] = x
    out = q.malloc_shared(16, np.float32)
    q.parallel_for(sycl.nd_range((16,), (16,)),
                   lambda it: out.__setitem__(it.get_global_linear_id(), sycl.reduce_over_group(
                       it.get_sub_group(), xp[it.get_global_linear_id()], sycl.plus())))
    acc = np.float32(1.0)
    for v in x[1:]:
        acc = np.float32(acc + v)       # each add rounds to nearest even: 1 + 2**-24 stays 1
    assert np.asarray(out)[0] == acc == np.float32(1.0)


@pytest.mark.parametrize("mode", MODES)
def test_local_accessor_and_barrier(mode):
    """The test-e2e idiom: each work-item writes local memory, barrier, reads a neighbour's slot."""
    acc = sycl.local_accessor(np.int64, WG)

    def body(it, sg, g, i, out, out2):
        lid = it.get_local_linear_id()
        acc[lid] = i * 2
        it.barrier()
        out[i] = acc[(lid + 1) % WG]
        sycl.group_barrier(g)
        if lid == 0:                      # divergent plain code is fine between barriers
            acc[0] = -1
        sycl.group_barrier(g)
        out2[i] = acc[0]
    # the branch makes a vectorised attempt fall back to per work-item execution ("auto")
    (out, out2), ev = run("pvc", "auto" if mode == "vector" else mode, body, np.int64, np.int64)
    assert ev.mode == "per-item"
    for i in range(N):
        base = i // WG * WG
        assert out[i] == (base + (i - base + 1) % WG) * 2
        assert out2[i] == -1


@pytest.mark.parametrize("mode", MODES)
def test_atomics(mode):
    q = sycl.queue("pvc", mode=mode)
    cnt = q.malloc_shared(4, np.int32)
    np.asarray(cnt)[:] = [0, 1000, -1000, 7]
    old = q.malloc_shared(N, np.int32)
    fl = q.malloc_shared(1, np.float32)
    hist = q.malloc_shared(4, np.int64)
    cas = q.malloc_shared(N, np.int32)
    ex = q.malloc_shared(1, np.int32)

    def kernel(it):
        i = it.get_global_linear_id()
        old[i] = sycl.atomic_ref(cnt).fetch_add(1)
        sycl.atomic_ref(cnt + 1, sycl.memory_order.relaxed, sycl.memory_scope.device).fetch_min(i)
        sycl.atomic_ref(cnt + 2).fetch_max(i)
        sycl.atomic_ref(cnt + 3).fetch_xor(i)
        sycl.atomic_ref(fl).fetch_add(0.5)
        sycl.atomic_ref(hist + i % 4).fetch_add(i)
        ok, _ = sycl.atomic_ref(ex).compare_exchange_strong(0, i + 1)
        cas[i] = ok
    q.parallel_for(sycl.nd_range((N,), (WG,)), kernel)
    c = np.asarray(cnt)
    assert c[0] == N and c[1] == 0 and c[2] == N - 1
    x = 7
    for i in range(N):
        x ^= i
    assert c[3] == x
    assert sorted(np.asarray(old)) == list(range(N))       # every old value once: the adds were atomic
    assert np.asarray(fl)[0] == 0.5 * N
    assert list(np.asarray(hist)) == [sum(range(r, N, 4)) for r in range(4)]
    assert np.asarray(cas).sum() == 1 and np.asarray(ex)[0] == int(np.flatnonzero(np.asarray(cas))[0]) + 1


def test_atomic_wraps_and_exchange():
    q = sycl.queue("pvc")
    p = q.malloc_shared(2, np.int32)
    np.asarray(p)[:] = [2**31 - 1, 5]
    assert sycl.atomic_ref(p).fetch_add(1) == 2**31 - 1
    assert np.asarray(p)[0] == -2**31                           # two's complement, as C++ atomics define
    assert sycl.atomic_ref(p + 1).exchange(9) == 5 and sycl.atomic_ref(p + 1).load() == 9
    sycl.atomic_ref(p + 1).store(3)
    assert np.asarray(p)[1] == 3
    assert sycl.atomic_ref(p + 1).compare_exchange_strong(4, 8) == (False, 3) and np.asarray(p)[1] == 3


# ----------------------------------------------------------------------------------------- refusals
def _divergent(body, dev="pvc", mode="auto"):
    q = sycl.queue(dev, mode=mode)
    out = q.malloc_shared(N, np.int64)
    with pytest.raises(DivergentCollective):
        q.parallel_for(sycl.nd_range((N,), (WG,)), lambda it: body(it, out))


@pytest.mark.parametrize("call", ["reduce", "scan", "broadcast", "any", "barrier", "group_barrier", "joint"])
def test_divergent_calls(call):
    """A group operation reached by only part of the group (a branch on the local id)."""
    def body(it, out):
        i = it.get_global_linear_id()
        if it.get_local_linear_id() < 20:
            if call == "reduce":
                out[i] = sycl.reduce_over_group(it.get_group(), i, sycl.plus())
            elif call == "scan":
                out[i] = sycl.inclusive_scan_over_group(it.get_sub_group(), i, sycl.plus())
            elif call == "broadcast":
                out[i] = sycl.group_broadcast(it.get_group(), i)
            elif call == "any":
                out[i] = sycl.any_of_group(it.get_group(), True)
            elif call == "barrier":
                it.barrier()
            elif call == "group_barrier":
                sycl.group_barrier(it.get_group())
            else:
                out[i] = sycl.joint_reduce(it.get_group(), out, out + 2, sycl.plus())
    _divergent(body)


def test_divergent_sites():
    """Half the work-group at one barrier, half at another: different group operations."""
    def body(it, out):
        if it.get_local_linear_id() < 16:
            it.barrier()
        else:
            it.barrier()
    _divergent(body)


@pytest.mark.parametrize("mode", MODES)
def test_nonuniform_arguments(mode):
    def body(it, out):
        out[it.get_global_linear_id()] = sycl.group_broadcast(it.get_sub_group(), 1, it.get_local_linear_id() % 2)
    _divergent(body, mode=mode)


@pytest.mark.parametrize("bad", [
    lambda it: sycl.reduce_over_group(it.get_sub_group(), 1, lambda a, b: a + b),
    lambda it: sycl.reduce_over_group(it, 1, sycl.plus()),
    lambda it: sycl.reduce_over_group(it.get_sub_group(), "x", sycl.plus()),
    lambda it: sycl.reduce_over_group(it.get_sub_group(), 1.5, sycl.bit_and()),
    lambda it: sycl.reduce_over_group(it.get_sub_group(), 1, 1.5, sycl.plus()),
    lambda it: sycl.group_broadcast(it.get_sub_group(), 1, 16),
    lambda it: sycl.group_broadcast(it.get_sub_group(), 1, 1.0),
    lambda it: sycl.any_of_group(it.get_sub_group(), "yes"),
    lambda it: sycl.joint_reduce(it.get_group(), 3, 4, sycl.plus()),
    lambda it: sycl.atomic_ref(5),
    lambda it: sycl.local_accessor(np.int32, 0),
    lambda it: sycl.local_accessor(np.int32, 4)[1.5],
])
@pytest.mark.parametrize("mode", MODES)
def test_refusals(bad, mode):
    q = sycl.queue("pvc", mode=mode)
    with pytest.raises(InvalidValue):
        q.parallel_for(sycl.nd_range((16,), (16,)), bad)


def test_bounds():
    q = sycl.queue("pvc")
    acc = sycl.local_accessor(np.int32, 4)
    with pytest.raises(MemoryFault):
        q.parallel_for(sycl.nd_range((16,), (16,)), lambda it: acc.__setitem__(it.get_local_linear_id(), 1))
    p = q.malloc_shared(4, np.int32)
    with pytest.raises(MemoryFault):
        q.parallel_for(sycl.nd_range((16,), (16,)),
                       lambda it: sycl.atomic_ref(p + it.get_local_linear_id()).fetch_add(1))
    with pytest.raises(InvalidValue):
        sycl.atomic_ref(q.malloc_shared(2, np.int8))      # atomic_ref<int8_t> is not defined
