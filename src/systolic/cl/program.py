"""Building a program: OpenCL C (or LLVM IR text) -> spir64 LLVM IR -> a decoded module (issue 21 items 1, 2).

OpenCL C goes through :func:`systolic.llvmir.clang.compile_source` with the platform's prelude
(:mod:`systolic.cl.prelude`) as ``-include``; the IR is read by LLVM's own parser
(:func:`systolic.llvmir.module.parse`). Build options follow ``clBuildProgram``: ``-D NAME[=V]``, ``-I DIR``,
``-cl-std=CLx.y`` and other clang flags (``-cl-fast-relaxed-math`` ...) pass to clang.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from pathlib import Path

import numpy as np

from ..errors import InvalidValue, SourceCompileError, UnsupportedOperation
from ..llvmir import facts as F
from . import irtypes as IT
from .interp import Decoded, const_from_text
from .prelude import prelude

__all__ = ["compile_cl", "BuiltModule", "KernelInfo", "split_options"]


def split_options(options) -> tuple[dict, list[str], list[str]]:
    """clBuildProgram options (a string or a list) -> (defines, include dirs, other flags)."""
    if options is None:
        return {}, [], []
    if isinstance(options, str):
        toks = shlex.split(options)
    elif isinstance(options, (list, tuple)) and all(isinstance(o, str) for o in options):
        toks = [t for o in options for t in shlex.split(o)]
    else:
        raise InvalidValue("build options are a string or a list of strings", rule="Program.build(options=...)",
                           values={"options": repr(options)[:80]})
    defines, incs, flags = {}, [], []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t in ("-D", "-I") and i + 1 < len(toks):
            t = t + toks[i + 1]
            i += 1
        if t.startswith("-D"):
            name, eq, val = t[2:].partition("=")
            defines[name] = val if eq else None
        elif t.startswith("-I"):
            incs.append(t[2:])
        else:
            flags.append(t)
        i += 1
    return defines, incs, flags


_PRELUDE_FILES: dict[str, str] = {}


def prelude_file(platform: str) -> str:
    p = _PRELUDE_FILES.get(platform)
    if p is None or not os.path.exists(p):
        d = Path(tempfile.gettempdir()) / f"systolic-cl-{os.getuid() if hasattr(os, 'getuid') else 0}"
        d.mkdir(exist_ok=True)
        text = prelude(platform)
        p = str(d / f"prelude-{platform}-{abs(hash(text)) % 10**12}.h")
        if not os.path.exists(p):
            tmp = p + f".{os.getpid()}"
            Path(tmp).write_text(text)
            os.replace(tmp, p)
        _PRELUDE_FILES[platform] = p
    return p


def compile_cl(source: str, platform, options=None, *, filename: str = "kernel.cl", source_dir=None) -> str:
    """OpenCL C source -> LLVM IR text (clang, spir64, -O2, our prelude)."""
    from ..llvmir.clang import compile_source
    defines, incs, flags = split_options(options)
    try:
        return compile_source(source, language="cl", filename=filename, source_dir=source_dir, opt="-O2",
                              defines=defines, include_dirs=incs, include_files=[prelude_file(platform.name)],
                              flags=flags)
    except SourceCompileError as e:
        _platform_lacks(e, platform)
        raise


def _platform_lacks(e: SourceCompileError, platform) -> None:
    """An undeclared intel_* built-in that exists on another platform: say so (issue 21 item 8)."""
    from ..opencl import table as TB
    from .blockio2d import FUNCTIONS
    from .availability import unsupported_on
    for d in getattr(e, "diagnostics", []):
        m = re.search(r"(?:undeclared function|undeclared identifier) '(intel_\w+)'", d.message)
        if m and (m[1] in TB.NAMES or m[1] in FUNCTIONS):
            err = unsupported_on(m[1], platform)
            err.values["location"] = f"{d.file}:{d.line}:{d.column}"
            raise err from None


SPIRV_MAGIC = b"\x03\x02\x23\x07"


def spirv_to_ir(data: bytes) -> str:
    """A SPIR-V module -> LLVM IR text, through a SPIR-V-to-LLVM translator (``llvm-spirv -r``; the
    ``SYSTOLIC_LLVM_SPIRV`` variable names one). None installed: BackendUnavailable saying what to install."""
    import shutil
    import subprocess
    from ..errors import BackendUnavailable
    if data[:4] != SPIRV_MAGIC:
        raise InvalidValue("not a SPIR-V module (magic number 0x07230203, little-endian)",
                           rule="SPIR-V 2.3: the first word is the magic number", values={"first_bytes": data[:4].hex()})
    exe = os.environ.get("SYSTOLIC_LLVM_SPIRV") or shutil.which("llvm-spirv")
    if not exe:
        raise BackendUnavailable(
            "reading SPIR-V needs a SPIR-V-to-LLVM translator: install llvm-spirv (Khronos SPIRV-LLVM-Translator "
            "matching LLVM 22, or `pip install dpcpp-llvm-spirv`, Intel's build under its own licence) and put "
            "it on PATH or set SYSTOLIC_LLVM_SPIRV; or give the OpenCL C source / LLVM IR instead",
            rule="systolic.cl reads SPIR-V only through llvm-spirv -r", values={"searched": "SYSTOLIC_LLVM_SPIRV, PATH"})
    import llvmlite.binding as llvm
    with tempfile.TemporaryDirectory(prefix="systolic-spv-") as tmp:
        spv, bc = Path(tmp) / "in.spv", Path(tmp) / "out.bc"
        spv.write_bytes(data)
        proc = subprocess.run([exe, "-r", str(spv), "-o", str(bc)], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0 or not bc.exists():
            raise InvalidValue(f"llvm-spirv -r refused the module: {proc.stderr.strip()[:300]}",
                               rule="SPIR-V to LLVM translation", values={"translator": exe})
        try:
            return str(llvm.parse_bitcode(bc.read_bytes()))
        except RuntimeError as e:
            raise InvalidValue(f"LLVM {'.'.join(map(str, llvm.llvm_version_info))} cannot read the translator's "
                               f"bitcode: {e}", rule="the translator's LLVM must not be newer than llvmlite's",
                               values={"translator": exe}) from None


class KernelInfo:
    """A kernel of the module: its parameters and attributes."""

    def __init__(self, module, fn) -> None:
        self.name = fn.name
        self.params = [str(a.type) for a in fn.arguments]
        md = F.function_metadata(module, fn)
        self.metadata = md
        self.reqd_work_group_size = tuple(int(x) for x in md["reqd_work_group_size"]) \
            if "reqd_work_group_size" in md else None
        sg = md.get("intel_reqd_sub_group_size")
        self.reqd_sub_group_size = int(sg[0]) if sg else None
        self.arg_types = [str(x).strip('"') for x in md.get("kernel_arg_type", [])]
        self.arg_names = [str(x).strip('"') for x in md.get("kernel_arg_name", [])]


class BuiltModule:
    """A parsed, decoded module and its kernels."""

    def __init__(self, ir_text: str, name: str = "kernel") -> None:
        from ..llvmir.module import parse
        self.ir = ir_text
        self.module = parse(ir_text, name=name)
        self.decoded = Decoded(self.module)
        self.kernels: dict[str, KernelInfo] = {}
        for fn in self.module.functions:
            if fn.is_declaration or fn.name.startswith("__clang_ocl_kern_imp_"):
                continue
            head = str(fn).split("{", 1)[0]
            if re.search(r"\bspir_kernel\b", head):
                self.kernels[fn.name] = KernelInfo(self.module, fn)
        self._global_cache: dict[str, np.ndarray] = {}

    def global_bytes(self, name, g, gtype: str, size: int) -> np.ndarray:
        """The initial bytes of a module-scope variable (a fresh copy per launch for writable ones)."""
        cached = self._global_cache.get(name)
        if cached is None:
            cached = self._global_cache[name] = _initializer(str(g), gtype, size)
        return cached.copy()


def _initializer(text: str, gtype: str, size: int) -> np.ndarray:
    m = re.search(r"\b(?:constant|global)\s+", text)
    rest = text[m.end():] if m else ""
    if rest.startswith(gtype):
        rest = rest[len(gtype):].strip()
    init = IT.split_top(rest)[0].strip() if rest else "zeroinitializer"
    out = np.zeros(size, np.uint8)
    if init in ("zeroinitializer", "undef", "poison", ""):
        return out
    return _const_bytes(gtype, init, out, 0)


def _const_bytes(t: str, init: str, out, off):
    t = t.strip()
    init = init.strip()
    if init in ("zeroinitializer", "undef", "poison"):
        return out
    if init.startswith('c"'):
        s = init[2:-1]
        b = re.sub(r"\\([0-9A-Fa-f]{2})", lambda mm: chr(int(mm[1], 16)), s).encode("latin-1")
        out[off:off + len(b)] = np.frombuffer(b, np.uint8)
        return out
    if t.startswith("["):
        et = IT.element_type(t)
        es = IT.alloc_size(et)
        body = init.strip()[1:-1]
        for k, part in enumerate(IT.split_top(body)):
            sub_t, _, sub_init = part.partition(" ") if not part.startswith(("[", "<", "{")) else (et, "", part)
            if part.startswith(et):
                sub_init = part[len(et):].strip()
            _const_bytes(et, sub_init, out, off + k * es)
        return out
    try:
        v = IT.vtype(t)
    except UnsupportedOperation:
        raise UnsupportedOperation(f"a global initializer of type {t} is not modelled",
                                   rule="systolic.cl: arrays of scalars, strings and zeroinitializer") from None
    val = np.asarray(const_from_text(f"{t} {init}", v), dtype=v.dtype if v.bits != 1 else np.uint8)
    raw = np.ascontiguousarray(val).view(np.uint8).reshape(-1)
    out[off:off + raw.size] = raw
    return out
