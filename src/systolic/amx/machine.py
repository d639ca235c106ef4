"""The AMX tile machine: architectural state, every fault rule, one method per instruction.

State (SDM vol. 1 ch. 18 "Intel AMX"; all public):

* ``configured`` - TILES_CONFIGURED;
* ``config`` - the :class:`~systolic.amx.tilecfg.TileConfig` in force (palette 0 = INIT);
* ``tiles`` - uint8 array (8, 16, 64): tmm0-7, 16 rows of 64 bytes. Bytes outside a
  tile's rows/colsb are zero, as every instruction leaves them.

Each instruction method checks, in this order, the CPU feature (#UD), the SDM's
exception class of the instruction (#UD / #GP, AMX-E1 ... AMX-E5) and memory
bounds (:class:`~systolic.errors.MemoryFault`, raised where the hardware would
page-fault), and only then asks the backend to execute. Faulting loads and
stores are handled here: the rows before the faulting row take effect and
``config.start_row`` is left at the faulting row, so executing the instruction
again resumes there (SDM TILELOADD: "In the case of a memory fault in the middle
of an instruction, the tilecfg.start_row := start").
"""

from __future__ import annotations

import inspect

import numpy as np

from .. import counters, fpenv
from ..errors import InvalidOpcode, InvalidValue, MemoryFault
from . import kernels
from . import isa as ISA
from .backends import Backend, get_backend
from .cpu import CpuModel, INSTRUCTION_FEATURE, get_cpu
from .tilecfg import NTILES, TileConfig, check_ldtilecfg
from ..vocabulary import check_path, renamed, spelled

__all__ = ["TileMachine", "TMUL_MNEMONICS"]

#: the TMUL mnemonics, in the records' order (systolic.amx.isa)
TMUL_MNEMONICS = ISA.TMUL_MNEMONICS

#: element types of (src1, src2, dst) of each TMUL instruction, for users reading tiles back (from the records)
TMUL_TYPES = {r.mnemonic: r.types for r in ISA.TMULS}


def _check_memory(memory) -> np.ndarray:
    if not isinstance(memory, np.ndarray) or memory.dtype != np.uint8 or memory.ndim != 1:
        got = type(memory).__name__ if not isinstance(memory, np.ndarray) else f"{memory.dtype} {memory.shape}"
        raise InvalidValue("memory must be a 1-D uint8 numpy array", rule="TileMachine memory operands",
                           values={"memory": got})
    return memory


def _int(v, what: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise InvalidValue(f"{what} must be an integer", values={what: v})
    return int(v)


def tile_view_dtype(dtype, rule: str) -> np.dtype:
    """``dtype`` as a numpy dtype that tile bytes can be viewed as (numeric, fixed size), else InvalidValue under
    ``rule`` (TileMachine.read_tile and the intrinsics' Tile.numpy)."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise InvalidValue(f"{dtype!r} is not a numpy dtype", rule=rule, values={"dtype": repr(dtype)}) from None
    if dt.hasobject or dt.itemsize == 0:
        raise InvalidValue(f"tile bytes cannot be viewed as {dt}", rule=rule, values={"dtype": str(dt)})
    return dt


class TileMachine:
    """An AMX unit driven instruction by instruction.

    >>> m = TileMachine("sapphirerapids")
    >>> m.ldtilecfg(TileConfig(palette=1, tiles={0: (2, 8), 1: (2, 8), 2: (2, 8)}))
    >>> m.configured
    True

    ``device``: the CPU model (``"sapphirerapids"``, ``"spr"``, ...: decides which instructions exist; default:
    sapphirerapids).
    ``path``: ``"fast"`` (vectorised numpy kernels, proven bit-identical; the default) or ``"spec"`` (the SDM
    pseudo-code, slow; cpu backend only). ``backend``: where the instructions run: ``"cpu"`` (this process, by
    ``path``) or ``"native"`` (real AMX, when the CPU has it), or a Backend object. The older spellings ``cpu=``
    and ``backend="emulator"`` / ``"spec"`` keep working for one release (DeprecationWarning); a ``device=`` or
    ``path=`` given beside one that says otherwise is InvalidValue.
    """

    def __init__(self, device: str | CpuModel | None = None, backend: str | Backend = "cpu", *,
                 path: str | None = None, **renamed_keywords) -> None:
        if renamed_keywords:             # device=None: not given (an older cpu= beside a given device= raises)
            device = renamed(renamed_keywords, {"cpu": "device"}, "TileMachine", device=device)["device"]
        device = "sapphirerapids" if device is None else device
        if path is not None:             # None: not given (fast, unless an older backend= spelling says spec)
            check_path(path, "TileMachine")
        if isinstance(backend, str) and backend in ("emulator", "spec"):      # the older spelling of path=
            spelled(f"backend={backend!r}", {"backend": "cpu", "path": "fast" if backend == "emulator" else "spec"},
                    "TileMachine", stacklevel=2, path=path)
        elif isinstance(backend, str) and backend == "cpu":
            backend = "spec" if path == "spec" else "emulator"          # the cpu backend's two paths
        elif path == "spec":
            raise InvalidValue("the spec path runs on the cpu backend", rule="TileMachine: path='spec' is the "
                               "cpu backend's", values={"backend": getattr(backend, "name", backend), "path": path})
        self.cpu: CpuModel = get_cpu(device)
        self.backend: Backend = get_backend(backend)
        self.configured: bool = False
        self.config: TileConfig = TileConfig.init()
        self.tiles: np.ndarray = np.zeros((NTILES, 16, 64), dtype=np.uint8)

    def __repr__(self) -> str:
        return (f"TileMachine(cpu={self.cpu.name!r}, backend={self.backend.name!r}, "
                f"configured={self.configured}, config={self.config!r})")

    # ------------------------------------------------------------ checks shared by the instructions
    def _feature(self, mnemonic: str) -> None:
        feat = INSTRUCTION_FEATURE[mnemonic]
        if not self.cpu.has(feat):
            raise InvalidOpcode(f"{mnemonic.upper()} needs {feat.upper()}, which {self.cpu.name} lacks",
                                rule=f"SDM/ISE {mnemonic.upper()}: CPUID feature flag {feat.upper()}",
                                values={"cpu": self.cpu.name, "feature": feat})

    def _configured(self, mnemonic: str) -> None:
        if not self.configured:
            raise InvalidOpcode(f"{mnemonic.upper()} with tiles not configured",
                                rule="SDM AMX exception classes: #UD if TILES_CONFIGURED == 0",
                                values={"instruction": mnemonic})

    def _tile_number(self, mnemonic: str, tmm, what: str = "tile") -> int:
        t = _int(tmm, what)
        limit = self.cpu.palette(self.config.palette).max_names if self.configured else NTILES
        if not 0 <= t < limit:
            raise InvalidOpcode(f"{mnemonic.upper()}: {what} tmm{t} does not exist",
                                rule="SDM AMX exception classes: #UD if a tile >= palette max_names",
                                values={what: t, "max_names": limit})
        return t

    def _valid(self, mnemonic: str, t: int, what: str = "tile") -> None:
        if not self.config.valid(t):
            raise InvalidOpcode(f"{mnemonic.upper()}: {what} tmm{t} is not a valid (configured) tile",
                                rule="SDM AMX exception classes: #UD if a tile is not valid (rows or colsb 0)",
                                values={what: t, "rows": self.config.rows[t], "colsb": self.config.colsb[t]})

    def _colsb4(self, mnemonic: str, t: int, what: str = "tile") -> None:
        if self.config.colsb[t] % 4:
            raise InvalidOpcode(f"{mnemonic.upper()}: tmm{t} colsb is not a multiple of 4",
                                rule="SDM AMX exception classes: #UD if colsb % 4 != 0",
                                values={what: t, "colsb": self.config.colsb[t]})

    def _zero_tilecfg_start(self) -> None:
        if self.config.start_row:
            self.config = self.config.with_start_row(0)

    # ------------------------------------------------------------ configuration
    def ldtilecfg(self, config, base: int | None = None) -> None:
        """LDTILECFG m512: load TILECFG (a TileConfig, 64 bytes, or ``(memory, base)``).

        SDM vol. 2 LDTILECFG: palette 0 returns to the INIT state; otherwise every
        #GP rule of :func:`~systolic.amx.tilecfg.check_ldtilecfg`; a successful
        load zeroes all tile data.
        """
        self._feature("ldtilecfg")
        if base is not None:
            memory = _check_memory(config)
            base = _int(base, "base")
            if base < 0 or base + 64 > memory.size:
                raise MemoryFault("LDTILECFG reads outside memory", address=base if base < 0 else max(base, memory.size),
                                  rule="64-byte operand inside the memory image",
                                  values={"base": base, "memory_size": memory.size})
            config = memory[base:base + 64]
        cfg = config if isinstance(config, TileConfig) else TileConfig.from_bytes(config)
        check_ldtilecfg(cfg, self.cpu)
        counters.count("amx", op="ldtilecfg", via="machine")
        self.tiles[:] = 0
        if cfg.palette == 0:
            self.configured = False
            self.config = TileConfig.init()
            self.backend.release(self)
            return
        self.configured = True
        self.config = cfg
        self.backend.load_config(self)

    def sttilecfg(self, memory, base: int) -> None:
        """STTILECFG m512: store TILECFG (64 zero bytes when tiles are not configured; SDM vol. 2 STTILECFG)."""
        self._feature("sttilecfg")
        memory = _check_memory(memory)
        base = _int(base, "base")
        if base < 0 or base + 64 > memory.size:
            raise MemoryFault("STTILECFG writes outside memory", address=base if base < 0 else max(base, memory.size),
                              rule="64-byte operand inside the memory image",
                              values={"base": base, "memory_size": memory.size})
        if not memory.flags.writeable:
            raise InvalidValue("STTILECFG needs writable memory", values={"writeable": False})
        img = self.config.to_bytes() if self.configured else bytes(64)
        memory[base:base + 64] = np.frombuffer(img, dtype=np.uint8)
        counters.count("amx", op="sttilecfg", via="machine")

    def tilerelease(self) -> None:
        """TILERELEASE: back to the INIT state (no configuration needed; SDM vol. 2 TILERELEASE)."""
        self._feature("tilerelease")
        counters.count("amx", op="tilerelease", via="machine")
        self.backend.release(self)
        self.configured = False
        self.config = TileConfig.init()
        self.tiles[:] = 0

    # ------------------------------------------------------------ loads and stores
    def _transfer_checks(self, mnemonic: str, tmm, memory, base, stride) -> tuple[int, np.ndarray, int, int]:
        self._feature(mnemonic)
        self._configured(mnemonic)
        t = self._tile_number(mnemonic, tmm)
        self._valid(mnemonic, t)
        self._colsb4(mnemonic, t)
        rows = self.config.rows[t]
        if self.config.start_row >= rows:
            raise InvalidOpcode(f"{mnemonic.upper()}: start_row >= rows of tmm{t}",
                                rule="SDM AMX-E3: #UD if tilecfg.start_row >= tile rows",
                                values={"start_row": self.config.start_row, "rows": rows, "tile": t})
        stride = _int(stride, "stride")
        if not -(1 << 63) <= stride < 1 << 63:
            # the stride is a 64-bit index register (SIB index * scale); the intrinsics refuse the same values
            raise InvalidValue(f"{mnemonic.upper()}: stride does not fit a signed 64-bit register",
                               rule="TILELOADD/TILESTORED stride: an integer in -2**63 .. 2**63-1",
                               values={"stride": stride})
        return t, _check_memory(memory), _int(base, "base"), stride

    def _first_fault(self, t: int, memory: np.ndarray, base: int, stride: int):
        """(row, address) of the first row whose bytes leave the memory image, or None."""
        rows, colsb = self.config.shape(t)
        for r in range(self.config.start_row, rows):
            addr = base + r * stride
            if addr < 0:
                return r, addr
            if addr + colsb > memory.size:
                return r, max(addr, memory.size)
        return None

    # the loads (tileloadd, tileloaddt1, ...) are one method per load record, below the class: each is
    # TILELOADD's operation, its hint having no architectural effect
    def _load(self, mnemonic, tmm, memory, base, stride) -> None:
        self._transfer(mnemonic, tmm, memory, base, stride, kernels.tileload, self.backend.tileload)

    def tilestored(self, tmm: int, memory, base: int, stride: int) -> None:
        """TILESTORED [base + index*scale], tmm: colsb bytes of each row to ``base + r*stride``."""
        self._transfer("tilestored", tmm, memory, base, stride, kernels.tilestore, self.backend.tilestore)

    def _transfer(self, mnemonic, tmm, memory, base, stride, partial, execute) -> None:
        """A tile load or store, restartable (SDM vol. 2 TILELOADD/TILESTORED).

        A memory fault at row ``row`` leaves rows start_row ... row-1 transferred (a load zeroes the rows
        from start_row up first) and start_row = row, so executing again resumes; ``partial`` is the
        emulator's data movement for that part, ``execute`` the backend's whole instruction.
        """
        t, memory, base, stride = self._transfer_checks(mnemonic, tmm, memory, base, stride)
        if mnemonic == "tilestored" and not memory.flags.writeable:
            raise InvalidValue("TILESTORED needs writable memory", values={"writeable": False})
        fault = self._first_fault(t, memory, base, stride)
        if fault is not None:
            row, addr = fault
            rows, colsb = self.config.shape(t)
            partial(self.tiles[t], memory, base, stride, row, colsb, self.config.start_row)
            self.config = self.config.with_start_row(row)
            raise MemoryFault(f"{mnemonic.upper()} tmm{t}: row {row} is outside memory", address=addr, row=row,
                              rule="memory operand inside the memory image (start_row keeps the faulting row)",
                              values={"base": base, "stride": stride, "colsb": colsb, "memory_size": memory.size})
        execute(self, t, memory, base, stride)
        if counters.active():                # the params are built only while something records
            counters.count("amx", op=mnemonic, rows=self.config.rows[t], colsb=self.config.colsb[t], via="machine")
        self._zero_tilecfg_start()

    def tilezero(self, tmm: int) -> None:
        """TILEZERO tmm: all 16 x 64 bytes := 0 (SDM vol. 2 TILEZERO; #UD per AMX-E5)."""
        self._feature("tilezero")
        self._configured("tilezero")
        t = self._tile_number("tilezero", tmm)
        self._valid("tilezero", t)
        self.backend.tilezero(self, t)
        counters.count("amx", op="tilezero", via="machine")
        self._zero_tilecfg_start()

    # ------------------------------------------------------------ TMUL
    @fpenv.guarded
    def _tmul(self, mnemonic: str, dst, src1, src2) -> None:
        """Checks of the TMUL exception class (SDM AMX-E4), then the backend's dot product."""
        self._feature(mnemonic)
        self._configured(mnemonic)
        names = ("dst", "src1", "src2")
        d, a, b = (self._tile_number(mnemonic, v, n) for v, n in zip((dst, src1, src2), names))
        if d == a or a == b or d == b:
            raise InvalidOpcode(f"{mnemonic.upper()}: tiles must be pairwise distinct",
                                rule="SDM AMX-E4: #UD if srcdest == src1 or src1 == src2 or srcdest == src2",
                                values={"dst": d, "src1": a, "src2": b})
        for t, n in zip((d, a, b), names):
            self._valid(mnemonic, t, n)
        for t, n in zip((d, a, b), names):
            self._colsb4(mnemonic, t, n)
        cfg = self.config
        shape = {"dst": cfg.shape(d), "src1": cfg.shape(a), "src2": cfg.shape(b)}
        if cfg.colsb[d] != cfg.colsb[b]:
            raise InvalidOpcode(f"{mnemonic.upper()}: dst colsb != src2 colsb (N)",
                                rule="SDM AMX-E4: #UD if srcdest.colsb != src2.colsb", values=shape)
        if cfg.rows[d] != cfg.rows[a]:
            raise InvalidOpcode(f"{mnemonic.upper()}: dst rows != src1 rows (M)",
                                rule="SDM AMX-E4: #UD if srcdest.rows != src1.rows", values=shape)
        if cfg.colsb[a] // 4 != cfg.rows[b]:
            raise InvalidOpcode(f"{mnemonic.upper()}: src1 colsb / 4 != src2 rows (K)",
                                rule="SDM AMX-E4: #UD if src1.colsb / 4 != src2.rows", values=shape)
        if cfg.colsb[d] > self.cpu.tmul_maxn or cfg.colsb[b] > self.cpu.tmul_maxn:
            raise InvalidOpcode(f"{mnemonic.upper()}: N larger than tmul_maxn",
                                rule="SDM AMX-E4: #UD if srcdest.colsb or src2.colsb > tmul_maxn",
                                values={**shape, "tmul_maxn": self.cpu.tmul_maxn})
        if cfg.colsb[a] // 4 > self.cpu.tmul_maxk or cfg.rows[b] > self.cpu.tmul_maxk:
            raise InvalidOpcode(f"{mnemonic.upper()}: K larger than tmul_maxk",
                                rule="SDM AMX-E4: #UD if src1.colsb / 4 or src2.rows > tmul_maxk",
                                values={**shape, "tmul_maxk": self.cpu.tmul_maxk})
        self.backend.dot(self, mnemonic, d, a, b)
        if counters.active():                # the params are built only while something records
            counters.count("amx", op=mnemonic, m=cfg.rows[d], n=cfg.colsb[d] // 4, k_dwords=cfg.colsb[a] // 4,
                           via="machine")
        self._zero_tilecfg_start()


    def execute(self, mnemonic: str, *operands) -> None:
        """Run an instruction by name, e.g. ``m.execute("tdpbssd", 0, 1, 2)``."""
        name = str(mnemonic).lower()
        if name not in INSTRUCTION_FEATURE:
            from ..suggest import did_you_mean
            raise InvalidValue(f"unknown AMX instruction {mnemonic!r}{did_you_mean(name, INSTRUCTION_FEATURE)}",
                               values={"mnemonic": mnemonic})
        method = getattr(self, name)
        try:
            inspect.signature(method).bind(*operands)
        except TypeError:
            params = tuple(inspect.signature(method).parameters)
            raise InvalidValue(f"{name.upper()} takes operands {', '.join(params) or '(none)'}",
                               rule=f"execute({name!r}, ...): the operands of {name.upper()}",
                               values={"instruction": name, "expected": params, "given": len(operands)}) from None
        return method(*operands)

    # ------------------------------------------------------------ conveniences (not instructions)
    @staticmethod
    def _tile_index(tmm) -> int:
        """A tile number of the conveniences: tmm0 .. tmm7 (no wrap-around: -1 is not tmm7)."""
        t = _int(tmm, "tile")
        if not 0 <= t < NTILES:
            raise InvalidValue(f"tile tmm{t} does not exist", rule=f"tiles are tmm0 .. tmm{NTILES - 1}",
                               values={"tile": t})
        return t


    def tile_bytes(self, tmm: int) -> np.ndarray:
        """A copy of the configured rows x colsb bytes of tile ``tmm``."""
        t = self._tile_index(tmm)
        rows, colsb = self.config.shape(t)
        return self.tiles[t, :rows, :colsb].copy()

    def read_tile(self, tmm: int, dtype) -> np.ndarray:
        """Tile ``tmm``'s configured rows viewed as ``dtype`` elements (e.g. np.int32, np.float32, bfloat16)."""
        b = np.ascontiguousarray(self.tile_bytes(tmm))
        dt = tile_view_dtype(dtype, "read_tile dtype: a numeric numpy dtype")
        if b.shape[1] % dt.itemsize:
            raise InvalidValue("colsb is not a multiple of the element size",
                               values={"colsb": b.shape[1], "itemsize": dt.itemsize})
        return b.view(dt)

    def write_tile(self, tmm: int, values) -> None:
        """Set tile ``tmm``'s configured rows from an array of rows x colsb bytes (any dtype); zero the rest."""
        t = self._tile_index(tmm)
        rows, colsb = self.config.shape(t)
        v = np.ascontiguousarray(values)
        if v.dtype.hasobject or v.dtype.kind in "US":
            # only numbers have bytes to copy into a tile (an object array holds references)
            raise InvalidValue("write_tile needs a numeric array", rule="write_tile values: a numeric numpy array",
                               values={"dtype": str(v.dtype)})
        b = v.view(np.uint8).reshape(v.shape[0], -1) if v.ndim == 2 else None
        if b is None or b.shape != (rows, colsb):
            raise InvalidValue("write_tile needs a rows x colsb-bytes 2-D array",
                               values={"shape": v.shape, "dtype": str(v.dtype), "rows": rows, "colsb": colsb})
        self.tiles[t] = 0
        self.tiles[t, :rows, :colsb] = b


def _load_method(rec: ISA.Instruction):
    """The TileMachine method of one load record: TILELOADD's checks and data movement (SDM vol. 2 TILELOADD;
    the T1 and read-shared forms are hints only)."""
    def method(self, tmm: int, memory, base: int, stride: int) -> None:
        self._load(rec.mnemonic, tmm, memory, base, stride)
    method.__name__, method.__qualname__, method.__doc__ = rec.mnemonic, f"TileMachine.{rec.mnemonic}", rec.doc
    return method


def _tmul_method(rec: ISA.Instruction):
    """The TileMachine method of one TMUL record: its checks (SDM AMX-E4) then the backend's body."""
    def method(self, dst: int, src1: int, src2: int) -> None:
        self._tmul(rec.mnemonic, dst, src1, src2)
    method.__name__, method.__qualname__, method.__doc__ = rec.mnemonic, f"TileMachine.{rec.mnemonic}", rec.doc
    return method


# one method per load record (tileloadd, tileloaddt1, ...) and per TMUL record (tdpbssd ... tdphf8ps): a new
# record is a new method
for _r in ISA.LOADS:
    setattr(TileMachine, _r.mnemonic, _load_method(_r))
for _r in ISA.TMULS:
    setattr(TileMachine, _r.mnemonic, _tmul_method(_r))
