"""The query verbs: ``detail``, ``where``, ``what`` and ``table`` (AMD matrix instruction calculator's names).

Each takes a :class:`~systolic.layout.Layout` (see :func:`systolic.explorer.resolve` for names -> layout) and
returns plain data; :func:`table` also renders text, markdown and CSV. They read a Layout only, so they live
with it (the explorer, ``systolic layout ...``, re-exports them).
"""

from __future__ import annotations

import csv
import io
import json

from ..errors import InvalidValue
from .core import Layout, check_layout
from .picture import cell_label  # the table labels; the renderer lives with the Layout

__all__ = ["detail", "where", "what", "table", "packing", "cell_label", "FORMATS"]

FORMATS = ("text", "markdown", "csv", "json")


def _py(v):
    if isinstance(v, tuple):
        return [_py(x) for x in v]
    if isinstance(v, dict):
        return {k: _py(x) for k, x in v.items()}
    if hasattr(v, "item"):
        return v.item()
    return v


def where(L: Layout, row: int, col: int) -> dict:
    """Element (row, col) -> its holder, bit range, image byte and (for register operands) SIMD lane."""
    check_layout(L, "where")
    w = L.where(row, col)                   # checks that both are integers inside the matrix (no coercion)
    row, col = int(row), int(col)
    if "unit_strides" in L.params and w.get("held", True):
        pos = int(L.linear_bits()[row, col])
        w["image_bit"] = pos
        w["image_byte"] = pos // 8
    s = L.lane_of(row, col) if w.get("held", True) else None
    if s is not None:
        # the sub-group (SIMD) view; a holder coordinate of the same name keeps its own value
        for k in ("lane", "component", "bits_in_component"):
            w[("simd_" + k) if k in L.holder or ("simd_" + k) in w else k] = s[k]
    return _py(w)


def what(L: Layout, *coords: int, **named: int) -> list[dict]:
    """Holder (a prefix of its coordinates, or by name) -> the elements it keeps, lowest bits first."""
    check_layout(L, "what")
    return [_py(d) for d in L.what(*coords, **named)]


def detail(L: Layout) -> dict:
    """Shapes, K per step, operand size and alignment of one operand (what the calculator's ``detail`` lists)."""
    check_layout(L, "detail")
    p = dict(L.params)
    d = {"layer": L.layer, "operand": L.operand, "title": L.title, "rows": L.rows, "cols": L.cols,
         "element": L.element, "element_bits": L.element_bits, "holder": list(L.holder), "unit_bits": L.unit_bits,
         "extent": L.extent(), "holders_used": len(L.holders())}
    if "unit_strides" in p:
        d["operand_bytes"] = L.image_bits() // 8
    per_unit = max(1, L.unit_bits // L.element_bits)
    d["elements_per_unit"] = per_unit
    if L.layer in ("dpas", "dpasw"):
        gb = p["grf_bytes"]
        d.update(platform=p.get("platform"), exec_size=p.get("exec_size"), grf_bytes=gb,
                 grfs=-(-d["operand_bytes"] // gb), systolic_depth=p.get("sd"), repeat_count=p.get("rc"),
                 ops_per_chan=p.get("ops_per_chan"), K=(p.get("sd") or 0) * (p.get("ops_per_chan") or 0),
                 k_per_step=p.get("ops_per_chan"),
                 src1_precision=p.get("src1_precision"), src2_precision=p.get("src2_precision"),
                 dst_type=p.get("dst_type"))
        if L.operand == "src2":
            row_bytes = L.cols * L.element_bits // 8
            d["alignment"] = f"{row_bytes} bytes (SD * OPS_PER_CHAN * Src2 bits / 8)"
        elif L.operand == "src1":
            d["alignment"] = f"{gb} bytes (GRF-aligned)"
        else:
            d["alignment"] = f"{L.cols * L.element_bits // 8} bytes (exec_size * sizeof(type))"
        if L.layer == "dpasw" and L.operand == "src2":
            d["eu_grfs"] = list(p["eu_grfs"])
    elif L.layer == "amx":
        d.update(instruction=p.get("instruction"), M=p.get("M"), N=p.get("N"), K=p.get("K"),
                 tile_rows=p.get("rows"), colsb=p.get("colsb"),
                 k_per_step=32 // L.element_bits if L.operand != "c" else None,
                 alignment="tile rows of colsb bytes; TILELOADD row r at base + r * stride (no alignment rule)")
    if "lanes" in p:
        d["simd"] = {"lanes": p["lanes"], "lane_bits": p["lane_bits"]}
    d["vnni_factor"], d["packing"] = packing(L)
    d["params"] = {k: v for k, v in p.items() if k not in ("unit_strides",)}
    return _py(d)


def packing(L: Layout) -> tuple[int, str]:
    """(VNNI factor, one line saying how the operand is packed) for ``detail`` and the table's heading: the VNNI
    factor is how many consecutive rows of one column share a 32-bit word (docs/glossary.md, "VNNI packing");
    for a joint_matrix B it also says how memory is laid out (row_major and ext_intel_packed hold the same slice
    in registers but differ in memory)."""
    p = L.params
    v = int(p.get("vnni") or (p.get("ops_per_chan") if L.layer in ("dpas", "dpasw") and L.operand == "src1"
                                else 1) or 1)
    if L.layer == "sycl" and L.operand == "b" and p.get("layout"):
        lay = p["layout"]
        vm = max(1, 32 // L.element_bits)      # memory packs a 32-bit word's worth (sycl matrix_core.mem_rowcol)
        if lay == "ext_intel_packed":
            mem = (f"memory ext_intel_packed (VNNI x{vm}): B[{vm}r+i][n] at element (r * ld + {vm}n + i), ld = "
                   f"{vm} x N" + ("; loaded as is" if v == vm else "; the load unpacks it into the slice")
                   if vm > 1 else "memory ext_intel_packed: B[k][n] at k * ld + n")
        elif lay == "col_major":
            mem = "memory col_major: B[k][n] at element n * ld + k" + \
                (f"; the load packs {v} rows per 32-bit word" if v > 1 else "")
        else:
            mem = "memory row_major: B[k][n] at element k * ld + n" + \
                (f"; the load packs {v} rows per 32-bit word" if v > 1 else "")
        return v, mem
    if v > 1:
        return v, (f"VNNI-packed: each 32-bit word holds B[{v}r..{v}r+{v - 1}][n], {v} consecutive rows of one "
                   "column (row-major B must be repacked)")
    return v, "not packed: one row after another (row-major)" if L.operand in ("a", "src2", "c", "dst", "src0",
                                                                                  "acc", "result", "accumulator") \
        else "not packed: one element per unit"


def _holder_rows(L: Layout) -> list[dict]:
    groups: dict[tuple, list] = {}
    for r in range(L.rows):
        for c in range(L.cols):
            h = tuple(int(x) for x in L.index[r, c])
            if min(h) < 0:
                continue
            groups.setdefault(h, []).append((int(L.bit[r, c]), r, c))
    out = []
    for h, els in sorted(groups.items()):
        rec = dict(zip(L.holder, h))
        rec["elements"] = [[r, c] for _, r, c in sorted(els)]
        rec["bits"] = [b for b, _, _ in sorted(els)]
        out.append(rec)
    return out


def table(L: Layout, *, by: str = "element", fmt: str = "text", view: str = "holder") -> str:
    """The whole matrix either way, rendered: ``by="element"`` (the logical matrix, each cell its holder) or
    ``by="holder"`` (one row per holder with its elements, lowest bits first); ``fmt`` text/markdown/csv/json."""
    check_layout(L, "table")
    if not isinstance(by, str) or by not in ("element", "holder"):
        raise InvalidValue("table by 'element' or 'holder'", values={"by": by})
    if not isinstance(fmt, str) or fmt not in FORMATS:
        raise InvalidValue("table format is " + ", ".join(FORMATS), values={"fmt": fmt})
    if fmt == "json":
        if by == "element":
            return json.dumps(_py(L.to_dict()))
        return json.dumps({"layer": L.layer, "operand": L.operand, "holder": list(L.holder),
                           "holders": _holder_rows(L)})
    if by == "element":
        header = [f"{L.operand} r\\c"] + [str(c) for c in range(L.cols)]
        rows = [[str(r)] + [cell_label(L, r, c, view) for c in range(L.cols)] for r in range(L.rows)]
    else:
        header = list(L.holder) + ["elements (row,col), lowest bits first"]
        rows = [[str(rec[n]) for n in L.holder] + [" ".join(f"({r},{c})" for r, c in rec["elements"])]
                for rec in _holder_rows(L)]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
        return buf.getvalue()
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines) + "\n"
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    title = L.title or f"{L.layer} {L.operand}"
    v, how = packing(L)
    if v > 1 or L.layer == "sycl" and L.operand == "b":
        title += f"  [{how}]"
    lines = [title, "  ".join(h.rjust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(x.rjust(w) for x, w in zip(r, widths)) for r in rows]
    return "\n".join(lines) + "\n"
