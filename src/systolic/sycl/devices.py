"""SYCL devices as data: the architectures joint_matrix runs on, and their matrix combinations.

The combinations are the runtime list of intel/llvm ``sycl/source/detail/device_info.hpp``
(``get_device_info_impl<std::vector<combination>, info::device::matrix_combinations>``; REFERENCE.md section 5),
in that file's order. A record is ``{max_msize, max_nsize, max_ksize, msize, nsize, ksize, atype, btype, ctype,
dtype}``: a nonzero ``max_*`` means any size up to it, a nonzero ``msize``/``nsize``/``ksize`` one fixed size.

Devices (``architecture::intel_cpu_*`` / ``intel_gpu_*``):

* AMX CPUs, sub-group size 1 (2021 seed: "SG_SIZE has to be equal to one"): spr, emr, gnr, dmr. intel/llvm lists
  spr, gnr and dmr; emr has the same AMX features as spr (AMX-TILE, -INT8, -BF16) and is given spr's list.
* XMX GPUs: dg2 and arl (DPAS exec size 8, sub-group 8); pvc, bmg and lnl (exec size 16, sub-group 16).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType

from ..errors import InvalidValue
from ..registry import Registry
from ..suggest import did_you_mean
from ..xmx.platform import MAX_WORK_GROUP_SIZE

__all__ = ["DEVICES", "GPU_MAX_WORK_GROUP_SIZE", "Combination", "Device", "devices", "engine_device", "get_device", "matrix_type"]

#: ``info::device::max_work_group_size`` of the Intel GPUs here (xmx.platform.MAX_WORK_GROUP_SIZE, from
#: intel/compute-runtime); AMX devices run on the CPU runtime, whose limit is not modelled
GPU_MAX_WORK_GROUP_SIZE = MAX_WORK_GROUP_SIZE


class matrix_type:
    """``sycl::ext::oneapi::experimental::matrix::matrix_type`` (the names the combination records use)."""

    bf16 = "bf16"
    fp16 = "fp16"
    tf32 = "tf32"
    fp32 = "fp32"
    fp64 = "fp64"
    sint8 = "sint8"
    sint16 = "sint16"
    sint32 = "sint32"
    sint64 = "sint64"
    uint8 = "uint8"
    uint16 = "uint16"
    uint32 = "uint32"
    uint64 = "uint64"


@dataclass(frozen=True)
class Combination:
    """One ``combination`` record (SYCL's field names and order)."""

    max_msize: int
    max_nsize: int
    max_ksize: int
    msize: int
    nsize: int
    ksize: int
    atype: str
    btype: str
    ctype: str
    dtype: str

    def admits(self, m: int, n: int, k: int) -> bool:
        """Whether the shape M x N x K is one this record allows."""
        def ok(v, mx, fixed):
            return v == fixed if fixed else 1 <= v <= mx
        return ok(m, self.max_msize, self.msize) and ok(n, self.max_nsize, self.nsize) and \
            ok(k, self.max_ksize, self.ksize)

    def shape_text(self) -> str:
        def one(mx, fixed):
            return str(fixed) if fixed else f"<={mx}"
        return (f"{one(self.max_msize, self.msize)} x {one(self.max_nsize, self.nsize)} x "
                f"{one(self.max_ksize, self.ksize)}")

    def types(self) -> tuple[str, str, str, str]:
        return (self.atype, self.btype, self.ctype, self.dtype)

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.atype} x {self.btype} + {self.ctype} -> {self.dtype}: M x N x K {self.shape_text()}"


def _c(mm, mn, mk, m, n, k, a, b, c, d) -> Combination:
    return Combination(mm, mn, mk, m, n, k, a, b, c, d)


_I8 = [("uint8", "uint8"), ("uint8", "sint8"), ("sint8", "uint8"), ("sint8", "sint8")]
_SPR = tuple([_c(16, 16, 64, 0, 0, 0, a, b, "sint32", "sint32") for a, b in _I8]
             + [_c(16, 16, 32, 0, 0, 0, "bf16", "bf16", "fp32", "fp32")])
_GNR = _SPR + (_c(16, 16, 32, 0, 0, 0, "fp16", "fp16", "fp32", "fp32"),)
#: intel/llvm's dmr list adds tf32 16 x 16 x 16, but AMX-TF32 left the ISE (REFERENCE.md section 6): no instruction
#: computes it (intel/llvm's own joint_matrix_tf32 e2e test is XFAIL on cpu). A capability query must agree with
#: the operation, so dmr answers gnr's list and keeps that record in ``Device.not_lowered`` (docs/sycl.md)
_DMR_TF32 = _c(16, 16, 16, 0, 0, 0, "tf32", "tf32", "fp32", "fp32")
_DMR = _GNR


def _pvc() -> tuple[Combination, ...]:
    out = [_c(8, 0, 0, 0, 16, 32, a, b, "sint32", "sint32") for a, b in _I8]
    # device_info.hpp's order of (ctype, dtype) for each 16-bit type and shape
    fp16_cd = [("fp32", "fp32"), ("fp16", "fp32"), ("fp32", "fp16"), ("fp16", "fp16")]
    out += [_c(8, 0, 0, 0, 16, 16, "fp16", "fp16", c, d) for c, d in fp16_cd]
    for m, n, k in ((16, 16, 16), (1, 64, 16), (32, 64, 16), (1, 64, 32), (32, 64, 32)):
        out += [_c(0, 0, 0, m, n, k, "fp16", "fp16", c, d) for c, d in
                [("fp32", "fp32"), ("fp32", "fp16"), ("fp16", "fp32"), ("fp16", "fp16")]]
    out += [_c(8, 0, 0, 0, 16, 16, "bf16", "bf16", c, d) for c, d in
            [("bf16", "bf16"), ("fp32", "bf16"), ("bf16", "fp32"), ("fp32", "fp32")]]
    for m, n, k in ((16, 16, 16), (1, 64, 16), (32, 64, 16), (1, 64, 32), (32, 64, 32)):
        out += [_c(0, 0, 0, m, n, k, "bf16", "bf16", c, d) for c, d in
                [("fp32", "fp32"), ("bf16", "fp32"), ("fp32", "bf16"), ("bf16", "bf16")]]
    out.append(_c(8, 0, 0, 0, 16, 8, "tf32", "tf32", "fp32", "fp32"))
    return tuple(out)


_PVC = _pvc()
_DG2 = tuple([_c(8, 0, 0, 0, 8, 32, a, b, "sint32", "sint32") for a, b in _I8]
             + [_c(8, 0, 0, 0, 8, 16, "fp16", "fp16", "fp32", "fp32"),
                _c(8, 0, 0, 0, 8, 16, "bf16", "bf16", "fp32", "fp32"),
                _c(0, 0, 0, 32, 32, 16, "bf16", "bf16", "fp32", "fp32")])


@dataclass(frozen=True)
class Device:
    """One SYCL device by architecture: its engine, sub-group size and matrix combinations.

    ``backend`` is "amx" (``engine`` = a :data:`systolic.amx.CPUS` model) or "xmx" (``engine`` = a
    :data:`systolic.xmx.PLATFORMS` platform); ``sub_group_size`` is the size joint_matrix kernels use.
    """

    name: str
    architecture: str
    kind: str
    backend: str
    engine: str
    sub_group_size: int
    description: str
    combinations: tuple[Combination, ...]
    source: str = "intel/llvm sycl/source/detail/device_info.hpp"
    #: records of intel/llvm's list that no instruction of the device computes (left out of ``combinations``)
    not_lowered: tuple[Combination, ...] = ()

    @property
    def max_work_group_size(self) -> int | None:
        """The largest work-group a launch may have (:data:`GPU_MAX_WORK_GROUP_SIZE` on GPUs; None: not
        modelled)."""
        return GPU_MAX_WORK_GROUP_SIZE if self.kind == "gpu" else None

    def as_dict(self) -> dict:
        return {"name": self.name, "architecture": self.architecture, "kind": self.kind, "backend": self.backend,
                "engine": self.engine, "sub_group_size": self.sub_group_size, "description": self.description,
                "combinations": len(self.combinations), "source": self.source}


_ALL = (
    Device("spr", "intel_cpu_spr", "cpu", "amx", "sapphirerapids", 1, "4th Gen Xeon (Sapphire Rapids), AMX", _SPR),
    Device("emr", "intel_cpu_emr", "cpu", "amx", "emeraldrapids", 1, "5th Gen Xeon (Emerald Rapids), AMX", _SPR,
           source="spr's list (same AMX features; intel/llvm lists no emr entry)"),
    Device("gnr", "intel_cpu_gnr", "cpu", "amx", "graniterapids", 1, "Xeon 6 P-core (Granite Rapids), AMX + FP16",
           _GNR),
    Device("dmr", "intel_cpu_dmr", "cpu", "amx", "diamondrapids", 1, "Diamond Rapids, AMX + FP16",
           _DMR, source="intel/llvm device_info.hpp less tf32 (AMX-TF32 left the ISE: Device.not_lowered)",
           not_lowered=(_DMR_TF32,)),
    Device("dg2", "intel_gpu_dg2_g10", "gpu", "xmx", "dg2", 8, "Arc A-series / Flex (DG2, Xe-HPG), XMX", _DG2),
    Device("arl", "intel_gpu_arl_h", "gpu", "xmx", "dg2", 8, "Arrow Lake-H (Xe-LPG+), XMX as DG2", _DG2),
    Device("pvc", "intel_gpu_pvc", "gpu", "xmx", "pvc", 16, "Data Center GPU Max (Ponte Vecchio), XMX", _PVC),
    Device("bmg", "intel_gpu_bmg_g21", "gpu", "xmx", "bmg", 16, "Arc B-series (Battlemage, Xe2), XMX", _PVC),
    Device("lnl", "intel_gpu_lnl_m", "gpu", "xmx", "lnl", 16, "Lunar Lake (Xe2-LPG), XMX", _PVC),
)

DEVICES: Mapping[str, Device] = MappingProxyType({d.name: d for d in _ALL})
_REGISTRY: Registry[Device] = Registry("SYCL device", rule="devices", key="device", kind=Device)


def _engine_aliases(d: Device) -> list[str]:
    """The names the engine's own table has for ``d`` (docs/ARCHITECTURE.md "Vocabulary": one set of device
    names): every alias of its CPU model, or of its XMX platform when the device is that platform (dg2, pvc, bmg,
    lnl; arl runs XMX as dg2 but is not a dg2, so it keeps its own names)."""
    if d.backend == "amx":
        from ..amx.cpu import _REGISTRY as table
    elif d.engine == d.name:
        from ..xmx.platform import _REGISTRY as table
    else:
        return []
    rec = table.get(d.engine)
    return [alias for alias, r in table.aliases().items() if r is rec]


for _d in _ALL:
    _REGISTRY.add(_d.name, _d, (_d.architecture, _d.engine if _d.backend == "amx" else _d.name,
                                *_engine_aliases(_d)))


def devices() -> list[Device]:
    """Every device record, AMX CPUs first."""
    return list(_ALL)


def get_device(name) -> Device:
    """The device called ``name`` (spr, emr, gnr, dmr, dg2, arl, pvc, bmg, lnl or an ``intel_*`` architecture)."""
    return _REGISTRY.get(name)


#: the rule an engine string's device obeys (issue 27): the family says which table the name is looked up in
ENGINE_DEVICE_RULE = ("amx:<device> names a CPU (AMX) device, xmx:<device> a GPU (XMX) device: a CPU model "
                      "(systolic amx cpus), an XMX platform (systolic xmx platforms) or a SYCL device name or "
                      "architecture (systolic sycl devices) of that kind")


def engine_device(family: str, name) -> str:
    """The engine's own device name of ``name`` in an engine string ``family:name`` (issue 27): the canonical
    :data:`systolic.amx.CPUS` model for ``amx``, the :data:`systolic.xmx.PLATFORMS` platform for ``xmx``.

    ``name`` is any alias the engine's table knows, or any SYCL device name or ``intel_*`` architecture of this
    table (``intel_cpu_spr`` -> ``sapphirerapids``, ``arl`` / ``intel_gpu_arl_h`` -> ``dg2``: the engine each
    device's record names). A device of the other family is an InvalidValue naming the rule; an unknown name
    one with the close names of the family."""
    from ..amx.cpu import _REGISTRY as cpus
    from ..xmx.platform import _REGISTRY as platforms
    fam = str(family).strip().lower()
    if fam not in ("amx", "xmx"):
        raise InvalidValue(f"unknown engine family {family!r}{did_you_mean(fam, ('amx', 'xmx'))}",
                           rule=ENGINE_DEVICE_RULE, values={"family": family})
    table = cpus if fam == "amx" else platforms
    key = str(name).strip()
    if key in table:
        return table.get(key).name
    if key in _REGISTRY:
        dev = _REGISTRY.get(key)
        if dev.backend != fam:
            raise InvalidValue(f"{key!r} is a {dev.kind.upper()} ({dev.backend.upper()}) device ({dev.name}), "
                               f"not an {fam.upper()} one: name it {dev.backend}:{key}", rule=ENGINE_DEVICE_RULE,
                               values={"engine": f"{fam}:{key}", "device": dev.name, "backend": dev.backend})
        return table.get(dev.engine).name
    other, other_fam = (platforms, "xmx") if fam == "amx" else (cpus, "amx")
    if key in other:                                # an engine-table alias with no SYCL device (gnr-d, xe3p...)
        kind = "CPU" if other_fam == "amx" else "GPU"
        raise InvalidValue(f"{key!r} is a {kind} ({other_fam.upper()}) device ({other.get(key).name}), not an "
                           f"{fam.upper()} one: name it {other_fam}:{key}", rule=ENGINE_DEVICE_RULE,
                           values={"engine": f"{fam}:{key}", "device": other.get(key).name, "backend": other_fam})
    known = [*table.aliases(), *(n for d in _ALL if d.backend == fam for n in (d.name, d.architecture))]
    what = "CPU model" if fam == "amx" else "XMX platform"
    raise InvalidValue(f"unknown {what} {key!r}{did_you_mean(key, known)}", rule=ENGINE_DEVICE_RULE,
                       values={"engine": f"{fam}:{key}",
                               "known": sorted({*table.names(), *(d.name for d in _ALL if d.backend == fam)})})


def near_combinations(rec: Device, types: tuple[str, ...] = (), shape: tuple[int, int, int] | None = None,
                      limit: int = 8) -> str:
    """The combinations of ``rec`` near a refused request, for its error's rule (issue 27: not all 53 of pvc on one
    line): those with the same types (A, B, C, D as far as ``types`` names them), else the same A and B types,
    else those admitting ``shape`` (M, N, K); then the command that lists them all."""
    combos = rec.combinations
    near: list = []
    if types:
        near = [c for c in combos if c.types()[:len(types)] == tuple(types)]
        if not near and len(types) >= 2:
            near = [c for c in combos if c.types()[:2] == tuple(types[:2])]
        if not near:
            near = [c for c in combos if types[0] in c.types()]
    if not near and shape is not None:
        near = [c for c in combos if c.admits(*shape)]
    if shape is not None:                    # among the near ones, those of the requested shape first
        near.sort(key=lambda c: not c.admits(*shape))
    label = "near combinations" if near else "combinations (none shares the types)"
    near = near or list(combos)
    more = len(near) - limit
    text = "; ".join(str(c) for c in near[:limit]) + (f"; ... {more} more" if more > 0 else "")
    return f"{rec.name}'s {label}: {text} (all {len(combos)}: systolic sycl combinations {rec.name})"
