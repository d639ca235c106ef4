"""Fuzz: the pyopencl-style host API of :mod:`systolic.cl` (Context, Buffer, LocalMemory, enqueue_copy,
enqueue_fill_buffer, a kernel call) with hostile arguments: each call ends ok or with a typed error. Oracle for
what is accepted: a Buffer's size is the integer asked for (never a converted string or float), a copy to the
device and back returns the bytes written, and a launch of ``x[i] = i + n`` writes exactly that."""

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .harness import examples, hostile, maybe, ok, outcome

cl = pytest.importorskip("systolic.cl")


@functools.lru_cache(maxsize=1)
def _program():
    from systolic.errors import ClangUnavailable
    try:
        ctx = cl.Context(device="pvc")
        return ctx, cl.Program(ctx, "kernel void k(global int* x, int n) { int i = get_global_id(0); "
                                    "x[i] = i + n; }").build()
    except ClangUnavailable:
        pytest.skip("no clang")


@examples(60, weight=2)
@given(st.data())
def test_buffer_and_copies(data):
    ctx = cl.Context(device="pvc")
    q = cl.CommandQueue(ctx)
    flags = data.draw(maybe(st.sampled_from([0, 1, 4, cl.mem_flags.COPY_HOST_PTR, cl.mem_flags.USE_HOST_PTR])))
    size = data.draw(st.one_of(st.none(), maybe(st.sampled_from([4, 16, 64]))))
    host = data.draw(st.one_of(st.none(), st.just(np.arange(16, dtype=np.int32)), hostile()))
    b = outcome(cl.Buffer, ctx, flags, size=size, hostbuf=host)
    if not ok(b):
        return
    if host is None:
        assert type(size) is not str and b[1].size == int(size), (size, b[1].size)
    off = data.draw(maybe(st.sampled_from([0, 4, 8])))
    good = np.arange(4, dtype=np.int32)
    src = data.draw(maybe(st.just(good)))
    if ok(outcome(cl.enqueue_copy, q, b[1], src, device_offset=off)) and src is good:
        back = np.zeros(4, np.int32)
        if ok(outcome(cl.enqueue_copy, q, back, b[1], device_offset=off)):
            assert np.array_equal(back, src), (back, src)
    outcome(cl.enqueue_fill_buffer, data.draw(maybe(st.just(q))), b[1], data.draw(maybe(st.just(np.int32(7)))),
            data.draw(maybe(st.sampled_from([0, 4]))), data.draw(maybe(st.sampled_from([4, 8]))))
    outcome(cl.LocalMemory, data.draw(maybe(st.sampled_from([1, 64]))))
    outcome(cl.Context, device=data.draw(maybe(st.sampled_from(["pvc", "dg2", "bmg"]))),
            engine=data.draw(maybe(st.sampled_from(["batched", "per-call"]))))


@examples(30, weight=1)
@given(st.data())
def test_kernel_call(data):
    ctx, prg = _program()
    q = cl.CommandQueue(ctx)
    x = cl.Buffer(ctx, 0, size=64)
    queue = data.draw(maybe(st.just(q), 5))
    g = data.draw(maybe(st.sampled_from([16, (16,), (8,), (16, 1)]), 5))
    loc = data.draw(st.one_of(st.none(), maybe(st.sampled_from([8, 16, (16,), (4,)]), 5)))
    n = data.draw(maybe(st.sampled_from([0, 5, -3, np.int32(2)]), 5))
    buf = data.draw(maybe(st.just(x), 5))
    off = data.draw(st.one_of(st.none(), maybe(st.sampled_from([(0,), 0]), 2)))
    r = outcome(prg.k, queue, g, loc, buf, n, global_offset=off)
    if ok(r):
        out = np.zeros(16, np.int32)
        cl.enqueue_copy(q, out, x)
        G = int(np.prod(g))
        assert np.array_equal(out[:G], np.arange(G) + int(n)), (out, g, n)
