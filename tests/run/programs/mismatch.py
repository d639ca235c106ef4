"""A program whose result differs from its oracle in one element (row 2, column 5)."""

import numpy as np

DEVICE = "pvc"


def main(device):
    want = np.arange(48, dtype=np.float32).reshape(6, 8)
    got = want.copy()
    got[2, 5] = -0.0 if want[2, 5] == 0 else want[2, 5] + 0.5
    return {"result": got, "oracle": want}
