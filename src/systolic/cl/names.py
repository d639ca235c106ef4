"""Names and constants of spir64 LLVM IR as the interpreter reads them: :class:`Where` (an instruction, for
error messages), :func:`demangle` (Itanium names of OpenCL built-ins -> base name and OpenCL C parameter types),
:func:`const_from_text` (constant operands that llvmlite shows only as text)."""

from __future__ import annotations

import re

import numpy as np

from . import irtypes as IT

__all__ = ["Where", "demangle", "const_from_text"]


class Where:
    """An instruction, for error messages: the kernel, the function and the instruction's text."""

    __slots__ = ("kernel", "function", "text")

    def __init__(self, kernel, function, text):
        self.kernel, self.function, self.text = kernel, function, text


# ---- Itanium names of OpenCL built-ins --------------------------------------------------------------------------

_BUILTIN_TYPES = {"c": "char", "a": "char", "h": "uchar", "s": "short", "t": "ushort", "i": "int", "j": "uint",
                  "l": "long", "m": "ulong", "f": "float", "d": "double", "Dh": "half", "b": "bool", "v": "void",
                  "x": "long", "y": "ulong"}


def demangle(name: str) -> tuple[str, list[str]]:
    """``_Z26intel_sub_group_block_readPU3AS1Kj`` -> ("intel_sub_group_block_read", ["uint*"]): the base name and
    the parameters as OpenCL C type names (vectors ``short8``; pointers ``T*``; qualifiers dropped)."""
    if not name.startswith("_Z"):
        return name, []
    m = re.match(r"_Z(\d+)", name)
    n = int(m[1])
    pos = m.end()
    base = name[pos:pos + n]
    pos += n
    params: list[str] = []
    subs: list[str] = []

    def parse_type(i):
        ch = name[i]
        if name.startswith("Dv", i):
            mm = re.match(r"Dv(\d+)_", name[i:])
            t, j = parse_type(i + mm.end())
            r = f"{t}{mm[1]}"
            subs.append(r)
            return r, j
        if name.startswith("Dh", i):
            return "half", i + 2
        if ch in "PR":
            j = i + 1
            while True:
                # vendor qualifiers U<len><text>: address spaces (U3AS1) and C11 atomics (U7_Atomic)
                q = re.match(r"U(\d+)", name[j:])
                if q:
                    j += q.end() + int(q[1])
                elif name[j] in "KVr":
                    j += 1
                else:
                    break
            t, j = parse_type(j)
            r = t + "*"
            subs.append(r)
            return r, j
        if ch in "KV":
            return parse_type(i + 1)
        if ch == "S":
            mm = re.match(r"S(\w?)_", name[i:])
            idx = 0 if mm[1] == "" else int(mm[1], 36) + 1
            return (subs[idx] if idx < len(subs) else "?"), i + mm.end()
        if ch.isdigit():
            mm = re.match(r"(\d+)", name[i:])
            k = int(mm[1])
            return name[i + mm.end(): i + mm.end() + k], i + mm.end() + k
        return _BUILTIN_TYPES.get(ch, ch), i + 1

    try:
        while pos < len(name):
            t, pos = parse_type(pos)
            if t != "void":
                params.append(t)
    except (IndexError, TypeError, AttributeError, ValueError):
        pass
    return base, params


# ---- constants --------------------------------------------------------------------------------------------------

_NUM = re.compile(r"(?:(i\d+|half|float|double|bfloat|ptr(?:\s+addrspace\(\d+\))?)\s+)?"
                  r"(true|false|-?\d+|-?\d+\.\d+e[+-]\d+|0x[HKRLM]?[0-9A-Fa-f]+|-?inf|-?nan|poison|undef|null)")


def _scalar_const(tok: str, t: IT.VType):
    if tok in ("poison", "undef", "null"):
        return t.dtype.type(0)
    if tok == "true":
        return np.bool_(True)
    if tok == "false":
        return np.bool_(False)
    if t.kind == "float":
        if tok.startswith("0xH"):
            return np.uint16(int(tok[3:], 16)).view(np.float16)
        if tok.startswith("0x"):
            v = np.uint64(int(tok[2:], 16)).view(np.float64)
            with np.errstate(all="ignore"):
                return t.dtype.type(v)
        return t.dtype.type(float(tok))
    v = int(tok)
    bits = 8 if t.bits == 1 else t.bits
    v &= (1 << bits) - 1
    if v >= 1 << (bits - 1):
        v -= 1 << bits
    return t.dtype.type(v) if t.bits != 1 else np.bool_(v != 0)


def const_from_text(text: str, t: IT.VType):
    """A constant operand's value from its text (``<4 x i32> <i32 1, ...>``, ``zeroinitializer``...)."""
    body = text.strip()
    if body.startswith(t.text):
        body = body[len(t.text):].strip()
    if body in ("zeroinitializer", "poison", "undef", "null"):
        return np.zeros(t.n, t.dtype) if t.n else t.dtype.type(0)
    if t.n:
        if body.startswith("splat"):
            inner = body[body.index("(") + 1: body.rindex(")")]
            e = IT.VType(t.text, t.kind, t.dtype, 0, t.bits)
            return np.full(t.n, const_from_text(inner, e), t.dtype)
        inner = body.strip("<>")
        e = IT.VType(t.text, t.kind, t.dtype, 0, t.bits)
        vals = [const_from_text(p, e) for p in IT.split_top(inner)]
        return np.array(vals, dtype=t.dtype)
    toks = body.split()
    tok = toks[-1] if toks else body
    return _scalar_const(tok, t)
