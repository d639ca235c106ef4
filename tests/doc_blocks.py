"""The fenced code blocks of the project's Markdown pages, and why an example cannot run on this machine.

Shared by tests/test_readme.py (README.md) and tests/test_docs_examples.py (docs/*.md), so that both read
fences the same way and skip for the same reasons: an example is skipped only when it needs something this
machine lacks (torch, a CUDA device, native AMX, llvmlite), and the reason says which.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")
_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its info string's first word ("" for a bare fence), first body line, body."""

    lang: str
    line: int
    text: str


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown page, in order (CommonMark: a fence of backticks or tildes, closed by
    a bare fence of the same character at least as long; an unclosed block runs to the end of the page)."""
    blocks: list[Block] = []
    fence, lang, start, body = None, "", 0, []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if fence is None:
            m = _OPEN.match(line)
            if m:
                fence, lang, start, body = m.group(1), m.group(2), n + 1, []
            continue
        m = _CLOSE.match(line)
        if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
            blocks.append(Block(lang, start, "".join(s + "\n" for s in body)))
            fence = None
        else:
            body.append(line)
    if fence is not None:
        blocks.append(Block(lang, start, "".join(s + "\n" for s in body)))
    return blocks


def python_code(text: str) -> str:
    """The block without its comments: what it mentions only in a comment ("backend='native' runs on real
    AMX") is not something it needs."""
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type != tokenize.COMMENT]
        return tokenize.untokenize(toks)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text                                   # it will fail to compile anyway, with a clear message


@functools.cache
def native_amx() -> tuple[bool, str]:
    """(True, "") where this CPU runs AMX natively (the rule of tests/native/conftest.py), else the reason."""
    from systolic.amx.native import availability
    return availability()


@functools.cache
def cuda() -> tuple[bool, str]:
    """(True, device) where the CUDA backend can run, else (False, the reason)."""
    try:
        from systolic.gpu import availability
        return availability()
    except Exception as e:                        # noqa: BLE001 - any reason CUDA is unusable is a skip reason
        return False, f"systolic.gpu cannot be used: {e}"


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def missing_python(text: str) -> str | None:
    """Why this Python block cannot run here (None: it can).

    A block that calls ``availability()`` itself (``if availability()[0]: ...``) is written to run anywhere
    and is not skipped for CUDA."""
    code = python_code(text)
    if re.search(r"^\s*(import|from)\s+torch\b|systolic\.torch", code, re.M) and not _has("torch"):
        return "needs torch (pip install 'systolic[torch]')"
    if "llvmlite" in code and not _has("llvmlite"):
        return "needs llvmlite"
    uses_cuda = re.search(r"""(backend|device)\s*=\s*["']cuda|\.cuda\(|systolic\.gpu\b""", code)
    if uses_cuda and not re.search(r"\bif\b[^\n]*availability\(\)", code) and not cuda()[0]:
        return f"needs a CUDA device (systolic gpu info): {cuda()[1]}"
    uses_native = re.search(r"""backend\s*=\s*["'](native|llvm)["']|native_gemm\.""", code)
    if uses_native and not native_amx()[0]:
        return f"needs native AMX: {native_amx()[1]}"
    return None


def missing_cli(args: list[str]) -> str | None:
    """Why ``systolic ARGS`` cannot run here (None: it can)."""
    if "--help" in args or "-h" in args:
        return None
    if args[:1] == ["gpu"] and args[1:2] != ["info"] or "cuda" in args:
        return f"needs a CUDA device (systolic gpu info): {cuda()[1]}" if not cuda()[0] else None
    if args[:1] == ["torch"] and not _has("torch"):
        return "needs torch (pip install 'systolic[torch]')"
    if ("native" in args or "llvm" in args) and not native_amx()[0]:
        return f"needs native AMX: {native_amx()[1]}"
    return None
