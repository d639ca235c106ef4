"""The error hierarchy: messages name the rule and the values (DESIGN principle 5)."""

from __future__ import annotations

import pytest

from systolic import errors as E


def test_hierarchy():
    for cls in (E.GeneralProtection, E.InvalidOpcode, E.MemoryFault, E.IllegalInstruction, E.AsmSyntaxError,
                E.UnsupportedCombination, E.InvalidValue, E.AmxUnavailable, E.CompileError):
        assert issubclass(cls, E.SystolicError)
    assert issubclass(E.InvalidValue, ValueError)


def test_messages_carry_rule_and_values():
    e = E.GeneralProtection("reserved byte set", rule="SDM LDTILECFG: reserved bytes must be 0",
                            values={"byte": 5, "value": 0x80})
    s = str(e)
    assert s.startswith("#GP reserved byte set") and "reserved bytes must be 0" in s and "byte=5" in s
    assert e.rule.startswith("SDM") and e.values == {"byte": 5, "value": 128}
    u = E.InvalidOpcode("tiles not configured", rule="TILES_CONFIGURED == 0")
    assert str(u).startswith("#UD")
    m = E.MemoryFault("row 3 outside memory", address=0x10000, row=3)
    assert m.row == 3 and m.address == 0x10000 and "address=0x10000" in str(m)
    a = E.AsmSyntaxError("unexpected ')'", line=3, column=14, source="prog.visaasm")
    assert str(a).startswith("prog.visaasm:3:14: unexpected ')'") and (a.line, a.column) == (3, 14)
    c = E.CompileError("please define the shape earlier", location="@api:bb1")
    assert str(c).startswith("@api:bb1: ")
    with pytest.raises(E.SystolicError):
        raise E.IllegalInstruction("exec size", rule="PVC requires exec size 16", values={"exec_size": 8})
