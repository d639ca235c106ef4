"""``explain`` for the instructions and calls that are more than one plain DPAS/TMUL: DPASW and the split OpenCL
built-ins (its fused-EU pair), SYCL ``joint_matrix_mad`` (the DPAS / TMUL sequence its lowering issues), AMX-COMPLEX
TCMM*FP16PS and AMX-FP8 TDP*F8PS.

:func:`systolic.explorer.explain` dispatches here; the one-instruction replays this builds on are in
:mod:`systolic.explorer.explain_single`. As there, the inputs are placed by the operands' Layout objects and the
engine's spec path runs with an observer passed in (an :class:`systolic.observe.ElementRecord`:
``xmx.dpasw(observer=)``, ``xmx.dpas(observer=)``, the AMX spec ops' ``observer=``); nothing here recomputes the arithmetic. A joint_matrix_mad is replayed as the instructions its
lowering (:mod:`systolic.sycl.lower_xmx` / :mod:`systolic.sycl.lower_amx`, IGC ``DEFINE_MAD_LARGE_SLICE`` and the
CPU's 16 x 16 x 64-byte tile blocking) issues for the element's tile, in order, each step's D carried as the
next step's C in the type the lowering keeps it in (:func:`systolic.sycl.lower_xmx.intermediate`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .. import types as T
from ..errors import InvalidValue
from ..observe import ElementRecord
from .explain_single import (
    _explain_amx,
    _explain_dpas,
    _fp32,
    _i32,
    _pick,
    _value,
    _where,
    dpas_report,
)
from .resolve import amx_layout, resolve, sycl_accumulator_default

__all__ = ["explain_dpasw", "explain_opencl_split", "explain_sycl", "explain_amx_complex", "explain_amx_fp8",
           "Bits"]


class Bits:
    """Operand given as raw element bits (the explain functions' ``a=``/``b=``/``c=``), not values."""

    def __init__(self, bits) -> None:
        self.bits = np.asarray(bits, dtype=np.uint32)


# ---------------------------------------------------------------- DPASW and the split built-ins

def explain_dpasw(row, col, rng, model, a, b, c, opts, *, a_holder=None, lowered_from=None) -> dict:
    """D[row, col] of EU ``eu``'s half of one DPASW (DPASW.md): A shared, its first NGrf_EU0 GRFs from EU0."""
    from ..xmx import GRF, dpasw
    o = dict(opts)
    eu = _one_of_two("eu", o.pop("eu", 0), "DPASW.md: a fused EU pair")
    o.setdefault("device", "dg2")
    la, lb, lc, ld = (resolve("dpasw", op, **o) for op in ("src2", "src1", "src0", "dst"))
    ld._check_element(row, col)
    p = lb.params
    A = _pick(la, "A", a, rng)
    B = [_pick(lb, "B", None if b is None else _per_eu("b", b)[i], rng) for i in (0, 1)]
    C = [_pick(lc, "C", None if c is None else _per_eu("c", c)[i], rng) for i in (0, 1)]
    g = [GRF(p["platform"]), GRF(p["platform"])]
    gb = g[0].grf_bytes
    offs = {"src2": 0, "src1": 16 * gb, "src0": 40 * gb, "dst": 64 * gb}
    eu0 = la.params["eu_grfs"][0]
    img = la.scatter(A)                                   # EU0's Src2 GRFs, then EU1's (holder ("eu", ...))
    g[0].write(offs["src2"], img[:eu0 * gb])
    if img.size > eu0 * gb:
        g[1].write(offs["src2"], img[eu0 * gb:])
    for i in (0, 1):
        g[i].write(offs["src1"], lb.scatter(B[i]))
        g[i].write(offs["src0"], lc.scatter(C[i]))
    trace = {}
    s = dpasw(g[0], pair=g[1], dst=offs["dst"], src0=offs["src0"], src1=offs["src1"], src2=offs["src2"],
              dst_type=p["dst_type"], src1_precision=p["src1_precision"], src2_precision=p["src2_precision"],
              rc=p["rc"], device=p["platform"], model=model, observer=ElementRecord(trace, row, col, "stages"),
              observer_eu=eu)
    D = ld.gather(g[eu].read(offs["dst"], ld.image_bits() // 8))
    rep = dpas_report(row, col, s, trace, la, lb, lc, ld, C[eu], D, model, opcode="dpasw")
    rep["eu"] = eu
    rep["eu_grfs"] = list(la.params["eu_grfs"])
    for st in rep["stages"]:
        for x, k in zip(st["a"], st["k"]):
            x["from"] = f"EU{x['eu']}"
            if a_holder is not None:
                x.update(a_holder(row, k))
    rep["c"]["from"] = rep["d_register"]["from"] = f"EU{eu}"
    rep["rule"] = (f"EU{eu} computes its own D = C + A x B with A shared (Src2 GRFs 0..{eu0 - 1} read from EU0, "
                   f"the rest from EU1); " + rep["rule"])
    if lowered_from:
        rep["lowered_from"] = lowered_from
        rep["instruction"] = f"{rep['instruction']}  <- {lowered_from}"
    return rep


def _per_eu(name: str, v):
    """DPASW's b and c are given per EU: a leading axis of 2 (two arrays, or {"bits": ...} dicts)."""
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return v
    if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == 2:
        return v
    raise InvalidValue(f"DPASW's {name} is given per EU: a leading axis of 2", rule="DPASW.md: a fused EU pair",
                       values={name: type(v).__name__, "shape": getattr(v, "shape", None)})


def _one_of_two(name: str, v, rule: str) -> int:
    """0 or 1, as an integer (1.5, "1" or True are refused, not coerced), else InvalidValue naming ``name``."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v not in (0, 1):
        raise InvalidValue(f"{name} is 0 or 1, not {v!r}", rule=rule, values={name: repr(v)[:40]})
    return int(v)


def explain_opencl_split(row, col, rng, model, a, b, c, opts) -> dict:
    """A split built-in (cl_intel_subgroup_split_matrix_multiply_accumulate) is one DPASW over the two
    sub-groups' registers (:mod:`systolic.opencl.lowering`): sub-group ``sub_group``'s D[row, col], each A element
    named by the sub-group, work-item and component that held it."""
    o = dict(opts)
    name = o.pop("name")
    sg = _one_of_two("sub_group", o.pop("sub_group", 0),
                     "a split built-in runs on two sub-groups (cl_intel_subgroup_split_matrix_multiply_accumulate)")
    La = resolve("opencl", "a", name=name, **o)
    L = resolve("opencl", "acc", name=name, **o)
    _opcode, p1, p2, _sd, rc = L.params["dpas"].split(".")

    def holder(r, k):
        w = La.where(r, k)
        return {"sub_group": int(w["sub_group"]), "work_item": int(w["work_item"]),
                "component": int(w["component"])}
    rep = explain_dpasw(row, col, rng, model, a, b, c,
                        dict(device=L.params["platform"], precision=p1, src2_precision=p2, rc=int(rc),
                             dst_type=L.element, eu=sg), a_holder=holder,
                        lowered_from=L.params.get("signature", name))
    rep["layer"] = "opencl"
    rep["sub_group"] = sg
    rep["rule"] = (f"sub-group {sg} = EU{sg} of the fused pair; each A element was held by the sub-group named "
                   f"with it; " + rep["rule"])
    return rep


# ---------------------------------------------------------------- SYCL joint_matrix_mad

def _tval(bits: int, t: str):
    return _i32(bits) if t == "int32" else _fp32(bits) if t == "fp32" else _value(bits, t)


#: SYCL matrix_type names -> systolic element types
_SYCL_T = {"sint8": "s8", "uint8": "u8", "sint32": "int32", "bf16": "bf16", "fp16": "fp16", "tf32": "tf32",
           "fp32": "fp32", "int32": "int32"}


def _sycl_type(t) -> tuple[str, str]:
    from ..sycl.matrix_core import type_info
    n = type_info(t).name
    return n, _SYCL_T.get(n, n)


def explain_sycl(row, col, rng, model, a, b, c, opts) -> dict:
    """D[row, col] of ``joint_matrix_mad(sg, D, A, B, C)`` on ``device``: the element's instructions in the order
    the lowering issues them, each replayed by the engine's spec path, and the joint_matrix slice (work-item,
    index) holding every A, B, C and D element it reads or writes."""
    from ..sycl import matrix as jm
    from ..sycl.devices import get_device
    o = dict(opts)
    dev = get_device(o.pop("device", "pvc"))
    ta_n, ta = _sycl_type(o.pop("type", "bf16"))
    tc_n, tc = _sycl_type(o.pop("ctype", sycl_accumulator_default(ta_n)))
    td_n, td = _sycl_type(o.pop("dtype", tc_n))
    tb_n, tb = _sycl_type(o.pop("btype", ta_n))
    b_layout = o.pop("layout", "row_major")
    try:
        M, N, K = int(o.pop("m")), int(o.pop("n")), int(o.pop("k"))
    except KeyError as e:
        raise InvalidValue("explain sycl needs the shape: m, n, k", values={"missing": str(e)}) from None
    if o:
        raise InvalidValue("explain sycl takes device, type, btype, ctype, dtype, m, n, k, layout",
                           values={"options": sorted(o)})
    if model is not None:
        raise InvalidValue("joint_matrix_mad runs with the device's numerics model (no model option)",
                           rule="systolic.sycl lowers onto the platform's default model", values={"model": model})
    comb = jm.find_combination(dev.name, ta_n, tb_n, tc_n, td_n, M, N, K)
    if not (0 <= row < M and 0 <= col < N):
        raise InvalidValue("element outside D", rule=f"D is {M} x {N}", values={"row": row, "col": col})
    LA = jm.layout(dev.name, ta_n, "a", M, K, "row_major")
    LB = jm.layout(dev.name, tb_n, "b", K, N, b_layout)
    LC = jm.layout(dev.name, tc_n, "accumulator", M, N)
    LD = jm.layout(dev.name, td_n, "accumulator", M, N)
    A = _pick(LA, "A", a, rng) if not isinstance(a, Bits) else a.bits
    B = _pick(LB, "B", b, rng) if not isinstance(b, Bits) else b.bits
    C = _pick(LC, "C", c, rng) if not isinstance(c, Bits) else c.bits
    for X, shp, nm in ((A, (M, K), "A"), (B, (K, N), "B"), (C, (M, N), "C")):
        if X.shape != shp:
            raise InvalidValue(f"{nm} must be {shp[0]} x {shp[1]}", values={"shape": X.shape})

    def slice_of(L, r, cc):
        w = L.where(r, cc)
        return {"work_item": int(w["work_item"]), "index": int(w["index"])}

    call = (f"joint_matrix_mad(sg, D<{td_n}, {M}x{N}>, A<{ta_n}, {M}x{K}>, B<{tb_n}, {K}x{N}, {b_layout}>, "
            f"C<{tc_n}, {M}x{N}>)")
    rep = {"layer": "sycl", "device": dev.name, "engine": dev.engine, "call": call, "instruction": call,
           "combination": str(comb), "element": [row, col],
           "c": {"bits": int(C[row, col]), "value": _tval(int(C[row, col]), tc), "type": tc_n,
                 **slice_of(LC, row, col)}}
    if dev.backend == "xmx":
        steps = _sycl_xmx_steps(dev, row, col, M, N, K, ta, tb, tc, td, A, B, C, rng)
    else:
        steps = _sycl_amx_steps(dev, row, col, M, N, K, ta, tb, A, B, C, rng)
    for st in steps:
        # the instruction's own coordinates (tile-local row/col/k, its registers/tile bytes) -> the joint_matrix
        # element and the (work-item, index) of the slice that held it
        k0 = st["k0"]
        st["report"]["element_in_tile"] = st["report"]["element"]
        st["report"]["element"] = [row, col]
        for e in st["report"].get("stages", st["report"].get("steps", [])):
            e["k_in_tile"], e["k"] = e["k"], [k0 + k for k in e["k"]]
            for x, k in zip(e["a"], e["k"]):
                x.update({"jm_" + kk: v for kk, v in slice_of(LA, row, k).items()})
            for y, k in zip(e["b"], e["k"]):
                y.update({"jm_" + kk: v for kk, v in slice_of(LB, k, col).items()})
    rep["steps"] = steps
    last = steps[-1]["report"]
    rep["result_bits"] = int(last["result_bits"]) if "result_bits" in last else int(last["_d_bits"])
    rep["result"] = _tval(rep["result_bits"], td)
    rep["d"] = {"type": td_n, **slice_of(LD, row, col)}
    prods = [p for st in steps for e in st["report"].get("stages", st["report"].get("steps", []))
             for p in e["products"]]
    cv = rep["c"]["value"]
    rep["exact_sum"] = (float(Fraction(cv) + sum(map(Fraction, prods), Fraction(0)))
                        if math.isfinite(cv) and all(math.isfinite(p) for p in prods) else None) \
        if ta not in ("s8", "u8") else int(cv) + sum(int(p) for p in prods)
    rep["consistent"] = all(st["report"]["consistent"] for st in steps)
    rep["rule"] = steps[0].get("why", "")
    return rep


def _sycl_xmx_steps(dev, row, col, M, N, K, ta, tb, tc, td, A, B, C, rng):
    """IGC's decomposition (lower_xmx): 8-row x exec-size tiles, K in DPAS steps of 8 x OPS_PER_CHAN, the
    partial sum held in the type :func:`~systolic.sycl.lower_xmx.intermediate` names between steps."""
    from ..sycl import lower_xmx as LX
    from ..xmx import get_platform
    P = get_platform(dev.engine)
    E = P.exec_size
    ks = LX.k_step(tb)
    mid = td if LX.intermediate(M, N, K) == "d" else tc
    r0, c0 = row // 8 * 8, col // E * E
    rc = min(8, M - r0)
    nsteps = K // ks
    steps, at, acc = [], tc, C[r0:r0 + rc, c0:c0 + E]
    for s in range(nsteps):
        t = td if s == nsteps - 1 else mid
        k0 = s * ks
        opts = dict(device=P.name, precision=tb, src2_precision=ta, rc=rc, dst_type=t, src0_type=at)
        rep = _explain_dpas(row - r0, col - c0, rng, None, {"bits": A[r0:r0 + rc, k0:k0 + ks]},
                            {"bits": B[k0:k0 + ks, c0:c0 + E]}, {"bits": acc}, opts)
        why = (f"tile rows {r0}..{r0 + rc - 1}, cols {c0}..{c0 + E - 1} (one DPAS: RC = {rc}, exec size {E}); "
               f"K in {nsteps} DPAS step(s) of {ks}" + (f"; between steps the partial sum is stored as {mid} (IGC "
                                           f"DEFINE_MAD_LARGE_SLICE)" if nsteps > 1 else ""))
        steps.append({"n": s, "instruction": rep["instruction"], "k0": k0, "tile": [r0, c0], "src0_type": at,
                      "dst_type": t, "why": why, "report": rep,
                      "rounded_to": t if s < nsteps - 1 else None})
        acc = rep.pop("_d_tile")          # the engine's own Dst, as the next step's Src0 bits
        at = t
    return steps


def _sycl_amx_steps(dev, row, col, M, N, K, ta, tb, A, B, C, rng):
    """The CPU lowering (lower_amx): C in 16 x 16 blocks, K in 64-byte blocks in order, C carried."""
    from ..sycl import lower_amx as LA_
    names = {"s8": "sint8", "u8": "uint8", "bf16": "bf16", "fp16": "fp16"}
    mn = LA_.INTRINSIC[(names[ta], names[tb])].replace("tile_", "t")
    eb = T.get(ta).bits // 8
    per = 4 // eb
    kp = -(-K // per) * per
    if kp != K:
        A = np.concatenate([A, np.zeros((M, kp - K), A.dtype)], axis=1)
        B = np.concatenate([B, np.zeros((kp - K, N), B.dtype)], axis=0)
    m0, n0 = row // 16 * 16, col // 16 * 16
    mr, nc = min(16, M - m0), min(16, N - n0)
    kb = 64 // eb
    steps, acc = [], C[m0:m0 + mr, n0:n0 + nc]
    starts = list(range(0, kp, kb))
    for s, k0 in enumerate(starts):
        kc = min(kb, kp - k0)
        rep = _explain_amx(row - m0, col - n0, rng, {"bits": A[m0:m0 + mr, k0:k0 + kc]},
                           {"bits": B[k0:k0 + kc, n0:n0 + nc]}, {"bits": acc},
                           dict(instruction=mn, m=mr, n=nc, k=kc))
        why = (f"C block rows {m0}..{m0 + mr - 1}, cols {n0}..{n0 + nc - 1} (16 x 16 dwords); K in "
               f"{len(starts)} tile step(s) of 64 bytes, C carried in the fp32/int32 tile (no rounding between)")
        steps.append({"n": s, "instruction": rep["instruction"], "k0": k0, "tile": [m0, n0], "why": why,
                      "report": rep, "rounded_to": None})
        acc = rep.pop("_d_tile")
    return steps


# ---------------------------------------------------------------- AMX-COMPLEX and AMX-FP8

def explain_amx_complex(row, col, rng, a, b, c, opts) -> dict:
    """TCMMIMFP16PS / TCMMRLFP16PS (ISE "AMX-COMPLEX"): each dword a complex fp16 (real low, imaginary high).
    A is M x Kc complex (tile row m, dword k), B Kc x N complex (tile row k, dword n); the element lies in
    TDPFP16PS's places (real at even K, imaginary at odd K), so those Layouts place it."""
    from ..amx import isa
    mn = str(opts.pop("instruction")).lower()
    m, n = opts.pop("m", None), opts.pop("n", None)
    kc = opts.pop("k", None)
    if opts:
        raise InvalidValue("amx explain takes instruction, m, n, k", values={"options": sorted(opts)})
    kk = None if kc is None else 2 * int(kc)
    la, lb, lc = (amx_layout(op, "tdpfp16ps", m, n, kk) for op in "abc")
    lc._check_element(row, col)
    A, B, C = _pick(la, "A", a, rng), _pick(lb, "B", b, rng), _pick(lc, "C", c, rng)
    tiles = [L.scatter(X, nbytes=1024).reshape(16, 64) for L, X in ((lc, C), (la, A), (lb, B))]
    trace = {}
    M, N, K2 = la.rows, lb.cols, la.cols
    isa.get(mn).spec(tiles[0], tiles[1], tiles[2], M, 4 * N, 2 * K2, observer=ElementRecord(trace, row, col))
    D = lc.gather(tiles[0].reshape(-1))
    imag = mn == "tcmmimfp16ps"
    steps = []
    for st in trace["steps"]:
        k = st["k"]
        ar, ai = _value(int(A[row, 2 * k]), "fp16"), _value(int(A[row, 2 * k + 1]), "fp16")
        br, bi = _value(int(B[2 * k, col]), "fp16"), _value(int(B[2 * k + 1, col]), "fp16")
        e = {"dword": k, "k": [k],
             "a": [{"value": [ar, ai], **_where(la, row, 2 * k)}],
             "b": [{"value": [br, bi], **_where(lb, 2 * k, col)}]}
        e["products"] = [ai * br, ar * bi] if imag else [ar * br, -(ai * bi)]
        e["product_names"] = ["a.im*b.re", "a.re*b.im"] if imag else ["a.re*b.re", "-(a.im*b.im)"]
        e["even_chain"] = {"bits": st["even"], "value": _fp32(st["even"])}
        e["odd_chain"] = {"bits": st["odd"], "value": _fp32(st["odd"])}
        steps.append(e)
    cv = _fp32(trace["c"])
    rep = {"layer": "amx", "instruction": f"{mn} (M={M}, N={N}, K={K2 // 2} complex)", "element": [row, col],
           "K": K2 // 2, "c": {"bits": int(C[row, col]), "value": cv, **_where(lc, row, col)}, "steps": steps,
           "rule": ("complex fp16 dwords (re low, im high); " +
                    ("imaginary part: even chain += a.im*b.re, odd chain += a.re*b.im" if imag else
                     "real part: even chain += a.re*b.re, odd chain += -(a.im*b.im)") +
                    "; fp32 FMAs with DAZ/FTZ/RNE, then even + odd, D = C + that (ISE AMX-COMPLEX)"),
           "chains_sum": {"bits": trace["chains_sum"], "value": _fp32(trace["chains_sum"])},
           "result_bits": trace["result"], "result": _fp32(trace["result"])}
    return _amx_close(rep, steps, cv, D, lc, row, col, trace)


def explain_amx_fp8(row, col, rng, a, b, c, opts) -> dict:
    """TDP[B|H][B|H]F8PS as the spec path models it (*unverified*, see :func:`systolic.amx.spec._fp8_dot`):
    every product exact, summed exactly over K, rounded to fp32 once (RNE, FTZ), then D = C + that."""
    from ..amx import isa
    mn = str(opts.pop("instruction")).lower()
    la, lb, lc = (amx_layout(op, mn, opts.get("m"), opts.get("n"), opts.get("k")) for op in "abc")
    extra = set(opts) - {"m", "n", "k"}
    if extra:
        raise InvalidValue("amx explain takes instruction, m, n, k", values={"options": sorted(extra)})
    lc._check_element(row, col)
    A, B, C = _pick(la, "A", a, rng), _pick(lb, "B", b, rng), _pick(lc, "C", c, rng)
    tiles = [L.scatter(X, nbytes=1024).reshape(16, 64) for L, X in ((lc, C), (la, A), (lb, B))]
    trace = {}
    M, N, K = la.rows, lb.cols, la.cols
    isa.get(mn).spec(tiles[0], tiles[1], tiles[2], M, 4 * N, K, observer=ElementRecord(trace, row, col))
    D = lc.gather(tiles[0].reshape(-1))
    steps = []
    for kd in range(K // 4):
        ks = [4 * kd + j for j in range(4)]
        e = {"dword": kd, "k": ks,
             "a": [{"value": _value(int(A[row, k]), la.element), **_where(la, row, k)} for k in ks],
             "b": [{"value": _value(int(B[k, col]), lb.element), **_where(lb, k, col)} for k in ks]}
        e["products"] = [x["value"] * y["value"] for x, y in zip(e["a"], e["b"])]
        steps.append(e)
    cv = _fp32(trace["c"])
    rep = {"layer": "amx", "instruction": f"{mn} (M={M}, N={N}, K={K})", "element": [row, col], "K": K,
           "c": {"bits": int(C[row, col]), "value": cv, **_where(lc, row, col)}, "steps": steps,
           "rule": ("AMX-FP8 as modelled (unverified: no silicon): the exact sum of every product over K, "
                    "rounded once to fp32 (RNE, FTZ), then D = C + that (fp32 add, DAZ/FTZ/RNE)"),
           "result_bits": trace["result"], "result": _fp32(trace["result"])}
    if trace.get("special"):
        rep["special"] = trace["special"]
    else:
        rep["exact_products_sum"] = {"exact": str(trace["temp"]), "value": float(trace["temp"])}
        rep["rounded_sum"] = {"bits": trace["tmpf32"], "value": _fp32(trace["tmpf32"])}
    return _amx_close(rep, steps, cv, D, lc, row, col, trace)


def _amx_close(rep: dict, steps: list, cv: float, D, lc, row: int, col: int, trace: dict) -> dict:
    """The end every AMX report shares: the exact C + sum of products (None when anything is not finite), where
    D[row, col] was read back, and whether it equals the traced result."""
    prods = [p for e in steps for p in e["products"]]
    rep["exact_sum"] = float(Fraction(cv) + sum(map(Fraction, prods), Fraction(0))) \
        if math.isfinite(cv) and all(math.isfinite(p) for p in prods) else None
    rep["d_register"] = {"bits": int(D[row, col]), **_where(lc, row, col)}
    rep["consistent"] = int(D[row, col]) == trace["result"]
    return rep


def format_steps(rep: dict, fmt_one) -> str:
    """A joint_matrix explain as text: the call, then each instruction's report."""
    r, c = rep["element"]
    out = [f"D[{r}, {c}] of {rep['call']} on {rep['device']} ({rep['engine']})",
           f"combination: {rep['combination']}",
           f"lowering: {rep['rule']}",
           f"C[{r}, {c}] = {rep['c']['value']!r} ({rep['c']['type']}; work_item={rep['c']['work_item']} "
           f"index={rep['c']['index']})"]
    for st in rep["steps"]:
        out.append(f"--- instruction {st['n']}: {st['instruction']}  (tile at {st['tile']}, K from {st['k0']})")
        text = fmt_one(st["report"])
        for ln in text.splitlines()[1:]:
            out.append("    " + ln)
        if st["rounded_to"]:
            out.append(f"    -> partial sum kept as {st['rounded_to']}: {st['report']['result']!r} "
                       f"(0x{st['report']['result_bits']:x}), the next instruction's C")
    out.append(f"D[{r}, {c}] = {rep['result']!r} (0x{rep['result_bits']:x}, {rep['d']['type']})   stored from "
               f"work_item={rep['d']['work_item']} index={rep['d']['index']}"
               + ("" if rep["consistent"] else "   INCONSISTENT"))
    return "\n".join(out) + "\n"
