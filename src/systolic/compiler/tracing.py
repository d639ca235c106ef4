"""Tracing: a Python function written with :mod:`systolic.amx.intrinsics` becomes a tile IR function.

Inside :func:`trace` the intrinsics append LLVM's ``*.internal`` calls to the function being built instead of
executing. Arguments become IR parameters (:class:`Scalar`, with Python operators emitting ``add``/``icmp``...)
and buffers become globals (:class:`TracedPtr`, ``+`` emitting ``getelementptr i8``). Python control flow over
Python values simply unrolls; control flow over *traced* values uses :func:`if_` and :func:`for_range`, which
emit blocks, branches and phis for every tile the branch or loop body writes (seed section 5: tile values flow
through phis). The same functions run eagerly outside ``trace``:

    def kernel(n, row, col, A, C):
        c = Tile(row, col); a = Tile(row, col); b = Tile(row, col)
        tile_zero(c)
        for_range(0, n, lambda i: (tile_loadd(a, A + i * 64, 64), tile_loadd(b, A, 64),
                                   tile_dpbssd(c, a, b)))
        tile_stored(C, 64, c)

    module = trace(kernel, scalars={"n": "i32", "row": "i16", "col": "i16"}, buffers={"A": 4096, "C": 1024})
"""

from __future__ import annotations

import numpy as np

from ..amx.intrinsics import ACTIVE_TRACER, Ptr, use_machine
from ..errors import CompileError, InvalidValue
from .ir import (I1, I8, I16, I32, I64, PTR, VOID, X86_AMX, Argument, ArrayType, ConstantInt, ConstantSpecial,
                 Function, GlobalVariable, Instr, IntType, Module, Value, intrinsic)
from .llvm_reader import parse_type
from .amx_table import internal_name

__all__ = ["trace", "current", "Scalar", "TracedPtr", "if_", "for_range", "call", "run_eager"]

#: the active tracer's slot: the intrinsics' own (they read it; trace() sets it), under its old name here
_current = ACTIVE_TRACER


def current():
    """The active tracer, or None when intrinsics run eagerly."""
    return _current.get()


class _Dead:
    """Marks a tile created inside a branch or loop body, used after it ended."""


class Scalar:
    """A traced integer (an IR value). Operators emit instructions; comparisons are signed and give i1."""

    def __init__(self, tracer: "Tracer", value: Value) -> None:
        self.t, self.v = tracer, value

    @property
    def type(self) -> IntType:
        return self.v.type

    def _bin(self, op: str, other, swap: bool = False) -> "Scalar":
        o = self.t.coerce(other, self.type)
        a, b = (o, self.v) if swap else (self.v, o)
        return Scalar(self.t, self.t.emit(Instr(op, self.type, [a, b])))

    def __add__(self, o):
        return self._bin("add", o)

    def __radd__(self, o):
        return self._bin("add", o, True)

    def __sub__(self, o):
        return self._bin("sub", o)

    def __rsub__(self, o):
        return self._bin("sub", o, True)

    def __mul__(self, o):
        return self._bin("mul", o)

    def __rmul__(self, o):
        return self._bin("mul", o, True)

    def __and__(self, o):
        return self._bin("and", o)

    def __or__(self, o):
        return self._bin("or", o)

    def __xor__(self, o):
        return self._bin("xor", o)

    def __lshift__(self, o):
        return self._bin("shl", o)

    def __rshift__(self, o):
        return self._bin("ashr", o)

    def _cmp(self, pred: str, o) -> "Scalar":
        return Scalar(self.t, self.t.emit(Instr("icmp", I1, [self.v, self.t.coerce(o, self.type)], pred=pred)))

    def __eq__(self, o):  # type: ignore[override]
        return self._cmp("eq", o)

    def __ne__(self, o):  # type: ignore[override]
        return self._cmp("ne", o)

    def __lt__(self, o):
        return self._cmp("slt", o)

    def __le__(self, o):
        return self._cmp("sle", o)

    def __gt__(self, o):
        return self._cmp("sgt", o)

    def __ge__(self, o):
        return self._cmp("sge", o)

    __hash__ = object.__hash__

    def __bool__(self):
        raise CompileError("a traced value has no Python truth value: branch on it with tracing.if_(cond, then, "
                           "else_) and loop with tracing.for_range(...)", rule="tracing: control flow over traced "
                           "values is explicit")

    def __index__(self):
        raise CompileError("a traced value cannot be used as a Python integer (range, indexing)",
                           rule="tracing: control flow over traced values is explicit")

    def __repr__(self) -> str:
        return f"Scalar({self.v.type} {self.v.ref()})"


class TracedPtr:
    """A traced pointer into a buffer (an IR global); ``p + k`` is ``getelementptr inbounds i8, ptr p, i64 k``."""

    def __init__(self, tracer: "Tracer", value: Value) -> None:
        self.t, self.v = tracer, value

    def __add__(self, k) -> "TracedPtr":
        if isinstance(k, (int, np.integer)) and int(k) == 0:
            return self
        idx = self.t.coerce(k, I64)
        return TracedPtr(self.t, self.t.emit(Instr("getelementptr", PTR, [self.v, idx], source_type=I8,
                                                   flags=["inbounds"])))

    __radd__ = __add__


class Tracer:
    def __init__(self, module: Module, fn: Function) -> None:
        self.m, self.f = module, fn
        self.block = fn.add_block("entry")
        self.tiles: list = []
        self.scope_starts: list[int] = []
        # casts already emitted where they dominate the current point: (id(value), type) -> (value, cast).
        # Reusing them gives every tile of one traced shape the same SSA shape value (one shape class, one
        # configuration point before the first tile instruction) instead of a new cast per intrinsic
        self.casts: dict[tuple[int, str], tuple[Value, Value]] = {}
        self.cast_log: list[tuple[int, str]] = []

    def emit(self, ins: Instr) -> Instr:
        if ins.type != VOID and ins.name is None:
            ins.name = self.f.fresh("v")
        return self.block.append(ins)

    def new_block(self, prefix: str):
        return self.f.add_block(self.f.fresh(prefix))

    def register(self, tile) -> None:
        self.tiles.append(tile)
        self.shape(tile)  # cast the shape where the tile is created: it dominates every use of the tile

    # ------------------------------------------------------------------ values
    def coerce(self, x, ty: IntType) -> Value:
        if isinstance(x, Scalar):
            if x.t is not self:
                raise CompileError("a traced value from another trace", rule="tracing")
            v = x.v
            if v.type == ty:
                return v
            key = (id(v), str(ty))
            hit = self.casts.get(key)
            if hit is not None and hit[0] is v:
                return hit[1]
            if v.type == I1:
                cast = self.emit(Instr("zext", ty, [v]))
            else:
                cast = self.emit(Instr("sext" if v.type.bits < ty.bits else "trunc", ty, [v]))
            self.casts[key] = (v, cast)
            self.cast_log.append(key)
            return cast
        if isinstance(x, (bool, np.bool_)):
            return ConstantInt(ty, int(x))
        if isinstance(x, (int, np.integer)):
            x = int(x)
            if not -(1 << ty.bits) < x < (1 << ty.bits):
                raise InvalidValue(f"{x} does not fit {ty}", values={"value": x, "type": str(ty)})
            v = x & ((1 << ty.bits) - 1)
            return ConstantInt(ty, v - (1 << ty.bits) if v >> (ty.bits - 1) and ty.bits > 1 else v)
        raise InvalidValue("expected an integer or a traced value", values={"value": repr(x)})

    def ptr(self, base) -> Value:
        if isinstance(base, TracedPtr):
            return base.v
        raise InvalidValue("inside trace() a tile load/store base is a traced buffer (a TracedPtr)",
                           values={"base": type(base).__name__})

    def shape(self, tile) -> tuple[Value, Value]:
        return self.coerce(tile.rows, I16), self.coerce(tile.colsb, I16)

    def read(self, tile) -> Value:
        v = tile.value
        if v is _Dead:
            raise CompileError("a tile created inside an if_/for_range body is used after it",
                               rule="tracing: tiles live in the scope that creates them")
        if v is None:  # never written: zeros, as in eager mode
            r, c = self.shape(tile)
            v = tile.value = self.emit(Instr("call", X86_AMX, [r, c],
                                             callee=intrinsic(self.m, internal_name("tilezero"), X86_AMX,
                                                              [I16, I16])))
        return v

    # ------------------------------------------------------------------ intrinsics
    def tile_load(self, dst, base, stride, mnemonic: str = "tileloadd") -> None:
        r, c = self.shape(dst)
        name = internal_name(mnemonic)
        dst.value = self.emit(Instr("call", X86_AMX, [r, c, self.ptr(base), self.coerce(stride, I64)],
                                    callee=intrinsic(self.m, name, X86_AMX, [I16, I16, PTR, I64])))

    def tile_store(self, base, stride, src) -> None:
        v = self.read(src)
        r, c = self.shape(src)
        self.emit(Instr("call", VOID, [r, c, self.ptr(base), self.coerce(stride, I64), v],
                        callee=intrinsic(self.m, internal_name("tilestored"), VOID, [I16, I16, PTR, I64, X86_AMX])))

    def tile_zero(self, dst) -> None:
        r, c = self.shape(dst)
        dst.value = self.emit(Instr("call", X86_AMX, [r, c],
                                    callee=intrinsic(self.m, internal_name("tilezero"), X86_AMX, [I16, I16])))

    def tile_dot(self, mnemonic: str, dst, src0, src1) -> None:
        # clang amxintrin.h passes (src0.row, src1.col, src0.col); we pass (dst.row, dst.col, src0.col): equal for
        # every shape the hardware accepts, and with it the configured dst tile has dst's own shape, so a
        # mismatched dst faults (#UD, C.rows != A.rows or C.colsb != B.colsb) exactly as in eager mode
        cv, av, bv = self.read(dst), self.read(src0), self.read(src1)
        m = self.coerce(dst.rows, I16)
        n = self.coerce(dst.colsb, I16)
        k = self.coerce(src0.colsb, I16)
        dst.value = self.emit(Instr("call", X86_AMX, [m, n, k, cv, av, bv],
                                    callee=intrinsic(self.m, internal_name(mnemonic), X86_AMX,
                                                     [I16, I16, I16, X86_AMX, X86_AMX, X86_AMX])))

    # ------------------------------------------------------------------ control flow
    def _open_scope(self) -> tuple[int, int]:
        return len(self.tiles), len(self.cast_log)

    def _close_scope(self, start: tuple[int, int]) -> None:
        tiles, casts = start
        for t in self.tiles[tiles:]:
            t.value = _Dead
        del self.tiles[tiles:]
        # casts emitted inside a branch or loop body do not dominate what follows it
        for key in self.cast_log[casts:]:
            self.casts.pop(key, None)
        del self.cast_log[casts:]

    def if_(self, cond, then, else_) -> None:
        c = cond.v if isinstance(cond, Scalar) else None
        if c is None:
            raise InvalidValue("if_ needs a traced condition", values={"cond": repr(cond)})
        if c.type != I1:
            c = self.emit(Instr("icmp", I1, [c, ConstantInt(c.type, 0)], pred="ne"))
        bt, be, bj = self.new_block("if.then"), self.new_block("if.else"), self.new_block("if.end")
        self.emit(Instr("br", VOID, [c], blocks=[bt, be]))
        tiles = list(self.tiles)
        before = [t.value for t in tiles]
        ends = []
        for blk, body in ((bt, then), (be, else_)):
            self.block = blk
            start = self._open_scope()
            if body is not None:
                body()
            self._close_scope(start)
            ends.append((self.block, [t.value for t in tiles]))
            self.emit(Instr("br", VOID, [], blocks=[bj]))
            for t, v in zip(tiles, before):
                t.value = v
        self.block = bj
        for k, t in enumerate(tiles):
            a, b = ends[0][1][k], ends[1][1][k]
            if a is b:
                t.value = a
                continue
            inc = [a if a is not None else ConstantSpecial(X86_AMX, "undef"),
                   b if b is not None else ConstantSpecial(X86_AMX, "undef")]
            t.value = self.emit(Instr("phi", X86_AMX, inc, blocks=[ends[0][0], ends[1][0]]))

    def for_range(self, start, stop, body, step: int = 1) -> None:
        if not isinstance(step, int) or step == 0:
            raise InvalidValue("for_range step must be a nonzero Python int", values={"step": step})
        s0, s1 = self.coerce(start, I32), self.coerce(stop, I32)
        pre = self.block
        header, bodyb, exitb = self.new_block("loop.header"), self.new_block("loop.body"), \
            self.new_block("loop.exit")
        # tiles never written before the loop start as zeros (eager semantics) so the loop can carry them
        tiles = list(self.tiles)
        for t in tiles:
            if t.value is None:
                self.read(t)
        self.emit(Instr("br", VOID, [], blocks=[header]))
        self.block = header
        iv = self.emit(Instr("phi", I32, [s0], blocks=[pre], name=self.f.fresh("i")))
        phis = []
        for t in tiles:
            p = self.emit(Instr("phi", X86_AMX, [t.value], blocks=[pre]))
            phis.append((t, p, t.value))
            t.value = p
        cond = self.emit(Instr("icmp", I1, [iv, s1], pred="slt" if step > 0 else "sgt"))
        self.emit(Instr("br", VOID, [cond], blocks=[bodyb, exitb]))
        self.block = bodyb
        scope = self._open_scope()
        body(Scalar(self, iv))
        self._close_scope(scope)
        nxt = self.emit(Instr("add", I32, [iv, ConstantInt(I32, step)], flags=["nsw"]))
        latch = self.block
        self.emit(Instr("br", VOID, [], blocks=[header]))
        iv.operands.append(nxt)
        iv.attrs["blocks"].append(latch)
        for t, p, init in phis:
            p.operands.append(t.value)
            p.attrs["blocks"].append(latch)
        # phis the body did not change are trivial: use the value from before the loop
        for t, p, init in phis:
            if p.operands[1] is p:
                for ins in self.f.instructions():
                    ins.operands = [init if o is p else o for o in ins.operands]
                header.instrs.remove(p)
                t.value = init
            else:
                t.value = p
        self.block = exitb


def if_(cond, then, else_=None) -> None:
    """``if (cond) then(); else else_();`` — traced as blocks + tile phis, or run directly when eager."""
    tr = current()
    if tr is None or not isinstance(cond, Scalar):
        if isinstance(cond, Scalar):
            raise CompileError("a traced condition outside trace()", rule="tracing")
        (then if cond else (else_ or (lambda: None)))()
        return
    tr.if_(cond, then, else_)


def for_range(start, stop, body, step: int = 1) -> None:
    """``for (i = start; i < stop; i += step) body(i);`` — traced as a loop with tile phis, or run eagerly."""
    tr = current()
    if tr is None:
        for i in range(int(start), int(stop), step):
            body(i)
        return
    tr.for_range(start, stop, body, step)


def call(fn, **kwargs) -> None:
    """``fn(**kwargs)``: eagerly a Python call; traced, ``call void @fn(scalars...)`` to a function traced
    into the same module before (``trace(fn, module=m)``). Buffer arguments are the module's globals: pass
    the caller's buffer under the callee's buffer name (traced, it must be that very global).
    Tile registers and the configuration do not survive the call (caller-saved): the compiler spills and
    re-configures around it (REFERENCE.md 7)."""
    tr = current()
    if tr is None:
        fn(**kwargs)
        return
    callee = tr.m.functions.get(getattr(fn, "__name__", str(fn)))
    if callee is None or callee.declaration:
        raise CompileError(f"call: trace {getattr(fn, '__name__', fn)!r} into this module first "
                           "(trace(fn, module=m))", rule="tracing: callees are traced before their callers")
    args = []
    names = {p.name for p in callee.params}
    for k, v in kwargs.items():
        if isinstance(v, TracedPtr):
            if not (isinstance(v.v, GlobalVariable) and v.v.name == k):
                raise CompileError(f"call: buffer argument {k!r} must be the global @{k} itself",
                                   rule="tracing: buffers are globals shared by name")
        elif k not in names:
            raise InvalidValue(f"call: @{callee.name} has no parameter {k!r}", values={"params": sorted(names)})
    for p in callee.params:
        if p.name not in kwargs:
            raise InvalidValue(f"call: missing argument {p.name!r} of @{callee.name}", values={"arg": p.name})
        args.append(tr.coerce(kwargs[p.name], p.type))
    tr.emit(Instr("call", VOID, args, callee=callee))


def trace(fn, *, name: str | None = None, scalars: dict[str, str] | None = None,
          buffers: dict[str, int] | None = None, module: Module | None = None) -> Module:
    """Trace ``fn(**scalars, **buffers)`` into a ``void`` IR function named ``name`` (default ``fn.__name__``).

    ``scalars`` maps argument names to integer types ("i1", "i8", "i16", "i32", "i64"); ``buffers`` maps
    names to byte sizes: each becomes ``@name = global [size x i8] zeroinitializer, align 64``.
    Returns the module (a new one unless ``module`` is given).
    """
    module = module if module is not None else Module()
    name = name or fn.__name__
    params = []
    for pname, tname in (scalars or {}).items():
        ty = parse_type(tname)
        if not isinstance(ty, IntType):
            raise InvalidValue("scalar arguments are integers", values={"arg": pname, "type": tname})
        params.append(Argument(ty, pname))
    f = Function(name, VOID, params, prefix="")
    if name in module.functions:
        raise InvalidValue(f"@{name} already in the module", values={"function": name})
    module.functions[name] = f
    kwargs = {p.name: None for p in params}
    for bname, size in (buffers or {}).items():
        if bname not in module.globals:
            module.globals[bname] = GlobalVariable(bname, ArrayType(int(size), I8), align=64)
    tr = Tracer(module, f)
    for p in params:
        kwargs[p.name] = Scalar(tr, p)
    for bname in (buffers or {}):
        kwargs[bname] = TracedPtr(tr, module.globals[bname])
    token = _current.set(tr)
    try:
        fn(**kwargs)
    finally:
        _current.reset(token)
    tr.emit(Instr("ret", VOID, []))
    return module


def run_eager(fn, *, scalars: dict | None = None, buffers: dict[str, np.ndarray] | None = None, machine=None):
    """Run ``fn`` eagerly with Python ints and ``Ptr`` buffers on ``machine`` (the default emulator if None)."""
    kwargs = dict(scalars or {})
    for k, arr in (buffers or {}).items():
        kwargs[k] = Ptr(arr)
    if machine is None:
        return fn(**kwargs)
    with use_machine(machine):
        return fn(**kwargs)
