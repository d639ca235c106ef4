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
    try:
        cpu = get_cpu(name)
    except InvalidValue:
        cpu = None
    if cpu is not None:
        feats = sorted(f for f in cpu.features if f.startswith("amx"))
        sg = sub_group_size or 1
        return {"name": name, "kind": "AMX CPU", "model": cpu.name, "product": cpu.product,
                "engine": "AMX tiles (TMUL)", "features": feats, "tmul_maxk": cpu.tmul_maxk,
                "tmul_maxn": cpu.tmul_maxn, "sub_group_size": sg,
                "summary": f"AMX CPU {cpu.product}; {', '.join(feats)}; sub-group size {sg}"
                           + ("" if sub_group_size else " (the seed's joint_matrix on AMX: SG_SIZE 1)")}
    try:
        p = get_platform(name)
    except InvalidValue:
        p = None
    if p is not None:
        sg = sub_group_size or p.exec_size
        return {"name": name, "kind": "XMX GPU", "model": p.name, "product": p.description, "engine": "XMX (DPAS)",
                "family": p.family, "exec_size": p.exec_size, "grf_bytes": p.grf_bytes,
                "sub_group_sizes": list(p.subgroup_sizes), "dpasw": p.has_dpasw, "sub_group_size": sg,
                "summary": f"XMX GPU {p.description}; DPAS exec size {p.exec_size}, sub-group size {sg}, "
                           f"{p.grf_bytes}-byte GRF"}
    return {"name": name, "kind": "unknown", "model": name, "sub_group_size": sub_group_size,
            "summary": "a device the program defines (not an AMX CPU model or XMX platform of systolic)"}
