"""The AMX intrinsics of LLVM 22 (``llvm/include/llvm/IR/IntrinsicsX86.td``, clang 22's ``amx*intrin.h``), each
with its family and whether the TileMachine models it.

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

__all__ = ["AmxIntrinsic", "FAMILIES", "SHAPED", "PHYSICAL", "CONFIG", "lookup", "is_cast", "cast_direction",
           "MODELLED_DOTS", "MODELLED_LOADS", "UNMODELLED"]


@dataclass(frozen=True)
class AmxIntrinsic:
    """One ``llvm.x86.*`` AMX intrinsic: its instruction mnemonic, kind (load/store/zero/dot/row), family
    (CPUID feature: AMX-INT8, AMX-COMPLEX, ...) and whether the TileMachine executes it."""

    name: str
    mnemonic: str
    kind: str
    family: str
    modelled: bool


#: the tile instructions, mnemonic -> (kind, family, modelled by systolic.amx.TileMachine)
FAMILIES: dict[str, tuple[str, str, bool]] = {
    "tileloadd": ("load", "AMX-TILE", True),
    "tileloaddt1": ("load", "AMX-TILE", True),
    "tilestored": ("store", "AMX-TILE", True),
    "tilezero": ("zero", "AMX-TILE", True),
    "tdpbssd": ("dot", "AMX-INT8", True),
    "tdpbsud": ("dot", "AMX-INT8", True),
    "tdpbusd": ("dot", "AMX-INT8", True),
    "tdpbuud": ("dot", "AMX-INT8", True),
    "tdpbf16ps": ("dot", "AMX-BF16", True),
    "tdpfp16ps": ("dot", "AMX-FP16", True),
    "tcmmimfp16ps": ("dot", "AMX-COMPLEX", True),
    "tcmmrlfp16ps": ("dot", "AMX-COMPLEX", True),
    "tdpbf8ps": ("dot", "AMX-FP8", True),
    "tdpbhf8ps": ("dot", "AMX-FP8", True),
    "tdphbf8ps": ("dot", "AMX-FP8", True),
    "tdphf8ps": ("dot", "AMX-FP8", True),
    # families the TileMachine does not model (yet): a typed refusal naming the intrinsic
    "tmmultf32ps": ("dot", "AMX-TF32", False),
    "tileloaddrs": ("load", "AMX-MOVRS", False),
    "tileloaddrst1": ("load", "AMX-MOVRS", False),
    "tcvtrowd2ps": ("row", "AMX-AVX512", False),
    "tcvtrowps2bf16h": ("row", "AMX-AVX512", False),
    "tcvtrowps2bf16l": ("row", "AMX-AVX512", False),
    "tcvtrowps2phh": ("row", "AMX-AVX512", False),
    "tcvtrowps2phl": ("row", "AMX-AVX512", False),
    "tilemovrow": ("row", "AMX-AVX512", False),
}

MODELLED_DOTS = tuple(m for m, (k, _f, ok) in FAMILIES.items() if k == "dot" and ok)
MODELLED_LOADS = tuple(m for m, (k, _f, ok) in FAMILIES.items() if k == "load" and ok)
UNMODELLED = tuple(m for m, (_k, _f, ok) in FAMILIES.items() if not ok)


def _llvm_base(mnemonic: str) -> str:
    # loads and stores carry the address size in their intrinsic name (tileloadd64, tileloaddt164, ...)
    return f"{mnemonic}64" if FAMILIES[mnemonic][0] in ("load", "store") else mnemonic


SHAPED: dict[str, AmxIntrinsic] = {}
PHYSICAL: dict[str, AmxIntrinsic] = {}
for _m, (_k, _f, _ok) in FAMILIES.items():
    SHAPED[f"llvm.x86.{_llvm_base(_m)}.internal"] = AmxIntrinsic(f"llvm.x86.{_llvm_base(_m)}.internal", _m, _k,
                                                                  _f, _ok)
    PHYSICAL[f"llvm.x86.{_llvm_base(_m)}"] = AmxIntrinsic(f"llvm.x86.{_llvm_base(_m)}", _m, _k, _f, _ok)
# the immediate-row variants of the AVX512 conversions exist only in the physical form
for _m in ("tcvtrowd2psi", "tcvtrowps2bf16hi", "tcvtrowps2bf16li", "tcvtrowps2phhi", "tcvtrowps2phli",
           "tilemovrowi"):
    PHYSICAL[f"llvm.x86.{_m}"] = AmxIntrinsic(f"llvm.x86.{_m}", _m, "row", "AMX-AVX512", False)

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
