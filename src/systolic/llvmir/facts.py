"""What llvmlite only shows in an instruction's or type's text (REFERENCE.md section 8, "Only in str()" and "Traps").

llvmlite 0.50 exposes opcodes, operands, types and constants, but not icmp/fcmp predicates, GEP source types,
alloca types, poison-generating flags, address spaces, shufflevector masks, switch cases, target extension type
parameters or metadata. LLVM prints each of them in a fixed place of the instruction's text (LLVM LangRef, the
instruction's "Syntax"), so each is read from there, by position, never by a grammar of the whole language.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from systolic.errors import InvalidValue

__all__ = ["split_top_level", "predicate", "gep_source_type", "alloca_type", "flags", "address_space",
           "int_value", "shuffle_mask", "switch_cases", "target_ext", "TargetExt", "function_metadata",
           "module_metadata", "debug_line", "callee_name"]

_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSE = {v: k for k, v in _OPEN.items()}

ICMP_PREDICATES = frozenset("eq ne ugt uge ult ule sgt sge slt sle".split())
FCMP_PREDICATES = frozenset("false oeq ogt oge olt ole one ord ueq ugt uge ult ule une uno true".split())
#: flags LLVM prints between an opcode and its operands (nsw/nuw/exact/disjoint/nneg/samesign, GEP's, fast-math)
KNOWN_FLAGS = frozenset("nsw nuw exact disjoint nneg samesign inbounds nusw fast nnan ninf nsz arcp contract afn "
                        "reassoc volatile atomic tail musttail notail".split())


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at ``sep`` outside brackets and quotes: ``"{ i32, i8 }, ptr %p"`` -> two parts."""
    parts, depth, cur, quote = [], 0, [], False
    for ch in text:
        if ch == '"':
            quote = not quote
        elif not quote:
            if ch in _OPEN:
                depth += 1
            elif ch in _CLOSE and depth:
                depth -= 1
            elif ch == sep and depth == 0:
                parts.append("".join(cur).strip())
                cur = []
                continue
        cur.append(ch)
    tail = "".join(cur).strip()
    if tail or parts:
        parts.append(tail)
    return parts


def _text(obj: Any) -> str:
    return obj if isinstance(obj, str) else str(obj)


def _after_opcode(instr: Any) -> tuple[str, str]:
    """(opcode, the text after it) of one instruction's text, the result name and '=' removed."""
    text = _text(instr).strip()
    m = re.match(r"(?:%[-\w.$]+|%\"[^\"]*\"|%\d+)\s*=\s*", text)
    if m:
        text = text[m.end():]
    op, _, rest = text.partition(" ")
    if op in ("tail", "musttail", "notail"):      # "tail call ..."
        op2, _, rest = rest.partition(" ")
        return op2, rest
    return op, rest


def _skip_flags(rest: str) -> tuple[set[str], str]:
    found = set()
    while True:
        word, _, more = rest.partition(" ")
        if word in KNOWN_FLAGS or word.startswith("inrange("):
            found.add(word)
            rest = more
        else:
            return found, rest


def predicate(instr: Any) -> str:
    """The comparison predicate of an ``icmp``/``fcmp`` (``slt``, ``oeq``...)."""
    op, rest = _after_opcode(instr)
    if op not in ("icmp", "fcmp"):
        raise InvalidValue(f"predicate() wants an icmp or fcmp, not {op!r}", rule="llvmir.facts: predicate",
                           values={"instruction": _text(instr).strip()[:80]})
    _, rest = _skip_flags(rest)
    word = rest.split(" ", 1)[0]
    valid = ICMP_PREDICATES if op == "icmp" else FCMP_PREDICATES
    if word not in valid:
        raise InvalidValue(f"no {op} predicate in the instruction's text", rule="llvmir.facts: predicate",
                           values={"instruction": _text(instr).strip()[:80]})
    return word


def flags(instr: Any) -> frozenset[str]:
    """The flags printed after the opcode: nsw/nuw/exact/disjoint/nneg/samesign, inbounds/nuw/nusw of a GEP,
    fast-math flags of a float op, ``tail``/``volatile`` where present."""
    text = _text(instr).strip()
    head = re.match(r"(?:%[-\w.$]+\s*=\s*)?((?:tail|musttail|notail)\s+)?", text)
    out = set()
    if head and head.group(1):
        out.add(head.group(1).strip())
    op, rest = _after_opcode(instr)
    found, _ = _skip_flags(rest)
    out |= found
    if op in ("load", "store") and re.search(r"\b(load|store) (atomic )?volatile\b", text):
        out.add("volatile")
    return frozenset(out)


def _first_type(rest: str) -> str:
    return split_top_level(rest)[0]


def gep_source_type(instr: Any) -> str:
    """The source element type of a ``getelementptr`` (``i32``, ``[4 x float]``, ``%struct.S``...)."""
    op, rest = _after_opcode(instr)
    if op != "getelementptr":
        raise InvalidValue(f"gep_source_type() wants a getelementptr, not {op!r}", rule="llvmir.facts: gep",
                           values={"instruction": _text(instr).strip()[:80]})
    _, rest = _skip_flags(rest)
    return _first_type(rest)


def alloca_type(instr: Any) -> str:
    """The allocated type of an ``alloca``."""
    op, rest = _after_opcode(instr)
    if op != "alloca":
        raise InvalidValue(f"alloca_type() wants an alloca, not {op!r}", rule="llvmir.facts: alloca",
                           values={"instruction": _text(instr).strip()[:80]})
    rest = re.sub(r"^(inalloca|swifterror)\s+", "", rest)
    return _first_type(rest)


def address_space(type_or_text: Any) -> int:
    """The address space of a pointer type: ``ptr`` 0 (private in SPIR), ``ptr addrspace(1)`` 1 (global), 3 local,
    4 generic, 2 constant (SPIR's numbering)."""
    text = _text(type_or_text).strip()
    m = re.search(r"addrspace\(([^)]*)\)", text)
    if m:
        if not m[1].strip().isdigit():
            raise InvalidValue(f"addrspace({m[1]}) is not a number", rule="llvmir.facts: addrspace",
                               values={"type": text[:60]})
        return int(m[1])
    if text.startswith("ptr") or text.endswith("*"):
        return 0
    raise InvalidValue(f"address_space() wants a pointer type, not {text[:60]!r}", rule="llvmir.facts: addrspace",
                       values={"type": text[:60]})


def int_value(const: Any, *, signed: bool = True) -> int:
    """An integer constant's value. llvmlite's ``get_constant_value(signed_int=True)`` is wrong below 64 bits
    (``i32 -7`` gives 4294967289): take the unsigned bits and sign-extend by the type's width."""
    try:
        width = const.type.type_width
        raw = const.get_constant_value(signed_int=False)
    except (AttributeError, ValueError, TypeError):
        raise InvalidValue("int_value() wants an llvmlite integer constant", rule="llvmir.facts: int constant",
                           values={"value": repr(const)[:60]}) from None
    if isinstance(raw, bool):
        raw = int(raw)
    if not isinstance(raw, int):
        raise InvalidValue("int_value() wants an integer constant", rule="llvmir.facts: int constant",
                           values={"value": str(const)[:60]})
    raw &= (1 << width) - 1
    if signed and width and raw >> (width - 1):
        raw -= 1 << width
    return raw


def shuffle_mask(instr: Any) -> list[int | None]:
    """A ``shufflevector``'s mask: element indices, None for ``poison``/``undef`` lanes."""
    op, rest = _after_opcode(instr)
    if op != "shufflevector":
        raise InvalidValue(f"shuffle_mask() wants a shufflevector, not {op!r}", rule="llvmir.facts: shuffle",
                           values={"instruction": _text(instr).strip()[:80]})
    mask = split_top_level(re.split(r",\s*!", rest)[0])[2]
    mtype, _, value = mask.partition("> ")
    n = int(re.match(r"<\s*(\d+)\s+x", mtype)[1])
    value = value.strip()
    if value == "zeroinitializer":
        return [0] * n
    if value in ("poison", "undef"):
        return [None] * n
    out: list[int | None] = []
    for item in split_top_level(value.strip().lstrip("<").rstrip(">")):
        v = item.split()[-1]
        out.append(None if v in ("poison", "undef") else int(v))
    return out


def switch_cases(instr: Any) -> list[tuple[int, str]]:
    """A ``switch``'s cases as (value, destination block name), in the order written (the default is not one)."""
    op, rest = _after_opcode(instr)
    if op != "switch":
        raise InvalidValue(f"switch_cases() wants a switch, not {op!r}", rule="llvmir.facts: switch",
                           values={"instruction": _text(instr).strip()[:80]})
    body = rest[rest.index("[") + 1: rest.rindex("]")]
    return [(int(v), d) for v, d in re.findall(r"i\d+\s+(-?\d+),\s*label\s+%([-\w.$\"]+)", body)]


class TargetExt(NamedTuple):
    """``target("name", T..., i...)``: e.g. spirv.CooperativeMatrixKHR with types (i8,) and ints
    (scope, rows, cols, use) where use 0=A, 1=B, 2=accumulator (REFERENCE.md section 8)."""

    name: str
    types: tuple[str, ...]
    ints: tuple[int, ...]


def target_ext(type_or_text: Any) -> TargetExt:
    """Parse a target extension type's text (llvmlite's ``type_kind`` raises on these)."""
    text = _text(type_or_text).strip()
    m = re.fullmatch(r'target\("([^"]+)"(.*)\)', text)
    if not m:
        raise InvalidValue(f"not a target extension type: {text[:60]!r}", rule="llvmir.facts: target type",
                           values={"type": text[:60]})
    params = split_top_level(m[2].lstrip(",")) if m[2].strip() else []
    # LLVM LangRef "Target Extension Type": type parameters come first, then integer parameters
    for i, p in enumerate(params):
        if not p or (re.fullmatch(r"-?\d+", p) is None and any(re.fullmatch(r"-?\d+", q) for q in params[:i])) \
                or (re.fullmatch(r"-?\d+", p) is None and not _looks_like_type(p)):
            raise InvalidValue(f"target extension type parameter {p!r} is neither a type nor an integer in order",
                               rule="LLVM LangRef: target(\"name\", types..., ints...)", values={"type": text[:80]})
    types = tuple(p for p in params if not re.fullmatch(r"-?\d+", p))
    ints = tuple(int(p) for p in params if re.fullmatch(r"-?\d+", p))
    return TargetExt(m[1], types, ints)


def _looks_like_type(text: str) -> bool:
    """A first-class type's spelling: iN, half/bfloat/float/double/..., ptr, vectors, arrays, structs, named
    types, target types."""
    return bool(re.fullmatch(r"i\d+|half|bfloat|float|double|fp128|x86_fp80|ppc_fp128|x86_amx|void|label|"
                             r"ptr(?: addrspace\(\d+\))?|%[-\w.$\"]+|<.*>|\[.*\]|\{.*\}|target\(.*\)", text.strip()))


def callee_name(call: Any) -> str | None:
    """The called function's name of a ``call``/``invoke`` (the last operand), None for an indirect call."""
    ops = list(call.operands)
    if not ops:
        return None
    target = ops[-1]
    return target.name if target.is_function or target.name else None


# ---- metadata: resolved from the module's text once per module -------------------------------------------------

_MD_LINE = re.compile(r"^(![-\w.]+) = (?:distinct )?(.*)$", re.M)


def module_metadata(module: Any) -> dict[str, str]:
    """Every ``!name = ...`` definition of the module, name -> the text after ``=`` (cached on the module)."""
    cached = getattr(module, "_systolic_metadata", None)
    if cached is None:
        cached = {m[1]: m[2] for m in _MD_LINE.finditer(str(module))}
        try:
            module._systolic_metadata = cached
        except AttributeError:          # an object without __dict__: no cache, still correct
            pass
    return cached


def _md_values(text: str, table: dict[str, str], depth: int = 0) -> list[Any]:
    """``!{i32 16, i32 1, !"x", !5}`` -> [16, 1, 'x', [...]] (nested references resolved, 8 levels at most)."""
    text = text.strip()
    if not (text.startswith("!{") and text.endswith("}")):
        return [text]
    out: list[Any] = []
    for item in split_top_level(text[2:-1]):
        if not item:
            continue
        if m := re.fullmatch(r"i\d+ (-?\d+)", item):
            out.append(int(m[1]))
        elif m := re.fullmatch(r'!"(.*)"', item):
            out.append(m[1])
        elif re.fullmatch(r"![-\w.]+", item) and item in table and depth < 8:
            out.append(_md_values(table[item], table, depth + 1))
        else:
            out.append(item)
    return out


def function_metadata(module: Any, function: Any) -> dict[str, list[Any]]:
    """A function's attached metadata, resolved: ``{"reqd_work_group_size": [16, 1, 1],
    "intel_reqd_sub_group_size": [16], ...}``."""
    table = module_metadata(module)
    header = str(function).split("{", 1)[0] if not function.is_declaration else ""
    for line in str(function).splitlines():
        if line.startswith("define "):
            header = line
            break
    out: dict[str, list[Any]] = {}
    for name, ref in re.findall(r"!([A-Za-z_][-\w.]*) (![-\w.]+)", header):
        if ref in table:
            out[name] = _md_values(table[ref], table)
    return out


def debug_line(module: Any, instr: Any) -> tuple[str | None, int, int] | None:
    """(file, line, column) of an instruction's ``!dbg`` location, None without one."""
    m = re.search(r"!dbg (![-\w.]+)", _text(instr))
    if not m:
        return None
    table = module_metadata(module)
    loc = table.get(m[1], "")
    lm = re.search(r"line: (\d+)", loc)
    cm = re.search(r"column: (\d+)", loc)
    if not lm:
        return None
    file = None
    sm = re.search(r"scope: (![-\w.]+)", loc)
    for _ in range(8):                     # scope chain -> the DIFile
        if not sm or sm[1] not in table:
            break
        scope = table[sm[1]]
        fm = re.search(r"file: (![-\w.]+)", scope)
        if fm and fm[1] in table:
            nm = re.search(r'filename: "([^"]*)"', table[fm[1]])
            file = nm[1] if nm else None
            break
        sm = re.search(r"scope: (![-\w.]+)", scope)
    return file, int(lm[1]), int(cm[1]) if cm else 0
