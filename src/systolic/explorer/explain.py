"""``explain``: how one output element D[row, col] was produced, replayed by the engine's spec path.

The inputs (seeded random A, B, C, or the caller's) are placed in the registers/tiles *by the operands' Layout
objects*, the engine's spec path runs once with its trace hook on (``xmx.dpas(trace=...)`` with the numerics
model's ``accumulate(trace=...)``; the AMX spec ops' ``trace=``), and the report lists what the engine itself
computed: where each input element sat, the exact products, the order and rounding of every sum with its
intermediate value, and the result read back from the register/tile through D's layout. Nothing here
recomputes the arithmetic. DPASW, the split OpenCL built-ins, SYCL joint_matrix_mad (its DPAS/TMUL sequence)
and AMX-COMPLEX / AMX-FP8 are in :mod:`systolic.explorer.explain_lowered`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .. import types as T
from ..errors import InvalidValue
from .resolve import amx_layout, resolve

__all__ = ["explain", "format_explain"]


def _fp32(bits: int) -> float:
    return float(np.uint32(bits & 0xFFFFFFFF).view(np.float32))


def _i32(bits: int) -> int:
    bits &= 0xFFFFFFFF
    return bits - (1 << 32) if bits >> 31 else bits


def _rand_bits(rng, precision: str, shape) -> np.ndarray:
    """Seeded inputs as raw element bits: integers over the type's range; floats normal-distributed over a few
    binades (rounded to the format), so that the sums' roundings show."""
    t = T.get(precision)
    if t.fmt is None:
        v = rng.integers(t.min, t.max + 1, size=shape)
        return (v & ((1 << t.bits) - 1)).astype(np.uint32)
    from ..xmx.pack import element_bits
    spread = 3 if t.bits <= 8 else 6
    v = rng.standard_normal(shape) * 2.0 ** rng.integers(-spread, spread + 1, size=shape)
    if precision == "fp32":
        return np.asarray(v, dtype=np.float32).view(np.uint32)
    return element_bits(v, precision)


def _value(bits: int, precision: str):
    from ..xmx.pack import decode
    v = decode(np.array([bits], dtype=np.uint32), precision)[0]
    return int(v) if T.get(precision).fmt is None else float(v)


def _pick(layout, name, given, rng):
    if given is None:
        return _rand_bits(rng, layout.element, layout.shape)
    if isinstance(given, dict):          # {"bits": raw element bits} (explain_lowered's chained steps)
        g = np.asarray(given["bits"], dtype=np.uint32)
        if g.shape != layout.shape:
            raise InvalidValue(f"{name} must be {layout.rows} x {layout.cols}", values={"shape": g.shape})
        return g
    g = np.asarray(given)
    if g.shape != layout.shape:
        raise InvalidValue(f"{name} must be {layout.rows} x {layout.cols}", values={"shape": g.shape})
    if T.get(layout.element).fmt is None:
        return (g.astype(np.int64) & ((1 << layout.element_bits) - 1)).astype(np.uint32)
    from ..xmx.pack import element_bits
    if layout.element == "fp32":
        return g.astype(np.float32).view(np.uint32)
    return element_bits(g, layout.element)


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
    from . import explain_lowered as X
    layer = {"xmx": "dpas", "joint_matrix": "sycl", "cl": "opencl", "tile": "amx"}.get(str(layer).lower(),
                                                                                     str(layer).lower())
    rng = np.random.default_rng(seed)
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
                        dict(platform=L.params["platform"], precision=p1, src2_precision=p2, rc=int(rc),
                             dst_type=L.element))
    rep["lowered_from"] = L.params.get("signature", name)
    rep["instruction"] = f"{rep['instruction']}  <- {rep['lowered_from']}"
    return rep


def _where(L, r, c):
    w = L.where(r, c)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in w.items() if k not in ("row", "col")}


def _explain_dpas(row, col, rng, model, a, b, c, opts):
    from ..xmx import GRF, dpas
    o = dict(opts)
    src0_type = o.pop("src0_type", None)
    la, lb = (resolve("dpas", op, **o) for op in ("src2", "src1"))
    lc = resolve("dpas", "src0", **dict(o, dst_type=src0_type or o.get("dst_type")))
    ld = resolve("dpas", "dst", **o)
    ld._check_element(row, col)
    p = la.params
    A, B, C = _pick(la, "A", a, rng), _pick(lb, "B", b, rng), _pick(lc, "C", c, rng)
    g = GRF(p["platform"])
    gb = g.grf_bytes
    offs = {"src2": 0, "src1": 16 * gb, "src0": 40 * gb, "dst": 64 * gb}
    g.write(offs["src2"], la.scatter(A))
    g.write(offs["src1"], lb.scatter(B))
    g.write(offs["src0"], lc.scatter(C))
    trace = {"row": row, "col": col}
    s = dpas(g, dst=offs["dst"], src0=offs["src0"], src1=offs["src1"], src2=offs["src2"], dst_type=p["dst_type"],
             src0_type=src0_type, src1_precision=p["src1_precision"], src2_precision=p["src2_precision"],
             rc=p["rc"], platform=p["platform"], model=model, trace=trace)
    D = ld.gather(g.read(offs["dst"], ld.image_bits() // 8))
    return dpas_report(row, col, s, trace, la, lb, lc, ld, C, D, model)


def dpas_report(row, col, s, trace, la, lb, lc, ld, C, D, model, *, opcode: str = "dpas") -> dict:
    """The report of one traced DPAS/DPASW channel: ``trace`` as the engine filled it, the operands' layouts
    (``la`` may be DPASW's split Src2), C's bits as placed and D as gathered through ``ld``."""
    from ..xmx.models import get_model
    mdl = get_model(model, s.platform)
    steps = []
    for st in trace["stages"]:
        ks = st["k"]
        e = {"stage": st["stage"], "k": ks,
             "a": [{"value": v, **_where(la, row, k)} for v, k in zip(st["a"], ks)],
             "b": [{"value": v, **_where(lb, k, col)} for v, k in zip(st["b"], ks)]}
        if s.kind == "int":
            e["products"] = [x * y for x, y in zip(st["a"], st["b"])]
            e["acc_bits"] = st["acc"]
            e["acc"] = _i32(st["acc"]) if s.dst_type == "int32" else st["acc"]
        else:
            e["products"] = st["products"]
        steps.append(e)
    src0 = getattr(s, "src0_type", None) or s.dst_type
    rep = {"layer": opcode, "platform": s.platform.name, "instruction":
           f"{opcode}.{s.src1_precision}.{s.src2_precision}.8.{s.rc} (exec_size {s.exec_size}), Dst {s.dst_type}"
           + (f", Src0 {src0}" if src0 != s.dst_type else ""),
           "element": [row, col], "kind": s.kind, "K": s.K, "ops_per_chan": s.ops_per_chan,
           "c": {"bits": int(C[row, col]), **_where(lc, row, col)}, "stages": steps}
    if s.kind == "int":
        rep["c"]["value"] = _i32(trace["c"]) if src0 == "int32" else trace["c"]
        exact = rep["c"]["value"] + sum(sum(e["products"]) for e in steps)
        rep["exact_sum"] = exact
        rep["rule"] = "int32 accumulator: each stage adds its exact dot product, the register wraps modulo 2**32"
        rep["result_bits"] = trace["result_bits"]
        rep["result"] = _i32(trace["result_bits"]) if s.dst_type == "int32" else trace["result_bits"]
    else:
        rep["c"]["value"] = trace["c"]
        rep["model"] = mdl.label
        rep["rule"] = {"stage": "C enters stage 0; each stage adds its exact dot product to the fp32 accumulator, "
                                "rounded once to nearest even",
                       "sequential": "one fp32 add per product in K order, each rounded to nearest even",
                       "exact": "C plus every product exactly, rounded once to nearest even"}.get(
            mdl.name, "block FMA: align each block to its largest exponent, truncate, sum, round once (RNE)")
        rep["sums"] = [{"step": x["step"], "terms": x["terms"], "bits": x["bits"], "value": _fp32(x["bits"])}
                       for x in trace["sums"]]
        exact = Fraction(trace["c"]) + sum((Fraction(p) for e in steps for p in e["products"]), Fraction(0)) \
            if all(math.isfinite(p) for e in steps for p in e["products"]) and math.isfinite(trace["c"]) else None
        rep["exact_sum"] = float(exact) if exact is not None else None
        rep["result_bits"] = trace["result_bits"]
        rep["result"] = _value(trace["result_bits"], s.dst_type) if s.dst_type != "fp32" \
            else _fp32(trace["result_bits"])
        if s.dst_type != "fp32" and rep["sums"]:
            rep["to_dst"] = (f"fp32 {rep['sums'][-1]['value']!r} (0x{rep['sums'][-1]['bits']:08x}) rounded to "
                             f"{s.dst_type} (RNE)")
    rep["d_register"] = {"bits": int(D[row, col]), **_where(ld, row, col)}
    rep["consistent"] = int(D[row, col]) == (trace["result_bits"] & ((1 << ld.element_bits) - 1))
    rep["_d_tile"] = D
    rep["_d_bits"] = int(D[row, col])
    return rep


def _explain_amx(row, col, rng, a, b, c, opts):
    from ..amx import spec
    mn = str(opts.pop("instruction", "tdpbf16ps")).lower()
    la, lb, lc = (amx_layout(op, mn, opts.get("m"), opts.get("n"), opts.get("k")) for op in "abc")
    extra = set(opts) - {"m", "n", "k"}
    if extra:
        raise InvalidValue("amx explain takes instruction, m, n, k", values={"options": sorted(extra)})
    lc._check_element(row, col)
    if mn not in ("tdpbssd", "tdpbsud", "tdpbusd", "tdpbuud", "tdpbf16ps", "tdpfp16ps"):
        raise InvalidValue("explain covers TDPB*D, TDPBF16PS, TDPFP16PS, TCMM*FP16PS and TDP*F8PS",
                           values={"instruction": mn})
    A, B, C = _pick(la, "A", a, rng), _pick(lb, "B", b, rng), _pick(lc, "C", c, rng)
    tiles = [L.scatter(X, nbytes=1024).reshape(16, 64) for L, X in ((lc, C), (la, A), (lb, B))]
    trace = {"row": row, "col": col}
    M, N, K = la.rows, lb.cols, la.cols
    spec.DOT[mn](tiles[0], tiles[1], tiles[2], M, 4 * N, K * la.element_bits // 8, trace=trace)
    D = lc.gather(tiles[0].reshape(-1))
    per = 32 // la.element_bits
    rep = {"layer": "amx", "instruction": f"{mn} (M={M}, N={N}, K={K})", "element": [row, col], "K": K,
           "c": {"bits": int(C[row, col]), **_where(lc, row, col)}}
    steps = []
    for st in trace["steps"]:
        ks = [st["k"] * per + j for j in range(per)]
        e = {"dword": st["k"], "k": ks,
             "a": [{"value": _value(int(A[row, k]), la.element), **_where(la, row, k)} for k in ks],
             "b": [{"value": _value(int(B[k, col]), lb.element), **_where(lb, k, col)} for k in ks]}
        e["products"] = [x["value"] * y["value"] for x, y in zip(e["a"], e["b"])]
        if "dot" in st:
            e["dot"] = st["dot"]
            e["acc"] = _i32(st["acc"])
        else:
            e["even_chain"] = {"bits": st["even"], "value": _fp32(st["even"])}
            e["odd_chain"] = {"bits": st["odd"], "value": _fp32(st["odd"])}
        steps.append(e)
    rep["steps"] = steps
    if mn.startswith("tdpb") and mn.endswith("d"):
        rep["c"]["value"] = _i32(trace["c"])
        rep["rule"] = "DPBD: four exact byte products per dword added to the int32 row; wraps modulo 2**32"
        rep["exact_sum"] = rep["c"]["value"] + sum(sum(e["products"]) for e in steps)
        rep["result"] = _i32(int(D[row, col]))
    else:
        rep["c"]["value"] = _fp32(trace["c"])
        rep["rule"] = ("two fp32 FMA chains (even K: temp1[2n], odd K: temp1[2n+1]) from +0, each FMA with DAZ, "
                       "FTZ and RNE; then tmp = even + odd, D = C + tmp (fp32 adds, DAZ/FTZ/RNE) - SDM TDPBF16PS")
        rep["chains_sum"] = {"bits": trace["chains_sum"], "value": _fp32(trace["chains_sum"])}
        rep["result_bits"] = trace["result"]
        rep["result"] = _fp32(trace["result"])
        prods = [Fraction(p) for e in steps for p in e["products"]]
        rep["exact_sum"] = float(Fraction(rep["c"]["value"]) + sum(prods, Fraction(0)))
    rep["d_register"] = {"bits": int(D[row, col]), **_where(lc, row, col)}
    rep["consistent"] = int(D[row, col]) == ((trace.get("result", None) if "result" in trace else
                                              (trace["steps"][-1]["acc"])) & 0xFFFFFFFF)
    rep["_d_tile"] = D
    rep["_d_bits"] = int(D[row, col])
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
        from .explain_lowered import format_steps
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
