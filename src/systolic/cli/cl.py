"""``systolic cl``: OpenCL C kernels through clang and systolic.cl's interpreter (docs/cl.md).

    systolic cl build examples/cl/gemm_bf16_pvc.cl --device pvc --emit calls
    systolic cl build kernel.cl --emit llvm -D TILE=16
    systolic cl prelude --device dg2
"""

from __future__ import annotations

from pathlib import Path

import click

from . import emit_json
from .options import SuggestingGroup, device_option

__all__ = ["group"]


@click.group("cl", cls=SuggestingGroup)
def group():
    """OpenCL C kernels: build (IR, matrix call sites) and the prelude."""


@group.command("build")
@click.argument("file", type=click.Path(dir_okay=False))
@device_option("gpu", "pvc", dest="device", aliases=("--platform",))
@click.option("--emit", "emit", type=click.Choice(["llvm", "calls"]), default="calls", show_default=True,
              help="llvm: the LLVM IR clang made; calls: each matrix built-in call and the DPAS it becomes.")
@click.option("--define", "-D", "defines", multiple=True, help="A macro, NAME or NAME=VALUE (as clBuildProgram -D).")
@click.option("--include-dir", "-I", "includes", multiple=True, help="An include directory.")
@click.option("--options", default="", help="Other build options, as one string (e.g. '-cl-std=CL2.0').")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (with --emit calls).")
def build(file, device, emit, defines, includes, options, as_json):
    """Compile FILE (OpenCL C) for DEVICE with systolic's prelude and show the IR or the matrix call sites."""
    from ..cli.inputs import read_text
    from ..cl import Context, Program
    from ..cl.calls import matrix_call_sites
    p = Path(file)
    text = read_text(p, "OpenCL C source")
    opts = [f"-D{d}" for d in defines] + [f"-I{i}" for i in includes] + ([options] if options else [])
    ctx = Context(device=device)
    prg = Program(ctx, text, filename=p.name, source_dir=str(p.parent)).build(options=opts)
    if emit == "llvm":
        click.echo(prg.ir, nl=False)
        return
    sites = matrix_call_sites(prg.built, ctx.platform)
    if as_json:
        emit_json({"file": str(p), "device": ctx.platform.name, "kernels": prg.kernel_names, "calls": sites})
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"{p.name} on {ctx.platform.name}: {len(sites)} matrix built-in call site(s); kernels "
                    f"{', '.join(prg.kernel_names)}")
    for col in ("function", "built-in", "M x N x K", "becomes"):
        t.add_column(col)
    for s in sites:
        t.add_row(s["function"], s["builtin"], f"{s['M']} x {s['N']} x {s['K']}",
                  f"one {s['instruction_kind']}: {s['dpas']} (exec {s['sub_group_size']}, RC {s['M']})")
    Console().print(t)


@group.command("prelude")
@device_option("gpu", "pvc", dest="device", aliases=("--platform",))
def prelude_cmd(device):
    """Print the OpenCL C prelude systolic passes to clang for DEVICE (generated from its built-in tables)."""
    from ..cl.prelude import prelude
    from ..xmx.platform import get_platform
    click.echo(prelude(get_platform(device).name), nl=False)
