"""``systolic amx cpus`` and ``systolic amx tilecfg``: the CPU models and the TILECFG decoder of the tile machine."""

from __future__ import annotations

import click

from . import emit_json
from .options import device_option


@click.command("cpus")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: features, palettes, TMUL limits, CPUID values.")
def cpus(as_json):
    """CPU models with AMX: features, palette 1 limits, CPUID 0x1D/0x1E."""
    from ..amx.cpu import CPUS
    rows = [c.as_dict() for c in CPUS.values()]
    if as_json:
        emit_json(rows)
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title="AMX CPU models")
    for col in ("name", "product", "features", "tmul_maxk", "tmul_maxn", "CPUID 1DH.1 (eax, ebx, ecx)"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["name"], r["product"], ", ".join(f.replace("amx-", "") for f in r["features"]),
                  str(r["tmul_maxk"]), str(r["tmul_maxn"]), ", ".join(r["cpuid"]["0x1d.1"][:3]))
    Console().print(t)


@click.command("tilecfg")
@click.argument("hex_image")
@device_option("cpu", "spr", dest="cpu", aliases=("--cpu",), help="AMX CPU whose LDTILECFG rules apply (any alias)")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def tilecfg(hex_image, cpu, as_json):
    """Decode a 64-byte TILECFG given in hex and check it as LDTILECFG would (#GP rules)."""
    from ..amx.cpu import get_cpu
    from ..amx.tilecfg import TileConfig, check_ldtilecfg
    from ..errors import InvalidValue
    text = "".join(hex_image.split()).removeprefix("0x")
    if len(text) != 128:
        # checked before the digits: an odd count is a length error, not a "not hexadecimal" one
        raise InvalidValue("the TILECFG image is 64 bytes = 128 hex digits",
                           rule="SDM LDTILECFG: m512 operand (64 bytes)", values={"hex_digits": len(text)})
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise InvalidValue("the TILECFG image must be hexadecimal", values={"image": hex_image[:40]}) from None
    cfg = TileConfig.from_bytes(raw)
    check_ldtilecfg(cfg, get_cpu(cpu))  # a #GP escapes as "error: #GP ..." with the rule
    d = {"palette": cfg.palette, "start_row": cfg.start_row,
         "tiles": {f"tmm{t}": {"rows": cfg.rows[t], "colsb": cfg.colsb[t]} for t in range(8) if cfg.valid(t)}}
    if as_json:
        emit_json(d)
        return
    click.echo(f"palette {cfg.palette}, start_row {cfg.start_row}" + ("  (INIT state)" if cfg.palette == 0 else ""))
    for name, v in d["tiles"].items():
        note = "" if v["colsb"] % 4 == 0 else "  (colsb % 4 != 0: #UD when used)"
        click.echo(f"  {name}: {v['rows']} rows x {v['colsb']} bytes{note}")


commands = [cpus, tilecfg]
