"""The committed layout pictures (docs/img/*.svg) are what the renderer draws today, and a notebook's
``Layout._repr_svg_`` is the same picture: the renderer lives in systolic.layout.picture (no import of a tool)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


def test_docs_pictures_are_byte_identical(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("make_layout_pictures_test", IMG / "make_layout_pictures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "HERE", tmp_path)
    src = (IMG / "make_layout_pictures.py").read_text()
    body = src[src.index('if __name__ == "__main__":'):].split("\n", 1)[1]
    exec(compile("if True:\n" + body, "make_layout_pictures", "exec"), vars(mod))
    made = sorted(p.name for p in tmp_path.glob("*.svg"))
    assert made and made == sorted(p.name for p in IMG.glob("*.svg"))
    for name in made:
        assert (tmp_path / name).read_bytes() == (IMG / name).read_bytes(), name


@pytest.mark.parametrize("layer, operand, opts", [("dpas", "a", {"device": "pvc", "precision": "bf16"}),
                                                  ("sycl", "accumulator", {"device": "pvc", "type": "fp32",
                                                                           "rows": 8, "cols": 16})])
def test_repr_svg_is_the_layout_svg(layer, operand, opts):
    from systolic.explorer import layout_svg, resolve
    from systolic.layout.picture import layout_svg as in_layout
    L = resolve(layer, operand, **opts)
    assert layout_svg is in_layout
    assert L._repr_svg_() == in_layout(L) and L._repr_svg_().startswith("<svg ")
    assert L._repr_html_().endswith(L._repr_svg_() + "</div>")


def test_layout_svg_needs_no_explorer():
    import subprocess
    code = ("import sys; from systolic.layout.dpas import *; import systolic.layout.picture; "
            "print(any(m.startswith('systolic.explorer') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
