"""Intel GPU platforms with XMX, as immutable data (DESIGN principle 4).

Each :class:`Platform` says what the DPAS/DPASW verifier and the hardware need:
GRF size and count, the DPAS execution size (N), the sub-group sizes, which
precisions DPAS accepts, which Dst/Src0 types, whether DPASW (fused EUs)
exists, and the float defaults (denormal rule for bf16/tf32 inputs, numerics
model).

Sources (REFERENCE.md section 2; IGC ``visa/IsaVerification.cpp``
``verifyInstructionDpas``, ``visa/G4_Verifier.cpp`` (DPAS type checks),
``visa/HWCaps.inc`` (``hasBFDstforDPAS``: PVC+, ``hasDpasFP4``: after Xe3),
visa-DPAS.md "Exec_size"):

* XeHP/XeHPG (DG2 = Arc Alchemist, ATS-M): GRF 32 bytes, DPAS exec size 8,
  DPASW available, no tf32, Dst/Src0 only D/UD/F.
* XeHPC (PVC = Data Center GPU Max): GRF 64 bytes, exec size 16, no DPASW,
  tf32, BF/HF Dst/Src0 allowed.
* Xe2 (BMG = Battlemage, LNL = Lunar Lake): as PVC, plus a cr0 control bit for
  bf16/tf32 denormals which IGC sets to *retain* by default.
* Xe3P (CRI): the first platform IGC allows fp8 (bf8/hf8) and e2m1 DPAS on
  (``plat > Xe3`` in G4_Verifier.cpp), with F or BF Dst/Src0.

Which denormals PVC flushes is an inference from a compiler test, not a
silicon measurement (REFERENCE.md section 2); it is data here so a
measurement can replace it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ..registry import Registry

__all__ = ["Platform", "PLATFORMS", "get_platform", "platform_names", "INT_PRECISIONS", "FLOAT_PRECISIONS",
           "MAX_WORK_GROUP_SIZE"]

#: integer DPAS precisions (visa-DPAS.md precision table; u1/s1 are encodable but no platform takes them)
INT_PRECISIONS = ("u2", "s2", "u4", "s4", "u8", "s8")
#: float DPAS precisions (canonical systolic.types names)
FLOAT_PRECISIONS = ("bf16", "fp16", "tf32", "bf8", "hf8", "e2m1")

_XEHP_PREC = frozenset(INT_PRECISIONS + ("bf16", "fp16"))
_PVC_PREC = frozenset(INT_PRECISIONS + ("bf16", "fp16", "tf32"))
_XE3P_PREC = frozenset(INT_PRECISIONS + FLOAT_PRECISIONS)


#: the most work-items a work-group may have on these GPUs: intel/compute-runtime
#: shared/source/device/device_caps.cpp sets ``deviceInfo.maxWorkGroupSize = std::min(maxWS, 1024u)`` for every
#: device it drives (maxWS, threads per (dual) sub-slice x the minimal SIMD width, may be lower still; a kernel
#: compiled for the large register file gets fewer threads, so less again). A larger work-group is a launch error
#: (SYCL's nd_range check, OpenCL's CL_INVALID_WORK_GROUP_SIZE).
MAX_WORK_GROUP_SIZE = 1024


@dataclass(frozen=True)
class Platform:
    """One GPU platform's XMX facts.

    ``exec_size`` is DPAS's N (8 or 16); ``grf_bytes * num_grf`` is the register
    file; ``grf_modes`` the GRF counts the platform can run with (large-GRF
    mode); ``precisions`` the Src1/Src2 precisions DPAS accepts;
    ``acc_types`` maps a precision class ("int", "bf16", "fp16", "tf32",
    "fp8", "e2m1") to the legal Dst/Src0 types; ``denormals`` maps a precision
    to ``"flush"`` or ``"keep"`` (how DPAS treats that input's denormals by
    default).
    """

    name: str
    family: str
    description: str
    aliases: tuple[str, ...]
    grf_bytes: int
    num_grf: int
    grf_modes: tuple[int, ...]
    exec_size: int
    subgroup_sizes: tuple[int, ...]
    has_dpasw: bool
    precisions: frozenset[str]
    acc_types: Mapping[str, tuple[str, ...]]
    denormals: Mapping[str, str]
    has_denormal_control: bool = False
    systolic_depths: tuple[int, ...] = (8,)
    max_repeat_count: int = 8
    default_model: str = "stage"
    notes: tuple[str, ...] = field(default=())

    @property
    def dpas_exec_size(self) -> int:
        """DPAS's execution size = N = the number of columns of B and D."""
        return self.exec_size

    @property
    def matrix_subgroup_size(self) -> int:
        """The sub-group size the matrix built-ins use (= exec size; REFERENCE.md section 4)."""
        return self.exec_size

    @property
    def grf_file_bytes(self) -> int:
        return self.grf_bytes * self.num_grf

    def supports(self, precision: str) -> bool:
        return precision in self.precisions

    def as_dict(self) -> dict:
        """A JSON-ready description (``systolic xmx platforms --json``)."""
        return {
            "name": self.name, "family": self.family, "description": self.description,
            "aliases": list(self.aliases), "grf_bytes": self.grf_bytes, "num_grf": self.num_grf,
            "grf_modes": list(self.grf_modes), "exec_size": self.exec_size,
            "subgroup_sizes": list(self.subgroup_sizes), "has_dpasw": self.has_dpasw,
            "precisions": sorted(self.precisions, key=_prec_order),
            "acc_types": {k: list(v) for k, v in self.acc_types.items()},
            "denormals": dict(self.denormals), "has_denormal_control": self.has_denormal_control,
            "systolic_depths": list(self.systolic_depths), "max_repeat_count": self.max_repeat_count,
            "default_model": self.default_model, "notes": list(self.notes),
        }


def _prec_order(p: str) -> int:
    order = INT_PRECISIONS + FLOAT_PRECISIONS
    return order.index(p) if p in order else len(order)


def _ro(d: dict) -> Mapping:
    return MappingProxyType(dict(d))


_ACC_XEHP = _ro({"int": ("int32", "u32"), "bf16": ("fp32",), "fp16": ("fp32",)})
_ACC_PVC = _ro({"int": ("int32", "u32"), "bf16": ("fp32", "bf16"), "fp16": ("fp32", "fp16"), "tf32": ("fp32",)})
_ACC_XE3P = _ro({"int": ("int32", "u32"), "bf16": ("fp32", "bf16"), "fp16": ("fp32", "fp16"), "tf32": ("fp32",),
                 "fp8": ("fp32", "bf16"), "e2m1": ("fp32", "bf16")})

_FLUSH_BF_TF = _ro({"bf16": "flush", "tf32": "flush", "fp16": "keep", "bf8": "keep", "hf8": "keep", "e2m1": "keep"})
_KEEP_ALL = _ro({"bf16": "keep", "tf32": "keep", "fp16": "keep", "bf8": "keep", "hf8": "keep", "e2m1": "keep"})

_ALL = (
    Platform(
        name="dg2", family="XeHPG",
        description="Xe-HPG (DG2: Arc A-series, Data Center GPU Flex / ATS-M); also XeHP SDV's DPAS rules",
        aliases=("xehpg", "xehp", "acm", "arc", "alchemist", "ats-m", "atsm", "flex"),
        grf_bytes=32, num_grf=128, grf_modes=(128,), exec_size=8, subgroup_sizes=(8, 16, 32),
        has_dpasw=True, precisions=_XEHP_PREC, acc_types=_ACC_XEHP, denormals=_FLUSH_BF_TF,
        notes=("DPAS exec size 8 (IsaVerification.cpp)", "no tf32", "Dst/Src0 D, UD or F only",
               "bf16 input denormals flushed (assumed, pre-Xe2: no control bit)"),
    ),
    Platform(
        name="pvc", family="XeHPC",
        description="Xe-HPC (Ponte Vecchio: Data Center GPU Max)",
        aliases=("xehpc", "max", "ponte-vecchio", "pontevecchio"),
        grf_bytes=64, num_grf=128, grf_modes=(128, 256), exec_size=16, subgroup_sizes=(16, 32),
        has_dpasw=False, precisions=_PVC_PREC, acc_types=_ACC_PVC, denormals=_FLUSH_BF_TF,
        notes=("DPAS exec size 16, DPASW rejected (IsaVerification.cpp)", "BF/HF Dst and Src0 (hasBFDstforDPAS)",
               "bf16/tf32 denormals flushed: inferred from an IGC test, unverified on silicon"),
    ),
    Platform(
        name="bmg", family="Xe2",
        description="Xe2-HPG (Battlemage: Arc B-series)",
        aliases=("xe2", "xe2-hpg", "battlemage"),
        grf_bytes=64, num_grf=128, grf_modes=(128, 256), exec_size=16, subgroup_sizes=(16, 32),
        has_dpasw=False, precisions=_PVC_PREC, acc_types=_ACC_PVC, denormals=_KEEP_ALL,
        has_denormal_control=True,
        notes=("cr0 bit 30 controls bf16/tf32 denormals; IGC retains them by default "
               "(-bf-tf-denorms-are-zero flushes)",),
    ),
    Platform(
        name="lnl", family="Xe2",
        description="Xe2-LPG (Lunar Lake)",
        aliases=("xe2-lpg", "lunarlake", "lunar-lake"),
        grf_bytes=64, num_grf=128, grf_modes=(128, 256), exec_size=16, subgroup_sizes=(16, 32),
        has_dpasw=False, precisions=_PVC_PREC, acc_types=_ACC_PVC, denormals=_KEEP_ALL,
        has_denormal_control=True,
        notes=("as bmg",),
    ),
    Platform(
        name="xe3p", family="Xe3P",
        description="Xe3P (CRI): IGC's first platform with fp8 (bf8/hf8) and e2m1 DPAS",
        aliases=("cri", "crescent-island"),
        grf_bytes=64, num_grf=128, grf_modes=(128, 256), exec_size=16, subgroup_sizes=(16, 32),
        has_dpasw=False, precisions=_XE3P_PREC, acc_types=_ACC_XE3P, denormals=_KEEP_ALL,
        has_denormal_control=True,
        notes=("fp8 DPAS only on plat > Xe3 with F or BF Dst/Src0 (G4_Verifier.cpp)",
               "e2m1 needs e2m1 on both sources (hasDpasFP4, hasSameSrc2Precision)",
               "fp8 and e2m1 numerics: same named models, no public measurement"),
    ),
)

PLATFORMS: Mapping[str, Platform] = MappingProxyType({p.name: p for p in _ALL})
_REGISTRY: Registry[Platform] = Registry("XMX platform", rule="known platforms", key="platform", kind=Platform)
for _p in _ALL:
    _REGISTRY.add(_p.name, _p, _p.aliases)


def get_platform(name: str | Platform | None = None) -> Platform:
    """The platform called ``name`` (name or alias, case-insensitive); ``None`` gives ``pvc``."""
    if name is None:
        return PLATFORMS["pvc"]
    return _REGISTRY.get(name)


def platform_names() -> list[str]:
    return list(PLATFORMS)
