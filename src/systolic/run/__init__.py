"""``systolic run FILE``: run a matrix-engine program on an emulated device and report it (the main job).

Kinds of program, by suffix (docs/run.md):

* ``.py``: a Python program (SYCL joint_matrix, OpenCL sub-group built-ins, or the engines directly) following the
  program-file protocol of :mod:`systolic.run.python_program`;
* ``.ll``: LLVM IR with AMX intrinsics, compiled by the tile compiler and run on the emulated AMX
  (:mod:`systolic.run.llvm_program`, the machinery of ``systolic amx run``); ``.c`` / ``.cpp`` (``.cc``,
  ``.cxx``): C or C++ with clang's AMX API, through clang (-O2) and then the same way, header in ``//`` comments;
* ``.visa``: a vISA kernel on the vISA interpreter (:mod:`systolic.run.visa_program`, as ``systolic visa run``);
* ``.cl``: an OpenCL C kernel through clang and :mod:`systolic.cl`'s interpreter, header in ``//`` comments
  (:mod:`systolic.run.cl_program`; docs/cl.md).

:func:`run_file` returns the report as data: the program, the device and what it is, the verdict against the
oracle (bit-identical or the first differing element), the wall time, the instruction counts recorded by
:mod:`systolic.counters` and, per distinct DPAS/TMUL shape executed, its operands' layouts.

>>> from systolic.run import run_file
>>> rep = run_file("examples/visa/dpas_chain_s8.visa")          # doctest: +SKIP
>>> rep["verdict"], rep["instructions"]["totals"]["DPAS"]        # doctest: +SKIP
('bit-identical', 2)
"""

from __future__ import annotations

import math
from pathlib import Path

from ..errors import ProgramError

__all__ = ["run_file", "KINDS", "kind_of"]

#: suffix -> program kind
KINDS = {".py": "python", ".ll": "llvm-ir", ".visa": "visa", ".cl": "opencl-c", ".c": "c", ".cpp": "c++",
         ".cc": "c++", ".cxx": "c++"}
#: the kinds the tile compiler runs (--function/--arg/--mem apply to them)
_TILE_KINDS = ("llvm-ir", "c", "c++")


def kind_of(path: str | Path) -> str:
    """The program kind of a file name, or a ProgramError naming the known suffixes."""
    suffix = Path(path).suffix
    if suffix not in KINDS:
        raise ProgramError(f"systolic run does not know {suffix or 'files without a suffix'!r} programs",
                           rule="systolic run FILE: a .py program, an .ll LLVM IR file, a .c/.cpp AMX source, a .visa "
                                "file or a .cl OpenCL C file",
                           values={"file": str(path), "suffix": suffix})
    return KINDS[suffix]


def run_file(path: str | Path, device: str | None = None, *, function: str | None = None,
             args: tuple[str, ...] = (), mems: tuple[str, ...] = (), timeout: float | None = None) -> dict:
    """Run the program in ``path`` on ``device`` (default: the one the program declares) and report it.

    ``function``/``args``/``mems``: for ``.ll`` files only, as ``systolic amx run``'s --function/--arg/--mem.
    ``timeout``: seconds of wall time for loading and running the program (None or 0: no limit; enforced on the
    main thread where ``signal.setitimer`` exists, see :mod:`systolic.run.deadline`); past it, a ProgramError.
    """
    from .deadline import Deadline, limit
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not math.isfinite(timeout) or timeout < 0):
        raise ProgramError("the time limit is a number of seconds >= 0 (0: none)",
                           rule="systolic run --timeout SECONDS: >= 0", values={"timeout": repr(timeout)})
    try:
        with limit(timeout):
            return _run_file(path, device, function, args, mems)
    except Deadline:
        raise ProgramError(f"the program {Path(path).name} did not finish within the time limit of {timeout:g} s",
                           rule="systolic run --timeout SECONDS: the program finishes within the limit",
                           values={"file": str(path), "timeout": timeout}) from None


def _run_file(path, device, function, args, mems) -> dict:
    from . import devices, report
    p = Path(path)
    kind = kind_of(p)
    if p.is_dir():
        raise ProgramError(f"{p} is a directory, not a program file", rule="systolic run FILE: an existing file",
                           values={"file": str(p)})
    if not p.is_file():
        from ..suggest import did_you_mean_file
        raise ProgramError(f"no such program file{did_you_mean_file(p)}", rule="systolic run FILE: an existing file",
                           values={"file": str(p)})
    if kind not in _TILE_KINDS and (function or args or mems):
        raise ProgramError("--function, --arg and --mem apply to LLVM IR programs only",
                           rule="systolic run: options of .ll files", values={"file": str(p), "kind": kind})
    if kind == "python":
        from .python_program import run
        raw = run(p, device)
    elif kind in _TILE_KINDS:
        from .llvm_program import run
        raw = run(p, device, function=function, args=tuple(args), mems=tuple(mems))
    elif kind == "opencl-c":
        from .cl_program import run
        raw = run(p, device)
    else:
        from .visa_program import run
        raw = run(p, device)
    checks = raw["checks"]
    # a check of zero elements (ok None) compared nothing: the run is then "unchecked" unless another check differs
    if any(c["ok"] is False for c in checks):
        verdict = "MISMATCH"
    elif not checks or any(c["ok"] is None for c in checks):
        verdict = "unchecked"
    else:
        verdict = "bit-identical"
    ins = report.instructions(raw.pop("recorder"))
    return {"program": str(p), "kind": kind, "models": raw.get("models") or [], "title": raw["title"],
            "description": raw["description"],
            "device": devices.describe(raw["device"], raw.get("sub_group_size")),
            "default_device": raw["default_device"], "devices": raw["devices"], "verdict": verdict,
            "checks": checks, "seconds": raw["seconds"], "instructions": ins, "layouts": report.layouts(ins),
            "extras": raw["extras"]}
