"""systolic: Intel's matrix engines made executable.

The AMX tile unit of Xeon CPUs (:mod:`systolic.amx`) and the XMX systolic arrays of
Intel GPUs (:mod:`systolic.xmx`), bit-exact, with the programming models written
for them. See README.md and DESIGN.md.
"""

__version__ = "0.1.0"

from . import errors, packing, types  # noqa: E402

__all__ = ["__version__", "errors", "types", "packing"]
