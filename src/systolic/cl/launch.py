"""One launch batch: its lanes, memory, module globals, allocas (issue 21 item 3)."""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedOperation
from . import irtypes as IT
from .lanes import Lanes
from .memory import Memory

__all__ = ["Batch"]


class Batch:
    def __init__(self, program, kernel: str, lanes: Lanes, platform, engine: str) -> None:
        self.program = program
        self.kernel = kernel
        self.lanes = lanes
        self.platform = platform
        self.engine = engine
        self.mem = Memory(lanes)
        self.all_mask = lanes.valid.copy()
        self._globals: dict[str, object] = {}
        self._allocas: dict = {}
        self.local_bytes = 0

    def global_addr(self, name: str):
        a = self._globals.get(name)
        if a is None:
            a = self._globals[name] = self._make_global(name)
        return a

    def _make_global(self, name):
        g = self.program.decoded.globals.get(name)
        if g is None:
            raise UnsupportedOperation(f"no global @{name} in the module", rule="LangRef: global variables")
        gtype = str(g.global_value_type)
        size = IT.alloc_size(gtype)
        space = IT.vtype(str(g.type)).addrspace
        if space == 3:
            self.local_bytes += size
            base = self.mem.add("local", "@" + name, np.zeros(size * self.lanes.n_wg, np.uint8),
                                group_stride=size)
            return base + self.lanes.group_of.astype(np.int64) * size
        data = self.program.global_bytes(name, g, gtype, size)
        return np.int64(self.mem.add("constant" if space == 2 else "global", "@" + name, data))

    def alloca(self, key, size: int):
        a = self._allocas.get(key)
        if a is None:
            n = self.lanes.n
            base = self.mem.add("private", f"alloca in {key[0]}", np.zeros(max(size, 1) * n, np.uint8),
                                lane_stride=max(size, 1))
            a = self._allocas[key] = base + np.arange(n, dtype=np.int64) * max(size, 1)
        return a

    def local_arg(self, nbytes: int, name: str):
        self.local_bytes += nbytes
        base = self.mem.add("local", name, np.zeros(max(nbytes, 1) * self.lanes.n_wg, np.uint8),
                            group_stride=max(nbytes, 1))
        return base + self.lanes.group_of.astype(np.int64) * max(nbytes, 1)
