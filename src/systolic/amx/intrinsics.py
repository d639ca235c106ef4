"""The AMX intrinsics of clang's ``amxintrin.h`` in Python: tile values that carry their shape.

clang (``lib/Headers/amxintrin.h``, REFERENCE.md section 7) gives C programmers ``__tile1024i`` = {row, col,
tile} and ``__tile_loadd``, ``__tile_stream_loadd``, ``__tile_dpbssd`` (``dpbsud``, ``dpbusd``, ``dpbuud``,
``dpbf16ps``; ``dpfp16ps`` in amxfp16intrin.h), ``__tile_zero``, ``__tile_stored``; each calls the shaped
``*_internal`` intrinsic with the shapes taken from the structs (the seed proposal, sections 2-3):

    __tile_loadd(dst, base, stride)   dst->tile = _tile_loadd_internal(dst->row, dst->col, base, stride)
    __tile_dpbssd(dst, src0, src1)    dst->tile = _tile_dpbssd_internal(src0.row, src1.col, src0.col,
                                                                        dst->tile, src0.tile, src1.tile)
    __tile_stored(base, stride, src)  _tile_stored_internal(src.row, src.col, base, stride, src.tile)

Here :class:`Tile` is that struct and the functions below are those intrinsics. (When traced, a TMUL's
(m, n, k) are ``(dst.row, dst.col, src0.col)``: equal to clang's for every shape the hardware accepts, and
they keep the dst tile's own shape in the configuration, so a mismatched dst faults as it does eagerly.)
They run in two ways:

* **eagerly** on a :class:`~systolic.amx.TileMachine` (``use_machine``; the emulator by default): each call
  writes a TILECFG holding its operands' shapes (rows in a byte, colsb in a u16, exactly as the compiled code
  stores them), executes the instruction on tiles 0-2 and releases the tiles. Every hardware rule applies, so a
  shape the hardware rejects raises InvalidOpcode / GeneralProtection, and a row outside memory MemoryFault;
* **traced** inside :func:`systolic.compiler.tracing.trace`: the same calls append the ``.internal``
  intrinsics to an IR function (shapes may then be traced values, e.g. function arguments). The intrinsics
  only read :data:`ACTIVE_TRACER`, which the tracer sets: they never import the compiler (the compiler's front
  end imports them, so the dependency points one way).

A Tile that was never written holds zeros (the compiler turns an undefined tile reaching a phi into a tilezero).

Values are checked, not truncated: C converts a shape to ``short`` and a stride to ``size_t`` silently (and
LLVM then truncates the i16 shape to the rows byte of TILECFG), but here a Python int shape must lie in
0..65535 (an i16 bit pattern read as a count), a stride must be an integer that fits i64 and a pointer offset an
integer; a float, a bool or a value out of range is an InvalidValue. Inside that range the hardware's own rules
apply unchanged (``Tile(256, 64)`` stores rows byte 0, exactly as the compiled code does).

>>> import numpy as np
>>> buf = np.arange(1024, dtype=np.int64).astype(np.uint8)
>>> a = Tile(8, 32); b = Tile(8, 32); c = Tile(8, 32)
>>> tile_loadd(a, Ptr(buf), 32); tile_loadd(b, Ptr(buf), 32)
>>> tile_dpbssd(c, a, b)
>>> c.numpy(np.int32).shape
(8, 8)
"""

from __future__ import annotations

import contextlib
import contextvars
import threading

import numpy as np

from ..errors import InvalidValue
from . import isa as _isa

#: besides these, one ``tile_*`` function per load and TMUL record (generated below, named by the record's api)
__all__ = ["Tile", "Ptr", "tile_stored", "tile_zero", "use_machine",
           "current_machine", "eager_load", "eager_store", "eager_zero", "eager_dot", "mask_image", "config_bytes"]

_state = threading.local()


def current_machine():
    """The TileMachine eager intrinsics run on (a Sapphire Rapids emulator unless ``use_machine`` says)."""
    m = getattr(_state, "machine", None)
    if m is None:
        from .machine import TileMachine
        m = _state.machine = TileMachine("sapphirerapids")
    return m


@contextlib.contextmanager
def use_machine(machine):
    """Run eager intrinsics on ``machine`` inside the ``with`` block (e.g. a native or spec-path machine).

    ``machine`` is a :class:`~systolic.amx.TileMachine` (None: the default emulator). Anything else, a CPU
    name included, is refused here with InvalidValue rather than failing at the first intrinsic: build the
    machine explicitly, ``use_machine(TileMachine("graniterapids"))``.
    """
    from .machine import TileMachine
    if machine is not None and not isinstance(machine, TileMachine):
        hint = f"; for a CPU name write use_machine(TileMachine({machine!r}))" if isinstance(machine, str) else ""
        raise InvalidValue(f"use_machine needs a TileMachine (or None for the default emulator){hint}",
                           rule="use_machine(machine): machine is a systolic.amx.TileMachine or None",
                           values={"machine": machine if isinstance(machine, str) else type(machine).__name__})
    old = getattr(_state, "machine", None)
    _state.machine = machine
    try:
        yield machine
    finally:
        _state.machine = old


#: The tracer the intrinsics hand their calls to instead of executing them (None: they run eagerly). Set by
#: :func:`systolic.compiler.tracing.trace` (which re-exports it as ``tracing._current``); the intrinsics call
#: only ``register(tile)``, ``tile_load(dst, base, stride, mnemonic)``, ``tile_store(base, stride, src)``,
#: ``tile_zero(dst)`` and ``tile_dot(mnemonic, dst, src0, src1)`` on it.
ACTIVE_TRACER: contextvars.ContextVar = contextvars.ContextVar("systolic_tracer", default=None)


def _tracer():
    return ACTIVE_TRACER.get()


# ------------------------------------------------------------------------------ eager primitives
def config_bytes(shapes: dict[int, tuple[int, int]]) -> bytes:
    """TILECFG image, palette 1, rows[t] = rows & 0xFF (a byte) and colsb[t] = cols & 0xFFFF (u16 LE).

    SDM LDTILECFG / REFERENCE.md 6: byte 0 palette, bytes 16-31 colsb[0..7], bytes 48-55 rows[0..7]. The
    truncation is what storing an i16 shape into the byte field does, so eager and compiled code agree.
    """
    cfg = bytearray(64)
    cfg[0] = 1
    for t, (rows, cols) in shapes.items():
        cfg[48 + t] = int(rows) & 0xFF
        cfg[16 + 2 * t:18 + 2 * t] = (int(cols) & 0xFFFF).to_bytes(2, "little")
    return bytes(cfg)


def mask_image(img: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Zero the bytes of a 16 x 64 tile image outside ``rows`` x ``cols`` (in place); returns it."""
    r, c = min(int(rows) & 0xFF, 16), min(int(cols) & 0xFFFF, 64)
    img[r:, :] = 0
    img[:, c:] = 0
    return img


def _run(tm, shapes: dict[int, tuple[int, int]], images: dict[int, np.ndarray], action):
    tm.ldtilecfg(config_bytes(shapes))
    for t, img in images.items():
        tm.tiles[t] = mask_image(np.array(img, np.uint8).reshape(16, 64), *shapes[t])
    try:
        action()
        return tm.tiles[0].copy()
    finally:
        if tm.configured:
            tm.tilerelease()


def eager_load(tm, rows, cols, memory, base, stride, stream: bool = False, *, mnemonic: str | None = None) \
        -> np.ndarray:
    """``_tile_loadd_internal(rows, cols, base, stride)`` on machine ``tm``: the loaded 16 x 64 image.
    ``mnemonic`` names the load instruction (any load record: tileloadd, tileloaddt1, ...); ``stream`` is the
    older spelling of ``mnemonic="tileloaddt1"``."""
    op = getattr(tm, mnemonic or ("tileloaddt1" if stream else "tileloadd"))
    return _run(tm, {0: (rows, cols)}, {}, lambda: op(0, memory, base, stride))


def eager_store(tm, image, rows, cols, memory, base, stride) -> None:
    """``_tile_stored_internal(rows, cols, base, stride, tile)`` on machine ``tm``."""
    _run(tm, {0: (rows, cols)}, {0: image}, lambda: tm.tilestored(0, memory, base, stride))


def eager_zero(tm, rows, cols) -> np.ndarray:
    """``_tile_zero_internal(rows, cols)``: checks the shape on ``tm`` (LDTILECFG rules) and gives zeros."""
    return _run(tm, {0: (rows, cols)}, {}, lambda: tm.tilezero(0))


def eager_dot(tm, mnemonic: str, c, a, b) -> np.ndarray:
    """A TMUL with C, A, B each ``(image, rows, cols)`` in tmm0, tmm1, tmm2 shaped as given; the new C image."""
    shapes = {0: (c[1], c[2]), 1: (a[1], a[2]), 2: (b[1], b[2])}
    return _run(tm, shapes, {0: c[0], 1: a[0], 2: b[0]}, lambda: getattr(tm, mnemonic)(0, 1, 2))


# ------------------------------------------------------------------------------ the user API
class Ptr:
    """A pointer for eager intrinsics: a 1-D uint8 array and a byte offset (``Ptr(buf) + 64``)."""

    def __init__(self, memory: np.ndarray, offset: int = 0) -> None:
        if not isinstance(memory, np.ndarray) or memory.dtype != np.uint8 or memory.ndim != 1:
            raise InvalidValue("Ptr needs a 1-D uint8 numpy array",
                               values={"type": type(memory).__name__, "dtype": str(getattr(memory, "dtype", ""))})
        self.memory, self.offset = memory, _integer(offset, "offset", _I64)

    def __add__(self, k) -> "Ptr":
        return Ptr(self.memory, self.offset + _integer(k, "offset", _I64))

    def __repr__(self) -> str:
        return f"Ptr(<{self.memory.size} bytes>, {self.offset})"


_RULE = "systolic.amx.intrinsics: shapes are 0..65535 (i16), strides and offsets integers that fit i64"
_U16 = (0, 0xFFFF)
_I64 = (-(1 << 63), (1 << 63) - 1)


def _integer(x, what: str, bounds: tuple[int, int]) -> int:
    """``x`` as an int inside ``bounds``; a float, a bool or an out-of-range value is an InvalidValue (C would
    convert it silently; the Python API refuses it instead)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        also = "" if what == "offset" else " (or a traced value inside trace())"
        raise InvalidValue(f"{what} must be an integer{also}, not {type(x).__name__} {x!r}", rule=_RULE,
                           values={what: repr(x)})
    x = int(x)
    if not bounds[0] <= x <= bounds[1]:
        raise InvalidValue(f"{what} = {x} is outside {bounds[0]}..{bounds[1]}", rule=_RULE,
                           values={what: x, "min": bounds[0], "max": bounds[1]})
    return x


def _int16(x, what: str) -> int:
    return _integer(x, what, _U16)


class Tile:
    """clang's ``__tile1024i``: a tile of ``rows`` x ``colsb`` bytes; the shape is set once (seed section 3)."""

    def __init__(self, rows, colsb) -> None:
        tr = _tracer()
        object.__setattr__(self, "_frozen", False)
        # a plain int is checked in both modes (a traced shape is a Scalar, checked when it is traced)
        rows = rows if tr is not None and not isinstance(rows, (int, np.integer)) else _int16(rows, "rows")
        colsb = colsb if tr is not None and not isinstance(colsb, (int, np.integer)) else _int16(colsb, "colsb")
        self.rows, self.colsb = rows, colsb
        if tr is not None:
            self.value = None  # the IR value holding the tile (None: never written)
            self.image = None
            tr.register(self)
        else:
            self.image = np.zeros((16, 64), np.uint8)
            self.value = None
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, name, v):
        if name in ("rows", "colsb") and getattr(self, "_frozen", False):
            raise InvalidValue("a tile's shape is initialised once (seed section 3: const row/col)",
                               values={"field": name})
        object.__setattr__(self, name, v)

    def numpy(self, dtype=np.uint8) -> np.ndarray:
        """The tile's rows x colsb bytes viewed as ``dtype`` (eager tiles only); each row's colsb bytes must
        hold whole elements of ``dtype`` (else InvalidValue)."""
        if self.image is None:
            raise InvalidValue("a traced tile has no data; run the compiled function instead")
        from .machine import tile_view_dtype
        dt = tile_view_dtype(dtype, "Tile.numpy dtype")
        r, c = min(self.rows & 0xFF, 16), min(self.colsb, 64)
        if c % dt.itemsize:
            raise InvalidValue(f"a row of {c} bytes does not hold whole {dt} elements ({dt.itemsize} bytes each)",
                               rule="Tile.numpy: colsb is a multiple of the dtype's size",
                               values={"colsb": c, "dtype": str(dt), "itemsize": dt.itemsize})
        return np.ascontiguousarray(self.image[:r, :c]).view(dt)

    def __repr__(self) -> str:
        return f"Tile(rows={self.rows!r}, colsb={self.colsb!r})"


def _ptr(base):
    if isinstance(base, Ptr):
        return base
    if isinstance(base, np.ndarray):
        return Ptr(base)
    raise InvalidValue("the base of an eager tile load/store is a Ptr (or a uint8 array)",
                       values={"base": type(base).__name__})


def _check_tile(t, what: str) -> Tile:
    if not isinstance(t, Tile):
        raise InvalidValue(f"{what} must be a Tile", values={what: type(t).__name__})
    return t


def _load(dst: Tile, base, stride, mnemonic: str) -> None:
    _check_tile(dst, "dst")
    tr = _tracer()
    if tr is not None:
        tr.tile_load(dst, base, stride, mnemonic)
        return
    p = _ptr(base)
    stride = _integer(stride, "stride", _I64)
    dst.image = eager_load(current_machine(), dst.rows, dst.colsb, p.memory, p.offset, stride, mnemonic=mnemonic)


def tile_stored(base, stride, src: Tile) -> None:
    """``__tile_stored``: store ``src``'s rows x colsb to ``base``, rows ``stride`` bytes apart (TILESTORED)."""
    _check_tile(src, "src")
    tr = _tracer()
    if tr is not None:
        tr.tile_store(base, stride, src)
        return
    p = _ptr(base)
    eager_store(current_machine(), src.image, src.rows, src.colsb, p.memory, p.offset,
                _integer(stride, "stride", _I64))


def tile_zero(dst: Tile) -> None:
    """``__tile_zero``: TILEZERO."""
    _check_tile(dst, "dst")
    tr = _tracer()
    if tr is not None:
        tr.tile_zero(dst)
        return
    dst.image = eager_zero(current_machine(), dst.rows, dst.colsb)


def _dot(mnemonic: str, dst: Tile, src0: Tile, src1: Tile) -> None:
    for t, w in ((dst, "dst"), (src0, "src0"), (src1, "src1")):
        _check_tile(t, w)
    tr = _tracer()
    if tr is not None:
        tr.tile_dot(mnemonic, dst, src0, src1)
        return
    dst.image = eager_dot(current_machine(), mnemonic, (dst.image, dst.rows, dst.colsb),
                          (src0.image, src0.rows, src0.colsb), (src1.image, src1.rows, src1.colsb))


def _load_function(rec):
    """clang's ``__tile_loadd``-style function of one load record: ``f(dst, base, stride)`` loads ``dst``'s rows x
    colsb from ``base``, rows ``stride`` bytes apart."""
    def load(dst: Tile, base, stride) -> None:
        _load(dst, base, stride, rec.mnemonic)
    load.__name__ = load.__qualname__ = rec.api
    load.__doc__ = f"``__{rec.api}(dst, base, stride)``: {rec.doc}"
    return load


def _dot_function(rec):
    """clang's ``__tile_dpbssd``-style function of one TMUL record: ``f(dst, src0, src1)``, dst += src0 . src1."""
    def dot(dst: Tile, src0: Tile, src1: Tile) -> None:
        _dot(rec.mnemonic, dst, src0, src1)
    dot.__name__ = dot.__qualname__ = rec.api
    dot.__doc__ = f"``__{rec.api}(dst, src0, src1)``: {rec.doc}"
    return dot


# one function per load record (tile_loadd, tile_stream_loadd, ...) and per TMUL record (tile_dpbssd ...
# tile_dphf8ps), named as clang's amx*intrin.h names them (the record's ``api``): a new record is a new function
for _r in _isa.LOADS:
    globals()[_r.api] = _load_function(_r)
for _r in _isa.TMULS:
    globals()[_r.api] = _dot_function(_r)
__all__ += [r.api for r in (*_isa.LOADS, *_isa.TMULS) if r.api not in __all__]
