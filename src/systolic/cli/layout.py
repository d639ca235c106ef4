"""``systolic layout``: who holds which element, at every layer (detail, where, what, table, mma, explain).

Every verb resolves ``LAYER OPERAND`` plus the layer's options to the one :class:`systolic.layout.Layout` of
that operand (:func:`systolic.explorer.resolve`) and queries it; see docs/layouts.md.
"""

from __future__ import annotations

import functools

import click

from . import emit_json
from .options import DST_TYPE_HELP, SuggestingGroup, device_option

LAYER_CHOICES = ["dpas", "dpasw", "amx", "opencl", "sycl", "xmx", "joint_matrix"]


def layer_options(f):
    """The options that pick one operand's map in each layer (unused ones must stay unset). The vocabulary is
    the command line's one (systolic.cli.options): --device for every layer, --m (alias --rc) for M,
    --dst-type in the names of systolic types."""
    opts = [
        click.option("--precision", default=None, help="dpas: B's (Src1's) precision [bf16]."),
        click.option("--src2-precision", default=None, help="dpas: A's (Src2's) precision (default: --precision)."),
        click.option("--dst-type", default=None, help="dpas: " + DST_TYPE_HELP),
        click.option("--instruction", default=None, help="amx: tdpbssd, tdpbf16ps, tdpfp16ps, ... [tdpbf16ps]."),
        click.option("--m", "--rc", "m", type=int, default=None,
                     help="M: rows of A, C, D (dpas: the repeat count, 1..8 [8]; amx [16]; opencl; sycl)."),
        click.option("--n", type=int, default=None, help="amx / sycl: N."),
        click.option("--k", type=int, default=None, help="amx / sycl: K."),
        click.option("--name", default=None, help="opencl: the built-in's name."),
        click.option("--acc", default=None, help="opencl: accumulator type of an overloaded name (int8, float8...)."),
        click.option("--type", "type_", default=None, help="sycl: element type T."),
        click.option("--ctype", default=None, help="sycl mma: accumulator type."),
        click.option("--use", default=None, help="sycl: a, b or accumulator (default: OPERAND)."),
        click.option("--rows", type=int, default=None, help="sycl: Rows (default: from --m/--n/--k and the use)."),
        click.option("--cols", type=int, default=None, help="sycl: Cols (default: from --m/--n/--k and the use)."),
        click.option("--layout", "layout_", default=None, help="sycl: row_major, col_major, ext_intel_packed."),
    ]
    f = functools.reduce(lambda g, o: o(g), reversed(opts), f)
    return device_option("any", aliases=("--platform",), normalize=False,
                         help="dpas/dpasw/opencl: an XMX GPU (pvc, dg2, bmg, lnl, xe3p; dpas default pvc, dpasw "
                              "dg2); sycl: a SYCL device (spr, gnr, dg2, pvc, ...); any alias")(f)


_XMX_LAYERS = {"dpas", "dpasw", "xmx", "opencl", "cl"}


def _opts(kw: dict, layer: str, operand: str | None = None) -> dict:
    """The options as the explorer's resolve() takes them for ``layer``: the device (XMX layers: normalised to
    the platform; sycl: to the SYCL device); M as ``rc`` for dpas; for sycl, Rows and Cols
    from M/N/K and the operand's use where they are not given."""
    keys = ("device", "precision", "src2_precision", "dst_type", "instruction", "m", "n", "k", "name", "acc",
            "type_", "ctype", "use", "rows", "cols", "layout_")
    o = {k.rstrip("_"): kw.pop(k) for k in keys if k in kw}
    o = {k: v for k, v in o.items() if v is not None}
    lay = str(layer).lower()
    from .options import normalize_device
    if "device" in o:
        if lay in _XMX_LAYERS:
            o["device"] = normalize_device(o["device"], "gpu")
        elif lay in ("sycl", "joint_matrix"):
            o["device"] = normalize_device(o["device"], "sycl")
        else:
            o["device"] = normalize_device(o["device"], "cpu")       # amx: the tiles are the same on every CPU
            o.pop("device")
    if lay in ("dpas", "dpasw", "xmx") and "m" in o:
        o["rc"] = o.pop("m")
    if lay in ("sycl", "joint_matrix") and operand is not None:
        use = o.get("use") or operand
        rows, cols = {"a": ("m", "k"), "b": ("k", "n"), "accumulator": ("m", "n")}.get(use, (None, None))
        if rows and rows in o and "rows" not in o:
            o["rows"] = o[rows]
        if cols and cols in o and "cols" not in o:
            o["cols"] = o[cols]
        for x in "mnk":
            o.pop(x, None)
    return o


def _operand(layer: str, operand: str, kw: dict) -> str:
    """OPERAND in the layer's own naming, given as a/b/c/d or src0/src1/src2/dst (docs/glossary.md)."""
    from ..layout.operands import operand_name
    lay = str(layer).lower()
    lay = {"xmx": "dpas", "tile": "amx", "joint_matrix": "sycl", "cl": "opencl"}.get(lay, lay)
    if lay not in ("dpas", "dpasw", "amx", "opencl", "sycl"):
        return operand                                   # the explorer names the unknown layer
    engine = None
    if lay == "sycl" and kw.get("device"):
        from ..run.devices import engine_of
        e = engine_of(kw["device"])
        engine = e[0] if e else None
    return operand_name(lay, operand, engine)


def _resolve(layer, operand, kw):
    from ..explorer import resolve
    op = _operand(layer, operand, kw)
    o = _opts(kw, layer, op)
    o.pop("ctype", None)
    return resolve(layer, op, **o)


def _write_svg(path: str, text: str) -> None:
    from .inputs import write_output
    write_output(path, lambda f: f.write(text), "--svg file", binary=False)
    click.echo(f"wrote {path}", err=True)


@click.group("layout", cls=SuggestingGroup)
def group():
    """Who holds which element, at every layer: detail, where, what, table, mma, explain."""


@group.command("layers")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def layers_cmd(as_json):
    """The layers the explorer resolves, and their operands."""
    from ..explorer import LAYERS
    if as_json:
        emit_json(LAYERS)
        return
    for k, v in LAYERS.items():
        click.echo(f"{k:8} {v}")


@group.command("detail")
@click.argument("layer")
@click.argument("operand")
@layer_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--svg", "svg_path", default=None, help="Also write the operand's picture to this SVG file.")
def detail_cmd(layer, operand, as_json, svg_path, **kw):
    """Shapes, K per step, operand size and alignment of LAYER's OPERAND."""
    from ..explorer import detail
    L = _resolve(layer, operand, kw)
    d = detail(L)
    if svg_path:
        from ..explorer.svg import layout_svg
        _write_svg(svg_path, layout_svg(L))
    if as_json:
        emit_json(d)
        return
    for k, v in d.items():
        if k != "params":
            click.echo(f"{k:18} {v}")


@group.command("where")
@click.argument("layer")
@click.argument("operand")
@click.argument("row", type=int)
@click.argument("col", type=int)
@layer_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def where_cmd(layer, operand, row, col, as_json, **kw):
    """Element (ROW, COL) of OPERAND -> its holder (register/work-item), lane and bit range."""
    from ..explorer import where
    d = where(_resolve(layer, operand, kw), row, col)
    if as_json:
        emit_json(d)
        return
    click.echo(", ".join(f"{k}={v}" for k, v in d.items()))


@group.command("what")
@click.argument("layer")
@click.argument("operand")
@click.argument("coords", nargs=-1, type=int)
@layer_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def what_cmd(layer, operand, coords, as_json, **kw):
    """Holder COORDS (outermost first; a prefix selects all below it) -> the elements it holds."""
    from ..explorer import what
    L = _resolve(layer, operand, kw)
    recs = what(L, *coords)
    if as_json:
        emit_json(recs)
        return
    click.echo(f"{L.title}: holder {L.holder} = {tuple(coords)}")
    for d in recs:
        click.echo("  " + ", ".join(f"{k}={v}" for k, v in d.items()))


@group.command("table")
@click.argument("layer")
@click.argument("operand")
@layer_options
@click.option("--by", type=click.Choice(["element", "holder"]), default="element", show_default=True,
              help="The logical matrix with each cell's holder, or one row per holder.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "csv"]), default="text", show_default=True)
@click.option("--view", type=click.Choice(["holder", "lane"]), default="holder", show_default=True,
              help="Label cells by holder or by sub-group lane/component (register operands).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--svg", "svg_path", default=None, help="Also write the picture to this SVG file.")
def table_cmd(layer, operand, by, fmt, view, as_json, svg_path, **kw):
    """The whole matrix of OPERAND, either way (element -> holder or holder -> elements)."""
    from ..explorer import table
    L = _resolve(layer, operand, kw)
    if svg_path:
        from ..explorer.svg import layout_svg
        _write_svg(svg_path, layout_svg(L, view=view))
    click.echo(table(L, by=by, fmt="json" if as_json else fmt, view=view), nl=False)
    if as_json:
        click.echo()


@group.command("mma")
@click.argument("layer")
@layer_options
@click.option("--view", type=click.Choice(["holder", "lane"]), default="lane", show_default=True)
@click.option("--svg", "svg_path", required=True, help="Write the A | B / C picture to this SVG file.")
@click.option("--highlight", default=None, metavar="ROW,COL",
              help="Outline D[ROW, COL], the A row and B column that feed it, and name who holds them.")
def mma_cmd(layer, view, svg_path, highlight, **kw):
    """Picture of one MMA of LAYER in CuTe's arrangement: A left of C, B above C."""
    from ..explorer import mma_layouts
    from ..explorer.svg import mma_svg
    d = mma_layouts(layer, **_opts(kw, layer))
    cell = _highlight(highlight)
    _write_svg(svg_path, mma_svg(d["A"], d["B"], d["C"], view=view, title=f"{layer}: D = A x B + C",
                                 highlight=cell))
    if cell is not None:
        from ..layout.picture import feed_text
        for line in feed_text(d["A"], d["B"], d["C"], *cell, view="holder"):
            click.echo(line)


def _highlight(text: str | None) -> tuple[int, int] | None:
    """``ROW,COL`` as two integers (the range is checked against D by the picture)."""
    if text is None:
        return None
    parts = text.replace(" ", "").split(",")
    if len(parts) != 2 or not all(p.lstrip("-").isdigit() for p in parts):
        raise click.BadParameter(f"{text!r} is not ROW,COL (two integers, e.g. 2,3)", param_hint="--highlight")
    return int(parts[0]), int(parts[1])


@group.command("explain")
@click.argument("layer")
@click.argument("row", type=int)
@click.argument("col", type=int)
@layer_options
@click.option("--model", default=None, help="dpas/dpasw/opencl: numerics model (stage, sequential, exact, block(L,F)).")
@click.option("--eu", type=int, default=None, help="dpasw: whose D, EU 0 or 1 of the fused pair [0].")
@click.option("--sub-group", "sub_group", type=int, default=None,
              help="opencl split built-ins: whose D, sub-group 0 or 1 [0].")
@click.option("--dtype", default=None, help="sycl: D type (default: --ctype).")
@click.option("--btype", default=None, help="sycl: B type (default: --type).")
@click.option("--seed", default=0, show_default=True, help="Seed of the random A, B, C.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--svg", "svg_path", default=None,
              help="Also draw the MMA with D[ROW, COL], its A row and B column outlined (as mma --highlight).")
def explain_cmd(layer, row, col, model, eu, sub_group, dtype, btype, seed, as_json, svg_path, **kw):
    """How D[ROW, COL] was produced: exact products, order and rounding of the sums, intermediate values.

    LAYER: dpas, dpasw (--eu), amx (TDPB*D, TDPBF16PS, TDPFP16PS, TCMM*FP16PS, TDP*F8PS), opencl (--name; split
    built-ins: --sub-group), sycl (joint_matrix_mad: --device --type [--btype] [--ctype] [--dtype] --m --n --k
    [--layout of B]): every instruction the element goes through, in order.
    """
    from ..explorer.explain import explain, format_explain
    from .inputs import check_seed
    check_seed(seed)                    # named as the option here; explain() checks its seed= argument too
    o = _opts(kw, layer)
    o.update({k: v for k, v in (("eu", eu), ("sub_group", sub_group), ("dtype", dtype), ("btype", btype))
              if v is not None})
    rep = explain(layer, row, col, seed=seed, model=model, **o)
    if svg_path:
        from ..explorer import mma_layouts
        from ..explorer.svg import mma_svg
        lo = {k: v for k, v in o.items() if k not in ("eu", "sub_group", "dtype", "btype")}
        d = mma_layouts(layer, **lo)
        _write_svg(svg_path, mma_svg(d["A"], d["B"], d["C"], title=f"{layer}: D[{row}, {col}] = C + A x B",
                                     highlight=(row, col)))
    if as_json:
        emit_json(rep)
        return
    click.echo(format_explain(rep), nl=False)
