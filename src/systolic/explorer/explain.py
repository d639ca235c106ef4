"""``explain``: how one output element D[row, col] was produced, replayed by the engine's spec path.

The inputs (seeded random A, B, C, or the caller's) are placed in the registers/tiles *by the operands' Layout
objects*, the engine's spec path runs once with its trace hook on (``xmx.dpas(trace=...)`` with the numerics
model's ``accumulate(trace=...)``; the AMX spec ops' ``trace=``), and the report lists what the engine itself
computed: where each input element sat, the exact products, the order and rounding of every sum with its
intermediate value, and the result read back from the register/tile through D's layout. Nothing here
recomputes the arithmetic. This module is the front door: it picks the replay for the layer and formats the
report. One plain DPAS or TMUL is replayed in :mod:`systolic.explorer.explain_single`; DPASW, the split OpenCL
built-ins, SYCL joint_matrix_mad (its DPAS/TMUL sequence) and AMX-COMPLEX / AMX-FP8 in
:mod:`systolic.explorer.explain_lowered`, which builds on explain_single (both import it, neither imports this).
"""

from __future__ import annotations

from ..cli.inputs import seeded_rng
from ..errors import InvalidValue
from ..layout.core import check_coordinates
from . import explain_lowered as X
from .explain_lowered import format_steps
from .explain_single import _explain_amx, _explain_dpas, dpas_report  # noqa: F401  (dpas_report: re-export)
from .resolve import resolve

__all__ = ["explain", "format_explain"]


def explain(layer: str, row: int, col: int, *, seed: int = 0, model=None, a=None, b=None, c=None, **opts) -> dict:
    """The provenance of D[row, col] (see the module text).

    ``layer``: ``dpas`` (platform, precision, src2_precision, rc, dst_type), ``amx`` (instruction, m, n, k; TDPB*D,
    TDPBF16PS, TDPFP16PS, TCMM*FP16PS, TDP*F8PS), ``opencl`` (name, platform, m, acc; split built-ins also
    ``sub_group``), and in :mod:`systolic.explorer.explain_lowered`: ``dpasw`` (as dpas, plus ``eu``) and ``sycl``
    (device, type, btype, ctype, dtype, m, n, k, layout of B: every instruction of a joint_matrix_mad, in order).
    ``a``/``b``/``c``: the operands' values (DPASW and split built-ins: ``b`` and ``c`` per EU / sub-group, a
    leading axis of 2), or ``{"bits": raw element bits}``; unset: seeded random values.
    """
    rep = _explain(layer, row, col, seed, model, a, b, c, opts)
    return {k: v for k, v in rep.items() if not k.startswith("_")}


def _explain(layer, row, col, seed, model, a, b, c, opts):
    layer = {"xmx": "dpas", "joint_matrix": "sycl", "cl": "opencl", "tile": "amx"}.get(str(layer).lower(),
                                                                                     str(layer).lower())
    rng = seeded_rng(seed, "seed")     # a non-negative integer (numpy's SeedSequence), else InvalidValue
    check_coordinates(row, col)                  # 1.5 or True is refused, not coerced
    row, col = int(row), int(col)
    if layer == "dpas":
        return _explain_dpas(row, col, rng, model, a, b, c, opts)
    if layer == "dpasw":
        return X.explain_dpasw(row, col, rng, model, a, b, c, opts)
    if layer == "opencl":
        if "split" in str(opts.get("name", "")):
            return X.explain_opencl_split(row, col, rng, model, a, b, c, opts)
        return _explain_opencl(row, col, rng, model, a, b, c, opts)
    if layer == "sycl":
        return X.explain_sycl(row, col, rng, model, a, b, c, opts)
    if layer == "amx":
        if model is not None:
            raise InvalidValue("AMX numerics are fixed by the SDM (no model option)", values={"model": model})
        mn = str(opts.get("instruction", "tdpbf16ps")).lower()
        if mn.startswith("tcmm"):
            return X.explain_amx_complex(row, col, rng, a, b, c, dict(opts))
        if mn.endswith("f8ps"):
            return X.explain_amx_fp8(row, col, rng, a, b, c, dict(opts))
        return _explain_amx(row, col, rng, a, b, c, opts)
    raise InvalidValue(f"explain covers dpas, dpasw, amx, opencl and sycl, not {layer!r}",
                       rule="layers: dpas, dpasw, amx, opencl, sycl", values={"layer": layer})


def _explain_opencl(row, col, rng, model, a, b, c, opts):
    """An OpenCL built-in is one DPAS (its arguments' images are the DPAS operands' images, tested): explain
    that DPAS, naming the built-in it was lowered from."""
    o = dict(opts)
    name = o.pop("name", None)
    if name is None:
        raise InvalidValue("the opencl layer needs a built-in name", values={})
    L = resolve("opencl", "acc", name=name, **o)
    opcode, p1, p2, sd, rc = L.params["dpas"].split(".")
    if opcode != "dpas":
        raise InvalidValue("a split built-in lowers to DPASW", rule="explain_lowered.explain_opencl_split",
                           values={"builtin": name})
    rep = _explain_dpas(row, col, rng, model, a, b, c,
                        dict(device=L.params["platform"], precision=p1, src2_precision=p2, rc=int(rc),
                             dst_type=L.element))
    rep["lowered_from"] = L.params.get("signature", name)
    rep["instruction"] = f"{rep['instruction']}  <- {rep['lowered_from']}"
    return rep


def _fmt(v) -> str:
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _holder(d: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in d.items() if k not in ("value",))


def format_explain(rep: dict) -> str:
    """The report as text."""
    if rep.get("layer") == "sycl":
        return format_steps(rep, format_explain)
    r, c = rep["element"]
    out = [f"D[{r}, {c}] of {rep['instruction']}" + (f" on {rep['platform']}" if "platform" in rep else ""),
           f"rule: {rep['rule']}" + (f"  [model {rep['model']}]" if "model" in rep else ""),
           f"C[{r}, {c}] = {_fmt(rep['c']['value'])}   ({_holder(rep['c'])})"]
    for e in rep.get("stages", rep.get("steps", [])):
        head = f"stage {e['stage']}" if "stage" in e else f"dword {e['dword']}"
        out.append(f"{head}: k = {e['k']}")
        if "product_names" in e:    # complex: one (re, im) pair each, two products per dword
            x, y = e["a"][0], e["b"][0]
            out.append(f"    A[{r},{e['k'][0]}] = {x['value']} ({_holder(x)})   B[{e['k'][0]},{c}] = {y['value']} "
                       f"({_holder(y)})   (re, im)")
            out.append("    " + "   ".join(f"{n} = {_fmt(p)}" for n, p in zip(e["product_names"], e["products"])))
        for x, y, p, k in zip(e["a"], e["b"], e["products"], e["k"]) if "product_names" not in e else ():
            out.append(f"    A[{r},{k}] = {_fmt(x['value']):>12} ({_holder(x)})   x   B[{k},{c}] = "
                       f"{_fmt(y['value']):>12} ({_holder(y)})   = {_fmt(p)}")
        if "acc" in e:
            out.append(f"    acc = {e['acc']}" + (f"   (dot = {e['dot']})" if "dot" in e else ""))
        if "even_chain" in e:
            out.append(f"    even chain = {_fmt(e['even_chain']['value'])} (0x{e['even_chain']['bits']:08x})   "
                       f"odd chain = {_fmt(e['odd_chain']['value'])} (0x{e['odd_chain']['bits']:08x})")
    for s in rep.get("sums", []):
        out.append(f"sum {s['step']}: {' + '.join(_fmt(t) for t in s['terms'])} -> {_fmt(s['value'])} "
                   f"(0x{s['bits']:08x})")
    if "exact_products_sum" in rep:
        out.append(f"sum of the products, exact = {rep['exact_products_sum']['exact']}; rounded once to fp32 = "
                   f"{_fmt(rep['rounded_sum']['value'])} (0x{rep['rounded_sum']['bits']:08x}); C + that = "
                   f"{_fmt(rep['result'])}")
    if "special" in rep:
        out.append(f"special: {rep['special']}")
    if "chains_sum" in rep:
        out.append(f"even + odd = {_fmt(rep['chains_sum']['value'])}; C + that = {_fmt(rep['result'])}")
    out.append(f"exact (unrounded) C + sum of products = {_fmt(rep['exact_sum'])}")
    if "to_dst" in rep:
        out.append(rep["to_dst"])
    bits = f" (0x{rep['result_bits']:08x})" if "result_bits" in rep else ""
    out.append(f"D[{r}, {c}] = {_fmt(rep['result'])}{bits}   read back from {_holder(rep['d_register'])}"
               + ("" if rep["consistent"] else "   INCONSISTENT"))
    return "\n".join(out) + "\n"
