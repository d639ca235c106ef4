"""``systolic amx ...``: verbs of the AMX engine, the native backend and the tile compiler.

The verbs live beside the code they drive: each module named in ``PARTS``
defines ``commands`` (a list of click commands) and is loaded if present.
"""

from __future__ import annotations

import importlib
import importlib.util

import click

from .options import SuggestingGroup

PARTS = ("systolic.cli.amx_machine", "systolic.cli.amx_native", "systolic.cli.amx_compiler")


@click.group("amx", cls=SuggestingGroup)
def group():
    """AMX: the tile machine, native execution on real AMX, and the tile compiler."""


for _mod in PARTS:
    if importlib.util.find_spec(_mod) is not None:
        for _cmd in importlib.import_module(_mod).commands:
            group.add_command(_cmd)
