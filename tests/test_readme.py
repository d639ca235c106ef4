"""Every ```python block of README.md runs as written, top to bottom, in one namespace (as a reader pasting the
tour into one session would); a block that needs torch or CUDA is skipped with the reason when it is missing."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)


def _missing(block: str) -> str | None:
    """Why this block cannot run here (None: it can)."""
    if re.search(r"^\s*import torch|systolic\.torch", block, re.M) and importlib.util.find_spec("torch") is None:
        return "needs torch (pip install 'systolic[torch]')"
    if 'backend="cuda"' in block:
        try:
            from systolic.gpu import runtime
            if not runtime.info().get("available"):
                return "needs a CUDA device (systolic gpu info)"
        except Exception as e:                    # noqa: BLE001 - any reason CUDA is unusable is a skip reason
            return f"needs CUDA: {e}"
    return None


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 4


def test_readme_python_blocks_run_in_order(capsys):
    ns: dict = {"__name__": "readme"}
    skipped = []
    for i, block in enumerate(BLOCKS):
        why = _missing(block)
        if why:
            skipped.append(f"block {i}: {why}")
            continue
        exec(compile(block, f"README.md python block {i}", "exec"), ns)
    out = capsys.readouterr().out
    assert "error: " in out and "distinct" in out.lower()     # the AMX tour shows its #UD, then goes on
    assert ns["c"].shape == (256, 128) and ns["d"].shape == (64, 128)
    if skipped:
        pytest.skip("; ".join(skipped))
