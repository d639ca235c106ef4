"""cl_intel_subgroup_2d_block_io: the 2D block read/write/prefetch functions, by name (issue 21 item 3).

A name ``intel_sub_group_2d_block_<op>_<E>b_<R>r<W>x<C>c`` reads (or writes) C blocks of R rows by W elements of
E bits from a 2D surface (``base``, ``width`` in bytes, ``height`` in rows, ``pitch`` in bytes) at ``coord`` =
(x in elements, y in rows). The data of the blocks, one after the other, row by row (for ``transform``: each
column's rows packed 32 bits at a time, the VNNI form; for ``transpose``: the block transposed), is split into
units of the destination type, and unit ``u`` is component ``u / S`` of work-item ``u % S`` (the register order
of a sub-group value). Elements outside the surface read as 0 and are not written (the hardware bounds the
access by the surface: width, height). ``prefetch`` reads nothing back.

The table below generates the names each platform declares: the Xe-HPC and Xe2+ platforms (exec size 16) have
the extension, DG2 does not (the prelude does not define ``cl_intel_subgroup_2d_block_io`` there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Block2D", "parse_name", "FUNCTIONS", "declarations", "supported"]

_NAME = re.compile(r"^intel_sub_group_2d_block_(read_transform|read_transpose|read|write|prefetch)_(8|16|32|64)b_"
                   r"(\d+)r(\d+)x(\d+)c$")
_UNIT = {8: "ushort", 16: "ushort", 32: "uint", 64: "ulong"}


@dataclass(frozen=True)
class Block2D:
    name: str
    op: str            # read, read_transform, read_transpose, write, prefetch
    bits: int
    rows: int
    width: int         # elements per row of one block
    blocks: int

    @property
    def unit(self) -> str:
        """The C type of the destination/source pointer's elements."""
        if self.op == "read_transform":
            return "uint"
        if self.bits == 8 and self.op in ("read", "write") and self.width < 32:
            return "uchar"
        return _UNIT[self.bits]

    @property
    def unit_bytes(self) -> int:
        return {"uchar": 1, "ushort": 2, "uint": 4, "ulong": 8}[self.unit]

    @property
    def nbytes(self) -> int:
        return self.rows * self.width * self.blocks * self.bits // 8


def parse_name(name: str) -> Block2D | None:
    m = _NAME.match(name)
    if not m:
        return None
    return Block2D(name, m[1], int(m[2]), int(m[3]), int(m[4]), int(m[5]))


def _generate() -> dict[str, Block2D]:
    out = {}

    def add(op, bits, rows, width, blocks):
        n = f"intel_sub_group_2d_block_{op}_{bits}b_{rows}r{width}x{blocks}c"
        out[n] = Block2D(n, op, bits, rows, width, blocks)

    for rows in (1, 2, 4, 8, 16, 32):
        for blocks in (1, 2, 4):
            add("read", 8, rows, 32, blocks)
            add("read", 8, rows, 16, blocks)
            add("read", 16, rows, 16, blocks)
            add("read", 32, rows, 16, blocks)
            add("read", 32, rows, 8, blocks)
            for op in ("prefetch",):
                add(op, 8, rows, 32, blocks)
                add(op, 16, rows, 16, blocks)
                add(op, 32, rows, 16, blocks)
        for bits, width in ((8, 16), (8, 32), (16, 16), (32, 16)):
            add("write", bits, rows, width, 1)
    for blocks in (1, 2, 4):
        add("read_transform", 8, 32, 16, blocks)
        add("read_transform", 16, 16, 16, blocks)
        add("read_transform", 16, 32, 16, blocks)
    for rows in (8, 16, 32):
        for width in (1, 2, 4, 8):
            add("read_transpose", 32, rows, width, 1)
    add("read_transpose", 64, 8, 4, 1)
    return out


#: every function the prelude declares on a platform that has the extension
FUNCTIONS = _generate()


def supported(platform) -> bool:
    """Whether ``platform`` has cl_intel_subgroup_2d_block_io (Xe-HPC and later: DPAS exec size 16)."""
    return platform.exec_size == 16


def declarations(platform) -> list[str]:
    if not supported(platform):
        return []
    out = []
    for b in FUNCTIONS.values():
        ptr = "" if b.op == "prefetch" else f", {'const ' if b.op == 'write' else ''}{b.unit}* data"
        out.append(f"void {b.name}(const __global void* base, int width, int height, int pitch, int2 coord{ptr});")
    return out
