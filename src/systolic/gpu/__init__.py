"""``systolic.gpu``: the CUDA backend (CuPy kernels behind the engines' own API).

The engines keep their API: ``systolic.amx.matmul(..., backend="cuda")`` and
``systolic.xmx.matmul(..., backend="cuda")`` run here and return the same bits as the CPU path (see
docs/gpu.md). This package imports nothing heavy: CuPy is imported on first use, and its absence (or no
CUDA device, or a driver too old) is :class:`systolic.errors.BackendUnavailable`, never an ImportError.

>>> from systolic.gpu import availability
>>> ok, why = availability()      # (False, 'CuPy is not installed (...)') on a machine without CuPy
"""

from __future__ import annotations

from .intake import is_gpu_array
from .runtime import availability, info, require

__all__ = ["availability", "info", "is_gpu_array", "require", "resolve_backend"]

BACKENDS = ("auto", "cpu", "cuda")


def resolve_backend(backend: str, *arrays) -> str:
    """``"cpu"`` or ``"cuda"`` for an engine call: ``"auto"`` picks cuda when any input lives on a GPU.

    An unknown name is :class:`systolic.errors.InvalidValue`; ``"cuda"`` does not probe here (the kernels
    raise BackendUnavailable when they cannot run). The engines ask :mod:`systolic.backend_registry` the same
    question; this package is its ``cuda`` provider (:mod:`systolic.gpu.register`).
    """
    from ..backend_registry import resolve
    return resolve(backend, *arrays)
