"""vISA programs for ``systolic run``: the interpreter of ``systolic visa run`` plus the file's header checks."""

from __future__ import annotations

import time
from pathlib import Path

from ..cli.inputs import parse_var_input, read_text
from ..errors import InvalidValue, ProgramError
from .header import check_expects, parse

__all__ = ["run", "DEFAULT_DEVICE"]

#: the platform when neither the header nor --device names one (as ``systolic visa run``)
DEFAULT_DEVICE = "pvc"


def run(path: Path, device: str | None = None) -> dict:
    """Parse, run on one thread of the platform ``device`` and check the header's ``expect`` lines."""
    from .. import counters
    from ..visa import asm
    from ..visa.interp import Machine
    t0 = time.perf_counter()
    text = read_text(path, "vISA program")
    h = parse(text, "//")
    if h.function or h.args or h.fills or h.oracles or h.cflags:
        raise ProgramError("function/args/fill/oracle/cflags are LLVM IR and C directives; a vISA program sets variables with "
                           "'in' and checks them with 'expect'", rule="systolic-run header of .visa files",
                           values={"file": str(path)})
    default = h.device or DEFAULT_DEVICE
    dev = h.device_for(device, DEFAULT_DEVICE)
    from .devices import xmx_platform
    prog = asm.parse(text, source=str(path))
    m = Machine(prog, xmx_platform(dev))      # any alias of an XMX GPU (xehpc, intel_gpu_pvc, arl)
    for spec, line in h.inputs:
        var, _, val = spec.partition("=")
        if val.endswith(".npy") and not Path(val).is_absolute():
            spec = f"{var}={path.parent / val}"        # relative to the program, as fill in .ll files
        try:
            name, arr = parse_var_input(spec)
        except InvalidValue as e:           # a bad value or .npy file: the error names the header line
            if isinstance(e, ProgramError):
                raise
            raise ProgramError(e.message, rule=e.rule or "systolic-run in VAR = values or file.npy",
                               values={"line": line, **e.values}) from None
        m.write(name, arr)
    with counters.recording() as rec:
        t1 = time.perf_counter()
        m.run()
        t2 = time.perf_counter()

    def read(name, typ):
        if typ is not None:
            raise ProgramError("a vISA expect takes the variable's declared type (no :TYPE)",
                               rule="systolic-run expect in .visa files", values={"variable": name, "type": typ})
        return m.read(name)

    checks = check_expects(h.expects, read)
    return {"kind": "visa", "title": h.title or f"vISA kernel {prog.kernel or path.stem}",
            "description": h.title, "device": dev, "default_device": default,
            "devices": list(h.devices) if h.devices else None, "sub_group_size": None, "checks": checks,
            "recorder": rec, "seconds": {"run": t2 - t1, "total": time.perf_counter() - t0}, "extras": {}}
