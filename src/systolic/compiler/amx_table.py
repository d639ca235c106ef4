"""The AMX intrinsics of LLVM 22 (``llvm/include/llvm/IR/IntrinsicsX86.td``, clang 22's ``amx*intrin.h``), each
with its family and whether the TileMachine models it. The modelled ones are read from the instruction records
(:mod:`systolic.amx.isa`: mnemonic, kind, CPUID feature, intrinsic names); this module adds only what LLVM has
beyond them. Shape analysis, lowering, register allocation, emission and the runner read these tables, so a new
record is known to every pass.

Two forms exist for every tile instruction (REFERENCE.md section 7):

* the *shaped* ``.internal`` form, which user code (clang's ``__tile1024i`` API) produces: shapes as ``i16``
  operands, tiles as ``x86_amx`` values, e.g. ``x86_amx @llvm.x86.tdpbssd.internal(i16 m, i16 n, i16 k,
  x86_amx c, x86_amx a, x86_amx b)``;
* the *physical-register* form (``void @llvm.x86.tdpbssd(i8 dst, i8 src1, i8 src2)``), which is what the
  compiler emits (:mod:`.to_llvm`); as input it is refused: the compiler allocates the tiles itself.

The tile/vector casts ``llvm.x86.cast.vector.to.tile.*`` / ``llvm.x86.cast.tile.to.vector.*`` are overloaded on
the vector type (``v256i32``, ``v512i16``, ``v1024i8``, ...): every 1024-byte vector type is the same 16 x 64
byte image, so all widths are modelled alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..amx.isa import INSTRUCTIONS, LOADS, TMULS

__all__ = ["AmxIntrinsic", "FAMILIES", "SHAPED", "PHYSICAL", "CONFIG", "lookup", "is_cast", "cast_direction",
           "MODELLED_DOTS", "MODELLED_LOADS", "UNMODELLED", "LLVM_FAMILIES", "physical_name",
           "internal_name", "MACHINE_OPCODES"]


@dataclass(frozen=True)
class AmxIntrinsic:
    """One ``llvm.x86.*`` AMX intrinsic: its instruction mnemonic, kind (load/store/zero/dot/row), family
    (CPUID feature: AMX-INT8, AMX-COMPLEX, ...) and whether the TileMachine executes it."""

    name: str
    mnemonic: str
    kind: str
    family: str
    modelled: bool


#: LLVM 22's newer tile instructions, mnemonic -> (kind, family): the ones without an instruction record
#: (systolic.amx.isa) are not modelled, and calling one is a typed refusal naming the intrinsic; one that gains a
#: record is modelled from then on (the record wins, nothing here changes)
LLVM_FAMILIES: dict[str, tuple[str, str]] = {
    "tmmultf32ps": ("dot", "AMX-TF32"),
    "tileloaddrs": ("load", "AMX-MOVRS"),
    "tileloaddrst1": ("load", "AMX-MOVRS"),
    "tcvtrowd2ps": ("row", "AMX-AVX512"),
    "tcvtrowps2bf16h": ("row", "AMX-AVX512"),
    "tcvtrowps2bf16l": ("row", "AMX-AVX512"),
    "tcvtrowps2phh": ("row", "AMX-AVX512"),
    "tcvtrowps2phl": ("row", "AMX-AVX512"),
    "tilemovrow": ("row", "AMX-AVX512"),
}

#: the tile instructions, mnemonic -> (kind, family, modelled by systolic.amx.TileMachine): the modelled ones are
#: the instruction records' (every load, store, zero and TMUL of systolic.amx.isa), then the unmodelled ones
FAMILIES: dict[str, tuple[str, str, bool]] = {
    **{r.mnemonic: (r.kind, r.feature.upper(), True) for r in INSTRUCTIONS.values() if r.kind != "config"},
    **{m: (k, f, False) for m, (k, f) in LLVM_FAMILIES.items() if m not in INSTRUCTIONS},
}

MODELLED_DOTS = tuple(r.mnemonic for r in TMULS)
MODELLED_LOADS = tuple(r.mnemonic for r in LOADS)
UNMODELLED = tuple(m for m, (_k, _f, ok) in FAMILIES.items() if not ok)


def physical_name(mnemonic: str) -> str:
    """LLVM's physical-register intrinsic of a tile instruction: ``llvm.x86.tileloadd64``, ``llvm.x86.tdpbssd``
    (the record's, for a modelled one; loads and stores carry the address size in their name)."""
    rec = INSTRUCTIONS.get(mnemonic)
    if rec is not None:
        return rec.intrinsic
    return f"llvm.x86.{mnemonic}64" if FAMILIES[mnemonic][0] in ("load", "store") else f"llvm.x86.{mnemonic}"


def internal_name(mnemonic: str) -> str:
    """LLVM's shaped intrinsic: ``llvm.x86.tileloadd64.internal``, ``llvm.x86.tdpbssd.internal``..."""
    return f"{physical_name(mnemonic)}.internal"


SHAPED: dict[str, AmxIntrinsic] = {}
PHYSICAL: dict[str, AmxIntrinsic] = {}
for _m, (_k, _f, _ok) in FAMILIES.items():
    SHAPED[internal_name(_m)] = AmxIntrinsic(internal_name(_m), _m, _k, _f, _ok)
    PHYSICAL[physical_name(_m)] = AmxIntrinsic(physical_name(_m), _m, _k, _f, _ok)
# the immediate-row variants of the AVX512 conversions exist only in the physical form
for _m in ("tcvtrowd2psi", "tcvtrowps2bf16hi", "tcvtrowps2bf16li", "tcvtrowps2phhi", "tcvtrowps2phli",
           "tilemovrowi"):
    PHYSICAL[f"llvm.x86.{_m}"] = AmxIntrinsic(f"llvm.x86.{_m}", _m, "row", "AMX-AVX512", False)

#: the machine instructions of the compiled program, by their upper-case mnemonic: configuration, then every
#: modelled tile instruction (what the register allocator emits and the runner executes)
MACHINE_OPCODES = ("LDTILECFG", "TILERELEASE", *(m.upper() for m, (_k, _f, ok) in FAMILIES.items() if ok))

#: configuration intrinsics: placed by the compiler, refused in its input
CONFIG = ("llvm.x86.ldtilecfg", "llvm.x86.sttilecfg", "llvm.x86.tilerelease", "llvm.x86.ldtilecfg.internal")

_CAST_PREFIXES = {"llvm.x86.cast.vector.to.tile": "to_tile", "llvm.x86.cast.tile.to.vector": "to_vector"}


def cast_direction(name: str | None) -> str | None:
    """``"to_tile"`` / ``"to_vector"`` for the (overloaded) tile cast intrinsics, else None."""
    if not name:
        return None
    for prefix, d in _CAST_PREFIXES.items():
        if name == prefix or name.startswith(prefix + "."):
            return d
    return None


def is_cast(name: str | None) -> bool:
    return cast_direction(name) is not None


def lookup(name: str) -> AmxIntrinsic | None:
    """The AMX intrinsic called ``name`` (shaped or physical form), else None."""
    return SHAPED.get(name) or PHYSICAL.get(name)
