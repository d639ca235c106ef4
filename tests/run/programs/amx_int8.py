"""A 40x24x96 int8 GEMM on AMX (systolic.amx.matmul), edge tiles included; oracle: int64 numpy, wrapped mod 2^32."""

import numpy as np

DEVICE = "spr"
DEVICES = ("spr", "gnr")


def main(device):
    from systolic.amx import matmul
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (40, 96), dtype=np.int8)
    b = rng.integers(-128, 128, (96, 24), dtype=np.int8)
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    return {"result": matmul(a, b, device=device), "oracle": want}
