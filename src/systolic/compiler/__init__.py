"""The AMX tile compiler: the seed proposal's programming model (specs/amx-llvm-programming-model.md) as LLVM
realised it (REFERENCE.md section 7), with every pass visible.

    from systolic.compiler import compile_ir
    mod = compile_ir(open("examples/amx/api.ll").read())
    mod.run("api", 1, 8, 32, memory={"buf": buf, "buf2": buf2})

Passes: :mod:`.shapes` (shape propagation), :mod:`.lower` (pseudo tile instructions), :mod:`.tileconfig`
(ldtilecfg placement), :mod:`.regalloc` (tile registers, spills, config); emission: :mod:`.to_machine`
(TileMachine program + runner), :mod:`.to_llvm` (LLVM IR, physical-register or ``.internal`` form).
Front ends: :mod:`.llvm_reader` (LLVM IR, parsed by LLVM), :mod:`.c_frontend` (C/C++ through clang:
:func:`compile_c`), :mod:`.tracing` (Python functions written with
:mod:`systolic.amx.intrinsics`).
"""

from .module import BACKENDS, PASSES, CompiledModule, compile_c, compile_ir, compile_module

__all__ = ["compile_ir", "compile_c", "compile_module", "CompiledModule", "PASSES", "BACKENDS"]
