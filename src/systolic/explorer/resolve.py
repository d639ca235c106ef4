"""Names -> :class:`~systolic.layout.Layout`: which layer, operand, platform/device and shape.

Layers (``LAYERS``) and the function each one resolves through (the owner of the map):

``dpas`` / ``dpasw``  :func:`systolic.xmx.layout.layout` (device = the platform, precisions, rc, dst type)
``amx``               :mod:`systolic.layout.amx` with the instruction's element types (``TileMachine``'s table)
``opencl``            ``systolic.opencl.layout(name, operand, device=, m=)`` (OpenCL built-ins)
``sycl``              ``systolic.sycl.matrix.layout(device, T, use, rows, cols, layout)`` (joint_matrix)

The programming-model layers are imported when asked for, so this module loads without them.
"""

from __future__ import annotations

import functools
import importlib

import numpy as np

from .. import types as T
from ..errors import BackendUnavailable, InvalidValue
from ..layout import Layout
from ..registry import Registry

__all__ = ["LAYERS", "resolve", "mma_layouts", "amx_layout"]

LAYERS = {
    "dpas": "XMX DPAS register operands: src2 (A), src1 (B), src0 (C), dst (D)",
    "dpasw": "XMX DPASW (XeHP fused EUs): A split between the two EUs",
    "amx": "AMX tiles: a (src1 tile), b (src2 tile, VNNI), c (dst tile)",
    "opencl": "OpenCL sub-group matrix built-in arguments: a, b, acc",
    "sycl": "SYCL joint_matrix work-item slices: a, b, accumulator",
}
_LAYER_ALIASES = {"xmx": "dpas", "tile": "amx", "joint_matrix": "sycl", "cl": "opencl"}

#: layer name or alias (case-insensitive) -> the layer's own name
_LAYERS: Registry[str] = Registry("layer", rule="layers", key="layer")
for _name in LAYERS:
    _LAYERS.add(_name, _name, [a for a, n in _LAYER_ALIASES.items() if n == _name])


def _layer(name: str) -> str:
    return _LAYERS.get(name)


def amx_layout(operand: str, instruction: str = "tdpbf16ps", m: int | None = None, n: int | None = None,
               k: int | None = None) -> Layout:
    """A TDP* operand's tile layout: ``a`` (= src1 tile, M x K), ``b`` (src2 tile, K x N, VNNI), ``c`` (M x N)."""
    from ..amx.machine import TMUL_TYPES
    from ..layout import amx as LA
    mn = _tmul_names(tuple(TMUL_TYPES)).get(instruction)
    if mn.startswith("tcmm"):
        raise InvalidValue("complex TCMM* tiles hold (real, imaginary) pairs, not one matrix per operand",
                           rule="layout explorer: TDPB*D, TDPBF16PS, TDPFP16PS and TDP*F8PS",
                           values={"instruction": mn})
    ta, tb, tc = TMUL_TYPES[mn]
    ta, tb, tc = T.get(ta).name, T.get(tb).name, T.get(tc).name
    ba = T.get(ta).bits
    m = 16 if m is None else _whole("m", m)
    n = 16 if n is None else _whole("n", n)
    k = 512 // ba if k is None else _whole("k", k)
    op = {"src1": "a", "src2": "b", "dst": "c", "d": "c", "acc": "c"}.get(str(operand).lower(), str(operand).lower())
    params = dict(instruction=mn, M=m, N=n, K=k)
    if op == "a":
        return LA.tile_a(m, k, ta, ba, **params)
    if op == "b":
        return LA.tile_b(k, n, tb, T.get(tb).bits, **params)
    if op == "c":
        return LA.tile_c(m, n, tc, T.get(tc).bits, **params)
    raise InvalidValue("AMX operand is a (src1), b (src2) or c (dst)", values={"operand": operand})


@functools.cache
def _tmul_names(mnemonics: tuple[str, ...]) -> Registry[str]:
    """The TMUL mnemonics (case-insensitive) as a registry: "unknown AMX instruction ... (did you mean ...)"."""
    reg: Registry[str] = Registry("AMX instruction", rule="TMUL", key="instruction")
    for mn in mnemonics:
        reg.add(mn, mn)
    return reg


def _whole(name: str, v) -> int:
    """A shape option as given: an integer (numpy's too), never a string, float or bool coerced by int()."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise InvalidValue(f"{name} must be an integer", rule="layout shape options are integers",
                           values={name: repr(v)[:40]})
    return int(v)


def _import(module: str, layer: str):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise BackendUnavailable(f"the {layer} layer is not available in this build ({module}: {e})",
                                 rule=f"layer {layer} resolves through {module}", values={"layer": layer}) from None


def resolve(layer: str, operand: str, **opts) -> Layout:
    """The :class:`Layout` of ``operand`` in ``layer`` (options as each layer's own function takes them).

    ``device`` names the GPU platform or SYCL device in every layer that has one (``platform=`` is its older name
    for dpas/dpasw/opencl, DeprecationWarning). dpas/dpasw: ``device`` (pvc; dg2 for dpasw), ``precision``
    (bf16; Src1), ``src2_precision``, ``rc`` (8), ``dst_type``; amx: ``instruction`` (tdpbf16ps), ``m``, ``n``,
    ``k``; opencl: ``name``, ``device``, ``m``, ``acc``; sycl: ``device``, ``type`` (T), ``use`` (defaults to the
    operand), ``rows``, ``cols``, ``layout``.
    """
    if "platform" in opts:               # the older name of device= (systolic.vocabulary)
        from ..vocabulary import renamed
        opts = dict(opts)
        opts["device"] = renamed({"platform": opts.pop("platform")}, {"platform": "device"}, "layout.get",
                                 device=opts.get("device"))["device"]
    layer = _layer(layer)
    o = {k: v for k, v in opts.items() if v is not None}
    if layer in ("dpas", "dpasw"):
        from ..xmx.layout import layout
        known = {"device", "precision", "src2_precision", "rc", "dst_type"}
        _no_extra(layer, o, known)
        return layout(o.get("device", "dg2" if layer == "dpasw" else "pvc"), operand,
                      o.get("precision", "bf16"), o.get("src2_precision"), rc=_whole("rc", o.get("rc", 8)),
                      dst_type=o.get("dst_type"), opcode=layer)
    if layer == "amx":
        _no_extra(layer, o, {"instruction", "m", "n", "k"})
        return amx_layout(operand, o.get("instruction", "tdpbf16ps"), o.get("m"), o.get("n"), o.get("k"))
    if layer == "opencl":
        _no_extra(layer, o, {"name", "device", "m", "acc"})
        if "name" not in o:
            raise InvalidValue("the opencl layer needs a built-in name (--name)",
                               rule="opencl: intel_sub_group_<A>_<B>_matrix_mad_k<K>", values={})
        mod = _import("systolic.opencl", "opencl")
        return mod.layout(o["name"], operand, device=o.get("device"), m=o.get("m"), acc=o.get("acc"))
    # sycl
    _no_extra(layer, o, {"device", "type", "use", "rows", "cols", "layout"})
    mod = _import("systolic.sycl.matrix", "sycl")
    use = o.get("use", {"acc": "accumulator", "c": "accumulator", "d": "accumulator"}.get(operand, operand))
    for req in ("device", "type", "rows", "cols"):
        if req not in o:
            raise InvalidValue(f"the sycl layer needs --{req}", rule="joint_matrix<T, use, Rows, Cols, layout>",
                               values={"missing": req})
    return mod.layout(o["device"], o["type"], use, _whole("rows", o["rows"]), _whole("cols", o["cols"]),
                      o.get("layout"))


def _no_extra(layer: str, o: dict, known: set) -> None:
    extra = sorted(set(o) - known)
    if extra:
        raise InvalidValue(f"option(s) {', '.join(extra)} do not apply to the {layer} layer",
                           rule=f"{layer} takes: " + ", ".join(sorted(known)), values={"options": extra})


def mma_layouts(layer: str, **opts) -> dict[str, Layout]:
    """A, B, C (and D where it differs) of one MMA of ``layer``: what a CuTe-style picture shows."""
    layer = _layer(layer)
    names = {"dpas": ("src2", "src1", "dst"), "dpasw": ("src2", "src1", "dst"), "amx": ("a", "b", "c"),
             "opencl": ("a", "b", "acc"), "sycl": ("a", "b", "accumulator")}[layer]
    out = {}
    for key, op in zip("ABC", names):
        if layer == "sycl":
            # joint_matrix A (M x K) and B (K x N) of T, accumulator (M x N) of ctype
            o = dict(opts)
            m, n, kk, ct = o.pop("m", None), o.pop("n", None), o.pop("k", None), o.pop("ctype", None)
            shape = {"A": (m, kk), "B": (kk, n), "C": (m, n)}[key]
            o.update(rows=shape[0], cols=shape[1], use=op)
            if key == "C":
                o["type"] = ct or sycl_accumulator_default(o.get("type", "bf16"))
                o.pop("layout", None)
            out[key] = resolve(layer, op, **o)
        else:
            out[key] = resolve(layer, op, **opts)
    if layer == "sycl":
        # one MMA: the three operands must be one of the device's combinations (each alone may exist in another)
        from ..sycl import matrix as jm
        t = opts.get("type", "bf16")
        ct = opts.get("ctype") or sycl_accumulator_default(t)
        jm.find_combination(opts.get("device", "pvc"), t, t, ct, ct, out["A"].rows, out["C"].cols, out["A"].cols)
    return out


def sycl_accumulator_default(t) -> str:
    """The accumulator type a joint_matrix MMA of A/B type ``t`` takes when none is named: int32 for 8-bit
    integers (intel/llvm's combinations have no integer x integer -> float), fp32 otherwise."""
    from ..sycl.matrix_core import type_info
    return "sint32" if type_info(t).name in ("sint8", "uint8") else "fp32"
