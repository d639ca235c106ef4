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


def native_availability() -> tuple[bool, str]:
    try:
        from systolic.amx.native import availability
        return availability()
    except Exception as exc:  # the native module missing or broken is "unavailable", with the reason
        return False, f"{type(exc).__name__}: {exc}"


_NATIVE, _WHY = native_availability()


def native(f):
    """Marker ``native`` + skip where the CPU has no AMX or no tile-data permission."""
    return pytest.mark.native(pytest.mark.skipif(not _NATIVE, reason=f"native AMX unavailable: {_WHY}")(f))


def rand_bytes(rng, n):
    return rng.integers(0, 256, n, dtype=np.uint8)
