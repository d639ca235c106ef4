"""The query verbs of the explorer: :mod:`systolic.layout.verbs` (they read a Layout only, so they live there)."""

from __future__ import annotations

from ..layout.verbs import FORMATS, cell_label, detail, packing, table, what, where

__all__ = ["detail", "where", "what", "table", "packing", "cell_label", "FORMATS"]
