"""Emission (a): the compiled function as a TileMachine program, and the runner that executes it.

After ``regalloc`` a function is a *machine program*: the scalar IR instructions (integer arithmetic, pointers,
branches, calls) plus real tile instructions naming tmm0-7 (``LDTILECFG``, ``TILELOADD``, ``TILESTORED``,
``TILEZERO``, ``TDPBSSD``..., ``TILERELEASE``). :class:`Runner` executes it: scalars in Python (LLVM LangRef
semantics, integers modulo 2**bits), tile instructions on a :class:`~systolic.amx.TileMachine`, which checks
every #GP/#UD/memory rule and raises the systolic.errors exception.

Memory model: every global of the IR lives in a 1-D uint8 array (given by the caller, or made from the
initializer); allocas get fresh zeroed arrays; a pointer is (region, byte offset) and getelementptr computes
offsets per LLVM (signed indices times the allocation size of the indexed type). An access outside a region is a
MemoryFault.

The same runner also executes *uncompiled* IR with the tile intrinsics evaluated one by one (``mode="eager"``:
each intrinsic configures the machine with its operands' shapes, as :mod:`systolic.amx.intrinsics` does), which
is the reference the compiled program is compared with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidValue, MemoryFault
from . import int_intrinsics
from .amx_table import MACHINE_OPCODES, MODELLED_LOADS, is_cast
from .ir import (ArrayType, ConstantInt, ConstantSpecial, ConstGEP, Function, GlobalVariable, Instr, IntType,
                 Module, PtrType, StructType, Value, VectorType, VOID, field_offsets, size_of)
from .ops import OPS, POISON, mask as _mask, print_instr, signed as _signed, ub as _ub

__all__ = ["Pointer", "Region", "Runner", "RunResult", "listing", "MACHINE_OPS", "DEFAULT_MAX_STEPS", "initial_bytes"]

DEFAULT_MAX_STEPS = 2_000_000
MAX_CALL_DEPTH = 150  # 5 Python frames per IR call level: stays under the interpreter limit
MACHINE_OPS = MACHINE_OPCODES               # configuration + every modelled tile instruction (amx_table)
_TRANSFERS = frozenset({*(m.upper() for m in MODELLED_LOADS), "TILESTORED"})


@dataclass(eq=False)
class Region:
    name: str
    data: np.ndarray


@dataclass(frozen=True, eq=False)
class Pointer:
    region: Region | None
    offset: int

    def __add__(self, k: int) -> "Pointer":
        return Pointer(self.region, self.offset + int(k))


@dataclass
class TileValue:
    """A tile value in eager mode: the 16 x 64 byte image and the (rows, colsb) it was made with."""

    image: np.ndarray
    rows: int
    cols: int


@dataclass
class RunResult:
    value: object
    memory: dict[str, np.ndarray]
    machine: object
    steps: int = 0
    trace: list = field(default_factory=list)


def listing(f: Function) -> str:
    """The machine program of a compiled function, one instruction per line (``--emit machine``)."""
    lines = [f"function @{f.name}:"]
    for b in f.blocks:
        lines.append(f"{b.name}:")
        for ins in b.instrs:
            lines.append("  " + print_instr(ins))
    return "\n".join(lines)


def memory_arrays(memory) -> dict:
    """``memory=`` of Module.run / run_eager as a dict (None: no arrays given); anything but a mapping is an
    InvalidValue, not whatever ``dict()`` makes of it."""
    if memory is None:
        return {}
    if not isinstance(memory, Mapping):
        raise InvalidValue(f"memory must be a mapping of global names to uint8 arrays, not a "
                           f"{type(memory).__name__}", rule="module.run: memory={global_name: uint8 array}",
                           values={"type": type(memory).__name__})
    return dict(memory)


class Runner:
    """Execute functions of a module (compiled: ``mode="machine"``; uncompiled: ``mode="eager"``)."""

    def __init__(self, module: Module, machine, mode: str = "machine", max_steps: int = DEFAULT_MAX_STEPS,
                 record: bool = False) -> None:
        self.module, self.tm, self.mode = module, machine, mode
        self.max_steps, self.steps = max_steps, 0
        self.regions: dict[str, Region] = {}
        self.record = record
        self.trace: list = []

    # ------------------------------------------------------------------ memory
    def bind_memory(self, memory: dict[str, np.ndarray] | None) -> None:
        memory = memory_arrays(memory)
        for name in memory:
            if name not in self.module.globals:
                raise InvalidValue(f"memory given for @{name}, which is not a global of the IR",
                                   rule="module.run: memory={global_name: uint8 array}",
                                   values={"name": name, "globals": sorted(self.module.globals)})
        for name, g in self.module.globals.items():
            if g.unreadable and name not in memory:
                # a global the byte model cannot make: only a run that touches it needs it
                self.regions[name] = Region("@" + name, np.zeros(0, np.uint8))
                continue
            size = size_of(g.value_type)
            if name in memory:
                arr = memory[name]
                if not isinstance(arr, np.ndarray) or arr.dtype != np.uint8 or arr.ndim != 1 or \
                        not arr.flags.c_contiguous:
                    raise InvalidValue(f"memory for @{name} must be a contiguous 1-D uint8 array",
                                       rule="module.run: memory={global_name: uint8 array}",
                                       values={"name": name, "dtype": str(getattr(arr, "dtype", type(arr))),
                                               "shape": getattr(arr, "shape", None)})
                if arr.size < size:
                    raise InvalidValue(f"memory for @{name} has {arr.size} bytes; the global needs {size}",
                                       rule="module.run: a global's array holds the whole global",
                                       values={"name": name, "size": arr.size, "needed": size})
                if not arr.flags.writeable:
                    raise InvalidValue(f"memory for @{name} is read-only", values={"name": name})
            else:
                if g.unreadable or g.external:
                    raise InvalidValue(f"@{name} needs memory=: " + (g.unreadable or "it is declared external"),
                                       rule="module.run: memory={global_name: uint8 array}",
                                       values={"name": name})
                arr = initial_bytes(g)
            self.regions[name] = Region("@" + name, arr)

    def memory(self) -> dict[str, np.ndarray]:
        # a global the byte model could not make (and nobody gave) has no bytes to report
        return {k: r.data for k, r in self.regions.items()
                if not (r.data.size == 0 and self.module.globals[k].unreadable)}

    def _access(self, p, size: int, what: str) -> tuple[np.ndarray, int]:
        if not isinstance(p, Pointer) or p.region is None:
            raise MemoryFault(f"{what} through a null or invalid pointer", address=0,
                              rule="LLVM LangRef: dereferencing null is undefined")
        arr = p.region.data
        if p.offset < 0 or p.offset + size > arr.size:
            raise MemoryFault(f"{what} of {size} bytes at {p.region.name}+{p.offset} is outside its "
                              f"{arr.size} bytes", address=p.offset if p.offset < 0 else max(p.offset, arr.size),
                              rule="memory access inside the region (global or alloca) the pointer is based on",
                              values={"region": p.region.name, "offset": p.offset, "size": size})
        return arr, p.offset

    # ------------------------------------------------------------------ values
    def value(self, v: Value, env: dict, allow_poison: bool = False):
        if isinstance(v, ConstantInt):
            return _mask(v.value, v.type.bits)
        if isinstance(v, Instr) or v.__class__.__name__ in ("Argument", "VReg"):
            try:
                x = env[id(v)]
            except KeyError:
                raise _ub(f"%{v.name} used before it is defined", value=v.name) from None
            if x is POISON and not allow_poison:
                raise _ub(f"%{v.name} is poison and its use is undefined behaviour (only select, phi and freeze "
                          "may take poison)", value=v.name)
            return x
        if isinstance(v, GlobalVariable):
            return Pointer(self.regions[v.name], 0)
        if isinstance(v, ConstGEP):
            return self.gep(v.source_type, self.value(v.base, env),
                            [(self.value(i, env), i.type.bits) for i in v.indices])
        if isinstance(v, ConstantSpecial):
            if v.kind == "null":
                return Pointer(None, 0)
            if isinstance(v.type, IntType):
                return 0
            if isinstance(v.type, VectorType):
                return np.zeros(size_of(v.type), np.uint8)
            if isinstance(v.type, PtrType):
                return Pointer(None, 0)
            return None
        if isinstance(v, Function):
            raise _ub("function pointers are not supported", function=v.name)
        raise _ub(f"cannot evaluate {v!r}")

    def gep(self, src, base, idx) -> Pointer:
        if not isinstance(base, Pointer):
            raise _ub("getelementptr on a non-pointer")
        off = base.offset
        t = src
        for k, (i, bits) in enumerate(idx):
            i = _signed(i, bits)
            if k == 0:
                off += i * size_of(t)
            elif isinstance(t, StructType):
                off += field_offsets(t)[i]
                t = t.elems[i]
            else:
                if not isinstance(t, (ArrayType, VectorType)):
                    raise _ub(f"cannot index into {t}")
                t = t.elem
                off += i * size_of(t)
        return Pointer(base.region, off)

    # ------------------------------------------------------------------ execution
    def call(self, f: Function, args: list):
        if self.module.refused.get(f.name) is not None:
            raise self.module.refused[f.name]
        if f.declaration:
            raise InvalidValue(f"@{f.name} is only declared; the runner executes functions defined in the IR",
                               rule="module.run: callees must be defined", values={"function": f.name})
        if len(args) != len(f.params):
            raise InvalidValue(f"@{f.name} takes {len(f.params)} arguments, {len(args)} given",
                               values={"function": f.name, "params": [str(p.type) for p in f.params]})
        self.depth = getattr(self, "depth", 0) + 1
        try:
            if self.depth > MAX_CALL_DEPTH:
                raise InvalidValue(f"calls nested deeper than {MAX_CALL_DEPTH}",
                                   rule="module.run: a guard against endless recursion",
                                   values={"function": f.name})
            return self._call(f, args)
        finally:
            self.depth -= 1

    def _call(self, f: Function, args: list):
        env: dict = {}
        for p, a in zip(f.params, args):
            env[id(p)] = self.convert_arg(p, a)
        block, prev = f.entry, None
        while True:
            # phis read their inputs simultaneously on entry
            phis = [i for i in block.instrs if i.opcode == "phi"]
            if phis:
                phi_def = OPS["phi"]
                vals = [phi_def.execute(self, phi, env, prev) for phi in phis]
                for phi, v in zip(phis, vals):
                    env[id(phi)] = v
            for ins in block.instrs[len(phis):]:
                self.steps += 1
                if self.steps > self.max_steps:
                    raise InvalidValue(f"the program ran more than {self.max_steps} instructions",
                                       rule="module.run max_steps (a guard against endless loops)",
                                       values={"max_steps": self.max_steps})
                op = ins.opcode
                if op == "ret":
                    return self.value(ins.operands[0], env) if ins.operands else None
                d = OPS.get(op)
                if d is not None and d.terminator:
                    prev, block = block, d.successor(self, ins, env)
                    break
                r = self.execute(ins, env)
                if ins.type != VOID and ins.name is not None:
                    env[id(ins)] = r
            else:
                raise _ub(f"block %{block.name} fell off its end")

    def convert_arg(self, p, a):
        """One argument for parameter ``p``: an int for an integer parameter; for a pointer a global's name or
        (name, offset) (``@global[+offset]`` on the command line). Anything else is an InvalidValue naming
        the parameter, never a crash."""
        t = p.type
        if isinstance(t, IntType):
            if isinstance(a, (bool, np.bool_)):
                a = int(a)
            if not isinstance(a, (int, np.integer)):
                raise InvalidValue(f"argument %{p.name} ({t}) needs an integer, got {type(a).__name__} {a!r}",
                                   rule="module.run: integer parameters take an int",
                                   values={"param": p.name, "type": str(t), "arg": repr(a)})
            a = int(a)
            if not -(1 << t.bits) < a < (1 << t.bits):
                raise InvalidValue(f"argument %{p.name} = {a} does not fit {t}",
                                   rule="module.run: integer arguments fit their IR type",
                                   values={"param": p.name, "arg": a, "type": str(t)})
            return _mask(a, t.bits)
        if isinstance(t, PtrType):
            if isinstance(a, Pointer):
                return a
            rule = ("module.run: a pointer argument is a global's name or (name, offset); "
                    "on the command line @global[+offset]")
            if isinstance(a, str):
                name, off = a, 0
            elif (isinstance(a, (tuple, list)) and len(a) == 2 and isinstance(a[0], str)
                  and isinstance(a[1], (int, np.integer)) and not isinstance(a[1], (bool, np.bool_))):
                name, off = a[0], int(a[1])
            else:
                raise InvalidValue(f"argument %{p.name} is a pointer; it takes a global's name or (name, offset) "
                                   f"(@global[+offset] on the command line), not {type(a).__name__} {a!r}",
                                   rule=rule, values={"param": p.name, "type": str(t), "arg": repr(a)})
            name = name.lstrip("@")
            if name not in self.regions:
                raise InvalidValue(f"pointer argument %{p.name} names no global: {name!r}", rule=rule,
                                   values={"param": p.name, "arg": repr(a), "globals": sorted(self.regions)})
            return Pointer(self.regions[name], off)
        raise InvalidValue(f"arguments of type {t} are not supported", rule="module.run: int and ptr parameters",
                           values={"param": p.name, "type": str(t)})

    def execute(self, ins: Instr, env: dict):
        """One instruction: its definition in :mod:`.ops` executes it; machine tile instructions run on the
        TileMachine."""
        d = OPS.get(ins.opcode)
        if d is not None:
            return d.execute(self, ins, env)
        if ins.opcode in MACHINE_OPS:
            return self.machine_op(ins, env)
        raise InvalidValue(f"the runner cannot execute {ins.opcode!r}", rule="compiled machine program",
                           values={"opcode": ins.opcode})

    def alloca(self, ins: Instr) -> Pointer:
        return Pointer(Region(f"%{ins.name}", np.zeros(size_of(ins.attrs["alloc_type"]), np.uint8)), 0)

    def mem_intrinsic(self, name: str, args: list) -> None:
        """``llvm.memset`` / ``llvm.memcpy`` / ``llvm.memmove`` (LangRef: the length in bytes; the i1 is
        ``isvolatile``). A copy between overlapping bytes is memmove's; memcpy's overlap is undefined."""
        n = args[2]
        if name.startswith("llvm.memset."):
            arr, off = self._access(args[0], n, "memset")
            arr[off:off + n] = args[1] & 0xFF
            return
        dst, doff = self._access(args[0], n, name[5:11])
        src, soff = self._access(args[1], n, name[5:11])
        if name.startswith("llvm.memcpy.") and dst is src and n and abs(doff - soff) < n and doff != soff:
            raise _ub("llvm.memcpy of overlapping bytes", dst=doff, src=soff, length=n)
        dst[doff:doff + n] = src[soff:soff + n].copy()

    def load(self, ty, p):
        n = size_of(ty)
        arr, off = self._access(p, n, "load")
        raw = arr[off:off + n]
        if isinstance(ty, IntType):
            return _mask(int.from_bytes(raw.tobytes(), "little"), ty.bits)
        if isinstance(ty, VectorType):
            return raw.copy()
        raise _ub(f"load of {ty} is not supported")

    def store(self, ty, v, p):
        n = size_of(ty)
        if isinstance(v, TileValue):  # eager mode: a store of a tile value is a tile store at stride 64
            self.tile_store(v, p, 64)
            return
        arr, off = self._access(p, n, "store")
        if isinstance(ty, IntType):
            arr[off:off + n] = np.frombuffer(_mask(v, 8 * n).to_bytes(n, "little"), np.uint8)
        elif isinstance(ty, VectorType):
            arr[off:off + n] = v
        else:
            raise _ub(f"store of {ty} is not supported (pointers cannot be stored in the byte memory model)")

    def do_call(self, ins: Instr, env: dict):
        callee = ins.attrs["callee"]
        args = [self.value(a, env) for a in ins.operands]
        if callee.name.startswith(("llvm.memset.", "llvm.memcpy.", "llvm.memmove.")):
            return self.mem_intrinsic(callee.name, args)
        if int_intrinsics.base_name(callee.name) is not None and isinstance(ins.type, IntType):
            return int_intrinsics.execute(callee.name, args, ins.type.bits)
        if callee.name.startswith("llvm."):
            if self.mode == "eager":
                return self.eager_intrinsic(ins, callee.name, args)
            raise InvalidValue(f"intrinsic @{callee.name} is not supported by the runner",
                               values={"intrinsic": callee.name})
        f = self.module.functions.get(callee.name)
        if callee.name in self.module.refused:
            raise self.module.refused[callee.name]
        if f is None or f.declaration:
            raise InvalidValue(f"@{callee.name} is only declared; the runner executes functions defined in the IR",
                               rule="module.run: callees must be defined", values={"function": callee.name})
        return self.call(f, args)

    # ------------------------------------------------------------------ tile instructions
    def machine_op(self, ins: Instr, env: dict):
        op = ins.opcode
        tm = self.tm
        t = ins.attrs.get("tiles", [])
        if self.record:
            self.trace.append(print_instr(ins))
        if op == "LDTILECFG":
            p = self.value(ins.operands[0], env)
            arr, off = self._access(p, 64, "LDTILECFG")
            tm.ldtilecfg(arr, off)
        elif op == "TILERELEASE":
            tm.tilerelease()
        elif op in _TRANSFERS:
            p = self.value(ins.operands[0], env)
            stride = _signed(self.value(ins.operands[1], env), 64)
            if not isinstance(p, Pointer) or p.region is None:
                raise MemoryFault(f"{op} through a null pointer", address=0, rule="memory operand")
            getattr(tm, op.lower())(t[0], p.region.data, p.offset, stride)
        elif op == "TILEZERO":
            tm.tilezero(t[0])
        else:
            getattr(tm, op.lower())(t[0], t[1], t[2])
        return None

    # ------------------------------------------------------------------ eager mode (uncompiled IR)
    def eager_intrinsic(self, ins: Instr, name: str, args: list):
        from ..amx import intrinsics as I
        from .shapes import classify
        if is_cast(name):
            return args[0]
        op = classify(ins)
        if op is None:
            raise InvalidValue(f"intrinsic @{name} is not supported by the runner", values={"intrinsic": name})
        if op.kind == "zero":
            rows, cols = args[0], args[1]
            return TileValue(I.eager_zero(self.tm, rows, cols), rows, cols)
        if op.kind == "load":
            rows, cols, p, stride = args
            if not isinstance(p, Pointer) or p.region is None:
                raise MemoryFault("tile load through a null pointer", address=0, rule="memory operand")
            img = I.eager_load(self.tm, rows, cols, p.region.data, p.offset, _signed(stride, 64),
                               mnemonic=op.mnemonic)
            return TileValue(img, rows, cols)
        if op.kind == "store":
            # a tile value keeps the shape it was defined with (LLVM takes a virtual tile's shape from its
            # definition); only a <256 x i32> from memory takes the store's operands
            rows, cols, p, stride, t = args
            t = self.as_tile(t, rows, cols)
            self.tile_store(t, p, _signed(stride, 64))
            return None
        m, n, k = args[:3]
        # the TMUL writes C's register in place, so the result keeps the shape C was defined with (LLVM
        # configures that register from C's definition; shapes.py); A and B keep their own shapes. A C with
        # no shape of its own (a <256 x i32> from memory) takes the intrinsic's (m, n).
        c = self.as_tile(args[3], m, n)
        a = self.as_tile(args[4], m, k)
        b = self.as_tile(args[5], (k & 0xFFFF) >> 2, n)
        img = I.eager_dot(self.tm, op.mnemonic, (c.image.copy(), c.rows, c.cols), (a.image, a.rows, a.cols),
                          (b.image, b.rows, b.cols))
        return TileValue(img, c.rows, c.cols)

    def as_tile(self, v, rows, cols) -> TileValue:
        if isinstance(v, TileValue):
            return v
        # a <256 x i32> loaded from memory: 16 rows of 64 bytes, shaped by its use (seed section 6)
        img = np.asarray(v, np.uint8).reshape(16, 64).copy()
        from ..amx import intrinsics as I
        I.mask_image(img, rows, cols)
        return TileValue(img, rows, cols)

    def tile_store(self, t: TileValue, p, stride: int) -> None:
        from ..amx import intrinsics as I
        if not isinstance(p, Pointer) or p.region is None:
            raise MemoryFault("tile store through a null pointer", address=0, rule="memory operand")
        I.eager_store(self.tm, t.image, t.rows, t.cols, p.region.data, p.offset, stride)


def initial_bytes(g: GlobalVariable) -> np.ndarray:
    """A fresh uint8 array of global ``g``'s bytes as its initializer sets them (zero where it sets none),
    little-endian as the x86 DataLayout lays them out: what the runner's memory holds before a program runs."""
    size = size_of(g.value_type)
    init = g.initializer
    arr = np.zeros(size, np.uint8)
    if isinstance(init, bytes):
        arr[:] = np.frombuffer(init, np.uint8)
    elif isinstance(init, int):
        arr[:] = np.frombuffer(_mask(init, 8 * size).to_bytes(size, "little"), np.uint8)
    elif isinstance(init, list):
        es = size_of(g.value_type.elem)
        for k, x in enumerate(init):
            arr[k * es:(k + 1) * es] = np.frombuffer(_mask(x, 8 * es).to_bytes(es, "little"), np.uint8)
    return arr
