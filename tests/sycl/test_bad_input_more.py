"""Bad input to the SYCL layer found by the bad-input audit: typed errors naming the rule and the values.

Oracles: the devices' matrix combinations as intel/llvm's ``device_info.hpp`` lists them (REFERENCE.md; e.g. PVC
bf16 A is M <= 8 x K 16, or one of the fixed shapes 16x16, 1x16, 32x16, 1x32, 32x32: never 64 x 16), and the
C++ rules for a conversion to an integer type ([conv.fpint]: a value outside the target's range is undefined).
"""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from systolic.cli import cli
from systolic.errors import UnsupportedCombination
from systolic.sycl import matrix as jm


# ------------------------------------------------- finding 5: layout() checks the declaration as joint_matrix does

@pytest.mark.parametrize("dev, T, use, rows, cols", [
    ("pvc", "bf16", "a", 64, 16),             # a shape of no combination (joint_matrix refuses it too)
    ("pvc", "bf16", "a", 8, 4_000_000),       # took 3.5 min before
    ("pvc", "fp32", "accumulator", 8000, 16000),
    ("spr", "bf16", "a", 100_000, 100_000),   # a 149 GiB array before
    ("dg2", "fp16", "b", 16, 32),             # DG2's 32x32x16 shape is bf16 only
])
def test_layout_refuses_what_joint_matrix_refuses(dev, T, use, rows, cols):
    with pytest.raises(UnsupportedCombination) as ei:
        jm.layout(dev, T, getattr(jm.use, use), rows, cols)
    e = ei.value
    assert e.values == {"device": dev, "type": T, "use": use, "rows": rows, "cols": cols}
    assert e.rule.startswith(f"{dev} matrix combinations: ")
    assert "M x N x K" in e.rule


def test_layout_and_joint_matrix_share_one_check():
    from systolic import sycl
    seen = []

    def k(item):
        sg = item.get_sub_group()
        try:
            jm.joint_matrix(sg, "bf16", jm.use.a, 64, 16)
        except UnsupportedCombination as exc:
            seen.append(exc)
    sycl.queue("pvc").parallel_for(sycl.nd_range((16,), (16,)), k).wait()
    with pytest.raises(UnsupportedCombination) as ei:
        jm.layout("pvc", "bf16", jm.use.a, 64, 16)
    assert seen and seen[0].rule == ei.value.rule


def test_layout_still_answers_declared_shapes():
    # PVC bf16 A 8 x 16 and the large 32 x 32 shape: sub-group 16
    assert jm.layout("pvc", "bf16", jm.use.a, 8, 16).params["sg_size"] == 16
    assert jm.layout("pvc", "bf16", jm.use.a, 32, 32).params["sg_size"] == 16


def test_cli_layout_detail_sycl_refuses_undeclared_shape():
    r = CliRunner().invoke(cli, ["layout", "detail", "sycl", "a", "--device", "pvc", "--type", "bf16",
                                 "--rows", "8", "--cols", "4000000"])
    # the command prints it as "error: ..." (systolic.cli.main); here the typed exception itself
    assert r.exit_code == 1 and isinstance(r.exception, UnsupportedCombination)
    assert "joint_matrix<bf16, use::a, 8, 4000000" in str(r.exception) and "cols=0x3d0900" in str(r.exception)
