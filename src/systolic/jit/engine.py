"""The JIT driver: LLVM initialised once, target machines, optimisation, loading, engines kept alive.

Kernels arrive as ``llvmlite.ir.Module`` objects (built with ``ir.IRBuilder``, :mod:`systolic.jit.build`);
they are printed, parsed by ``llvmlite.binding``, verified, optimised for this very CPU (its name and
features; -O3, loop and SLP vectorisation on request) and loaded by MCJIT. Compiled code lives as long as its
engine, so every engine made here is kept for the life of the process (threads may still be running it).

The vector width the kernels are written for comes from the host's features (:func:`vector_bits`): 512 where
the CPU has AVX-512F, 256 with AVX, else 128; ``SYSTOLIC_VECTOR_BITS=256`` (or 512, 128) forces a width, e.g.
to test the AVX2 kernels on an AVX-512 host (a width above the host's is legal too: LLVM splits the vectors).
Explicit 512-bit vector types are compiled to zmm registers: without a ``min-legal-vector-width`` attribute
LLVM's x86 back end takes every vector width the subtarget has as legal (its 256-bit preference only steers
the auto-vectoriser).
"""

from __future__ import annotations

import os
import platform
import threading

from ..errors import InvalidValue

__all__ = ["llvm", "llvm_version", "host_machine", "host_features", "vector_bits", "target_machine",
           "compile_module", "emit_asm", "JitModule", "amx_feature_string"]

_lock = threading.RLock()
_state: dict = {}
_engines: list = []  # compiled code lives as long as its engine: keep every engine

#: LLVM subtarget features of the AMX extensions this LLVM may be asked to compile for (name -> since major)
_AMX_LLVM = (("+amx-tile", 0), ("+amx-int8", 0), ("+amx-bf16", 0), ("+amx-fp16", 16), ("+amx-complex", 17),
             ("+amx-fp8", 20), ("+amx-movrs", 20))


def llvm():
    """llvmlite.binding with the native target initialised (RuntimeError where llvmlite cannot JIT here)."""
    with _lock:
        if "llvm" not in _state:
            if platform.machine().lower() not in ("x86_64", "amd64"):
                raise RuntimeError(f"the compiled kernels target x86-64, not {platform.machine()}")
            import llvmlite.binding as lb
            try:
                lb.initialize_native_target()
                lb.initialize_native_asmprinter()
            except Exception:  # older llvmlite needs initialize() first
                lb.initialize()
                lb.initialize_native_target()
                lb.initialize_native_asmprinter()
            _state["llvm"] = lb
        return _state["llvm"]


def llvm_version() -> tuple[int, int, int]:
    """The LLVM version llvmlite was built against, e.g. (22, 1, 0)."""
    return tuple(llvm().llvm_version_info)


def amx_feature_string() -> str:
    """``+amx-tile,+amx-int8,...``: every AMX feature this LLVM knows. LLVM aborts the whole process
    (instruction selection failure) on an AMX intrinsic for a target without them, so AMX code always gets
    them, whatever the CPU it is compiled for."""
    major = llvm_version()[0]
    return ",".join(f for f, since in _AMX_LLVM if major >= since)


def host_features() -> frozenset[str]:
    """The host's CPU features as LLVM names them, e.g. {'+fma', '+avx2', ...} (enabled ones only); asked once."""
    with _lock:
        if "features" not in _state:
            _state["features"] = frozenset(
                f for f in llvm().get_host_cpu_features().flatten().split(",") if f.startswith("+"))
        return _state["features"]


def vector_bits() -> int:
    """Bits per vector register the kernels are built for: SYSTOLIC_VECTOR_BITS if set (128, 256 or 512),
    else 512 with AVX-512F, 256 with AVX, 128 otherwise."""
    forced = os.environ.get("SYSTOLIC_VECTOR_BITS", "").strip()
    if forced:
        if forced not in ("128", "256", "512"):
            raise InvalidValue("SYSTOLIC_VECTOR_BITS must be 128, 256 or 512",
                               rule="vector width of the JIT kernels", values={"SYSTOLIC_VECTOR_BITS": forced})
        return int(forced)
    feats = host_features()
    if "+avx512f" in feats:
        return 512
    return 256 if "+avx" in feats else 128


def host_machine(amx: bool = False):
    """The TargetMachine for this CPU (its name and features, -O3, JIT code model), made once; ``amx`` adds
    the AMX features (for code that uses tiles: calling it still needs the CPU and Linux permission)."""
    key = ("tm", amx)
    with _lock:
        if key not in _state:
            lb = llvm()
            feats = lb.get_host_cpu_features().flatten()
            if amx:
                feats = ",".join(x for x in (feats, amx_feature_string()) if x)
            _state[key] = lb.Target.from_default_triple().create_target_machine(
                cpu=lb.get_host_cpu_name(), features=feats, opt=3, codemodel="jitdefault")
        return _state[key]


def target_machine(cpu: str, features: str | None = None, *, amx: bool = True, opt: int = 3):
    """A TargetMachine for x86-64 ``cpu`` (for assembly emission on any machine); ``amx`` adds the AMX
    features to ``features``."""
    lb = llvm()
    feats = ",".join(x for x in (features, amx_feature_string() if amx else "") if x)
    target = lb.Target.from_triple("x86_64-unknown-linux-gnu")
    return target.create_target_machine(cpu=cpu, features=feats, opt=opt, reloc="pic", codemodel="default")


def _parse(module):
    """llvmlite.binding module from an ``ir.Module`` (or IR text from a compiler front end), verified, through the
    project's one LLVM parser (:func:`systolic.llvmir.module.parse`: AsmSyntaxError / IRVerifyError with LLVM's
    line and column)."""
    from ..llvmir.module import parse
    llvm()
    text = module if isinstance(module, str) else str(module)
    name = "<llvm-ir>" if isinstance(module, str) else f"<{module.name or 'jit'}>"
    return parse(text, name=name), text


def _optimise(mod, tm, vectorize: bool) -> None:
    lb = llvm()
    pto = lb.create_pipeline_tuning_options(speed_level=3)
    if vectorize:
        pto.loop_vectorization = True
        pto.slp_vectorization = True
    pb = lb.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


class JitModule:
    """A module compiled for this CPU and loaded into the process (MCJIT), kept alive with the process.

    ``address(name)`` gives a function's address, ``cfunc(name, restype, *argtypes)`` a ctypes function;
    ``ir`` is the module's text as compiled (before optimisation)."""

    def __init__(self, module, *, vectorize: bool = False, amx: bool = False, optimise: bool | None = None):
        lb = llvm()
        with _lock:
            tm = host_machine(amx)
            mod, self.ir = _parse(module)
            mod.triple = tm.triple
            mod.data_layout = str(tm.target_data)
            # the module pipeline (-O3 passes) for the float kernels; AMX code goes straight to code generation
            # (at -O3), as it was tuned and measured: the pipeline reshapes its loops (unswitching on the A
            # packing flag) for no measured gain
            if optimise if optimise is not None else not amx:
                _optimise(mod, tm, vectorize)
            self._engine = lb.create_mcjit_compiler(mod, tm)
            self._engine.finalize_object()
            _engines.append(self._engine)

    def address(self, name: str) -> int:
        addr = self._engine.get_function_address(name)
        if not addr:
            raise InvalidValue("no such function in the JIT module", rule="JitModule.address",
                               values={"name": name})
        return addr

    def cfunc(self, name: str, restype, *argtypes):
        import ctypes
        return ctypes.CFUNCTYPE(restype, *argtypes)(self.address(name))


def compile_module(module, *, vectorize: bool = False, amx: bool = False, optimise: bool | None = None) -> JitModule:
    """Compile and load ``module`` (an ``ir.Module``) for this CPU: see :class:`JitModule`."""
    return JitModule(module, vectorize=vectorize, amx=amx, optimise=optimise)


def emit_asm(module, cpu: str = "sapphirerapids", features: str | None = None, *, amx: bool = True) -> str:
    """x86-64 assembly (AT&T syntax) of ``module`` (``ir.Module`` or IR text) for ``cpu``; any machine."""
    with _lock:
        mod, _ = _parse(module)
        return target_machine(cpu, features, amx=amx).emit_assembly(mod)
