"""One plain DPAS or one TMUL explained: the replays :mod:`systolic.explorer.explain` and
:mod:`systolic.explorer.explain_lowered` both build on, and the value helpers of their reports.

:func:`_explain_dpas` places A, B, C in a GRF *by the operands' Layout objects*, runs ``xmx.dpas`` once with an
observer passed in (a :class:`systolic.observe.ElementRecord` of the element; the numerics model's sums too) and
reads D back through D's layout; :func:`dpas_report` turns what the engine announced into the report (also
DPASW's, for explain_lowered); :func:`_explain_amx` does the same for one TDPB*D / TDPBF16PS / TDPFP16PS on tiles
through the AMX spec ops' ``observer=``. Nothing here recomputes the arithmetic. Seeded random inputs (:func:`_rand_bits`) or the caller's
(:func:`_pick`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .. import types as T
from ..errors import InvalidValue
from ..observe import ElementRecord
from .resolve import amx_layout, resolve

__all__ = ["dpas_report"]


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
    from ..numerics.rounding import as_exact_array
    from ..xmx.pack import element_bits
    try:
        g = as_exact_array(given)
    except (TypeError, ValueError) as exc:     # ragged lists, strings
        raise InvalidValue(f"{name} is not an array of numbers: {exc}", values={"type": type(given).__name__}) \
            from None
    if g.shape != layout.shape:
        raise InvalidValue(f"{name} must be {layout.rows} x {layout.cols}", values={"shape": g.shape})
    if g.dtype.kind not in "biufV" and not (g.dtype.kind == "O" and all(
            isinstance(x, (int, float, np.number, Fraction)) and not isinstance(x, complex) for x in g.flat)):
        raise InvalidValue(f"{name} holds non-numbers", values={"dtype": str(g.dtype)})
    # integers are taken exactly or refused (no wrapping, no truncation: element_bits checks integer-ness and the
    # range); floats round once to nearest even into the element format (element_bits), as the docstring says
    return element_bits(g, layout.element)


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
    trace = {}
    s = dpas(g, dst=offs["dst"], src0=offs["src0"], src1=offs["src1"], src2=offs["src2"], dst_type=p["dst_type"],
             src0_type=src0_type, src1_precision=p["src1_precision"], src2_precision=p["src2_precision"],
             rc=p["rc"], device=p["platform"], model=model, observer=ElementRecord(trace, row, col, "stages"))
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
    from ..amx import isa
    mn = str(opts.pop("instruction", "tdpbf16ps")).lower()
    la, lb, lc = (amx_layout(op, mn, opts.get("m"), opts.get("n"), opts.get("k")) for op in "abc")
    extra = set(opts) - {"m", "n", "k"}
    if extra:
        raise InvalidValue("amx explain takes instruction, m, n, k", values={"options": sorted(extra)})
    lc._check_element(row, col)
    if mn not in {r.mnemonic for r in isa.GEMM_TMULS}:
        raise InvalidValue("amx explain covers the plain dot products "
                           + ", ".join(r.mnemonic.upper() for r in isa.GEMM_TMULS), values={"instruction": mn})
    A, B, C = _pick(la, "A", a, rng), _pick(lb, "B", b, rng), _pick(lc, "C", c, rng)
    tiles = [L.scatter(X, nbytes=1024).reshape(16, 64) for L, X in ((lc, C), (la, A), (lb, B))]
    trace = {}
    M, N, K = la.rows, lb.cols, la.cols
    isa.get(mn).spec(tiles[0], tiles[1], tiles[2], M, 4 * N, K * la.element_bits // 8,
                 observer=ElementRecord(trace, row, col))
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
        # the exact C + sum of products, as the DPAS report: None when anything is NaN or infinite (no exact value)
        prods = [p for e in steps for p in e["products"]]
        cv = rep["c"]["value"]
        rep["exact_sum"] = float(Fraction(cv) + sum(map(Fraction, prods), Fraction(0))) \
            if math.isfinite(cv) and all(math.isfinite(p) for p in prods) else None
    rep["d_register"] = {"bits": int(D[row, col]), **_where(lc, row, col)}
    rep["consistent"] = int(D[row, col]) == ((trace.get("result", None) if "result" in trace else
                                              (trace["steps"][-1]["acc"])) & 0xFFFFFFFF)
    rep["_d_tile"] = D
    rep["_d_bits"] = int(D[row, col])
    return rep
