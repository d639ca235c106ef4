"""One name -> record lookup for every table of names: element types, XMX platforms, CPU models, SYCL devices,
vISA types, tile-machine backends.

A :class:`Registry` holds records under their names and aliases (case-insensitive, and with a table's own
normalisation, e.g. ``_`` read as ``-`` for CPU models), hands a record given as itself back unchanged, and
refuses an unknown name with the table's typed error: its message names what was looked up, closes with
"did you mean" (:mod:`systolic.suggest`), and its rule lists the known names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from .errors import InvalidValue
from .suggest import did_you_mean

__all__ = ["Registry"]

R = TypeVar("R")


def _lower(name: str) -> str:
    return name.lower()


class Registry(Generic[R]):
    """Records by name. ``what``: the words of the error ("unknown {what} 'x'"); ``rule``: the rule's text before
    the list of names ("known types" -> "known types: a, b"; empty: the list alone); ``key``: the key of the looked-up name in the
    error's values; ``kind``: the record class (a record passed in is returned as it is); ``error``: the
    error class (InvalidValue unless the table's layer has its own); ``normalize``: how a name is compared;
    ``values``: more values for the error, from the registry."""

    def __init__(self, what: str, *, rule: str, key: str, kind: type | None = None,
                 error: type[Exception] = InvalidValue, normalize: Callable[[str], str] = _lower,
                 values: Callable[["Registry"], dict] | None = None, listed: Callable[["Registry"], Iterable[str]]
                 | None = None):
        self.what, self.rule, self.key, self.kind, self.error = what, rule, key, kind, error
        self.normalize, self._values, self._listed = normalize, values, listed
        self._records: dict[str, R] = {}                # canonical name -> record, in the order added
        self._by_name: dict[str, R] = {}                # every normalised name and alias -> record

    def add(self, name: str, record: R, aliases: Iterable[str] = ()) -> R:
        """Hold ``record`` under ``name`` and its ``aliases`` (adding a name again replaces its record)."""
        self._records[name] = record
        for n in (name, *aliases):
            self._by_name[self.normalize(n)] = record
        return record

    def get(self, name) -> R:
        """The record called ``name`` (or ``name`` itself if it is a record); the typed error if none is."""
        if self.kind is not None and isinstance(name, self.kind):
            return name
        r = self._by_name.get(self.normalize(str(name)))
        if r is None:
            raise self.unknown(name)
        return r

    def unknown(self, name) -> Exception:
        """The error for an unknown ``name``."""
        key = self.normalize(str(name))
        listed = self._listed(self) if self._listed is not None else self._records
        extra = self._values(self) if self._values is not None else {}
        names = ", ".join(listed)
        return self.error(f"unknown {self.what} {name!r}{did_you_mean(key, self._by_name)}",
                          rule=f"{self.rule}: {names}" if self.rule else names, values={self.key: name, **extra})

    def names(self) -> list[str]:
        """The canonical names, in the order added."""
        return list(self._records)

    def aliases(self) -> dict[str, R]:
        """Every normalised name and alias -> its record."""
        return dict(self._by_name)

    def __contains__(self, name) -> bool:
        return self.normalize(str(name)) in self._by_name

    def __iter__(self) -> Iterator[R]:
        return iter(self._records.values())

    def __len__(self) -> int:
        return len(self._records)
