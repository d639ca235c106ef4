"""Shared fixtures of the native-AMX tests: the silicon tools on sys.path, and the ``native`` skip rule."""

from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SILICON_TOOLS = os.path.join(ROOT, "tools", "silicon")
DATA = os.path.join(ROOT, "tests", "data", "amx_silicon")
if SILICON_TOOLS not in sys.path:
    sys.path.append(SILICON_TOOLS)  # after everything else: the tool modules have plain names


def native_available() -> tuple[bool, str]:
    from systolic.amx.native import availability
    return availability()


NATIVE, NATIVE_WHY = native_available()

#: tests that execute AMX instructions: they run where the CPU has AMX and Linux grants tile data
needs_native = [pytest.mark.native, pytest.mark.skipif(not NATIVE, reason=f"native AMX unavailable: {NATIVE_WHY}")]
