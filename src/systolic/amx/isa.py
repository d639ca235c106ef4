"""The AMX instructions, one record each: every fact about an instruction in one place.

A record holds the mnemonic, its operands, the element types a TMUL reads and writes, the CPUID feature that
gates it (SDM / ISE "CPUID Feature Flag" column), its LLVM intrinsics (LLVM 22 ``IntrinsicsX86.td``: the
physical-register form ``llvm.x86.<name>`` and the shaped ``.internal`` form), the name of clang's
``__tile1024i`` function (``amx*intrin.h``), the kind (config, load, store, zero, dot), its spec body
(:mod:`systolic.amx.spec`: the SDM pseudo-code), its fast body (:mod:`systolic.amx.kernels`: vectorised, proven
bit-identical) and a one-line doc.

Readers: :mod:`systolic.amx.cpu` (which CPU has which instruction), :mod:`systolic.amx.machine` (the TileMachine's
instruction methods - one per load and TMUL record -, TMUL element types, ``execute``), :mod:`systolic.amx.backends`
(the spec and emulator backends run a TMUL's ``spec`` / ``fast`` body), :mod:`systolic.amx.jit` (the intrinsic
and feature of each TMUL for the JIT), :mod:`systolic.amx.intrinsics` (one Python ``tile_*`` function per load
and TMUL record), :mod:`systolic.amx.gemm` (dtype -> TMUL) and the compiler (:mod:`systolic.compiler.amx_table`:
LLVM's AMX intrinsics, modelled or not; shapes, lowering, emission and the runner read that table). Adding a
TMUL takes this record plus its two bodies; adding a load (TILELOADDRS) takes its record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import kernels as K
from . import spec as S

__all__ = ["Instruction", "INSTRUCTIONS", "TMULS", "TMUL_MNEMONICS", "GEMM_TMULS", "LOADS", "get"]


@dataclass(frozen=True)
class Instruction:
    """One AMX instruction (SDM vol. 2 / ISE page of the mnemonic)."""

    mnemonic: str
    kind: str                                  # "config", "load", "store", "zero" or "dot"
    operands: tuple[str, ...]                  # the TileMachine method's operands, in order
    feature: str                               # CPUID feature (systolic.amx.cpu.FEATURES)
    doc: str
    types: tuple[str, str, str] | None = None  # TMUL element types: (src1, src2, dst), systolic.types names
    spec: Callable | None = None               # TMUL: spec body (c, a, b, m_rows, n_colsb, k_colsb[, observer=])
    fast: Callable | None = None               # TMUL: fast body, same arguments, same bits
    api: str | None = None                     # clang's __tile1024i function, without the "__" (tile_loadd)

    @property
    def intrinsic(self) -> str:
        """The physical-register LLVM intrinsic (loads and stores carry the address size: ``tileloadd64``)."""
        base = f"{self.mnemonic}64" if self.kind in ("load", "store") else self.mnemonic
        return f"llvm.x86.{base}"

    @property
    def intrinsic_internal(self) -> str | None:
        """The shaped ``.internal`` intrinsic clang's ``__tile1024i`` API produces (None for config)."""
        return None if self.kind == "config" else f"{self.intrinsic}.internal"


_TILE = ("tmm",)
_MEM = ("tmm", "memory", "base", "stride")
_DOT = ("dst", "src1", "src2")


def _tmul(mnemonic: str, feature: str, types: tuple[str, str, str], spec: Callable, fast: Callable,
          doc: str) -> Instruction:
    # clang names every TMUL's __tile1024i function after the mnemonic without its T: __tile_dpbssd
    return Instruction(mnemonic, "dot", _DOT, feature, doc, types, spec, fast, api=f"tile_{mnemonic[1:]}")


def _load(mnemonic: str, feature: str, api: str, doc: str) -> Instruction:
    return Instruction(mnemonic, "load", _MEM, feature, doc, api=api)


INSTRUCTIONS: dict[str, Instruction] = {r.mnemonic: r for r in (
    Instruction("ldtilecfg", "config", ("config",), "amx-tile", "LDTILECFG: load the tile configuration (64 bytes)"),
    Instruction("sttilecfg", "config", (), "amx-tile", "STTILECFG: store the tile configuration"),
    _load("tileloadd", "amx-tile", "tile_loadd",
          "TILELOADD tmm, [base + index*scale]: row r from base + r*stride (SDM vol. 2 TILELOADD)."),
    _load("tileloaddt1", "amx-tile", "tile_stream_loadd",
          "TILELOADDT1: TILELOADD with a T1 prefetch hint (no architectural difference)."),
    _load("tileloaddrs", "amx-movrs", "tile_loaddrs",
          "TILELOADDRS: TILELOADD with a read-shared hint (ISE, AMX-MOVRS; no architectural difference)."),
    _load("tileloaddrst1", "amx-movrs", "tile_stream_loaddrs",
          "TILELOADDRST1: TILELOADDT1 with a read-shared hint (ISE, AMX-MOVRS; no architectural difference)."),
    Instruction("tilestored", "store", _MEM, "amx-tile", "TILESTORED: store a tile's rows to memory",
                api="tile_stored"),
    Instruction("tilezero", "zero", _TILE, "amx-tile", "TILEZERO: zero a tile", api="tile_zero"),
    Instruction("tilerelease", "config", (), "amx-tile", "TILERELEASE: back to the INIT state"),
    _tmul("tdpbssd", "amx-int8", ("s8", "s8", "s32"), S.tdpbssd, K.tdpbssd,
          "TDPBSSD: int32 += signed int8 x signed int8, 4 products per dword (wraps mod 2^32)."),
    _tmul("tdpbsud", "amx-int8", ("s8", "u8", "s32"), S.tdpbsud, K.tdpbsud,
          "TDPBSUD: int32 += signed int8 (src1) x unsigned int8 (src2)."),
    _tmul("tdpbusd", "amx-int8", ("u8", "s8", "s32"), S.tdpbusd, K.tdpbusd,
          "TDPBUSD: int32 += unsigned int8 (src1) x signed int8 (src2)."),
    _tmul("tdpbuud", "amx-int8", ("u8", "u8", "s32"), S.tdpbuud, K.tdpbuud,
          "TDPBUUD: int32 += unsigned int8 x unsigned int8."),
    _tmul("tdpbf16ps", "amx-bf16", ("bf16", "bf16", "fp32"), S.tdpbf16ps, K.tdpbf16ps,
          "TDPBF16PS: fp32 += bf16 pairs (two fp32 chains, DAZ/FTZ/RNE; AMX-BF16)."),
    _tmul("tdpfp16ps", "amx-fp16", ("fp16", "fp16", "fp32"), S.tdpfp16ps, K.tdpfp16ps,
          "TDPFP16PS: fp32 += fp16 pairs (AMX-FP16)."),
    _tmul("tcmmimfp16ps", "amx-complex", ("fp16", "fp16", "fp32"), S.tcmmimfp16ps, K.tcmmimfp16ps,
          "TCMMIMFP16PS: imaginary part of complex fp16 matrix products (AMX-COMPLEX)."),
    _tmul("tcmmrlfp16ps", "amx-complex", ("fp16", "fp16", "fp32"), S.tcmmrlfp16ps, K.tcmmrlfp16ps,
          "TCMMRLFP16PS: real part of complex fp16 matrix products (AMX-COMPLEX)."),
    _tmul("tdpbf8ps", "amx-fp8", ("bf8", "bf8", "fp32"), S.tdpbf8ps, K.tdpbf8ps,
          "TDPBF8PS: fp32 += bf8 x bf8 (AMX-FP8; model unverified on silicon)."),
    _tmul("tdpbhf8ps", "amx-fp8", ("bf8", "hf8", "fp32"), S.tdpbhf8ps, K.tdpbhf8ps,
          "TDPBHF8PS: fp32 += bf8 (src1) x hf8 (src2) (AMX-FP8; unverified)."),
    _tmul("tdphbf8ps", "amx-fp8", ("hf8", "bf8", "fp32"), S.tdphbf8ps, K.tdphbf8ps,
          "TDPHBF8PS: fp32 += hf8 (src1) x bf8 (src2) (AMX-FP8; unverified)."),
    _tmul("tdphf8ps", "amx-fp8", ("hf8", "hf8", "fp32"), S.tdphf8ps, K.tdphf8ps,
          "TDPHF8PS: fp32 += hf8 x hf8 (AMX-FP8; unverified)."),
)}

#: the TMUL (dot-product) records, in table order
TMULS: tuple[Instruction, ...] = tuple(r for r in INSTRUCTIONS.values() if r.kind == "dot")
TMUL_MNEMONICS: tuple[str, ...] = tuple(r.mnemonic for r in TMULS)
#: the plain dot products a tiled GEMM runs (amx.matmul, the native GEMM, the CUDA kernels, explain): the
#: AMX-INT8 / AMX-BF16 / AMX-FP16 records, the first of each element-type pair (TDPFP16PS, not the complex
#: TCMM*FP16PS that reads the same types); a TMUL added to those extensions joins every GEMM path's list
GEMM_FEATURES: tuple[str, ...] = ("amx-int8", "amx-bf16", "amx-fp16")


def _gemm_tmuls() -> tuple[Instruction, ...]:
    out: dict[tuple[str, str], Instruction] = {}
    for r in TMULS:
        if r.feature in GEMM_FEATURES:
            out.setdefault(r.types[:2], r)
    return tuple(out.values())


GEMM_TMULS: tuple[Instruction, ...] = _gemm_tmuls()
#: the tile load records (TILELOADD, TILELOADDT1, TILELOADDRS, TILELOADDRST1), in table order
LOADS: tuple[Instruction, ...] = tuple(r for r in INSTRUCTIONS.values() if r.kind == "load")


def get(mnemonic: str) -> Instruction | None:
    """The record of ``mnemonic`` (case-insensitive), None if AMX has no such instruction here."""
    return INSTRUCTIONS.get(str(mnemonic).lower())
