"""The compiler's front door: ``compile_ir(text) -> CompiledModule`` and ``CompiledModule.run(...)``.

Pipeline, per defined function (:mod:`.passes`: each pass its own module, the verifier after every one,
``snapshots`` keeps the text after each): verify, shape-analysis, shapes, lower, tileconfig, assign, regalloc,
config-prune;

then emission: ``machine`` (TileMachine program, :mod:`to_machine`), ``llvm`` (physical-register intrinsics,
:func:`to_llvm.physical_ir`), ``llvm-internal`` (:func:`to_llvm.internal_ir`), ``asm`` (llvmlite).
"""

from __future__ import annotations

import copy
import itertools

import numpy as np

from ..errors import AmxUnavailable, CompileError, InvalidValue
from ..vocabulary import check_path, renamed, spelled
from .passes import PASS_NAMES, PIPELINE, run_pipeline
from .ir import IntType, Module, PtrType
from .llvm_reader import parse
from .printer import print_module
from .to_machine import DEFAULT_MAX_STEPS, Runner, RunResult, listing, memory_arrays

__all__ = ["compile_ir", "compile_c", "compile_module", "CompiledModule", "PASSES", "BACKENDS"]

PASSES = PASS_NAMES
#: where a compiled function runs (docs/ARCHITECTURE.md "Vocabulary"): "cpu" (the TileMachine in this process, its
#: fast or spec path), "native" (each tile instruction on this CPU's AMX), "llvm" (the whole function
#: JIT-compiled for this CPU's AMX)
BACKENDS = ("cpu", "native", "llvm")
#: the older backend names: the cpu backend's fast / spec path
_OLD_BACKENDS = {"emulator": "fast", "spec": "spec"}
_jit_ids = itertools.count()


def _where(backend, path, where: str, known: tuple[str, ...] = BACKENDS) -> tuple[str, str]:
    """(backend, path) of a run: ``backend="emulator" | "spec"`` are the older spellings of ``backend="cpu"``
    with ``path="fast" | "spec"`` (DeprecationWarning; a given ``path`` that says otherwise is InvalidValue);
    ``path=None``: not given (fast); the spec path runs on cpu only."""
    if path is not None:
        check_path(path, where)
    if isinstance(backend, str) and backend in _OLD_BACKENDS:
        new = spelled(f"backend={backend!r}", {"backend": "cpu", "path": _OLD_BACKENDS[backend]}, where,
                      stacklevel=3, path=path)
        backend, path = new["backend"], new["path"]
    path = "fast" if path is None else path
    if not isinstance(backend, str) or backend not in known:
        raise InvalidValue(f"unknown backend {backend!r}", rule="module.run backend",
                           values={"backend": backend, "known": list(known)})
    if path == "spec" and backend != "cpu":
        raise InvalidValue(f"the spec path runs on the cpu backend, not {backend}", rule="module.run path",
                           values={"backend": backend, "path": path})
    return backend, path


def _tile_machine(cpu: str, backend: str, path: str = "fast"):
    """The TileMachine for a run on ``backend`` ("cpu" by ``path``, or "native")."""
    from ..amx import TileMachine
    if backend == "native":
        return TileMachine(device=cpu, backend="native")
    return TileMachine(device=cpu, backend="cpu", path=path)


class CompiledModule:
    """A module compiled by the tile compiler.

    ``source``: the module as read; ``final``: after shape propagation (LLVM's final form); ``machine``: the
    allocated machine program; ``snapshots[pass]``: the printed module after each pass; ``info[function]``:
    the allocation (virtual -> physical tile, shape of each physical tile, spills, copies).
    """

    def __init__(self, source: Module) -> None:
        self.source = source
        self.snapshots: dict[str, str] = {}
        m = copy.deepcopy(source)
        defined = [f for f in m.functions.values() if not f.declaration]

        def keep(name: str, module: Module) -> None:
            if name == "shapes":
                self.final = copy.deepcopy(module)

        self.snapshots = run_pipeline(m, PIPELINE, on_pass=keep)
        # a function a pass refused (UnmodelledConstruct) is a declaration now; calling it raises the refusal,
        # compiled or eager
        for name, err in m.refused.items():
            self.source.refused.setdefault(name, err)
        self.info = {f.name: f.meta["regalloc"] for f in m.functions.values() if not f.declaration}
        self.machine = m
        self._jit = None

    # ------------------------------------------------------------------ emission
    def emit(self, kind: str = "machine") -> str:
        """Text of one emission: ir | pseudo | machine | llvm | llvm-internal | asm | asm-internal."""
        if kind == "ir":
            return print_module(self.final)
        if kind == "pseudo":
            return self.snapshots["tileconfig"]
        if kind == "machine":
            return "\n\n".join(listing(f) for f in self.machine.functions.values() if not f.declaration) + "\n"
        if kind == "llvm":
            from .to_llvm import physical_ir
            return physical_ir(self.machine)
        if kind == "llvm-internal":
            from .to_llvm import internal_ir
            return internal_ir(self.final)
        if kind == "asm":
            from ..amx.jit import emit_asm
            from .to_llvm import physical_module
            return emit_asm(physical_module(self.machine))
        if kind == "asm-internal":
            return _asm_in_subprocess(self.emit("llvm-internal"))
        raise InvalidValue(f"unknown emission {kind!r}", rule="--emit",
                           values={"kind": kind, "known": ["ir", "pseudo", "machine", "llvm", "llvm-internal",
                                                           "asm", "asm-internal"]})

    # ------------------------------------------------------------------ running
    def run(self, function: str, *args, memory: dict[str, np.ndarray] | None = None, backend: str = "cpu",
            device: str | None = None, max_steps: int = DEFAULT_MAX_STEPS, record: bool = False,
            path: str | None = None, **renamed_keywords) -> RunResult:
        """Run compiled ``function`` with ``args`` (ints; pointers as a global name or (name, offset)).

        Globals live in ``memory`` (1-D uint8 arrays, updated in place; missing ones are made from their
        initialisers). ``backend``: ``cpu`` (the TileMachine in this process; ``path``: its fast path, the
        default, or the spec path; ``emulator`` / ``spec`` are the older names of the two, DeprecationWarning, and
        a ``path`` given beside one that says otherwise is InvalidValue), ``native`` (each
        tile instruction on real AMX through the native backend) or ``llvm`` (the whole function JIT-compiled from
        :func:`to_llvm.physical_ir` and run on real AMX, after the same program ran on the emulator on copies
        of the memory to catch every fault first). A fault raises the systolic.errors exception. ``device``:
        the CPU model (default: sapphirerapids; ``cpu=`` is its older name, DeprecationWarning).
        """
        if renamed_keywords:             # cpu=: the older name of device= (systolic.vocabulary)
            device = renamed(renamed_keywords, {"cpu": "device"}, "Module.run", device=device)["device"]
        cpu = "sapphirerapids" if device is None else device
        backend, path = _where(backend, path, "Module.run")
        f = self.machine.function(function)
        function = f.name  # a C++ function may be named by its source name (Module.function)
        if backend == "llvm":
            return self._run_jit(function, args, memory, cpu, max_steps)
        tm = _tile_machine(cpu, backend, path)
        r = Runner(self.machine, tm, "machine", max_steps, record=record)
        r.bind_memory(memory)
        value = r.call(f, list(args))
        return RunResult(value, r.memory(), tm, r.steps, r.trace)

    def run_eager(self, function: str, *args, memory: dict[str, np.ndarray] | None = None,
                  device: str | None = None, backend: str = "cpu",
                  max_steps: int = DEFAULT_MAX_STEPS, path: str | None = None, **renamed_keywords) -> RunResult:
        """Run the *uncompiled* IR, each tile intrinsic executed on its own (the eager reference). ``device``:
        the CPU model (default: sapphirerapids; ``cpu=`` is its older name, DeprecationWarning); ``backend``: ``cpu`` (by ``path``) or
        ``native``, as :meth:`run`'s."""
        if renamed_keywords:             # cpu=: the older name of device= (systolic.vocabulary)
            device = renamed(renamed_keywords, {"cpu": "device"}, "Module.run_eager", device=device)["device"]
        device = "sapphirerapids" if device is None else device
        backend, path = _where(backend, path, "Module.run_eager", ("cpu", "native"))
        tm = _tile_machine(device, backend, path)
        r = Runner(self.source, tm, "eager", max_steps)
        r.bind_memory(memory)
        value = r.call(self.source.function(function), list(args))
        return RunResult(value, r.memory(), tm, r.steps)

    def _run_jit(self, function, args, memory, cpu, max_steps) -> RunResult:

        try:
            from ..amx.native import require_native
        except ImportError as exc:  # pragma: no cover - the native module is another engineer's
            raise AmxUnavailable(f"systolic.amx.native is not available: {exc}") from None
        require_native()
        # 1. the emulator first, on copies: any #GP/#UD/fault is raised here, never as SIGILL/SIGSEGV
        copies = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in memory_arrays(memory).items()}
        self.run(function, *args, memory=copies, backend="cpu", device=cpu, max_steps=max_steps)
        # 2. the real arrays, bound to the JIT's external globals
        return self._jit_call(function, args, memory)

    def _jit_call(self, function, args, memory) -> RunResult:
        """JIT-compile :func:`to_llvm.physical_module` for this CPU and call ``function`` on ``memory`` in place
        (no checks: the caller made sure the program cannot fault)."""
        import ctypes

        from ..amx.jit import JitModule
        import llvmlite.binding as llvm
        r = Runner(self.machine, None)
        r.bind_memory(memory)
        tag = next(_jit_ids)
        rename = {g: f"systolic.jit{tag}.{g}" for g in self.machine.globals}
        for g, sym in rename.items():
            llvm.add_symbol(sym, r.regions[g].data.ctypes.data)
        from .to_llvm import physical_module
        jit = JitModule(physical_module(self.machine, external_globals=True, rename=rename))
        f = self.machine.function(function)
        ctypes_of = {1: ctypes.c_bool, 8: ctypes.c_int8, 16: ctypes.c_int16, 32: ctypes.c_int32,
                     64: ctypes.c_int64}
        argtypes, cargs = [], []
        for p, a in zip(f.params, args):
            if isinstance(p.type, IntType):
                ct = ctypes_of.get(p.type.bits)
                if ct is None:
                    raise InvalidValue(f"i{p.type.bits} arguments are not supported by the JIT runner")
                argtypes.append(ct)
                v = r.convert_arg(p, a)
                cargs.append(v - (1 << p.type.bits) if p.type.bits > 1 and v >> (p.type.bits - 1) else v)
            elif isinstance(p.type, PtrType):
                ptr = r.convert_arg(p, a)
                argtypes.append(ctypes.c_void_p)
                cargs.append(ptr.region.data.ctypes.data + ptr.offset)
        rt = f.ret_type
        restype = ctypes_of.get(rt.bits) if isinstance(rt, IntType) else None
        fn = jit.cfunc(function, restype, *argtypes)
        value = fn(*cargs)
        self._jit = jit  # keep the code alive with the module
        if isinstance(rt, IntType) and value is not None:
            value = int(value) & ((1 << rt.bits) - 1)
        return RunResult(value, r.memory(), None, 0)


def _asm_in_subprocess(ir_text: str) -> str:
    """LLVM's own AMX passes on the ``.internal`` form, in a child process: when LLVM cannot allocate the
    tiles it reports a fatal error and exits, which must not take this process with it."""
    import subprocess
    import sys
    code = ("import sys; from systolic.amx.jit import emit_asm; "
            "sys.stdout.write(emit_asm(sys.stdin.read()))")
    r = subprocess.run([sys.executable, "-c", code], input=ir_text, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or ["LLVM failed"])[-1]
        raise CompileError(f"LLVM could not compile the .internal form: {msg}",
                           rule="LLVM's X86 AMX passes (X86PreTileConfig / tile register allocation)",
                           values={"exit_status": r.returncode})
    return r.stdout


def compile_module(module: Module) -> CompiledModule:
    """Compile a parsed (or traced) module."""
    return CompiledModule(module)


def compile_ir(text: str, source: str | None = None) -> CompiledModule:
    """Parse LLVM IR text with LLVM (any module LLVM accepts) and compile it. Functions using what systolic does
    not model are refused one by one (``mod.source.refused``); the others compile."""
    mod = CompiledModule(parse(text, source))
    mod.llvm_ir = text
    return mod


def compile_c(source: str, *, opt: str = "-O2", flags=(), language: str = "c", debug: bool = False,
              filename: str | None = None, source_dir=None) -> CompiledModule:
    """Compile C (``language="c"``) or C++ (``"c++"``) written with clang's AMX API (``__tile1024i``,
    ``__tile_loadd``, ``__tile_dpbssd``...; the seed's programming model) through clang and the tile compiler.

    ``opt``: ``-O0`` .. ``-O3``; ``flags``: more clang flags (a list or one string; ``-O*``/``-g`` among them
    win); ``debug``: ``-g``. See :mod:`.c_frontend` for what is added (all AMX features, no vectorization) and
    how ``-O0`` output is brought to SSA first. clang's errors are ``SourceCompileError`` with file:line:col.
    """
    from .c_frontend import compile_c_to_ir
    from .llvm_reader import read_module
    ref, text = compile_c_to_ir(source, opt=opt, flags=flags, language=language, debug=debug,
                                filename=filename, source_dir=source_dir)
    mod = CompiledModule(read_module(ref, text, filename))
    mod.llvm_ir = text
    return mod
