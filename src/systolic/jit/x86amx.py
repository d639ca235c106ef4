"""LLVM's AMX physical-register intrinsics, declared in an ``llvmlite.ir`` module.

Their tile operands are immediate tile numbers (``i8 immarg``; LLVM gives intrinsic declarations their
attributes itself, and the calls here pass constants)::

    llvm.x86.ldtilecfg(ptr)  llvm.x86.sttilecfg(ptr)  llvm.x86.tilerelease()  llvm.x86.tilezero(i8)
    llvm.x86.tileloadd64(i8, ptr, i64)  llvm.x86.tileloaddt164(i8, ptr, i64)  llvm.x86.tilestored64(i8, ptr, i64)
    llvm.x86.tdpbssd / tdpbsud / tdpbusd / tdpbuud / tdpbf16ps / tdpfp16ps / ... (i8 dst, i8 src1, i8 src2)

Which intrinsic a TMUL is, and which AMX extension provides it, are facts of the instruction records
(``systolic.amx.isa``, a higher layer): the callers pass the record's ``intrinsic`` to :meth:`Amx.dot`.

Source: llvm-project ``llvm/include/llvm/IR/IntrinsicsX86.td`` ("AMX - Intel AMX extensions") and
REFERENCE.md section 7.
"""

from __future__ import annotations

from llvmlite import ir

from .build import I8, I64, PTR, VOID, declare

__all__ = ["Amx"]

def _t(n: int):
    return ir.Constant(I8, n)


class Amx:
    """The AMX intrinsics of one module, as builder calls: ``amx = Amx(module); amx.ldtilecfg(b, cfg)``."""

    def __init__(self, module: ir.Module):
        self.m = module

    def _fn(self, name, args):
        return declare(self.m, name, VOID, args)

    def ldtilecfg(self, b, cfg):
        b.call(self._fn("llvm.x86.ldtilecfg", [PTR]), [cfg])

    def tilerelease(self, b):
        b.call(self._fn("llvm.x86.tilerelease", []), [])

    def tilezero(self, b, t: int):
        b.call(self._fn("llvm.x86.tilezero", [I8]), [_t(t)])

    def tileloadd(self, b, t: int, ptr, stride, *, t1: bool = False):
        name = "llvm.x86.tileloaddt164" if t1 else "llvm.x86.tileloadd64"
        stride = stride if isinstance(stride, ir.Value) else ir.Constant(I64, stride)
        b.call(self._fn(name, [I8, PTR, I64]), [_t(t), ptr, stride])

    def tilestored(self, b, t: int, ptr, stride):
        stride = stride if isinstance(stride, ir.Value) else ir.Constant(I64, stride)
        b.call(self._fn("llvm.x86.tilestored64", [I8, PTR, I64]), [_t(t), ptr, stride])

    def dot(self, b, intrinsic: str, dst: int, src1: int, src2: int):
        """A TMUL: ``intrinsic`` is its record's physical-register intrinsic (``llvm.x86.tdpbssd``)."""
        b.call(self._fn(intrinsic, [I8, I8, I8]), [_t(dst), _t(src1), _t(src2)])
