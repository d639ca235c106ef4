"""vISA: Intel's virtual ISA for GPUs, made executable (IGC documentation/visa; visa-operands.md).

Modules: :mod:`.isa` (the instruction set as data), :mod:`.variables` (declarations and GRF layout),
:mod:`.regions`, :mod:`.indirect`, :mod:`.predication` (operand semantics), :mod:`.operands` (the
operand records), :mod:`.encoding` (binary operands and instructions), :mod:`.asm` (text assembly),
:mod:`.alu` (per-element arithmetic), :mod:`.interp` (the SIMD interpreter, DPAS through :mod:`systolic.xmx`).

>>> from systolic import visa
>>> m = visa.run_text('''
... .decl V1 v_type=G type=d num_elts=8
... add (M1, 8) V1(0,0)<1> 0x76543210:v 0x1:d
... ''', device="dg2")
>>> m.read("V1").tolist()
[1, 2, 3, 4, 5, 6, 7, 8]
"""

from __future__ import annotations

from .asm import format_program, parse
from .program import Instruction, Program

__all__ = ["parse", "format_program", "Program", "Instruction", "run_text", "Machine"]


def __getattr__(name):
    if name == "Machine":
        from .interp import Machine
        return Machine
    raise AttributeError(name)


def run_text(text: str, device=None, inputs=None, source: str | None = None, **kw):
    """Parse and run vISA text on GPU platform ``device`` (default pvc); returns the
    :class:`~systolic.visa.interp.Machine` holding the results. ``kw``: the Machine's keywords (``platform=``,
    the older name of ``device=``, warns)."""
    from ..vocabulary import renamed
    from .interp import run
    if "platform" in kw:                 # the older name of device= (systolic.vocabulary)
        device = renamed({"platform": kw.pop("platform")}, {"platform": "device"}, "visa.run_text",
                         device=device)["device"]
    return run(parse(text, source), device, inputs, **kw)
