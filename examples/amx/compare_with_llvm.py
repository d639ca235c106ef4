"""Compare our tile allocation with LLVM's own AMX passes on the same programs (static instruction counts).

For each program: ``--emit asm`` (our allocation + config through the physical-register intrinsics) versus
``--emit asm-internal`` (LLVM's final form, LLVM doing ldtilecfg placement and tile allocation). Programs:
the examples here and N programs from the test suite's generator (tests/compiler/test_generated_programs.py).

    python examples/amx/compare_with_llvm.py [N] [SEED]
"""

import pathlib
import random
import re
import sys
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
warnings.filterwarnings("ignore")

from systolic.compiler import compile_ir, compile_module  # noqa: E402
from systolic.compiler.tracing import trace  # noqa: E402
from systolic.errors import CompileError  # noqa: E402


def counts(asm: str) -> tuple[int, int, int]:
    return tuple(len(re.findall(rf"\t{op}\b", asm)) for op in ("tileloadd", "tilestored", "ldtilecfg"))


def main(n: int = 40, seed: int = 0) -> None:
    mods = [(p.name, compile_ir(p.read_text())) for p in sorted((ROOT / "examples" / "amx").glob("*.ll"))]
    if n:
        from hypothesis import strategies as st  # noqa: F401  (the generator is a hypothesis strategy)
        from compiler.test_generated_programs import ABUF, CBUF, SCALARS, build, dim_args, helper, programs
        random.seed(seed)  # (hypothesis' example() draws its own samples: a sample, not a fixed set)
        for i in range(n):
            prog = programs().example()
            m = trace(helper, scalars={"o": "i32"}, buffers={"A": ABUF, "C": CBUF})
            m = trace(build(prog), scalars={**SCALARS, **{k: "i16" for k in dim_args(prog)}},
                      buffers={"A": ABUF, "C": CBUF}, module=m)
            mods.append((f"generated-{i}", compile_module(m)))
    ours, llvm, failed = [0, 0, 0], [0, 0, 0], []
    for name, mod in mods:
        a = counts(mod.emit("asm"))
        try:
            b = counts(mod.emit("asm-internal"))
        except CompileError as e:
            why = re.search(r"(ran out of registers|Failed to config[^\[]*|error: [^\[]*)", e.message)
            failed.append((name, why.group(1).strip() if why else e.message[:60]))
            continue
        ours = [x + y for x, y in zip(ours, a)]
        llvm = [x + y for x, y in zip(llvm, b)]
        if not name.startswith("generated"):
            print(f"{name:24s} ours (loads, stores, ldtilecfg) {a}   LLVM {b}")
    print(f"{len(mods)} programs, LLVM failed on {len(failed)}: {sorted({w for _, w in failed})}")
    print(f"where both compiled: ours {ours}, LLVM {llvm}; ratio ours/LLVM tile loads "
          f"{ours[0] / max(1, llvm[0]):.2f}, tile stores {ours[1] / max(1, llvm[1]):.2f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
