"""Turn a recorder output directory into the committed vector set under tests/data/amx_silicon/.

    PYTHONPATH=src:tools/silicon python3 tools/silicon/subset.py REC_DIR tests/data/amx_silicon --dot 300 --other 100

Keeps the first ``--dot`` / ``--other`` operations of each family from ``full.npz`` and adds, for every
output array, its image before the program ran (``<family>/<key>_before``, regenerated from the seeds and
checked against the recorded inputs), so a replay needs nothing but this file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vectors as V  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rec")
    ap.add_argument("dest")
    ap.add_argument("--dot", type=int, default=300)
    ap.add_argument("--other", type=int, default=100)
    a = ap.parse_args()
    f = np.load(os.path.join(a.rec, "full.npz"))
    out = {}
    for fam in V.FAMILIES:
        n = a.dot if fam.startswith("dot:") else a.other
        kind = V.kind_of(fam)
        ops = [V.generate(fam, i) for i in range(n)]
        for k in {key.split("/", 1)[1] for key in f.files if key.startswith(fam + "/")}:
            out[f"{fam}/{k}"] = f[f"{fam}/{k}"][:n]
        for k in V.INPUTS[kind]:
            if k in V.OUTPUTS[kind]:
                continue
            regen = np.stack([np.asarray(o[k]) for o in ops])
            if not np.array_equal(regen.astype(out[f"{fam}/{k}"].dtype), out[f"{fam}/{k}"]):
                sys.exit(f"generator drift in {fam}/{k}: regenerated inputs differ from the recorded ones")
        for k in V.OUTPUTS[kind]:
            out[f"{fam}/{k}_before"] = np.stack([np.asarray(o[k]) for o in ops])
    os.makedirs(a.dest, exist_ok=True)
    np.savez_compressed(os.path.join(a.dest, "full.npz"), **out)
    for name in ("digests.npz", "meta.json"):
        shutil.copy(os.path.join(a.rec, name), os.path.join(a.dest, name))
    print({k: os.path.getsize(os.path.join(a.dest, k)) for k in os.listdir(a.dest)})


if __name__ == "__main__":
    main()
