"""Which instruction operand holds which matrix, per engine: one table for the glossary and for every name a user
may type (``a``/``b``/``c``/``d`` or the instruction's ``src0``/``src1``/``src2``/``dst``).

A matrix multiply-add computes D = A x B + C (A: M x K, B: K x N, C and D: M x N). The instructions name their
operands by position, and the engines number them differently:

* XMX ``dpas dst src0 src1 src2`` (vISA DPAS; Intel Graphics Compiler's visa-DPAS description): src0 is C,
  **src1 is B, src2 is A**, dst is D.
* AMX ``tdpbf16ps tmm_dst, tmm_src1, tmm_src2`` (Intel SDM, "TDPBF16PS"): **src1 is A, src2 is B**; the dst tile
  holds C on entry and D on exit (there is no src0).
* OpenCL ``intel_sub_group_*_matrix_mad_k*(a, b, acc)``: a is A, b is B, acc is C, the return value is D; each
  lowers to one DPAS, so a goes to src2 and b to src1.
* SYCL ``joint_matrix_mad(sg, D, A, B, C)``: ``use::a``, ``use::b``, ``use::accumulator`` (C and D); on an AMX
  device they are AMX's tiles, on an XMX device DPAS's registers.
"""

from __future__ import annotations

from ..errors import InvalidValue

__all__ = ["CORRESPONDENCE", "ENGINES", "operand_name"]

#: engine -> matrix (A, B, C, D) -> the operand that holds it in that engine's instruction
CORRESPONDENCE: dict[str, dict[str, str]] = {
    "dpas": {"A": "src2", "B": "src1", "C": "src0", "D": "dst"},
    "amx": {"A": "src1", "B": "src2", "C": "dst", "D": "dst"},
    "opencl": {"A": "a (-> DPAS src2)", "B": "b (-> DPAS src1)", "C": "acc (-> DPAS src0)",
               "D": "return value (-> DPAS dst)"},
    "sycl": {"A": "use::a", "B": "use::b", "C": "use::accumulator", "D": "use::accumulator"},
}
ENGINES = tuple(CORRESPONDENCE)

#: the spellings of the four matrices
_MATRIX = {"a": "A", "b": "B", "c": "C", "acc": "C", "accumulator": "C", "src0": None, "d": "D", "result": "D",
           "dst": None, "src1": None, "src2": None}
#: each layer's own name for a matrix
_LAYER_NAME = {
    "dpas": {"A": "src2", "B": "src1", "C": "src0", "D": "dst"},
    "amx": {"A": "a", "B": "b", "C": "c", "D": "c"},
    "opencl": {"A": "a", "B": "b", "C": "acc", "D": "result"},
    "sycl": {"A": "a", "B": "b", "C": "accumulator", "D": "accumulator"},
}


def _matrix(engine: str, name: str) -> str | None:
    """A, B, C or D for ``name`` in ``engine`` (src forms read through the engine's numbering)."""
    if _MATRIX.get(name):
        return _MATRIX[name]
    if name in ("src0", "src1", "src2", "dst"):
        table = CORRESPONDENCE["amx" if engine == "amx" else "dpas"]
        if engine == "amx" and name == "src0":
            return "C"                               # AMX has no src0: C is read from the dst tile
        return next(m for m, op in table.items() if op == name)
    return None


def operand_name(layer: str, operand: str, engine: str | None = None) -> str:
    """The name ``layer`` (dpas, dpasw, amx, opencl, sycl) uses for ``operand`` given in either form
    (``a b c d acc accumulator result`` or ``src0 src1 src2 dst``). ``engine`` ("amx" or "xmx"): for sycl, whose
    src numbering is that of the device's engine (default: XMX's)."""
    lay = "dpas" if layer in ("dpas", "dpasw", "xmx") else layer
    key = str(operand).strip().lower()
    num = "amx" if lay == "amx" or (lay == "sycl" and engine == "amx") else "dpas"
    m = _matrix(num, key)
    if m is None or lay not in _LAYER_NAME:
        from ..suggest import did_you_mean
        raise InvalidValue(f"unknown operand {operand!r}{did_you_mean(key, _MATRIX)}",
                           rule="operands: a, b, c (acc), d (result) or src0, src1, src2, dst (docs/glossary.md)",
                           values={"layer": layer, "operand": operand})
    return _LAYER_NAME[lay][m]
