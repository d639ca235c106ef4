"""systolic.opencl.mapping builds each overload's operand Layouts and register-image index once (review): the
cached objects are shared, read-only, and the same maps a fresh build gives."""

from __future__ import annotations

import numpy as np
import pytest

from systolic.opencl import mapping as MP
from systolic.opencl import table as TB


@pytest.mark.parametrize("name", ["intel_sub_group_i8_i8_matrix_mad_k32", "intel_sub_group_bf16_bf16_matrix_mad_k16"])
@pytest.mark.parametrize("operand", ["a", "b", "acc", "result"])
def test_operand_layout_is_built_once(name, operand):
    rec = MP.resolve(name, "pvc")
    L = MP.operand_layout(rec, operand, platform="pvc")
    assert MP.operand_layout(rec, operand, platform="pvc") is L
    fresh = MP._operand_layout.__wrapped__(rec, operand, "pvc")
    assert fresh is not L and np.array_equal(fresh.index, L.index) and np.array_equal(fresh.bit, L.bit)
    assert fresh.params == L.params and fresh.title == L.title
    assert MP.operand_layout(rec, operand, platform=None).params.get("platform") is None   # its own entry


def test_unit_index_is_shared_and_read_only():
    rec = next(r for r in TB.BUILTINS if r.split)
    L = MP.operand_layout(rec, "a")
    s, n = rec.sub_group_size, rec.a_type.n
    idx = MP._unit_index(L, s, n)
    assert MP._unit_index(L, s, n) is idx and not idx.flags.writeable
    # the image unit of (sub-group g, work-item i, component j) is g*st0 + i*st1 + j*st2 (the Layout's strides)
    st = L.unit_strides
    g, i, j = np.meshgrid(np.arange(2), np.arange(s), np.arange(n), indexing="ij")
    assert np.array_equal(idx, g * st[0] + i * st[1] + j * st[2])
