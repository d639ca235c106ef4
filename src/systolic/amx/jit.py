"""llvmlite helpers for AMX code: target machines, assembly emission, and a small JIT.

The AMX instructions are reached through LLVM's *physical-register* intrinsics,
whose tile operands are immediate tile numbers (``i8 immarg``):

    llvm.x86.ldtilecfg(ptr)            llvm.x86.sttilecfg(ptr)        llvm.x86.tilerelease()
    llvm.x86.tilezero(i8)              llvm.x86.tileloadd64(i8, ptr, i64)
    llvm.x86.tileloaddt164(i8, ptr, i64)                             llvm.x86.tilestored64(i8, ptr, i64)
    llvm.x86.tdpbssd / tdpbsud / tdpbusd / tdpbuud / tdpbf16ps / tdpfp16ps (i8 dst, i8 src1, i8 src2)
    llvm.x86.tcmmimfp16ps / tcmmrlfp16ps (AMX-COMPLEX), llvm.x86.tdpbf8ps / tdpbhf8ps / tdphbf8ps / tdphf8ps (AMX-FP8)

Source: llvm-project ``llvm/include/llvm/IR/IntrinsicsX86.td`` (the "AMX - Intel AMX extensions"
block) and REFERENCE.md section 7. ``emit_asm`` only compiles, so it works on any x86-64 (or other)
machine; running JIT code that uses tiles needs a CPU with AMX and Linux tile-data permission
(``systolic.amx.native.require_native``).
"""

from __future__ import annotations

import functools
import threading

from ..errors import AsmSyntaxError, InvalidValue

__all__ = ["DEFAULT_CPU", "AMX_FEATURES", "DOT_INTRINSICS", "ptr_type", "declarations", "target_machine",
           "host_target_machine", "emit_asm", "JitModule", "llvm_version"]

DEFAULT_CPU = "sapphirerapids"

#: LLVM subtarget features of each AMX extension (LLVM's names).
AMX_FEATURES = {
    "AMX-TILE": "+amx-tile", "AMX-INT8": "+amx-int8", "AMX-BF16": "+amx-bf16", "AMX-FP16": "+amx-fp16",
    "AMX-COMPLEX": "+amx-complex", "AMX-FP8": "+amx-fp8",
}

#: mnemonic -> (LLVM intrinsic, AMX feature that provides it)
DOT_INTRINSICS = {
    "tdpbssd": ("llvm.x86.tdpbssd", "AMX-INT8"),
    "tdpbsud": ("llvm.x86.tdpbsud", "AMX-INT8"),
    "tdpbusd": ("llvm.x86.tdpbusd", "AMX-INT8"),
    "tdpbuud": ("llvm.x86.tdpbuud", "AMX-INT8"),
    "tdpbf16ps": ("llvm.x86.tdpbf16ps", "AMX-BF16"),
    "tdpfp16ps": ("llvm.x86.tdpfp16ps", "AMX-FP16"),
    "tcmmimfp16ps": ("llvm.x86.tcmmimfp16ps", "AMX-COMPLEX"),
    "tcmmrlfp16ps": ("llvm.x86.tcmmrlfp16ps", "AMX-COMPLEX"),
    "tdpbf8ps": ("llvm.x86.tdpbf8ps", "AMX-FP8"),
    "tdpbhf8ps": ("llvm.x86.tdpbhf8ps", "AMX-FP8"),
    "tdphbf8ps": ("llvm.x86.tdphbf8ps", "AMX-FP8"),
    "tdphf8ps": ("llvm.x86.tdphf8ps", "AMX-FP8"),
}

#: extensions LLVM knows since which major version (older LLVMs reject the feature string)
_FEATURE_SINCE = {"AMX-FP16": 16, "AMX-COMPLEX": 17, "AMX-FP8": 20}

_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _llvm():
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


def llvm_version() -> tuple[int, int, int]:
    """The LLVM version llvmlite was built against, e.g. (22, 1, 0)."""
    return tuple(_llvm().llvm_version_info)


def ptr_type() -> str:
    """The IR spelling of a data pointer: ``ptr`` (opaque pointers, LLVM >= 15) or ``i8*``."""
    return "ptr" if llvm_version()[0] >= 15 else "i8*"


def supported_features() -> list[str]:
    """The AMX extensions this LLVM can compile for."""
    major = llvm_version()[0]
    return [k for k in AMX_FEATURES if major >= _FEATURE_SINCE.get(k, 0)]


def feature_string(features=None) -> str:
    """``"+amx-tile,+amx-int8,..."`` for the given AMX extension names (default: all this LLVM knows)."""
    names = supported_features() if features is None else list(features)
    bad = [n for n in names if n not in AMX_FEATURES]
    if bad:
        raise InvalidValue("unknown AMX extension", rule="AMX extensions: " + ", ".join(AMX_FEATURES),
                           values={"features": bad})
    return ",".join(AMX_FEATURES[n] for n in names)


def declarations(mnemonics=None) -> str:
    """LLVM IR declarations of the AMX physical-register intrinsics (data movement + the given dot products)."""
    p = ptr_type()
    lines = [
        f"declare void @llvm.x86.ldtilecfg({p})",
        f"declare void @llvm.x86.sttilecfg({p})",
        "declare void @llvm.x86.tilerelease()",
        "declare void @llvm.x86.tilezero(i8 immarg)",
        f"declare void @llvm.x86.tileloadd64(i8 immarg, {p}, i64)",
        f"declare void @llvm.x86.tileloaddt164(i8 immarg, {p}, i64)",
        f"declare void @llvm.x86.tilestored64(i8 immarg, {p}, i64)",
    ]
    for mn in (mnemonics if mnemonics is not None else ()):
        name = DOT_INTRINSICS[mn][0]
        lines.append(f"declare void @{name}(i8 immarg, i8 immarg, i8 immarg)")
    return "\n".join(lines) + "\n"


def target_machine(cpu: str = DEFAULT_CPU, features: str | None = None, opt: int = 3):
    """An llvmlite TargetMachine for x86-64 ``cpu`` with the AMX features (for assembly emission).

    The AMX features this LLVM knows are always added to ``features``: LLVM aborts the whole process
    (instruction selection failure) on an AMX intrinsic for a target without them.
    """
    llvm = _llvm()
    target = llvm.Target.from_triple("x86_64-unknown-linux-gnu")
    feats = ",".join(x for x in (features, feature_string()) if x)
    return target.create_target_machine(cpu=cpu, features=feats, opt=opt, reloc="pic", codemodel="default")


def host_target_machine(opt: int = 3):
    """A TargetMachine for this very CPU (its own name and features), with the AMX features added."""
    llvm = _llvm()
    target = llvm.Target.from_default_triple()
    feats = llvm.get_host_cpu_features().flatten()
    extra = feature_string()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=",".join(x for x in (feats, extra) if x), opt=opt,
                                        codemodel="jitdefault")


def _parse(ir_text: str):
    llvm = _llvm()
    try:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
    except RuntimeError as exc:
        msg = str(exc)
        line = col = None
        # LLVM reports "<string>:LINE:COL: error: ..."
        import re
        m = re.search(r":(\d+):(\d+):", msg)
        if m:
            line, col = int(m.group(1)), int(m.group(2))
        raise AsmSyntaxError(f"LLVM rejected the IR: {msg.strip()}", line=line or 1, column=col or 1,
                             source="<llvm-ir>", rule="LLVM IR parser / verifier") from None
    return mod


def emit_asm(llvm_ir_text: str, cpu: str = DEFAULT_CPU, features: str | None = None) -> str:
    """Compile LLVM IR text to x86-64 assembly (AT&T syntax) for ``cpu``; works on any machine."""
    with _lock:
        mod = _parse(llvm_ir_text)
        return target_machine(cpu, features).emit_assembly(mod)


class JitModule:
    """LLVM IR compiled for this CPU and loaded into the process (MCJIT), kept alive with this object.

    ``address(name)`` gives a function's address, ``cfunc(name, restype, *argtypes)`` a ctypes function.
    Calling code that uses tiles needs AMX and tile-data permission: see ``systolic.amx.native``.
    """

    def __init__(self, llvm_ir_text: str, opt: int = 3):
        llvm = _llvm()
        with _lock:
            self._mod = _parse(llvm_ir_text)
            self._tm = host_target_machine(opt)
            self._engine = llvm.create_mcjit_compiler(self._mod, self._tm)
            self._engine.finalize_object()
        self.ir = llvm_ir_text

    def address(self, name: str) -> int:
        addr = self._engine.get_function_address(name)
        if not addr:
            raise InvalidValue("no such function in the JIT module", rule="JitModule.address", values={"name": name})
        return addr

    def cfunc(self, name: str, restype, *argtypes):
        import ctypes
        return ctypes.CFUNCTYPE(restype, *argtypes)(self.address(name))
