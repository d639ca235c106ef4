"""Replay the recorded silicon programs on a ``systolic.amx.TileMachine`` (any backend).

``replay(family, op, machine)`` runs the instruction sequence of ``vectors.py`` for one operation with the
machine's public instruction methods, on copies of the operation's memory images, and returns the
outputs that the silicon recorder captured (``vectors.OUTPUTS``), so they can be compared byte for byte
or by digest. ``check_all(...)`` gives per-family agreement counts.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vectors as V  # noqa: E402


#: these tools' --backend names -> TileMachine's (backend=, path=) (docs/ARCHITECTURE.md "Vocabulary")
MACHINES = {"emulator": ("cpu", "fast"), "spec": ("cpu", "spec"), "native": ("native", "fast")}


def machine(backend: str = "emulator"):
    """The TileMachine a tool's ``--backend`` names: emulator (the cpu backend's fast path), spec (its spec
    path) or native."""
    from systolic.amx import TileMachine
    where, path = MACHINES.get(backend, (backend, "fast"))
    return TileMachine(backend=where, path=path)


def replay(family: str, op: dict, m) -> dict:
    kind = V.kind_of(family)
    if kind == "dot":
        mnemonic = V.mnemonic_of(family)
        m.ldtilecfg(np.asarray(op["cfg"], np.uint8))
        for t, key in ((0, "c"), (1, "a"), (2, "b")):
            m.tileloadd(t, np.ascontiguousarray(op[key]).reshape(-1), 0, 64)
        getattr(m, mnemonic)(0, 1, 2)
        out = np.array(op["out"], np.uint8).reshape(-1)
        m.tilestored(0, out, 0, 64)
        m.tilerelease()
        return {"out": out.reshape(16, 64)}
    if kind == "load":
        load = getattr(m, V.mnemonic_of(family))
        t = int(op["tile"])
        m.ldtilecfg(np.asarray(op["cfg"], np.uint8))
        load(t, np.asarray(op["src"], np.uint8), int(op["src_off"]), int(op["src_stride"]))
        cfg_after = np.array(op["cfg_after"], np.uint8)
        m.sttilecfg(cfg_after, 0)
        dst = np.array(op["dst"], np.uint8)
        m.tilestored(t, dst, int(op["dst_off"]), int(op["dst_stride"]))
        m.tilerelease()
        return {"dst": dst, "cfg_after": cfg_after}
    if kind == "zero":
        t, u = int(op["t"]), int(op["u"])
        data = np.asarray(op["data"], np.uint8)
        m.ldtilecfg(np.asarray(op["cfg"], np.uint8))
        m.tileloadd(t, np.ascontiguousarray(data[0]).reshape(-1), 0, 64)
        m.tileloadd(u, np.ascontiguousarray(data[1]).reshape(-1), 0, 64)
        m.tilezero(t)
        out = np.array(op["out"], np.uint8)
        o = out.reshape(-1)
        m.tilestored(t, o, 0, 64)
        m.tilestored(u, o, 1024, 64)
        m.tilerelease()
        return {"out": out}
    if kind == "cfg":
        data = np.ascontiguousarray(np.asarray(op["data"], np.uint8)).reshape(-1)
        m.ldtilecfg(np.asarray(op["cfg1"], np.uint8))
        cfg_a = np.array(op["cfg_a"], np.uint8)
        m.sttilecfg(cfg_a, 0)
        for t in range(8):
            if int(op["load_mask"]) >> t & 1:
                m.tileloadd(t, data, 1024 * t, 64)
        m.ldtilecfg(np.asarray(op["cfg2"], np.uint8))
        cfg_b = np.array(op["cfg_b"], np.uint8)
        m.sttilecfg(cfg_b, 0)
        out = np.array(op["out"], np.uint8)
        o = out.reshape(-1)
        for t in range(8):
            if int(op["store_mask"]) >> t & 1:
                m.tilestored(t, o, 1024 * t, 64)
        m.tilerelease()
        return {"cfg_a": cfg_a, "cfg_b": cfg_b, "out": out}
    raise KeyError(family)


def full_ops(full, family: str):
    """The operations of ``family`` stored in full.npz: (inputs dict with the before-images, outputs dict)."""
    kind = V.kind_of(family)
    arrs = {k.split("/", 1)[1]: full[k] for k in full.files if k.startswith(family + "/")}
    n = arrs[V.INPUTS[kind][0]].shape[0]
    for i in range(n):
        op = {k: v[i] for k, v in arrs.items() if not k.endswith("_before")}
        outs = {k: op[k] for k in V.OUTPUTS[kind]}
        for k in V.OUTPUTS[kind]:
            op[k] = arrs[f"{k}_before"][i]
        yield i, op, outs
