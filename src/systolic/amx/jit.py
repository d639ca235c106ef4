"""AMX on top of :mod:`systolic.jit` (the one JIT module): the AMX facts LLVM needs, and the entry points the
compiler front end and the tools call with IR text of their own.

The JIT itself -- target machines, optimisation, loading, assembly emission -- is :mod:`systolic.jit.engine`;
the AMX intrinsics as builder calls are :class:`systolic.jit.x86amx.Amx`. Every kernel of the emulators is built
with ``llvmlite.ir``, the tile compiler's programs too (:mod:`systolic.compiler.to_llvm`); :func:`declarations`
gives llvmlite's text of the intrinsics' declarations to tools that write whole programs as text.

Source: llvm-project ``llvm/include/llvm/IR/IntrinsicsX86.td`` ("AMX - Intel AMX extensions") and REFERENCE.md
section 7. Running JIT code that uses tiles needs a CPU with AMX and Linux tile-data permission
(``systolic.amx.native.require_native``).
"""

from __future__ import annotations

from .. import jit as _jit
from ..errors import InvalidValue
from ..jit.engine import amx_feature_string, compile_module, llvm_version
from .cpu import FEATURES
from .isa import INSTRUCTIONS, TMULS

__all__ = ["DEFAULT_CPU", "AMX_FEATURES", "DOT_INTRINSICS", "ptr_type", "declarations", "declare_intrinsics",
           "target_machine", "host_target_machine", "emit_asm", "JitModule", "llvm_version", "compile_module"]

DEFAULT_CPU = "sapphirerapids"

#: LLVM subtarget features of each AMX extension: LLVM names them as CPUID does (systolic.amx.cpu.FEATURES)
AMX_FEATURES = {f.upper(): f"+{f}" for f in FEATURES}

#: mnemonic -> (LLVM intrinsic, AMX extension that provides it), read from the TMUL records (systolic.amx.isa)
DOT_INTRINSICS = {r.mnemonic: (r.intrinsic, r.feature.upper()) for r in TMULS}

#: extensions LLVM knows since which major version (older LLVMs reject the feature string)
_FEATURE_SINCE = {"AMX-FP16": 16, "AMX-COMPLEX": 17, "AMX-FP8": 20, "AMX-AVX512": 20, "AMX-MOVRS": 20}


def ptr_type() -> str:
    """The IR spelling of a data pointer: ``ptr`` (opaque pointers, LLVM >= 15) or ``i8*``."""
    return "ptr" if llvm_version()[0] >= 15 else "i8*"


def supported_features() -> list[str]:
    """The AMX extensions this LLVM can compile for."""
    major = llvm_version()[0]
    return [k for k in AMX_FEATURES if major >= _FEATURE_SINCE.get(k, 0)]


def feature_string(features=None) -> str:
    """``"+amx-tile,+amx-int8,..."`` for the given AMX extension names (default: all this LLVM knows)."""
    if features is None:
        return amx_feature_string()
    names = list(features)
    bad = [n for n in names if n not in AMX_FEATURES]
    if bad:
        raise InvalidValue("unknown AMX extension", rule="AMX extensions: " + ", ".join(AMX_FEATURES),
                           values={"features": bad})
    return ",".join(AMX_FEATURES[n] for n in names)


def _signature(rec) -> list:
    """The physical-register intrinsic's parameters (LLVM ``IntrinsicsX86.td``): tile numbers are ``i8``."""
    from ..jit.build import I8, I64, PTR
    if rec.kind == "config":
        return [] if rec.mnemonic == "tilerelease" else [PTR]
    return {"load": [I8, PTR, I64], "store": [I8, PTR, I64], "zero": [I8], "dot": [I8, I8, I8]}[rec.kind]


def declare_intrinsics(module, mnemonics=None) -> dict:
    """Declare the AMX physical-register intrinsics in an ``llvmlite.ir`` module: every configuration, load,
    store and zero record, and the TMULs named in ``mnemonics``; intrinsic name -> ``ir.Function``."""
    from ..jit.build import VOID, declare
    dots = set(mnemonics or ())
    return {r.intrinsic: declare(module, r.intrinsic, VOID, _signature(r)) for r in INSTRUCTIONS.values()
            if r.kind != "dot" or r.mnemonic in dots}


def declarations(mnemonics=None) -> str:
    """The declarations of :func:`declare_intrinsics` as text (llvmlite's printing of a module holding only them),
    for tools that write whole programs as text (tools/silicon)."""
    from llvmlite import ir
    m = ir.Module(name="amx_declarations")
    declare_intrinsics(m, mnemonics)
    return "\n".join(line for line in str(m).splitlines() if line.startswith("declare ")) + "\n"


def target_machine(cpu: str = DEFAULT_CPU, features: str | None = None, opt: int = 3):
    """A TargetMachine for x86-64 ``cpu`` with the AMX features (for assembly emission)."""
    return _jit.engine.target_machine(cpu, features, amx=True, opt=opt)


def host_target_machine(opt: int = 3):
    """The TargetMachine for this very CPU with the AMX features added."""
    return _jit.host_machine(amx=True)


def emit_asm(module, cpu: str = DEFAULT_CPU, features: str | None = None) -> str:
    """x86-64 assembly (AT&T) of ``module`` (an ``llvmlite.ir.Module`` or IR text) for ``cpu``; any machine."""
    return _jit.emit_asm(module, cpu, features, amx=True)


class JitModule(_jit.JitModule):
    """A module (``llvmlite.ir.Module`` or IR text) compiled for this CPU with the AMX features, loaded."""

    def __init__(self, module, opt: int = 3):
        super().__init__(module, amx=True)
