"""The pass protocol and the compiler's pipeline: each pass runs per function, the verifier runs after every
pass, and the module's text after any pass can be kept (``--print-after``).

A pass is an *analysis* (it computes a result and leaves the function as it was) or a *rewrite* (it changes
the function, possibly using the result of the analysis before it, which it finds in ``f.meta``). Shape
propagation and register allocation are each split that way:

    verify           analysis  cfg.verify_ssa              every use dominated by its definition
    shape-analysis   analysis  shapes.analyze              a shape for every tile value (errors here)
    shapes           rewrite   shapes.rewrite              LLVM's final form: x86_amx, .internal, casts gone
    lower            rewrite   lower.lower + lower.dce     pseudo tile instructions with shape operands
    tileconfig       rewrite   tileconfig.place_config     config slot, ldtilecfg points, tilerelease
    assign           rewrite   regalloc.assign_registers   phi copies, TMUL ties, spill code; tile -> register
    regalloc         rewrite   regalloc.apply              physical tiles, copies through the slot, config stores
    config-prune     rewrite   tileconfig.prune_config     drop the ldtilecfg no tile instruction runs under

(``assign`` is not a pure analysis: the spill code it needs is part of finding an assignment, as in LLVM's
register allocators; the assignment itself goes to ``f.meta["allocation"]`` for ``regalloc``.)

The verifier after each pass checks SSA dominance and what must hold from that point on (``verify``).
A failure is a :class:`~systolic.errors.CompileError` naming the pass: a compiler bug, never the input's fault
(input errors are raised by the passes themselves). A pass that raises
:class:`~systolic.errors.UnmodelledConstruct` refuses that function only (``module.refused``, as the reader
does); the others go on through the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from ..errors import CompileError, UnmodelledConstruct
from .ir import Function, Instr, Module, location

__all__ = ["Pass", "FunctionPass", "PIPELINE", "PASS_NAMES", "run_pipeline", "verify", "refuse"]


class Pass(Protocol):
    """What the pipeline needs of a pass."""

    name: str
    kind: str  # "analysis" | "rewrite"

    def run(self, module: Module, f: Function) -> object: ...


@dataclass(frozen=True)
class FunctionPass:
    """A pass made of a function ``run(module, f)``; ``doc`` is its one-line description."""

    name: str
    kind: str
    run: Callable[[Module, Function], object]
    doc: str


def _verify_ssa(m, f):
    from .cfg import verify_ssa
    verify_ssa(f)


def _shape_analysis(m, f):
    from . import shapes
    f.meta["shape_analysis"] = shapes.analyze(m, f)
    return f.meta["shape_analysis"]


def _shapes(m, f):
    from . import shapes
    return shapes.rewrite(m, f, f.meta.pop("shape_analysis"))


def _lower(m, f):
    from . import lower
    lower.lower(m, f)
    lower.dce(f)


def _tileconfig(m, f):
    from . import tileconfig
    return tileconfig.place_config(m, f)


def _assign(m, f):
    from . import regalloc
    return regalloc.assign_registers(m, f)


def _regalloc(m, f):
    from . import regalloc
    return regalloc.apply(m, f)


def _prune(m, f):
    from . import tileconfig
    return tileconfig.prune_config(m, f)


PIPELINE: tuple[FunctionPass, ...] = (
    FunctionPass("verify", "analysis", _verify_ssa, "every use dominated by its definition"),
    FunctionPass("shape-analysis", "analysis", _shape_analysis, "a (rows, colsb) for every tile value"),
    FunctionPass("shapes", "rewrite", _shapes, "LLVM's final form: x86_amx values, .internal intrinsics"),
    FunctionPass("lower", "rewrite", _lower, "pseudo tile instructions with shape operands"),
    FunctionPass("tileconfig", "rewrite", _tileconfig, "config slot, ldtilecfg points, tilerelease"),
    FunctionPass("assign", "rewrite", _assign, "phi copies, TMUL ties, spill code; virtual tile -> register"),
    FunctionPass("regalloc", "rewrite", _regalloc, "physical tiles, tile copies, shapes into the config"),
    FunctionPass("config-prune", "rewrite", _prune, "no ldtilecfg that no tile instruction runs under"),
)
PASS_NAMES = tuple(p.name for p in PIPELINE)


# ------------------------------------------------------------------------------ the verifier
def _fail(after: str, what: str, ins: Instr | None = None, f: Function | None = None) -> CompileError:
    return CompileError(f"verifier after {after}: {what}", location=location(ins) if ins is not None else
                        (f"@{f.name}" if f is not None else None),
                        rule="passes.verify: the invariants that hold after each pass")


def verify(module: Module, f: Function, after: str) -> None:
    """Check ``f`` after pass ``after``: SSA dominance, then what that pass and every earlier one guarantee."""
    from .cfg import verify_ssa
    from .lower import is_pseudo
    from .shapes import CASTS, classify
    stage = PASS_NAMES.index(after)
    if after != "assign":  # while allocating, phi variables are written by several copies (not SSA)
        try:
            verify_ssa(f)
        except CompileError as e:
            raise _fail(after, str(e), f=f) from None
    instrs = list(f.instructions())
    if stage >= PASS_NAMES.index("shapes") and stage < PASS_NAMES.index("lower"):
        shapes = f.meta.get("shapes", {})
        for ins in instrs:
            if str(ins.type) == "x86_amx" and id(ins) not in shapes:
                raise _fail(after, f"tile value %{ins.name} has no shape", ins)
            if ins.opcode == "call" and ins.intrinsic in CASTS:
                raise _fail(after, "a tile/vector cast is left", ins)
    if stage >= PASS_NAMES.index("lower"):
        for ins in instrs:
            if ins.opcode == "call" and classify(ins) is not None:
                raise _fail(after, f"tile intrinsic @{ins.intrinsic} not lowered", ins)
    if PASS_NAMES.index("tileconfig") <= stage < PASS_NAMES.index("regalloc"):
        from .cfg import Dominance
        dom = Dominance(f)
        points = [i for i in instrs if i.opcode == "PLDTILECFGV"]
        for ins in instrs:
            if is_pseudo(ins.opcode) and not any(dom.dominates(p, ins) for p in points):
                raise _fail(after, f"{ins.opcode} runs with no ldtilecfg before it", ins)
    if stage >= PASS_NAMES.index("regalloc"):
        for ins in instrs:
            if is_pseudo(ins.opcode) or ins.opcode in ("TILECOPY", "PLDTILECFGV"):
                raise _fail(after, f"{ins.opcode} left after register allocation", ins)
            if any(not 0 <= t < 8 for t in ins.attrs.get("tiles", [])):
                raise _fail(after, f"tile register out of range in {ins.opcode}", ins)
    if stage >= PASS_NAMES.index("config-prune") and f.meta.get("machine"):
        _verify_configured(f, after)


def _verify_configured(f: Function, after: str) -> None:
    """Every tile instruction runs under a configuration: on every path back from it an LDTILECFG comes before
    a call or the function's entry."""
    from .tileconfig import _ends_config, _is_tile_machine_op
    preds = f.predecessors()
    for b in f.blocks:
        for k, ins in enumerate(b.instrs):
            if not _is_tile_machine_op(ins):
                continue
            work, seen = [(b, k)], set()
            while work:
                blk, idx = work.pop()
                for prev in reversed(blk.instrs[:idx]):
                    if prev.opcode == "LDTILECFG":
                        break
                    if _ends_config(prev) and prev.opcode != "ret":
                        raise _fail(after, f"{ins.opcode} may run after a call with no ldtilecfg between", ins)
                else:
                    if blk is f.entry:
                        raise _fail(after, f"{ins.opcode} may run before any ldtilecfg", ins)
                    for p in preds[blk]:
                        if id(p) not in seen:
                            seen.add(id(p))
                            work.append((p, len(p.instrs)))


# ------------------------------------------------------------------------------ running
def refuse(module: Module, f: Function, err: UnmodelledConstruct) -> None:
    """A pass met a construct systolic does not model: ``f`` becomes a declaration that raises ``err`` when
    called (``module.refused``, as the reader does), and the module's other functions still compile."""
    f.blocks = []
    f.declaration = True
    f.refused = err
    module.refused[f.name] = err


def run_pipeline(module: Module, passes=PIPELINE, *, snapshots: bool = True, check: bool = True,
                 on_pass: Callable[[str, Module], None] | None = None) -> dict[str, str]:
    """Run ``passes`` over every defined function of ``module`` (in place), the verifier after each (``check``).
    Returns the printed module after each pass (``snapshots``); ``on_pass(name, module)`` is called after each
    pass too (the compiler keeps a copy of the module after ``shapes`` that way)."""
    from .printer import print_module
    out: dict[str, str] = {}
    for p in passes:
        for f in [f for f in module.functions.values() if not f.declaration]:
            try:
                p.run(module, f)
            except UnmodelledConstruct as err:
                refuse(module, f, err)
                continue
            if check:
                verify(module, f, p.name)
        if snapshots:
            out[p.name] = print_module(module)
        if on_pass is not None:
            on_pass(p.name, module)
    return out
