"""Printer for the tile IR: LLVM IR text that :func:`llvm_reader.parse` reads back to the same module.

Round trip: ``print_module(parse(print_module(m))) == print_module(m)``. Pseudo and machine instructions (after
``lower`` / ``regalloc``) print in an LLVM-MIR-like form (``%t = PTILELOADDV %row, %col, %p, 64``) that is for
reading, not for parsing.
"""

from __future__ import annotations

from .ir import (BINARY_OPS, CAST_OPS, ArrayType, Block, Function, GlobalVariable, Instr, Module, Value, VOID,
                 _quote)

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
        s += f" {_init(g)}"
    if g.align is not None:
        s += f", align {g.align}"
    return s


def print_instr(ins: Instr) -> str:
    op = ins.opcode
    lhs = f"%{_quote(ins.name)} = " if ins.name is not None and ins.type != VOID else ""
    o = ins.operands
    a = ins.attrs
    align = f", align {a['align']}" if "align" in a else ""
    if op in BINARY_OPS:
        flags = "".join(f" {f}" for f in a.get("flags", []))
        return f"{lhs}{op}{flags} {ins.type} {o[0].ref()}, {o[1].ref()}"
    if op == "icmp":
        return f"{lhs}icmp {a['pred']} {_tv(o[0])}, {o[1].ref()}"
    if op in CAST_OPS:
        return f"{lhs}{op} {_tv(o[0])} to {ins.type}"
    if op == "select":
        return f"{lhs}select {_tv(o[0])}, {_tv(o[1])}, {_tv(o[2])}"
    if op == "phi":
        inc = ", ".join(f"[ {v.ref()}, %{_quote(b.name)} ]" for v, b in zip(o, a["blocks"]))
        return f"{lhs}phi {ins.type} {inc}"
    if op == "br":
        bl = a["blocks"]
        if not o:
            return f"br label %{_quote(bl[0].name)}"
        return f"br {_tv(o[0])}, label %{_quote(bl[0].name)}, label %{_quote(bl[1].name)}"
    if op == "ret":
        return f"ret {_tv(o[0])}" if o else "ret void"
    if op == "unreachable":
        return "unreachable"
    if op == "call":
        tail = f"{a['tail']} " if a.get("tail") else ""
        args = ", ".join(_tv(v) for v in o)
        return f"{lhs}{tail}call {ins.type} {a['callee'].ref()}({args})"
    if op == "getelementptr":
        flags = "".join(f"{f} " for f in a.get("flags", []))
        idx = "".join(f", {_tv(v)}" for v in o[1:])
        return f"{lhs}getelementptr {flags}{a['source_type']}, {_tv(o[0])}{idx}"
    if op == "load":
        return f"{lhs}load {ins.type}, {_tv(o[0])}{align}"
    if op == "store":
        return f"store {_tv(o[0])}, {_tv(o[1])}{align}"
    if op == "alloca":
        return f"{lhs}alloca {a['alloc_type']}{align}"
    # pseudo / machine instructions (lower.py, regalloc.py)
    parts = []
    if "tiles" in a:
        parts += [f"tmm{t}" for t in a["tiles"]]
    parts += [v.ref() for v in o]
    extra = "".join(f" {k}={a[k]}" for k in ("slot",) if k in a)
    return f"{lhs}{op} {', '.join(parts)}{extra}".rstrip()


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
