"""XMX: the GPU's systolic arrays (DPAS / DPASW) on a register-file model.

* :mod:`~systolic.xmx.platform`: platforms as data (dg2, pvc, bmg, lnl, xe3p);
* :mod:`~systolic.xmx.grf`: the byte-addressable register file;
* :mod:`~systolic.xmx.rules`: OPS_PER_CHAN, legal types, alignment;
* :mod:`~systolic.xmx.dpas`: DPAS/DPASW, the spec path (visa-DPAS.md pseudo-code);
* :mod:`~systolic.xmx.models`: the named float numerics models;
* :mod:`~systolic.xmx.kernels`: vectorised fast paths (proven equal by tests);
* :mod:`~systolic.xmx.pack`: logical A/B/C matrices <-> register images;
* :mod:`~systolic.xmx.gemm`: :func:`matmul`, a whole GEMM as a sequence of DPAS tiles.
"""

from __future__ import annotations

from .dpas import dpas, dpasw
from .grf import GRF
from .models import NumericsModel, get_model
from .platform import PLATFORMS, Platform, get_platform

__all__ = ["Platform", "PLATFORMS", "get_platform", "GRF", "dpas", "dpasw", "dpas_fast", "NumericsModel",
           "get_model", "matmul"]


def __getattr__(name):
    if name == "matmul":
        from .gemm import matmul
        return matmul
    if name == "dpas_fast":              # the older spelling of dpas(..., path="fast") (systolic.vocabulary)
        from ..vocabulary import deprecated
        from .kernels import dpas_fast
        deprecated("xmx.dpas_fast", "xmx.dpas(..., path='fast')", "systolic.xmx", stacklevel=2)
        return dpas_fast
    raise AttributeError(name)
