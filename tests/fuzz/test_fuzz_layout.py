"""Fuzz: the layout verbs (get, where, what, table, detail, svg, explain) with hostile and edge arguments.

Oracle for ``explain``: integer operands it accepts are exactly representable in the operand's element type
(no wrapping, no truncation); a non-integer or out-of-range value must be refused (issue 25, silent coercion).
"""

from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from systolic import layout

from .harness import examples, hostile, maybe, ok, outcome

_GETS = [("dpas", "src2", dict(device="pvc", precision="s8")), ("dpas", "src1", dict(device="dg2")),
         ("dpas", "dst", dict(device="pvc", precision="bf16")), ("dpasw", "src2", dict(device="dg2")),
         ("amx", "a", dict(instruction="tdpbssd")), ("amx", "b", dict(instruction="tdpbf16ps")),
         ("amx", "c", dict()),
         ("opencl", "a", dict(name="intel_sub_group_i8_i8_matrix_mad_k32", device="dg2")),
         ("sycl", "accumulator", dict(device="pvc", type="fp32", rows=8, cols=16))]


@examples(40, weight=1)
@given(st.sampled_from(_GETS), st.data())
def test_get(base, data):
    layer, operand, opts = base
    layer = data.draw(maybe(st.just(layer), 6))
    operand = data.draw(maybe(st.just(operand), 6))
    opts = dict(opts)
    for k in list(opts) + ["rc", "m", "n", "k", "rows", "cols", "eu", "bogus"]:
        if data.draw(st.integers(0, 4)) == 0:
            opts[k] = data.draw(hostile())
    outcome(layout.get, layer, operand, **opts)


_L = [layout.get(*g[:2], **g[2]) for g in _GETS]
_NOT_LAYOUT = st.one_of(hostile(), st.just(object()), st.just(np.zeros((2, 2))))


@examples(25, weight=0.2)
@given(st.sampled_from(_L + [None]), st.data())
def test_verbs(L, data):
    if L is None:
        L = data.draw(_NOT_LAYOUT)
    verb = data.draw(st.sampled_from(["where", "what", "table", "detail", "svg"]))
    if verb == "where":
        outcome(layout.where, L, data.draw(maybe(st.integers(-2, 40))), data.draw(maybe(st.integers(-2, 40))))
    elif verb == "what":
        named = {}
        if data.draw(st.booleans()):
            key = data.draw(st.sampled_from(["grf", "lane", "work_item", "index", "row", "byte", "zzz"]))
            named[key] = data.draw(maybe(st.integers(-2, 40)))
        coords = data.draw(st.lists(maybe(st.integers(-2, 40)), max_size=3))
        outcome(layout.what, L, *coords, **named)
    elif verb == "table":
        outcome(layout.table, L, by=data.draw(maybe(st.sampled_from(["element", "holder"]))),
                fmt=data.draw(maybe(st.sampled_from(["text", "csv", "markdown", "json"]))),
                view=data.draw(maybe(st.sampled_from(["holder", "bits", "lane"]))))
    elif verb == "detail":
        outcome(layout.detail, L)
    else:
        outcome(layout.svg, L, view=data.draw(maybe(st.sampled_from(["holder", "bits"]))))


_INT_RANGE = {"s8": (-128, 127), "u8": (0, 255)}


@examples(30, weight=1)
@given(st.sampled_from(["s8", "u8"]), st.sampled_from(["a", "b"]), st.data())
def test_explain_int_operands_exact_or_refused(prec, which, data):
    """DPAS s8/u8 A (dg2: 8 x 32) and B (32 x 8): accepted values are integers in the type's range."""
    lo, hi = _INT_RANGE[prec]
    shape = (8, 32) if which == "a" else (32, 8)
    pokes = data.draw(st.lists(st.tuples(st.integers(0, 255), st.one_of(
        st.integers(lo, hi), st.integers(-400, 400), st.floats(-300, 300),
        st.sampled_from([float("nan"), float("inf"), 2 ** 40, 1.5, np.float32(2.5), Fraction(7, 2)]))),
        max_size=3))
    m = np.ones(256, dtype=object)
    for i, v in pokes:
        m[i] = v
    m = m.reshape(shape)
    if data.draw(st.booleans()) and all(isinstance(x, (int, float)) for x in m.flat):
        m = m.astype(np.float64)
    other = np.ones((32, 8) if which == "a" else (8, 32), dtype=np.int64)
    a, b = (m, other) if which == "a" else (other, m)
    r = outcome(layout.explain, "dpas", 0, 0, a=a, b=b, precision=prec, device="dg2")
    if ok(r):
        assert all(float(x) == int(x) and lo <= int(x) <= hi for x in m.flat), "explain coerced an operand"


@examples(15, weight=0.15)
@given(st.sampled_from(["dpas", "amx", "opencl", "sycl", "dpasw", "xmx", "bogus"]), st.data())
def test_explain_hostile(layer, data):
    opts = {}
    if layer == "amx":
        opts["instruction"] = data.draw(maybe(st.sampled_from(["tdpbf16ps", "tdpbssd", "tdpfp16ps"])))
    if layer == "opencl":
        opts["name"] = data.draw(maybe(st.just("intel_sub_group_i8_i8_matrix_mad_k32")))
    if data.draw(st.booleans()):
        opts[data.draw(st.sampled_from(["platform", "precision", "m", "n", "k", "rc", "device", "x"]))] = \
            data.draw(hostile())
    kw = {}
    for name in "abc":
        if data.draw(st.integers(0, 3)) == 0:
            kw[name] = data.draw(st.one_of(hostile(), st.just(np.full((16, 32), np.nan)),
                                           st.just(np.full((8, 32), 1e30)), st.just({"bits": 3}),
                                           st.just(np.full((16, 16), np.inf, dtype=np.float32))))
    outcome(layout.explain, layer, data.draw(maybe(st.integers(0, 7))), data.draw(maybe(st.integers(0, 7))),
            seed=data.draw(maybe(st.integers(0, 5), 8)), **opts, **kw)


@examples(20, weight=0.2)
@given(st.one_of(st.integers(-2, 3), st.sampled_from([1.5, "1", True, None])))
def test_explain_split_sub_group_named(sg):
    """A split built-in's sub_group: 0 or 1, refused by its own name (it used to be reported as ``eu=2``)."""
    r = outcome(layout.explain, "opencl", 0, 0, name="intel_sub_group_split_i8_i8_matrix_mad_k32",
                device="dg2", sub_group=sg)
    if ok(r):
        assert sg in (0, 1) and not isinstance(sg, bool) and r[1]["sub_group"] == sg
    else:
        assert "sub_group" in str(r[1]) and "eu" not in str(r[1]).split("[")[0], str(r[1])


@examples(20, weight=0.2)
@given(st.sampled_from(["tdpbf16ps", "tdpfp16ps"]), st.sampled_from(["a", "b", "c"]),
       st.sampled_from([float("nan"), float("inf"), -float("inf")]))
def test_explain_amx_non_finite(mn, which, v):
    """NaN / inf operands of the AMX float TMULs are values the engine takes (as the DPAS layer does): the report
    has no exact sum (None) instead of failing in Fraction()."""
    shapes = {"a": (16, 32), "b": (32, 16), "c": (16, 16)}
    r = outcome(layout.explain, "amx", 0, 0, instruction=mn, **{which: np.full(shapes[which], v)})
    assert ok(r), r
    assert r[1]["exact_sum"] is None


def test_element_type_that_is_no_dtype():
    """np.dtype(np) raises ValueError and np.dtype("(") SyntaxError, not TypeError: both escaped as bare errors
    from the sycl layer's type argument (found by the deep run of test_get)."""
    import systolic.types as T
    from systolic.errors import InvalidValue
    for t in (np, "(", "i4,i4"):
        r = outcome(layout.get, "sycl", "accumulator", device="pvc", type=t, rows=8, cols=16)
        assert not ok(r) and isinstance(r[1], InvalidValue), r
        r = outcome(T.from_dtype, t)
        assert not ok(r), r
