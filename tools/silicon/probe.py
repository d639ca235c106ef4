"""First look at a machine: CPU, AMX flags, Linux tile-data permission, LLVM, torch/oneDNN, and one
TDPBSSD checked against exact integer arithmetic.

    PYTHONPATH=src:tools/silicon python3 tools/silicon/probe.py
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    from systolic import host
    print(json.dumps(host.summary(), indent=1, default=str))
    print("cpu count", os.cpu_count(), "affinity", len(os.sched_getaffinity(0)))
    import llvmlite.binding as llvm
    print("llvm host cpu", llvm.get_host_cpu_name())
    try:
        import torch
        print("torch", torch.__version__, "threads", torch.get_num_threads(), "mkldnn", torch.backends.mkldnn.is_available())
        print("\n".join(l for l in torch.__config__.show().splitlines() if "oneDNN" in l or "CPU capability" in l))
    except Exception as e:  # noqa: BLE001
        print("torch unavailable", e)
    if not host.request_tile_permission().granted:
        print("NO TILE PERMISSION", host.request_tile_permission())
        return
    import native_batch
    import vectors as V
    k = native_batch.Kernels()
    ops = [V.gen_dot("tdpbssd", i) for i in range(50)]
    batch = {key: np.stack([np.asarray(o[key]) for o in ops]) for key in ops[0]}
    k.run("dot:tdpbssd", batch)
    bad = 0
    for j, o in enumerate(ops):
        m, kk, n = o["m"], o["k"], o["n"]
        a = o["a"][:m, :4 * kk].view(np.int8).astype(np.int64)
        b = o["b"][:kk, :4 * n].view(np.int8).astype(np.int64).reshape(kk, n, 4)
        c = o["c"][:m, :4 * n].copy().view(np.int32).astype(np.int64)
        ref = c + np.einsum("mkq,knq->mn", a.reshape(m, kk, 4), b)
        ref = ((ref + 2**31) % 2**32 - 2**31).astype(np.int32)
        got = batch["out"][j][:m, :4 * n].copy().view(np.int32)
        bad += int(not np.array_equal(ref, got))
        untouched = batch["out"][j].copy()
        untouched[:m, :4 * n] = o["out"][0, 0]
        bad += int(not np.all(untouched == o["out"][0, 0]))
    print("tdpbssd vs exact int arithmetic: 50 ops, mismatches:", bad)


if __name__ == "__main__":
    main()
