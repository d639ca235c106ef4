"""Layout pictures as SVG text: the renderer lives in :mod:`systolic.layout.picture` (it reads only Layouts, and
``Layout._repr_svg_`` uses it); re-exported here for the explorer's verbs and ``systolic layout show --svg``."""

from __future__ import annotations

from ..layout.picture import cell_label, cell_width, color_keys, layout_svg, mma_svg

__all__ = ["layout_svg", "mma_svg", "color_keys", "cell_label", "cell_width"]
