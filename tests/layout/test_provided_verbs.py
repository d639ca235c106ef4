"""systolic.layout's get / explain are the explorer's (tools layer), registered by it (layout.provide), loaded on
first use through the package root: a fresh process can call them first thing, and layout imports nothing above
it (tests/test_layering.py has no allowed edge for it)."""

import subprocess
import sys

import pytest

from systolic import layout


def test_a_fresh_process_calls_layout_get_first():
    code = ("import sys\nfrom systolic import layout\nassert 'systolic.explorer' not in sys.modules\n"
            "L = layout.get('dpas', 'b', platform='pvc', precision='bf16')\n"
            "print(layout.where(L, 3, 5)['grf'], 'systolic.explorer' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", "True"]


def test_the_verbs_are_the_explorers():
    from systolic import explorer
    assert layout.get is explorer.resolve and layout.explain is explorer.explain
    assert layout.where is explorer.where and layout.table is explorer.table


def test_only_get_and_explain_can_be_provided():
    with pytest.raises(AttributeError, match="providable"):
        layout.provide(nope=print)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        layout.nope
