"""Turn a recorder output directory into the committed vector set under tests/data/amx_silicon/.

    PYTHONPATH=src:tools/silicon python3 tools/silicon/subset.py REC_DIR [REC_DIR2 ...] tests/data/amx_silicon \
        --dot 300 --other 100

Several recordings (e.g. the base families and a later one of more families) are merged: digests and full
sets of all of them; the first one's meta.json stays ``meta.json``, the others' become
``meta_<name of their directory>.json``.

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
    ap.add_argument("paths", nargs="+", help="recording directories, then the destination")
    ap.add_argument("--dot", type=int, default=300)
    ap.add_argument("--other", type=int, default=100)
    a = ap.parse_args()
    recs, a.dest = a.paths[:-1], a.paths[-1]

    class _Merged:
        def __init__(self, files):
            self.data = {}
            for fl in files:
                z = np.load(fl)
                self.data.update({k: z[k] for k in z.files})
            self.files = list(self.data)

        def __getitem__(self, k):
            return self.data[k]
    f = _Merged([os.path.join(r, "full.npz") for r in recs])
    digests = _Merged([os.path.join(r, "digests.npz") for r in recs])
    out = {}
    for fam in V.FAMILIES:
        if not any(k.startswith(fam + "/") for k in f.files):
            continue
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
    np.savez_compressed(os.path.join(a.dest, "digests.npz"), **digests.data)
    for j, r in enumerate(recs):
        name = "meta.json" if j == 0 else f"meta_{os.path.basename(os.path.normpath(r))}.json"
        shutil.copy(os.path.join(r, "meta.json"), os.path.join(a.dest, name))
    print({k: os.path.getsize(os.path.join(a.dest, k)) for k in os.listdir(a.dest)})


if __name__ == "__main__":
    main()
