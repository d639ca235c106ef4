"""The 64-byte TILECFG memory image (SDM vol. 2, LDTILECFG, Table "Tile configuration format").

Layout: byte 0 palette_id, byte 1 start_row, bytes 2-15 reserved (must be 0),
bytes 16-31 colsb[0..7] (u16 little endian: bytes per row of each tile), bytes
32-47 reserved, bytes 48-55 rows[0..7], bytes 56-63 reserved.

:class:`TileConfig` holds the image exactly (reserved bytes included, so an
image with a reserved byte set survives ``from_bytes`` and LDTILECFG can raise
#GP on it). :func:`check_ldtilecfg` is LDTILECFG's list of #GP rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..errors import GeneralProtection, InvalidValue
from .cpu import CpuModel

__all__ = ["TileConfig", "check_ldtilecfg", "RESERVED_RANGES", "NTILES"]

NTILES = 8
#: (first, end) byte ranges that must be zero
RESERVED_RANGES = ((2, 16), (32, 48), (56, 64))


def _as_bytes(b) -> bytes:
    if isinstance(b, np.ndarray):
        if b.dtype != np.uint8:
            raise InvalidValue("a TILECFG image is uint8", values={"dtype": str(b.dtype)})
        b = b.tobytes()
    if not isinstance(b, (bytes, bytearray, memoryview, list, tuple)):
        # bytes(n) of an integer n is n zero bytes: bytes(64) would pass as an all-zero image, bytes(10**12) would
        # exhaust memory; only a byte sequence is an image
        raise InvalidValue("a TILECFG image is 64 bytes (bytes, bytearray or a uint8 array)",
                           values={"type": type(b).__name__})
    try:
        b = bytes(b)
    except (TypeError, ValueError):
        raise InvalidValue("a TILECFG image is 64 bytes (bytes, bytearray or a uint8 array)",
                           values={"type": type(b).__name__}) from None
    if len(b) != 64:
        raise InvalidValue("a TILECFG image is 64 bytes", rule="SDM LDTILECFG: m512 operand", values={"length": len(b)})
    return b


def _ints(seq, what: str) -> list[int]:
    """A list of Python ints from a sequence of integers (numpy integers included; bools, floats, strings not)."""
    try:
        items = list(seq)
    except TypeError:
        raise InvalidValue(f"{what} must be a sequence of integers", values={what: repr(seq)[:60]}) from None
    out = []
    for x in items:
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
            raise InvalidValue(f"{what} must hold integers", values={what: repr(seq)[:60], "element": repr(x)})
        out.append(int(x))
    return out


@dataclass(frozen=True, init=False)
class TileConfig:
    """TILECFG: palette, start_row, per-tile rows and colsb (bytes per row), and the reserved bytes.

    Readable constructor::

        TileConfig(palette=1, tiles={0: (16, 64), 1: (16, 64), 2: (16, 64)})  # tmm -> (rows, colsb)
        TileConfig(palette=1, rows=[16]*8, colsb=[64]*8)
    """

    palette: int
    start_row: int
    rows: tuple[int, ...]
    colsb: tuple[int, ...]
    reserved: bytes  # the 38 reserved bytes in image order (2-15, 32-47, 56-63)

    def __init__(self, palette: int = 1, start_row: int = 0, tiles: Mapping[int, tuple[int, int]] | None = None, *,
                 rows=None, colsb=None, reserved: bytes | None = None) -> None:
        r = [0] * NTILES if rows is None else _ints(rows, "rows")
        c = [0] * NTILES if colsb is None else _ints(colsb, "colsb")
        if len(r) != NTILES or len(c) != NTILES:
            raise InvalidValue("rows and colsb list 8 tiles", values={"rows": len(r), "colsb": len(c)})
        if tiles is None:
            tiles = {}
        if not isinstance(tiles, Mapping):
            raise InvalidValue("tiles maps a tile number to (rows, colsb), e.g. {0: (16, 64)}",
                               values={"tiles": repr(tiles)[:60]})
        for t, shape in tiles.items():
            if isinstance(t, (bool, np.bool_)) or not (isinstance(t, (int, np.integer)) and 0 <= t < NTILES):
                raise InvalidValue("tile numbers are 0-7", values={"tile": t})
            pair = _ints(shape, f"tiles[{t}]")
            if len(pair) != 2:
                raise InvalidValue("a tile shape is (rows, colsb)", values={"tile": int(t), "shape": repr(shape)})
            r[t], c[t] = pair
        for name, v in (("palette", palette), ("start_row", start_row)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise InvalidValue(f"{name} must be an integer (one byte)", values={name: v})
        nres = sum(e - s for s, e in RESERVED_RANGES)
        res = bytes(nres) if reserved is None else bytes(reserved)
        if len(res) != nres:
            raise InvalidValue(f"TILECFG has {nres} reserved bytes", values={"length": len(res)})
        for name, v, hi in (("palette", palette, 255), ("start_row", start_row, 255)):
            if not 0 <= int(v) <= hi:
                raise InvalidValue(f"{name} is one byte", values={name: v})
        for t in range(NTILES):
            if not 0 <= r[t] <= 255:
                raise InvalidValue("rows[t] is one byte", values={"tile": t, "rows": r[t]})
            if not 0 <= c[t] <= 0xFFFF:
                raise InvalidValue("colsb[t] is two bytes", values={"tile": t, "colsb": c[t]})
        object.__setattr__(self, "palette", int(palette))
        object.__setattr__(self, "start_row", int(start_row))
        object.__setattr__(self, "rows", tuple(r))
        object.__setattr__(self, "colsb", tuple(c))
        object.__setattr__(self, "reserved", res)

    # ---- image
    @classmethod
    def from_bytes(cls, b) -> "TileConfig":
        """Parse a 64-byte image (bytes, bytearray or uint8 array). No rule is checked here."""
        b = _as_bytes(b)
        colsb = [int.from_bytes(b[16 + 2 * t:18 + 2 * t], "little") for t in range(NTILES)]
        rows = list(b[48:56])
        reserved = b"".join(b[s:e] for s, e in RESERVED_RANGES)
        return cls(palette=b[0], start_row=b[1], rows=rows, colsb=colsb, reserved=reserved)

    def to_bytes(self) -> bytes:
        out = bytearray(64)
        out[0], out[1] = self.palette, self.start_row
        for t in range(NTILES):
            out[16 + 2 * t:18 + 2 * t] = self.colsb[t].to_bytes(2, "little")
            out[48 + t] = self.rows[t]
        pos = 0
        for s, e in RESERVED_RANGES:
            out[s:e] = self.reserved[pos:pos + e - s]
            pos += e - s
        return bytes(out)

    def to_array(self) -> np.ndarray:
        return np.frombuffer(self.to_bytes(), dtype=np.uint8).copy()

    # ---- queries
    def shape(self, tmm: int) -> tuple[int, int]:
        """(rows, colsb) of tile ``tmm``."""
        return self.rows[tmm], self.colsb[tmm]

    def valid(self, tmm: int) -> bool:
        """A tile is valid when it is configured with nonzero rows and colsb (SDM: "tile is valid")."""
        return self.palette != 0 and self.rows[tmm] != 0 and self.colsb[tmm] != 0

    def with_start_row(self, start_row: int) -> "TileConfig":
        return TileConfig(self.palette, start_row, rows=self.rows, colsb=self.colsb, reserved=self.reserved)

    @classmethod
    def init(cls) -> "TileConfig":
        """The INIT state: all 64 bytes zero (what STTILECFG writes when tiles are not configured)."""
        return cls(palette=0)

    def __repr__(self) -> str:
        tiles = {t: (self.rows[t], self.colsb[t]) for t in range(NTILES) if self.rows[t] or self.colsb[t]}
        extra = ", reserved=<nonzero>" if any(self.reserved) else ""
        return f"TileConfig(palette={self.palette}, start_row={self.start_row}, tiles={tiles}{extra})"


def check_ldtilecfg(cfg: TileConfig, cpu: CpuModel) -> None:
    """LDTILECFG's #GP rules (SDM vol. 2, LDTILECFG, Operation and "Protected Mode Exceptions").

    palette 0 is always legal (it means "init state"; every other field is
    ignored). Otherwise: the palette must be supported, every reserved byte zero,
    and for each tile colsb <= bytes_per_row, rows <= max_rows, and rows and colsb
    either both zero or both nonzero. Not checked here (silicon accepts them,
    tests/data/amx_silicon/quirks.json): colsb % 4 (a tile with colsb % 4 != 0
    raises #UD when loaded, stored or multiplied) and start_row (any byte; the
    loads and stores check start_row < rows).
    """
    if cfg.palette == 0:
        return
    if cfg.palette > cpu.max_palette:
        raise GeneralProtection("LDTILECFG: unsupported palette",
                                rule="SDM LDTILECFG: #GP if palette_id > CPUID 1DH.0 EAX (max palette)",
                                values={"palette": cfg.palette, "max_palette": cpu.max_palette, "cpu": cpu.name})
    if any(cfg.reserved):
        img = cfg.to_bytes()
        first = next(i for s, e in RESERVED_RANGES for i in range(s, e) if img[i])
        raise GeneralProtection("LDTILECFG: reserved byte set",
                                rule="SDM LDTILECFG: #GP if any reserved byte (2-15, 32-47, 56-63) is nonzero",
                                values={"byte": first, "value": img[first]})
    p = cpu.palette(cfg.palette)
    for t in range(p.max_names):
        rows, colsb = cfg.rows[t], cfg.colsb[t]
        if colsb > p.bytes_per_row:
            raise GeneralProtection(f"LDTILECFG: tmm{t} colsb too large",
                                    rule="SDM LDTILECFG: #GP if colsb[t] > palette bytes_per_row",
                                    values={"tile": t, "colsb": colsb, "bytes_per_row": p.bytes_per_row})
        if rows > p.max_rows:
            raise GeneralProtection(f"LDTILECFG: tmm{t} has too many rows",
                                    rule="SDM LDTILECFG: #GP if rows[t] > palette max_rows",
                                    values={"tile": t, "rows": rows, "max_rows": p.max_rows})
        if (rows == 0) != (colsb == 0):
            raise GeneralProtection(f"LDTILECFG: tmm{t} has exactly one of rows/colsb zero",
                                    rule="SDM LDTILECFG: #GP if rows[t] == 0 xor colsb[t] == 0",
                                    values={"tile": t, "rows": rows, "colsb": colsb})
