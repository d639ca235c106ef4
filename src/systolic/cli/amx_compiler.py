"""``systolic amx compile`` and ``systolic amx run``: the tile compiler from the command line.

    systolic amx compile examples/amx/api.ll --emit machine
    systolic amx compile examples/amx/api.ll --print-after shapes --print-after regalloc
    systolic amx run examples/amx/api.ll --function api --arg 1 --arg 8 --arg 32 --mem buf=buf.npy
    systolic amx run examples/amx/api.c --cflags "-O0 -g" --function api --arg 1 --arg 8 --arg 32

A ``.c`` / ``.cpp`` (``.cc``, ``.cxx``) file goes through clang first (:func:`systolic.compiler.compile_c`);
``--cflags`` adds clang flags (``-O0`` .. ``-O3``, ``-g``, ``-D...``; default ``-O2``).
"""

from __future__ import annotations

import hashlib

import click
import numpy as np

from ..errors import InvalidValue
from .inputs import load_global_npy, make_dir, parse_call_arg, read_text, write_output
from .options import device_option

EMITS = ("ir", "pseudo", "machine", "llvm", "llvm-internal", "asm", "asm-internal")
# the pipeline of systolic.compiler.passes (PASS_NAMES there; a test keeps the two equal)
PASS_NAMES = ("verify", "shape-analysis", "shapes", "lower", "tileconfig", "assign", "regalloc", "config-prune")


def _read(file: str) -> str:
    return read_text(file, "LLVM IR file")


def _compile(file: str, cflags: str | None):
    """An LLVM IR file through the reader; a C/C++ file through clang first."""
    import pathlib

    from ..compiler import compile_c, compile_ir
    from ..compiler.c_frontend import C_SUFFIXES
    path = pathlib.Path(file)
    language = C_SUFFIXES.get(path.suffix)
    if language is None:
        if cflags:
            raise InvalidValue("--cflags applies to C and C++ sources (.c, .cpp, .cc, .cxx), not to LLVM IR",
                               rule="systolic amx --cflags", values={"file": file, "cflags": cflags})
        return compile_ir(_read(file), source=file)
    return compile_c(read_text(file, f"{language.upper()} source file"), language=language, flags=cflags or "",
                     filename=path.name, source_dir=str(path.parent))


_CFLAGS = click.option("--cflags", default=None,
                       help='clang flags for a .c/.cpp FILE, e.g. "-O0 -g" (default -O2).')


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
@_CFLAGS
def compile_cmd(file, emit, print_after, stats, cflags):
    """Compile FILE - LLVM IR (.ll, any module LLVM accepts) or C/C++ with clang's AMX API - to AMX code."""
    mod = _compile(file, cflags)
    for name, err in mod.source.refused.items():
        click.echo(f"; refused @{name}: {err}", err=True)
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
@click.option("--backend", type=click.Choice(["cpu", "native", "llvm", "emulator", "spec"]), default="cpu",
              show_default=True, help="Where the tile instructions run: cpu (the emulator, by --path), native (each "
                                      "instruction) or llvm (the whole function JIT-compiled; both need a CPU with "
                                      "AMX); emulator / spec = cpu with --path fast / spec.")
@click.option("--path", type=click.Choice(["fast", "spec"]), default=None,
              help="cpu backend: the fast path or the spec path (the SDM pseudo-code). [default: fast]")
@device_option("cpu", "spr", dest="cpu", aliases=("--cpu",),
               help="AMX CPU of the TileMachine (systolic amx cpus; any alias): decides which AMX instructions exist")
@click.option("--eager", is_flag=True, help="Run the uncompiled IR, one intrinsic at a time (the reference), where "
                                          "--backend (cpu or native) and --path say.")
@click.option("--save", type=click.Path(file_okay=False), help="Write every global after the run as NAME.npy here.")
@click.option("--trace", "show_trace", is_flag=True, help="List the tile instructions executed.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_CFLAGS
def run_cmd(file, function, args, mems, backend, path, cpu, eager, save, show_trace, as_json, cflags):
    """Compile FILE (LLVM IR, or C/C++ through clang) and run FUNCTION; print its result and a digest of every
    global."""
    if backend in ("emulator", "spec"):          # the older names of cpu + a path (systolic.vocabulary)
        old = "fast" if backend == "emulator" else "spec"
        if path not in (None, old):
            raise click.UsageError(f"--backend {backend} is the older spelling of --backend cpu --path {old}, not "
                                   f"the --path {path} also given; give --backend cpu --path ...")
        backend, path = "cpu", old
    path = "fast" if path is None else path
    mod = _compile(file, cflags)
    memory = dict(load_global_npy(m) for m in mems)
    values = [parse_call_arg(a) for a in args]
    if eager:
        res = mod.run_eager(function, *values, memory=memory, device=cpu, backend=backend, path=path)
    else:
        res = mod.run(function, *values, memory=memory, backend=backend, path=path, device=cpu,
                      record=show_trace)
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
