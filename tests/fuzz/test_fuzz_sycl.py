"""Fuzz: systolic.sycl's pointers, queries and kernels with hostile arguments.

Oracles: an element assignment that succeeds stores the value exactly (integers) or as the C++ conversion to a
float element rounds it (float32: the nearest float); ``get_global_linear_id`` against SYCL 2020's formula in
int64; a launch's outcome never a bare exception.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from systolic import sycl
from systolic.sycl import matrix as jm

from .harness import examples, hostile, maybe, ok, outcome, readonly

DTYPES = [np.int8, np.uint8, np.int32, np.float32, np.float16, np.int64, "float32", "tf32", jm.precision.tf32]


@examples(40, weight=1)
@given(maybe(st.integers(0, 64)), maybe(st.sampled_from(DTYPES)), st.sampled_from(["pvc", "spr", "dg2"]))
def test_malloc_shared(count, dtype, dev):
    q = sycl.queue(dev)
    r = outcome(q.malloc_shared, count, dtype)
    if ok(r):
        assert isinstance(count, (int, np.integer)) and not isinstance(count, bool) and count >= 0
        assert len(r[1]) == count
        assert dtype is not None


@examples(60, weight=1)
@given(st.sampled_from([np.int8, np.uint8, np.int32, np.float32, np.float16]), st.data())
def test_pointer(dtype, data):
    q = sycl.queue("pvc")
    p = q.malloc_shared(8, dtype)
    op = data.draw(st.sampled_from(["add", "radd", "sub", "get", "set", "ptrsub", "eq", "array"]))
    k = data.draw(maybe(st.integers(-10, 10)))
    if op == "add":
        r = outcome(lambda: p + k)
        if ok(r):
            assert isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))
    elif op == "radd":
        outcome(lambda: k + p)
    elif op == "sub":
        outcome(lambda: p - k)
    elif op == "ptrsub":
        outcome(lambda: p - data.draw(st.sampled_from([p, p + 3, q.malloc_shared(2, dtype)])))
    elif op == "eq":
        outcome(lambda: p == k)
    elif op == "array":
        outcome(lambda: np.asarray(p + data.draw(st.integers(0, 8))))
    elif op == "get":
        r = outcome(lambda: p[k])
        if ok(r):
            assert 0 <= int(k) < 8
    else:
        v = data.draw(maybe(st.one_of(st.integers(-300, 300), st.floats(allow_nan=True, allow_infinity=True)), 2))
        i = data.draw(maybe(st.integers(0, 7), 6))
        r = outcome(p.__setitem__, i, v)
        if ok(r):
            got = p[i]
            dt = np.dtype(dtype)
            if dt.kind in "iu":
                assert float(got) == float(v) and int(got) == int(v), f"{v!r} stored as {got!r}"
            else:
                fv = float(v)
                assert np.isnan(got) if np.isnan(fv) else float(got) == float(dt.type(fv)), (v, got)


@examples(30, weight=1)
@given(st.data())
def test_ptr_wraps(data):
    a = data.draw(st.sampled_from([np.zeros(4), np.zeros((2, 2)), readonly(np.zeros(4)), np.zeros(6)[::2],
                                   [1, 2], 3, None, np.zeros(0), np.zeros(3, dtype=object)]))
    r = outcome(sycl.ptr, a)
    if ok(r):
        p = r[1]
        outcome(p.__setitem__, 0, 1)


_TYPES = ["sint8", "uint8", "sint32", "fp32", "fp16", "bf16", "tf32", np.int8, np.float32, jm.precision.tf32]


@examples(60, weight=1)
@given(st.sampled_from(["pvc", "dg2", "spr", "gnr", "dmr", "bmg", "arl"]), st.data())
def test_queries(dev, data):
    which = data.draw(st.sampled_from(["find", "params", "layout", "info", "device", "round"]))
    t = [data.draw(maybe(st.sampled_from(_TYPES), 5)) for _ in range(4)]
    mnk = [data.draw(maybe(st.sampled_from([1, 8, 16, 32, 64]), 4)) for _ in range(3)]
    if which == "find":
        r = outcome(jm.find_combination, dev, *t, *mnk)
        if ok(r):   # a shape is integers: 8.5 or "8" must not be coerced to 8
            assert all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in mnk), mnk
    elif which == "params":
        if data.draw(st.booleans()):
            mnk = [None, None, None]
        r = outcome(jm.matrix_params, dev, *t, *mnk)
        if ok(r) and mnk[0] is not None:
            assert all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in mnk), mnk
    elif which == "layout":
        outcome(jm.layout, dev, t[0], data.draw(maybe(st.sampled_from(list(jm.use)), 5)), mnk[0], mnk[1],
                data.draw(st.one_of(st.none(), maybe(st.sampled_from(list(jm.layout)), 4))))
    elif which == "info":
        outcome(sycl.queue(dev).get_device().get_info, data.draw(maybe(st.sampled_from(
            ["matrix_combinations", "sub_group_sizes", "name", "numtiles", "architecture"]), 4)))
    elif which == "device":
        outcome(sycl.get_device, data.draw(hostile()))
    else:
        outcome(jm.round_to_tf32, data.draw(hostile()))


@examples(10, weight=0.05)
@given(st.sampled_from(["pvc", "dg2", "spr"]), st.data())
def test_nd_range_and_ids(dev, data):
    q = sycl.queue(dev)
    sg = {"pvc": 16, "dg2": 8, "spr": 1}[dev]
    dims = data.draw(st.integers(1, 3))
    local = [data.draw(st.integers(1, 2)) for _ in range(dims)]
    local[-1] *= sg
    glob = [lo * data.draw(st.integers(1, 3)) for lo in local]
    if data.draw(st.integers(0, 3)) == 0:
        glob[0] = data.draw(hostile())
    r = outcome(sycl.nd_range, tuple(glob), tuple(local))
    if not ok(r):
        return
    n = int(np.prod(glob))
    out = q.malloc_shared(n, np.int64)
    seen = q.malloc_shared(n, np.int64)

    def kernel(it):
        lin = it.get_global_linear_id()
        out[lin] = lin
        g = 0
        for d in range(dims):
            g = g * it.get_global_range(d) + it.get_global_id(d)
        seen[lin] = g
    r = outcome(q.parallel_for, r[1], kernel)
    assert ok(r), r
    np.testing.assert_array_equal(np.asarray(out), np.arange(n))
    np.testing.assert_array_equal(np.asarray(seen), np.arange(n))


@examples(30, weight=1)
@given(st.sampled_from(["pvc", "spr"]), st.data())
def test_joint_matrix_hostile(dev, data):
    """A GEMM kernel with one hostile argument somewhere."""
    q = sycl.queue(dev)
    sgs = {"pvc": 16, "spr": 1}[dev]
    M, N, K = (8, 16, 32) if dev == "pvc" else (16, 16, 64)
    A = q.malloc_shared(M * K, np.int8)
    B = q.malloc_shared(K * N, np.int8)
    C = q.malloc_shared(M * N, np.int32)
    spot = data.draw(st.sampled_from(["none", "stride", "ptr", "fill", "apply", "rows", "offset"]))
    bad = data.draw(hostile())

    def kernel(it):
        sg = it.get_sub_group()
        a = jm.joint_matrix(sg, np.int8, jm.use.a, bad if spot == "rows" else M, K, jm.layout.row_major)
        b = jm.joint_matrix(sg, np.int8, jm.use.b, K, N, jm.layout.row_major)
        c = jm.joint_matrix(sg, np.int32, jm.use.accumulator, M, N)
        jm.joint_matrix_fill(sg, c, bad if spot == "fill" else 0)
        jm.joint_matrix_load(sg, a, bad if spot == "ptr" else A, bad if spot == "stride" else K)
        jm.joint_matrix_load(sg, b, B + (bad if spot == "offset" else 0), N)
        jm.joint_matrix_mad(sg, c, a, b, c)
        if spot == "apply":
            jm.joint_matrix_apply(sg, c, lambda x: bad)
        jm.joint_matrix_store(sg, c, C, N, jm.layout.row_major)
    r = outcome(q.parallel_for, sycl.nd_range((sgs,), (sgs,)), kernel)
    if spot == "none":
        assert ok(r)


_VALID = {"pvc": (("sint8", "sint8", "sint32", "sint32"), (8, 16, 32)),
          "dg2": (("fp16", "fp16", "fp32", "fp32"), (8, 8, 16)),
          "spr": (("bf16", "bf16", "fp32", "fp32"), (16, 16, 32))}
_NEAR = st.sampled_from([8.0, 8.5, "8", True, np.int64(8), np.float32(16), 16.0, 32.0, None, np.uint8(16)])


@examples(40, weight=1)
@given(st.sampled_from(sorted(_VALID)), st.integers(0, 2), _NEAR, st.booleans())
def test_query_shapes(dev, pos, v, params):
    """Valid types, one M/N/K replaced by a near-integer: accepted only when it is an integer."""
    types, mnk = _VALID[dev]
    mnk = list(mnk)
    mnk[pos] = v
    r = outcome(jm.matrix_params if params else jm.find_combination, dev, *types, *mnk)
    if ok(r):
        assert all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in mnk), mnk


def _kernel_outcome(dev, body):
    q = sycl.queue(dev)
    sgs = {"pvc": 16, "spr": 1}[dev]
    return outcome(q.parallel_for, sycl.nd_range((sgs,), (sgs,)), lambda it: body(it.get_sub_group()))


def test_entry_point_refusals():
    """Arrays where scalars belong, read-only output buffers, a 2021 matrix of 10**9 rows: typed errors (they
    were numpy's bare ValueError, a bare 'assignment destination is read-only', a MemoryError)."""
    from systolic.errors import InvalidValue
    from systolic.sycl import matrix_2021 as m21
    out = sycl.queue("pvc").malloc_shared(128, np.float32)
    ro = np.zeros(128, np.float32)
    ro.setflags(write=False)

    def store(ptr, stride):
        def body(sg):
            c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 8, 16)
            jm.joint_matrix_store(sg, c, ptr, stride, jm.layout.row_major)
        return body
    for r in (_kernel_outcome("pvc", store(out, np.array([16, 16]))),
              _kernel_outcome("pvc", store(out, [16])),
              _kernel_outcome("pvc", store(sycl.ptr(ro), 16)),
              _kernel_outcome("spr", lambda sg: m21.joint_matrix(sg, np.int8, 10 ** 9, 64))):
        assert not ok(r) and isinstance(r[1], InvalidValue), r
