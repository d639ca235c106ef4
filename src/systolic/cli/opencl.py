"""``systolic opencl ...``: the sub-group matrix built-ins (list) and who holds what (explain)."""

from __future__ import annotations

import click

from . import emit_json
from .options import SuggestingGroup, device_option


@click.group("opencl", cls=SuggestingGroup)
def group():
    """OpenCL sub-group matrix built-ins: list them, explain their work-item layouts."""


@group.command("list")
@device_option("gpu", None, dest="platform", aliases=("--platform",), help="XMX GPU: dg2, pvc, bmg, lnl, xe3p (any alias); default: every overload")
@click.option("--name", "name_filter", default=None, help="Only names containing this text.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per overload.")
def list_cmd(platform, name_filter, as_json):
    """Every built-in overload: M, N, K, argument types, sub-group size, the DPAS it lowers to."""
    from ..opencl import builtins
    recs = [r for r in builtins(platform) if not name_filter or name_filter in r.name]
    if as_json:
        emit_json([r.as_dict() for r in recs])
        return
    from rich.table import Table
    title = f"sub-group matrix built-ins on {platform}" if platform else "sub-group matrix built-ins (all)"
    t = Table(title=f"{title}: {len(recs)} overloads, {len({r.name for r in recs})} names")
    for col in ("name", "M", "N", "K", "a", "b", "acc", "result", "SG", "lowers to", "source"):
        t.add_column(col)
    for r in recs:
        t.add_row(r.name, str(r.m), str(r.n), str(r.k), r.a_type.name, r.b_type.name, r.acc_type.name,
                  r.result_type.name, str(r.sub_group_size), r.dpas, r.source)
    _console().print(t)


def _console():
    """A rich console; when the output is not a terminal, wide enough that names are not cut."""
    from rich.console import Console
    c = Console()
    return c if c.is_terminal else Console(width=200)


def _holders(L):
    """{holder prefix (sub_group?, work_item): {component: [(row, col), ...] lowest bits first}}."""
    out: dict = {}
    for rec in L.records():
        key = tuple(rec[h] for h in L.holder[:-1])
        out.setdefault(key, {}).setdefault(rec["component"], []).append((rec["bits"][0], (rec["row"], rec["col"])))
    return {k: {c: [e for _, e in sorted(v)] for c, v in sorted(comps.items())} for k, comps in sorted(out.items())}


@group.command("explain")
@click.argument("name")
@device_option("gpu", "pvc", dest="platform", aliases=("--platform",))
@click.option("--m", "--rc", "m", default=None, type=int, help="M (rows of A, components of acc); default: the largest.")
@click.option("--acc", default=None, help="Accumulator C type when there are several (float, short, half).")
@click.option("--operand", "operands", multiple=True,
              help="Operand(s) to show: a, b, c (acc), d (result) or src2, src1, src0, dst (default: a, b, acc).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def explain(name, platform, m, acc, operands, as_json):
    """Which work-item (and component, and bits) holds which element of a, b and acc, as tables."""
    from ..opencl import mapping as MP
    from ..xmx.platform import get_platform
    P = get_platform(platform)
    rec = MP.resolve(name, P, m=m, acc=acc)
    from ..layout.operands import operand_name
    ops = tuple(dict.fromkeys(operand_name("opencl", o) for o in operands)) or ("a", "b", "acc")
    layouts = {op: MP.operand_layout(rec, op, platform=P.name) for op in ops}
    if as_json:
        emit_json({"builtin": rec.as_dict(), "platform": P.name,
                   "operands": {op: {"title": L.title, "holder": list(L.holder), "unit_bits": L.unit_bits,
                                     "rows": L.rows, "cols": L.cols, "element": L.element,
                                     "holders": [{**dict(zip(L.holder[:-1], k)),
                                                  "components": [[list(e) for e in comps.get(c, [])]
                                                                 for c in range(L.params["components"])]}
                                                 for k, comps in _holders(L).items()]}
                                for op, L in layouts.items()}})
        return
    from rich.table import Table
    con = _console()
    con.print(f"[bold]{rec.signature}[/]  // {P.name}, sub-group {rec.sub_group_size}, lowers to {rec.dpas} "
              f"(M={rec.m} N={rec.n} K={rec.k}; {rec.source})")
    typ = {"a": rec.a_type, "b": rec.b_type, "acc": rec.acc_type, "result": rec.result_type}
    for op, L in layouts.items():
        hs = _holders(L)
        ncomp = L.params["components"]
        ct = typ[op]
        # OpenCL C's int8 is a vector of 8 ints, not an 8-bit integer: say so where the name appears
        what = f"{ct.name} = {ct.n} x {ct.base}" if ct.n > 1 else ct.name
        con.print(f"\n[bold]{op}[/] ({what} per work-item): {L.title}; cells: elements (row,col), "
                  "lowest bits first")
        t = Table()
        for h in L.holder[:-1]:
            t.add_column(h.replace("_", " "))
        for c in range(ncomp):
            t.add_column(f".s{c:x}" if ncomp > 1 else "value")
        for key, comps in hs.items():
            t.add_row(*[str(x) for x in key],
                      *[" ".join(f"{r},{c}" for r, c in comps.get(j, [])) or "-" for j in range(ncomp)])
        n = L.params["sub_group_size"]
        seen = {k[-1] for k in hs}
        idle = [i for i in range(n) if i not in seen]
        con.print(t)
        if idle:
            con.print(f"  work-items {idle} hold no element of {op} (their data is ignored)")
