"""Layout pictures as SVG text, in CuTe's arrangement (A left of C, B above C), no LaTeX or browser needed.

Each logical element is one cell labelled with its holder (``r1.d5@16``: GRF 1, dword 5, bits 16.., or
``L5.c1`` under the SIMD lane view). Colour says *who* holds it (the lane of a register operand's sub-group view,
the work-item of a programming-model slice, the dword column of an AMX tile) and the shade *which of its
values* (component, index, tile row). Elements packed several to a unit (VNNI pairs/quads, packed A) get a strip
of sub-cells along the cell's foot, the element's own slot filled.

Lives in the layout package (it reads only :class:`~systolic.layout.Layout` objects) so that
``Layout._repr_svg_`` draws without importing a tool; ``systolic.explorer`` re-exports it.
"""

from __future__ import annotations

import colorsys
from html import escape

from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidValue

if TYPE_CHECKING:                      # annotations only: core imports this module for _repr_svg_
    from .core import Layout

__all__ = ["layout_svg", "mma_svg", "color_keys", "cell_label"]

_SHORT = {"grf": "r", "dword": "d", "eu": "eu", "tile_row": "row", "byte": "B", "work_item": "wi",
          "component": "c", "index": "i", "lane": "L", "sub_group": "sg"}


#: the views a table or picture labels its cells by: the holder's coordinates, or the SIMD lane and component
VIEWS = ("holder", "lane")


def check_layout(L, verb: str) -> None:
    """A Layout's fields are there (checked by name: core imports this module, so no isinstance here); anything
    else is refused by name rather than failing on a missing attribute."""
    if not all(hasattr(L, a) for a in ("layer", "operand", "rows", "cols", "index", "bit", "holder", "params")):
        raise InvalidValue(f"{verb} takes a Layout (systolic.layout.get(...)), not {type(L).__name__}",
                           rule="layout verbs take a systolic.layout.Layout", values={"got": type(L).__name__})


def check_view(view) -> None:
    if not isinstance(view, str) or view not in VIEWS:
        raise InvalidValue(f"unknown view {view!r}", rule="view is " + " or ".join(VIEWS),
                           values={"view": view if isinstance(view, str) else repr(view)[:40]})


def cell_label(L: Layout, row: int, col: int, view: str = "holder") -> str:
    """Short label of an element's holder: ``r3.d5@16`` (GRF 3, dword 5, bit 16) or, view="lane", ``L5.c3``."""
    check_view(view)
    if view == "lane":
        s = L.lane_of(row, col)
        if s is None:
            raise InvalidValue("this layout has no SIMD lane view", values={"layer": L.layer})
        lo = s["bits_in_component"][0]
        return f"L{s['lane']}.c{s['component']}" + (f"@{lo}" if s["lane_bits"] > L.element_bits else "")
    h = L.index[row, col]
    if (h < 0).any():
        return "-"
    lab = ".".join(f"{_SHORT.get(n, n)}{int(v)}" for n, v in zip(L.holder, h))
    if L.element_bits < L.unit_bits:
        lab += f"@{int(L.bit[row, col])}"
    return lab

CELL_W, CELL_H = 46, 26
FONT = "font-family='DejaVu Sans Mono, Menlo, Consolas, monospace'"


def color_keys(L: Layout) -> tuple[np.ndarray, np.ndarray, str, str]:
    """(colour key, shade key) per element and their names: lane/component, work-item/next, or dword/row."""
    split = next((h for h in ("eu", "sub_group") if h in L.holder), None)
    if split:                                                  # DPASW / split built-ins: which EU / sub-group
        i = L.holder.index(split)
        return L.index[..., i], L.index[..., i + 1], split, L.holder[i + 1]
    lv = L.lanes()
    if lv is not None:
        return lv[..., 1], lv[..., 0], "lane", "component"
    if "work_item" in L.holder:
        i = L.holder.index("work_item")
        j = len(L.holder) - 1 if i == len(L.holder) - 1 else i + 1
        return L.index[..., i], L.index[..., j], "work_item", L.holder[j]
    inner = L.index[..., -1] * L.unit_bits // 32             # the dword of the innermost unit
    outer = L.index[..., 0] if len(L.holder) > 1 else np.zeros_like(inner)
    return inner, outer, "dword", L.holder[0]


def _fill(c: int, s: int, nc: int, ns: int) -> str:
    hue = (c * 0.6180339887) % 1.0 if nc > 12 else c / max(nc, 1)
    light = 0.86 - 0.34 * (s / max(ns - 1, 1)) if ns > 1 else 0.74
    r, g, b = colorsys.hls_to_rgb(hue, light, 0.62)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def cell_width(L: Layout, view: str) -> float:
    """Cells wide enough for the longest label (monospace, 9 px type)."""
    n = max((len(cell_label(L, r, c, view).partition("@")[0]) for r in range(L.rows) for c in range(L.cols)),
            default=1)
    return max(CELL_W, 5.6 * n + 8)


def _foot_unit(L: Layout, view: str) -> int:
    """The bits of the packing unit whose slots a cell's foot strip shows (the lane's component, or the holder's
    unit; an AMX tile's dword: the unit its DPBD / FMA pairs read, though the holder counts bytes)."""
    return L.params.get("lane_bits", L.unit_bits) if view == "lane" else max(L.unit_bits, 32 if L.layer == "amx" else 0)


def _grid(L: Layout, x0: float, y0: float, view: str, caption: str, axes: str = "left,top",
          cw: float | None = None, mark=None) -> list[str]:
    """One operand's cells. ``mark``: a predicate (row, col) -> bool; when given, the marked cells keep their
    colour and a heavy outline and the others are faded (the elements that feed one D cell)."""
    ck, sk, _, _ = color_keys(L)
    CELL_W = cw or cell_width(L, view)
    nc = int(ck.max()) + 1 if ck.size else 1
    ns = int(sk.max()) + 1 if sk.size else 1
    pw = _foot_unit(L, view)
    per = max(1, pw // L.element_bits)
    out = [f"<g class='layout' data-layer='{escape(L.layer)}' data-operand='{escape(L.operand)}'>"]
    out.append(f"<text x='{x0}' y='{y0 - 22}' font-size='13' font-weight='bold' {FONT}>{escape(caption)}</text>")
    if "top" in axes:
        for c in range(L.cols):
            out.append(f"<text x='{x0 + c * CELL_W + CELL_W / 2}' y='{y0 - 5}' font-size='10' text-anchor='middle' "
                       f"fill='#555' {FONT}>{c}</text>")
    if "left" in axes:
        for r in range(L.rows):
            out.append(f"<text x='{x0 - 5}' y='{y0 + r * CELL_H + CELL_H / 2 + 4}' font-size='10' "
                       f"text-anchor='end' fill='#555' {FONT}>{r}</text>")
    for r in range(L.rows):
        for c in range(L.cols):
            x, y = x0 + c * CELL_W, y0 + r * CELL_H
            held = bool((L.index[r, c] >= 0).all())
            fill = _fill(int(ck[r, c]), int(sk[r, c]), nc, ns) if held else "#ffffff"
            lab = cell_label(L, r, c, view) if held else "-"
            w = L.where(r, c)
            tip = ", ".join(f"{k}={v}" for k, v in w.items())
            on = mark is None or mark(r, c)
            look = "stroke='#333' stroke-width='0.6'" if mark is None else (
                "stroke='#c00000' stroke-width='2.2'" if on else "stroke='#999' stroke-width='0.4' fill-opacity='0.25'")
            out.append(f"<rect x='{x}' y='{y}' width='{CELL_W}' height='{CELL_H}' fill='{fill}' {look}>"
                       f"<title>{escape(tip)}</title></rect>")
            main, _, sub = lab.partition("@")
            size = 9
            out.append(f"<text x='{x + CELL_W / 2}' y='{y + (12 if per > 1 else 16)}' font-size='{size}' "
                       f"text-anchor='middle' {FONT}>{escape(main)}</text>")
            if per > 1 and held:
                slot = (int(L.lane_of(r, c)["bits_in_component"][0]) if view == "lane"
                        else (int(L.index[r, c, -1]) * L.unit_bits + int(L.bit[r, c])) % pw) // L.element_bits
                sw = (CELL_W - 8) / per
                for i in range(per):
                    out.append(f"<rect x='{x + 4 + i * sw:.2f}' y='{y + CELL_H - 9}' width='{sw:.2f}' height='5' "
                               f"fill='{'#222' if i == slot else '#fff'}' fill-opacity='{0.85 if i == slot else 0.5}' "
                               f"stroke='#333' stroke-width='0.4'/>")
    out.append(f"<rect x='{x0}' y='{y0}' width='{L.cols * CELL_W}' height='{L.rows * CELL_H}' fill='none' "
               f"stroke='#000' stroke-width='1.4'/>")
    out.append("</g>")
    return out


def _doc(body: list[str], width: float, height: float, note: str) -> str:
    head = (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
            f"viewBox='0 0 {width:.0f} {height:.0f}'>")
    bg = f"<rect x='0' y='0' width='{width:.0f}' height='{height:.0f}' fill='#ffffff'/>"
    foot = (f"<text x='8' y='{height - 8:.0f}' font-size='10' fill='#444' {FONT}>{escape(note)}</text>")
    return "\n".join([head, bg, *body, foot, "</svg>"]) + "\n"


def _legend(L: Layout, view: str, drawn: tuple = ()) -> str:
    """What the picture shows, and only that: the shade is named only where it varies, the foot strip only
    where some drawn cell has one (an element packed with others into one unit)."""
    Ls = drawn or (L,)
    _, _, cn, sn = color_keys(L)
    shaded = any(int(color_keys(X)[1].max(initial=0)) > 0 for X in Ls)
    strip = any(_foot_unit(X, view) // X.element_bits > 1 for X in Ls)
    colour = f"colour = {cn}" + (f", shade = {sn}" if shaded else "")
    if view == "lane":
        text = f"cell = L<lane>.c<component>; {colour}"
        return text + ("; foot strip = slot inside the component" if strip else "")
    names = ", ".join(L.holder)
    unit = "dword" if L.layer == "amx" else f"{L.unit_bits}-bit unit"
    at = "@bit" if any(X.element_bits < X.unit_bits for X in Ls) else ""
    return f"cell = holder ({names}){at}; {colour}" + (f"; foot strip = slot inside the {unit}" if strip else "")


def holders_of(L: Layout, cells, view: str = "holder") -> list[str]:
    """The distinct holders of some elements of ``L`` (labels without the bit offset), in order of first use."""
    return list(dict.fromkeys(cell_label(L, r, c, view).partition("@")[0] for r, c in cells))


def feed_text(A: Layout, B: Layout, C: Layout, row: int, col: int, view: str = "holder") -> list[str]:
    """Who holds what D[row, col] is made of: A's row, B's column, C's and D's element (one line each)."""
    ka = [(row, k) for k in range(A.cols)]
    kb = [(k, col) for k in range(B.rows)]
    hold = [("A", f"row {row} (K = {A.cols})", holders_of(A, ka, view)),
            ("B", f"column {col} (K = {B.rows})", holders_of(B, kb, view)),
            ("C/D", f"[{row}, {col}]", holders_of(C, [(row, col)], view))]
    def short(h: list[str]) -> str:          # a long run in order of K: its ends and its count
        return " ".join(h) if len(h) <= 8 else f"{h[0]} {h[1]} ... {h[-1]} ({len(h)} holders)"
    return [f"{m} {what}: held by {short(h)}" for m, what, h in hold]


def layout_svg(L: Layout, *, view: str = "holder", title: str | None = None) -> str:
    """One operand's layout as an SVG document (text)."""
    check_layout(L, "svg")
    check_view(view)
    if view == "lane" and L.lanes() is None:
        view = "holder"
    mx, my = 40, 46
    body = _grid(L, mx, my, view, title or L.title or f"{L.layer} {L.operand}")
    w = max(mx + L.cols * cell_width(L, view) + 16, mx + 8.2 * len(title or L.title or "") + 16, 6.2 * len(_legend(L, view)) + 16)
    h = my + L.rows * CELL_H + 30
    return _doc(body, w, h, _legend(L, view))


def mma_svg(A: Layout, B: Layout, C: Layout, *, view: str = "holder", title: str | None = None,
            highlight: tuple[int, int] | None = None) -> str:
    """D = A x B + C in CuTe's picture: A (M x K) left of C (M x N), B (K x N) above C. ``highlight=(row, col)``
    outlines D[row, col], the A row and B column that feed it, and lists who holds them below the picture."""
    for X in (A, B, C):
        check_layout(X, "mma_svg")
    if any(v.lanes() is None for v in (A, B, C)):
        view = "holder" if view == "lane" else view
    marks = (None, None, None)
    notes: list[str] = []
    if highlight is not None:
        row, col = _cell(highlight, C)
        marks = (lambda r, c: r == row, lambda r, c: c == col, lambda r, c: (r, c) == (row, col))
        notes = [f"D[{row}, {col}] = C[{row}, {col}] + sum over k of A[{row}, k] x B[k, {col}] (outlined)",
                 *feed_text(A, B, C, row, col, view)]
    gap = 44
    mx, my = 40, 62
    ax, cx = mx, mx + A.cols * cell_width(A, view) + gap
    by = my
    cy = by + B.rows * CELL_H + gap
    body = []
    if title:
        body.append(f"<text x='{mx}' y='20' font-size='15' font-weight='bold' {FONT}>{escape(title)}</text>")
    wbc = max(cell_width(B, view), cell_width(C, view))       # B's columns line up with C's
    body += _grid(B, cx, by, view, B.title or "B", cw=wbc, mark=marks[1])
    body += _grid(A, ax, cy, view, A.title or "A", mark=marks[0])
    body += _grid(C, cx, cy, view, C.title or "C", axes="top", cw=wbc, mark=marks[2])
    w = max(cx + C.cols * wbc, cx + 8.2 * len(B.title or "B"), cx + 8.2 * len(C.title or "C")) + 16
    h = cy + max(A.rows, C.rows) * CELL_H + 30
    for i, line in enumerate(notes):
        body.append(f"<text x='8' y='{h + 4 + 14 * i:.0f}' font-size='11' {FONT}>{escape(line)}</text>")
    h += 14 * len(notes) + (12 if notes else 0)
    legend = _legend(C, view, (A, B, C))
    width = max(w, 6.2 * len(legend) + 16, *(6.7 * len(s) + 16 for s in notes))
    return _doc(body, width, h, legend)


def _cell(highlight, C: Layout) -> tuple[int, int]:
    """``highlight`` as a D cell inside C's M x N, or InvalidValue naming the range."""
    try:
        row, col = highlight
    except (TypeError, ValueError):
        raise InvalidValue("highlight is (row, col) of D", values={"highlight": repr(highlight)[:40]}) from None
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in (row, col)) or \
            not (0 <= row < C.rows and 0 <= col < C.cols):
        raise InvalidValue(f"highlight ({row}, {col}) is not a cell of D ({C.rows} x {C.cols})",
                           rule="0 <= row < M and 0 <= col < N", values={"row": row, "col": col})
    return int(row), int(col)
