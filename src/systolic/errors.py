"""The one exception hierarchy of systolic (DESIGN principle 5).

Every rule of the specs that a caller can break raises one of these. Each
exception carries the rule that fired (``rule``: a short name, and the manual
section it comes from where there is one) and the offending values
(``values``: a dict), and its message says both, so a user reading a traceback
knows which sentence of the manual their input contradicts.

    SystolicError
    +-- GeneralProtection      AMX #GP (e.g. LDTILECFG with a reserved byte set)
    +-- InvalidOpcode          AMX #UD (e.g. TDPBSSD with tiles not configured)
    +-- MemoryFault            an access outside a memory image (a #PF/#GP on silicon)
    +-- IllegalInstruction     a DPAS / vISA rule violation (IGC's verifier would reject it)
    +-- AsmSyntaxError         malformed assembly or IR text, with line and column
    +-- UnsupportedCombination a programming-model request the device cannot do
    +-- InvalidValue           a bad argument to a library function (shape, dtype, type name)
    +-- AmxUnavailable         the native AMX backend cannot run on this machine, and why
    +-- CompileError           the tile compiler cannot compile a program (e.g. shape unknown)
    +-- DivergentCollective    a group collective (joint_matrix_*, sub-group built-in) not reached by the
                               whole sub-group, or reached with non-uniform arguments
    +-- BackendUnavailable     an optional backend cannot run here (no CUDA device, no CuPy, driver too
                               old, no torch), and why
    +-- UnsupportedOperation   an operation the integration does not model (e.g. a torch op under emulate)
    +-- BackendUnavailable
        +-- ClangUnavailable   no clang to compile OpenCL C / C / C++ (systolic.llvmir.clang)
    +-- CompileError
        +-- SourceCompileError clang's diagnostics for a source file, each with file:line:col
    +-- AsmSyntaxError
        +-- IRVerifyError      LLVM's verifier refused a parsed module
    +-- InvalidValue
        +-- ProgramError       a file given to ``systolic run`` breaks the program-file protocol (docs/run.md)
    +-- CampaignError          a test-vector campaign directory that does not hold the campaign asked for
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = [
    "SystolicError",
    "GeneralProtection",
    "InvalidOpcode",
    "MemoryFault",
    "IllegalInstruction",
    "AsmSyntaxError",
    "UnsupportedCombination",
    "InvalidValue",
    "AmxUnavailable",
    "CompileError",
    "DivergentCollective",
    "BackendUnavailable",
    "UnsupportedOperation",
    "ProgramError",
    "ClangUnavailable",
    "Diagnostic",
    "SourceCompileError",
    "IRVerifyError",
    "UnmodelledConstruct",
    "CampaignError",
]


def _fmt_value(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 1 << 16:
        return hex(v)
    return repr(v)


class SystolicError(Exception):
    """Root of every error systolic raises on purpose.

    ``rule`` names the broken rule (and its source section), ``values`` holds
    the values that broke it. ``str(err)`` reads ``"<message> [rule: ...; a=1, b=2]"``.
    """

    #: short tag printed before the message, e.g. "#GP"
    tag: str = ""

    def __init__(self, message: str, *, rule: str | None = None,
                 values: Mapping[str, Any] | None = None) -> None:
        self.message = message
        self.rule = rule
        self.values = dict(values or {})
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.tag} {self.message}" if self.tag else self.message
        extra = []
        if self.rule:
            extra.append(f"rule: {self.rule}")
        if self.values:
            extra.append(", ".join(f"{k}={_fmt_value(v)}" for k, v in self.values.items()))
        return f"{head} [{'; '.join(extra)}]" if extra else head


class GeneralProtection(SystolicError):
    """AMX #GP: e.g. LDTILECFG with an unsupported palette or a reserved byte set (SDM vol. 2, LDTILECFG)."""

    tag = "#GP"


class InvalidOpcode(SystolicError):
    """AMX #UD: the instruction cannot execute in this state or on this CPU (SDM vol. 2, each TMUL page)."""

    tag = "#UD"


class MemoryFault(SystolicError):
    """An access outside the memory image given to an instruction.

    ``address`` is the first faulting byte address, ``row`` the tile row being
    transferred when it happened (None when not a tile transfer).
    """

    tag = "#PF"

    def __init__(self, message: str, *, address: int | None = None, row: int | None = None,
                 rule: str | None = None, values: Mapping[str, Any] | None = None) -> None:
        self.address = address
        self.row = row
        vals = dict(values or {})
        if address is not None:
            vals.setdefault("address", address)
        if row is not None:
            vals.setdefault("row", row)
        super().__init__(message, rule=rule, values=vals)


class IllegalInstruction(SystolicError):
    """A DPAS/DPASW or vISA instruction that breaks a rule of the vISA spec or IGC's verifier."""


class AsmSyntaxError(SystolicError):
    """Malformed assembly or IR text. ``line`` and ``column`` are 1-based."""

    def __init__(self, message: str, *, line: int, column: int, source: str | None = None,
                 rule: str | None = None, values: Mapping[str, Any] | None = None) -> None:
        self.line = line
        self.column = column
        self.source = source
        super().__init__(message, rule=rule, values=values)

    def _render(self) -> str:
        where = f"{self.source}:" if self.source else ""
        return f"{where}{self.line}:{self.column}: {super()._render()}"


class UnsupportedCombination(SystolicError):
    """A programming-model request (types, shape, layout) the target device cannot do."""


class InvalidValue(SystolicError, ValueError):
    """A bad argument to a library function: unknown type name, wrong shape or dtype, out-of-range value."""


class AmxUnavailable(SystolicError):
    """The native AMX backend cannot run here; the message says why (no AMX-TILE, no tile-data permission...)."""


class CompileError(SystolicError):
    """The tile compiler cannot compile the program; ``location`` says where (function, block, instruction)."""

    def __init__(self, message: str, *, location: str | None = None, rule: str | None = None,
                 values: Mapping[str, Any] | None = None) -> None:
        self.location = location
        super().__init__(message, rule=rule, values=values)

    def _render(self) -> str:
        base = super()._render()
        return f"{self.location}: {base}" if self.location else base


class DivergentCollective(SystolicError):
    """A group collective that the work-items of a sub-group did not reach together with the same arguments.

    SYCL (sycl_ext_oneapi_matrix, "all work-items of the group must call it with the same arguments") and the
    OpenCL sub-group built-ins (cl_khr_subgroups: "must be encountered by all work-items in a sub-group") make
    divergent or non-uniform use undefined; the emulator refuses it. ``values`` names the work-items and the call.
    """


class BackendUnavailable(SystolicError):
    """An optional backend (GPU via CuPy, PyTorch) cannot run here; the message says why and how to install."""


class UnsupportedOperation(SystolicError):
    """An operation, dtype or argument combination that an integration (e.g. ``systolic.torch``) does not model."""


class ProgramError(InvalidValue):
    """A file given to ``systolic run`` breaks the program-file protocol (docs/run.md); ``rule`` names the clause."""


class ClangUnavailable(BackendUnavailable):
    """No clang to compile OpenCL C / C / C++ with; the message names both ways to get one (the ``clang`` extra,
    or a clang on PATH / ``SYSTOLIC_CLANG``)."""


class Diagnostic:
    """One clang diagnostic: ``file:line:col: severity: message`` (1-based line and column; 0 where clang gave none)."""

    __slots__ = ("file", "line", "column", "severity", "message")

    def __init__(self, file: str, line: int, column: int, severity: str, message: str) -> None:
        self.file, self.line, self.column, self.severity, self.message = file, line, column, severity, message

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.severity}: {self.message}"

    def __repr__(self) -> str:
        return f"Diagnostic({str(self)!r})"


class SourceCompileError(CompileError):
    """clang refused a source file. ``diagnostics`` holds every error/warning clang printed, each with
    file:line:col; the message starts with the first error's location."""

    def __init__(self, message: str, *, diagnostics: "list[Diagnostic]", location: str | None = None,
                 rule: str | None = None, values: Mapping[str, Any] | None = None) -> None:
        self.diagnostics = list(diagnostics)
        super().__init__(message, location=location, rule=rule, values=values)


class IRVerifyError(AsmSyntaxError):
    """LLVM's verifier refused a module that parsed (e.g. an instruction that does not dominate its uses)."""


class UnmodelledConstruct(CompileError):
    """LLVM accepted the module, but a function uses a construct systolic does not model (inline asm, floating
    point, vector code, ...). ``values`` names the construct, the function and the IR line; the refusal is per
    function: the module's other functions still compile and run."""


class CampaignError(SystolicError):
    """A test-vector campaign directory that cannot be used as asked (another campaign's manifest, an unreadable
    manifest, a campaign not yet complete where a complete one is needed); ``values`` names the directory and field."""
