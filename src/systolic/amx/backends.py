"""Backends of the tile machine: who executes an instruction once the machine has checked it.

The :class:`~systolic.amx.machine.TileMachine` checks every rule (#GP, #UD,
memory bounds, CPU features) and handles faulting loads/stores itself; a backend
is only asked to do the work of an instruction that cannot fault, on the
machine's state arrays (``m.tiles``: (8, 16, 64) uint8, ``m.config``) in place.

Protocol (agreed with the native-AMX and compiler engineers)::

    name: str
    load_config(m)                                  # m.config set, tiles already zeroed
    tileload(m, tmm, memory, base, stride)          # full load from m.config.start_row
    tilestore(m, tmm, memory, base, stride)         # full store from m.config.start_row
    tilezero(m, tmm)
    dot(m, mnemonic, dst, src1, src2)               # any TMUL mnemonic, lower case
    release(m)

Built in: ``"emulator"`` (vectorised numpy kernels, :mod:`systolic.amx.kernels`)
and ``"spec"`` (the plain SDM transcription, :mod:`systolic.amx.spec`).
``"native"`` (real AMX, :mod:`systolic.amx.native`) is imported on first use.
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

from ..registry import Registry
from .isa import INSTRUCTIONS

__all__ = ["Backend", "register_backend", "get_backend", "backend_names", "EmulatorBackend", "SpecBackend"]


@runtime_checkable
class Backend(Protocol):
    name: str

    def load_config(self, m) -> None: ...
    def tileload(self, m, tmm: int, memory, base: int, stride: int) -> None: ...
    def tilestore(self, m, tmm: int, memory, base: int, stride: int) -> None: ...
    def tilezero(self, m, tmm: int) -> None: ...
    def dot(self, m, mnemonic: str, dst: int, src1: int, src2: int) -> None: ...
    def release(self, m) -> None: ...


class _ArrayBackend:
    """Shared body of the two emulating backends: ``ops`` is the module holding the per-instruction code."""

    name = "?"
    ops = None
    body = "spec"           # which body of the instruction records (systolic.amx.isa) runs a TMUL

    def load_config(self, m) -> None:
        pass  # the machine has already zeroed the tiles and set the configuration

    def tileload(self, m, tmm, memory, base, stride) -> None:
        rows, colsb = m.config.shape(tmm)
        self.ops.tileload(m.tiles[tmm], memory, base, stride, rows, colsb, m.config.start_row)

    def tilestore(self, m, tmm, memory, base, stride) -> None:
        rows, colsb = m.config.shape(tmm)
        self.ops.tilestore(m.tiles[tmm], memory, base, stride, rows, colsb, m.config.start_row)

    def tilezero(self, m, tmm) -> None:
        self.ops.tilezero(m.tiles[tmm])

    def dot(self, m, mnemonic, dst, src1, src2) -> None:
        cfg = m.config
        body = getattr(INSTRUCTIONS[mnemonic], self.body)     # the record's spec or fast body
        body(m.tiles[dst], m.tiles[src1], m.tiles[src2], cfg.rows[dst], cfg.colsb[dst], cfg.colsb[src1])

    def release(self, m) -> None:
        pass


class EmulatorBackend(_ArrayBackend):
    """The fast emulator: vectorised kernels proven bit-identical to the spec path."""

    name = "emulator"
    body = "fast"

    def __init__(self) -> None:
        from . import kernels
        self.ops = kernels


class SpecBackend(_ArrayBackend):
    """The spec path: the SDM pseudo-code transcribed, element by element (slow, obviously right)."""

    name = "spec"

    def __init__(self) -> None:
        from . import spec
        self.ops = spec


def _native() -> Backend:
    from .native import NativeBackend      # llvmlite and the host probe: loaded on first use only
    return NativeBackend()


#: backend name -> factory (called once per machine)
_FACTORIES: Registry[Callable[[], Backend]] = Registry("AMX backend", rule="backends", key="backend",
                                                       normalize=str, listed=lambda r: sorted(r.names()))
for _n, _f in (("emulator", EmulatorBackend), ("spec", SpecBackend), ("native", _native)):
    _FACTORIES.add(_n, _f)


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Make ``TileMachine(backend=name)`` use ``factory()`` (called once per machine)."""
    _FACTORIES.add(name, factory)


def backend_names() -> list[str]:
    return sorted(_FACTORIES.names())


def get_backend(name: str | Backend) -> Backend:
    """A new backend instance by name, or the object itself."""
    if not isinstance(name, str):
        return name
    return _FACTORIES.get(name)()
