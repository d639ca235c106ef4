"""Who holds which element, at every layer: one :class:`Layout` per operand (DESIGN.md "layout").

The maps are data built from primitive parameters (see :mod:`systolic.layout.core`): :mod:`.amx` (AMX tiles,
VNNI B), :mod:`.dpas` (DPAS GRF operands, DPASW's split), and the programming models' own modules beside them
(OpenCL work-item components, joint_matrix slices); :mod:`.picture` draws any Layout as SVG. The engines (AMX tiles, DPAS registers), the programming
models and the explorer (``systolic layout ...``) all read these same objects.

The query verbs live in the tools layer (:mod:`systolic.explorer`) and are reachable from here, imported at call
time so this package keeps importing nothing above :mod:`systolic.types`::

    from systolic import layout
    L = layout.get("dpas", "b", platform="pvc", precision="bf16")
    layout.where(L, 3, 5)      # {'grf': 1, 'dword': 5, 'bits': [16, 31], 'lane': 5, ...}
"""

from __future__ import annotations

from .core import Layout, from_function

__all__ = ["Layout", "from_function", "get", "detail", "where", "what", "table", "explain", "svg", "mma_svg"]

_VERBS = {"get": "resolve", "detail": "detail", "where": "where", "what": "what", "table": "table",
          "explain": "explain", "svg": "layout_svg", "mma_svg": "mma_svg"}


def __getattr__(name):
    if name in ("svg", "mma_svg"):        # the pictures read only Layouts: they live here (.picture)
        from . import picture
        return getattr(picture, _VERBS[name])
    if name in _VERBS:
        import importlib
        explorer = importlib.import_module("systolic.explorer")  # tools layer, loaded on first use only
        return getattr(explorer, _VERBS[name])
    raise AttributeError(f"module 'systolic.layout' has no attribute {name!r}")
