"""Indirect operands: which GRF bytes ``r[A(k), offset]<region>:type`` touches.

Source: visa-operands.md (IGC documentation/visa/5_operands.md), "Region Interpretation for
Indirect Operands" (single-address and multi-address forms; the multi-address pseudo-code),
"Indirect Operands" (``addr_offset``, ``indirect_offset`` in [-512, 511], type restrictions,
alignment to the operand type), "Additional Region Restrictions for indirect operands" (no
multi-address destination) and "Vector Operands" (an indirect access stays inside one general
variable). Address variable elements are UW byte addresses into the GRF file.
"""

from __future__ import annotations

from ..errors import IllegalInstruction

__all__ = ["single_address_source", "multi_address_source", "indirect_dest", "check_address_elements",
           "check_alignment", "RULE_MULTI_DST", "RULE_ALIGN", "RULE_ONE_VAR"]

RULE_MULTI_DST = "visa-operands.md: Additional Region Restrictions for indirect operands rule 1"
RULE_ALIGN = "visa-operands.md: Indirect Operands (address not aligned to the operand type)"
RULE_ONE_VAR = "visa-operands.md: Indirect operand (elements within one base General variable)"
RULE_ADDR = "visa-operands.md: Region Interpretation for Indirect Operands (address elements AN(k + i))"


def check_address_elements(k: int, count: int, num_elts: int, name: str = "") -> None:
    """``AN(k) .. AN(k + count - 1)`` must exist in the address variable."""
    if k < 0 or k + count > num_elts:
        raise IllegalInstruction("indirect operand reads address elements past the end of its address variable",
                                 rule=RULE_ADDR, values={"address_variable": name, "first": k, "count": count,
                                                         "num_elts": num_elts})


def single_address_source(an: list[int], k: int, offset: int, vstride: int, width: int, hstride: int,
                          exec_size: int, type_size: int) -> list[int]:
    """Byte addresses of a single-address source: region origin at ``AN(k) + offset`` (spec path)."""
    check_address_elements(k, 1, len(an))
    origin = an[k] + offset
    out = [0] * exec_size
    count = 0
    for i in range(exec_size // width):
        for j in range(width):
            out[count] = origin + (i * vstride + j * hstride) * type_size
            count += 1
    return out


def multi_address_source(an: list[int], k: int, offset: int, width: int, hstride: int, exec_size: int,
                         type_size: int) -> list[int]:
    """Byte addresses of a multi-address source (null VertStride), the pseudo-code line by line."""
    check_address_elements(k, exec_size // width, len(an))
    out = [0] * exec_size
    count = 0
    for i in range(exec_size // width):
        row_start = an[k + i] + offset
        for j in range(width):
            out[count] = row_start + j * hstride * type_size
            count += 1
    return out


def indirect_dest(an: list[int], k: int, offset: int, multi: bool, hstride: int, exec_size: int,
                  type_size: int) -> list[int]:
    """Byte addresses of an indirect destination ``r[A(k), offset]<HorzStride>`` (single-address only)."""
    if multi:
        raise IllegalInstruction("a multi-address indirect operand may not be a destination", rule=RULE_MULTI_DST,
                                 values={"address_variable_element": k})
    check_address_elements(k, 1, len(an))
    origin = an[k] + offset
    return [origin + i * hstride * type_size for i in range(exec_size)]


def check_alignment(addresses, type_size: int) -> None:
    for a in addresses:
        if a % type_size:
            raise IllegalInstruction("indirect address is not aligned to the operand type", rule=RULE_ALIGN,
                                     values={"address": a, "type_size": type_size})
