"""Fuzz: the OpenCL built-ins, distribute / gather and the kernel runner.

Oracle for the integer built-ins: A (M x K) and B (K x N) of random in-range integers, distributed to the
work-items, one built-in call, gathered: the result equals int64 ``A @ B + C`` wrapped to 32 bits. Hostile
variants (values out of range, floats, wrong shapes, read-only arrays, arrays where scalars belong) end ok or
with a typed error.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from systolic import opencl as cl

from .harness import examples, hostile, maybe, ok, outcome, readonly

INT = sorted({(r.name, r.sub_group_size, r.m) for r in cl.BUILTINS
              if r.a_precision in ("s8", "u8", "s4", "u4", "s2", "u2") and not r.split})
_RANGE = {"s8": (-128, 127), "u8": (0, 255), "s4": (-8, 7), "u4": (0, 15), "s2": (-2, 1), "u2": (0, 3)}
_PLAT = {8: "dg2", 16: "pvc"}


def _rec(name, sg, m):
    return next(r for r in cl.BUILTINS if (r.name, r.sub_group_size, r.m) == (name, sg, m))


@examples(40, weight=8)
@given(st.sampled_from(INT), st.integers(0, 2 ** 32 - 1))
def test_integer_builtins_vs_int64(case, seed):
    name, sg, m = case
    r = _rec(name, sg, m)
    plat = _PLAT[sg]
    rng = np.random.default_rng(seed)
    L = cl.layout(name, "b", device=plat, m=m)
    n = L.cols
    A = rng.integers(*_RANGE[r.a_precision], endpoint=True, size=(m, r.k))
    B = rng.integers(*_RANGE[r.b_precision], endpoint=True, size=(r.k, n))
    C = rng.integers(-2 ** 31, 2 ** 31, size=(m, n))
    a = cl.distribute(name, "a", A, device=plat, m=m)
    b = cl.distribute(name, "b", B, device=plat, m=m)
    c = cl.distribute(name, "acc", C, device=plat, m=m)
    d = getattr(cl, name)(a, b, c, device=plat)
    D = cl.gather(name, "result", d, device=plat, m=m)
    want = (A.astype(np.int64) @ B.astype(np.int64) + C + 2 ** 31) % 2 ** 32 - 2 ** 31
    np.testing.assert_array_equal(np.asarray(D, dtype=np.int64), want)


@examples(60, weight=12)
@given(st.sampled_from(sorted(cl.NAMES)), st.sampled_from(["a", "b", "acc", "result", "c", 3]), st.data())
def test_distribute_gather_hostile(name, operand, data):
    plat = data.draw(maybe(st.sampled_from(["dg2", "pvc", "bmg", "lnl", "mtl"]), 5))
    m = data.draw(st.one_of(st.none(), maybe(st.sampled_from([1, 2, 4, 8]), 4)))
    shape = data.draw(st.sampled_from([(8, 32), (1, 32), (32, 8), (32, 16), (8, 16), (4, 8), (16, 16), (2, 3, 4)]))
    kind = data.draw(st.sampled_from(["int", "big", "float", "nan", "obj", "ro", "scalar", "bool"]))
    rng = np.random.default_rng(0)
    mat = {"int": lambda: rng.integers(-3, 3, size=shape), "big": lambda: np.full(shape, 2 ** 40),
           "float": lambda: rng.standard_normal(shape), "nan": lambda: np.full(shape, np.nan),
           "obj": lambda: np.full(shape, "x", dtype=object), "ro": lambda: readonly(np.ones(shape)),
           "scalar": lambda: data.draw(hostile()), "bool": lambda: np.ones(shape, dtype=bool)}[kind]()
    r = outcome(cl.distribute, name, operand, mat, device=plat, m=m)
    if ok(r):
        g = outcome(cl.gather, name, operand, r[1], device=plat, m=m)
        if ok(g) and kind == "int":
            assert np.array_equal(np.asarray(g[1], dtype=np.float64), np.asarray(mat, dtype=np.float64))
    outcome(cl.gather, name, operand, mat, device=plat, m=m)


@examples(40, weight=1)
@given(st.sampled_from(sorted(cl.NAMES)), st.data())
def test_builtin_hostile_arguments(name, data):
    recs = [r for r in cl.BUILTINS if r.name == name]
    r = data.draw(st.sampled_from(recs))
    plat = _PLAT[r.sub_group_size] if not r.split else "dg2"
    args = []
    for op in ("a", "b", "acc"):
        try:
            L = cl.layout(name, op, device=plat, m=r.m)
            v = cl.distribute(name, op, np.zeros(L.shape, dtype=np.int64) if op != "acc" or "int" in str(
                r.acc_precision) else np.zeros(L.shape), device=plat, m=r.m)
        except Exception:  # noqa: BLE001 - a valid argument is only the starting point
            v = np.zeros((r.sub_group_size,), dtype=np.int32)
        if data.draw(st.integers(0, 3)) == 0:
            v = data.draw(st.one_of(hostile(), st.just(readonly(v)), st.just(np.asarray(v)[..., :1]),
                                    st.just(np.asarray(v).astype(np.float64) + 0.5), st.just(v.tolist())))
        args.append(v)
    outcome(getattr(cl, name), *args, device=data.draw(maybe(st.just(plat), 6)),
            path=data.draw(maybe(st.sampled_from(["fast", "spec"]), 8)))


@examples(10, weight=0.1)
@given(st.data())
def test_run_hostile(data):
    gs = data.draw(maybe(st.sampled_from([8, 16, 32, (16, 2)]), 4))
    ls = data.draw(maybe(st.sampled_from([8, 16, (16, 1)]), 4))
    out = np.zeros(64, dtype=np.int32)
    which = data.draw(st.sampled_from(["gid", "bcast", "barrier", "bad_sg"]))

    def kernel(buf):
        i = cl.get_global_id(0)
        if which == "gid":
            buf[i] = i
        elif which == "bcast":
            buf[i] = cl.sub_group_broadcast(i, data.draw(maybe(st.integers(0, 7), 4)))
        elif which == "barrier":
            cl.barrier(cl.CLK_LOCAL_MEM_FENCE)
        else:
            buf[i] = cl.get_sub_group_local_id()
    outcome(cl.run, kernel, gs, ls, (data.draw(st.sampled_from([out, readonly(out), 3, None])),),
            device=data.draw(maybe(st.sampled_from(["dg2", "pvc"]), 6)),
            sub_group_size=data.draw(st.one_of(st.none(), maybe(st.sampled_from([8, 16]), 3))))


def test_entry_point_refusals():
    """A read-only output buffer and a fractional m: typed errors (a bare ValueError from numpy; m=2.0 was
    taken as 2)."""
    from systolic.errors import InvalidValue
    ro = np.zeros(16, np.int32)
    ro.setflags(write=False)
    r = outcome(cl.run, lambda b: b.__setitem__(cl.get_global_id(0), 1), 8, 8, (ro,), device="dg2")
    assert not ok(r) and isinstance(r[1], InvalidValue), r
    r = outcome(cl.distribute, "intel_sub_group_i8_i8_matrix_mad_k32", "a", np.ones((2, 32)), device="dg2", m=2.0)
    assert not ok(r) and isinstance(r[1], InvalidValue), r
    r = outcome(cl.run, lambda b: b.__setitem__(cl.get_global_id(0), 300), 8, 8, (np.zeros(8, np.int8),),
                device="dg2")
    assert not ok(r) and isinstance(r[1], InvalidValue), r
