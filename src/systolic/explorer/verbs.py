"""The query verbs, re-exported: they read only a :class:`~systolic.layout.Layout`, so they live in the layout
layer (:mod:`systolic.layout.verbs`) and the explorer hands them on under its own name."""

from __future__ import annotations

from ..layout.verbs import FORMATS, cell_label, detail, table, what, where

__all__ = ["detail", "where", "what", "table", "cell_label", "FORMATS"]
