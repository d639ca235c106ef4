"""clang as systolic's source front end: OpenCL C for ``spir64``, C and C++ for x86-64 with AMX.

Which clang (REFERENCE.md section 8, "Compiling"):

1. ``SYSTOLIC_CLANG`` (a path or a command line, e.g. ``/usr/bin/clang-22``);
2. ``clang`` on ``PATH``;
3. the ``ziglang`` wheel (``pip install 'systolic[clang]'``), run as ``python -m ziglang clang``.

The wheel ships clang's builtin headers (``amxintrin.h``, ``opencl-c-base.h``...) under ``ziglang/lib/include``
but its driver does not find them by itself, so we pass ``-resource-dir``; it ships no ``opencl-c.h``, so OpenCL
sources are compiled with ``-fdeclare-opencl-builtins -cl-no-stdinc`` and the caller supplies a prelude of its
own (``include_files``) for everything that flag does not declare.

Every invocation is the clang *driver* with ``-S -emit-llvm``: the IR text it prints is what ``llvmir.module``
parses. clang's diagnostics come back as :class:`~systolic.errors.SourceCompileError` carrying each
``file:line:col``.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from systolic.errors import ClangUnavailable, Diagnostic, InvalidValue, SourceCompileError

__all__ = ["find_clang", "clang_version", "compile_source", "compile_file", "default_triple", "LANGUAGES"]

#: source language -> (clang ``-x`` name, default target triple, flags always passed)
LANGUAGES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # -fdeclare-opencl-builtins: clang's own table of OpenCL built-ins (work-item, math, convert_*, vload...)
    # stands in for the opencl-c.h the wheel lacks; -cl-no-stdinc keeps the driver from looking for it.
    "cl": ("cl", "spir64-unknown-unknown", ("-Xclang", "-fdeclare-opencl-builtins", "-cl-no-stdinc")),
    # The seed's AMX programming model: amxintrin.h's __tile1024i API needs the AMX target features.
    "c": ("c", "x86_64-unknown-linux-gnu", ("-mamx-tile", "-mamx-int8", "-mamx-bf16")),
    "c++": ("c++", "x86_64-unknown-linux-gnu", ("-mamx-tile", "-mamx-int8", "-mamx-bf16")),
}

_SUFFIX_LANGUAGE = {".cl": "cl", ".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++", ".C": "c++"}

_INSTALL_HINT = ("install one: pip install 'systolic[clang]' (the ziglang wheel bundles clang), "
                 "or put clang on PATH / set SYSTOLIC_CLANG to a clang binary")


def default_triple(language: str) -> str:
    return _language(language)[1]


def _language(language: str) -> tuple[str, str, tuple[str, ...]]:
    try:
        return LANGUAGES[language]
    except KeyError:
        raise InvalidValue(f"unknown source language {language!r}; one of {sorted(LANGUAGES)}",
                           rule="llvmir.clang: language", values={"language": language}) from None


@functools.cache
def _ziglang_dir() -> Path | None:
    try:
        import ziglang  # noqa: F401  (the optional 'clang' extra)
    except ImportError:
        return None
    return Path(ziglang.__file__).resolve().parent


def find_clang() -> list[str]:
    """The clang command line to run, as a list (see the module docstring for the order searched).

    Raises :class:`ClangUnavailable` naming both ways to get a clang.
    """
    env = os.environ.get("SYSTOLIC_CLANG", "").strip()
    if env:
        cmd = shlex.split(env)
        if shutil.which(cmd[0]) is None:
            raise ClangUnavailable(f"SYSTOLIC_CLANG={env!r} does not name a program that exists; " + _INSTALL_HINT,
                                   rule="llvmir.clang: SYSTOLIC_CLANG", values={"SYSTOLIC_CLANG": env})
        return cmd
    on_path = shutil.which("clang")
    if on_path:
        return [on_path]
    if _ziglang_dir() is not None:
        return [sys.executable, "-m", "ziglang", "clang"]
    raise ClangUnavailable("no clang found to compile the source; " + _INSTALL_HINT,
                           rule="llvmir.clang: find a clang")


def _is_ziglang(cmd: Sequence[str]) -> bool:
    return len(cmd) >= 3 and cmd[1:3] == ["-m", "ziglang"]


def _resource_flags(cmd: Sequence[str]) -> list[str]:
    # The wheel's driver reports a resource dir that does not exist; its builtin headers are in ziglang/lib.
    if _is_ziglang(cmd):
        zig = _ziglang_dir()
        if zig is not None and (zig / "lib" / "include").is_dir():
            return ["-resource-dir", str(zig / "lib")]
    return []


@functools.cache
def _version_of(cmd: tuple[str, ...]) -> str:
    out = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=120)
    first = (out.stdout or out.stderr).splitlines()[:1]
    return first[0].strip() if first else "unknown"


def clang_version() -> str:
    """The first line of ``clang --version`` of the clang :func:`find_clang` picks."""
    return _version_of(tuple(find_clang()))


# "file:line:col: error: message"; also "file:line: error:" (no column) and "clang: error: ..." (no location)
_DIAG = re.compile(r"^(?P<file>[^\n:]+?):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|warning|note): "
                   r"(?P<msg>.*)$")
_DIAG_NOLOC = re.compile(r"^(?P<file>clang(?:[-\w.]*)?): (?P<sev>fatal error|error|warning): (?P<msg>.*)$")


def parse_diagnostics(stderr: str, *, rename: Mapping[str, str] | None = None) -> list[Diagnostic]:
    """clang's stderr as Diagnostics (the caret/snippet lines are dropped). ``rename`` maps temporary file paths
    back to the names the user knows."""
    rename = dict(rename or {})
    out: list[Diagnostic] = []
    for line in stderr.splitlines():
        m = _DIAG.match(line)
        if m:
            f = rename.get(m["file"], m["file"])
            out.append(Diagnostic(f, int(m["line"]), int(m["col"] or 0), m["sev"], m["msg"]))
            continue
        m = _DIAG_NOLOC.match(line)
        if m:
            out.append(Diagnostic(m["file"], 0, 0, m["sev"], m["msg"]))
    return out


def _check_str_seq(name: str, value: object) -> list[str]:
    if isinstance(value, str):
        return shlex.split(value)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, (str, os.PathLike)) for v in value):
        raise InvalidValue(f"{name} must be a string or a list of strings", rule="llvmir.clang: arguments",
                           values={name: value})
    return [os.fspath(v) for v in value]


def compile_file(path: str | os.PathLike, *, language: str | None = None, triple: str | None = None,
                 opt: str = "-O2", debug: bool = False, flags: Sequence[str] | str = (),
                 defines: Mapping[str, object] | None = None, include_dirs: Sequence[str] = (),
                 include_files: Sequence[str] = (), display_name: str | None = None,
                 timeout: float = 300.0) -> str:
    """Compile one source file with clang and return the LLVM IR text (``-S -emit-llvm``).

    ``language`` is ``"cl"``, ``"c"`` or ``"c++"`` (default: from the suffix). ``opt`` is ``-O0`` .. ``-O3``
    (or ``-Os``/``-Oz``), ``debug`` adds ``-g``. ``defines`` become ``-DNAME[=VALUE]`` (a value of None:
    ``-DNAME``), ``include_dirs`` ``-I``, ``include_files`` ``-include`` (the OpenCL prelude goes here).
    ``flags`` (a list, or one string split like a shell) come last, so a user's ``-cl-std=CL2.0`` or
    ``--target=`` wins over the defaults.
    """
    path = Path(path)
    if language is None:
        language = _SUFFIX_LANGUAGE.get(path.suffix)
        if language is None:
            raise InvalidValue(f"cannot tell the source language of {path.name!r} from its suffix; pass language= "
                               f"(one of {sorted(LANGUAGES)})", rule="llvmir.clang: language",
                               values={"file": str(path)})
    xname, default_target, always = _language(language)
    if not re.fullmatch(r"-O[0-3sz]", opt or ""):
        raise InvalidValue(f"opt must be one of -O0 -O1 -O2 -O3 -Os -Oz, not {opt!r}", rule="llvmir.clang: opt",
                           values={"opt": opt})
    user = _check_str_seq("flags", flags)
    # every argument is checked before clang is looked for: bad input is InvalidValue on any machine
    if defines is not None and not isinstance(defines, Mapping):
        raise InvalidValue("defines must be a mapping of NAME -> value (None for a bare -DNAME)",
                           rule="llvmir.clang: defines", values={"defines": defines})
    extra = []
    for name, value in (defines or {}).items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise InvalidValue(f"a define's name must be a C identifier, not {name!r}",
                               rule="llvmir.clang: defines", values={"name": name})
        extra.append(f"-D{name}" if value is None else f"-D{name}={value}")
    for d in _check_str_seq("include_dirs", include_dirs):
        extra += ["-I", d]
    for f in _check_str_seq("include_files", include_files):
        extra += ["-include", f]
    cmd = find_clang()
    args = [*cmd, "-x", xname, *_resource_flags(cmd)]
    if not any(f.startswith("--target=") or f == "-target" for f in user):
        args.append(f"--target={triple or default_target}")
    args += list(always)
    if language == "cl" and not any(f.startswith("-cl-std=") for f in user):
        args.append("-cl-std=CL3.0")
    args.append(opt)
    if debug:
        args.append("-g")
    args += extra
    args += user
    with tempfile.TemporaryDirectory(prefix="systolic-clang-") as tmp:
        out_ll = Path(tmp) / "out.ll"
        args += ["-S", "-emit-llvm", "-o", str(out_ll), str(path)]
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SourceCompileError(f"clang did not finish compiling {display_name or path} within {timeout:g} s",
                                     diagnostics=[], rule="llvmir.clang: time limit",
                                     values={"timeout_s": timeout}) from None
        rename = {str(path): display_name} if display_name else {}
        diags = parse_diagnostics(proc.stderr, rename=rename)
        if proc.returncode != 0 or not out_ll.exists():
            errors = [d for d in diags if d.severity in ("error", "fatal error")]
            first = errors[0] if errors else None
            head = str(first) if first else (proc.stderr.strip().splitlines() or ["clang failed"])[-1]
            more = f" (and {len(errors) - 1} more error(s))" if len(errors) > 1 else ""
            raise SourceCompileError(f"clang refused the source: {head}{more}", diagnostics=diags,
                                     location=f"{first.file}:{first.line}:{first.column}" if first else None,
                                     rule="clang diagnostics", values={"clang": " ".join(cmd)})
        return out_ll.read_text()


def compile_source(source: str, *, language: str = "cl", filename: str | None = None,
                   source_dir: str | os.PathLike | None = None, **kwargs: object) -> str:
    """Compile source *text* with clang; see :func:`compile_file` for the keywords.

    ``filename`` is the name diagnostics show (default ``input.cl`` / ``input.c`` / ``input.cpp``);
    ``source_dir`` (e.g. the directory of the file the text came from) is searched for ``#include "..."``.
    """
    if not isinstance(source, str):
        raise InvalidValue("source must be a str of program text", rule="llvmir.clang: source",
                           values={"type": type(source).__name__})
    _language(language)
    suffix = {"cl": ".cl", "c": ".c", "c++": ".cpp"}[language]
    shown = filename or f"input{suffix}"
    with tempfile.TemporaryDirectory(prefix="systolic-src-") as tmp:
        src = Path(tmp) / Path(shown).name
        if src.suffix != suffix:
            src = src.with_name(src.name + suffix)
        src.write_text(source)
        dirs = list(_check_str_seq("include_dirs", kwargs.pop("include_dirs", ())))
        if source_dir is not None:
            dirs.insert(0, os.fspath(source_dir))
        return compile_file(src, language=language, display_name=shown, include_dirs=dirs, **kwargs)  # type: ignore[arg-type]
