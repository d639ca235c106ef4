"""Who holds which element, at every layer: one :class:`Layout` per operand (DESIGN.md "layout").

The maps are data built from primitive parameters (see :mod:`systolic.layout.core`); the engines
(AMX tiles, DPAS registers), the programming models (OpenCL work-item components, joint_matrix slices) and the
explorer (``systolic layout ...``) all read these same objects.
"""

from __future__ import annotations

from .core import Layout, from_function

__all__ = ["Layout", "from_function"]
