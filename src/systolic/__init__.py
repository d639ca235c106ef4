"""systolic: Intel's matrix engines made executable.

The AMX tile unit of Xeon CPUs (:mod:`systolic.amx`) and the XMX systolic arrays of
Intel GPUs (:mod:`systolic.xmx`), bit-exact, with the programming models written
for them. See README.md and DESIGN.md.
"""

__version__ = "0.1.0"

from . import backend_registry as _backend_registry, errors, packing, types  # noqa: E402
from . import layout as _layout  # noqa: E402


def _cuda_provider() -> None:
    """The ``cuda`` backend's loader (imported on first use only: the engines' numpy calls never load it)."""
    from .gpu.register import register
    register()


# the package root sits above every layer: it hands the engines' backend registry the built-in providers, so no
# layer names a higher one (tests/test_layering.py); an installed systolic finds the same function through the
# entry-point group systolic.backends (pyproject.toml), which wins where both name a backend
_backend_registry.provide("cuda", _cuda_provider, source="systolic.gpu.register:register")


def _load_explorer() -> None:
    """The explorer (tools layer) registers layout.get / layout.explain when imported (systolic.layout.provide);
    the package root, above every layer, is where that wiring is named, on first use only."""
    from . import explorer  # noqa: F401


_layout.on_first_use(_load_explorer)

__all__ = ["__version__", "errors", "types", "packing"]
