"""Imports point down the layers, and no new import cycle appears (DESIGN.md "layers"; docs/ARCHITECTURE.md).

An ast scan of every module under src/systolic, module-level AND function-level imports (a lazy import is
still a dependency), and the imports spelled as calls: ``importlib.import_module(...)``, ``__import__(...)``,
``importlib.util.find_spec(...)``. A call naming its module as a string literal is that import; a call with a
computed name makes every string literal in the module that names a systolic module (``"systolic.x.y"`` or an
entry-point style ``"systolic.x.y:attr"``) an import of that module, so a table of module names fed to
importlib is seen too. Two checks, each against an explicit allow-list of today's known exceptions:

(i)  no import points up the layer table below;
(ii) no import cycle between modules (a submodule importing its own package's ``__init__`` — a re-export —
     is not counted: the package is the module's container, not a peer).

A new upward import or a new cycle fails the test with the offending edges / the modules of the cycle.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path


SRC = Path(__file__).resolve().parents[1] / "src"

#: (module prefix, layer): the longest matching prefix decides; lower numbers are lower layers
LAYERS = {
    # 0: the base: errors, counters, the host's float environment and its JIT.
    "systolic.errors": 0, "systolic.counters": 0, "systolic.fpenv": 0, "systolic.host": 0, "systolic.jit": 0,
    "systolic.observe": 0,                # the spec bodies' observer protocol (the explorer passes one in)
    "systolic.backend_registry": 0,       # the engines' backend= registry (filled from above: systolic.gpu)
    "systolic.vocabulary": 0,             # device= / path= / backend=, and the renamed keywords' shim
    "systolic.registry": 0,               # name -> record lookups (types, platforms, CPUs, devices, backends)
    "systolic.llvmir": 0,                 # the LLVM-IR front door: clang + LLVM's parser (imports only errors;
                                          # in the base because the JIT, systolic.jit, parses through it)
    "systolic.suggest": 0,                # "did you mean": close matches of a mistyped name (difflib)
    # 1: numerics, the element types built from its formats and rounding (systolic.types imports
    #    numerics.formats/.rounding; numerics imports only the base) and the byte packing of those types
    #    (packing imports types): one layer, numerics -> types -> packing inside it
    "systolic.numerics": 1, "systolic.types": 1, "systolic.packing": 1,
    "systolic.layout": 2,
    "systolic.amx": 3, "systolic.xmx": 3,                                        # engines
    "systolic.opencl": 4, "systolic.sycl": 4, "systolic.visa": 4, "systolic.compiler": 4,
    "systolic.cl": 4,                     # OpenCL C / spir64 IR through the SIMT interpreter (issue 21)
    "systolic.amx.intrinsics": 4, "systolic.amx.intrinsics_stub": 4,              # models
    "systolic.gpu": 5, "systolic.torch": 5, "systolic.distributed": 5,          # integrations
    "systolic.cli": 6, "systolic.explorer": 6, "systolic.run": 6, "systolic.__main__": 6,   # tools
}

#: (importer module, exactly; imported prefix) -> why it is allowed today. (The engines' backend= dispatch goes
#: through systolic.backend_registry, which systolic.gpu fills; the package root, systolic/__init__.py, above every
#: layer, hands it the built-in provider's loader: no edge up.)
ALLOWED_UP: dict[tuple[str, str], str] = {
}

#: cycles known today, as frozensets of modules (a cycle's modules must be exactly one of these). None: the
#: intrinsics own the tracer slot that compiler.tracing sets, vISA's operand records live in visa.operands, and
#: the one-instruction explain replays in explorer.explain_single
ALLOWED_CYCLES: dict[frozenset[str], str] = {}


def _modules(src: Path = SRC) -> dict[str, Path]:
    out = {}
    for p in sorted((src / "systolic").rglob("*.py")):
        parts = list(p.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(src: Path = SRC) -> dict[str, dict[str, int]]:
    """module -> {imported systolic module: first line}, module-level and function-level alike.

    ``from X import name`` counts as an import of ``X.name`` when that is a module, else of ``X``."""
    mods = _modules(src)
    edges: dict[str, dict[str, int]] = defaultdict(dict)
    for m, p in mods.items():
        pkg = m.split(".") if p.name == "__init__.py" else m.split(".")[:-1]
        tree = ast.parse(p.read_text(), str(p))
        typing_only = {id(n) for blk in ast.walk(tree) if isinstance(blk, ast.If) and _is_type_checking(blk.test)
                       for stmt in blk.body for n in ast.walk(stmt)}
        dynamic = False                      # an import call with a computed module name
        for node in ast.walk(tree):
            if id(node) in typing_only:      # `if TYPE_CHECKING:` imports never run
                continue
            if isinstance(node, ast.Call) and _import_call(node):
                arg = node.args[0] if node.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    targets = [arg.value]
                elif isinstance(arg, ast.JoinedStr) and _own_name(arg):
                    continue                 # f"{__name__}.sub": a submodule of this package, never a peer
                else:
                    dynamic = True
                    continue
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(pkg[:len(pkg) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != m and t.startswith("systolic"):
                    edges[m].setdefault(t, node.lineno)
        if dynamic:                          # the module names a computed import may be fed
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    t = node.value.partition(":")[0]
                    if t in mods and t != m and t.startswith("systolic."):
                        edges[m].setdefault(t, node.lineno)
    return edges


_IMPORT_CALLS = {"import_module", "__import__", "find_spec"}


def _import_call(node: ast.Call) -> bool:
    """``importlib.import_module(..)``, ``importlib.util.find_spec(..)``, ``__import__(..)`` (or the bare names)."""
    f = node.func
    return (isinstance(f, ast.Name) and f.id in _IMPORT_CALLS) or \
        (isinstance(f, ast.Attribute) and f.attr in _IMPORT_CALLS)


def _own_name(arg: ast.JoinedStr) -> bool:
    first = arg.values[0] if arg.values else None
    return isinstance(first, ast.FormattedValue) and isinstance(first.value, ast.Name) and \
        first.value.id == "__name__"


def layer(module: str) -> int | None:
    best = max((k for k in LAYERS if module == k or module.startswith(k + ".")), key=len, default=None)
    return LAYERS[best] if best else None


def upward(edges) -> list[tuple[str, str, int]]:
    """(importer, imported, line) for every import into a higher layer."""
    out = []
    for m, ts in edges.items():
        for t, line in ts.items():
            lm, lt = layer(m), layer(t)
            if lm is not None and lt is not None and lt > lm:
                out.append((m, t, line))
    return sorted(out)


def _container(m: str, t: str) -> bool:
    """``t`` is a package that contains ``m`` (a re-export import of its own package, or of systolic)."""
    return m.startswith(t + ".")


def cycles(edges) -> list[frozenset[str]]:
    """Strongly connected components of two or more modules (Tarjan, iterative). An allowed upward edge
    (:data:`ALLOWED_UP`) is a known back edge: the loops it closes are its own, listed there with its reason."""
    g = {m: [t for t in ts if not _container(m, t) and not _allowed_up(m, t)] for m, ts in edges.items()}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for root in list(g):
        if root in index:
            continue
        work = [(root, iter(g.get(root, ())))]
        index[root] = low[root] = counter[0]; counter[0] += 1; stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1; stack.append(w); on.add(w)
                    work.append((w, iter(g.get(w, ()))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop(); on.discard(w); comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(frozenset(comp))
    return out


def _allowed_up(m: str, t: str) -> bool:
    return any(m == a and (t == b or t.startswith(b + ".")) for a, b in ALLOWED_UP)


def test_every_module_has_a_layer():
    missing = [m for m in _modules() if m != "systolic" and layer(m) is None]
    assert not missing, f"add these to LAYERS: {missing}"


def test_imports_point_down():
    bad = [f"{m}:{line} imports {t} (layer {layer(m)} -> {layer(t)})" for m, t, line in upward(imports())
           if not _allowed_up(m, t)]
    assert not bad, "imports pointing up the layers:\n" + "\n".join(bad)


def test_no_new_import_cycle():
    bad = [sorted(c) for c in cycles(imports()) if c not in ALLOWED_CYCLES]
    assert not bad, "new import cycles (break them with a module both sides import):\n" + "\n".join(map(str, bad))


def test_allow_lists_are_not_stale():
    found = set(cycles(imports()))
    stale = [sorted(c) for c in ALLOWED_CYCLES if c not in found]
    assert not stale, f"these allowed cycles are gone: remove them from ALLOWED_CYCLES: {stale}"
    ups = upward(imports())
    unused = [k for k in ALLOWED_UP if not any(_allowed_up(m, t) and m.startswith(k[0]) for m, t, _ in ups)]
    assert not unused, f"these allowed upward imports are gone: remove them from ALLOWED_UP: {unused}"


def test_a_new_cycle_is_caught(tmp_path):
    # the check itself can fail: a copy of the tree where layout.core imports the explorer again
    import shutil
    shutil.copytree(SRC / "systolic", tmp_path / "systolic")
    core = tmp_path / "systolic" / "layout" / "core.py"
    core.write_text(core.read_text() + "\n\ndef _bad():\n    from ..explorer.verbs import where\n    return where\n")
    e = imports(tmp_path)
    assert any(c not in ALLOWED_CYCLES and "systolic.layout.core" in c for c in cycles(e))
    assert ("systolic.layout.core", "systolic.explorer.verbs") in {(m, t) for m, t, _ in upward(e)}


def test_an_importlib_reach_is_caught(tmp_path):
    # importlib and __import__ are imports too: a literal name, and a table of names fed to a computed import
    import shutil
    shutil.copytree(SRC / "systolic", tmp_path / "systolic")
    core = tmp_path / "systolic" / "layout" / "core.py"
    core.write_text(core.read_text() + "\n\ndef _bad():\n    import importlib\n"
                    "    return importlib.import_module('systolic.explorer.resolve')\n")
    amx = tmp_path / "systolic" / "layout" / "amx.py"
    amx.write_text(amx.read_text() + "\n\n_TABLE = {'x': 'systolic.cli.layout:group'}\n\n"
                   "def _bad(k):\n    return __import__(_TABLE[k].partition(':')[0])\n")
    ups = {(m, t) for m, t, _ in upward(imports(tmp_path))}
    assert ("systolic.layout.core", "systolic.explorer.resolve") in ups
    assert ("systolic.layout.amx", "systolic.cli.layout") in ups


if __name__ == "__main__":   # print today's picture: python tests/test_layering.py
    e = imports()
    for u in upward(e):
        print("UP", *u)
    for c in cycles(e):
        print("CYCLE", sorted(c), "(allowed)" if c in ALLOWED_CYCLES else "")
