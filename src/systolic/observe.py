"""What the spec bodies tell an observer: the events of one output element's computation.

The spec paths (:mod:`systolic.amx.spec`'s TMUL bodies, :func:`systolic.xmx.dpas`'s ``_execute``) compute;
they keep no record. Where a caller passes an :class:`Observer` (``observer=``), a body announces, for the output
elements the observer :meth:`~Observer.watches`, each step as it happens (:meth:`~Observer.step`: the values it
read and the running sum) and the end (:meth:`~Observer.result`). What is kept, and in which shape, is the
observer's business: the layout explorer (``systolic layout explain``) passes an :class:`ElementRecord`, which
fills the plain dict its reports read.
"""

from __future__ import annotations

from collections.abc import MutableMapping

__all__ = ["Observer", "ElementRecord", "from_trace"]


class Observer:
    """Receives a spec body's events; this base class watches nothing (a body then announces nothing)."""

    def watches(self, row: int, col: int) -> bool:
        """Whether the events of output element (row, col) are wanted."""
        return False

    def step(self, row: int, col: int, **values) -> None:
        """One step of (row, col): the values read and the running result after it."""

    def result(self, row: int, col: int, **values) -> None:
        """The end of (row, col): what was added last and the result written."""

    def sums(self, row: int, col: int) -> list | None:
        """A list a numerics model's accumulation of (row, col) appends its additions to (None: not wanted)."""
        return None


class ElementRecord(Observer):
    """Records one element's events into ``into`` (a dict): the C it started from (``c``, the first one
    announced), each step as an entry of the list ``into[steps]``, the end's values as keys, and the numerics
    model's additions in ``into["sums"]``."""

    def __init__(self, into: MutableMapping, row: int, col: int, steps: str = "steps"):
        self.into, self.row, self.col, self.key = into, row, col, steps

    def watches(self, row: int, col: int) -> bool:
        return row == self.row and col == self.col

    def step(self, row: int, col: int, **values) -> None:
        if "c" in values:
            self.into.setdefault("c", values.pop("c"))
        self.into.setdefault(self.key, []).append(values)

    def result(self, row: int, col: int, **values) -> None:
        self.into.update(values)

    def sums(self, row: int, col: int) -> list | None:
        return self.into.setdefault("sums", []) if self.watches(row, col) else None


def from_trace(trace: MutableMapping | None, observer: Observer | None, steps: str = "steps") -> Observer | None:
    """The observer of a call that takes both spellings: ``observer`` itself, else the ``trace=`` dict (a
    ``{"row": r, "col": c}`` to be filled, the older spelling) as an :class:`ElementRecord`, else None."""
    if observer is not None:
        return observer
    if trace is None:
        return None
    return ElementRecord(trace, trace["row"], trace["col"], steps)
