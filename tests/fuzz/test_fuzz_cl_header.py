"""Fuzz: the ``// systolic-run:`` header of .cl programs (docs/cl.md, "systolic run kernel.cl").

Every directive with hostile numeric fields (LO > HI, negative seeds, zero / huge counts, vnni=0, unknown oracle
keys, integers that overflow their C type, fractions for ints, malformed local:NBYTES, unknown expect types):
parsing, filling the buffers, the matmul oracle and reading the expects end ok or with a typed error - never a
bare ValueError / ZeroDivisionError / OverflowError / KeyError. Oracle for what is accepted: a scalar argument is
its written value exactly (integers), a ``random LO HI SEED`` buffer lies in [LO, HI], and no one-value directive
is accepted twice. Nothing is compiled (the header is checked before clang runs), so a case takes milliseconds.
"""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from systolic.run import cl_program as P
from systolic.run.header import check_expects

from .harness import examples, ok, outcome

_NUM = st.sampled_from(["0", "1", "-1", "5", "16", "0x10", "1.5", "-0", "nan", "inf", "1e400", "x", "",
                        "99999999999", "-2147483649", "4294967296", "2147483647", "-9223372036854775809",
                        "18446744073709551616", "1e40", "3.4e38", "0.1"])
_TYPE = st.sampled_from(sorted(P._TYPES) + ["q7", "int"])
_CTYPE = st.sampled_from(sorted(P._CTYPES) + ["i32", "bogus"])
_NAME = st.sampled_from(["A", "B", "C", "Z"])


@st.composite
def _line(draw):
    k = draw(st.sampled_from(["device", "devices", "kernel", "options", "global", "local", "buffer", "buffer",
                              "buffer", "args", "args", "oracle", "oracle", "expect", "expect", "bogus", ""]))
    num = lambda: draw(_NUM)  # noqa: E731
    if k in ("global", "local"):
        return f"{k} " + " ".join(num() for _ in range(draw(st.integers(0, 4))))
    if k == "buffer":
        count = draw(st.sampled_from(["0", "1", "4", "16", "64", "99999999999999", "x"]))
        init = draw(st.sampled_from(["zeros", "range", "random {} {} {}", "random {} {}", "{} {} {} {}", ""]))
        return f"buffer {draw(_NAME)}:{draw(_TYPE)}[{count}] = " + init.format(*(num() for _ in range(4)))
    if k == "args":
        toks = draw(st.lists(st.one_of(_NAME, st.builds(lambda v, t: f"{v}:{t}", _NUM, _CTYPE),
                                       st.builds(lambda v: f"local:{v}", _NUM)), max_size=4))
        return "args " + " ".join(toks)
    if k == "oracle":
        keys = draw(st.lists(st.sampled_from(["M", "N", "K", "vnni", "Q"]), max_size=5))
        kv = " ".join(f"{x}={draw(st.sampled_from(['0', '1', '2', '4', '3', '99999']))}" for x in keys)
        return f"oracle {draw(_NAME)} = matmul {draw(_NAME)} {draw(_NAME)} {kv}"
    if k == "expect":
        typ = draw(st.one_of(st.just(""), _TYPE.map(lambda t: ":" + t)))
        sl = draw(st.sampled_from(["", "[0:2]", "[2:1]", "[:]", "[0:99]"]))
        return f"expect {draw(_NAME)}{typ}{sl} = " + " ".join(num() for _ in range(draw(st.integers(0, 3))))
    return f"{k} {draw(st.sampled_from(['pvc', 'dg2', 'k', '']))}".strip()


def _check(h, lines):
    for key in P._ONCE:
        assert sum(1 for x in lines if x.split(" ", 1)[0] == key) <= 1, f"{key} accepted twice: {lines}"
    bufs = {}
    for name, (typ, count, spec, line) in h["buffers"].items():
        r = outcome(P._fill, name, typ, count, spec, line)
        if ok(r):
            bufs[name] = r[1]
            w = spec.split()
            if w[0] == "random":
                lo, hi = int(w[1], 0), int(w[2], 0)
                v = r[1].astype(np.float64)
                assert ((v >= lo) & (v <= hi)).all(), (spec, r[1])
    for o in h["oracles"]:
        outcome(P._oracle, bufs, o)
    if h["args"] is not None:
        for tok, (kind, v) in zip(h["args"][0] and lines[[x.split(" ", 1)[0] for x in lines].index("args")]
                                  .split()[1:], h["args"][0]):
            if kind == "value" and np.dtype(type(v)).kind in "iu":
                assert Fraction(int(v)) == Fraction(tok.split(":")[0] if "x" not in tok else int(
                    tok.split(":")[0], 16)), (tok, v)

    def read(name, typ):
        if name not in bufs:
            from systolic.errors import ProgramError
            raise ProgramError("no such buffer", rule="test")
        return P._view(bufs[name], name, typ)
    outcome(check_expects, h["expects"], read)


@examples(150, weight=3)
@given(st.lists(_line(), max_size=8))
def test_cl_header(lines):
    text = "// A kernel.\n" + "".join(f"// systolic-run: {x}\n" for x in lines) + "kernel void k() {}\n"
    r = outcome(P.parse_header, text)
    if ok(r):
        _check(r[1], lines)


@pytest.mark.parametrize("spec", ["random -9223372036854775809 0 0", "random 0 9223372036854775808 0"])
def test_random_fill_bounds_beyond_int64_are_typed(spec):
    """Found by test_cl_header: a bound outside the int64 generator's range was numpy's bare ValueError."""
    from systolic.errors import ProgramError
    with pytest.raises(ProgramError, match="64-bit") as e:
        P.parse_header(f"// systolic-run: buffer A:bf16[1] = {spec}\nkernel void k() {{}}\n")
    assert "2**63" in e.value.rule
