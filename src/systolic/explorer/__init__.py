"""The layout explorer (tools layer): name resolution, query verbs, tables, pictures and ``explain``.

The verbs are named after AMD's matrix instruction calculator: :func:`detail` (shapes, K per step, operand
sizes, alignment), :func:`where` (element -> holder), :func:`what` (holder -> elements), :func:`table` (the whole
matrix either way, as text, markdown, CSV or JSON) and :func:`explain` (the products and the order and rounding
of the sums behind one output element, replayed by the engines). Pictures (:func:`svg`, :func:`mma_svg`) follow
CuTe's arrangement. Every verb reads the one :class:`systolic.layout.Layout` of the operand; nothing here holds
a mapping of its own. See docs/layouts.md.
"""

from __future__ import annotations

from .. import layout as _layout
from .explain import explain, format_explain
from .resolve import LAYERS, mma_layouts, resolve
from .svg import layout_svg, mma_svg
from .verbs import detail, table, what, where

# the verbs that need the engines and programming models serve systolic.layout too: names -> Layout (get) and
# the replay of one output element (explain); systolic/__init__ loads this package on their first use
_layout.provide(get=resolve, explain=explain)

__all__ = ["LAYERS", "resolve", "mma_layouts", "detail", "where", "what", "table", "explain", "format_explain",
           "layout_svg", "mma_svg"]
