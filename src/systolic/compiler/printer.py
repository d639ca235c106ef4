"""Printer for the tile IR: LLVM IR text that LLVM (and so :func:`llvm_reader.parse`) reads back to the same
module.

Round trip: ``print_module(parse(print_module(m))) == print_module(m)``. Each instruction is printed by its
definition in :mod:`.ops`. Pseudo and machine instructions (after ``lower`` / ``regalloc``) print in an
LLVM-MIR-like form (``%t = PTILELOADDV %row, %col, %p, 64``) that is for reading, not for parsing. A function
the reader refused prints as a declaration (``Module.refused`` holds why), so the round trip holds for it too.
"""

from __future__ import annotations

from .ir import ArrayType, Block, Function, GlobalVariable, Module, Value, _quote
from .ops import print_instr

__all__ = ["print_module", "print_function", "print_instr"]


def _tv(v: Value) -> str:
    return f"{v.type} {v.ref()}"


def _init(g: GlobalVariable) -> str:
    init = g.initializer
    if isinstance(init, str):
        return init
    if isinstance(init, bytes):
        return 'c"' + "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\' else f"\\{b:02X}"
                              for b in init) + '"'
    if isinstance(init, int):
        return str(init)
    if isinstance(init, list):
        vt = g.value_type
        o, c = ("[", "]") if isinstance(vt, ArrayType) else ("<", ">")
        return o + ", ".join(f"{vt.elem} {x}" for x in init) + c
    raise TypeError(init)


def print_global(g: GlobalVariable) -> str:
    link = f"{g.linkage} " if g.linkage else ""
    kind = "constant" if g.constant else "global"
    s = f"@{_quote(g.name)} = {link}{kind} {g.value_type}"
    if not g.external:
        s += f" {_init(g) if g.initializer is not None else 'zeroinitializer'}"
    if g.align is not None:
        s += f", align {g.align}"
    return s


def print_function(f: Function) -> str:
    params = []
    for p in f.params:
        attrs = "".join(f" {x}" for x in p.attrs)
        params.append(f"{p.type}{attrs} %{_quote(p.name)}")
    if f.varargs:
        params.append("...")
    pre = f"{f.prefix} " if f.prefix else ""
    suf = f" {f.suffix}" if f.suffix else ""
    head = f"{pre}{f.ret_type} @{_quote(f.name)}({', '.join(params)}){suf}"
    if f.declaration:
        return f"declare {head}"
    lines = [f"define {head} {{"]
    preds = f.predecessors()
    for k, b in enumerate(f.blocks):
        if k:
            lines.append("")
        pl = preds.get(b, [])
        comment = ("  ; preds = " + ", ".join(f"%{_quote(p.name)}" for p in pl)) if pl else ""
        lines.append(f"{_quote(b.name)}:{comment}")
        for ins in b.instrs:
            lines.append("  " + print_instr(ins))
    lines.append("}")
    return "\n".join(lines)


def print_module(m: Module) -> str:
    out = list(m.header)
    if out:
        out.append("")
    for g in m.globals.values():
        out.append(print_global(g))
    if m.globals:
        out.append("")
    called = {id(i.attrs["callee"]) for f in m.functions.values() for i in f.instructions()
              if i.opcode == "call"}
    for f in m.functions.values():
        if f.declaration and f.implicit and id(f) not in called:
            continue  # declarations the reader or a pass made and nothing calls any more
        out.append(print_function(f))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def block_label(b: Block) -> str:
    return f"%{_quote(b.name)}"
