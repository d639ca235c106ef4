"""Compare a TileMachine backend with the recorded silicon digests (all or some operations of each family).

    PYTHONPATH=src:tools/silicon python3 tools/silicon/compare.py [--backend emulator] [--ops N] [--workers W]

Regenerates each operation from its seed, checks each chunk's input digest (generator drift), replays it
on the backend and compares the 8-byte output digest with the silicon's. Prints agreement per family and
the first mismatching operation numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replay as R  # noqa: E402
import vectors as V  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "amx_silicon")


def check_range(family: str, start: int, stop: int, silicon: np.ndarray, backend: str = "emulator",
                chunk_digest: bytes | None = None):
    """(agree, mismatches: list of op numbers, errors: {op: message}, drift: bool) for ops [start, stop)."""
    m = R.machine(backend)
    agree, bad, errors = 0, [], {}
    h = hashlib.blake2b(digest_size=8)
    for i in range(start, stop):
        op = V.generate(family, i)
        h.update(V.input_digest(family, op))
        try:
            got = R.replay(family, op, m)
        except Exception as e:  # noqa: BLE001 - a raised error is a disagreement with silicon, reported
            errors[i] = f"{type(e).__name__}: {e}"
            m = R.machine(backend)
            continue
        d = V.digest(got[k] for k in V.OUTPUTS[V.kind_of(family)])
        if d == silicon[i - start].tobytes():
            agree += 1
        else:
            bad.append(i)
    drift = chunk_digest is not None and h.digest() != chunk_digest
    return agree, bad, errors, drift


def _job(args):
    family, start, stop, sil, backend, cd = args
    return family, start, check_range(family, start, stop, sil, backend, cd)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="emulator")
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--start", type=int, default=0, help="operation number of the first digest in the file")
    ap.add_argument("--families", default=",".join(V.FAMILIES))
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--data", default=DATA)
    a = ap.parse_args(argv)
    dig = np.load(os.path.join(a.data, "digests.npz"))
    jobs = []
    for fam in a.families.split(","):
        out, ind = dig[f"{fam}/out"], dig[f"{fam}/in"]
        for s in range(0, min(a.ops, len(out)), 1000):
            e = min(s + 1000, a.ops, len(out))
            jobs.append((fam, a.start + s, a.start + e, out[s:e], a.backend,
                         ind[s // 1000].tobytes() if e - s == 1000 else None))
    res: dict = {}
    t0 = time.time()
    with ProcessPoolExecutor(a.workers) as pool:
        for fam, start, (agree, bad, errors, drift) in pool.map(_job, jobs):
            r = res.setdefault(fam, {"agree": 0, "total": 0, "bad": [], "errors": {}, "drift": 0})
            r["agree"] += agree
            r["total"] += agree + len(bad) + len(errors)
            r["bad"] += bad
            r["errors"].update(errors)
            r["drift"] += int(drift)
    for fam, r in res.items():
        pct = 100.0 * r["agree"] / max(1, r["total"])
        print(f"{fam:18s} {r['agree']:7d}/{r['total']:<7d} agree ({pct:.4f}%)  mismatches {len(r['bad'])} "
              f"{sorted(r['bad'])[:10]}  errors {len(r['errors'])} {list(r['errors'].items())[:2]}  "
              f"drifted chunks {r['drift']}")
    print(f"{time.time() - t0:.1f}s")
    return res


if __name__ == "__main__":
    main()
