"""``systolic gpu ...``: the CUDA backend's state and a bit-identity self-check against the CPU path."""

from __future__ import annotations

import sys

import click

from . import emit_json
from .options import SuggestingGroup


@click.group("gpu", cls=SuggestingGroup)
def group():
    """The CUDA backend (systolic.gpu): its state and a self-check against the CPU path."""


@group.command("info")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def info_cmd(as_json):
    """Whether the CUDA backend can run here, and why not (no CuPy, no device, driver too old...)."""
    from ..gpu import runtime
    s = runtime.info()
    if as_json:
        emit_json(s)
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    t = Table(title="systolic CUDA backend", show_header=False)
    t.add_column("what", style="bold")
    t.add_column("value")
    t.add_row("available", "[green]yes[/]" if s["available"] else "[red]no[/]")
    t.add_row("reason" if not s["available"] else "device", escape(s["reason"]))
    for k in ("cupy", "cuda_runtime", "driver_cuda", "nvrtc", "name", "compute_capability", "memory_gib",
              "multiprocessors", "devices"):
        if s.get(k) is not None:
            t.add_row(k, str(s[k]))
    Console().print(t)


@group.command("check")
@click.option("--seed", default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def check_cmd(seed, as_json):
    """Run small GEMMs on the GPU and compare them bit for bit with the CPU path (exit status 1 on a mismatch)."""
    from ..gpu.selfcheck import run_checks
    res = run_checks(seed)
    if as_json:
        emit_json([dict(name=r.name, outputs=r.outputs, mismatches=r.mismatches, ok=r.ok, seconds=round(r.seconds, 3),
                        detail=r.detail) for r in res])
    else:
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table
        t = Table(title="systolic gpu check: CUDA vs CPU path, bit for bit")
        for col in ("engine / instruction", "outputs", "result", "s", "inputs"):
            t.add_column(col)
        for r in res:
            t.add_row(r.name, str(r.outputs), "[green]bit-identical[/]" if r.ok else f"[red]{r.mismatches} differ[/]",
                      f"{r.seconds:.2f}", escape(r.detail))
        Console().print(t)
    if not all(r.ok for r in res):
        sys.exit(1)
