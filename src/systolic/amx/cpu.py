"""CPU models with AMX, as data (DESIGN principle 4).

A :class:`CpuModel` is the set of AMX features a processor has, its tile
palettes and its TMUL limits; the CPUID leaves 0x1D (tile information) and 0x1E
(TMUL information) are *derived* from that data, never written by hand.

Sources (REFERENCE.md section 6):

* Intel SDM vol. 2A, CPUID: leaf 07H (AMX-BF16 EDX[22], AMX-TILE EDX[24],
  AMX-INT8 EDX[25]; subleaf 1: AMX-FP16 EAX[21], AMX-COMPLEX EDX[8]); leaf 1DH
  subleaf 0 EAX = max palette, subleaf 1 = palette 1 (EAX[15:0] total_tile_bytes,
  EAX[31:16] bytes_per_tile, EBX[15:0] bytes_per_row, EBX[31:16] max_names,
  ECX[15:0] max_rows); leaf 1EH subleaf 0 EBX[7:0] tmul_maxk, EBX[23:8]
  tmul_maxn.
* Intel ISA Extensions reference (rev. 055 and later): leaf 1EH subleaf 0 EAX =
  highest subleaf (1 where subleaf 1 exists) and subleaf 1 EAX feature bits:
  0 AMX-INT8, 1 AMX-BF16, 2 AMX-COMPLEX, 3 AMX-FP16, 4 AMX-FP8, 7 AMX-AVX512,
  8 AMX-MOVRS (bits 5 AMX-TRANSPOSE and 6 AMX-TF32 were removed from the ISE and
  are never set here). *Unverified on silicon*: only Sapphire Rapids is at hand.
* Feature sets per product: Sapphire/Emerald Rapids TILE+INT8+BF16; Granite
  Rapids adds FP16; Granite Rapids-D adds COMPLEX; Diamond Rapids adds FP8,
  AVX512 and MOVRS.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InvalidValue
from ..registry import Registry
from .isa import INSTRUCTIONS

__all__ = ["Palette", "CpuModel", "PALETTE_1", "CPUS", "get_cpu", "INSTRUCTION_FEATURE", "FEATURES"]

#: AMX feature names, in the order CPUID lists them.
FEATURES = ("amx-tile", "amx-int8", "amx-bf16", "amx-fp16", "amx-complex", "amx-fp8", "amx-avx512", "amx-movrs")

#: which feature each instruction needs (SDM / ISE "CPUID Feature Flag" column of each page): read from the
#: instruction records (systolic.amx.isa)
INSTRUCTION_FEATURE = {r.mnemonic: r.feature for r in INSTRUCTIONS.values()}

# CPUID bit positions (leaf, subleaf, register, bit) of each feature
_CPUID_07 = {"amx-bf16": (0, "edx", 22), "amx-tile": (0, "edx", 24), "amx-int8": (0, "edx", 25),
             "amx-fp16": (1, "eax", 21), "amx-complex": (1, "edx", 8)}
_CPUID_1E1 = {"amx-int8": 0, "amx-bf16": 1, "amx-complex": 2, "amx-fp16": 3, "amx-fp8": 4,
              "amx-avx512": 7, "amx-movrs": 8}


@dataclass(frozen=True)
class Palette:
    """One tile palette (CPUID leaf 1DH subleaf = palette id)."""

    id: int
    total_tile_bytes: int
    bytes_per_tile: int
    bytes_per_row: int
    max_names: int
    max_rows: int


#: Palette 1, the only palette besides 0 (= init state): 8 tiles of 16 rows x 64 bytes (SDM vol. 1 18.2).
PALETTE_1 = Palette(id=1, total_tile_bytes=8192, bytes_per_tile=1024, bytes_per_row=64, max_names=8, max_rows=16)


@dataclass(frozen=True)
class CpuModel:
    """A processor's AMX: feature set, palettes (index = palette id; 0 is the init palette), TMUL limits."""

    name: str
    product: str
    features: frozenset[str]
    palettes: tuple[Palette, ...] = (PALETTE_1,)
    tmul_maxk: int = 16  # rows of B / dwords of an A row (CPUID 1EH.0 EBX[7:0])
    tmul_maxn: int = 64  # bytes of a C / B row (CPUID 1EH.0 EBX[23:8])
    aliases: tuple[str, ...] = field(default=())

    @property
    def max_palette(self) -> int:
        return len(self.palettes)

    def palette(self, pid: int) -> Palette:
        """The palette with id ``pid`` (1 ... max_palette)."""
        if not 1 <= pid <= self.max_palette:
            raise InvalidValue(f"{self.name} has no tile palette {pid}", rule="CPUID 1DH: palettes 1 ... max_palette",
                               values={"palette": pid, "max_palette": self.max_palette})
        return self.palettes[pid - 1]

    def has(self, feature: str) -> bool:
        return feature in self.features

    def supports(self, mnemonic: str) -> bool:
        """Whether the CPU implements the instruction ``mnemonic`` (lower case)."""
        return INSTRUCTION_FEATURE.get(mnemonic.lower()) in self.features

    # ---- CPUID, derived from the data above
    def cpuid(self, leaf: int, subleaf: int = 0) -> tuple[int, int, int, int]:
        """(EAX, EBX, ECX, EDX) of the AMX-related CPUID leaves 07H (AMX bits only), 1DH and 1EH."""
        eax = ebx = ecx = edx = 0
        if leaf == 0x07:
            regs = {"eax": 0, "ebx": 0, "ecx": 0, "edx": 0}
            for feat, (sub, reg, bit) in _CPUID_07.items():
                if sub == subleaf and feat in self.features:
                    regs[reg] |= 1 << bit
            return regs["eax"], regs["ebx"], regs["ecx"], regs["edx"]
        if leaf == 0x1D:
            if "amx-tile" not in self.features:
                return 0, 0, 0, 0
            if subleaf == 0:
                return self.max_palette, 0, 0, 0
            if 1 <= subleaf <= self.max_palette:
                p = self.palettes[subleaf - 1]
                return (p.total_tile_bytes | p.bytes_per_tile << 16, p.bytes_per_row | p.max_names << 16,
                        p.max_rows, 0)
            return 0, 0, 0, 0
        if leaf == 0x1E:
            if "amx-tile" not in self.features:
                return 0, 0, 0, 0
            bits = 0
            for feat, bit in _CPUID_1E1.items():
                if feat in self.features:
                    bits |= 1 << bit
            # subleaf 1 exists only on CPUs that enumerate features there (ISE: Diamond Rapids and later)
            has_sub1 = bool(self.features & {"amx-fp8", "amx-avx512", "amx-movrs"})
            if subleaf == 0:
                return (1 if has_sub1 else 0), self.tmul_maxk | self.tmul_maxn << 8, 0, 0
            if subleaf == 1 and has_sub1:
                return bits, 0, 0, 0
            return 0, 0, 0, 0
        return eax, ebx, ecx, edx

    def as_dict(self) -> dict:
        return {
            "name": self.name, "product": self.product, "aliases": list(self.aliases),
            "features": [f for f in FEATURES if f in self.features],
            "palettes": [p.__dict__ for p in self.palettes],
            "tmul_maxk": self.tmul_maxk, "tmul_maxn": self.tmul_maxn,
            "cpuid": {f"{leaf:#04x}.{sub}": [hex(r) for r in self.cpuid(leaf, sub)]
                      for leaf, sub in ((0x07, 0), (0x07, 1), (0x1D, 0), (0x1D, 1), (0x1E, 0), (0x1E, 1))},
            "instructions": sorted(m for m in INSTRUCTION_FEATURE if self.supports(m)),
        }


_BASE = frozenset({"amx-tile", "amx-int8", "amx-bf16"})

CPUS: dict[str, CpuModel] = {c.name: c for c in (
    CpuModel("sapphirerapids", "4th Gen Xeon Scalable (Sapphire Rapids)", _BASE, aliases=("spr",)),
    CpuModel("emeraldrapids", "5th Gen Xeon Scalable (Emerald Rapids)", _BASE, aliases=("emr",)),
    CpuModel("graniterapids", "Xeon 6 P-core (Granite Rapids)", _BASE | {"amx-fp16"}, aliases=("gnr",)),
    CpuModel("graniterapids-d", "Xeon 6 SoC (Granite Rapids-D)", _BASE | {"amx-fp16", "amx-complex"},
             aliases=("gnr-d", "gnrd")),
    CpuModel("diamondrapids", "Diamond Rapids", _BASE | {"amx-fp16", "amx-complex", "amx-fp8", "amx-avx512",
                                                          "amx-movrs"}, aliases=("dmr",)),
)}


_REGISTRY: Registry[CpuModel] = Registry("CPU model", rule="CPU models", key="cpu", kind=CpuModel,
                                         normalize=lambda n: n.lower().replace("_", "-"))
for _c in CPUS.values():
    _REGISTRY.add(_c.name, _c, _c.aliases)


def get_cpu(cpu: str | CpuModel) -> CpuModel:
    """A CPU model by name or alias (case-insensitive, ``_`` read as ``-``), or the model itself."""
    return _REGISTRY.get(cpu)
