"""The one place systolic JIT-compiles LLVM IR for the host CPU (llvmlite MCJIT).

* :mod:`systolic.jit.engine` -- the driver: LLVM initialised once, target machines (this CPU with its own
  features, optionally the AMX features added; or a named CPU for assembly only), the optimisation pipeline,
  loading, and the engines kept alive for the life of the process; the host's vector width.
* :mod:`systolic.jit.build` -- helpers over :mod:`llvmlite.ir` builder values that the kernels are written
  with: types, splat constants, vector loads and stores, counted loops carrying values, TwoSum.
* :mod:`systolic.jit.x86amx` -- declarations of LLVM's AMX physical-register intrinsics in an ``ir.Module``.
* :mod:`systolic.jit.workers` -- the CPUs this process may use and the one worker pool the kernels' drivers
  run their jobs on; :mod:`systolic.jit.scratch` -- reused, 64-byte aligned work buffers.

Every kernel is an ``llvmlite.ir.Module`` built with ``ir.IRBuilder``; no IR is written as text.
"""

from .engine import (JitModule, compile_module, emit_asm, host_features, host_machine, llvm, llvm_version,
                     vector_bits)

__all__ = ["JitModule", "compile_module", "emit_asm", "host_features", "host_machine", "llvm", "llvm_version",
           "vector_bits"]
