"""Emission (b) and (c): LLVM IR text for llvmlite.

(b) :func:`physical_ir`: the allocated machine program with LLVM's *physical-register* intrinsics
    (``llvm.x86.ldtilecfg(ptr)``, ``llvm.x86.tileloadd64(i8 tmm, ptr, i64)``, ``llvm.x86.tdpbssd(i8, i8, i8)``,
    ... see :mod:`systolic.amx.jit`): our allocation and our 64-byte configuration, so LLVM's own AMX passes have
    nothing left to do. This is what runs natively (``backend="llvm"``) and what ``--emit asm`` compiles.
(c) :func:`internal_ir`: the function after shape propagation, in LLVM's final form (``x86_amx`` values and the
    ``*.internal`` intrinsics), leaving shape propagation, ldtilecfg placement and tile allocation to LLVM
    (X86PreTileConfig / X86TileConfig), for comparison.

LLVM 15+ only has opaque pointers, so typed pointers (the seed's ``i8*``) print as ``ptr``.
"""

from __future__ import annotations

import copy

from .amx_table import FAMILIES, physical_name
from .ir import (ConstGEP, Function, Instr, Module, PtrType, PTR, Type, VectorType, ArrayType,
                 _quote)
from .printer import print_global, print_instr

__all__ = ["physical_ir", "internal_ir", "to_opaque"]

#: machine opcode -> physical-register intrinsic: configuration, then every modelled tile instruction (its record's)
_PHYS = {"LDTILECFG": "llvm.x86.ldtilecfg", "TILERELEASE": "llvm.x86.tilerelease",
         **{m.upper(): physical_name(m) for m, (_k, _f, ok) in FAMILIES.items() if ok}}


def _opaque_type(t: Type) -> Type:
    if isinstance(t, PtrType):
        return PTR
    if isinstance(t, VectorType):
        return VectorType(t.count, _opaque_type(t.elem))
    if isinstance(t, ArrayType):
        return ArrayType(t.count, _opaque_type(t.elem))
    return t


def to_opaque(m: Module) -> Module:
    """A copy of ``m`` with every pointer type spelled ``ptr`` (LLVM >= 15)."""
    m = copy.deepcopy(m)
    seen = set()

    def fix(v):
        if id(v) in seen:
            return
        seen.add(id(v))
        if hasattr(v, "type") and isinstance(getattr(v, "type"), Type):
            v.type = _opaque_type(v.type)
        if isinstance(v, ConstGEP):
            v.source_type = _opaque_type(v.source_type)
            fix(v.base)
            for i in v.indices:
                fix(i)

    for g in m.globals.values():
        fix(g)
    for f in m.functions.values():
        for p in f.params:
            fix(p)
        for ins in f.instructions():
            fix(ins)
            for k in ("source_type", "alloc_type"):
                if k in ins.attrs:
                    ins.attrs[k] = _opaque_type(ins.attrs[k])
            for o in ins.operands:
                fix(o)
    return m


def _header(f: Function, rename: dict[str, str] | None = None) -> str:
    params = ", ".join(f"{p.type}{''.join(' ' + a for a in p.attrs)} %{_quote(p.name)}" for p in f.params)
    return f"define {f.ret_type} @{_quote(f.name)}({params})"


def _function_text(f: Function, instr_text) -> list[str]:
    lines = [_header(f) + " {"]
    for k, b in enumerate(f.blocks):
        lines.append(f"{_quote(b.name)}:")
        for ins in b.instrs:
            lines.append("  " + instr_text(ins))
    lines.append("}")
    return lines


def _globals(m: Module, external: dict[str, str] | None) -> list[str]:
    out = []
    for g in m.globals.values():
        if external is not None:
            out.append(f"@{_quote(g.name)} = external global {g.value_type}, align 64")
        else:
            out.append(print_global(g))
    return out


def _declare(f: Function) -> str:
    return f"declare {f.ret_type} @{_quote(f.name)}({', '.join(str(p.type) for p in f.params)})"


def physical_ir(machine_module: Module, *, external_globals: bool = False, rename: dict[str, str] | None = None) \
        -> str:
    """LLVM IR of a compiled module with the physical-register tile intrinsics (emission (b)).

    ``external_globals``: declare the globals ``external`` (the JIT binds them to the caller's arrays);
    ``rename`` maps global names to the symbols used instead.
    """
    from ..amx.jit import declarations
    m = to_opaque(machine_module)
    if rename:
        for g in m.globals.values():
            g.name = rename.get(g.name, g.name)
    dots = set()

    def text(ins: Instr) -> str:
        op = ins.opcode
        t = ins.attrs.get("tiles", [])
        if op in _PHYS:
            if FAMILIES.get(op.lower(), ("",))[0] == "dot":
                dots.add(op.lower())
            args = [f"i8 {x}" for x in t] + [f"{o.type} {o.ref()}" for o in ins.operands]
            return f"call void @{_PHYS[op]}({', '.join(args)})"
        return print_instr(ins)

    body = []
    for f in m.functions.values():
        if f.declaration:
            continue
        body += _function_text(f, text) + [""]
    out = _globals(m, {} if external_globals else None) + [""] + body
    for f in m.functions.values():
        if f.declaration and not f.name.startswith("llvm.x86."):
            out.append(_declare(f))
    out.append(declarations(sorted(dots)))
    return "\n".join(out)


def internal_ir(final_module: Module) -> str:
    """LLVM IR in LLVM's final form (x86_amx + ``*.internal`` intrinsics) after our shape propagation (c)."""
    m = to_opaque(final_module)
    out = _globals(m, None) + [""]
    used: dict[str, Function] = {}
    for f in m.functions.values():
        if f.declaration:
            continue
        for ins in f.instructions():
            if ins.opcode == "call" and ins.attrs["callee"].declaration:
                used[ins.attrs["callee"].name] = ins.attrs["callee"]
        out += _function_text(f, print_instr) + [""]
    for f in used.values():
        out.append(_declare(f))
    return "\n".join(out) + "\n"
