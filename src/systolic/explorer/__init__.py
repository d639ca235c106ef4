"""The layout explorer (tools layer): name resolution, query verbs, tables, pictures and ``explain``.

The verbs are named after AMD's matrix instruction calculator: :func:`detail` (shapes, K per step, operand
sizes, alignment), :func:`where` (element -> holder), :func:`what` (holder -> elements), :func:`table` (the whole
matrix either way, as text, markdown, CSV or JSON) and :func:`explain` (the products and the order and rounding
of the sums behind one output element, replayed by the engines). Pictures (:func:`svg`, :func:`mma_svg`) follow
CuTe's arrangement. Every verb reads the one :class:`systolic.layout.Layout` of the operand; nothing here holds
a mapping of its own. See docs/layouts.md.
"""

from __future__ import annotations

from .resolve import LAYERS, resolve
from .verbs import detail, table, what, where

__all__ = ["LAYERS", "resolve", "detail", "where", "what", "table", "explain", "svg", "mma_svg", "mma_layouts"]


def __getattr__(name):
    if name in ("svg", "mma_svg"):
        from . import svg as _svg
        return getattr(_svg, {"svg": "layout_svg", "mma_svg": "mma_svg"}[name])
    if name == "explain":
        from .explain import explain
        return explain
    if name == "mma_layouts":
        from .resolve import mma_layouts
        return mma_layouts
    raise AttributeError(name)
