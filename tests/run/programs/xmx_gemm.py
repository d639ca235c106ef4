"""A 64x64x64 bf16 GEMM on XMX: D = A @ B as chained DPAS tiles (systolic.xmx.matmul).

The inputs are small integers, so every product and partial sum is exact in fp32 and the oracle is plain integer
arithmetic.
"""

import ml_dtypes
import numpy as np

DEVICE = "pvc"
DEVICES = ("pvc", "bmg", "lnl", "dg2")


def main(device: str) -> dict:
    from systolic import xmx
    rng = np.random.default_rng(7)
    a = rng.integers(-8, 9, (64, 64))
    b = rng.integers(-8, 9, (64, 64))
    d = xmx.matmul(a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16), device=device)
    return {"result": d, "oracle": (a @ b).astype(np.float32), "note": "inputs are integers in [-8, 8]"}
