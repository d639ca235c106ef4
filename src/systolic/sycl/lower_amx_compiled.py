"""A joint_matrix kernel on an AMX device through the tile compiler: traced to tile IR, compiled, run.

This is what the 2021 text describes for its AOT path ("we are using AMX tile intrinsics to implement the matrix
load and store operations"): each work-item (sub-group of one) runs the kernel with plain-integer ids inside
:func:`systolic.compiler.tracing` (Python loops unroll), and each joint_matrix operation becomes the
``amxintrin.h`` intrinsic of :mod:`systolic.amx.intrinsics`:

====================================  ==========================================================================
joint_matrix                          tile intrinsics (element size ``eb`` bytes; VNNI factor ``vf = 4 / eb``)
====================================  ==========================================================================
``joint_matrix<T, a, M, K>``          ``Tile(M, K * eb)``
``joint_matrix<T, b, K, N>``          ``Tile(K / vf, N * 4)`` (VNNI rows)
``joint_matrix<int32|float, acc>``    ``Tile(M, N * 4)``
fill(0)                               ``tile_zero``
load / store (row_major; B packed)    ``tile_loadd`` / ``tile_stored``, stride in bytes
mad(C, A, B, C)                       ``tile_dpbssd`` / ``dpbsud`` / ``dpbusd`` / ``dpbuud`` / ``dpbf16ps`` /
                                      ``dpfp16ps``
====================================  ==========================================================================

USM allocations become the module's globals (bound to the same memory when it runs). The compiled function runs
on the TileMachine emulator (``backend="cpu"``, its fast or spec path) or natively (``backend="llvm"``: after the same program
ran on the emulator on copies of the memory, so a fault is an exception, never a signal). Operations the
tile path cannot express (B not VNNI-packed, fill with a nonzero value, apply, checked access, D != C) raise
:class:`~systolic.errors.CompileError` naming the rule.
"""

from __future__ import annotations

import numpy as np

from ..errors import CompileError
from .lower_amx import INTRINSIC

__all__ = ["TraceContext", "run_compiled"]


class TraceContext:
    """The tile-IR function being traced for one parallel_for, with its globals and tiles."""

    def __init__(self) -> None:
        from ..compiler.ir import VOID, Function, Module
        from ..compiler.tracing import Tracer
        self.module = Module()
        self.fn = Function("sycl_kernel", VOID, [], prefix="")
        self.module.functions["sycl_kernel"] = self.fn
        self.tracer = Tracer(self.module, self.fn)
        self.globals: dict[int, tuple[str, np.ndarray]] = {}
        self.tiles: dict[int, object] = {}

    def collective(self, name: str, args: tuple, kw: dict) -> None:
        """A group operation met while tracing (simt.Launch.collective in mode "trace" calls this)."""
        return trace_collective(self, name, args, kw)

    def base(self, ptr, eb: int):
        from ..compiler.ir import I8, ArrayType, GlobalVariable
        from ..compiler.tracing import TracedPtr
        mem = ptr.mem
        if id(mem) not in self.globals:
            name = f"usm{len(self.globals)}"
            self.module.globals[name] = GlobalVariable(name, ArrayType(int(mem.nbytes), I8), align=64)
            self.globals[id(mem)] = (name, mem)
        name = self.globals[id(mem)][0]
        return TracedPtr(self.tracer, self.module.globals[name]) + int(ptr.offset) * eb

    def tile(self, m):
        from ..amx.intrinsics import Tile
        t = self.tiles.get(id(m))
        if t is None:
            s = m.spec
            eb = s.t.dtype.itemsize
            if s.use == "a":
                t = Tile(s.rows, s.cols * eb)
            elif s.use == "b":
                vf = 4 // eb
                if s.rows % vf:
                    raise CompileError(f"B's K = {s.rows} is not a whole number of VNNI groups of {vf}",
                                       rule="a B tile holds K / vf rows of 4-byte groups")
                t = Tile(s.rows // vf, s.cols * 4)
            else:
                t = Tile(s.rows, s.cols * 4)
            self.tiles[id(m)] = (t, m)      # keep m alive so its id stays unique
            return t
        return t[0]


def _eb(m) -> int:
    return m.spec.t.dtype.itemsize


def trace_collective(ctx: TraceContext, name: str, args: tuple, kw: dict) -> None:
    """One joint_matrix operation of one work-item, as tile intrinsics appended to the traced function."""
    from ..amx import intrinsics as I
    from .matrix_core import _lay
    if name == "joint_matrix_prefetch":
        return
    if name == "joint_matrix_fill":
        m, v = args
        if v != 0:
            raise CompileError("the tile path fills with zero only (TILEZERO)", rule="joint_matrix_fill -> tile_zero",
                               values={"value": v})
        I.tile_zero(ctx.tile(m))
        return
    if name in ("joint_matrix_load", "joint_matrix_store"):
        m, ptr, stride = args
        lay = kw.get("lay")
        lay = (m.spec.layout if lay is None else _lay(lay))
        ok = {"a": ("row_major",), "b": ("ext_intel_packed",), "accumulator": ("row_major",)}[m.spec.use]
        if lay not in ok:
            raise CompileError(f"tile loads/stores read rows as they lie: {m.spec.use} must be {ok[0]}, not {lay}",
                               rule="TILELOADD/TILESTORED move rows of bytes (B must be VNNI-packed: "
                                    "layout::ext_intel_packed)", values={"use": m.spec.use, "layout": lay})
        if ptr.mem.dtype != m.spec.t.dtype:
            raise CompileError("pointer and matrix element types differ",
                               values={"pointer": str(ptr.mem.dtype), "matrix": str(m.spec.t.dtype)})
        eb = _eb(m)
        base = ctx.base(ptr, eb)
        if name == "joint_matrix_load":
            I.tile_loadd(ctx.tile(m), base, int(stride) * eb)
        else:
            I.tile_stored(base, int(stride) * eb, ctx.tile(m))
        return
    if name == "joint_matrix_mad":
        D, A, B, C = args
        if D is not C:
            raise CompileError("the tile path accumulates in place: joint_matrix_mad(sg, C, A, B, C)",
                               rule="TDP* dst is both C and D")
        fn = getattr(I, INTRINSIC[(A.spec.t.name, B.spec.t.name)])
        fn(ctx.tile(C), ctx.tile(A), ctx.tile(B))
        return
    raise CompileError(f"{name} has no tile-intrinsic lowering", rule="the compiled AMX path: fill(0), load, store, "
                       "mad, prefetch", values={"call": name})


def run_compiled(launch, kernel, make_item, backend: str = "cpu", path: str = "fast"):
    """Trace every work-item of ``launch`` into one function, compile it and run it on ``backend`` (the tile
    compiler's: cpu by ``path``, or llvm)."""
    from ..compiler.ir import VOID, Instr
    from ..compiler.module import compile_module
    from ..amx.intrinsics import ACTIVE_TRACER      # the tracer slot the tile intrinsics hand their calls to
    ctx = TraceContext()
    launch.mode = "trace"
    launch.trace = ctx
    token = ACTIVE_TRACER.set(ctx.tracer)
    try:
        for w in range(launch.n_items):
            kernel(make_item(w))
    finally:
        ACTIVE_TRACER.reset(token)
    ctx.tracer.emit(Instr("ret", VOID, []))
    cm = compile_module(ctx.module)
    memory = {name: mem.view(np.uint8) for name, mem in ctx.globals.values()}
    result = cm.run("sycl_kernel", memory=memory, backend=backend, path=path)
    # the runner works on the arrays given (views of the USM memory); copy back if it made copies
    for name, mem in ctx.globals.values():
        out = result.memory.get(name)
        if out is not None and out is not memory[name]:
            mem.view(np.uint8)[:] = out
    return cm, result
