"""The ``systolic`` command line (click; rich for tables).

Each engine contributes its verbs from its own module (``systolic.cli.amx``,
``systolic.cli.xmx``, ``systolic.cli.visa``), each defining a click group named
``group``; they are loaded lazily so ``systolic --help`` stays fast and one
broken module cannot hide the others.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import sys

import click

from .. import __version__
from ..errors import SystolicError
from .options import SuggestingGroup

#: verb -> (module, one-line help)
SUBGROUPS = {
    "amx": ("systolic.cli.amx", "AMX tile machine, native AMX and the tile compiler."),
    "xmx": ("systolic.cli.xmx", "XMX systolic arrays: DPAS / DPASW."),
    "visa": ("systolic.cli.visa", "vISA: assemble, encode, decode and run programs."),
    "opencl": ("systolic.cli.opencl", "OpenCL sub-group matrix built-ins: list and explain."),
    "cl": ("systolic.cli.cl", "OpenCL C kernels through clang and the SIMT interpreter: build, prelude."),
    "sycl": ("systolic.cli.sycl", "SYCL joint_matrix: devices and their matrix combinations."),
    "layout": ("systolic.cli.layout", "Who holds which element, at every layer: detail, where, what, table, explain."),
    "gpu": ("systolic.cli.gpu", "The CUDA backend: its state and a self-check."),
    "vectors": ("systolic.cli.vectors", "Test-vector campaigns on a Dask cluster: generate, verify."),
}

#: top-level commands living in their own module (name -> (module, attribute))
COMMANDS = {
    "run": ("systolic.cli.run", "command"),
    "study": ("systolic.cli.study", "command"),
}


class _Lazy(SuggestingGroup):
    def list_commands(self, ctx):
        names = set(super().list_commands(ctx))
        names.update(n for n, (mod, _) in SUBGROUPS.items() if importlib.util.find_spec(mod) is not None)
        names.update(n for n, (mod, _) in COMMANDS.items() if importlib.util.find_spec(mod) is not None)
        return sorted(names)

    def get_command(self, ctx, name):
        cmd = super().get_command(ctx, name)
        if cmd is None and name in COMMANDS:
            mod, attr = COMMANDS[name]
            if importlib.util.find_spec(mod) is None:
                return None
            return getattr(importlib.import_module(mod), attr)
        if cmd is not None or name not in SUBGROUPS:
            return cmd
        mod = SUBGROUPS[name][0]
        if importlib.util.find_spec(mod) is None:
            return None
        return importlib.import_module(mod).group


def _finite_json(v):
    """``v`` with every non-finite float written as the string "NaN", "Infinity" or "-Infinity": RFC 8259 JSON
    has no such numbers (json.dumps would write bare NaN/Infinity, which strict parsers refuse)."""
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, dict):
        return {k: _finite_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite_json(x) for x in v]
    return v


def emit_json(obj) -> None:
    """Print ``obj`` as JSON (the ``--json`` form of data verbs; non-finite floats as strings, see _finite_json)."""
    click.echo(json.dumps(_finite_json(obj), indent=2, default=str))


@click.group(cls=_Lazy, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="systolic")
def cli():
    """systolic: Intel's matrix engines (AMX tiles, XMX/DPAS) made executable, bit for bit.

    New here: the README's "Start here" (five commands); words: docs/glossary.md. Every command names the
    hardware with --device (any alias: spr = sapphirerapids, pvc = xehpc, ...) and M with --m.
    """


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def info(as_json):
    """This machine: CPU AMX features, Linux tile-data permission, LLVM, optional GPU libraries."""
    from ..host import summary
    s = summary()
    try:
        from ..amx.native import availability
        ok, why = availability()
    except ImportError as exc:  # pragma: no cover - the native module is part of the package
        ok, why = False, f"native backend not importable: {exc}"
    s["native_amx_backend"] = {"available": ok, "reason": why}
    from ..amx import native_matmul
    from ..jit import vector_bits
    s["amx_matmul_paths"] = native_matmul.status()    # which path amx.matmul takes per instruction (no self-check)
    try:
        s["jit_vector_bits"] = vector_bits()
    except Exception as exc:  # no llvmlite JIT here, or a bad SYSTOLIC_VECTOR_BITS
        s["jit_vector_bits"] = f"unavailable: {exc}"
    from ..gpu import runtime as gpu_runtime       # lazy inside: imports no CuPy until asked
    s["cuda_backend"] = gpu_runtime.info()
    if as_json:
        emit_json(s)
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"systolic {__version__}", show_header=False)
    t.add_column("what", style="bold")
    t.add_column("value")
    t.add_row("CPU", s["cpu"])
    t.add_row("AMX features (/proc/cpuinfo)", ", ".join(s["amx_features"]) or "none")
    t.add_row("AMX features (LLVM host)", ", ".join(s["llvm_amx_features"]) or "none")
    perm = s["tile_data_permission"]
    t.add_row("Linux tile data (XTILEDATA)", ("granted" if perm["granted"] else "not granted: " + perm["reason"]))
    t.add_row("native AMX backend", "available" if ok else f"unavailable: {why} (the emulator is used)")
    paths = s["amx_matmul_paths"]
    reasons = {v["reason"] for v in paths.values()}
    if len(reasons) == 1 and not any(v["native"] for v in paths.values()):
        t.add_row("amx.matmul path", f"emulator ({reasons.pop()})")
    else:
        t.add_row("amx.matmul path", "; ".join(f"{mn}: " + ("native" if v["native"] else f"emulator ({v['reason']})")
                                               for mn, v in paths.items()))
    t.add_row("JIT vector width", f"{s['jit_vector_bits']} bits (SYSTOLIC_VECTOR_BITS overrides)")
    g = s["cuda_backend"]
    from rich.markup import escape
    t.add_row("CUDA backend (systolic.gpu)", escape(("available: " if g["available"] else "unavailable: ") + g["reason"]))
    t.add_row("LLVM", s["llvm"] or "missing")
    libs = s["optional_libraries"]
    t.add_row("optional libraries", ", ".join(f"{k} {v}" for k, v in libs.items() if v) or "none")
    Console().print(t)


@cli.command("types")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per type.")
def types_cmd(as_json):
    """The element-type table: bits, format, IGC precision code, dtype, range."""
    from .. import types as T
    rows = [T.as_dict(t) for t in T.all_types()]
    if as_json:
        emit_json(rows)
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title="element types")
    for col in ("name", "aliases", "bits", "format", "IGC code", "dtype", "min", "max"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["name"], ", ".join(r["aliases"]), str(r["bits"]), r["format"],
                  "" if r["igc_precision_code"] is None else str(r["igc_precision_code"]), r["dtype"] or "-",
                  f"{r['min']:.6g}" if isinstance(r["min"], float) else str(r["min"]),
                  f"{r['max']:.6g}" if isinstance(r["max"], float) else str(r["max"]))
    Console().print(t)


@cli.command()
@click.option("--seed", default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def tour(seed, as_json):
    """Run every engine and layer once (AMX, native AMX if present, XMX, SYCL, OpenCL, vISA, the tile compiler,
    layouts, counters, torch if installed), each checked against an independent oracle."""
    from .tour import run_tour
    steps = run_tour(seed)
    if as_json:
        emit_json([s.__dict__ for s in steps])
    else:
        from rich.console import Console
        from rich.table import Table
        t = Table(title="systolic tour: each result checked against an independent oracle")
        for col in ("engine", "what ran", "checked against", "result", "s"):
            t.add_column(col)
        for s in steps:
            t.add_row(s.engine, s.what, s.check, f"[green]{s.verdict}[/]" if s.ok else "[red]MISMATCH[/]",
                      f"{s.seconds:.2f}")
        Console().print(t)
    if not all(s.ok for s in steps):
        sys.exit(1)


def main(argv=None) -> None:
    """Entry point: runs the CLI; a SystolicError becomes a one-line message and exit status 1."""
    try:
        cli.main(args=argv, prog_name="systolic", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        sys.exit(1)
    except SystolicError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
