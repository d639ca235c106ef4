"""Audit finding 9: ``amx.intrinsics.use_machine`` takes a TileMachine (or None) and refuses anything else at once.

Before the fix ``use_machine("graniterapids")`` was accepted and the first intrinsic failed with
AttributeError: 'str' object has no attribute 'tileloadd'.
"""

import pytest

from systolic.amx import TileMachine
from systolic.amx import intrinsics as I
from systolic.errors import InvalidValue


# ------------------------------------------------------------------ finding 9: use_machine
@pytest.mark.parametrize("machine", ["graniterapids", 3, object()])
def test_use_machine_refuses_a_non_machine_at_once(machine):
    with pytest.raises(InvalidValue) as e:
        with I.use_machine(machine):
            pass
    assert "TileMachine" in str(e.value) and "machine" in e.value.values
    assert e.value.rule and "TileMachine" in e.value.rule


def test_use_machine_cpu_name_hint_and_state_untouched():
    before = I.current_machine()
    with pytest.raises(InvalidValue) as e:
        with I.use_machine("graniterapids"):
            pass
    assert e.value.values["machine"] == "graniterapids"
    assert "TileMachine('graniterapids')" in str(e.value)
    assert I.current_machine() is before      # the refused call did not replace the machine


def test_use_machine_accepts_a_machine_and_none():
    m = TileMachine("graniterapids")
    with I.use_machine(m):
        assert I.current_machine() is m
        t = I.Tile(1, 4)
        I.tile_zero(t)
    with I.use_machine(None):
        assert isinstance(I.current_machine(), TileMachine)
