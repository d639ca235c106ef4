"""Native AMX: run the tile machine's instructions on the CPU's own tile unit, through llvmlite.

Detection (:func:`availability`, :func:`require_native`) sits on :mod:`systolic.host`: the CPU must report
AMX-TILE (``/proc/cpuinfo``), LLVM must see it too (llvmlite's host feature list), and Linux must grant tile
data to this process (``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``, Linux
``Documentation/arch/x86/xstate.rst``; REFERENCE.md section 6).

:class:`NativeBackend` implements the backend protocol of :mod:`systolic.amx.backends`, which names it
``"native"``. The machine's architectural state stays in memory (``m.config``, ``m.tiles``); each call is
one small JIT-compiled function that does, on the silicon::

    LDTILECFG  m.config (start_row forced to 0)
    TILELOADD  the operand tiles the instruction reads, from m.tiles (stride 64)
    <the instruction>
    TILESTORED the tile it writes, into a zeroed 16x64 buffer that becomes m.tiles[dst]
    TILERELEASE

so nothing Python does between instructions can disturb the tile registers. The machine has checked every
rule (#GP, #UD, memory bounds, CPU features) before a backend is called, so no instruction that would fault
reaches the CPU. Two cases use the emulator's data movement instead of the silicon, because a tile load
itself resets start_row to 0 and the old tile contents cannot be put back without one: TILELOADD /
TILESTORED when ``m.config.start_row != 0`` (the restart of a faulted transfer, or an LDTILECFG that set
start_row). TILEZERO of a tile whose colsb is not a multiple of 4 (legal on silicon, see
tests/data/amx_silicon/quirks.json) is done in memory too, since such a tile cannot be stored.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import threading

import numpy as np

from ..errors import AmxUnavailable
from . import isa, jit

__all__ = ["availability", "require_native", "host_supports", "NativeBackend"]

#: set to 1 to refuse native execution even where the CPU has AMX (tests, comparisons)
DISABLE_ENV = "SYSTOLIC_NO_NATIVE"


@functools.lru_cache(maxsize=1)
def _reasons() -> tuple[str, ...]:
    from .. import host
    why: list[str] = []
    if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        why.append(f"native AMX disabled by the environment variable {DISABLE_ENV}")
        return tuple(why)
    if platform.machine() not in ("x86_64", "AMD64"):
        why.append(f"the machine is {platform.machine()}, not x86-64")
        return tuple(why)
    feats = host.amx_features()
    if "AMX-TILE" not in feats:
        why.append(f"the CPU ({host.cpu_model_name()}) does not report amx_tile in /proc/cpuinfo")
        return tuple(why)
    if "amx-tile" not in host.llvm_host_features():
        why.append("LLVM (llvmlite) does not see amx-tile in the host CPU's features")
    perm = host.request_tile_permission()
    if not perm.granted:
        why.append(f"Linux did not grant AMX tile data: {perm.reason}")
    return tuple(why)


def availability() -> tuple[bool, str]:
    """(True, "available") or (False, the reasons native AMX cannot run here)."""
    why = _reasons()
    return (not why, "; ".join(why) if why else "available")


def require_native() -> None:
    """Raise :class:`AmxUnavailable` saying why, unless this process can execute AMX instructions."""
    ok, why = availability()
    if not ok:
        from .. import host
        raise AmxUnavailable(f"native AMX is unavailable: {why}",
                             rule="native AMX needs CPUID AMX-TILE and Linux arch_prctl(ARCH_REQ_XCOMP_PERM, "
                                  "XFEATURE_XTILEDATA) (Linux Documentation/arch/x86/xstate.rst)",
                             values={"cpu": host.cpu_model_name(), "amx_features": host.amx_features()})


def host_supports(mnemonic: str) -> bool:
    """Does this CPU have the AMX extension that ``mnemonic`` needs?"""
    from .. import host
    return mnemonic in jit.DOT_INTRINSICS and jit.DOT_INTRINSICS[mnemonic][1] in host.amx_features()


def _moves_module():
    """Per tile number t: ``tileloadd_t`` / ``tileloaddt1_t(cfg, src, stride, out)`` (load tmm_t from memory, store
    it to out at stride 64), ``tilestored_t(cfg, tile, dst, stride)`` (load tmm_t from the machine's tile image,
    store it to memory) and ``tilezero_t(cfg, tile, out)``; each loads the configuration and releases the tiles."""
    from llvmlite import ir
    from ..jit.build import I64, PTR, VOID, define
    from ..jit.x86amx import Amx
    m = ir.Module(name="amx_moves")
    amx = Amx(m)
    for t in range(8):
        for kind, t1 in (("tileloadd", False), ("tileloaddt1", True)):
            _, b, (cfg, src, stride, out) = define(m, f"{kind}_{t}", VOID, [PTR, PTR, I64, PTR])
            amx.ldtilecfg(b, cfg)
            amx.tileloadd(b, t, src, stride, t1=t1)
            amx.tilestored(b, t, out, 64)
            amx.tilerelease(b)
            b.ret_void()
        _, b, (cfg, tile, dst, stride) = define(m, f"tilestored_{t}", VOID, [PTR, PTR, PTR, I64])
        amx.ldtilecfg(b, cfg)
        amx.tileloadd(b, t, tile, 64)
        amx.tilestored(b, t, dst, stride)
        amx.tilerelease(b)
        b.ret_void()
        _, b, (cfg, tile, out) = define(m, f"tilezero_{t}", VOID, [PTR, PTR, PTR])
        amx.ldtilecfg(b, cfg)
        amx.tileloadd(b, t, tile, 64)
        amx.tilezero(b, t)
        amx.tilestored(b, t, out, 64)
        amx.tilerelease(b)
        b.ret_void()
    return m


def _dots_module(mnemonic: str):
    """``f{d}{s1}{s2}(cfg, c, a, b, out)`` for every distinct tile triple: load dst <- c, src1 <- a, src2 <- b, the
    TMUL instruction, store dst -> out."""
    from llvmlite import ir
    from ..jit.build import PTR, VOID, define
    from ..jit.x86amx import Amx
    m = ir.Module(name=f"amx_dot_{mnemonic}")
    amx = Amx(m)
    for d in range(8):
        for s1 in range(8):
            for s2 in range(8):
                if len({d, s1, s2}) < 3:
                    continue
                _, b, (cfg, c, a, bb, out) = define(m, f"f{d}{s1}{s2}", VOID, [PTR] * 5)
                amx.ldtilecfg(b, cfg)
                amx.tileloadd(b, d, c, 64)
                amx.tileloadd(b, s1, a, 64)
                amx.tileloadd(b, s2, bb, 64)
                amx.dot(b, isa.get(mnemonic).intrinsic, d, s1, s2)
                amx.tilestored(b, d, out, 64)
                amx.tilerelease(b)
                b.ret_void()
    return m


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


class _Kernels:
    """The JIT-compiled per-instruction functions (immediate tile numbers), built once per process."""

    _lock = threading.Lock()
    _instance = None

    def __init__(self):
        self.moves = jit.compile_module(_moves_module(), amx=True)
        self._cache: dict = {}
        self._dots: dict = {}

    @classmethod
    def get(cls) -> "_Kernels":
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def fn(self, name: str):
        f = self._cache.get(name)
        if f is None:
            vp = ctypes.c_void_p
            if name.startswith("tilezero"):
                f = self.moves.cfunc(name, None, vp, vp, vp)
            else:
                f = self.moves.cfunc(name, None, vp, vp, ctypes.c_int64, vp) if name.startswith(
                    "tileload") else self.moves.cfunc(name, None, vp, vp, vp, ctypes.c_int64)
            self._cache[name] = f
        return f

    def dot(self, mnemonic: str, dst: int, src1: int, src2: int):
        """(cfg, c, a, b, out): load dst<-c, src1<-a, src2<-b, the TMUL instruction, store dst -> out."""
        with self._lock:
            mod = self._dots.get(mnemonic)
            if mod is None:
                mod = jit.compile_module(_dots_module(mnemonic), amx=True)
                self._dots[mnemonic] = mod
            key = (mnemonic, dst, src1, src2)
            f = self._cache.get(key)
            if f is None:
                vp = ctypes.c_void_p
                f = mod.cfunc(f"f{dst}{src1}{src2}", None, vp, vp, vp, vp, vp)
                self._cache[key] = f
            return f


def _cfg_image(m) -> np.ndarray:
    """m.config as a 64-byte image with start_row 0 (the restart state is handled by the machine)."""
    img = np.frombuffer(m.config.to_bytes(), np.uint8).copy()
    img[1] = 0
    return img


class _Contiguous:
    """A C-contiguous, writeable view of ``memory`` for the native call, copied back afterwards if needed."""

    def __init__(self, memory: np.ndarray, write: bool):
        self.memory = memory
        self.write = write
        ok = memory.flags.c_contiguous and (memory.flags.writeable or not write) and memory.dtype == np.uint8
        self.buf = memory if ok else np.ascontiguousarray(memory, dtype=np.uint8).copy()

    def __enter__(self) -> np.ndarray:
        return self.buf

    def __exit__(self, *exc) -> None:
        if self.write and self.buf is not self.memory and exc[0] is None:
            self.memory[...] = self.buf


class NativeBackend:
    """Executes each checked instruction on the CPU's AMX unit (see the module docstring)."""

    name = "native"

    def __init__(self) -> None:
        require_native()
        self.k = _Kernels.get()
        from . import kernels as emulator_kernels  # data movement for the start_row != 0 restarts
        self._emu = emulator_kernels

    def load_config(self, m) -> None:
        pass  # the machine holds the configuration; every native call re-loads it

    def _load(self, m, tmm, memory, base, stride, kind):
        rows, colsb = m.config.shape(tmm)
        if m.config.start_row != 0:
            self._emu.tileload(m.tiles[tmm], memory, base, stride, rows, colsb, m.config.start_row)
            return
        out = np.zeros((16, 64), np.uint8)
        cfg = _cfg_image(m)
        with _Contiguous(memory, write=False) as buf:
            self.k.fn(f"{kind}_{tmm}")(_ptr(cfg), _ptr(buf) + base, stride, _ptr(out))
        m.tiles[tmm] = out

    def tileload(self, m, tmm, memory, base, stride) -> None:
        self._load(m, tmm, memory, base, stride, "tileloadd")

    def tileloaddt1(self, m, tmm, memory, base, stride) -> None:
        self._load(m, tmm, memory, base, stride, "tileloaddt1")

    def tilestore(self, m, tmm, memory, base, stride) -> None:
        rows, colsb = m.config.shape(tmm)
        if m.config.start_row != 0:
            self._emu.tilestore(m.tiles[tmm], memory, base, stride, rows, colsb, m.config.start_row)
            return
        cfg = _cfg_image(m)
        tile = np.ascontiguousarray(m.tiles[tmm])
        with _Contiguous(memory, write=True) as buf:
            self.k.fn(f"tilestored_{tmm}")(_ptr(cfg), _ptr(tile), _ptr(buf) + base, stride)

    def tilezero(self, m, tmm) -> None:
        rows, colsb = m.config.shape(tmm)
        if colsb % 4 or rows == 0:
            m.tiles[tmm] = 0  # silicon accepts TILEZERO here, but such a tile cannot be stored to look at it
            return
        out = np.zeros((16, 64), np.uint8)
        cfg = _cfg_image(m)
        tile = np.ascontiguousarray(m.tiles[tmm])
        self.k.fn(f"tilezero_{tmm}")(_ptr(cfg), _ptr(tile), _ptr(out))
        m.tiles[tmm] = out

    def dot(self, m, mnemonic, dst, src1, src2) -> None:
        if not host_supports(mnemonic):
            from .. import host
            need = jit.DOT_INTRINSICS.get(mnemonic, (None, "?"))[1]
            raise AmxUnavailable(f"this CPU cannot run {mnemonic} natively",
                                 rule=f"{mnemonic} needs {need} (CPUID)",
                                 values={"mnemonic": mnemonic, "host_amx": host.amx_features()})
        cfg = _cfg_image(m)
        c, a, b = (np.ascontiguousarray(m.tiles[t]) for t in (dst, src1, src2))
        out = np.zeros((16, 64), np.uint8)
        self.k.dot(mnemonic, dst, src1, src2)(_ptr(cfg), _ptr(c), _ptr(a), _ptr(b), _ptr(out))
        m.tiles[dst] = out

    def release(self, m) -> None:
        pass  # every native call ends with TILERELEASE already
