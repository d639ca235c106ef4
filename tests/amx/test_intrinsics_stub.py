"""systolic.amx.intrinsics makes its tile_* functions from the instruction records; intrinsics.pyi is their static
face (issue 26: no name that static tools cannot see)."""

from __future__ import annotations

import ast
from pathlib import Path

from systolic.amx import intrinsics, isa
from systolic.amx.intrinsics_stub import stub_text

STUB = Path(intrinsics.__file__).with_name("intrinsics.pyi")


def test_the_committed_stub_is_current():
    assert STUB.read_text() == stub_text(), "regenerate: python -m systolic.amx.intrinsics_stub > " + str(STUB)


def test_the_stub_declares_every_public_name_and_every_record():
    tree = ast.parse(STUB.read_text())
    declared = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert set(intrinsics.__all__) <= declared
    assert {r.api for r in (*isa.LOADS, *isa.TMULS)} <= declared
    tile = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tile")
    fields = {t.target.id for t in tile.body if isinstance(t, ast.AnnAssign)}
    assert {"rows", "colsb", "image"} <= fields


def test_a_dropped_record_makes_the_stub_stale(monkeypatch):
    # the check can fail: without one TMUL's function the generated text differs from the committed stub
    monkeypatch.setattr(intrinsics, "__all__", [n for n in intrinsics.__all__ if n != "tile_dpbssd"])
    assert stub_text() != STUB.read_text()
