"""Ask the silicon about the edge rules: which programs fault (#UD -> SIGILL, #GP -> SIGSEGV) and what the
others do. Each case runs in its own child process, so a fault only ends that child.

    PYTHONPATH=src:tools/silicon python3 tools/silicon/quirks.py [--json FILE]

A case is a list of steps over a 64-byte config image and 16x64-byte buffers; the child prints the
STTILECFG image and the stored tile (hex) when it completes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vectors import make_cfg  # noqa: E402


def cfg_hex(palette, start_row, tiles, patch=None):
    c = make_cfg(palette, start_row, tiles)
    for k, v in (patch or {}).items():
        c[k] = v
    return c.tobytes().hex()


# name -> (cfg hex, steps); steps are strings "op tile..." over buffers A (random), OUT (0xEE)
CASES = {
    "baseline_load_store": (cfg_hex(1, 0, {0: (4, 16)}), ["load 0", "sttilecfg", "store 0"]),
    "load_start_row_eq_rows": (cfg_hex(1, 4, {0: (4, 16)}), ["load 0", "sttilecfg", "store 0"]),
    "load_start_row_gt_rows": (cfg_hex(1, 9, {0: (4, 16)}), ["load 0", "sttilecfg", "store 0"]),
    "store_start_row_3": (cfg_hex(1, 3, {0: (8, 16)}), ["store 0", "sttilecfg"]),
    "load_colsb_not_mult4": (cfg_hex(1, 0, {0: (4, 6)}), ["load 0", "store 0"]),
    "load_unconfigured_tile": (cfg_hex(1, 0, {0: (4, 16)}), ["load 1"]),
    "zero_unconfigured_tile": (cfg_hex(1, 0, {0: (4, 16)}), ["zero 1", "sttilecfg"]),
    "zero_colsb_not_mult4": (cfg_hex(1, 0, {0: (4, 6)}), ["zero 0", "sttilecfg"]),
    "ldtilecfg_start_row_16": (cfg_hex(1, 16, {0: (4, 16)}), ["sttilecfg"]),
    "ldtilecfg_start_row_255": (cfg_hex(1, 255, {0: (4, 16)}), ["sttilecfg"]),
    "ldtilecfg_reserved_byte2": (cfg_hex(1, 0, {0: (4, 16)}, {2: 1}), ["sttilecfg"]),
    "ldtilecfg_reserved_byte63": (cfg_hex(1, 0, {0: (4, 16)}, {63: 1}), ["sttilecfg"]),
    "ldtilecfg_colsb_65": (cfg_hex(1, 0, {0: (4, 65)}), ["sttilecfg"]),
    "ldtilecfg_rows_17": (cfg_hex(1, 0, {0: (17, 16)}), ["sttilecfg"]),
    "ldtilecfg_rows_only": (cfg_hex(1, 0, {0: (4, 0)}), ["sttilecfg"]),
    "ldtilecfg_palette_2": (cfg_hex(2, 0, {0: (4, 16)}), ["sttilecfg"]),
    "ldtilecfg_palette0_start_row": (cfg_hex(0, 5, {}), ["sttilecfg"]),
    "ldtilecfg_palette0_nonzero_rest": (cfg_hex(0, 0, {0: (4, 16)}), ["sttilecfg"]),
    "palette1_no_tiles": (cfg_hex(1, 0, {}), ["sttilecfg"]),
    "tdpbssd_start_row_2": (cfg_hex(1, 2, {0: (4, 16), 1: (4, 16), 2: (4, 16)}),
                            ["tdpbssd 0 1 2", "sttilecfg", "store 0"]),
    "tdpbssd_dst_eq_src1": (cfg_hex(1, 0, {0: (4, 16), 1: (4, 16), 2: (4, 16)}), ["tdpbssd 0 0 2"]),
    "tdpbssd_k_mismatch": (cfg_hex(1, 0, {0: (4, 16), 1: (4, 16), 2: (3, 16)}), ["tdpbssd 0 1 2"]),
    "tdpbssd_colsb_not_mult4": (cfg_hex(1, 0, {0: (4, 18), 1: (4, 16), 2: (4, 18)}), ["tdpbssd 0 1 2"]),
    "tdpbf16ps_dst_rows_lt_src1": (cfg_hex(1, 0, {0: (3, 16), 1: (4, 16), 2: (4, 16)}), ["tdpbf16ps 0 1 2"]),
    "tilerelease_then_sttilecfg": (cfg_hex(1, 0, {0: (4, 16)}), ["release", "sttilecfg"]),
    "tilezero_start_row_3": (cfg_hex(1, 3, {0: (8, 16)}), ["zero 0", "sttilecfg", "store 0"]),
    "sttilecfg_keeps_start_row": (cfg_hex(1, 5, {0: (8, 16)}), ["sttilecfg"]),
    "load_then_store_start_row_2": (cfg_hex(1, 2, {0: (8, 16), 1: (8, 16)}), ["load 0", "store 1", "sttilecfg"]),
    "ldtilecfg_colsb_high_byte": (cfg_hex(1, 0, {0: (4, 0x104)}), ["sttilecfg"]),
    "ldtilecfg_unused_tile_rows_only": (cfg_hex(1, 0, {0: (4, 16), 7: (2, 0)}), ["sttilecfg"]),
    "tdpbssd_n_mismatch": (cfg_hex(1, 0, {0: (4, 16), 1: (4, 16), 2: (4, 32)}), ["tdpbssd 0 1 2"]),
    "tdpbssd_src1_eq_src2": (cfg_hex(1, 0, {0: (4, 16), 1: (4, 16)}), ["tdpbssd 0 1 1"]),
    "tdpbssd_dst_eq_src2": (cfg_hex(1, 0, {0: (4, 16), 1: (4, 16)}), ["tdpbssd 0 1 0"]),
    "tdpbf16ps_unconfigured_src2": (cfg_hex(1, 0, {0: (4, 16), 1: (4, 16)}), ["tdpbf16ps 0 1 2"]),
    "tdpbssd_max_shapes": (cfg_hex(1, 0, {0: (16, 64), 1: (16, 64), 2: (16, 64)}),
                           ["load 0", "load 1", "load 2", "tdpbssd 0 1 2", "store 0"]),
    "tdpbf16ps_after_release": (cfg_hex(1, 0, {0: (4, 16), 1: (4, 16), 2: (4, 16)}),
                                ["release", "tdpbf16ps 0 1 2"]),
    "tileloaddt1_start_row_eq_rows": (cfg_hex(1, 4, {0: (4, 16)}), ["loaddt1 0"]),
    "store_unconfigured_after_release": (cfg_hex(1, 0, {0: (4, 16)}), ["release", "store 0"]),
}


def child(cfg_hex_s: str, steps: list[str]) -> None:
    import ctypes

    from systolic.amx.jit import JitModule, declarations, ptr_type
    from systolic.host import request_tile_permission
    assert request_tile_permission().granted
    p = ptr_type()
    body = [f"  call void @llvm.x86.ldtilecfg({p} %cfg)"]
    for s in steps:
        w = s.split()
        if w[0] == "load":
            body.append(f"  call void @llvm.x86.tileloadd64(i8 {w[1]}, {p} %a, i64 64)")
        elif w[0] == "loaddt1":
            body.append(f"  call void @llvm.x86.tileloaddt164(i8 {w[1]}, {p} %a, i64 64)")
        elif w[0] == "store":
            body.append(f"  call void @llvm.x86.tilestored64(i8 {w[1]}, {p} %out, i64 64)")
        elif w[0] == "zero":
            body.append(f"  call void @llvm.x86.tilezero(i8 {w[1]})")
        elif w[0] == "sttilecfg":
            body.append(f"  call void @llvm.x86.sttilecfg({p} %cfgout)")
        elif w[0] == "release":
            body.append("  call void @llvm.x86.tilerelease()")
        else:
            body.append(f"  call void @llvm.x86.{w[0]}(i8 {w[1]}, i8 {w[2]}, i8 {w[3]})")
    mns = sorted({s.split()[0] for s in steps if s.startswith("t") and s.split()[0] not in ("tilerelease",)})
    ir = declarations([m for m in mns if m.startswith("tdp")]) + (
        f"define void @f({p} %cfg, {p} %a, {p} %out, {p} %cfgout) {{\n" + "\n".join(body) +
        "\n  call void @llvm.x86.tilerelease()\n  ret void\n}\n")
    j = JitModule(ir)
    f = j.cfunc("f", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    cfg = np.frombuffer(bytes.fromhex(cfg_hex_s), np.uint8).copy()
    a = np.random.default_rng(1).integers(0, 256, 1024, dtype=np.uint8)
    out = np.full(1024, 0xEE, np.uint8)
    cfgout = np.full(64, 0xCC, np.uint8)
    f(cfg.ctypes.data, a.ctypes.data, out.ctypes.data, cfgout.ctypes.data)
    print(json.dumps({"cfg_after": cfgout.tobytes().hex(), "out": out.tobytes().hex()}))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], json.loads(sys.argv[3]))
        return
    results = {}
    for name, (c, steps) in CASES.items():
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", c, json.dumps(steps)],
                           capture_output=True, text=True, timeout=60)
        if r.returncode < 0:
            res = {"fault": signal.Signals(-r.returncode).name}
        elif r.returncode != 0:
            res = {"error": r.stderr[-400:]}
        else:
            res = json.loads(r.stdout.strip().splitlines()[-1])
        results[name] = {"cfg": c, "steps": steps, **res}
        short = res.get("fault") or res.get("error") or ("ok cfg_after=" + res["cfg_after"][:8] + ".. out[0:16]="
                                                           + res["out"][:32])
        print(f"{name:36s} {short}", flush=True)
    if len(sys.argv) > 2 and sys.argv[1] == "--json":
        with open(sys.argv[2], "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
