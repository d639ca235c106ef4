"""The host's floating-point environment (x86 MXCSR) around the emulators' own arithmetic.

The emulators compute with the host's binary32/binary64 hardware (numpy and the JIT kernels of
:mod:`systolic.jit`), and their proofs of bit-exactness assume IEEE 754 defaults: round to nearest even,
subnormals kept (no FTZ, no DAZ), all exceptions masked. A process can change that: a library that calls
``torch.set_flush_denormal(True)``, ``-ffast-math`` start-up code, or a user's own ``ldmxcsr`` sets MXCSR.FTZ/DAZ
or another rounding mode for its thread, and the threads it creates inherit it. Results with subnormals (or
every result, for a rounding mode) would then be silently wrong.

So the entry points that compute floats run under :func:`default`: MXCSR's control bits are set to the
IEEE defaults (0x1F80) for the call, and the caller's MXCSR is restored afterwards; the kernels' shared worker
pool (:mod:`systolic.jit.workers`) runs each share under the caller's control bits and restores its own after. Reading and writing MXCSR takes ``stmxcsr``/``ldmxcsr``
(Intel SDM Vol. 1 §10.2.3), compiled once by llvmlite; where that is impossible (not x86-64) this module does
nothing, and :func:`read` returns None.
"""

from __future__ import annotations

import ctypes
import functools
import operator
import threading
from contextlib import contextmanager

from .errors import InvalidValue, UnsupportedCombination

__all__ = ["DEFAULT", "read", "write", "default", "guarded"]

#: MXCSR after reset (SDM Vol. 1 §10.2.3.1): every exception masked, round to nearest, no FTZ, no DAZ
DEFAULT = 0x1F80
#: the control bits (DAZ bit 6, masks 7-12, rounding control 13-14, FTZ 15); bits 0-5 are sticky status flags
_CONTROL = 0xFFC0

def _module():
    """``systolic_mxcsr_read() -> i32`` and ``systolic_mxcsr_write(i32)`` through stmxcsr / ldmxcsr."""
    from llvmlite import ir
    from .jit.build import I32, PTR, VOID, declare, define
    m = ir.Module(name="fpenv")
    st = declare(m, "llvm.x86.sse.stmxcsr", VOID, [PTR])
    ld = declare(m, "llvm.x86.sse.ldmxcsr", VOID, [PTR])
    _, b, _ = define(m, "systolic_mxcsr_read", I32, [])
    p = b.alloca(I32)
    b.call(st, [p])
    b.ret(b.load(p, typ=I32, align=4))
    _, b, (v,) = define(m, "systolic_mxcsr_write", VOID, [I32])
    p = b.alloca(I32)
    b.store(v, p, align=4)
    b.call(ld, [p])
    b.ret_void()
    return m


_lock = threading.Lock()
_fns: dict = {}


def _functions():
    with _lock:
        if "read" not in _fns:
            try:
                from . import jit
                mod = jit.compile_module(_module())
                _fns["read"] = mod.cfunc("systolic_mxcsr_read", ctypes.c_uint32)
                _fns["write"] = mod.cfunc("systolic_mxcsr_write", None, ctypes.c_uint32)
            except Exception:  # not x86-64, or no llvmlite JIT: nothing to read or guard
                _fns["read"] = _fns["write"] = None
        return _fns["read"], _fns["write"]


def read() -> int | None:
    """This thread's MXCSR, or None where it cannot be read."""
    rd, _ = _functions()
    return None if rd is None else int(rd())


def write(value: int) -> None:
    """Load ``value`` into this thread's MXCSR (tests use it to imitate a process that set FTZ/DAZ)."""
    _, wr = _functions()
    if wr is None:
        raise UnsupportedCombination("MXCSR cannot be written on this host",
                                     rule="MXCSR exists on x86-64 with llvmlite's JIT")
    try:
        value = operator.index(value)
    except TypeError:
        raise InvalidValue("an MXCSR value is an integer", values={"value": repr(value)[:40]}) from None
    if not 0 <= value < 1 << 16:  # ldmxcsr faults (#GP) on reserved bits 16-31
        raise InvalidValue(f"MXCSR value {value:#x} sets reserved bits", rule="MXCSR bits 16-31 are reserved (0)",
                           values={"value": hex(value)})
    wr(value)


@contextmanager
def default():
    """Run the block with MXCSR's control bits at their IEEE defaults; restore the caller's control bits after.

    Status flags raised inside stay raised (IEEE flags are sticky). Code the block calls back -- a vISA
    ``trace`` callback, say -- runs under the defaults too."""
    rd, wr = _functions()
    saved = None if rd is None else int(rd())
    if saved is None or saved & _CONTROL == DEFAULT:
        yield
        return
    wr(DEFAULT | (saved & ~_CONTROL & 0x3F))
    try:
        yield
    finally:
        # the caller's control bits back; the status flags (sticky, bits 0-5) raised meanwhile stay raised, as
        # they do when no switch was needed
        wr(saved | (rd() & 0x3F))


def guarded(fn):
    """Decorator: ``fn`` runs under :func:`default`."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with default():
            return fn(*args, **kwargs)
    return wrapper
