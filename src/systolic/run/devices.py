"""What a device name stands for in a ``systolic run`` report: an AMX CPU or an XMX GPU platform.

The facts come from the engines' own tables (:data:`systolic.amx.cpu.CPUS`, :data:`systolic.xmx.platform.PLATFORMS`),
so a device is described once, where it is defined.
"""

from __future__ import annotations

from ..errors import InvalidValue

__all__ = ["describe"]


def describe(name: str, sub_group_size: int | None = None) -> dict:
    """``{"name", "kind", "model", "summary", "sub_group_size", ...}`` for an AMX CPU or XMX platform name or alias.

    ``sub_group_size``: the program's own value where it reported one (it wins over the device's default).
    An unknown name gives ``kind="unknown"`` (a program may define devices of its own).
    """
    from ..amx.cpu import get_cpu
    from ..xmx.platform import get_platform
    sy = _sycl_device(name)
    engine = name
    if sy is not None:                 # a SYCL device name (e.g. arl): its engine and joint_matrix sub-group size
        engine = sy.engine
        sub_group_size = sub_group_size or sy.sub_group_size
    out = _describe_engine(name, engine, sub_group_size, get_cpu, get_platform,
                           None if sy is None else sy.description)
    if sy is not None:
        out["sycl_architecture"] = sy.architecture
        out["summary"] += f"; SYCL {sy.architecture}"
    return out


def _sycl_device(name: str):
    """The SYCL layer's device record for ``name``, or None (not a SYCL name, or the SYCL layer is absent)."""
    try:
        from ..sycl.devices import get_device
        return get_device(name)
    except Exception:  # noqa: BLE001 - optional: the engines' tables still describe the device
        return None


def _describe_engine(name, engine, sub_group_size, get_cpu, get_platform, product=None) -> dict:
    try:
        cpu = get_cpu(engine)
    except InvalidValue:
        cpu = None
    if cpu is not None:
        feats = sorted(f for f in cpu.features if f.startswith("amx"))
        sg = sub_group_size or 1
        return {"name": name, "kind": "AMX CPU", "model": cpu.name, "product": cpu.product,
                "engine": "AMX tiles (TMUL)", "features": feats, "tmul_maxk": cpu.tmul_maxk,
                "tmul_maxn": cpu.tmul_maxn, "sub_group_size": sg,
                "summary": f"AMX CPU {product or cpu.product} (model {cpu.name}); {', '.join(feats)}; "
                           f"sub-group size {sg}"}
    try:
        p = get_platform(engine)
    except InvalidValue:
        p = None
    if p is not None:
        sg = sub_group_size or p.exec_size
        return {"name": name, "kind": "XMX GPU", "model": p.name, "product": p.description, "engine": "XMX (DPAS)",
                "family": p.family, "exec_size": p.exec_size, "grf_bytes": p.grf_bytes,
                "sub_group_sizes": list(p.subgroup_sizes), "dpasw": p.has_dpasw, "sub_group_size": sg,
                "summary": f"XMX GPU {product or p.description} (platform {p.name}); DPAS exec size {p.exec_size}, "
                           f"sub-group size {sg}, {p.grf_bytes}-byte GRF"}
    return {"name": name, "kind": "unknown", "model": name, "sub_group_size": sub_group_size,
            "summary": "a device the program defines (not an AMX CPU model or XMX platform of systolic)"}
