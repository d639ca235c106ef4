"""One vocabulary for every layer's arguments (docs/ARCHITECTURE.md "Vocabulary"):

* ``device=``: the CPU model or GPU platform an engine models (``"spr"``, ``"sapphirerapids"``, ``"pvc"``, ...);
* ``path=``: ``"spec"`` (the manual transcribed, element by element) or ``"fast"`` (vectorised, proven
  bit-identical to the spec path);
* ``backend=``: where the work runs (``"cpu"``, ``"native"``, ``"cuda"``, ``"auto"``).

The older keywords (``cpu=``, ``platform=``, ``engine=``, ``fast_dpas=`` / ``fast_alu=``, the tile machine's
``backend="emulator" | "spec"``) keep working for one release with a :class:`DeprecationWarning` naming the new
one. :func:`renamed` is the shim each signature calls for a renamed keyword, :func:`spelled` for an older value
that stands for new keywords' values. Either way the new keyword defaults to None (documented as its real
default), so a caller who gave it, even at that default, is told of a clash instead of one spelling silently
winning.
"""

from __future__ import annotations

import warnings

from .errors import InvalidValue

__all__ = ["PATHS", "RenamedWarning", "check_path", "renamed", "deprecated", "spelled"]


class RenamedWarning(DeprecationWarning):
    """An older spelling was used (a renamed keyword or value, a renamed function): it still works, for one
    release. Its own class so a test configuration can turn exactly
    these into errors (pyproject.toml: ``error::systolic.vocabulary.RenamedWarning``)."""

#: the two paths of every engine
PATHS = ("spec", "fast")


def check_path(path: str, where: str) -> str:
    """``path`` if it is ``"spec"`` or ``"fast"``, else InvalidValue naming ``where``."""
    if not isinstance(path, str) or path not in PATHS:       # (an array's `in` would compare element-wise)
        raise InvalidValue("path is 'spec' or 'fast'", rule=f"{where}: path='spec' (the manual) or 'fast'",
                           values={"path": path})
    return path


def deprecated(old: str, new: str, where: str, stacklevel: int = 3) -> None:
    """Warn once per call site that ``old`` is spelled ``new`` now (kept for one release)."""
    warnings.warn(f"{where}: {old} is deprecated, use {new} (the old spelling goes after one release)",
                  RenamedWarning, stacklevel=stacklevel + 1)


def renamed(old_kwargs: dict, names: dict[str, str], where: str, *, stacklevel: int = 3, **new) -> dict:
    """The new keywords' values, taking each old keyword of ``old_kwargs`` (``names``: old -> new) with a
    DeprecationWarning. ``new``: the new keywords as the caller received them (None: not given). A keyword
    that is neither is Python's TypeError; an old and its new keyword both given is InvalidValue."""
    out = dict(new)
    for old, value in old_kwargs.items():
        if old not in names:
            raise TypeError(f"{where}() got an unexpected keyword argument {old!r}")
        key = names[old]
        if out.get(key) is not None:
            raise InvalidValue(f"{where}: {old}= and {key}= name the same thing; give {key}= only",
                               values={old: value, key: out[key]})
        deprecated(f"{old}=", f"{key}=", where, stacklevel=stacklevel)
        out[key] = value
    return out


def spelled(old: str, means: dict, where: str, *, stacklevel: int = 3, **given) -> dict:
    """The new keywords' values that an older value stands for, with a DeprecationWarning. ``old``: the older
    spelling as the caller wrote it (``"backend='spec'"``); ``means``: the new keywords it stands for
    (``{"backend": "cpu", "path": "spec"}``); ``given``: those new keywords as the caller received them (None:
    not given). A given one that says otherwise than ``old`` is InvalidValue naming both: the old spelling never
    silently overrides a keyword the caller gave, nor the reverse."""
    clash = {k: v for k, v in given.items() if v is not None and k in means and v != means[k]}
    if clash:
        said = ", ".join(f"{k}={v!r}" for k, v in clash.items())
        raise InvalidValue(f"{where}: {old} means {', '.join(f'{k}={means[k]!r}' for k in clash)}, "
                           f"not the {said} also given; give the new keywords only",
                           rule=f"{where}: {old} is the older spelling of "
                                + ", ".join(f"{k}={v!r}" for k, v in means.items()),
                           values={"old": old, **clash})
    deprecated(old, ", ".join(f"{k}={v!r}" for k, v in means.items()), where, stacklevel=stacklevel + 1)
    return dict(means)
