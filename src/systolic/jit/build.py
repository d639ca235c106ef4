"""Small helpers over ``llvmlite.ir`` builder values, the vocabulary the JIT kernels are written in.

Types (:data:`I1` ... :data:`PTR`, :func:`vec`), constants (:func:`splat`, :func:`f64_bits`), functions
(:func:`define`, :func:`declare`, :func:`intrinsic`), memory (:func:`at`, :func:`vload`, :func:`vstore`,
:func:`broadcast`), control flow (:class:`Loop`: a counted loop carrying values through phis) and exact
arithmetic (:func:`two_sum`). They add no semantics of their own: every floating-point operation a kernel
writes is emitted as exactly that IEEE operation (no fast-math flags), so LLVM keeps it.
"""

from __future__ import annotations

import struct

from llvmlite import ir

__all__ = ["I1", "I8", "I16", "I32", "I64", "F32", "F64", "VOID", "PTR", "vec", "splat", "f64_bits", "i64", "define",
           "declare", "intrinsic", "at", "vload", "vstore", "broadcast", "Loop", "two_sum", "or_all",
           "new_module", "load_volatile", "store_volatile", "function_pointer", "store_atomic", "smin", "umin"]

I1, I8, I16, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
F32, F64, VOID = ir.FloatType(), ir.DoubleType(), ir.VoidType()
PTR = ir.PointerType()  # opaque pointer (LLVM >= 15)


def new_module(name: str) -> ir.Module:
    return ir.Module(name=name)


def vec(elem, n: int) -> ir.VectorType:
    return ir.VectorType(elem, n)


def splat(ty, value):
    """A constant of type ``ty`` (scalar or vector) with every element ``value``."""
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
    return ir.Constant(ty, value)


def f64_bits(bits: int) -> float:
    """The binary64 number with the bit pattern ``bits`` (for constants written as IEEE patterns)."""
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def i64(v: int):
    return ir.Constant(I64, v)


def define(module: ir.Module, name: str, ret, args, *, names=(), internal: bool = False, inline: bool = False,
           noalias: tuple[int, ...] = ()):
    """A new function with an entry block; returns (function, builder at the entry, its arguments)."""
    fn = ir.Function(module, ir.FunctionType(ret, list(args)), name)
    for a, n in zip(fn.args, names):
        a.name = n
    for i in noalias:
        fn.args[i].add_attribute("noalias")
    if internal:
        fn.linkage = "internal"
    if inline:
        fn.attributes.add("alwaysinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    return fn, b, fn.args


def declare(module: ir.Module, name: str, ret, args, var_arg: bool = False):
    """The declaration of an external function (made once per module)."""
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, list(args), var_arg=var_arg), name)


def intrinsic(module: ir.Module, base: str, ty, nargs: int, ret=None):
    """``llvm.<base>.<suffix of ty>`` taking ``nargs`` operands of type ``ty`` (fma, fabs, copysign, umin...)."""
    if isinstance(ty, ir.VectorType):
        elem = ty.element
        suffix = f"v{ty.count}" + ("f32" if elem == F32 else "f64" if elem == F64 else f"i{elem.width}")
    else:
        suffix = "f32" if ty == F32 else "f64" if ty == F64 else f"i{ty.width}"
    return declare(module, f"llvm.{base}.{suffix}", ret or ty, [ty] * nargs)


def at(b: ir.IRBuilder, elem, base, index, name: str = ""):
    """``&base[index]`` for elements of type ``elem`` (getelementptr inbounds)."""
    if not isinstance(index, ir.Value):
        index = i64(index)
    return b.gep(base, [index], inbounds=True, name=name, source_etype=elem)


def vload(b: ir.IRBuilder, ty, base, index, elem=None, align: int | None = None, name: str = ""):
    """Load a value of type ``ty`` (vector or scalar) from ``&base[index]`` (``elem``-sized steps)."""
    ptr = at(b, elem or (ty.element if isinstance(ty, ir.VectorType) else ty), base, index)
    return b.load(ptr, name=name, align=align, typ=ty)


def vstore(b: ir.IRBuilder, value, base, index, elem=None, align: int | None = None):
    ty = value.type
    ptr = at(b, elem or (ty.element if isinstance(ty, ir.VectorType) else ty), base, index)
    b.store(value, ptr, align=align)


def broadcast(b: ir.IRBuilder, scalar, n: int, name: str = ""):
    """The vector of ``n`` copies of ``scalar`` (insertelement + shufflevector with a zero mask)."""
    ty = vec(scalar.type, n)
    v = b.insert_element(ir.Constant(ty, ir.Undefined), scalar, ir.Constant(I32, 0))
    return b.shuffle_vector(v, ir.Constant(ty, ir.Undefined), ir.Constant(vec(I32, n), [0] * n), name=name)


def smin(b: ir.IRBuilder, x, y):
    """min(x, y) of signed integers (scalars or vectors): the clamp of a block's end or length to what is left."""
    return b.select(b.icmp_signed("<", x, y), x, y)


def umin(b: ir.IRBuilder, x, y):
    """min(x, y) of unsigned integers (scalars or vectors)."""
    return b.select(b.icmp_unsigned("<", x, y), x, y)


def two_sum(b: ir.IRBuilder, x, y):
    """Knuth's TwoSum: (s, e) with s = fl(x + y) and x + y = s + e exactly (binary64, round to nearest)."""
    s = b.fadd(x, y)
    bb = b.fsub(s, x)
    t1 = b.fsub(s, bb)
    t2 = b.fsub(x, t1)
    t3 = b.fsub(y, bb)
    return s, b.fadd(t2, t3)


def or_all(b: ir.IRBuilder, values):
    """values[0] | values[1] | ... (left to right)."""
    acc = values[0]
    for v in values[1:]:
        acc = b.or_(acc, v)
    return acc


class Loop:
    """A counted loop ``for (i = start; i < stop; i += step)`` (signed compare; zero trips allowed) that
    carries values through phis.

    ::

        lp = Loop(b, start, stop, step, carry=[init0, init1])
        i, (x0, x1) = lp.index, lp.values      # the builder is in the body
        ...                                     # may add blocks; ends wherever it ends
        out0, out1 = lp.close([new0, new1])     # back edge; the builder is after the loop, outs = exit values
    """

    def __init__(self, b: ir.IRBuilder, start, stop, step=1, *, carry=(), name: str = "i", unsigned=False,
                 do_while: bool = False):
        self.b = b
        fn = b.function
        self.pre = b.block
        self.head = None if do_while else fn.append_basic_block(f"{name}.head")
        self.body = fn.append_basic_block(f"{name}.body")
        self.exit = fn.append_basic_block(f"{name}.exit")
        self.step = step if isinstance(step, ir.Value) else i64(step)
        start = start if isinstance(start, ir.Value) else i64(start)
        self.stop = stop if isinstance(stop, ir.Value) else i64(stop)
        self.unsigned = unsigned
        self.do_while = do_while
        b.branch(self.body if do_while else self.head)
        if do_while:  # the body runs once before the first test (the caller knows start < stop)
            b.position_at_end(self.body)
            self.index = b.phi(I64, name=name)
            self.index.add_incoming(start, self.pre)
            self.phis = [b.phi(v.type) for v in carry]
            for p, v in zip(self.phis, carry):
                p.add_incoming(v, self.pre)
        else:
            b.position_at_end(self.head)
            self.index = b.phi(I64, name=name)
            self.index.add_incoming(start, self.pre)
            self.phis = [b.phi(v.type) for v in carry]
            for p, v in zip(self.phis, carry):
                p.add_incoming(v, self.pre)
            cmp = b.icmp_unsigned if unsigned else b.icmp_signed
            b.cbranch(cmp("<", self.index, self.stop), self.body, self.exit)
            b.position_at_end(self.body)
        self.values = list(self.phis)

    def close(self, values=()):
        b = self.b
        nxt = b.add(self.index, self.step)
        latch = b.block
        values = list(values)
        if self.do_while:
            cmp = b.icmp_unsigned if self.unsigned else b.icmp_signed
            b.cbranch(cmp("<", nxt, self.stop), self.body, self.exit)
            self.index.add_incoming(nxt, latch)
            for p, v in zip(self.phis, values):
                p.add_incoming(v, latch)
            b.position_at_end(self.exit)
            outs = []
            for v in values:
                phi = b.phi(v.type)
                phi.add_incoming(v, latch)
                outs.append(phi)
            return outs
        b.branch(self.head)
        self.index.add_incoming(nxt, latch)
        for p, v in zip(self.phis, values):
            p.add_incoming(v, latch)
        b.position_at_end(self.exit)
        return list(self.phis)


class _VolatileLoad(ir.instructions.LoadInstr):
    def descr(self, buf):
        super().descr(buf)
        buf[-1] = buf[-1].replace("load ", "load volatile ", 1)


class _VolatileStore(ir.instructions.StoreInstr):
    def descr(self, buf):
        super().descr(buf)
        buf[-1] = buf[-1].replace("store ", "store volatile ", 1)


def no_unroll(module: ir.Module, loop: Loop) -> None:
    """Mark ``loop`` (its back edge) not to be unrolled: in the register-blocked GEMM kernels the accumulators fill
    the vector registers, and LLVM's unrolling by two spilled some of them to the stack (seen in the assembly)."""
    back = [blk for blk in loop.b.function.blocks if blk is not loop.pre and blk.terminator is not None
            and (loop.head or loop.body) in getattr(blk.terminator, "operands", ())]
    opt = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
    md = module.add_metadata([ir.MetaDataString(module, "loop"), opt])
    md.operands = (md, opt)                        # a loop ID's first operand is the node itself
    for blk in back:
        blk.terminator.set_metadata("llvm.loop", md)


def load_volatile(b: ir.IRBuilder, ptr, ty, align: int | None = None, name: str = ""):
    """A volatile load (llvmlite's builder has none): LLVM keeps it, and the value lives in memory."""
    ld = _VolatileLoad(b.block, ptr, name, typ=ty)
    ld.align = align
    b._insert(ld)
    return ld


def store_volatile(b: ir.IRBuilder, value, ptr, align: int | None = None):
    st = _VolatileStore(b.block, value, ptr)
    st.align = align
    b._insert(st)
    return st


class _FunctionPointer(ir.instructions.CastInstr):
    """An inttoptr whose result is called: with opaque pointers the callee's function type travels here."""

    def __init__(self, parent, value, fty: ir.FunctionType, name: str = ""):
        super().__init__(parent, "inttoptr", value, PTR, name)
        self._fty = fty

    @property
    def function_type(self):
        return self._fty


def function_pointer(b: ir.IRBuilder, address, fty: ir.FunctionType, name: str = ""):
    """The function at integer ``address`` (i64), of type ``fty``, callable with ``b.call``."""
    instr = _FunctionPointer(b.block, address, fty, name)
    b._insert(instr)
    return instr


def store_atomic(b: ir.IRBuilder, value, ptr, ordering: str, align: int):
    """An atomic store through an opaque pointer (llvmlite's builder method wants a typed one)."""
    st = ir.instructions.StoreAtomicInstr(b.block, value, ptr, ordering, align)
    b._insert(st)
    return st
