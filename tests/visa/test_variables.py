"""Declarations and the JIT placement rules (visa-operands.md, Region Restrictions, implementation note)."""

import os
import pytest
from hypothesis import given, settings, strategies as st

from systolic.errors import IllegalInstruction
from systolic.visa.isa import TYPES
from systolic.visa.variables import AddressVar, GeneralVar, PredicateVar, layout

SOAK = int(os.environ.get("SYSTOLIC_SOAK", "1"))  # long runs: SYSTOLIC_SOAK=50

TYPE_NAMES = ["ud", "d", "uw", "w", "ub", "b", "f", "hf", "bf", "df", "q", "uq"]
ALIGNS = [None, "byte", "word", "dword", "qword", "oword", "hword", "wordx32", "wordx64", "GRF", "2GRF", "GRFx2"]
ALIGN_BYTES = {None: 1, "byte": 1, "word": 2, "dword": 4, "qword": 8, "oword": 16, "hword": 32, "wordx32": 64,
               "wordx64": 128}


@st.composite
def var_lists(draw):
    n = draw(st.integers(1, 12))
    return [GeneralVar(f"V{i}", TYPES[draw(st.sampled_from(TYPE_NAMES))], draw(st.integers(1, 80)),
                       draw(st.sampled_from(ALIGNS))) for i in range(n)]


@settings(max_examples=300 * SOAK, deadline=None)
@given(var_lists(), st.sampled_from([32, 64]))
def test_layout_obeys_jit_rules(vars_, grf):
    # GRFs a trivial packing needs: every variable in whole GRFs of its own, plus the GRFs an alignment larger
    # than one GRF may skip; when that fits the 128-GRF file, the layout must succeed, otherwise it may raise
    def align(v):
        return grf if v.align == "GRF" else 2 * grf if v.align in ("2GRF", "GRFx2") else ALIGN_BYTES[v.align]
    need = sum(-(-v.num_elts * v.type.size // grf) + max(0, align(v) // grf - 1) for v in vars_)
    try:
        lay = layout(vars_, grf, 128)
    except IllegalInstruction:
        assert need > 128
        return
    spans = []
    for v in vars_:
        o = lay.offsets[v.name]
        size = v.num_elts * v.type.size
        assert o % v.type.size == 0
        if v.align == "GRF":
            assert o % grf == 0
        elif v.align in ("2GRF", "GRFx2"):
            assert o % (2 * grf) == 0
        else:
            assert o % ALIGN_BYTES[v.align] == 0
        if size >= grf:
            assert o % grf == 0                                  # at least one GRF: GRF-aligned
        else:
            assert o // grf == (o + size - 1) // grf             # smaller: never crosses a GRF
        spans.append((o, o + size))
    spans.sort()
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # no overlap
    assert spans[-1][1] <= 128 * grf


def test_layout_example_and_alias():
    vs = [GeneralVar("A", TYPES["ub"], 20), GeneralVar("B", TYPES["d"], 4), GeneralVar("C", TYPES["f"], 16),
          GeneralVar("D", TYPES["w"], 8, alias=("C", 8))]
    lay = layout(vs, 32, 128)
    assert lay.offsets == {"A": 0, "B": 32, "C": 64, "D": 72}   # B (16 bytes) would cross GRF 0 at byte 20
    with pytest.raises(IllegalInstruction, match="outside the variable it aliases"):
        layout([GeneralVar("C", TYPES["f"], 4), GeneralVar("D", TYPES["d"], 4, alias=("C", 4))], 32, 128)
    with pytest.raises(IllegalInstruction, match="undeclared"):
        layout([GeneralVar("D", TYPES["d"], 4, alias=("Z", 0))], 32, 128)


def test_layout_full():
    with pytest.raises(IllegalInstruction, match="do not fit") as e:
        layout([GeneralVar("A", TYPES["d"], 1025)], 32, 128)
    assert e.value.values["grf_file_bytes"] == 4096


def test_declaration_limits():
    with pytest.raises(IllegalInstruction):
        GeneralVar("X", TYPES["d"], 0)
    with pytest.raises(IllegalInstruction):
        GeneralVar("X", TYPES["bool"], 1)
    with pytest.raises(IllegalInstruction):
        AddressVar("A", 0)
    with pytest.raises(IllegalInstruction):
        PredicateVar("P", 64)
    assert GeneralVar("X", TYPES["d"], 4, "grf").align == "GRF"
