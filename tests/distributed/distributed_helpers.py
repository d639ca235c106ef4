"""Helpers of the distributed tests."""

from __future__ import annotations

import filecmp
from pathlib import Path


def same_tree(a: Path, b: Path) -> list[str]:
    """Names of files that differ between two campaign directories (missing on either side included)."""
    na = sorted(p.name for p in Path(a).iterdir())
    nb = sorted(p.name for p in Path(b).iterdir())
    if na != nb:
        return sorted(set(na) ^ set(nb))
    _, mismatch, errors = filecmp.cmpfiles(a, b, na, shallow=False)
    return mismatch + errors
