"""systolic.opencl's built-ins come from the table at attribute access; __init__.pyi is their static face."""

from __future__ import annotations

import ast
from pathlib import Path

import systolic.opencl as cl
from systolic.opencl.stubgen import stub_text

STUB = Path(cl.__file__).with_name("__init__.pyi")


def test_the_committed_stub_is_current():
    assert STUB.read_text() == stub_text(), "regenerate: python -m systolic.opencl.stubgen > " + str(STUB)


def test_the_stub_declares_every_public_name():
    tree = ast.parse(STUB.read_text())
    declared = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    declared |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets}
    declared |= {a.asname for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert set(cl.__all__) <= declared


def test_every_name_resolves_once():
    for name in cl.__all__:
        assert getattr(cl, name) is getattr(cl, name), name
    f = cl.intel_sub_group_i8_i8_matrix_mad_k32
    assert f.__name__ == "intel_sub_group_i8_i8_matrix_mad_k32" and "overloads" in f.__doc__
    assert cl.intel_convert_tfloat324_as_float4 is cl.intel_convert_tfloat32_as_float
    assert "intel_sub_group_block_read" in dir(cl)
