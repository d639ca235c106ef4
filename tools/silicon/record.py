"""Record AMX silicon vectors: run the families of ``vectors.py`` on real AMX and save what came out.

Usage (on a CPU with AMX; the repository root as working directory):

    PYTHONPATH=src:tools/silicon python3 tools/silicon/record.py --ops 100000 --full 1000 --out DIR

Writes to DIR:
  ``digests.npz``  for every family: ``<family>/out`` (n, 8) uint8 = BLAKE2b-8 of the outputs of each
                   operation, ``<family>/in`` (n/1000, 8) = BLAKE2b-8 of each chunk of 1000 generated inputs
                   (so a replay can tell generator drift from an emulator mismatch);
  ``full.npz``     the first ``--full`` operations of every family with all inputs and outputs;
  ``meta.json``    CPU model string, flags, versions, date, seeds, counts, run time.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vectors as V  # noqa: E402

CHUNK = 1000


def _gen_chunk(args):
    family, start, stop = args
    ops = [V.generate(family, i) for i in range(start, stop)]
    batch = {k: np.stack([np.asarray(o[k]) for o in ops]) for k in ops[0]}
    for k, v in batch.items():
        if v.dtype.kind in "iu" and v.ndim == 1:
            batch[k] = v.astype(np.int64)
    h = hashlib.blake2b(digest_size=8)
    for o in ops:
        h.update(V.input_digest(family, o))
    return start, batch, h.digest()


def _out_digests(family, batch):
    keys = V.OUTPUTS[V.kind_of(family)]
    n = len(batch[keys[0]])
    return np.frombuffer(b"".join(V.digest(batch[k][j] for k in keys) for j in range(n)), np.uint8).reshape(n, 8)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--start", type=int, default=0, help="first operation number (soak runs past the committed set)")
    ap.add_argument("--full", type=int, default=500, help="operations kept in full.npz per dot family")
    ap.add_argument("--full-other", type=int, default=200, help="operations kept in full.npz per other family")
    ap.add_argument("--out", required=True)
    ap.add_argument("--families", default=",".join(V.FAMILIES))
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-smoke", action="store_true", help="skip the per-family crash check in a child process")
    a = ap.parse_args(argv)

    from systolic.host import cpu_flags, cpu_model_name, request_tile_permission
    perm = request_tile_permission()
    if not perm.granted:
        sys.exit(f"no AMX tile data: {perm.reason}")
    import native_batch
    t0 = time.time()
    kern = native_batch.Kernels()
    print(f"compiled batch kernels in {time.time() - t0:.2f}s", flush=True)

    os.makedirs(a.out, exist_ok=True)
    digests, full, timing = {}, {}, {}
    fams = a.families.split(",")
    crashed = {}
    if not a.no_smoke:
        # a family whose program the CPU refuses (#UD -> SIGILL, #GP -> SIGSEGV) must not take the others down:
        # run its first 200 operations in a child process first
        import subprocess
        import tempfile
        for fam in list(fams):
            with tempfile.TemporaryDirectory() as tmp:
                r = subprocess.run([sys.executable, os.path.abspath(__file__), "--ops", "200", "--full", "0",
                                    "--out", tmp, "--families", fam, "--no-smoke", "--workers", "1"],
                                   capture_output=True, text=True)
            if r.returncode != 0:
                crashed[fam] = {"returncode": r.returncode, "stderr": r.stderr[-2000:]}
                fams.remove(fam)
                print(f"SMOKE FAILED {fam}: rc={r.returncode} {r.stderr[-500:]}", flush=True)
    with ProcessPoolExecutor(a.workers) as pool:
        for fam in fams:
            t1 = time.time()
            outs, ins, native_s = [], [], 0.0
            end = a.start + a.ops
            jobs = [(fam, s, min(s + CHUNK, end)) for s in range(a.start, end, CHUNK)]
            for start, batch, in_dig in pool.map(_gen_chunk, jobs):
                t2 = time.time()
                kern.run(fam, batch)
                native_s += time.time() - t2
                outs.append(_out_digests(fam, batch))
                ins.append(np.frombuffer(in_dig, np.uint8))
                nfull = a.full if fam.startswith("dot:") else a.full_other
                if start < nfull:
                    m = min(nfull - start, len(batch["cfg" if "cfg" in batch else "cfg1"]))
                    for k, v in batch.items():
                        full.setdefault(f"{fam}/{k}", []).append(v[:m])
            digests[f"{fam}/out"] = np.concatenate(outs)
            digests[f"{fam}/in"] = np.stack(ins)
            timing[fam] = {"total_s": round(time.time() - t1, 2), "native_s": round(native_s, 3)}
            print(f"{fam}: {a.ops} ops, native {native_s:.3f}s, total {time.time() - t1:.1f}s", flush=True)
    np.savez_compressed(os.path.join(a.out, "digests.npz"), **digests)
    if full:
        np.savez_compressed(os.path.join(a.out, "full.npz"), **{k: np.concatenate(v) for k, v in full.items()})
    import llvmlite
    meta = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu_model": cpu_model_name(), "amx_flags": sorted(f for f in cpu_flags() if f.startswith("amx")),
        "kernel": platform.release(), "python": platform.python_version(), "numpy": np.__version__,
        "llvmlite": llvmlite.__version__, "ops_per_family": a.ops, "first_op": a.start, "full_per_family": a.full,
        "full_per_other_family": a.full_other, "families": fams, "crashed": crashed, "seeds": {f: hex(V.FAMILY_SEED[f]) for f in fams}, "timing": timing,
        "command": "PYTHONPATH=src:tools/silicon python3 tools/silicon/record.py " + " ".join(
            argv if argv is not None else sys.argv[1:]),
    }
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    print(json.dumps(meta, indent=2))


if __name__ == "__main__":
    main()
