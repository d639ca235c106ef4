"""The ``systolic run`` report: instruction counts from :mod:`systolic.counters` and the layouts they involve.

For each distinct DPAS or TMUL shape executed, the report names its operands with a one-line description and the
``systolic layout detail ...`` command that shows the whole map (the layout explorer, :mod:`systolic.explorer`;
when it is importable its own title of the operand's :class:`~systolic.layout.Layout` is used).
"""

from __future__ import annotations

from .. import types as T
from ..amx.machine import TMUL_MNEMONICS, TMUL_TYPES

__all__ = ["instructions", "layouts", "amx_k"]


def amx_k(op: str, k_dwords: int) -> tuple[int, str]:
    """K in elements of the instruction's A type, and that type, for a TMUL that reads ``k_dwords`` dwords of
    each A row (the report says K one way: elements; the dwords and the tile's bytes follow from it)."""
    src1 = T.get(TMUL_TYPES[op][0]) if op in TMUL_TYPES else None
    if src1 is None:
        return k_dwords, "dwords"
    return k_dwords * 32 // src1.bits, src1.name

_AMX_TMUL = set(TMUL_MNEMONICS)


def instructions(rec) -> dict:
    """The counts by engine: ``{"dpas": [...], "amx": [...], "visa": {...}, "totals": {...}}``."""
    dpas = [{k: v for k, v in e.items() if k != "kind"} for e in rec.events("dpas")]
    fields = ("op", "m", "n", "k_dwords", "rows", "colsb", "via")
    amx = rec.by("amx", *fields)
    amx_rows = [{**dict(zip(fields, key)), "count": c}
                for key, c in sorted(amx.items(), key=lambda kv: (kv[0][0] not in _AMX_TMUL, str(kv[0])))]
    visa = dict(sorted(rec.by("visa", "op").items(), key=lambda kv: (-kv[1], kv[0])))
    totals = {"DPAS": rec.total("dpas", op="dpas"), "DPASW": rec.total("dpas", op="dpasw"),
              "AMX TMUL": sum(r["count"] for r in amx_rows if r["op"] in _AMX_TMUL),
              "AMX other": sum(r["count"] for r in amx_rows if r["op"] not in _AMX_TMUL),
              "vISA": sum(visa.values())}
    return {"dpas": dpas, "amx": amx_rows, "visa": visa, "totals": {k: v for k, v in totals.items() if v}}


def _explorer_line(layer: str, operand: str, **opts) -> str | None:
    """The explorer's one-line detail of an operand (its title, size and alignment), or None when the explorer
    is absent or refuses (the report then uses its own line)."""
    try:
        from ..explorer import detail, resolve
        d = detail(resolve(layer, operand, **opts))
    except Exception:  # noqa: BLE001 - the explorer is optional here
        return None
    if d.get("grfs"):
        return f"{d['title']}: {d['grfs']} GRFs ({d['operand_bytes']} bytes), aligned to {d['alignment']}"
    if d.get("tile_rows"):
        return f"{d['title']}: {d['tile_rows']} tile rows of {d['colsb']} bytes"
    return d.get("title")


def _dpas_layouts(e: dict) -> dict:
    a, b, d, rc, sd, ex, plat = e["a"], e["b"], e["dst"], e["rc"], e["sd"], e["exec"], e["platform"]
    from ..xmx.rules import ops_per_chan
    ops = ops_per_chan(b, a)
    K = sd * ops
    opts = dict(device=plat, precision=b, src2_precision=a, rc=rc, dst_type=d)
    base = f"systolic layout detail {e['op']} {{op}} --device {plat} --precision {b}" + \
        (f" --src2-precision {a}" if a != b else "") + f" --m {rc}" + \
        (f" --dst-type {d}" if d not in ("fp32", "int32") else "")
    rows = []
    for operand, role, shape, mine in (
            ("src2", "A", f"{rc}x{K} {a}", f"A row-major, one row of {K} {a} per {K * T.get(a).bits // 8} bytes"),
            ("src1", "B", f"{K}x{ex} {b}", f"B VNNI-packed: dword n of GRF row r holds B[{ops}r..{ops}r+{ops - 1}][n]"
             if ops > 1 else f"B: dword n of GRF row r holds B[r][n]"),
            ("dst", "C/D", f"{rc}x{ex} {d}", f"row r of C/D: {ex} consecutive {d} elements")):
        title = _explorer_line(e["op"], operand, **opts)
        rows.append({"operand": f"{operand} ({role})", "shape": shape, "layout": title or mine,
                     "command": base.format(op=operand)})
    return {"engine": "XMX", "instruction": f"{e['op'].upper()} M {rc}, N {ex}, K {K}: {a} x {b} -> {d}",
            "where": f"{plat}, exec size {ex}", "count": e["count"], "operands": rows}


def _amx_layouts(r: dict) -> dict:
    mn, m, n, kd = r["op"], r["m"], r["n"], r["k_dwords"]
    src1, _src2, acc = (T.get(t).name for t in TMUL_TYPES[mn])
    per = 32 // T.get(src1).bits
    k = kd * per
    base = f"systolic layout detail amx {{op}} --instruction {mn} --m {m} --n {n} --k {k}"
    opts = dict(instruction=mn, m=m, n=n, k=k)
    rows = []
    for operand, role, shape, mine in (
            ("a", "A, src1 tile", f"{m}x{k}", f"A row-major: tile row i = A[i][0..{k - 1}] ({4 * kd} bytes)"),
            ("b", "B, src2 tile", f"{k}x{n}", f"B VNNI: tile row r, dword j holds B[{per}r..{per}r+{per - 1}][j]"),
            ("c", "C, dst tile", f"{m}x{n} {acc}", f"C row-major: tile row i = C[i][0..{n - 1}] ({4 * n} bytes)")):
        title = None if mn.startswith("tcmm") else _explorer_line("amx", operand, **opts)
        rows.append({"operand": f"{operand} ({role})", "shape": shape, "layout": title or mine,
                     "command": base.format(op=operand)})
    return {"engine": "AMX", "instruction": f"{mn.upper()} M {m}, N {n}, K {k}", "where": f"via {r['via']}",
            "count": r["count"], "operands": rows}


def layouts(ins: dict) -> list[dict]:
    """One entry per distinct DPAS/DPASW shape and per distinct TMUL tile shape executed."""
    seen: dict[tuple, dict] = {}
    for e in ins["dpas"]:
        key = ("dpas", e["op"], e["platform"], e["a"], e["b"], e["dst"], e["sd"], e["rc"], e["exec"])
        if key in seen:
            seen[key]["count"] += e["count"]
        else:
            seen[key] = _dpas_layouts(e)
    for r in ins["amx"]:
        if r["op"] not in _AMX_TMUL:
            continue
        key = ("amx", r["op"], r["m"], r["n"], r["k_dwords"])
        if key in seen:
            seen[key]["count"] += r["count"]
        else:
            seen[key] = _amx_layouts(r)
    return sorted(seen.values(), key=lambda e: -e["count"])
