"""Who holds which element, at every layer: one :class:`Layout` per operand (DESIGN.md "layout").

The maps are data built from primitive parameters (see :mod:`systolic.layout.core`): :mod:`.amx` (AMX tiles,
VNNI B), :mod:`.dpas` (DPAS GRF operands, DPASW's split), and the programming models' own modules beside them
(OpenCL work-item components, joint_matrix slices); :mod:`.picture` draws any Layout as SVG. The engines (AMX tiles, DPAS registers), the programming
models and the explorer (``systolic layout ...``) all read these same objects.

The verbs that read a Layout only (``detail``, ``where``, ``what``, ``table``: :mod:`.verbs`) and the pictures
(:mod:`.picture`) live here. The two that need the engines and the programming models (``get``: names ->
Layout; ``explain``: a replay on the engines) are the explorer's (tools layer): it registers them here with
:func:`provide` when it is imported, and ``systolic/__init__`` names the loader that imports it on their first
use (:func:`on_first_use`), so this package imports nothing above it::

    from systolic import layout
    L = layout.get("dpas", "b", device="pvc", precision="bf16")
    layout.where(L, 3, 5)      # {'grf': 1, 'dword': 5, 'bits': [16, 31], 'lane': 5, ...}
"""

from __future__ import annotations

from collections.abc import Callable

from .core import Layout, from_function
from .verbs import detail, table, what, where

__all__ = ["Layout", "from_function", "get", "detail", "where", "what", "table", "explain", "svg", "mma_svg",
           "provide", "on_first_use"]

#: the verbs a higher layer provides (get, explain), by name
_PROVIDED: dict[str, Callable] = {}
_PROVIDABLE = ("get", "explain")
_loader: list[Callable[[], None]] = []


def provide(**verbs: Callable) -> None:
    """Register the verbs a higher layer implements (``get``, ``explain``; the explorer calls this)."""
    unknown = sorted(set(verbs) - set(_PROVIDABLE))
    if unknown:
        raise AttributeError(f"systolic.layout has no provided verb {unknown}; providable: {_PROVIDABLE}")
    _PROVIDED.update(verbs)


def on_first_use(loader: Callable[[], None]) -> None:
    """``loader()`` runs the first time a provided verb is asked for before anything provided it (systolic's
    package init names the explorer's import)."""
    _loader[:] = [loader]


def __getattr__(name):
    if name in ("svg", "mma_svg"):        # the pictures read only Layouts: they live here (.picture)
        from . import picture
        return getattr(picture, {"svg": "layout_svg", "mma_svg": "mma_svg"}[name])
    if name in _PROVIDABLE:
        if name not in _PROVIDED and _loader:
            _loader[0]()
        if name in _PROVIDED:
            return _PROVIDED[name]
    raise AttributeError(f"module 'systolic.layout' has no attribute {name!r}")
