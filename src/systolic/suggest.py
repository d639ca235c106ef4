""""Did you mean ...?": the close matches of a name a user typed, for error messages (base layer).

Every lookup that refuses a name (a device, a built-in, an instruction, a layer, a type, a file) says which known
names are near it, so the message tells the user what to type next. Closeness is :func:`difflib.get_close_matches`
(Ratcliff/Obershelp similarity) on the lower-cased names, plus the names that start with what was typed (a
prefix such as ``sapphire`` is as telling as a typo).
"""

from __future__ import annotations

import difflib
from typing import Iterable

__all__ = ["close_matches", "did_you_mean"]


def close_matches(name: object, known: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to ``n`` names of ``known`` closest to ``name`` (best first; case-insensitive; [] when none is near)."""
    names = list(dict.fromkeys(str(k) for k in known))
    key = str(name).lower().strip()
    if not key or not names:
        return []
    lower = {k.lower(): k for k in reversed(names)}             # the first spelling of a name wins
    out = [lower[m] for m in difflib.get_close_matches(key, list(lower), n=n, cutoff=cutoff)]
    if len(key) >= 3:
        out += [k for k in names if k.lower().startswith(key) and k not in out]
    return out[:n]


def did_you_mean(name: object, known: Iterable[str], n: int = 3) -> str:
    """``" (did you mean 'x' or 'y'?)"`` for the close matches of ``name``, or "" when none is near: appended to
    an error message as it is."""
    m = close_matches(name, known, n=n)
    if not m:
        return ""
    quoted = [repr(x) for x in m]
    text = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f" (did you mean {text}?)"


def did_you_mean_file(path: object) -> str:
    """For a path that does not exist: the close names in the nearest folder that does (" (did you mean
    'examples/sycl/gemm_int8.py'?)"), or "" when none is near."""
    from pathlib import Path
    p = Path(str(path))
    parent = p.parent
    tail = [p.name]
    while not parent.is_dir() and parent != parent.parent:       # a misspelled folder: look one level up
        tail.insert(0, parent.name)
        parent = parent.parent
    if not parent.is_dir():
        return ""
    try:
        names = sorted(e.name for e in parent.iterdir() if not e.name.startswith("."))
    except OSError:
        return ""
    m = close_matches(tail[0], names)
    if not m:
        return ""
    cands = [str(parent / x / Path(*tail[1:])) if len(tail) > 1 else str(parent / x) for x in m]
    if len(tail) > 1:                                  # a folder fixed: keep the candidates that exist
        cands = [c for c in cands if Path(c).exists()] or [str(parent / x) for x in m]
    if str(p).startswith("./") is False:
        cands = [c[2:] if c.startswith("./") else c for c in cands]
    quoted = [repr(c) for c in cands]
    text = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f" (did you mean {text}?)"
