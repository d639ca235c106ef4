"""Predication: visa-operands.md "Predication" (control word and EvaluateChEn)."""

import os
import pytest
from hypothesis import given, settings, strategies as st

from systolic.errors import IllegalInstruction, InvalidValue
from systolic.visa.isa import MaskControl, mask_by_name
from systolic.visa.predication import PredControl, evaluate_chen, evaluate_chen_bits, mask_to_int

SOAK = int(os.environ.get("SYSTOLIC_SOAK", "1"))  # long runs: SYSTOLIC_SOAK=50


def test_control_word_layout():
    assert PredControl(5).encode() == 5
    assert PredControl(5, "any").encode() == (1 << 13) | 5
    assert PredControl(5, "all").encode() == (2 << 13) | 5
    assert PredControl(4095, "", True).encode() == 0x8FFF
    assert PredControl.decode(0xC001) == PredControl(1, "all", True)


def test_reserved_bits():
    with pytest.raises(IllegalInstruction, match="bit 12"):
        PredControl.decode(1 << 12)
    with pytest.raises(IllegalInstruction, match="11b"):
        PredControl.decode(3 << 13)
    with pytest.raises(InvalidValue):
        PredControl.decode(1 << 16)
    with pytest.raises(IllegalInstruction, match="4095"):
        PredControl(4096)


@given(st.integers(0, 0xFFFF))
def test_decode_encode_roundtrip(word):
    try:
        pc = PredControl.decode(word)
    except IllegalInstruction:
        assert word & (1 << 12) or (word >> 13) & 3 == 3
        return
    assert pc.encode() == word


def test_mask_names():
    assert mask_by_name("M3").offset == 8 and not mask_by_name("M3").nomask
    assert mask_by_name("M5_NM").offset == 16 and mask_by_name("M5_NM").nomask
    assert mask_by_name("NoMask") == MaskControl(8)
    with pytest.raises(IllegalInstruction):
        mask_by_name("M9")


def test_m3_starts_at_pred_element_8():
    """'a value of {M3} means the first element will be pred_id(8)'."""
    pred = [0] * 8 + [1, 0, 1, 0] + [0] * 20
    chen = evaluate_chen(4, MaskControl(2), PredControl(1), [1] * 32, pred)
    assert chen[:4] == [1, 0, 1, 0] and sum(chen) == 2


def test_combine_before_inverse():
    """any/all first, then the inverse (the table's note)."""
    pred = [0, 0, 1, 0] + [0] * 28
    em = [1] * 32
    assert evaluate_chen(4, MaskControl(0), PredControl(1, "any"), em, pred)[:4] == [1, 1, 1, 1]
    assert evaluate_chen(4, MaskControl(0), PredControl(1, "any", True), em, pred)[:4] == [0, 0, 0, 0]
    assert evaluate_chen(4, MaskControl(0), PredControl(1, "all"), em, pred)[:4] == [0, 0, 0, 0]
    assert evaluate_chen(4, MaskControl(0), PredControl(1, "all", True), em, pred)[:4] == [1, 1, 1, 1]
    assert evaluate_chen(4, MaskControl(0), PredControl(1, "", True), em, pred)[:4] == [1, 1, 0, 1]


def test_nomask_ignores_em_but_not_predicate():
    em = [0] * 32
    assert evaluate_chen(8, MaskControl(8), PredControl(), em, None) == [1] * 8 + [0] * 24
    assert evaluate_chen(8, MaskControl(0), PredControl(), em, None) == [0] * 32
    pred = [1, 0] * 16
    assert evaluate_chen(8, MaskControl(8), PredControl(1), em, pred)[:8] == [1, 0] * 4


def test_reading_past_the_mask_is_an_error():
    with pytest.raises(IllegalInstruction, match="past the end"):
        evaluate_chen(16, MaskControl(7), PredControl(), [1] * 32, None)  # M8 + 16 > 32
    with pytest.raises(IllegalInstruction, match="past the end"):
        evaluate_chen(16, MaskControl(0), PredControl(1), [1] * 32, [1] * 8)


def oracle(n, off, nomask, pid, comb, inv, em, pv):
    """Independent restatement on integers."""
    en = (1 << n) - 1 if nomask else (em >> off) & ((1 << n) - 1)
    if pid:
        p = (pv >> off) & ((1 << n) - 1)
        if comb == "any":
            p = (1 << n) - 1 if p else 0
        if comb == "all":
            p = (1 << n) - 1 if p == (1 << n) - 1 else 0
        if inv:
            p ^= (1 << n) - 1
        en &= p
    return en


@settings(max_examples=300 * SOAK, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 16, 32]), st.integers(0, 15), st.integers(0, 3), st.sampled_from(["", "any", "all"]),
       st.booleans(), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_chen_spec_vs_oracle_vs_fast(n, mcode, pid, comb, inv, em, pv):
    mask = MaskControl(mcode)
    pc = PredControl(pid, comb, inv)
    em_l = [(em >> i) & 1 for i in range(32)]
    pv_l = [(pv >> i) & 1 for i in range(32)]
    if mask.offset + n > 32:
        if pid or not mask.nomask:
            with pytest.raises(IllegalInstruction):
                evaluate_chen(n, mask, pc, em_l, pv_l if pid else None)
            with pytest.raises(IllegalInstruction):
                evaluate_chen_bits(n, mask, pc, em, pv if pid else None)
        return
    spec = evaluate_chen(n, mask, pc, em_l, pv_l if pid else None)
    assert len(spec) == 32 and not any(spec[n:])
    want = oracle(n, mask.offset, mask.nomask, pid, comb, inv, em, pv)
    assert mask_to_int(spec) == want
    assert evaluate_chen_bits(n, mask, pc, em, pv if pid else None) == want


def test_text():
    assert PredControl(1).text("P1") == "(P1)"
    assert PredControl(1, "any", True).text("P1") == "(!P1.any)"
