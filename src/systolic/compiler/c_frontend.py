"""C and C++ in: clang (through the shared front door :mod:`systolic.llvmir.clang`) turns the seed's programming
model - ``__tile1024i``, ``__tile_loadd``, ``__tile_dpbssd``, ``__tile_stored`` from clang's ``amxintrin.h``
(specs/amx-llvm-programming-model.md sections 3-4) - into LLVM IR, which the reader translates.

Decisions (docs/compiler.md, "C and C++ sources"):

* Every AMX feature clang 22 knows is enabled (``-mamx-tile -mamx-int8 ...``), so any intrinsic of the headers
  compiles; which instructions exist is the TileMachine's CPU model's business at run time (``--cpu``).
* ``-fno-vectorize -fno-slp-vectorize``: the runner executes integer scalars and tiles, not vector arithmetic,
  so clang is asked not to vectorize scalar loops. The user's ``flags`` come last and can undo it.
* At ``-O0`` clang keeps every value in memory: the ``__tile1024i`` structs are allocas written with memset and
  memcpy, and pointers are stored in stack slots, which the byte memory model cannot hold. clang is run with
  ``-Xclang -disable-O0-optnone`` and then LLVM's mid-level passes ``sroa``, ``instcombine`` and ``simplifycfg``
  (llvmlite's new pass manager, never the backend) bring the module to SSA form. That is what the differential
  guarantee then covers: the compiled program equals the eager run of the normalised module, bit for bit.
"""

from __future__ import annotations

import re

from ..errors import AsmSyntaxError, InvalidValue

__all__ = ["C_SUFFIXES", "AMX_FLAGS", "C_DEFAULT_FLAGS", "O0_PASSES", "compile_c_to_ir", "normalise_o0"]

#: every AMX extension clang 22's headers guard (amxintrin.h, amxfp16intrin.h, amxcomplexintrin.h, ...)
AMX_FLAGS = ("-mamx-tile", "-mamx-int8", "-mamx-bf16", "-mamx-fp16", "-mamx-complex", "-mamx-fp8",
             "-mamx-tf32", "-mamx-movrs", "-mamx-avx512")
C_DEFAULT_FLAGS = ("-fno-vectorize", "-fno-slp-vectorize")
#: LLVM passes that bring clang's -O0 output to SSA (in this order)
O0_PASSES = ("sroa", "instruction_combine", "simplify_cfg")
LANGUAGES = ("c", "c++")
#: file suffix -> language (``systolic amx compile|run``, ``systolic run``)
C_SUFFIXES = {".c": "c", ".cpp": "c++", ".cc": "c++", ".cxx": "c++", ".C": "c++"}


def _initialise():
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


def normalise_o0(ref):
    """Run :data:`O0_PASSES` on an ``llvmlite.binding`` module in place (new pass manager, no backend)."""
    llvm = _initialise()
    tm = llvm.Target.from_triple(ref.triple or "x86_64-unknown-linux-gnu").create_target_machine()
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0))
    mpm = llvm.create_new_module_pass_manager()
    for p in O0_PASSES:
        getattr(mpm, f"add_{p}_pass")()
    mpm.run(ref, pb)
    return ref


def _explain_version_mismatch(exc: AsmSyntaxError) -> None:
    """clang's IR failing LLVM's parser is most likely a clang newer than the LLVM llvmlite carries (the IR
    format moves with LLVM's major): say so, with both versions."""
    import re as _re

    from ..llvmir.clang import clang_version
    from ..llvmir.module import llvm_version
    m = _re.search(r"version (\d+)\.", clang_version())
    if m and int(m.group(1)) > llvm_version()[0]:
        raise AsmSyntaxError(f"{exc.message}; clang {m.group(1)} writes IR for LLVM {m.group(1)}, but llvmlite "
                             f"parses LLVM {llvm_version()[0]}: use a clang of that major (SYSTOLIC_CLANG, or the "
                             "ziglang wheel)", line=exc.line, column=exc.column, source=exc.source,
                             rule="clang's LLVM major matches llvmlite's", values=exc.values) from None


def compile_c_to_ir(source: str, *, opt: str = "-O2", flags=(), language: str = "c", debug: bool = False,
                    filename: str | None = None, source_dir=None) -> tuple[object, str]:
    """clang ``source`` (C or C++) to LLVM IR; returns (llvmlite module, its text), normalised at -O0."""
    from ..llvmir.clang import compile_source
    from ..llvmir.module import parse
    if language not in LANGUAGES:
        raise InvalidValue(f"language must be one of {LANGUAGES}, not {language!r}", rule="compile_c language",
                           values={"language": language})
    if isinstance(flags, str):
        import shlex
        flags = shlex.split(flags)
    flags = list(flags)
    # -O and -g given among the flags (``--cflags "-O0 -g"``) choose the level and debug info
    rest = []
    for f in flags:
        if re.fullmatch(r"-O[0-3sz]?", f):
            opt = f if f != "-O" else "-O1"
        elif f in ("-g", "-g0", "-g1", "-g2", "-g3", "-ggdb"):
            debug = f != "-g0"
        else:
            rest.append(f)
    extra = list(AMX_FLAGS) + list(C_DEFAULT_FLAGS)
    if opt == "-O0":
        extra += ["-Xclang", "-disable-O0-optnone"]
    text = compile_source(source, language=language, opt=opt, debug=debug, flags=extra + rest,
                          filename=filename, source_dir=source_dir)
    try:
        ref = parse(text, name=filename or f"input.{'c' if language == 'c' else 'cpp'}.ll")
    except AsmSyntaxError as exc:
        _explain_version_mismatch(exc)
        raise
    if opt == "-O0":
        normalise_o0(ref)
        text = str(ref)
    return ref, text
