"""LLVM's own parser and verifier, through ``llvmlite.binding`` (REFERENCE.md section 8, "What llvmlite gives").

systolic reads every LLVM IR module - clang's output for OpenCL C and C, DPC++ device IR, LLVM's own tests - with
LLVM itself: no hand-written grammar for a language LLVM already parses. A module that LLVM refuses is an
:class:`~systolic.errors.AsmSyntaxError` carrying LLVM's line and column; one that parses but that the verifier
refuses is an :class:`~systolic.errors.IRVerifyError`.
"""

from __future__ import annotations

import re

import llvmlite
import llvmlite.binding as llvm

from systolic.errors import AsmSyntaxError, InvalidValue, IRVerifyError

__all__ = ["parse", "llvm_version", "llvmlite_version"]

# "<string>:2:50: error: use of undefined metadata '!3'"
_LOC = re.compile(r"<string>:(\d+):(\d+): (?:error: )?(.*)")


def llvm_version() -> tuple[int, int, int]:
    """The LLVM version llvmlite was built with (its IR must not be newer than this)."""
    return tuple(llvm.llvm_version_info)  # type: ignore[return-value]


def llvmlite_version() -> str:
    return llvmlite.__version__


_DEBUG_INFO_VERSION = '"Debug Info Version"'
_CHILD = "import sys, llvmlite.binding as b; b.parse_assembly(sys.stdin.read())"


def _parse_debug_info_module_in_child(ir_text: str, name: str) -> None:
    """A module carrying debug info is parsed in a child process first: while parsing, LLVM upgrades its debug
    info (``llvm::UpgradeDebugInfo``), which runs the verifier and *aborts the process* ("LLVM ERROR: Broken
    module found, compilation aborted!") when the module is broken in any way, e.g. an intrinsic called with the
    wrong signature. Such a module is an IRVerifyError here; any other outcome is left to the parse below."""
    import subprocess
    import sys
    try:
        r = subprocess.run([sys.executable, "-c", _CHILD], input=ir_text, capture_output=True, text=True,
                           timeout=300)
    except subprocess.TimeoutExpired:
        return
    if "LLVM ERROR" not in r.stderr and r.returncode >= 0 and r.returncode != 134:
        return
    lines = [ln.strip() for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("LLVM ERROR")]
    msg = lines[0] if lines else "Broken module found"
    raise IRVerifyError(f"LLVM's verifier refused the module: {msg}", line=0, column=0, source=name,
                        rule="LLVM IR verifier (run while LLVM upgrades the module's debug info)",
                        values={"at": lines[1][:160]} if len(lines) > 1 else None)


def parse(ir_text: str, *, name: str = "<ir>", verify: bool = True) -> "llvm.ModuleRef":
    """Parse LLVM IR text with LLVM's parser; with ``verify`` run LLVM's verifier too.

    ``name`` is the file name errors show. Errors: :class:`AsmSyntaxError` (parse, with LLVM's line:column and
    message), :class:`IRVerifyError` (the verifier's first complaint; line 0 when LLVM names no line).
    """
    if not isinstance(name, str):
        raise InvalidValue("name must be a str (the file name errors show)", rule="llvmir.parse: input",
                           values={"name": name})
    if not isinstance(ir_text, str):
        raise InvalidValue("LLVM IR must be given as text (str)", rule="llvmir.parse: input",
                           values={"type": type(ir_text).__name__})
    if _DEBUG_INFO_VERSION in ir_text:
        _parse_debug_info_module_in_child(ir_text, name)
    try:
        mod = llvm.parse_assembly(ir_text)
    except RuntimeError as exc:
        text = str(exc).removeprefix("LLVM IR parsing error").strip()
        m = _LOC.search(text)
        line, col, msg = (int(m[1]), int(m[2]), m[3].strip()) if m else (0, 0, text)
        snippet = ir_text.splitlines()[line - 1].strip() if 0 < line <= ir_text.count("\n") + 1 else ""
        raise AsmSyntaxError(f"LLVM cannot parse the IR: {msg}", line=line, column=col, source=name,
                             rule="LLVM LangRef (LLVM's own parser)",
                             values={"text": snippet[:120]} if snippet else None) from None
    mod.name = name
    if verify:
        try:
            mod.verify()
        except RuntimeError as exc:
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
            msg = lines[0] if lines else "verifier failed"
            where = lines[1] if len(lines) > 1 else ""
            raise IRVerifyError(f"LLVM's verifier refused the module: {msg}", line=0, column=0, source=name,
                                rule="LLVM IR verifier", values={"at": where[:160]} if where else None) from None
    return mod
