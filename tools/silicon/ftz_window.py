"""Ask the silicon how TDPBF16PS flushes results in the FTZ window just below 2^-126.

SDM TDPBF16PS states FTZ=1 for the fp32 FMAs of the two chains. x86 detects tininess *after* rounding
(a result is tiny if, rounded to 24 bits with an unbounded exponent, it is below 2^-126). A result in
[2^-126 - 2^-150, 2^-126 - 2^-151) rounds to 2^-126 on the subnormal grid but is tiny after rounding, so the two
readings of "FTZ" differ there. Each column n of one TDPBF16PS (M = 1, K = 2 dwords, N = 16) is a case:

    even chain: FMA(0, a0, b0[n]) then FMA(acc, a2, b1[n]);  odd chain: a1 = a3 = 0

with a0*b0 = +-2^-126 and a2*b1 = a tiny product (or the other order). Run on a CPU with AMX:

    PYTHONPATH=src python3 tools/silicon/ftz_window.py --json tests/data/amx_silicon/ftz_window.json
"""

from __future__ import annotations

import argparse
import json
import platform

import ml_dtypes
import numpy as np


def bf16_bits(x: float) -> int:
    v = np.array([x], dtype=np.float64).astype(ml_dtypes.bfloat16)
    assert float(v[0]) == x, x  # every value used here is exact in bf16
    return int(v.view(np.uint16)[0])


def cases():
    """(name, a[4] bf16 bits, b0[n], b1[n]) for 16 columns; a is shared, so two programs are made."""
    progs = []
    mults = [-1.0, -1.25, -1.5, -1.75, -1.9921875, -2.0, -2.5, -3.0]
    # program 1: acc = +2^-126 first, then the tiny product (columns 0-7), mirrored sign (8-15)
    a = [2.0 ** -63, 0.0, 2.0 ** -75, 0.0]
    b0, b1, names = [], [], []
    for s in (1, -1):
        for mlt in mults:
            b0.append(s * 2.0 ** -63)
            b1.append(s * mlt * 2.0 ** -76)
            names.append(f"acc={'+' if s > 0 else '-'}2^-126 then {s * mlt}*2^-151")
    progs.append(("normal_then_tiny", a, b0, b1, names))
    # program 2: the tiny product first (acc = 0 + tiny -> flushed?), then +-2^-126
    a = [2.0 ** -75, 0.0, 2.0 ** -63, 0.0]
    b0 = [s * mlt * 2.0 ** -76 for s in (1, -1) for mlt in mults]
    b1 = [s * 2.0 ** -63 for s in (1, -1) for mlt in mults]
    names = [f"tiny {s * mlt}*2^-151 first, then {'+' if s > 0 else '-'}2^-126" for s in (1, -1) for mlt in mults]
    progs.append(("tiny_then_normal", a, b0, b1, names))
    return progs


def run(backend: str, a, b0, b1) -> list[int]:
    from replay import machine
    from systolic.amx import TileConfig
    m = machine(backend)
    m.ldtilecfg(TileConfig(palette=1, tiles={0: (1, 64), 1: (1, 8), 2: (2, 64)}))
    mem = np.zeros(4096, np.uint8)
    mem[0:8] = np.array([bf16_bits(x) for x in a], dtype="<u2").view(np.uint8)
    brow = np.zeros((2, 32), dtype="<u2")
    brow[0, 0::2] = [bf16_bits(x) for x in b0]
    brow[1, 0::2] = [bf16_bits(x) for x in b1]
    mem[1024:1024 + 128] = brow.view(np.uint8).reshape(-1)
    mem[2048:2048 + 64] = 0
    m.tileloadd(1, mem, 0, 64)
    m.tileloadd(2, mem, 1024, 64)
    m.tileloadd(0, mem, 2048, 64)
    m.tdpbf16ps(0, 1, 2)
    out = np.full(64, 0xEE, np.uint8)
    m.tilestored(0, out, 0, 64)
    m.tilerelease()
    return out.view("<u4").tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    from systolic.amx.native import availability
    ok, why = availability()
    rec = {"cpu": platform.processor(), "native": ok, "why": why, "programs": []}
    try:
        import llvmlite.binding as llvm
        rec["llvm_host_cpu"] = llvm.get_host_cpu_name()
    except Exception:
        pass
    for name, a, b0, b1, names in cases():
        entry = {"name": name, "a": a, "b0": b0, "b1": b1, "columns": names, "emulator": run("emulator", a, b0, b1)}
        if ok:
            entry["silicon"] = run("native", a, b0, b1)
        rec["programs"].append(entry)
        for i, n in enumerate(names):
            e = entry["emulator"][i]
            s = entry.get("silicon", [None] * 16)[i]
            print(f"{n:40s} emulator {e:#010x} silicon {s if s is None else hex(s)}"
                  f"{'' if s is None or s == e else '   <-- DIFFERS'}")
    with open(args.json, "w") as f:
        json.dump(rec, f, indent=1)


if __name__ == "__main__":
    main()
