"""vISA regions: which elements an operand touches, and the rules a region must obey.

Source: visa-operands.md (IGC documentation/visa/5_operands.md), "Region-based Addressing" (the two
pseudo-code blocks), "General Operands" (the 4-bit region encoding) and "Region Restrictions" (rules 1-6).

The *spec path* functions (:func:`source_element_indices`, :func:`dest_element_indices`) are the
pseudo-code line by line; :func:`source_element_indices_np` is the vectorised fast path, proven equal
by tests/visa/test_regions.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import IllegalInstruction, InvalidValue
from .isa import EXEC_SIZES

__all__ = ["REGION_VALUES", "encode_region_value", "decode_region_value", "LEGAL_WIDTH", "LEGAL_VSTRIDE",
           "LEGAL_HSTRIDE", "SrcRegion", "DstRegion", "check_exec_size", "check_src_region",
           "check_dst_region", "check_column_offset", "check_two_grfs", "check_in_variable",
           "check_region_type", "first_element_index", "source_element_indices", "dest_element_indices",
           "source_element_indices_np", "dest_element_indices_np", "region_elements"]

RULE_TABLE = "visa-operands.md: General Operands, region encoding table"
RULE1 = "visa-operands.md: Region Restrictions rule 1 (Width in {1,2,4,8,16})"
RULE2 = "visa-operands.md: Region Restrictions rule 2 (VertStride in {0,1,2,4,8,16,32})"
RULE3 = "visa-operands.md: Region Restrictions rule 3 (HorzStride in {0,1,2,4})"
RULE4 = "visa-operands.md: Region Restrictions rule 4 (ExecSize >= Width)"
RULE5 = "visa-operands.md: Region Restrictions rule 5 (destination HorzStride != 0)"
RULE6 = "visa-operands.md: Region Restrictions rule 6 (at most two adjacent GRFs)"
RULE_OOB = "visa-operands.md: Region-based Addressing (out-of-bound data element)"
RULE_COL = "visa-operands.md: General Operands (the column offset may not cross the GRF boundary)"
RULE_ROW = "visa-operands.md: gen_opnd.row_offset (ub)"
RULE_TYPE = "visa-operands.md: General Operands (a general variable: any type but V, UV, VF and BOOL)"

#: 4-bit region code -> value in elements; None is "Null" (code 0000)
REGION_VALUES: dict[int, int | None] = {0: None, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 6: 16, 7: 32}
_REGION_CODES = {v: k for k, v in REGION_VALUES.items()}

LEGAL_WIDTH = (1, 2, 4, 8, 16)
LEGAL_VSTRIDE = (0, 1, 2, 4, 8, 16, 32)
LEGAL_HSTRIDE = (0, 1, 2, 4)


def encode_region_value(v: int | None, field: str = "region") -> int:
    """The 4-bit code of a region value (None = Null)."""
    if v not in _REGION_CODES:
        raise IllegalInstruction(f"{field} {v!r} has no region encoding", rule=RULE_TABLE,
                                 values={field: v, "encodable": [None, 0, 1, 2, 4, 8, 16, 32]})
    return _REGION_CODES[v]


def decode_region_value(code: int, field: str = "region") -> int | None:
    """The value of a 4-bit region code; codes 8-15 are not in the table."""
    if code not in REGION_VALUES:
        raise IllegalInstruction(f"{field} code {code:#06b} is not in the region encoding table", rule=RULE_TABLE,
                                 values={field: code})
    return REGION_VALUES[code]


@dataclass(frozen=True)
class SrcRegion:
    """``<VertStride; Width, HorzStride>``; ``vstride=None`` is the multi-address indirect form ``<Width,HorzStride>``."""

    vstride: int | None
    width: int
    hstride: int

    def text(self) -> str:
        if self.vstride is None:
            return f"<{self.width},{self.hstride}>"
        return f"<{self.vstride};{self.width},{self.hstride}>"


@dataclass(frozen=True)
class DstRegion:
    """``<HorzStride>`` of a destination operand."""

    hstride: int

    def text(self) -> str:
        return f"<{self.hstride}>"


def check_exec_size(exec_size: int) -> None:
    """An execution size is one of the six the Exec_size field encodes."""
    if isinstance(exec_size, bool) or exec_size not in EXEC_SIZES.values():
        raise IllegalInstruction("execution size must be 1, 2, 4, 8, 16 or 32",
                                 rule="instructions/*.md: Exec_size bits [2..0]", values={"exec_size": exec_size})


def check_src_region(vstride: int | None, width: int, hstride: int, exec_size: int, *,
                     multi_address_ok: bool = False) -> None:
    """Rules 1-4 of "General Restrictions on Region Parameters" for a source region."""
    check_exec_size(exec_size)
    if width not in LEGAL_WIDTH:
        raise IllegalInstruction("illegal region Width", rule=RULE1, values={"width": width})
    if vstride is None:
        if not multi_address_ok:
            raise IllegalInstruction("a null VertStride (multi-address form) is only legal on an indirect source",
                                     rule="visa-operands.md: Region Interpretation for Indirect Operands",
                                     values={"vstride": None})
    elif vstride not in LEGAL_VSTRIDE:
        raise IllegalInstruction("illegal region VertStride", rule=RULE2, values={"vstride": vstride})
    if hstride not in LEGAL_HSTRIDE:
        raise IllegalInstruction("illegal region HorzStride", rule=RULE3, values={"hstride": hstride})
    if exec_size < width:
        raise IllegalInstruction("ExecSize must be greater than or equal to Width", rule=RULE4,
                                 values={"exec_size": exec_size, "width": width})


def check_dst_region(hstride: int) -> None:
    """Rules 3 and 5 for a destination region ``<HorzStride>``."""
    if hstride not in LEGAL_HSTRIDE:
        raise IllegalInstruction("illegal region HorzStride", rule=RULE3, values={"hstride": hstride})
    if hstride == 0:
        raise IllegalInstruction("HorzStride of a destination operand must not be 0", rule=RULE5,
                                 values={"hstride": hstride})


def check_column_offset(col: int, type_size: int, grf_bytes: int) -> None:
    """``C`` may not reach past the GRF its row starts in."""
    if col < 0 or col * type_size >= grf_bytes:
        raise IllegalInstruction("column offset crosses the GRF boundary", rule=RULE_COL,
                                 values={"col_offset": col, "type_size": type_size, "grf_bytes": grf_bytes})


def check_region_type(t) -> None:
    """A region addresses a general variable, and a general variable has any type but V, UV, VF (packed
    immediates) and BOOL (predicates): the same rule ``.decl`` enforces (variables.GeneralVar)."""
    from .isa import vtype
    vt = vtype(t)
    if vt.kind in ("vector", "bool"):
        raise IllegalInstruction(f"a region operand may not have type {vt.name.upper()}", rule=RULE_TYPE,
                                 values={"type": vt.name})


def first_element_index(row: int, col: int, type_size: int, grf_bytes: int) -> int:
    """``FirstElementIndex = R * (GRF_Size_in_Bytes / sizeof(VN_type)) + C`` (both pseudo-code blocks).

    ``R`` and ``C`` are the operand's ``ub`` row and column offsets: outside 0..255 they have no encoding
    (the encoder's rule), so no element index is computed for them."""
    if not 0 <= row <= 255:
        raise IllegalInstruction("row offset out of range", rule=RULE_ROW, values={"row_offset": row, "min": 0,
                                                                                    "max": 255})
    if not 0 <= col <= 255:
        raise IllegalInstruction("column offset out of range", rule="visa-operands.md: gen_opnd.col_offset (ub)",
                                 values={"col_offset": col, "min": 0, "max": 255})
    return row * (grf_bytes // type_size) + col


def source_element_indices(row: int, col: int, vstride: int, width: int, hstride: int, exec_size: int,
                           type_size: int, grf_bytes: int) -> list[int]:
    """Element indices into VN of a source region, per channel (spec path).

    visa-operands.md "Region-based Addressing", first pseudo-code block, line by line.
    """
    check_exec_size(exec_size)
    source = [0] * exec_size
    count = 0
    first = first_element_index(row, col, type_size, grf_bytes)
    for i in range(exec_size // width):
        for j in range(width):
            source[count] = first + i * vstride + j * hstride
            count += 1
    return source


def dest_element_indices(row: int, col: int, hstride: int, exec_size: int, type_size: int,
                         grf_bytes: int) -> list[int]:
    """Element indices into VN of a destination region (spec path; second pseudo-code block)."""
    check_exec_size(exec_size)
    dst = [0] * exec_size
    first = first_element_index(row, col, type_size, grf_bytes)
    for i in range(exec_size):
        dst[i] = first + i * hstride
    return dst


def source_element_indices_np(row: int, col: int, vstride: int, width: int, hstride: int, exec_size: int,
                              type_size: int, grf_bytes: int) -> np.ndarray:
    """Vectorised :func:`source_element_indices` (fast path)."""
    check_exec_size(exec_size)
    n = np.arange(exec_size, dtype=np.int64)
    return first_element_index(row, col, type_size, grf_bytes) + (n // width) * vstride + (n % width) * hstride


def dest_element_indices_np(row: int, col: int, hstride: int, exec_size: int, type_size: int,
                            grf_bytes: int) -> np.ndarray:
    """Vectorised :func:`dest_element_indices` (fast path)."""
    check_exec_size(exec_size)
    return first_element_index(row, col, type_size, grf_bytes) + np.arange(exec_size, dtype=np.int64) * hstride


def check_in_variable(indices, num_elts: int, name: str = "") -> None:
    """Every accessed element must lie in the variable (the spec calls the access undefined; we reject it)."""
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= num_elts):
        bad = int(idx[(idx < 0) | (idx >= num_elts)][0])
        raise IllegalInstruction("region accesses an element outside its variable", rule=RULE_OOB,
                                 values={"variable": name, "element": bad, "num_elts": num_elts})


def check_two_grfs(byte_addresses, type_size: int, grf_bytes: int, name: str = "") -> None:
    """Rule 6: all bytes touched (each element ``type_size`` bytes from its address) lie in GRFs g and g+1."""
    a = np.asarray(byte_addresses, dtype=np.int64)
    if not a.size:
        return
    lo = int(a.min()) // grf_bytes
    hi = (int(a.max()) + type_size - 1) // grf_bytes
    if hi - lo > 1:
        raise IllegalInstruction("operand spans more than two adjacent GRF registers", rule=RULE6,
                                 values={"variable": name, "first_grf": lo, "last_grf": hi,
                                         "grf_bytes": grf_bytes})


_SPEC = re.compile(r"\s*(?:\w+)?\(\s*(\d+)\s*,\s*(\d+)\s*\)\s*<\s*([^>]*)>\s*")


def region_elements(spec: str, t, exec_size: int, grf_bytes: int) -> list[dict]:
    """What ``systolic visa region`` shows: per channel, the element, byte, GRF and sub-register byte that the
    region ``spec`` -- ``(row,col)<VertStride;Width,HorzStride>`` (a source) or ``(row,col)<HorzStride>`` (a
    destination) -- touches in a variable of type ``t`` at execution size ``exec_size``.

    Every rule an encoded operand obeys is checked first, on both paths: the execution size, the type a
    general variable may have, the ``ub`` row and column offsets, the column offset inside its GRF, the region
    rules 1-5 and rule 6 (two adjacent GRFs)."""
    from .isa import vtype
    m = _SPEC.fullmatch(spec)
    if not m:
        raise InvalidValue("SPEC is (row,col)<VertStride;Width,HorzStride> or (row,col)<HorzStride>",
                           values={"spec": spec})
    row, col, body = int(m.group(1)), int(m.group(2)), m.group(3)
    vt = vtype(t)
    check_region_type(vt)
    check_exec_size(exec_size)
    check_column_offset(col, vt.size, grf_bytes)
    try:
        nums = [int(x) for x in re.split(r"[;,]", body)]
    except ValueError:
        raise InvalidValue("region values must be integers", values={"region": body}) from None
    if len(nums) == 1:
        check_dst_region(nums[0])
        idx = dest_element_indices(row, col, nums[0], exec_size, vt.size, grf_bytes)
    elif len(nums) == 3 and ";" in body:
        check_src_region(*nums, exec_size)
        idx = source_element_indices(row, col, *nums, exec_size, vt.size, grf_bytes)
    else:
        raise InvalidValue("region is <HorzStride> or <VertStride;Width,HorzStride>", values={"region": body})
    addrs = [i * vt.size for i in idx]
    check_two_grfs(addrs, vt.size, grf_bytes)
    return [{"channel": c, "element": e, "byte": a, "grf": a // grf_bytes, "subreg_byte": a % grf_bytes}
            for c, (e, a) in enumerate(zip(idx, addrs))]
