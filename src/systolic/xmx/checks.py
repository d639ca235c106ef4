"""Every check of one DPAS before it executes, shared by the spec path (:mod:`systolic.xmx.dpas`) and the fast
path (:func:`systolic.xmx.kernels.dpas_fast`): integer fields, operand offsets, the register file, the platform's
rules (:func:`systolic.xmx.rules.check`) and each operand's footprint inside the GRF. Its own module so the two
paths import it and not each other.
"""

from __future__ import annotations

import operator

import numpy as np

from ..errors import IllegalInstruction, InvalidValue
from . import models as M
from .grf import GRF
from .platform import get_platform
from .rules import DpasShape, check

__all__ = ["validate", "int_field"]


def _index(x, what):
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)):
        raise IllegalInstruction(f"DPAS {what} must be an integer byte offset", rule="raw operand = variable + offset",
                                 values={what: x})
    try:
        return operator.index(x)
    except TypeError:
        raise IllegalInstruction(f"DPAS {what} must be an integer byte offset", rule="raw operand = variable + offset",
                                 values={what: x}) from None


def int_field(v, name: str, op: str = "DPAS") -> int:
    """An integer instruction field (sd, rc, exec_size): a Python or numpy integer; bools, floats, strings
    and None are rejected (a bool is not a count, and a float would be truncated silently)."""
    if not isinstance(v, (bool, np.bool_)):
        try:
            return operator.index(v)
        except TypeError:
            pass
    raise IllegalInstruction(f"{op} {name} must be an integer", rule=f"visa-DPAS.md: {name} is an integer field",
                             values={name: v})


def _grf(grf, what: str = "grf") -> GRF:
    if not isinstance(grf, GRF):
        raise InvalidValue(f"DPAS needs a systolic.xmx.GRF register file as {what}",
                           rule="DPAS operands are byte offsets into one thread's GRF",
                           values={what: type(grf).__name__})
    return grf


def validate(grf, *, dst, src0, src1, src2, dst_type, src0_type, src1_precision, src2_precision, sd, rc,
             exec_size, platform, model):
    """Every check of one DPAS before it executes (shared by the spec path and the fast path).

    Returns the register file, the validated shape, the operand offsets and the numerics model.
    """
    grf = _grf(grf)
    sd, rc = int_field(sd, "sd"), int_field(rc, "rc")
    exec_size = None if exec_size is None else int_field(exec_size, "exec_size")
    P = get_platform(platform) if platform is not None else grf.platform
    if P.grf_bytes != grf.grf_bytes:
        raise IllegalInstruction("platform and register file disagree on the GRF size",
                                 rule="GRF size is a platform parameter",
                                 values={"platform": P.name, "grf_bytes": grf.grf_bytes})
    dst, src0, src1, src2 = (_index(dst, "dst"), _index(src0, "src0"), _index(src1, "src1"), _index(src2, "src2"))
    s = check(P, opcode="dpas", exec_size=exec_size, sd=sd, rc=rc, dst_type=dst_type, src0_type=src0_type,
              src1_precision=src1_precision, src2_precision=src2_precision, dst=dst, src0=src0, src1=src1,
              src2=src2)
    _check_footprints(grf, s, dst, src0, src1, src2, s.src2_bytes)
    return grf, s, (dst, src0, src1, src2), M.get_model(model, P)


def _check_footprints(grf: GRF, s: DpasShape, dst, src0, src1, src2, src2_bytes) -> None:
    grf.check(dst, s.rc * s.row_bytes(s.dst_type), "DPAS dst")
    if src0 is not None:
        grf.check(src0, s.rc * s.row_bytes(s.src0_type), "DPAS src0")
    grf.check(src1, s.src1_grfs * grf.grf_bytes, "DPAS src1")
    if src2 is not None:
        grf.check(src2, src2_bytes, "DPAS src2")
