"""Run LLVM's own AMX code-generation tests through the tile compiler and compare with LLVM's CHECK lines.

    python tools/llvm_amx_corpus.py /path/to/llvm-project             # table on stdout (markdown)
    python tools/llvm_amx_corpus.py /path/to/llvm-project --json out.json

Reads every ``llvm/test/CodeGen/X86/AMX/*.ll`` of a local llvm-project checkout (the commit of each file comes
from ``git log`` when the checkout is a git work tree, else from a ``COMMITS`` file next to the tests: lines
``name.ll <sha>``). Each file is compiled with :func:`systolic.compiler.compile_ir`; for every function the
script counts, in our machine program and in the check lines of the file's first RUN line (its FileCheck
prefix, default ``CHECK``):

* ``ldtilecfg``: configuration loads (asm ``ldtilecfg``, MIR ``PLDTILECFGV``);
* ``shapes``: tile shapes written into the config slot (rows-byte stores: asm ``movb`` to the stack other than
  the palette byte, MIR ``MOV8m* %stack.0`` at offsets 48-63);
* ``spills``: tile stores to a spill slot (asm ``tilestored ... Folded Spill``, MIR ``TILESTORED %stack``) that
  are not half of a tile copy; ``reloads`` likewise (``tileloadd ... Folded Reload``);
* ``copies``: tile register copies (LLVM lowers ``COPY`` of a tile into a spill-slot store of one register
  immediately followed by a reload into another one (X86LowerTileCopy); MIR ``:tile = COPY``).

Tests whose first RUN line is not ``llc`` (``opt`` passes: LLVM's counts do not apply), ``llc -O0`` (the fast
register allocator spills every tile) and ``not llc`` (LLVM refuses the file) are marked so. A function
"equals or beats" LLVM when its ldtilecfg, spill and copy counts are each at most LLVM's.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

CORPUS = Path("llvm/test/CodeGen/X86/AMX")
KEYS = ("ldtilecfg", "shapes", "spills", "reloads", "copies")
COMPARED = ("ldtilecfg", "spills", "copies")


@dataclass
class FileResult:
    name: str
    commit: str
    run: str                      # llc | llc-O0 | llc-mir | not-llc | opt | none
    accepted: bool
    reason: str = ""
    ours: dict = field(default_factory=dict)      # function -> counts
    llvm: dict = field(default_factory=dict)      # function -> counts (from CHECK lines)


# ------------------------------------------------------------------------------ LLVM's side: CHECK lines
def _first_run(text: str) -> tuple[str, str]:
    """(kind, prefix) of the file's first RUN line."""
    for line in text.splitlines():
        m = re.match(r"\s*;\s*RUN:\s*(.*)", line)
        if not m:
            continue
        cmd = m.group(1)
        pm = re.search(r"-?-check-prefix(?:es)?[= ]([\w-]+)", cmd)
        prefix = pm.group(1) if pm else "CHECK"
        if re.match(r"not\s+llc\b", cmd):
            return "not-llc", prefix
        if re.match(r"llc\b", cmd):
            if re.search(r"\s-O0\b", cmd):
                return "llc-O0", prefix
            if "-stop-before" in cmd or "-stop-after" in cmd:
                return "llc-mir", prefix
            return "llc", prefix
        return cmd.split()[0] if cmd.split() else "none", prefix
    return "none", "CHECK"


def _check_blocks(text: str, prefix: str) -> dict[str, list[str]]:
    """Function name -> the pattern text of its check lines (``PREFIX-LABEL`` starts a function)."""
    blocks: dict[str, list[str]] = {}
    cur = None
    pat = re.compile(rf"^\s*;\s*{re.escape(prefix)}(-[A-Z]+)?:\s?(.*)$")
    for line in text.splitlines():
        m = pat.match(line)
        if not m:
            continue
        kind, body = m.group(1) or "", m.group(2)
        if kind == "-LABEL":
            lm = re.match(r"(?:name:\s*)?([\w.$]+):?", body.strip())
            cur = lm.group(1) if lm else body.strip()
            blocks[cur] = []
            continue
        if cur is not None:
            blocks[cur].append(body)
    return blocks


def _count_asm(lines: list[str]) -> dict:
    c = dict.fromkeys(KEYS, 0)
    tile = [ln for ln in lines if re.search(r"\b(tileloadd|tilestored|tilezero|tdp\w+|ldtilecfg)\b", ln)]
    for ln in lines:
        s = ln.strip()
        if re.match(r"ldtilecfg\b", s):
            c["ldtilecfg"] += 1
        if re.match(r"movb\s+[^,]+,\s*[-+{}\[\]0-9]*\(%r[sb]p\)", s) and not s.startswith("movb $1,"):
            c["shapes"] += 1
    k = 0
    while k < len(tile):
        s = tile[k]
        spill = re.search(r"tilestored\s+%(tmm\d)\b.*Folded Spill", s)
        if spill and k + 1 < len(tile):
            nxt = re.search(r"tileloadd\s+.*%(tmm\d)\s*#.*Folded Reload", tile[k + 1])
            if nxt and nxt.group(1) != spill.group(1):
                c["copies"] += 1
                k += 2
                continue
        if spill:
            c["spills"] += 1
        elif re.search(r"tileloadd\b.*Folded Reload", s):
            c["reloads"] += 1
        k += 1
    return c


def _count_mir(lines: list[str]) -> dict:
    c = dict.fromkeys(KEYS, 0)
    rows = set()
    for ln in lines:
        if re.search(r"\bPLDTILECFGV\b|\bLDTILECFG\b", ln):
            c["ldtilecfg"] += 1
        m = re.search(r"MOV8m[ri]\s+%stack\.0,\s*1,\s*\$noreg,\s*(\d+),", ln)
        if m and 48 <= int(m.group(1)) < 64:
            rows.add(int(m.group(1)))
        if re.search(r"\bTILESTORED\s+%stack", ln):
            c["spills"] += 1
        if re.search(r"=\s*TILELOADD\s+%stack", ln):
            c["reloads"] += 1
        if re.search(r":tile\s*=\s*COPY\b", ln):
            c["copies"] += 1
    c["shapes"] = len(rows)
    return c


def llvm_counts(text: str) -> tuple[str, dict]:
    kind, prefix = _first_run(text)
    if kind not in ("llc", "llc-O0", "llc-mir"):
        return kind, {}
    count = _count_mir if kind == "llc-mir" else _count_asm
    return kind, {fn: count(lines) for fn, lines in _check_blocks(text, prefix).items()}


# ------------------------------------------------------------------------------ our side
def our_counts(text: str, source: str) -> dict:
    """Function -> counts of our machine program (raises what the compiler raises)."""
    from systolic.compiler import compile_ir
    mod = compile_ir(text, source=source)
    out = {}
    for f in mod.machine.functions.values():
        if f.declaration:
            continue
        c = dict.fromkeys(KEYS, 0)
        for ins in f.instructions():
            a = ins.attrs
            if ins.opcode == "LDTILECFG":
                c["ldtilecfg"] += 1
            elif ins.opcode == "store" and a.get("cfg") == "rows":
                c["shapes"] += 1
            elif ins.opcode == "TILESTORED" and a.get("copy"):
                c["copies"] += 1
            elif ins.opcode == "TILESTORED" and a.get("spill"):
                c["spills"] += 1
            elif ins.opcode in ("TILELOADD", "TILELOADDT1") and a.get("spill"):
                c["reloads"] += 1
        out[f.name] = c
    return out


def _commit_of(root: Path, path: Path) -> str:
    try:
        r = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%H", "--", str(path.relative_to(root))],
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    commits = path.parent / "COMMITS"
    if commits.exists():
        for line in commits.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == path.name:
                return parts[1]
    return "unknown"


def run_corpus(root: Path) -> list[FileResult]:
    results = []
    for path in sorted((root / CORPUS).glob("*.ll")):
        text = path.read_text()
        kind, llvm = llvm_counts(text)
        r = FileResult(path.name, _commit_of(root, path), kind, accepted=True, llvm=llvm)
        try:
            r.ours = our_counts(text, path.name)
        except Exception as exc:  # the table records every refusal with its reason
            r.accepted = False
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            r.reason = f"{type(exc).__name__}: {first}"[:160]
        results.append(r)
    return results


# ------------------------------------------------------------------------------ summary and table
def verdict(ours: dict, llvm: dict) -> str | None:
    """'beats', 'equal', 'worse' on ldtilecfg/spills/copies, or None without LLVM counts."""
    if not llvm:
        return None
    diffs = [ours[k] - llvm[k] for k in COMPARED]
    if any(d > 0 for d in diffs):
        return "worse"
    return "beats" if any(d < 0 for d in diffs) else "equal"


def summary(results: list[FileResult]) -> dict:
    s = {"files": len(results), "accepted": sum(r.accepted for r in results),
         "refused": {r.name: r.reason for r in results if not r.accepted},
         "functions_compared": 0, "equal": 0, "beats": 0, "worse": []}
    for r in results:
        for fn, c in r.ours.items():
            v = verdict(c, r.llvm.get(fn, {})) if r.run in ("llc", "llc-mir") else None
            if v is None:
                continue
            s["functions_compared"] += 1
            if v == "worse":
                s["worse"].append(f"{r.name}:{fn}")
            else:
                s[v] += 1
    return s


def _cell(c: dict) -> str:
    return "/".join(str(c[k]) for k in KEYS)


def markdown(results: list[FileResult]) -> str:
    lines = ["| file | commit | LLVM run | ours | per function: ours vs LLVM (ldtilecfg/shapes/spills/reloads/copies) |",
             "|------|--------|----------|------|------|"]
    for r in results:
        status = "accepted" if r.accepted else f"refused: {r.reason}".replace("|", "\\|")
        per = []
        for fn, c in r.ours.items():
            lc = r.llvm.get(fn)
            if lc is None or r.run not in ("llc", "llc-O0", "llc-mir"):
                per.append(f"`{fn}` {_cell(c)}")
            else:
                v = verdict(c, lc) if r.run != "llc-O0" else "vs -O0"
                per.append(f"`{fn}` {_cell(c)} vs {_cell(lc)} ({v})")
        if not r.accepted and r.llvm:
            per = [f"`{fn}` LLVM {_cell(lc)}" for fn, lc in r.llvm.items()]
        lines.append(f"| {r.name} | {r.commit[:12]} | {r.run} | {status} | {'; '.join(per) or '-'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("llvm_project", type=Path, help="a local llvm-project checkout (its root)")
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = ap.parse_args(argv)
    if not (args.llvm_project / CORPUS).is_dir():
        print(f"error: {args.llvm_project / CORPUS} is not a directory", file=sys.stderr)
        return 2
    results = run_corpus(args.llvm_project)
    sys.stdout.write(markdown(results))
    s = summary(results)
    sys.stdout.write("\n" + json.dumps(s, indent=1) + "\n")
    if args.json:
        args.json.write_text(json.dumps({"summary": s, "files": [asdict(r) for r in results]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
