"""What a device name stands for in a ``systolic run`` report: an AMX CPU or an XMX GPU platform.

The facts come from the engines' own tables (:data:`systolic.amx.cpu.CPUS`, :data:`systolic.xmx.platform.PLATFORMS`),
so a device is described once, where it is defined.
"""

from __future__ import annotations

from ..errors import InvalidValue

__all__ = ["describe", "engine_of", "same_device", "known_names", "amx_cpu", "xmx_platform",
           "sycl_device"]


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


# --- one device vocabulary for every command (issue 27): every alias of a device names it everywhere ----------

def known_names() -> list[str]:
    """Every name and alias of every device: AMX CPU models, XMX platforms, SYCL devices and architectures."""
    from ..amx.cpu import CPUS
    from ..xmx.platform import PLATFORMS
    names = [n for c in CPUS.values() for n in (c.name, *c.aliases)]
    names += [n for p in PLATFORMS.values() for n in (p.name, *p.aliases)]
    try:
        from ..sycl.devices import DEVICES
        names += [n for d in DEVICES.values() for n in (d.name, d.architecture)]
    except ImportError:  # pragma: no cover - the SYCL layer is part of the package
        pass
    return list(dict.fromkeys(names))


def engine_of(name: str) -> tuple[str, str] | None:
    """``("amx", CPU model)`` or ``("xmx", platform)`` for any name or alias of a device (``spr``,
    ``sapphirerapids``, ``intel_cpu_spr``; ``pvc``, ``xehpc``, ``intel_gpu_pvc``, ``arl``); None when no device
    of systolic has that name."""
    from ..amx.cpu import get_cpu
    from ..xmx.platform import get_platform
    sy = _sycl_device(name)
    if sy is not None:
        return (sy.backend, sy.engine)
    for kind, get in (("amx", get_cpu), ("xmx", get_platform)):
        try:
            return (kind, get(name).name)
        except InvalidValue:
            pass
    return None


def _key(name: str) -> str:
    """What two spellings of one device share: the SYCL device name where there is one (spr, arl, pvc), else the
    engine's model name; an unknown name stands for itself (a program may define devices of its own)."""
    sy = _sycl_device(name)
    if sy is not None:
        return sy.name
    e = engine_of(name)
    if e is None:
        return str(name).lower()
    try:
        from ..sycl.devices import DEVICES
        for d in DEVICES.values():        # spr for sapphirerapids; pvc for xehpc (not arl for dg2: arl is a name)
            if d.backend == e[0] and d.engine == e[1] and (e[0] == "amx" or d.name == e[1]):
                return d.name
    except ImportError:  # pragma: no cover
        pass
    return e[1]


def same_device(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name the same device (``spr`` and ``sapphirerapids``; ``pvc`` and ``xehpc``)."""
    return _key(a) == _key(b)


def _listing(kind: str) -> str:
    """The devices of one kind with their aliases: "sapphirerapids (spr), ..." (amx) or "pvc (xehpc, ...)"."""
    if kind == "amx":
        from ..amx.cpu import CPUS as table
    else:
        from ..xmx.platform import PLATFORMS as table
    return ", ".join(f"{c.name} ({', '.join(c.aliases)})" if c.aliases else c.name for c in table.values())


def unknown_device(name: str, wanted: str, kind: str | None = None) -> InvalidValue:
    """The error for a name that is no device of the wanted kind (``kind``: amx or xmx, whose devices the rule
    then lists with their aliases), with the close names."""
    from ..suggest import did_you_mean
    rule = (f"{wanted}: one of {_listing(kind)}" if kind else
            "devices: systolic sycl devices, systolic amx cpus, systolic xmx platforms (every alias is accepted)")
    e = engine_of(name)
    if e is not None:
        other = {"amx": "an AMX CPU", "xmx": "an XMX GPU"}[e[0]]
        return InvalidValue(f"{name!r} is {other}; this command needs {wanted}", rule=rule, values={"device": name})
    return InvalidValue(f"unknown device {name!r}{did_you_mean(name, known_names())}", rule=rule,
                        values={"device": name})


def amx_cpu(name: str) -> str:
    """The AMX CPU model (``sapphirerapids``) any name or alias of an AMX device stands for."""
    e = engine_of(name)
    if e is None or e[0] != "amx":
        raise unknown_device(name, "an AMX CPU", "amx")
    return e[1]


def xmx_platform(name: str) -> str:
    """The XMX platform (``pvc``) any name or alias of an XMX device stands for."""
    e = engine_of(name)
    if e is None or e[0] != "xmx":
        raise unknown_device(name, "an XMX GPU", "xmx")
    return e[1]


def sycl_device(name: str) -> str:
    """The SYCL device name (``spr``, ``pvc``, ``arl``) any alias stands for (``sapphirerapids``, ``xehpc``,
    ``intel_gpu_pvc``)."""
    sy = _sycl_device(name)
    if sy is not None:
        return sy.name
    k = _key(name)
    if _sycl_device(k) is not None:
        return k
    raise unknown_device(name, "a SYCL device (spr, emr, gnr, dmr, dg2, arl, pvc, bmg, lnl)") if engine_of(name) \
        is None else InvalidValue(f"{name!r} has no SYCL joint_matrix device", rule="systolic sycl devices",
                                  values={"device": name})
