"""Shared helpers of the systolic.torch tests: the engines under test and the direct engine call (the oracle).

The oracle does not use systolic.torch: it converts numpy float32 operands itself (ml_dtypes / numpy astype,
both round to nearest even), quantises int8 with numpy (np.rint: half to even) and calls systolic.amx.matmul /
systolic.xmx.matmul directly.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="systolic.torch needs PyTorch: pip install 'systolic[torch]'")

# No __init__.py in this directory on purpose: pytest puts tests/ on sys.path for the packaged test folders,
# and a *package* tests/torch would then shadow the real PyTorch. Module names here are unique (torch_*.py).
