"""The vectorised ALU (systolic.visa.alu_fast) is bit-identical to the per-element spec path."""

import os

import numpy as np
from hypothesis import given, settings, strategies as st

from systolic.errors import SystolicError
from systolic.visa import asm
from systolic.visa.interp import Machine

SOAK = int(os.environ.get("SYSTOLIC_SOAK", "1"))  # long runs: SYSTOLIC_SOAK=50

DECLS = """
.decl I1 v_type=G type=d num_elts=32 align=GRF
.decl I2 v_type=G type=ud num_elts=32 align=GRF
.decl I3 v_type=G type=w num_elts=32 align=GRF
.decl I4 v_type=G type=uw num_elts=32 align=GRF
.decl I5 v_type=G type=b num_elts=64 align=GRF
.decl I6 v_type=G type=ub num_elts=64 align=GRF
.decl F1 v_type=G type=f num_elts=32 align=GRF
.decl F2 v_type=G type=f num_elts=32 align=GRF
.decl H1 v_type=G type=hf num_elts=32 align=GRF
.decl A1 v_type=A num_elts=4
.decl P1 v_type=P num_elts=32
"""
INTS = ["I1", "I2", "I3", "I4", "I5", "I6"]
FLTS = ["F1", "F2"]
SPECIAL_F = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x00000001,
             0x807FFFFF, 0x7F7FFFFF, 0x3F800000, 0xBF800000, 0x3F7FFFFF, 0x00800000]
SPECIAL_I = [0, 1, -1, 0x7FFFFFFF, -0x80000000, 0xFFFF, 0x8000, 0x7F, 0x80, 0xFF, 31, 32, 33]


@st.composite
def operand(draw, kind, dst):
    var = draw(st.sampled_from(INTS if kind == "int" else FLTS))
    if dst:
        return f"{var}(0,{draw(st.integers(0, 3))})<{draw(st.sampled_from([1, 2]))}>"
    if draw(st.integers(0, 4)) == 0:
        if kind == "int":
            t = draw(st.sampled_from(["d", "ud", "w", "uw", "b", "ub"]))
            bits = {"d": 32, "ud": 32, "w": 16, "uw": 16, "b": 8, "ub": 8}[t]
            return f"{draw(st.integers(0, (1 << bits) - 1)):#x}:{t}"
        return f"{draw(st.sampled_from(SPECIAL_F + [0x40490FDB])):#x}:f"
    mod = draw(st.sampled_from(["", "", "(-)", "(abs)", "(-abs)"] + (["(~)"] if kind == "int" else [])))
    reg = draw(st.sampled_from(["<1;1,0>", "<0;1,0>", "<2;1,0>", "<4;4,1>", "<8;4,2>", "<16;8,1>"]))
    return f"{mod}{var}({draw(st.integers(0, 1))},{draw(st.integers(0, 3))}){reg}"


@st.composite
def instruction(draw):
    kind = draw(st.sampled_from(["int", "int", "f"]))
    ops = ["mov", "sel", "add", "mul", "mad", "min", "max"] + (
        ["and", "or", "xor", "not", "shl", "shr", "asr"] if kind == "int" else [])
    op = draw(st.sampled_from(ops))
    nsrc = {"mov": 1, "not": 1, "mad": 3}.get(op, 2)
    sat = draw(st.booleans()) and op not in ("and", "or", "xor", "not")
    pred = draw(st.sampled_from(["", "(P1) ", "(!P1) ", "(P1.any) "]))
    mask = draw(st.sampled_from(["M1", "M1_NM", "M3", "M5"]))
    n = draw(st.sampled_from([1, 2, 4, 8, 16]))
    parts = [draw(operand(kind, True))] + [draw(operand(kind, False)) for _ in range(nsrc)]
    return f"{pred}{op}{'.sat' if sat else ''} ({mask}, {n}) " + " ".join(parts)


def fill(m: Machine, data: bytes):
    rng = np.random.default_rng(int.from_bytes(data[:8].ljust(8, b"\0"), "little"))
    for v in ("I1", "I2", "I3", "I4", "I5", "I6"):
        raw = rng.integers(0, 256, m.prog.lookup(v).size, dtype=np.uint8)
        m.grf.write(m.layout.offsets[v], raw)
    for v in FLTS:
        bits = rng.choice(np.array(SPECIAL_F + list(rng.integers(0, 1 << 32, 8)), dtype=np.uint32), 32)
        m.grf.write(m.layout.offsets[v], bits.view(np.uint8))
    m.grf.write(m.layout.offsets["I1"], np.array(SPECIAL_I, dtype=np.int64).astype(np.int32).view(np.uint8))
    m.write("P1", rng.integers(0, 2, 32))


def outcome(prog, fast, data, em, platform):
    m = Machine(prog, platform, em=em, path="fast" if fast else "spec")
    fill(m, data)
    try:
        m.run()
    except SystolicError as e:
        return ("error", type(e).__name__, str(e))
    return ("ok", m.grf.data.tobytes(), tuple(map(tuple, m.pred.values())))


@settings(max_examples=400 * SOAK, deadline=None)
@given(st.lists(instruction(), min_size=1, max_size=4), st.binary(min_size=8, max_size=8),
       st.integers(0, 2**32 - 1), st.sampled_from(["dg2", "pvc"]))
def test_fast_alu_equals_spec_path(insts, data, em, platform):
    try:
        prog = asm.parse(DECLS + "\n".join(insts))
    except SystolicError:
        return
    assert outcome(prog, True, data, em, platform) == outcome(prog, False, data, em, platform)


def test_fast_path_is_taken_and_equal_on_an_example():
    prog = asm.parse(DECLS + "add.sat (M1, 16) I4(0,0)<1> I4(0,0)<1;1,0> (-)I3(0,0)<1;1,0>\n"
                             "mul (M1, 16) F1(0,0)<1> (abs)F1(0,0)<1;1,0> F2(0,0)<1;1,0>\n")
    calls = []
    from systolic.visa import alu_fast
    real = alu_fast.compute

    def spy(*a, **k):
        r = real(*a, **k)
        calls.append(r is not None)
        return r
    alu_fast.compute = spy
    try:
        assert outcome(prog, True, b"12345678", 0xFFFFFFFF, "pvc") == outcome(prog, False, b"12345678", 0xFFFFFFFF,
                                                                               "pvc")
    finally:
        alu_fast.compute = real
    assert calls == [True, True]
