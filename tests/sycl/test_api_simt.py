"""SIMT semantics of systolic.sycl: ids, sub-groups, the vectorised and per-work-item executions, group-operation
checks (DivergentCollective naming the work-items and the call), and the runtime objects."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from systolic import sycl
from systolic.errors import DivergentCollective, InvalidValue, MemoryFault
from systolic.sycl import matrix as jm

BF = ml_dtypes.bfloat16


@pytest.mark.parametrize("mode", ["vector", "per-item"])
def test_ids_follow_sycl_linearisation(mode):
    """Every work-item sees its own ids; the last dimension is fastest; sub-groups are runs of local ids."""
    q = sycl.queue("dg2", mode=mode)
    G, L = (4, 16), (2, 8)
    out = q.malloc_shared(G[0] * G[1] * 6, np.int64)

    def kernel(it):
        lin = it.get_global_id(0) * G[1] + it.get_global_id(1)
        sg = it.get_sub_group()
        vals = (it.get_local_id(0), it.get_local_id(1), it.get_group(0), it.get_group(1), sg.get_local_id(),
                sg.get_group_id())
        for j, v in enumerate(vals):
            out[lin * 6 + j] = v
    q.parallel_for(sycl.nd_range(G, L), kernel)
    got = np.asarray(out).reshape(G[0], G[1], 6)
    for x in range(G[0]):
        for y in range(G[1]):
            lx, ly = x % L[0], y % L[1]
            llin = lx * L[1] + ly
            assert tuple(got[x, y]) == (lx, ly, x // L[0], y // L[1], llin % 8, llin // 8)


def test_divergent_branch_without_collectives_runs_per_item_and_undoes_writes():
    """A branch that differs between work-items makes the launch run per work-item; the writes the vectorised
    attempt made before it are undone (the counter is incremented exactly once per work-item)."""
    q = sycl.queue("pvc")
    cnt = q.malloc_shared(16, np.int32)

    def kernel(it):
        i = it.get_global_id(1)
        cnt[i] = cnt[i] + 1                # a read-modify-write before the divergence
        if it.get_sub_group().get_local_id() % 2 == 0:
            cnt[i] = cnt[i] + 10
    ev = q.parallel_for(sycl.nd_range((1, 16), (1, 16)), kernel)
    assert ev.mode == "per-item"
    assert np.asarray(cnt).tolist() == [11 if i % 2 == 0 else 1 for i in range(16)]


def test_vector_mode_refuses_divergence():
    q = sycl.queue("pvc", mode="vector")
    mem = q.malloc_shared(16, np.int32)

    def kernel(it):
        if it.get_global_id(1) < 3:
            mem[it.get_global_id(1)] = 1
    with pytest.raises(InvalidValue):
        q.parallel_for(sycl.nd_range((1, 16), (1, 16)), kernel)
    assert not np.asarray(mem).any()


@pytest.mark.parametrize("mode", ["auto", "per-item"])
def test_nonuniform_argument_names_work_items_and_call(mode):
    q = sycl.queue("pvc", mode=mode)
    mem = q.malloc_shared(8 * 16 * 2, np.float32)

    def kernel(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 8, 16)
        jm.joint_matrix_load(sg, c, mem + (sg.get_local_id() == 5) * 1, 16, jm.layout.row_major)
    with pytest.raises(DivergentCollective) as ei:
        q.parallel_for(sycl.nd_range((1, 16), (1, 16)), kernel)
    msg = str(ei.value)
    assert "joint_matrix_load" in msg and "global id (0, 5)" in msg


def test_collective_in_divergent_branch_is_an_error():
    q = sycl.queue("dg2")
    mem = q.malloc_shared(64, np.int32)

    def kernel(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, np.int32, jm.use.accumulator, 8, 8)
        if sg.get_local_id() < 3:
            jm.joint_matrix_fill(sg, c, 1)
        jm.joint_matrix_store(sg, c, mem, 8, jm.layout.row_major)
    with pytest.raises(DivergentCollective) as ei:
        q.parallel_for(sycl.nd_range((1, 8), (1, 8)), kernel)
    assert "joint_matrix_fill" in str(ei.value) and "joint_matrix_store" in str(ei.value)


def test_early_return_is_an_error_not_a_hang():
    q = sycl.queue("dg2")

    def kernel(it):
        sg = it.get_sub_group()
        if sg.get_local_id() == 7:
            return
        c = jm.joint_matrix(sg, np.int32, jm.use.accumulator, 8, 8)
        jm.joint_matrix_fill(sg, c, 1)
    with pytest.raises(DivergentCollective) as ei:
        q.parallel_for(sycl.nd_range((1, 8), (1, 8)), kernel)
    assert "finished" in str(ei.value)


def test_uniform_per_sub_group_branch_stays_vectorised_when_uniform_everywhere():
    q = sycl.queue("pvc")
    mem = q.malloc_shared(8 * 16, np.float32)

    def kernel(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 8, 16)
        jm.joint_matrix_fill(sg, c, 2.5 if it.get_group(0) == 0 else 0)
        jm.joint_matrix_store(sg, c, mem, 16, jm.layout.row_major)
    ev = q.parallel_for(sycl.nd_range((1, 16), (1, 16)), kernel)
    assert ev.mode == "vector" and np.all(np.asarray(mem) == 2.5)


def test_per_item_equals_vector_gemm():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((16, 32)).astype(BF)
    b = rng.standard_normal((32, 32)).astype(BF)
    outs = []
    for mode in ("vector", "per-item"):
        q = sycl.queue("pvc", mode=mode)
        d = np.zeros((16, 32), np.float32)
        pa, pb, pd = sycl.ptr(a), sycl.ptr(b), sycl.ptr(d)

        def kernel(it):
            s = it.get_sub_group()
            m0 = (it.get_global_id(0) - it.get_local_id(0)) * 8
            n0 = (it.get_global_id(1) - it.get_local_id(1)) // 16 * 16
            A = jm.joint_matrix(s, BF, jm.use.a, 8, 16, jm.layout.row_major)
            B = jm.joint_matrix(s, BF, jm.use.b, 16, 16, jm.layout.row_major)
            C = jm.joint_matrix(s, np.float32, jm.use.accumulator, 8, 16)
            for k in range(0, 32, 16):
                jm.joint_matrix_load(s, A, pa + m0 * 32 + k, 32)
                jm.joint_matrix_load(s, B, pb + k * 32 + n0, 32)
                jm.joint_matrix_mad(s, C, A, B, C)
            jm.joint_matrix_apply(s, C, lambda x, r, c: x * 2 if r == c else x)
            jm.joint_matrix_store(s, C, pd + m0 * 32 + n0, 32, jm.layout.row_major)
        ev = q.parallel_for(sycl.nd_range((2, 32), (1, 16)), kernel)
        assert ev.mode == mode
        outs.append(d)
    assert np.array_equal(outs[0].view(np.uint32), outs[1].view(np.uint32))


def test_apply_coordinates_are_logical():
    q = sycl.queue("pvc")
    mem = q.malloc_shared(16 * 16, BF)

    def kernel(it):
        s = it.get_sub_group()
        B = jm.joint_matrix(s, BF, jm.use.b, 16, 16, jm.layout.ext_intel_packed)
        jm.joint_matrix_apply(s, B, lambda x, r, c: r * 16 + c)
        jm.joint_matrix_store(s, B, mem, 32)       # Intel's store of b: the declared (packed) layout
    q.parallel_for(sycl.nd_range((1, 16), (1, 16)), kernel)
    packed = np.asarray(mem).astype(np.float64).reshape(8, 32)
    for k in range(16):
        for n in range(16):
            assert packed[k // 2, 2 * n + k % 2] == k * 16 + n


def test_copy_across_use_and_type_rounds_to_nearest_even():
    q = sycl.queue("pvc")
    src = (np.arange(8 * 16, dtype=np.float32) * 1.0039062 + 0.0001).reshape(8, 16)
    out = q.malloc_shared(8 * 16, BF)
    ps = sycl.ptr(src)

    def kernel(it):
        s = it.get_sub_group()
        C = jm.joint_matrix(s, np.float32, jm.use.accumulator, 8, 16)
        A = jm.joint_matrix(s, BF, jm.use.a, 8, 16, jm.layout.row_major)
        jm.joint_matrix_load(s, C, ps, 16, jm.layout.row_major)
        jm.joint_matrix_copy(s, C, A)
        jm.joint_matrix_store(s, A, out, 16)
    q.parallel_for(sycl.nd_range((1, 16), (1, 16)), kernel)
    assert np.array_equal(np.asarray(out).view(np.uint16), src.astype(BF).reshape(-1).view(np.uint16))


def test_load_outside_allocation_is_memory_fault():
    q = sycl.queue("pvc")
    mem = q.malloc_shared(64, np.float32)

    def kernel(it):
        s = it.get_sub_group()
        C = jm.joint_matrix(s, np.float32, jm.use.accumulator, 8, 16)
        jm.joint_matrix_load(s, C, mem, 16, jm.layout.row_major)
    with pytest.raises(MemoryFault):
        q.parallel_for(sycl.nd_range((1, 16), (1, 16)), kernel)


def test_usm_pointer_arithmetic_and_views():
    q = sycl.queue("spr")
    p = q.malloc_shared(10, np.int32)
    np.asarray(p)[:] = np.arange(10)
    assert (p + 3)[0] == 3 and (p + 3 - 1)[0] == 2 and ((p + 5) - p) == 5
    assert (p + 4).numpy().tolist() == [4, 5, 6, 7, 8, 9]
    with pytest.raises(InvalidValue):
        p + 1.5
    with pytest.raises(InvalidValue):
        sycl.ptr(np.zeros((4, 4))[:, 1])
    with pytest.raises(InvalidValue):
        q.parallel_for(sycl.nd_range((1, 12), (1, 12)), lambda it: None) if False else sycl.queue("pvc").parallel_for(
            sycl.nd_range((1, 12), (1, 12)), lambda it: None)
    with pytest.raises(InvalidValue):
        sycl.nd_range((10,), (3,))


def test_kernel_exception_propagates():
    q = sycl.queue("pvc", mode="per-item")

    def kernel(it):
        raise KeyError("boom")
    with pytest.raises(KeyError):
        q.parallel_for(sycl.nd_range((1, 16), (1, 16)), kernel)


def test_outside_a_kernel():
    with pytest.raises(InvalidValue):
        jm.joint_matrix_fill(None, None, 1)


def test_launched_restores_the_previous_launch():
    # simt holds the launch state the runtime, matrix_core and the compiled AMX path read (they import simt,
    # simt imports none of them); nested launches and a failing kernel restore the outer one
    from systolic.sycl import simt
    outer, inner = object(), object()
    assert simt.current_launch() is None
    with simt.launched(outer):
        with pytest.raises(ZeroDivisionError):
            with simt.launched(inner):
                assert simt.current_launch() is inner
                1 / 0
        assert simt.current_launch() is outer
    assert simt.current_launch() is None
