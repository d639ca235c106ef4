"""systolic: Intel's matrix engines made executable.

The AMX tile unit of Xeon CPUs (:mod:`systolic.amx`) and the XMX systolic arrays of
Intel GPUs (:mod:`systolic.xmx`), bit-exact, with the programming models written
for them. See README.md and DESIGN.md.
"""

__version__ = "0.1.0"

from . import errors, packing, types  # noqa: E402
from . import layout as _layout  # noqa: E402


def _load_explorer() -> None:
    """The explorer (tools layer) registers layout.get / layout.explain when imported (systolic.layout.provide);
    the package root, above every layer, is where that wiring is named, on first use only."""
    from . import explorer  # noqa: F401


_layout.on_first_use(_load_explorer)

__all__ = ["__version__", "errors", "types", "packing"]
