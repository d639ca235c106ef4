"""``Layout.what`` / ``systolic layout what`` with a holder outside the operand: a typed error naming the range
(review F4: it answered an empty list with exit status 0)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from systolic.cli import cli
from systolic.errors import InvalidValue
from systolic.explorer.resolve import resolve


def test_what_outside_the_holders_raises():
    L = resolve("sycl", "accumulator", device="pvc", type="fp32", rows=8, cols=16)
    n = len(L.what(0))
    assert n > 0                                   # work-item 0 holds elements
    with pytest.raises(InvalidValue, match="outside") as ei:
        L.what(0, 500)
    assert "in [" in ei.value.rule
    with pytest.raises(InvalidValue, match="outside"):
        L.what(-1)
    with pytest.raises(InvalidValue, match="integer"):
        L.what(1.5)


def test_cli_what_outside_exits_1():
    r = CliRunner().invoke(cli, ["layout", "what", "dpas", "A", "999"])
    assert r.exit_code == 1 and "outside" in str(r.exception or r.output)
    r = CliRunner().invoke(cli, ["layout", "what", "dpas", "A", "999", "--json"])
    assert r.exit_code == 1
    r = CliRunner().invoke(cli, ["layout", "what", "dpas", "A", "0"])
    assert r.exit_code == 0 and "row=" in r.output
