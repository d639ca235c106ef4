"""Who holds which element, at every layer: one :class:`Layout` per operand (DESIGN.md "layout").

The maps are data built from primitive parameters (see :mod:`systolic.layout.core`): :mod:`.amx` (AMX tiles,
VNNI B), :mod:`.dpas` (DPAS GRF operands, DPASW's split), and the programming models' own modules beside them
(OpenCL work-item components, joint_matrix slices); :mod:`.picture` draws any Layout as SVG. The engines (AMX tiles, DPAS registers), the programming
models and the explorer (``systolic layout ...``) all read these same objects.

The pictures read only Layouts and live here (:mod:`.picture`). The query verbs (``get``: names -> Layout through
the engines and the programming models; ``explain``: a replay on the engines; ``detail``, ``where``, ``what``,
``table``) are the explorer's (tools layer): this package imports it at call time, in plain sight, the one
upward edge of this layer that tests/test_layering.py allows by name::

    from systolic import layout
    L = layout.get("dpas", "b", device="pvc", precision="bf16")
    layout.where(L, 3, 5)      # {'grf': 1, 'dword': 5, 'bits': [16, 31], 'lane': 5, ...}
"""

from __future__ import annotations

from .core import Layout, from_function

__all__ = ["Layout", "from_function", "get", "detail", "where", "what", "table", "explain", "svg", "mma_svg"]

#: the explorer's verbs, by their names there
_EXPLORER = {"get": "resolve", "detail": "detail", "where": "where", "what": "what", "table": "table",
             "explain": "explain"}


def __getattr__(name):
    if name in ("svg", "mma_svg"):        # the pictures read only Layouts: they live here (.picture)
        from . import picture
        return getattr(picture, {"svg": "layout_svg", "mma_svg": "mma_svg"}[name])
    if name in _EXPLORER:
        from .. import explorer           # tools layer, loaded on first use only (ALLOWED_UP in test_layering)
        return getattr(explorer, _EXPLORER[name])
    raise AttributeError(f"module 'systolic.layout' has no attribute {name!r}")
