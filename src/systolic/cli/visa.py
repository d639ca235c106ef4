"""``systolic visa``: run, encode, decode vISA programs and show regions.

Commands: ``run PROG [--device P] [--in VAR=file.npy ...] [--out VAR ...]``, ``encode PROG``, ``vars PROG``,
``decode PROG HEX``, ``region SPEC --type T --exec-size N``, ``fmt PROG``.
"""

from __future__ import annotations

from pathlib import Path

import click

from .options import SuggestingGroup, device_option, path_option
import numpy as np

from ..errors import InvalidValue
from . import emit_json
from .inputs import make_dir, parse_var_input, read_text, write_output


def _read(path: str) -> str:
    return read_text(path, "vISA program")


@click.group("visa", cls=SuggestingGroup)
def group():
    """vISA: assemble, encode, decode and run programs (regions, predication, DPAS)."""


@group.command("run")
@click.argument("prog", type=click.Path(dir_okay=False))
@device_option("gpu", "pvc", dest="platform", aliases=("--platform/-p",))
@click.option("--in", "inputs", multiple=True, metavar="VAR=file.npy", help="Set a variable before running.")
@click.option("--out", "outputs", multiple=True, metavar="VAR", help="Print these variables (default: all).")
@click.option("--save", "save_dir", type=click.Path(file_okay=False), help="Also save outputs as VAR.npy here.")
@click.option("--em", default="0xffffffff", show_default=True, help="Execution mask EM (32 bits).")
@click.option("--num-grf", type=int, default=None, help="GRF count (large-GRF mode, e.g. 256 on pvc).")
@click.option("--trace", is_flag=True, help="Print each instruction and the variable it wrote.")
@path_option("spec", ("--fast",), help="Spec path (the manual, transcribed) or the vectorised ALU and DPAS fast "
             "paths (same bits, faster).")
@click.option("--two-grf-rule", type=click.Choice(["spec", "igc"]), default="spec", show_default=True,
              help="Region rule 6 on every operand (spec) or, as IGC's verifier, not on mov/logic/cmp/arith.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def run_cmd(prog, platform, inputs, outputs, save_dir, em, num_grf, trace, path, two_grf_rule, as_json):
    """Run PROG (vISA text) on one thread and print its variables."""
    from ..visa import asm
    from ..visa.interp import Machine
    p = asm.parse(_read(prog), source=prog)
    try:
        em_v = int(em, 0)
    except ValueError:
        raise InvalidValue("--em must be an integer", values={"em": em}) from None
    m = Machine(p, platform, num_grf=num_grf, em=em_v, path=path, two_grf_rule=two_grf_rule)
    for name, arr in (parse_var_input(s) for s in inputs):
        m.write(name, arr)

    def show(inst, mach):
        name = mach.dst_name(inst)
        val = "" if name is None else f"  -> {name} = {np.array2string(mach.read(name), threshold=64)}"
        click.echo(f"{inst.line}: {asm.format_instruction(inst, p)}{val}", err=as_json)

    m.run(trace=show if trace else None)
    names = list(outputs) or [v.name for v in p.general] + [v.name for v in p.predicate]
    res = {n: m.read(n) for n in names}
    if save_dir:
        d = make_dir(save_dir, "--save directory")
        for n, a in res.items():
            write_output(d / f"{n}.npy", lambda f, a=a: np.save(f, a), "--save file")
    if as_json:
        emit_json({n: [x if isinstance(x, (bool, int)) else float(x) for x in a.tolist()] for n, a in res.items()})
        return
    with np.printoptions(linewidth=100, threshold=1 << 16):
        for n, a in res.items():
            click.echo(f"{n} ({a.dtype}) = {np.array2string(a.astype(np.uint8) if a.dtype == bool else a)}")


@group.command("encode")
@click.argument("prog", type=click.Path(dir_okay=False))
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the instruction bytes to a file.")
def encode_cmd(prog, output):
    """Print each instruction of PROG with its binary encoding (hex)."""
    from ..visa import asm, encoding
    p = asm.parse(_read(prog), source=prog)
    blob = b""
    for inst in p.instructions:
        b = encoding.encode_instruction(inst, p)
        blob += b
        click.echo(f"{b.hex():<64} {asm.format_instruction(inst, p)}")
    if output:
        write_output(output, lambda f: f.write(blob), "--output file")


@group.command("decode")
@click.argument("prog", type=click.Path(dir_okay=False))
@click.argument("hexbytes", required=False)
@click.option("--file", "binfile", type=click.Path(dir_okay=False), help="Read the bytes from a file.")
def decode_cmd(prog, hexbytes, binfile):
    """Decode instruction bytes (HEX or --file) using PROG's declarations; print vISA text."""
    from ..visa import asm, encoding
    p = asm.parse(_read(prog), source=prog)
    if binfile:
        try:
            data = Path(binfile).read_bytes()
        except OSError as e:
            raise InvalidValue(f"cannot read {binfile}: {e.strerror}", values={"path": binfile}) from None
    elif hexbytes:
        try:
            data = bytes.fromhex(hexbytes.replace(" ", ""))
        except ValueError:
            raise InvalidValue("HEX must be hexadecimal bytes", values={"hex": hexbytes[:32]}) from None
    else:
        raise InvalidValue("give HEX or --file", values={})
    for inst in encoding.decode_program(data, p):
        click.echo(asm.format_instruction(inst, p))


@group.command("fmt")
@click.argument("prog", type=click.Path(dir_okay=False))
def fmt_cmd(prog):
    """Parse PROG and print it back in IGC's spelling."""
    from ..visa import asm
    click.echo(asm.format_program(asm.parse(_read(prog), source=prog)), nl=False)


@group.command("region")
@click.argument("spec")
@click.option("--type", "-t", "tname", default="d", show_default=True, help="Element type (ud, d, w, b, f, hf, ...).")
@click.option("--exec-size", "-n", default=8, show_default=True, type=int)
@device_option("gpu", "pvc", dest="platform", aliases=("--platform/-p",))
@click.option("--json", "as_json", is_flag=True)
def region_cmd(spec, tname, exec_size, platform, as_json):
    """Which elements and GRF bytes a region touches, e.g. SPEC = '(1,2)<8;4,2>' (source) or '(0,0)<2>' (dst)."""
    from ..visa import regions
    from ..visa.isa import vtype
    from ..xmx.platform import get_platform
    t = vtype(tname)
    gb = get_platform(platform).grf_bytes
    rows = regions.region_elements(spec, tname, exec_size, gb)
    if as_json:
        emit_json(rows)
        return
    from rich.console import Console
    from rich.table import Table
    tb = Table(title=f"{spec} :{t.name}  exec size {exec_size}  GRF {gb} bytes")
    for c in ("channel", "element", "byte", "grf", "subreg_byte"):
        tb.add_column(c, justify="right")
    for r in rows:
        tb.add_row(*(str(r[k]) for k in ("channel", "element", "byte", "grf", "subreg_byte")))
    Console().print(tb)


@group.command("vars")
@click.argument("prog", type=click.Path(dir_okay=False))
@device_option("gpu", "pvc", dest="platform", aliases=("--platform/-p",))
@click.option("--num-grf", type=int, default=None)
@click.option("--json", "as_json", is_flag=True)
def vars_cmd(prog, platform, num_grf, as_json):
    """Where each general variable of PROG lives in the GRF (the JIT placement rules), plus A/P variables."""
    from ..visa import asm
    from ..visa.interp import Machine
    p = asm.parse(_read(prog), source=prog)
    m = Machine(p, platform, num_grf=num_grf)
    gb = m.grf.grf_bytes
    rows = []
    for v in p.general:
        off = m.layout.offsets[v.name]
        rows.append({"name": v.name, "kind": "G", "type": v.type.name, "num_elts": v.num_elts, "bytes": v.size,
                     "align": v.align or "", "alias": f"{v.alias[0]}+{v.alias[1]}" if v.alias else "",
                     "offset": off, "first": f"r{off // gb}.{off % gb}",
                     "last": f"r{(off + v.size - 1) // gb}.{(off + v.size - 1) % gb}"})
    rows += [{"name": a.name, "kind": "A", "type": "uw", "num_elts": a.num_elts, "bytes": 2 * a.num_elts,
              "align": "", "alias": "", "offset": None, "first": "", "last": ""} for a in p.address]
    rows += [{"name": q.name, "kind": "P", "type": "bool", "num_elts": q.num_elts, "bytes": None,
              "align": "", "alias": "", "offset": None, "first": "", "last": ""} for q in p.predicate]
    if as_json:
        emit_json(rows)
        return
    from rich.console import Console
    from rich.table import Table
    tb = Table(title=f"{prog} on {m.platform.name}: {m.grf.num_grf} GRFs of {gb} bytes")
    cols = ("name", "kind", "type", "num_elts", "bytes", "align", "alias", "offset", "first", "last")
    for c in cols:
        tb.add_column(c)
    for r in rows:
        tb.add_row(*("" if r[c] is None else str(r[c]) for c in cols))
    Console().print(tb)
