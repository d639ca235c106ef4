"""PyTorch integration: run a model with AMX or XMX numerics (``emulate``) and see where its results move
(``compare``). Needs ``pip install 'systolic[torch]'``; docs/torch.md.

The package is named ``systolic.torch``; every module in it uses absolute imports (``import torch`` is the real
PyTorch, never this package), and ``import systolic`` does not import it.
"""

from __future__ import annotations

try:
    import torch as _torch  # absolute: the real PyTorch; only its presence is checked here
except ImportError as exc:  # pragma: no cover - exercised only without torch
    from systolic.errors import BackendUnavailable
    raise BackendUnavailable("systolic.torch needs PyTorch", rule="pip install 'systolic[torch]'",
                             values={"error": str(exc)}) from exc
del _torch

from systolic.torch.compare import CompareReport, compare
from systolic.torch.dispatch import HANDLED_OPS, EmulateMode, emulate
from systolic.torch.engines import Engine, parse_engine

__all__ = ["emulate", "compare", "CompareReport", "EmulateMode", "Engine", "parse_engine", "HANDLED_OPS"]
