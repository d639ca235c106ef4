"""What one test vector is: an instruction of an engine, its operand register images, and how its result is
computed by the engines.

A vector is one execution of one matrix instruction. Its operands and its result are stored as the
*register images* the instruction reads and writes (bytes, little-endian), which is what a hardware test bench
loads:

* AMX (``amx:<cpu>``, every TMUL of :data:`systolic.amx.TMUL_MNEMONICS`): ``a`` = the src1 tile (M rows x 4K
  bytes), ``b`` = the src2 tile (K rows x 4N bytes, VNNI: a dword holds the 4/2/1 K-consecutive elements of one
  column), ``c`` = the dst tile before (M x 4N bytes, int32 or fp32), ``d`` = the dst tile after. Shapes ``(M, K,
  N)`` count rows and dwords, as the TILECFG does (default 16, 16, 16: the largest TMUL). docs/amx.md gives the
  numerics.
* XMX (``xmx:<platform>``): one ``DPAS.8.RC`` with exec size the platform's: ``a`` = the Src2 image (A, RC x K),
  ``b`` = the Src1 image (B, K x N), ``c`` = the Src0 image (C, RC x N of the Dst type), ``d`` = the Dst image;
  layouts in :mod:`systolic.xmx.pack` and docs/xmx.md; float results follow the numerics ``model``.

Results come from the engines: AMX through :class:`systolic.amx.TileMachine` (backend ``cpu`` = the emulator,
``spec`` = the SDM pseudo-code in exact arithmetic, ``native`` = the CPU's own tile unit) or
:func:`systolic.amx.matmul` with ``backend="cuda"`` (one tile-K block is exactly one instruction); XMX through
:func:`systolic.xmx.dpas_fast` (``cpu``), :func:`systolic.xmx.dpas` (``spec``) or :func:`systolic.xmx.matmul`
with ``backend="cuda"`` (one DPAS: K = 8 x OPS_PER_CHAN, M = RC).
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

import numpy as np

from .. import types as T
from ..errors import IllegalInstruction, InvalidValue, UnsupportedCombination
from ..suggest import did_you_mean
from ..vocabulary import check_path, spelled
from .profiles import draw_bits, profiles_for

__all__ = ["Spec", "VectorKind", "AmxKind", "XmxKind", "make_kind", "check_backend", "execution", "BACKENDS",
           "IMAGES"]

#: where a campaign may compute (backend=; docs/ARCHITECTURE.md "Vocabulary"); path= picks the cpu backend's
#: fast path or the spec path
BACKENDS = ("cpu", "native", "cuda")
#: how a kind computes: a backend, or "spec" (the cpu backend's spec path)
_HOW = ("cpu", "spec", "native", "cuda")
#: the image columns of a vector, in file order
IMAGES = ("c", "a", "b", "d")


@dataclass(frozen=True)
class Spec:
    """The arguments that define a vector kind (plain data: travels to workers, lands in the manifest)."""
    engine: str
    instruction: str | None = None       # AMX mnemonic
    precision: str | None = None         # XMX: "bf16" (both sources) or "AxB" (Src2 x Src1)
    model: str | None = None             # XMX float numerics model
    dst_type: str | None = None          # XMX Dst/Src0 type
    rc: int | None = None                # XMX repeat count
    shape: tuple[int, int, int] | None = None   # AMX (M rows, K dwords, N dwords)

    def __post_init__(self) -> None:
        """The form of every field (the values themselves are the engines' to check, in :func:`make_kind`): a
        typed error here, not an unpacking or attribute error later on a worker."""
        _check_engine(self.engine)
        for what in ("instruction", "precision", "model", "dst_type"):
            v = getattr(self, what)
            if v is not None and (not isinstance(v, str) or not v.strip()):
                raise InvalidValue(f"{what} is a name (a non-empty string) or None (the default)",
                                   rule=f"Spec.{what}: str or None", values={what: v})
        if self.rc is not None:
            object.__setattr__(self, "rc", _whole(self.rc, "rc", "Spec.rc: an integer (XMX repeat count 1..8) or None"))
        if self.shape is not None:
            object.__setattr__(self, "shape", _shape(self.shape))


#: engine families a vector kind can have
FAMILIES = ("amx", "xmx")
_ENGINE_RULE = "engines: amx:<cpu> (systolic amx cpus), xmx:<platform> (systolic xmx platforms)"
_SHAPE_RULE = "Spec.shape: three integers (M rows 1..16, K dwords 1..16, N dwords 1..16) or None"


def _check_engine(engine) -> None:
    if not isinstance(engine, str):
        raise InvalidValue("engine is a string, amx:<cpu> or xmx:<platform>", rule=_ENGINE_RULE,
                           values={"engine": engine})
    family, sep, device = engine.partition(":")
    if not sep or family not in FAMILIES or not device:
        hint = did_you_mean(family, FAMILIES) if family not in FAMILIES else ""
        raise InvalidValue(f"unknown engine {engine!r}{hint}", rule=_ENGINE_RULE, values={"engine": engine})


def _whole(v, what: str, rule: str) -> int:
    """``v`` as a Python int when it is an integer (numpy's included, bool not); else InvalidValue."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise InvalidValue(f"{what} must be an integer", rule=rule, values={what: v})
    return int(v)


def _shape(v) -> tuple[int, int, int]:
    if not isinstance(v, (tuple, list)) or len(v) != 3 or \
            any(isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) for x in v):
        raise InvalidValue("shape is three integers (M, K, N)", rule=_SHAPE_RULE, values={"shape": v})
    return tuple(int(x) for x in v)


def _bytes_of(bits: np.ndarray, storage_bits: int) -> np.ndarray:
    """Element bit patterns (..., n) -> little-endian bytes (..., n * storage_bits / 8) for 8/16/32-bit types."""
    dt = {8: "<u1", 16: "<u2", 32: "<u4"}[storage_bits]
    b = np.ascontiguousarray(bits.astype(dt))
    return b.view(np.uint8).reshape(*bits.shape[:-1], -1)


def _values(bits: np.ndarray, tname: str) -> np.ndarray:
    """Typed numpy values whose bits are ``bits`` (integers: their values; floats: an ml_dtypes/numpy view)."""
    t = T.get(tname)
    if t.fmt is None:
        v = bits.astype(np.int64)
        if t.min < 0:
            half = 1 << (t.bits - 1)
            v = (v ^ half) - half
        return v
    if t.name == "tf32":
        return bits.astype("<u4").view(np.float32)
    cont = {8: "<u1", 16: "<u2", 32: "<u4"}[max(8, t.storage_bits)]
    return bits.astype(cont).view(t.dtype)


class VectorKind:
    """One instruction's vectors: ``draw`` operands, ``compute`` results. Subclasses fill the shapes."""

    spec: Spec
    is_float: bool
    acc: str                          # C/D element type

    def describe(self) -> dict:
        raise NotImplementedError

    def image_bytes(self) -> dict[str, int]:
        raise NotImplementedError

    def profiles(self, profile: str) -> tuple[str, ...]:
        """The profiles ``profile`` stands for (``all``: every one that applies to this instruction)."""
        ps = profiles_for(self.is_float, profile)
        if self.is_float and self.acc != "fp32":       # cancellation sets C from an fp32 result
            if profile == "cancellation":
                raise UnsupportedCombination("the cancellation profile needs an fp32 accumulator",
                                             rule="cancellation: C = -(A x B) needs fp32 C/D", values={"acc": self.acc})
            ps = tuple(p for p in ps if p != "cancellation")
        return ps

    def _draw_inputs(self, rng, profile: str, count: int) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def compute(self, images: dict[str, np.ndarray], backend: str) -> np.ndarray:
        """The result images; ``backend``: how (cpu, spec = the cpu backend's spec path, native, cuda)."""
        raise NotImplementedError

    def draw(self, rng: np.random.Generator, profile: str, count: int) -> dict[str, np.ndarray]:
        """``count`` vectors' input images (``a``, ``b``, ``c``: (count, bytes) uint8) under ``profile``.

        ``cancellation``: C is the negated result of the same A and B with C = 0 (computed by the emulator,
        whatever backend the campaign uses, so the inputs never depend on it), with its lowest two significand
        bits redrawn: the final accumulate cancels to a few units in the last place."""
        imgs = self._draw_inputs(rng, profile, count)
        if profile == "cancellation":
            zero = dict(imgs, c=np.zeros_like(imgs["c"]))
            d = self.compute(zero, "cpu")
            if self.acc != "fp32":
                raise UnsupportedCombination("cancellation needs an fp32 accumulator", values={"acc": self.acc})
            bits = d.view("<u4").copy()
            finite = (bits & 0x7F800000) != 0x7F800000
            bits = np.where(finite, (bits ^ 0x80000000) ^ rng.integers(0, 4, bits.shape, dtype=np.uint32), bits)
            imgs["c"] = np.ascontiguousarray(bits.astype("<u4")).view(np.uint8)
        return imgs


# --------------------------------------------------------------------------------------------------------- AMX
class AmxKind(VectorKind):
    def __init__(self, spec: Spec) -> None:
        from ..amx import TMUL_MNEMONICS, get_cpu
        from ..amx.machine import TMUL_TYPES
        from ..sycl.devices import engine_device
        self.cpu = get_cpu(engine_device("amx", spec.engine.split(":", 1)[1]))    # SYCL names too (issue 27)
        mn = (spec.instruction or "").lower()
        if mn not in TMUL_MNEMONICS:
            raise InvalidValue(f"unknown AMX TMUL instruction {spec.instruction!r}"
                               f"{did_you_mean(spec.instruction or '', TMUL_MNEMONICS)}",
                               rule="AMX TMULs: " + ", ".join(TMUL_MNEMONICS), values={"instruction": spec.instruction})
        for what, v in (("precision", spec.precision), ("model", spec.model), ("dst_type", spec.dst_type),
                        ("rc", spec.rc)):
            if v is not None:
                raise UnsupportedCombination(f"{what} is an XMX option; an AMX instruction fixes its types",
                                             rule="AMX vectors: --instruction and --shape", values={what: v})
        m, k, n = spec.shape or (16, 16, 16)
        if not (1 <= m <= 16 and 1 <= k <= 16 and 1 <= n <= 16):
            raise InvalidValue("AMX vector shape out of range",
                               rule="M rows 1..16, K dwords 1..16 (tmul_maxk), N dwords 1..16 (tmul_maxn 64 bytes)",
                               values={"M": m, "K": k, "N": n})
        self.spec = Spec(engine=f"amx:{self.cpu.name}", instruction=mn, shape=(m, k, n))
        self.mnemonic = mn
        self.ta, self.tb, acc = TMUL_TYPES[mn]
        self.acc = "int32" if acc == "s32" else "fp32"
        self.is_float = self.acc == "fp32"
        self.m, self.k, self.n = m, k, n
        zero = {k_: np.zeros((1, nb), np.uint8) for k_, nb in self.image_bytes().items() if k_ != "d"}
        self.compute(zero, "cpu")          # the CPU model's features and every #UD rule, before any campaign runs

    def describe(self) -> dict:
        return {"engine": self.spec.engine, "instruction": self.mnemonic, "shape": {"M": self.m, "K_dwords": self.k,
                "N_dwords": self.n}, "types": {"a": self.ta, "b": self.tb, "c": self.acc, "d": self.acc},
                "images": {"a": f"src1 tile: {self.m} rows x {4 * self.k} bytes",
                           "b": f"src2 tile (VNNI): {self.k} rows x {4 * self.n} bytes",
                           "c": f"dst tile before: {self.m} rows x {4 * self.n} bytes",
                           "d": f"dst tile after: {self.m} rows x {4 * self.n} bytes"},
                "bytes": self.image_bytes()}

    def image_bytes(self) -> dict[str, int]:
        return {"a": self.m * 4 * self.k, "b": self.k * 4 * self.n, "c": self.m * 4 * self.n, "d": self.m * 4 * self.n}

    def _draw_inputs(self, rng, profile, count):
        sa, sb = T.get(self.ta).storage_bits, T.get(self.tb).storage_bits
        a = draw_bits(rng, self.ta, (count, self.m * self.k * 32 // sa), profile)
        b = draw_bits(rng, self.tb, (count, self.k * self.n * 32 // sb), profile)
        c = draw_bits(rng, self.acc, (count, self.m * self.n), profile)
        return {"a": _bytes_of(a, sa), "b": _bytes_of(b, sb), "c": _bytes_of(c, 32)}

    def compute(self, images, backend):
        check_backend(backend, _HOW)
        if backend == "cuda":
            return self._compute_cuda(images)
        from ..amx import TileConfig
        m = _tile_machine(self.cpu.name, backend)
        m.ldtilecfg(TileConfig(palette=1, tiles={0: (self.m, 4 * self.n), 1: (self.m, 4 * self.k),
                                                 2: (self.k, 4 * self.n)}))
        a, b, c = images["a"], images["b"], images["c"]
        out = np.empty_like(c)
        for v in range(c.shape[0]):
            m.write_tile(0, c[v].reshape(self.m, 4 * self.n))
            m.write_tile(1, a[v].reshape(self.m, 4 * self.k))
            m.write_tile(2, b[v].reshape(self.k, 4 * self.n))
            m.execute(self.mnemonic, 0, 1, 2)
            out[v] = m.tile_bytes(0).reshape(-1)
        return out

    def _compute_cuda(self, images):
        """One tile-K block of :func:`systolic.amx.matmul` on the GPU: exactly the instruction (docs/gpu.md)."""
        from ..amx import isa, matmul
        from ..packing import vnni_unpack
        if self.mnemonic not in {r.mnemonic for r in isa.GEMM_TMULS}:
            raise UnsupportedCombination(f"{self.mnemonic} has no CUDA kernel",
                                         rule="the CUDA backend runs TDPB[SU][SU]D, TDPBF16PS, TDPFP16PS (docs/gpu.md)",
                                         values={"instruction": self.mnemonic})
        bits = T.get(self.ta).storage_bits
        per = 32 // bits
        out = np.empty_like(images["c"])
        cdt = np.int32 if self.acc == "int32" else np.float32
        for v in range(out.shape[0]):
            a_bits = images["a"][v].view({8: "<u1", 16: "<u2"}[bits]).reshape(self.m, self.k * per)
            b_dw = images["b"][v].view("<u4").reshape(self.k, self.n)
            b_bits = vnni_unpack(b_dw, bits)
            a = _values(a_bits.astype(np.uint64), self.ta).astype(_dtype(self.ta))
            b = _values(b_bits.astype(np.uint64), self.tb).astype(_dtype(self.tb))
            c = images["c"][v].view(cdt).reshape(self.m, self.n)
            d = matmul(a, b, c, device=self.cpu.name, backend="cuda")
            out[v] = np.ascontiguousarray(np.asarray(d, dtype=cdt)).view(np.uint8).reshape(-1)
        return out


def _dtype(tname: str) -> np.dtype:
    t = T.get(tname)
    return np.dtype(t.dtype) if t.fmt is not None else np.dtype({"s8": np.int8, "u8": np.uint8}[t.name])


@functools.lru_cache(maxsize=None)
def _tile_machine(cpu: str, backend: str):
    """backend: "cpu" (the fast path), "spec" (the spec path) or "native"."""
    from ..amx import TileMachine
    spec = backend == "spec"
    return TileMachine(cpu, backend="cpu" if spec else backend, path="spec" if spec else "fast")


# --------------------------------------------------------------------------------------------------------- XMX
class XmxKind(VectorKind):
    def __init__(self, spec: Spec) -> None:
        from ..xmx import get_platform
        from ..xmx.rules import canonical_acc_type, canonical_precision, ops_per_chan
        from ..sycl.devices import engine_device
        self.platform = get_platform(engine_device("xmx", spec.engine.split(":", 1)[1]))    # SYCL names too
        if spec.instruction not in (None, "dpas"):
            raise UnsupportedCombination("XMX vectors are DPAS", rule="xmx: --instruction dpas (the default)",
                                         values={"instruction": spec.instruction})
        if spec.shape is not None:
            raise UnsupportedCombination("--shape is an AMX option; a DPAS is sized by --rc",
                                         values={"shape": spec.shape})
        prec = spec.precision or "bf16"
        a, _, b = prec.partition("x") if "x" in prec and not prec.startswith("x") else (prec, "", prec)
        self.p2, self.p1 = canonical_precision(a), canonical_precision(b)       # Src2 = A, Src1 = B
        self.is_float = T.get(self.p2).fmt is not None
        default_dst = "fp32" if self.is_float else "int32"
        self.acc = canonical_acc_type(spec.dst_type or default_dst, "dst_type")
        self.rc = int(spec.rc if spec.rc is not None else 8)
        if not 1 <= self.rc <= 8:                     # before the image sizes, which it scales
            raise IllegalInstruction("DPAS repeat count must be 1..8", rule="visa-DPAS.md: M = repeat count, 1..8",
                                     values={"rc": self.rc})
        self.model = (spec.model or self.platform.default_model) if self.is_float else None
        if not self.is_float and spec.model is not None:
            raise UnsupportedCombination("integer DPAS is exact: it has no numerics model",
                                         values={"model": spec.model})
        self.ops = ops_per_chan(self.p1, self.p2)
        self.kdim = 8 * self.ops
        self.n = self.platform.exec_size
        prec_name = self.p2 if self.p2 == self.p1 else f"{self.p2}x{self.p1}"
        self.spec = Spec(engine=f"xmx:{self.platform.name}", instruction="dpas", precision=prec_name,
                         model=self.model, dst_type=self.acc, rc=self.rc)
        self._check()

    def _check(self) -> None:
        """Every DPAS rule, on an all-zero vector of this kind (raises the engine's own typed errors)."""
        zero = {k: np.zeros((1, n), np.uint8) for k, n in self.image_bytes().items() if k != "d"}
        self.compute(zero, "cpu")

    def describe(self) -> dict:
        return {"engine": self.spec.engine, "instruction": "dpas", "sd": 8, "rc": self.rc, "exec_size": self.n,
                "types": {"a": self.p2, "b": self.p1, "c": self.acc, "d": self.acc}, "model": self.model,
                "shape": {"M": self.rc, "K": self.kdim, "N": self.n},
                "images": {"a": f"Src2 image: A {self.rc} x {self.kdim} {self.p2}",
                           "b": f"Src1 image: B {self.kdim} x {self.n} {self.p1}",
                           "c": f"Src0 image: C {self.rc} x {self.n} {self.acc}",
                           "d": f"Dst image: D {self.rc} x {self.n} {self.acc}"},
                "bytes": self.image_bytes()}

    def image_bytes(self) -> dict[str, int]:
        b2, b1 = T.get(self.p2).storage_bits, T.get(self.p1).storage_bits
        acc = T.get(self.acc).storage_bits // 8
        return {"a": self.rc * self.kdim * b2 // 8, "b": self.kdim * self.n * b1 // 8,
                "c": self.rc * self.n * acc, "d": self.rc * self.n * acc}

    def _draw_inputs(self, rng, profile, count):
        from ..xmx import pack
        a = draw_bits(rng, self.p2, (count, self.rc, self.kdim), profile)
        b = draw_bits(rng, self.p1, (count, self.kdim, self.n), profile)
        c = draw_bits(rng, self.acc, (count, self.rc, self.n), profile if self.acc in ("fp32", "int32", "u32")
                      else "random" if profile == "ftz-window" else profile)
        nb = self.image_bytes()
        out = {k: np.empty((count, nb[k]), np.uint8) for k in "abc"}
        for v in range(count):
            out["a"][v] = pack.pack_src2(_values(a[v], self.p2), self.p2)
            out["b"][v] = pack.pack_src1(_values(b[v], self.p1), self.p1)
            out["c"][v] = pack.pack_acc(_values(c[v], self.acc), self.acc)
        return out

    def _grf_offsets(self):
        g = self.platform.grf_bytes
        nb = self.image_bytes()
        up = lambda x: -(-x // g) * g                                       # noqa: E731
        o2 = 0
        o1 = o2 + up(nb["a"])
        o0 = o1 + up(nb["b"])
        od = o0 + up(nb["c"])
        return o2, o1, o0, od

    def compute(self, images, backend):
        check_backend(backend, _HOW)
        if backend == "cuda":
            return self._compute_cuda(images)
        if backend == "native":
            raise UnsupportedCombination("XMX has no native backend here", rule="xmx backends: cpu, spec, cuda",
                                         values={"backend": backend})
        from functools import partial

        from ..xmx import GRF, dpas
        fn = partial(dpas, path="spec" if backend == "spec" else "fast")
        o2, o1, o0, od = self._grf_offsets()
        nb = self.image_bytes()
        out = np.empty((images["c"].shape[0], nb["d"]), np.uint8)
        g = GRF(self.platform.name)
        for v in range(out.shape[0]):
            g.write(o2, images["a"][v])
            g.write(o1, images["b"][v])
            g.write(o0, images["c"][v])
            fn(g, dst=od, src0=o0, src1=o1, src2=o2, dst_type=self.acc, src1_precision=self.p1,
               src2_precision=self.p2, sd=8, rc=self.rc, model=self.model)
            out[v] = g.read(od, nb["d"])
        return out

    def _compute_cuda(self, images):
        """One DPAS as :func:`systolic.xmx.matmul` with K = 8 x OPS_PER_CHAN on the GPU (docs/gpu.md)."""
        from ..xmx import matmul, pack
        if self.acc not in ("fp32", "int32"):
            raise UnsupportedCombination("the CUDA backend returns the fp32/int32 accumulator",
                                         rule="cuda vectors: dst_type fp32 (float) or int32 (integer)",
                                         values={"dst_type": self.acc})
        out = np.empty((images["c"].shape[0], self.image_bytes()["d"]), np.uint8)
        cdt = np.float32 if self.acc == "fp32" else np.int32
        for v in range(out.shape[0]):
            a = _gemm_operand(pack.unpack_src2(images["a"][v], self.p2, self.rc, self.kdim), self.p2)
            b = _gemm_operand(pack.unpack_src1(images["b"][v], self.p1, self.kdim, self.n), self.p1)
            c = images["c"][v].view(cdt).reshape(self.rc, self.n)
            d = matmul(a, b, c, device=self.platform.name, model=self.model,
                       precision="tf32" if self.p2 == "tf32" else None, backend="cuda")
            out[v] = np.ascontiguousarray(np.asarray(d, dtype=cdt)).view(np.uint8).reshape(-1)
        return out


def _gemm_operand(bits: np.ndarray, p: str) -> np.ndarray:
    """Element bits -> the array :func:`systolic.xmx.matmul` takes for precision ``p`` (its dtype says the type)."""
    import ml_dtypes
    t = T.get(p)
    if t.fmt is None:
        dt = {"s8": np.int8, "u8": np.uint8, "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4,
              "s2": ml_dtypes.int2, "u2": ml_dtypes.uint2}[t.name]
        return _values(bits.astype(np.uint64), p).astype(dt)
    return _values(bits.astype(np.uint64), p)


def check_backend(backend, known: tuple[str, ...] = BACKENDS) -> None:
    if not isinstance(backend, str) or backend not in known:
        hint = did_you_mean(backend, known) if isinstance(backend, str) else ""
        raise InvalidValue(f"unknown backend {backend!r}{hint}", rule="backends: " + ", ".join(known),
                           values={"backend": backend})


def execution(backend, path=None, where: str = "campaign", stacklevel: int = 3) -> tuple[str, str, str]:
    """(backend, path, how) of a campaign call: ``how`` is what a kind computes with (the backend, or "spec" for
    the cpu backend's spec path). ``path=None``: not given (fast). ``backend="spec"`` is the older spelling of
    ``backend="cpu", path="spec"`` (DeprecationWarning; a given ``path="fast"`` beside it is InvalidValue); the
    spec path runs on the cpu backend only."""
    if path is not None:
        check_path(path, where)
    if isinstance(backend, str) and backend == "spec":
        new = spelled("backend='spec'", {"backend": "cpu", "path": "spec"}, where, stacklevel=stacklevel, path=path)
        backend, path = new["backend"], new["path"]
    path = "fast" if path is None else path
    check_backend(backend)
    if path == "spec" and backend != "cpu":
        raise InvalidValue(f"the spec path runs on the cpu backend, not {backend}",
                           rule="path='spec': the SDM / visa-DPAS pseudo-code, in this process",
                           values={"backend": backend, "path": path})
    return backend, path, ("spec" if path == "spec" else backend)


def spec_from_dict(d) -> Spec:
    """A :class:`Spec` from its dict form (a manifest's ``args.spec``); InvalidValue naming a missing or unknown
    field."""
    fields = tuple(Spec.__dataclass_fields__)
    if not isinstance(d, dict):
        raise InvalidValue("a vector kind's spec is a mapping of its fields", rule="spec: " + ", ".join(fields),
                           values={"spec": d})
    unknown = [k for k in d if k not in fields]
    if unknown:
        raise InvalidValue(f"unknown spec field {unknown[0]!r}{did_you_mean(unknown[0], fields)}",
                           rule="spec: " + ", ".join(fields), values={"field": unknown[0]})
    if "engine" not in d:
        raise InvalidValue("the spec names no engine", rule="spec: engine is required", values={"spec": d})
    return Spec(**d)


def make_kind(spec: Spec | dict) -> VectorKind:
    """The vector kind of ``spec`` (``engine`` = ``amx:<cpu>`` or ``xmx:<platform>``); every argument checked."""
    if isinstance(spec, dict):
        spec = spec_from_dict(spec)
    if not isinstance(spec, Spec):
        raise InvalidValue("make_kind takes a Spec (or its dict form)", rule="systolic.distributed.Spec",
                           values={"spec": spec})
    return _kind(spec)


@functools.lru_cache(maxsize=64)
def _kind(spec: Spec) -> VectorKind:
    family, sep, _ = spec.engine.partition(":")
    if not sep or family not in ("amx", "xmx"):
        raise InvalidValue(f"unknown engine {spec.engine!r}", rule="engines: amx:<cpu> (systolic amx cpus), "
                           "xmx:<platform> (systolic xmx platforms)", values={"engine": spec.engine})
    return AmxKind(spec) if family == "amx" else XmxKind(spec)


def spec_dict(spec: Spec) -> dict:
    d = asdict(spec)
    if d["shape"] is not None:
        d["shape"] = list(d["shape"])
    return d
