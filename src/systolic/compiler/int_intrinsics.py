"""The scalar integer intrinsics clang's optimiser emits for plain C (LLVM LangRef, "Standard C/C++ Library
Intrinsics" and "Bit Manipulation Intrinsics"): ``llvm.smin/smax/umin/umax``, ``llvm.abs``, ``llvm.ctpop``,
``llvm.ctlz``, ``llvm.cttz``, ``llvm.bswap``, ``llvm.bitreverse``, ``llvm.fshl``/``fshr``, the saturating
``llvm.[su]{add,sub}.sat`` and ``llvm.expect``. Operands and results are unsigned residues modulo 2**bits, as in
the runner; where LangRef makes the result poison (``abs(INT_MIN, true)``, ``ctlz/cttz(0, true)``) the result
is :data:`~.ops.POISON`, which only select/phi/freeze may take (clang speculates such calls under a select).

Only the scalar forms (``.i8`` ... ``.i64``...) are modelled; the vector forms are refused by the reader.
"""

from __future__ import annotations

from .ops import POISON, mask, signed, ub

__all__ = ["INT_INTRINSICS", "base_name", "execute", "runner_executes"]


def _abs(a, poison_flag, bits):
    s = signed(a, bits)
    if poison_flag & 1 and s == -(1 << (bits - 1)):
        return POISON
    return abs(s)


def _ctlz(a, zero_poison, bits):
    if a == 0 and zero_poison & 1:
        return POISON
    return bits - a.bit_length()


def _cttz(a, zero_poison, bits):
    if a == 0:
        if zero_poison & 1:
            return POISON
        return bits
    return (a & -a).bit_length() - 1


def _bswap(a, bits):
    if bits % 16:
        raise ub(f"llvm.bswap of i{bits} (a multiple of 16 bits)", bits=bits)
    return int.from_bytes(a.to_bytes(bits // 8, "little"), "big")


def _bitreverse(a, bits):
    return int(format(a, f"0{bits}b")[::-1], 2)


def _funnel(a, b, c, bits, left):
    c %= bits
    wide = (a << bits) | b
    if left:
        return (wide << c) >> bits
    return wide >> c


def _sat(op, a, b, bits):
    if op[0] == "s":
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        a, b = signed(a, bits), signed(b, bits)
    else:
        lo, hi = 0, (1 << bits) - 1
    r = a + b if op[1:] == "add" else a - b
    return min(max(r, lo), hi)


#: base name (without the type suffix) -> (number of operands, function(*operands, bits))
INT_INTRINSICS = {
    "llvm.smin": (2, lambda a, b, n: min(signed(a, n), signed(b, n))),
    "llvm.smax": (2, lambda a, b, n: max(signed(a, n), signed(b, n))),
    "llvm.umin": (2, lambda a, b, n: min(a, b)),
    "llvm.umax": (2, lambda a, b, n: max(a, b)),
    "llvm.abs": (2, _abs),
    "llvm.ctpop": (1, lambda a, n: bin(a).count("1")),
    "llvm.ctlz": (2, _ctlz),
    "llvm.cttz": (2, _cttz),
    "llvm.bswap": (1, _bswap),
    "llvm.bitreverse": (1, _bitreverse),
    "llvm.fshl": (3, lambda a, b, c, n: _funnel(a, b, c, n, True)),
    "llvm.fshr": (3, lambda a, b, c, n: _funnel(a, b, c, n, False)),
    "llvm.sadd.sat": (2, lambda a, b, n: _sat("sadd", a, b, n)),
    "llvm.uadd.sat": (2, lambda a, b, n: _sat("uadd", a, b, n)),
    "llvm.ssub.sat": (2, lambda a, b, n: _sat("ssub", a, b, n)),
    "llvm.usub.sat": (2, lambda a, b, n: _sat("usub", a, b, n)),
    "llvm.expect": (2, lambda a, b, n: a),
}


def base_name(name: str) -> str | None:
    """``llvm.smin.i32`` -> ``llvm.smin`` when it is one of :data:`INT_INTRINSICS` with a scalar suffix."""
    head, _, suffix = name.rpartition(".")
    if head in INT_INTRINSICS and suffix.startswith("i") and suffix[1:].isdigit():
        return head
    return None


def execute(name: str, args: list[int], bits: int) -> int:
    """The intrinsic's result (as a residue modulo 2**bits, or POISON) for operand residues ``args``."""
    arity, fn = INT_INTRINSICS[base_name(name)]
    r = fn(*args[:arity], bits)
    return r if r is POISON else mask(r, bits)


def runner_executes(name: str) -> bool:
    """Whether the runner executes intrinsic ``name`` itself (memory and scalar integer intrinsics): the tile
    passes leave such calls alone."""
    return name.startswith(("llvm.memset.", "llvm.memcpy.", "llvm.memmove.")) or base_name(name) is not None
