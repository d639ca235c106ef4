"""The matrix built-in call sites of a built program and the DPAS each becomes (``systolic cl build --emit calls``)."""

from __future__ import annotations

from ..llvmir import facts as F
from ..opencl import table as TB
from .interp import demangle

__all__ = ["matrix_call_sites"]


def matrix_call_sites(built, platform) -> list[dict]:
    """One dict per call of a matrix built-in: the function, the IR instruction, the source line (with -g), the
    overload, and the instruction it lowers to (one DPAS, or DPASW for the split forms)."""
    from .matrix import select
    out = []
    for fn in built.module.functions:
        if fn.is_declaration or fn.name.startswith("__clang_ocl_kern_imp_"):
            continue
        k = built.kernels.get(fn.name)
        S = (k.reqd_sub_group_size if k and k.reqd_sub_group_size else platform.matrix_subgroup_size)
        for bb in fn.blocks:
            for ins in bb.instructions:
                if ins.opcode != "call":
                    continue
                callee = F.callee_name(ins)
                if not callee:
                    continue
                base, params = demangle(callee)
                if base not in TB.NAMES:
                    continue
                rec = select(base, params, S, platform)
                line = F.debug_line(built.module, ins)
                out.append({"function": fn.name, "instruction": str(ins).strip(),
                            "source": f"{line[0]}:{line[1]}:{line[2]}" if line else None,
                            "builtin": rec.signature, "sub_group_size": rec.sub_group_size,
                            "M": rec.m, "N": rec.n, "K": rec.k, "dpas": rec.dpas,
                            "instruction_kind": "DPASW" if rec.split else "DPAS",
                            "igc_builtin": rec.igc_builtin})
    return out
