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
        self.defer = engine == "batched"        # float DPAS chains computed when read (systolic.cl.matrix)
        self.model = None
        self.matrix_calls: dict = {}
        self.barriers = 0
        self.coop: list = []                     # cooperative matrix values by handle (systolic.cl.coop)

    def global_addr(self, name: str):
        a = self._globals.get(name)
        if a is None:
            a = self._globals[name] = self._make_global(name)
        return a

    def _make_global(self, name):
        if name.startswith("__spirv_BuiltIn"):
            return self._builtin_variable(name)
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

    def _builtin_variable(self, name: str):
        """SPIR-V built-in variables (DPC++ reads work-item ids as loads of ``@__spirv_BuiltIn*``): a per-lane
        value, 32 bytes a lane (a <3 x i64> or an i32), in a private region."""
        L = self.lanes
        vec = {"GlobalInvocationId": L.global_id, "LocalInvocationId": L.local_id, "WorkgroupId": L.group_id,
               "GlobalSize": [np.full(L.n, g) for g in L.global_size],
               "WorkgroupSize": [np.full(L.n, x) for x in L.local],
               "NumWorkgroups": [np.full(L.n, g // x) for g, x in zip(L.global_size, L.local)],
               "GlobalOffset": [np.full(L.n, o) for o in L.offset]}
        scal = {"SubgroupLocalInvocationId": L.sg_local_id, "SubgroupId": L.sg_id, "SubgroupSize": L.sg_size,
                "SubgroupMaxSize": np.full(L.n, L.S), "NumSubgroups": np.full(L.n, L.num_sub_groups),
                "WorkDim": np.full(L.n, L.work_dim)}
        key = name[len("__spirv_BuiltIn"):]
        data = np.zeros((L.n, 4), np.int64)
        if key in vec:
            for d in range(3):
                data[:, d] = vec[key][d]
        elif key in scal:
            data[:, 0] = np.asarray(scal[key], np.int64) & 0xFFFFFFFF
        else:
            raise UnsupportedOperation(f"SPIR-V built-in variable @{name} is not modelled",
                                       rule="systolic.cl: the work-item built-in variables of SPIR-V 3.0")
        base = self.mem.add("private", "@" + name, data.reshape(-1).view(np.uint8).copy(), lane_stride=32)
        return base + np.arange(L.n, dtype=np.int64) * 32

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
