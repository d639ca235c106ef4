"""Compile LLVM IR for this very CPU and keep it loaded: the one place the emulators' compiled fast paths JIT.

The AMX and XMX emulators generate small LLVM IR kernels (exact fp32 chains, binary64 stage sums) and run them
through llvmlite's MCJIT. This module owns the shared steps: initialise LLVM once, build a target machine for the
host's own CPU name and features, optimise (optionally with loop and SLP vectorisation), load, and keep the
engine alive for the life of the process. (Native AMX code, which needs the AMX features added, goes through
:mod:`systolic.amx.jit`.)
"""

from __future__ import annotations

import platform
import threading

__all__ = ["llvm", "host_machine", "host_features", "compile_host"]

_lock = threading.RLock()
_state: dict = {}
_engines: list = []  # compiled code lives as long as its engine: keep every engine


def llvm():
    """llvmlite.binding with the native target initialised (raises where llvmlite cannot JIT here)."""
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


def host_machine():
    """The TargetMachine for this CPU (its name and features, -O3, JIT code model), made once."""
    with _lock:
        if "tm" not in _state:
            lb = llvm()
            _state["tm"] = lb.Target.from_default_triple().create_target_machine(
                cpu=lb.get_host_cpu_name(), features=lb.get_host_cpu_features().flatten(), opt=3,
                codemodel="jitdefault")
        return _state["tm"]


def host_features() -> set[str]:
    """The host's CPU features as LLVM names them, e.g. {'+fma', '+avx2', ...} (enabled ones only)."""
    return {f for f in llvm().get_host_cpu_features().flatten().split(",") if f.startswith("+")}


def compile_host(ir_text: str, *, vectorize: bool = False):
    """Parse, verify, optimise (-O3; loop and SLP vectorisation if ``vectorize``) and load ``ir_text``.

    Returns the execution engine (``get_function_address(name)``); it is kept alive here.
    """
    with _lock:
        lb, tm = llvm(), host_machine()
        mod = lb.parse_assembly(ir_text)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        mod.verify()
        pto = lb.create_pipeline_tuning_options(speed_level=3)
        if vectorize:
            pto.loop_vectorization = True
            pto.slp_vectorization = True
        pb = lb.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        engine = lb.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        _engines.append(engine)
        return engine
