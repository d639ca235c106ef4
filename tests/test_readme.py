"""Every ```python block of README.md runs as written, top to bottom, in one namespace (as a reader pasting the
tour into one session would); a block that needs what this machine lacks (tests/doc_blocks.py: torch, CUDA,
native AMX) is skipped with the reason."""

from __future__ import annotations

import pytest

from doc_blocks import ROOT, fenced_blocks, missing_python

README = ROOT / "README.md"
BLOCKS = [b for b in fenced_blocks(README) if b.lang == "python"]


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 4


def test_readme_python_blocks_run_in_order(capsys):
    ns: dict = {"__name__": "readme"}
    skipped = []
    for b in BLOCKS:
        why = missing_python(b.text)
        if why:
            skipped.append(f"README.md:{b.line}: {why}")
            continue
        exec(compile("\n" * (b.line - 1) + b.text, "README.md", "exec"), ns)   # the page's line numbers
    out = capsys.readouterr().out
    assert "error: " in out and "distinct" in out.lower()     # the AMX tour shows its #UD, then goes on
    assert ns["c"].shape == (256, 128) and ns["d"].shape == (64, 128)
    if skipped:
        pytest.skip("; ".join(skipped))
