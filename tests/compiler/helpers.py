"""Shared helpers for the tile compiler tests."""

import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "amx"
SEED = pathlib.Path("/work/shared/specs/amx-llvm-programming-model.md")
if not SEED.exists():  # the spec may live beside the repository in CI
    SEED = ROOT.parent / "shared" / "specs" / "amx-llvm-programming-model.md"


def example(name: str) -> str:
    return (EXAMPLES / name).read_text()


def has_native_amx() -> bool:
    try:
        from systolic.amx.native import require_native
        require_native()
        return True
    except Exception:
        return False


native = pytest.mark.skipif(not has_native_amx(), reason="needs a CPU with AMX and tile-data permission")


def rand_bytes(rng, n):
    return rng.integers(0, 256, n, dtype=np.uint8)
