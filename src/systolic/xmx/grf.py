"""The general register file (GRF) of one hardware thread, byte-addressable.

vISA raw operands (DPAS's Dst, Src0, Src1; visa-operands.md "Raw operand") are a
variable plus a byte offset; here the variable has already been placed, so an
operand is a byte offset into this file. Register ``r`` spans bytes
``[r * grf_bytes, (r + 1) * grf_bytes)``; multi-byte values are little-endian
(the GPU's byte order). Sizes come from :mod:`systolic.xmx.platform`.

Every access outside the file raises :class:`~systolic.errors.IllegalInstruction`
(IGC rejects operands that leave the register file).
"""

from __future__ import annotations

import numpy as np

from ..errors import IllegalInstruction, InvalidValue
from ..vocabulary import renamed
from .platform import Platform, get_platform

__all__ = ["GRF"]


class GRF:
    """A register file of ``num_grf`` (default: the platform's) registers of the platform's ``grf_bytes`` bytes;
    ``device``: the GPU platform (name, alias or :class:`Platform`; default: pvc; ``platform=`` is its older
    keyword, DeprecationWarning). The platform record is ``.platform``.

    >>> g = GRF("dg2"); g.write(32, np.arange(8, dtype=np.uint32)); int(g.view(36, np.uint32, 1)[0])
    1
    """

    def __init__(self, device: str | Platform | None = None, num_grf: int | None = None,
                 data: np.ndarray | None = None, **renamed_keywords) -> None:
        if renamed_keywords:             # platform=: the older name of device= (systolic.vocabulary)
            device = renamed(renamed_keywords, {"platform": "device"}, "xmx.GRF", device=device)["device"]
        self.platform = get_platform(device)          # None: pvc
        n = self.platform.num_grf if num_grf is None else num_grf
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise InvalidValue("num_grf must be an integer register count",
                               rule=f"{self.platform.name} GRF modes: {self.platform.grf_modes}",
                               values={"num_grf": n})
        if n not in self.platform.grf_modes:
            raise InvalidValue(f"{self.platform.name} has no {n}-register GRF mode",
                               rule=f"{self.platform.name} GRF modes: {self.platform.grf_modes}",
                               values={"num_grf": n})
        self.num_grf = n = int(n)
        self.grf_bytes = self.platform.grf_bytes
        if data is None:
            self.data = np.zeros(n * self.grf_bytes, dtype=np.uint8)
        else:
            d = np.asarray(data)
            if d.dtype != np.uint8 or d.ndim != 1 or d.size != n * self.grf_bytes:
                raise InvalidValue("GRF data must be a 1-D uint8 array of num_grf * grf_bytes bytes",
                                   values={"shape": d.shape, "dtype": str(d.dtype), "expected": n * self.grf_bytes})
            self.data = d

    @property
    def size(self) -> int:
        """Bytes in the file."""
        return self.data.size

    def __repr__(self) -> str:
        return f"GRF({self.platform.name}, {self.num_grf} x {self.grf_bytes} bytes)"

    def check(self, offset: int, nbytes: int, what: str = "access") -> None:
        """Raise IllegalInstruction unless ``[offset, offset + nbytes)`` lies inside the file."""
        if not isinstance(offset, (int, np.integer)) or isinstance(offset, bool):
            raise IllegalInstruction(f"{what}: register offset must be an integer byte offset",
                                     rule="raw operand = variable + byte offset", values={"offset": offset})
        offset, nbytes = int(offset), int(nbytes)
        if offset < 0 or nbytes < 0 or offset + nbytes > self.size:
            raise IllegalInstruction(
                f"{what} leaves the register file",
                rule=f"operand must lie within the {self.num_grf} GRFs of {self.grf_bytes} bytes",
                values={"offset": offset, "bytes": nbytes, "grf_file_bytes": self.size,
                        "first_grf": offset // self.grf_bytes, "last_grf": (offset + max(nbytes, 1) - 1) // self.grf_bytes})

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        """A copy of ``nbytes`` bytes starting at byte ``offset``."""
        self.check(offset, nbytes, "read")
        return self.data[offset:offset + nbytes].copy()

    def write(self, offset: int, values) -> None:
        """Store the bytes of ``values`` (any numpy dtype, little-endian) at byte ``offset``."""
        try:
            a = np.ascontiguousarray(values)
        except (TypeError, ValueError) as e:
            raise InvalidValue(f"cannot store these values in the GRF: {e}", values={"offset": offset}) from None
        if a.dtype.hasobject or a.dtype.kind in "OUSMm":
            # objects, strings and dates have no register image (ml_dtypes floats are kind V and are fine)
            raise InvalidValue("GRF values must be numbers (a numeric numpy or ml_dtypes array)",
                               rule="registers hold raw bits of numeric elements", values={"dtype": str(a.dtype)})
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        raw = a.reshape(-1).view(np.uint8)
        self.check(offset, raw.size, "write")
        self.data[offset:offset + raw.size] = raw

    def view(self, offset: int, dtype, count: int) -> np.ndarray:
        """A writable view of ``count`` elements of ``dtype`` at byte ``offset`` (unaligned offsets allowed)."""
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise InvalidValue(f"{dtype!r} is not a numpy dtype", rule="GRF.view dtype: a numeric numpy dtype",
                               values={"dtype": repr(dtype)}) from None
        if dt.hasobject or dt.itemsize == 0 or dt.kind in "USMm":
            # registers hold raw bits of numeric elements, as GRF.write accepts them
            raise InvalidValue(f"register bytes cannot be viewed as {dt}", rule="GRF.view dtype: a numeric numpy dtype",
                               values={"dtype": str(dt)})
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)) or count < 0:
            raise InvalidValue("GRF.view count is a non-negative integer", rule="GRF.view count: an integer >= 0",
                               values={"count": count})
        self.check(offset, dt.itemsize * int(count), "view")
        return self.data[offset:offset + dt.itemsize * int(count)].view(dt)

    def reg(self, r: int) -> np.ndarray:
        """Register ``r`` as a writable uint8 view."""
        return self.view(int(r) * self.grf_bytes, np.uint8, self.grf_bytes)

    def dwords(self, offset: int, count: int) -> np.ndarray:
        """``count`` dwords (uint32, copy) from byte ``offset``."""
        return self.read(offset, 4 * count).view(np.uint32)

    def copy(self) -> "GRF":
        return GRF(self.platform, self.num_grf, self.data.copy())

    def clear(self) -> None:
        self.data[:] = 0
