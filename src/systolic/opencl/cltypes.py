"""OpenCL C scalar and vector types as numpy data (OpenCL 3.0 C "Built-in Scalar / Vector Data Types").

A sub-group value of OpenCL type ``T`` (scalar) is a numpy array of shape ``(S,)``, of ``Tn`` (vector) shape
``(S, n)``, with the work-item on the leading axis and T's dtype below. ``bf16`` data is carried in ``short``
(cl_intel_subgroup_matrix_multiply_accumulate, Issues: "signed types represent fp16 and bf16 data").
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import InvalidValue

__all__ = ["DTYPES", "CType", "parse", "as_type", "check_value"]

#: OpenCL C scalar type -> numpy dtype (little-endian, as the GPU)
DTYPES = {
    "char": np.dtype("i1"), "uchar": np.dtype("u1"), "short": np.dtype("<i2"), "ushort": np.dtype("<u2"),
    "int": np.dtype("<i4"), "uint": np.dtype("<u4"), "long": np.dtype("<i8"), "ulong": np.dtype("<u8"),
    "half": np.dtype("<f2"), "float": np.dtype("<f4"),
}
_VEC = (1, 2, 3, 4, 8, 16)
_RE = re.compile(r"^([a-z]+?)(\d*)$")


class CType:
    """An OpenCL C scalar or vector type: ``base`` (``"int"``), ``n`` components (1 for a scalar)."""

    __slots__ = ("base", "n")

    def __init__(self, base: str, n: int = 1) -> None:
        self.base, self.n = base, n

    @property
    def dtype(self) -> np.dtype:
        return DTYPES[self.base]

    @property
    def bits(self) -> int:
        """Bits of one component."""
        return self.dtype.itemsize * 8

    @property
    def name(self) -> str:
        return self.base if self.n == 1 else f"{self.base}{self.n}"

    def shape(self, s: int) -> tuple[int, ...]:
        """The numpy shape of a sub-group value of this type for sub-group size ``s``."""
        return (s,) if self.n == 1 else (s, self.n)

    def __eq__(self, other) -> bool:
        return isinstance(other, CType) and (self.base, self.n) == (other.base, other.n)

    def __hash__(self) -> int:
        return hash((self.base, self.n))

    def __repr__(self) -> str:
        return self.name


def parse(name: str | CType) -> CType:
    """``"short8"`` -> CType("short", 8)."""
    if isinstance(name, CType):
        return name
    m = _RE.match(str(name))
    if not m or m.group(1) not in DTYPES or (m.group(2) and int(m.group(2)) not in _VEC):
        raise InvalidValue(f"{name!r} is not an OpenCL C scalar or vector type",
                           rule="OpenCL C: char, uchar, short, ushort, int, uint, long, ulong, half, float "
                                "with n in 2, 3, 4, 8, 16", values={"type": name})
    return CType(m.group(1), int(m.group(2)) if m.group(2) else 1)


def check_value(x, t: CType, s: int, what: str) -> np.ndarray:
    """``x`` as a sub-group value of type ``t``: shape ``t.shape(s)`` and exactly t's dtype, else InvalidValue."""
    a = np.asarray(x)
    if a.ndim == 0 or a.shape[0] != s:
        raise InvalidValue(f"{what}: the leading axis is the work-item and must have the sub-group size {s}",
                           rule="per-work-item arguments: shape (S,) or (S, components), S = sub-group size",
                           values={"argument": what, "shape": a.shape, "sub_group_size": s})
    if a.shape != t.shape(s):
        raise InvalidValue(f"{what} must be an OpenCL {t.name}: shape {t.shape(s)} for a sub-group of {s}",
                           rule="the built-in's signature fixes the component count",
                           values={"argument": what, "shape": a.shape, "expected": t.shape(s), "type": t.name})
    if a.dtype != t.dtype:
        raise InvalidValue(f"{what} must have the dtype of OpenCL {t.base} ({t.dtype})",
                           rule="the built-in's signature fixes the component type (reinterpret bits with "
                                "systolic.opencl.as_type or ndarray.view)",
                           values={"argument": what, "dtype": str(a.dtype), "expected": str(t.dtype)})
    return a


def as_type(x, name: str | CType) -> np.ndarray:
    """OpenCL ``as_<type>()``: reinterpret each work-item's bits as ``name`` (same total width per work-item).

    ``as_type(int_value, "short2")`` turns (S,) int32 into (S, 2) int16, low half first (little-endian).
    """
    t = parse(name)
    a = np.ascontiguousarray(x)
    if a.ndim == 0 or a.ndim > 2:
        raise InvalidValue("as_type takes a sub-group value of shape (S,) or (S, n)", values={"shape": a.shape})
    s = a.shape[0]
    nbytes = a.dtype.itemsize * (a.shape[1] if a.ndim == 2 else 1)
    if nbytes != t.dtype.itemsize * t.n:
        raise InvalidValue(f"as_{t.name} needs a value of {t.dtype.itemsize * t.n} bytes per work-item",
                           rule="OpenCL C 6.4.4.2: as_type() requires operand and result of the same size",
                           values={"bytes": nbytes, "type": t.name})
    out = a.reshape(s, -1).view(np.uint8).reshape(s, nbytes).copy().view(t.dtype)
    return out.reshape(t.shape(s))
