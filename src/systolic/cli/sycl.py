"""``systolic sycl ...``: the SYCL devices joint_matrix runs on and their matrix combinations."""

from __future__ import annotations

import click

from . import emit_json
from .options import SuggestingGroup, device_option


@click.group("sycl", cls=SuggestingGroup)
def group():
    """SYCL joint_matrix: devices by architecture and their matrix combinations (docs/sycl.md)."""


@group.command("devices")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def devices(as_json):
    """The devices (AMX CPUs, XMX GPUs): engine, sub-group size, number of combinations."""
    from ..sycl import devices as list_devices
    rows = [d.as_dict() for d in list_devices()]
    if as_json:
        emit_json(rows)
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title="SYCL devices (queue(name))")
    for col in ("name", "architecture", "backend", "engine", "sub-group", "combinations", "description"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["name"], r["architecture"], r["backend"], r["engine"], str(r["sub_group_size"]),
                  str(r["combinations"]), r["description"])
    Console().print(t)


@group.command("combinations")
@click.argument("device_arg", metavar="[DEVICE]", required=False)
@device_option("sycl", aliases=(), normalize=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the device and its combination records.")
def combinations(device_arg, device, as_json):
    """DEVICE's info::device::matrix_combinations (intel/llvm device_info.hpp, in its order).

    A nonzero max_* means any size up to it, a nonzero msize/nsize/ksize one fixed size."""
    from ..sycl import get_device
    from .options import normalize_device
    if device_arg is not None and device is not None and device_arg != device:
        raise click.UsageError(f"DEVICE {device_arg} and --device {device} name two devices; give one")
    if (device_arg or device) is None:
        raise click.UsageError("name the device: systolic sycl combinations DEVICE (or --device DEVICE); "
                               "systolic sycl devices lists them")
    rec = get_device(normalize_device(device_arg or device, "sycl"))
    rows = [c.as_dict() for c in rec.combinations]
    if as_json:
        emit_json({"device": rec.name, "architecture": rec.architecture, "source": rec.source,
                   "combinations": rows})
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"{rec.name} ({rec.architecture}) matrix combinations", caption=rec.source)
    for col in ("atype", "btype", "ctype", "dtype", "M", "N", "K"):
        t.add_column(col)

    def dim(mx, fixed):
        return str(fixed) if fixed else f"<= {mx}"
    for c in rec.combinations:
        t.add_row(c.atype, c.btype, c.ctype, c.dtype, dim(c.max_msize, c.msize), dim(c.max_nsize, c.nsize),
                  dim(c.max_ksize, c.ksize))
    Console().print(t)
