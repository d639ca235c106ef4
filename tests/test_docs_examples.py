"""Every code example of docs/*.md runs as written (and every command line of README.md, whose Python blocks
tests/test_readme.py runs).

* Python: a page's ```python blocks run in order in one namespace (a reader pasting the page into one session),
  in a scratch directory that sees the checkout's files (``open("examples/...")`` works; files the examples
  write land in the scratch directory). A block that is a whole ``systolic run`` program (module docstring,
  ``DEVICE``, ``main(device)``) is also saved as a file and run as ``systolic run`` runs it: bit-identical.
* Shell: every line of a ```sh / ```bash / ```console block (or of a bare block of ``systolic ...`` lines) that
  invokes the ``systolic`` CLI runs through click's CliRunner and must exit 0 without a traceback; where a
  ```console block shows the output (``$ `` lines followed by output lines), the output must be the one shown,
  after the ``| sed -n`` / ``| grep -E`` filter the line names. Lines that are other commands (pip, python) are
  not run. Every ``systolic`` line, run or not, must name an existing verb and only options that verb has.
  A usage synopsis (``[--json]``, ``a|b`` alternatives, ``...``) is only checked that way; a line whose input
  file neither the checkout nor an earlier line of the page provides is not run (listed in the skip reason).

An example is skipped only when it needs what this machine lacks (tests/doc_blocks.py says what): the page's
test runs everything else first and then reports the skips.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from doc_blocks import ROOT, Block, fenced_blocks, missing_cli, missing_python
from systolic.cli import cli

DOCS = sorted((ROOT / "docs").glob("*.md"))
SHELL = {"sh", "bash", "console", "shell"}

#: options whose value is a path the command writes (so it need not exist beforehand)
OUTPUT_OPTIONS = {"-o", "--output", "--out", "--save", "--svg"}
#: what a token names when it is a file: these suffixes
FILE_SUFFIXES = {".py", ".ll", ".visa", ".npy", ".bin", ".json", ".csv", ".svg", ".txt"}


def _python_blocks(page: Path) -> list[Block]:
    return [b for b in fenced_blocks(page) if b.lang == "python"]


def _is_shell(b: Block) -> bool:
    if b.lang in SHELL:
        return True
    first = next((s.strip() for s in b.text.splitlines() if s.strip()), "")
    return b.lang == "" and re.match(r"^(\$ )?systolic ", first) is not None


@dataclass
class Command:
    line: int
    text: str                                        # the command line as the page writes it
    shown: list[str] | None = None                   # console: the output the page shows (None: none shown)
    segments: list[list[str]] = field(default_factory=list)


def _commands(page: Path) -> list[Command]:
    cmds: list[Command] = []
    for b in fenced_blocks(page):
        if not _is_shell(b):
            continue
        prompt = b.lang == "console" or b.text.lstrip().startswith("$ ")
        for i, raw in enumerate(b.text.splitlines()):
            if prompt and not raw.startswith("$ "):
                if cmds and cmds[-1].shown is not None:
                    cmds[-1].shown.append(raw.rstrip())
                continue
            text = raw[2:] if raw.startswith("$ ") else raw
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            lex = shlex.shlex(text, posix=True, punctuation_chars="|")
            lex.whitespace_split = True
            chain: list[list[list[str]]] = [[[]]]    # commands joined by && or ;, each a pipeline of segments
            for t in lex:
                if t in ("&&", ";"):
                    chain.append([[]])
                elif t == "|":
                    chain[-1].append([])
                else:
                    chain[-1][-1].append(t)
            for segs in chain:
                cmds.append(Command(b.line + i, text.strip(), [] if prompt else None, segs))
    return cmds


def _cli_args(cmd: Command) -> list[str] | None:
    """The arguments after ``systolic`` (or ``python -m systolic``); None for other commands."""
    head = cmd.segments[0]
    if head[:1] == ["systolic"]:
        return head[1:]
    if head[:3] == ["python", "-m", "systolic"]:
        return head[3:]
    return None


def _check_verb_and_options(args: list[str], where: str) -> None:
    """The verb path exists and every option the line names is one of that verb's options."""
    cmd: click.Command = cli
    i = 0
    while isinstance(cmd, click.Group) and i < len(args) and not args[i].startswith("-"):
        sub = cmd.get_command(click.Context(cmd), args[i])
        assert sub is not None, f"{where}: 'systolic {' '.join(args[:i + 1])}': no such verb"
        cmd, i = sub, i + 1
    names = {"--help", "-h"}
    for p in cmd.params:
        if not isinstance(p, click.Option):
            continue
        names.update(p.opts)
        names.update(p.secondary_opts)
    for t in args[i:]:
        if "$(" in t or "`" in t:
            break                                     # the rest belongs to the substituted command
        t = t.strip("[]")
        if t.startswith("-") and not re.fullmatch(r"-\d[\d.e+-]*", t):
            assert t.split("=")[0] in names, (
                f"{where}: 'systolic {' '.join(args[:i])}' has no option {t.split('=')[0]} "
                f"(it has {sorted(names)})")


def _filter(seg: list[str], lines: list[str]) -> list[str]:
    """The output lines after one ``| sed -n 'A,Bp;...'`` or ``| grep -E 'RE'`` stage."""
    if seg[:2] == ["sed", "-n"] and len(seg) == 3:
        keep: set[int] = set()
        for part in seg[2].split(";"):
            m = re.fullmatch(r"(\d+)(?:,(\d+|\$))?p", part)
            assert m, f"sed script {seg[2]!r}: only 'A,Bp;...' is understood here"
            a = int(m.group(1))
            b = a if m.group(2) is None else len(lines) if m.group(2) == "$" else int(m.group(2))
            keep.update(range(a, b + 1))
        return [s for n, s in enumerate(lines, 1) if n in keep]
    if seg[:2] == ["grep", "-E"] and len(seg) == 3:
        return [s for s in lines if re.search(seg[2], s)]
    raise AssertionError(f"output filter {' '.join(seg)!r}: only sed -n and grep -E are understood here")


def _trimmed(lines: list[str]) -> list[str]:
    """Without the blank lines at the end (a console block may leave one before the next prompt)."""
    while lines and not lines[-1]:
        lines = lines[:-1]
    return lines


def _synopsis(cmd: Command) -> str | None:
    """Why the line is a usage synopsis rather than a command (None: it is a command)."""
    toks = [t for seg in cmd.segments for t in seg]
    if any(t.startswith("[") or t.endswith("]") for t in toks):
        return "optional parts in [...]"
    if any("..." in t for t in toks):
        return "a '...' placeholder"
    if any("$(" in t or "`" in t for t in toks):
        return "a shell command substitution"         # runs another program first: not ours to run
    if any(seg[:1] not in (["sed"], ["grep"]) for seg in cmd.segments[1:]):
        return "'|' alternatives"
    return None


def _missing_inputs(args: list[str], cwd: Path) -> list[str]:
    """The input files the line names that are not there (outputs of OUTPUT_OPTIONS need not exist)."""
    absent = []
    for prev, t in zip([None, *args], args):
        path = t.split("=")[-1]
        if prev in OUTPUT_OPTIONS or Path(path).suffix not in FILE_SUFFIXES:
            continue
        if not (cwd / path).exists():
            absent.append(path)
    return absent


#: what a skipped block may fail to import: the optional packages whose absence is a skip reason
OPTIONAL = {"torch", "cupy", "llvmlite"}


def _check_skipped_block(b: Block, page: Path) -> None:
    """What can be checked of a block that cannot run here: it parses, and its top-level imports resolve
    (a renamed module or function fails here, not only on the machine that has the hardware)."""
    tree = ast.parse("\n" * (b.line - 1) + b.text, f"docs/{page.name}")
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    try:
        exec(compile(ast.Module(imports, []), f"docs/{page.name}", "exec"), {})
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in OPTIONAL:
            raise


def _is_run_program(text: str) -> bool:
    """A block that is a whole `systolic run` program: a module docstring, DEVICE and main(device)."""
    return (text.lstrip().startswith('"""') and re.search(r"^DEVICE\s*=", text, re.M) is not None
            and re.search(r"^def main\(device", text, re.M) is not None)


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A working directory that sees the checkout's top-level files and folders (read through links), where
    what the examples write stays."""
    for entry in ROOT.iterdir():
        if not entry.name.startswith("."):
            (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    return tmp_path


PY_PAGES = [p for p in DOCS if _python_blocks(p)]
#: README.md's Python is tests/test_readme.py's; its command lines are checked here with the pages'
SH_PAGES = [p for p in [*DOCS, ROOT / "README.md"] if any(_cli_args(c) is not None for c in _commands(p))]


def test_pages_found():
    """The parametrisation below is not empty by accident (a moved docs folder, a broken fence parser)."""
    names = {p.name for p in PY_PAGES}
    assert {"amx.md", "xmx.md", "layouts.md", "sycl.md", "opencl.md", "visa.md"} <= names
    assert {"layouts.md", "run.md", "visa.md", "README.md"} <= {p.name for p in SH_PAGES}


def test_inline_commands_name_real_verbs_and_options():
    """Prose names commands too (`systolic amx cpus [--json]`): each verb exists and has the options named."""
    spans = 0
    for page in [*DOCS, ROOT / "README.md"]:
        text = page.read_text()
        for m in re.finditer(r"(?<!`)`(systolic [^`]+)`(?!`)", text):
            line = text.count("\n", 0, m.start()) + 1
            words = m.group(1).split()
            args = words[1:words.index("...")] if "..." in words else words[1:]
            _check_verb_and_options(args, f"{page.relative_to(ROOT)}:{line}")
            spans += 1
    assert spans >= 20


def test_command_lines_are_fenced():
    """An indented code block is not parsed here: a ``systolic`` line in one would go unchecked."""
    for page in [*DOCS, ROOT / "README.md"]:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            assert not re.match(r"^(    |\t)+(\$ )?systolic ", line), (
                f"{page.relative_to(ROOT)}:{n}: a systolic command in an indented block; fence it (```sh)")


@pytest.mark.parametrize("page", PY_PAGES, ids=lambda p: p.name)
def test_python_examples(page, scratch):
    ns: dict = {"__name__": f"docs_{page.stem}"}
    skipped: list[str] = []
    for b in _python_blocks(page):
        where = f"docs/{page.name}:{b.line}"
        why = missing_python(b.text)
        if why:
            _check_skipped_block(b, page)
            skipped.append(f"{where}: {why}")
            continue
        try:
            # padded so that a traceback's line numbers are the page's
            exec(compile("\n" * (b.line - 1) + b.text, f"docs/{page.name}", "exec"), ns)
        except NameError as e:
            if not skipped:
                raise
            skipped.append(f"{where}: uses a name of a skipped block ({e})")
            continue
        if _is_run_program(b.text):                  # a program for `systolic run` (docs/run.md)
            prog = scratch / f"{page.stem}_{b.line}.py"
            prog.write_text(b.text)
            from systolic.run import run_file
            assert run_file(str(prog))["verdict"] == "bit-identical", f"{where}: systolic run {prog.name}"
    if skipped:
        pytest.skip("; ".join(skipped))


@pytest.mark.parametrize("page", SH_PAGES, ids=lambda p: p.name)
def test_shell_examples(page, scratch):
    skipped, ran = [], 0
    for cmd in _commands(page):
        args = _cli_args(cmd)
        if args is None:
            continue                                 # pip, python scripts: not ours to run
        where = f"{page.relative_to(ROOT)}:{cmd.line}"
        _check_verb_and_options(args, where)
        if _synopsis(cmd):
            continue
        why = missing_cli(args)
        absent = _missing_inputs(args, scratch)
        if absent:
            why = f"needs input file(s) {absent} that the page does not create"
        if why:
            skipped.append(f"{where}: {why}")
            continue
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 0 and r.exception is None, (
            f"{where}: {cmd.text!r} exited {r.exit_code}:\n{r.output[-3000:]}\n{r.exception!r}")
        assert "Traceback" not in r.output, f"{where}: {cmd.text!r} printed a traceback:\n{r.output[-3000:]}"
        if cmd.shown and any(cmd.shown):
            out = [s.rstrip() for s in r.output.splitlines()]
            for seg in cmd.segments[1:]:
                out = _filter(seg, out)
            assert _trimmed(out) == _trimmed(cmd.shown), f"{where}: {cmd.text!r} prints other than the page shows"
        ran += 1
    if skipped:
        pytest.skip(f"ran {ran} line(s); " + "; ".join(skipped))


def test_pages_link_the_glossary_and_stay_inside_the_project():
    """Every page links docs/glossary.md (at the first use of a term), every glossary anchor a page names exists,
    and no page links outside the project (REFERENCE.md and shared/specs are not shipped: issue 27)."""
    glossary = (ROOT / "docs" / "glossary.md").read_text()
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', glossary))
    assert {"amx", "dpas", "grf", "vnni", "seed", "which-operand-is-which-matrix"} <= anchors
    for page in [*DOCS, ROOT / "README.md"]:
        text = page.read_text()
        where = page.relative_to(ROOT)
        assert "REFERENCE.md" not in text and "shared/specs" not in text and "specs/" not in text, where
        if page.name != "glossary.md":
            assert "glossary.md" in text, f"{where} does not link the glossary"
        for target, anchor in re.findall(r"\]\(((?:docs/)?glossary\.md)#([^)]+)\)", text):
            assert anchor in anchors, f"{where}: glossary.md#{anchor} is no anchor"
        prose = re.sub(r"`[^`\n]*`", "", re.sub(r"(?s)```.*?```", "", text))     # links live in prose only
        for target in re.findall(r"\]\(([^)#\s]+)", prose):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            assert (page.parent / target).exists(), f"{where}: link to {target}, which is not in the project"
