"""The CUDA backend as a provider of the engines' ``backend=`` registry (:mod:`systolic.backend_registry`).

:func:`register` is the ``cuda`` entry point of the group ``systolic.backends`` (pyproject.toml) and, for a
source checkout without installed metadata, the loader the package root (``systolic/__init__.py``) hands
:func:`systolic.backend_registry.provide`: the engines find the kernels through it and never import this
package. Registering needs no GPU and no CuPy: the kernels check their arguments first, then raise
:class:`systolic.errors.BackendUnavailable` when the backend cannot run.
"""

from __future__ import annotations

from .. import backend_registry

__all__ = ["register"]


def register() -> None:
    """Fill the registry: ``amx.matmul`` and ``xmx.matmul`` on ``cuda``, and the ``auto`` detector (an input
    that lives on a CUDA device)."""
    from . import amx_kernels, xmx_kernels
    from .intake import is_gpu_array
    backend_registry.register_detector("cuda", is_gpu_array)
    backend_registry.register("amx.matmul", "cuda", amx_kernels.matmul)
    backend_registry.register("xmx.matmul", "cuda", xmx_kernels.matmul)
