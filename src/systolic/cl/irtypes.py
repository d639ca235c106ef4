"""LLVM IR types of spir64 as the interpreter holds them (LangRef "Type System"; spir64 data layout).

A first-class value of type T over the N lanes of a launch is a numpy array: scalars shape ``(N,)`` (or ``()``
when uniform: a constant or a kernel argument), vectors ``(N, n)`` (or ``(n,)``). ``i1`` is bool, ``iK`` the
signed numpy integer of K bits (LLVM integers are signless: unsigned operations view the bits as unsigned),
``half``/``float``/``double`` float16/32/64, pointers int64 addresses (:mod:`systolic.cl.memory`).
"""

from __future__ import annotations

import functools
import re

import numpy as np

from ..errors import UnsupportedOperation

__all__ = ["VType", "vtype", "alloc_size", "store_size", "split_top"]

_INT = {1: np.dtype(bool), 8: np.dtype(np.int8), 16: np.dtype(np.int16), 32: np.dtype(np.int32),
        64: np.dtype(np.int64)}
_FLOAT = {"half": np.dtype(np.float16), "float": np.dtype(np.float32), "double": np.dtype(np.float64)}
_UNSIGNED = {np.dtype(np.int8): np.dtype(np.uint8), np.dtype(np.int16): np.dtype(np.uint16),
             np.dtype(np.int32): np.dtype(np.uint32), np.dtype(np.int64): np.dtype(np.uint64),
             np.dtype(bool): np.dtype(bool)}


class VType:
    """A first-class type: ``kind`` int/float/ptr, ``dtype``, ``n`` lanes of a vector (0: scalar), ``bits``."""

    __slots__ = ("text", "kind", "dtype", "n", "bits", "addrspace")

    def __init__(self, text, kind, dtype, n, bits, addrspace=0):
        self.text, self.kind, self.dtype, self.n, self.bits, self.addrspace = text, kind, dtype, n, bits, addrspace

    @property
    def odd(self) -> bool:
        """An integer width numpy has no type for (held sign-extended in a wider one)."""
        return self.kind == "int" and self.bits not in (1, 8, 16, 32, 64)

    @property
    def udtype(self) -> np.dtype:
        return _UNSIGNED.get(self.dtype, self.dtype)

    @property
    def elem_bytes(self) -> int:
        return 1 if self.bits == 1 else -(-self.bits // 8)

    @property
    def nbytes(self) -> int:
        return self.elem_bytes * max(self.n, 1)

    def __repr__(self) -> str:
        return self.text


def split_top(text: str, sep: str = ",") -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "<[{(":
            depth += 1
        elif ch in ">]})":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


_VEC = re.compile(r"^<\s*(\d+)\s*x\s*(.+?)\s*>$")
_ARR = re.compile(r"^\[\s*(\d+)\s*x\s*(.+)\]$")
_PTR = re.compile(r"^ptr(?:\s+addrspace\((\d+)\))?$")


@functools.lru_cache(maxsize=None)
def vtype(text: str) -> VType:
    """The VType of an LLVM first-class type written as text (``str(llvmlite type)``)."""
    t = text.strip()
    m = _VEC.match(t)
    if m:
        e = vtype(m[2])
        if e.n:
            raise UnsupportedOperation(f"nested vector type {t}", rule="LangRef: vector element types are scalars")
        return VType(t, e.kind, e.dtype, int(m[1]), e.bits, e.addrspace)
    if t.startswith("i") and t[1:].isdigit():
        b = int(t[1:])
        if b in _INT:
            return VType(t, "int", _INT[b], 0, b)
        if 1 < b < 64:      # odd widths (SCEV's i33 ...): held sign-extended in the next wider numpy integer
            return VType(t, "int", next(_INT[w] for w in (8, 16, 32, 64) if w > b), 0, b)
        raise UnsupportedOperation(f"the interpreter holds integers of 1 to 64 bits, not {t}",
                                   rule="systolic.cl interpreter: integer widths", values={"type": t})
    if t in _FLOAT:
        return VType(t, "float", _FLOAT[t], 0, _FLOAT[t].itemsize * 8)
    m = _PTR.match(t)
    if m:
        return VType(t, "ptr", np.dtype(np.int64), 0, 64, int(m[1] or 0))
    if t.startswith('target("spirv.CooperativeMatrixKHR"') or t.startswith('target("spirv.JointMatrixINTEL"'):
        return VType(t, "int", np.dtype(np.int64), 0, 64)      # a handle (systolic.cl.coop)
    raise UnsupportedOperation(f"values of type {t} are not modelled by the interpreter",
                               rule="systolic.cl interpreter: first-class types i1..i64, half, float, double, "
                                    "pointers and their vectors", values={"type": t})


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


@functools.lru_cache(maxsize=None)
def layout(text: str) -> tuple[int, int]:
    """(alloc size, ABI alignment) in bytes of a type under the spir64 data layout."""
    t = text.strip()
    m = _ARR.match(t)
    if m:
        size, al = layout(m[2])
        return int(m[1]) * size, al
    if t.startswith("{") or t.startswith("<{"):
        packed = t.startswith("<{")
        body = t[2:-2] if packed else t[1:-1]
        off, amax = 0, 1
        for f in split_top(body):
            s, a = layout(f)
            a = 1 if packed else a
            off = -(-off // a) * a + s
            amax = max(amax, a)
        return -(-off // amax) * amax, amax
    if t.startswith("%"):
        raise UnsupportedOperation(f"named struct type {t} in memory", rule="systolic.cl interpreter: literal types")
    v = vtype(t)
    if v.n:
        total = _pow2(v.n) * v.elem_bytes
        return total, total
    return v.elem_bytes, v.elem_bytes


def alloc_size(text: str) -> int:
    return layout(text)[0]


def store_size(text: str) -> int:
    return vtype(text).nbytes


def struct_offsets(text: str) -> list[int]:
    t = text.strip()
    packed = t.startswith("<{")
    body = t[2:-2] if packed else t[1:-1]
    off, out = 0, []
    for f in split_top(body):
        s, a = layout(f)
        a = 1 if packed else a
        off = -(-off // a) * a
        out.append(off)
        off += s
    return out


def element_type(text: str) -> str:
    """The element type of an array or vector type."""
    t = text.strip()
    m = _ARR.match(t) or _VEC.match(t)
    if not m:
        raise UnsupportedOperation(f"{t} has no element type", rule="getelementptr indexes arrays and vectors")
    return m[2]


_NAMED_REF = re.compile(r'%(?:"[^"]*"|[-\w.$]+)')


def named_types(module_text: str) -> dict[str, str]:
    """``%name = type {...}`` definitions of a module, by name (``%"class.sycl::_V1::range"``)."""
    return {m[1]: m[2].strip() for m in re.finditer(r'^(%(?:"[^"]*"|[-\w.$]+)) = type (.*)$', module_text, re.M)}


def expand(text: str, named: dict[str, str], depth: int = 0) -> str:
    """A type with its named struct types replaced by their literal bodies (for sizes and offsets)."""
    if "%" not in text:
        return text
    if depth > 32:
        raise UnsupportedOperation("recursive named types", rule="systolic.cl interpreter: literal types")

    def rep(m):
        body = named.get(m[0])
        if body is None or body == "opaque":
            raise UnsupportedOperation(f"named type {m[0]} has no body", rule="LangRef: opaque structs have no size")
        return expand(body, named, depth + 1)
    return _NAMED_REF.sub(rep, text)
