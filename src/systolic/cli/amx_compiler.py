"""``systolic amx compile`` and ``systolic amx run``: the tile compiler from the command line.

    systolic amx compile examples/amx/api.ll --emit machine
    systolic amx compile examples/amx/api.ll --print-after shapes --print-after regalloc
    systolic amx run examples/amx/api.ll --function api --arg 1 --arg 8 --arg 32 --mem buf=buf.npy
"""

from __future__ import annotations

import hashlib

import click
import numpy as np

from .inputs import load_global_npy, make_dir, parse_call_arg, read_text, write_output
from .options import device_option

EMITS = ("ir", "pseudo", "machine", "llvm", "llvm-internal", "asm", "asm-internal")
PASS_NAMES = ("verify", "shapes", "lower", "tileconfig", "regalloc")


def _read(file: str) -> str:
    return read_text(file, "LLVM IR file")


@click.command("compile")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--emit", type=click.Choice(EMITS), default="machine", show_default=True,
              help="ir: after shape propagation (x86_amx, .internal); pseudo: pseudo tile instructions with "
                   "ldtilecfg placed; machine: the allocated TileMachine program; llvm: LLVM IR with the "
                   "physical-register intrinsics; llvm-internal: LLVM's final form; asm/asm-internal: x86 "
                   "assembly of those (llvmlite).")
@click.option("--print-after", "print_after", type=click.Choice(PASS_NAMES), multiple=True,
              help="Also print the module after this pass (repeatable).")
@click.option("--stats", is_flag=True, help="Print the tile allocation of each function (JSON).")
def compile_cmd(file, emit, print_after, stats):
    """Compile an LLVM IR FILE (the seed's <256 x i32> form or LLVM's x86_amx form) to AMX code."""
    from ..compiler import compile_ir
    mod = compile_ir(_read(file), source=file)
    for p in print_after:
        click.echo(f"; *** IR after {p} ***")
        click.echo(mod.snapshots[p])
    click.echo(mod.emit(emit), nl=False)
    if stats:
        from . import emit_json
        emit_json({fn: {"assign": i["assign"], "tile_shapes": {f"tmm{r}": str(s) for r, s in i["shapes"].items()},
                        "spilled": i["spilled"], "copies": i["copies"],
                        "copies_eliminated": i["copies_eliminated"]} for fn, i in mod.info.items()})


compile_cmd.name = "compile"


@click.command("run")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--function", "-f", "function", required=True, help="The function to run.")
@click.option("--arg", "args", multiple=True, help="An argument: integer, or @global[+offset] for a pointer.")
@click.option("--mem", "mems", multiple=True, help="NAME=file.npy: the initial bytes of global @NAME.")
@click.option("--backend", type=click.Choice(["emulator", "spec", "native", "llvm"]), default="emulator",
              show_default=True, help="Where the tile instructions run (native/llvm need a CPU with AMX).")
@device_option("cpu", "spr", dest="cpu", aliases=("--cpu",),
               help="AMX CPU of the TileMachine (systolic amx cpus; any alias): decides which AMX instructions exist")
@click.option("--eager", is_flag=True, help="Run the uncompiled IR, one intrinsic at a time (the reference).")
@click.option("--save", type=click.Path(file_okay=False), help="Write every global after the run as NAME.npy here.")
@click.option("--trace", "show_trace", is_flag=True, help="List the tile instructions executed.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def run_cmd(file, function, args, mems, backend, cpu, eager, save, show_trace, as_json):
    """Compile FILE and run FUNCTION; print its result and a digest of every global."""
    from ..compiler import compile_ir
    mod = compile_ir(_read(file), source=file)
    memory = dict(load_global_npy(m) for m in mems)
    values = [parse_call_arg(a) for a in args]
    if eager:
        res = mod.run_eager(function, *values, memory=memory, cpu=cpu)
    else:
        res = mod.run(function, *values, memory=memory, backend=backend, cpu=cpu, record=show_trace)
    out = {"function": function, "value": res.value, "backend": "eager" if eager else backend,
           "globals": {k: {"bytes": int(v.size), "sha256": hashlib.sha256(v.tobytes()).hexdigest()[:16],
                           "head": v[:16].tolist()} for k, v in res.memory.items()}}
    if show_trace:
        out["trace"] = res.trace
    if save:
        d = make_dir(save, "--save directory")
        for k, v in res.memory.items():
            write_output(d / f"{k}.npy", lambda f, v=v: np.save(f, v), "--save file")
    if as_json:
        from . import emit_json
        emit_json(out)
        return
    for line in out.get("trace", []):
        click.echo(line)
    click.echo(f"@{function} returned {res.value}")
    for k, g in out["globals"].items():
        click.echo(f"@{k}: {g['bytes']} bytes sha256 {g['sha256']} first {g['head']}")


run_cmd.name = "run"

commands = [compile_cmd, run_cmd]
