"""``systolic run FILE``: run a matrix-engine program on an emulated device and report it (docs/run.md).

    systolic run examples/sycl/seed_gemm_2021.py
    systolic run examples/visa/dpas_chain_s8.visa --device bmg
    systolic run examples/amx/tile_gemm_s8u8.ll --json
"""

from __future__ import annotations

import sys

import click

from . import emit_json
from .options import device_option

__all__ = ["command", "render"]

#: distinct DPAS/TMUL shapes shown in the layouts table (the most executed first; --json has all)
MAX_LAYOUTS = 4


def _fmt_value(v) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def _verdict_text(rep: dict) -> str:
    v = rep["verdict"]
    if v == "bit-identical":
        return "[green]bit-identical[/] to the oracle"
    if v == "unchecked":
        if rep["checks"]:
            return "[yellow]not checked[/] (a check holds no element: nothing was compared)"
        return "[yellow]not checked[/] (the program declares no oracle)"
    return "[bold red]MISMATCH[/]"


def _check_lines(c: dict) -> str:
    shape = " x ".join(map(str, c["shape"])) or "scalar"
    head = f"{c['name']} ({shape} {c['dtype']})"
    if c["ok"] is None:
        return f"{head}: {c['reason']}"
    if c["ok"]:
        return f"{head}: {c['elements']} elements bit-identical"
    if "reason" in c:
        return f"{head}: {c['reason']}"
    f = c["first_mismatch"]
    idx = ", ".join(map(str, f["index"]))
    return (f"{head}: {c['mismatches']} of {c['elements']} elements differ; first [{idx}]: result "
            f"{_fmt_value(f['result'])} ({f['result_bits']}) vs oracle {_fmt_value(f['oracle'])} "
            f"({f['oracle_bits']})")


def render(rep: dict, console) -> None:
    """Print the report as rich tables. Text that comes from the program (its docstring, notes, extra keys and
    values, names) is escaped: a '[/bold]' in it is shown, not read as rich markup."""
    from rich.markup import escape
    from rich.table import Table
    t = Table(title=escape(f"systolic run {rep['program']}"), show_header=False, title_justify="left")
    t.add_column("what", style="bold")
    t.add_column("value", overflow="fold")
    written = f" written against {', '.join(rep['models'])}" if rep.get("models") else ""
    t.add_row("program", f"{escape(rep['title'])}\n[dim]{rep['kind']} program{escape(written)}[/]")
    dev = rep["device"]
    extra = ""
    if rep["devices"]:
        extra = f"\n[dim]supports: {escape(', '.join(rep['devices']))} (--device)[/]"
    t.add_row("device", escape(f"{dev['name']}: {dev['summary']}") + extra)
    t.add_row("verdict", _verdict_text(rep) + "".join("\n" + escape(_check_lines(c)) for c in rep["checks"]))
    s = rep["seconds"]
    t.add_row("wall time", f"{s['run']:.3f} s running ({s['total']:.3f} s with loading and checking)")
    for k, v in rep["extras"].items():
        if v is not None and v != "":
            t.add_row(escape(str(k)), escape(str(v)))
    console.print(t)

    ins = rep["instructions"]
    if ins["totals"]:
        it = Table(title="instructions executed (D = A x B + C: A is M x K, B is K x N)", title_justify="left")
        for col in ("engine", "instruction", "shape", "where", "count"):
            it.add_column(col, justify="right" if col == "count" else "left")
        for e in ins["dpas"]:
            from ..xmx.rules import ops_per_chan
            k = e["sd"] * ops_per_chan(e["b"], e["a"])
            it.add_row("XMX", e["op"].upper(), f"M {e['rc']}, N {e['exec']}, K {k}: {e['a']} x {e['b']} -> "
                       f"{e['dst']}", f"{e['platform']}, {e['via']}", str(e["count"]))
        from ..run.report import amx_k
        for r in ins["amx"]:
            if r["m"] is not None:
                k, what = amx_k(r["op"], r["k_dwords"])
                shape = f"M {r['m']}, N {r['n']}, K {k} ({what})"
            else:
                shape = f"{r['rows']} rows x {r['colsb']} bytes" if r["rows"] is not None else ""
            it.add_row("AMX", r["op"].upper(), shape, r["via"], str(r["count"]))
        for op, n in ins["visa"].items():
            it.add_row("vISA", op, "", "interpreter", str(n))
        it.add_row("", "[bold]totals[/]", ", ".join(f"{k} {v}" for k, v in ins["totals"].items()), "", "")
        console.print(it)

    if rep["layouts"]:
        lt = Table(title="layouts involved (one per distinct DPAS / TMUL shape)", title_justify="left")
        for col in ("#", "instruction", "operand", "shape", "layout"):
            lt.add_column(col, overflow="fold")
        shown = rep["layouts"][:MAX_LAYOUTS]
        commands = []
        for L in shown:
            first = True
            for o in L["operands"]:
                commands.append(o["command"])
                lt.add_row(str(len(commands)), f"{L['instruction']}\n[dim]{L['where']}, x{L['count']}[/]"
                           if first else "", o["operand"], o["shape"], o["layout"])
                first = False
        if len(rep["layouts"]) > len(shown):
            lt.caption = (f"{len(rep['layouts']) - len(shown)} more shapes (the edge tiles of the same GEMMs); "
                          "--json lists them all")
        console.print(lt)
        # whole, one per line, never folded: a command must survive copy and paste at any terminal width
        console.print("see each layout with:", style="bold")
        for n, c in enumerate(commands, 1):
            console.print(f"  [{n}] {c}", soft_wrap=True, markup=False, highlight=False)


@click.command("run")
@click.argument("file", type=click.Path(dir_okay=False))
@device_option("any", aliases=("--cpu", "--platform"), normalize=False,
               help="Device to run on: an AMX CPU (spr, gnr, ...) or an XMX GPU (pvc, dg2, bmg, ...), any alias "
                    "(default: the program's DEVICE / header 'device'); one of the program's DEVICES when it "
                    "declares them.")
@click.option("--function", "-f", "function", default=None, help=".ll only: the function to run (overrides the "
                                                                  "header).")
@click.option("--arg", "args", multiple=True, help=".ll only: an argument, integer or @global[+offset] (repeatable; "
                                                    "replaces the header's args).")
@click.option("--mem", "mems", multiple=True, help=".ll only: NAME=file.npy, initial bytes of global @NAME.")
@click.option("--timeout", type=click.FloatRange(min=0), default=600.0, show_default=True,
              help="Seconds the program may take to load and run (0: no limit); past it, an error naming the "
                   "limit.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--traceback", "show_traceback", is_flag=True,
              help="When the program itself raises, also print its Python traceback (stderr).")
def command(file, device, function, args, mems, timeout, as_json, show_traceback):
    """Run FILE (a .py program, an .ll LLVM IR file with AMX, a .visa kernel) on an emulated device; report the
    verdict against its oracle, the instruction counts and the layouts involved. Exit status 1 on a mismatch."""
    import contextlib

    from ..errors import SystolicError
    from ..run import run_file
    try:
        # stdout carries the report (the JSON of --json must stay JSON): what the program prints goes to stderr
        with contextlib.redirect_stdout(sys.stderr):
            rep = run_file(file, device, function=function, args=args, mems=mems, timeout=timeout)
    except SystolicError as e:
        if show_traceback:
            import traceback
            # the program's own exception when it was wrapped; else the typed error itself (one the program
            # raised and that passed through unchanged, or a broken rule found by systolic run)
            traceback.print_exception(e.__cause__ if e.__cause__ is not None else e, file=sys.stderr)
        raise
    if as_json:
        emit_json(rep)
    else:
        from rich.console import Console
        render(rep, Console())
    if rep["verdict"] == "MISMATCH":
        sys.exit(1)
