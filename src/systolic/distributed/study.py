"""Numerics studies on a Dask cluster: :func:`systolic.torch.compare` per engine and data shard, merged.

A study script is a Python file that defines

* ``model()`` -> a ``torch.nn.Module`` (built deterministically: seed it, or load fixed weights; every worker
  builds its own copy),
* ``data()`` -> the inputs (a tensor whose first dimension is the sample), or ``(inputs, targets)`` with one
  integer class label per sample.

``run_study`` splits the samples into ``shards`` contiguous slices (``torch.tensor_split``), runs
``compare(model(), inputs[slice], engines=[engine], targets=targets[slice])`` for every (engine, slice) pair
on the workers (plain fp32 PyTorch rides along with the first engine), and merges the per-slice reports into
one :class:`systolic.torch.compare.CompareReport` (table, JSON, plot). For float engines it equals the report
of one ``compare`` over all samples up to rounding (the engines compute each sample's rows exactly as in the
whole batch; the float64 reference and plain fp32 PyTorch may block a slice's GEMMs differently). int8 engines
quantise activations with one scale per tensor, so each slice gets its own scale, as a deployment running
batches of that size would: their results depend on ``shards``. The merge rules:

* ``max_ulp``: the largest over slices (exact);
* ``max_rel`` = max|x - ref| / max|ref| and ``mean_rel`` = mean|x - ref| / mean|ref|: each slice's numerator is
  recovered from its ratio and its reference magnitudes (max|ref|, mean|ref|, element count: measured on the
  worker in float64, as compare measures them), then the ratio of the merged terms (equal up to rounding);
* ``mean_ulp``: mean over slices weighted by element counts (exact when no element is non-finite in both the
  run and the reference; compare leaves those out of the mean);
* ``top1``, ``topk``, ``accuracy`` (and the reference's): means weighted by output rows (exact);
* ``nonfinite``, ``gemms``, ``ops``, ``fallbacks``: sums (GEMMs are counted per slice: K slices run K times the
  GEMMs of one batch).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import os

import numpy as np

from ..errors import InvalidValue

__all__ = ["parse_engines", "run_study", "study_task", "merge"]


def _split_top(text: str) -> list[str]:
    """Split at commas outside parentheses (``block(8,24)`` stays one item)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    out.append(cur)
    return [s.strip() for s in out if s.strip()]


def parse_engines(text: str) -> list[tuple[str, dict]]:
    """``amx:spr,xmx:pvc:bf16:stage,xmx:dg2:int8`` -> ``[("amx:spr", {}), ("xmx:pvc", {"precision": "bf16",
    "model": "stage"}), ...]``: ``family:device[:precision[:model]]``."""
    if not isinstance(text, str):
        raise InvalidValue("--engines is a comma-separated list", rule="engines: family:device[:precision[:model]], "
                           "e.g. amx:spr,xmx:pvc:bf16:stage", values={"engines": text})
    out = []
    for item in _split_top(text):
        parts = item.split(":", 3)
        if len(parts) < 2 or parts[0] not in ("amx", "xmx") or not parts[1]:
            raise InvalidValue(f"bad engine {item!r}", rule="engines: family:device[:precision[:model]], e.g. "
                               "amx:spr, xmx:pvc:bf16:stage", values={"engine": item})
        opts = {}
        if len(parts) > 2 and parts[2]:
            opts["precision"] = parts[2]
        if len(parts) > 3 and parts[3]:
            opts["model"] = parts[3]
        out.append((f"{parts[0]}:{parts[1]}", opts))
    if not out:
        raise InvalidValue("no engine given", rule="--engines amx:spr,xmx:pvc:bf16:stage", values={"engines": text})
    return out


@functools.lru_cache(maxsize=8)
def _load_script(source: str, name: str) -> dict:
    ns: dict = {"__name__": "systolic_study", "__file__": name}
    try:
        exec(compile(source, name, "exec"), ns)               # noqa: S102 - the user's own study script
    except Exception as exc:                                  # noqa: BLE001 - the script's own error, named
        raise InvalidValue(f"the study script does not run: {type(exc).__name__}: {exc}",
                           rule="a study script is Python that defines model() and data()",
                           values={"script": name}) from exc
    for fn in ("model", "data"):
        if not callable(ns.get(fn)):
            raise InvalidValue(f"the study script defines no {fn}()", rule="a study script defines model() and data()",
                               values={"script": name})
    return ns


#: the engine options a study passes to systolic.torch.engines.parse_engine
_STUDY_OPTIONS = ("precision", "model", "backend")


def _check_engines(engines) -> list[tuple[str, dict]]:
    """``engines`` (the --engines text or ``[(name, {options})]``) as checked pairs: each name, precision and
    model is resolved by :func:`systolic.torch.engines.parse_engine` here, not on a worker."""
    from ..torch.engines import parse_engine
    if isinstance(engines, str):
        engines = parse_engines(engines)
    if not isinstance(engines, (list, tuple)) or not engines:
        raise InvalidValue("engines is the --engines text or a list of (name, {options}) pairs",
                           rule="engines: family:device[:precision[:model]], ...", values={"engines": engines})
    out = []
    for e in engines:
        if not (isinstance(e, tuple) and len(e) == 2 and isinstance(e[0], str) and isinstance(e[1], dict)
                and all(o in _STUDY_OPTIONS for o in e[1])):
            raise InvalidValue("an engines entry is (name, {options})", rule="options: " + ", ".join(_STUDY_OPTIONS),
                               values={"entry": e})
        parse_engine(e[0], **e[1])
        out.append(e)
    return out


def _data(ns):
    import torch
    d = ns["data"]()
    x, y = (d if isinstance(d, tuple) and len(d) == 2 else (d, None))
    if not isinstance(x, torch.Tensor) or x.dim() < 1:
        raise InvalidValue("data() returns a tensor of samples (first dimension) or (inputs, targets)",
                           values={"type": type(x).__name__})
    return x, (None if y is None else torch.as_tensor(y))


def _reference_magnitudes(model, x) -> dict:
    """Per layer (leaf modules, and ``<output>``): max|ref|, mean|ref| and element count of the float64 run,
    non-finite reference elements read as 0 (as compare's relative errors read them)."""
    import torch
    ref = copy.deepcopy(model).to(torch.float64).eval()
    seen: dict = {}

    def first(o):
        if isinstance(o, torch.Tensor):
            return o
        if isinstance(o, (tuple, list)):
            for t in o:
                f = first(t)
                if f is not None:
                    return f
        if isinstance(o, dict):
            for t in o.values():
                f = first(t)
                if f is not None:
                    return f
        return None

    def mag(t):
        a = np.abs(t.detach().to("cpu", torch.float64).numpy())
        a = np.where(np.isfinite(a), a, 0.0)
        rows = a.reshape(-1, a.shape[-1]).shape[0] if a.ndim else 1
        return {"max": float(a.max()) if a.size else 0.0, "mean": float(a.mean()) if a.size else 0.0,
                "n": int(a.size), "rows": rows}

    hooks = []
    for name, mod in ref.named_modules():
        if name and not list(mod.children()):
            def hook(m, i, o, name=name):
                t = first(o)
                if t is not None and name not in seen:
                    seen[name] = mag(t)
            hooks.append(mod.register_forward_hook(hook))
    try:
        with torch.no_grad():
            out = ref(x.to(torch.float64) if x.is_floating_point() else x)
    finally:
        for h in hooks:
            h.remove()
    seen["<output>"] = mag(first(out))
    return seen


def study_task(source: str, name: str, engine: tuple[str, dict], shard: int, shards: int, k: int,
               include_fp32: bool) -> dict:
    """Worker task: compare on one slice of the data under one engine; the report and the slice's magnitudes."""
    import torch
    from ..torch import compare
    ns = _load_script(source, name)
    torch.manual_seed(0)
    model = ns["model"]()
    x, y = _data(ns)
    idx = torch.tensor_split(torch.arange(x.shape[0]), shards)[shard]
    xs = x[idx]
    ys = None if y is None else y[idx]
    rep = compare(model, xs, engines=[engine], k=k, targets=ys, include_fp32=include_fp32)
    return {"shard": shard, "report": rep.as_dict(), "magnitudes": _reference_magnitudes(model, xs)}


def _merge_layer(name, parts):
    """``parts``: [(layer dict, magnitudes dict)] of one layer over slices."""
    from ..torch.compare import LayerStats
    def finite_or_nan(vals, fn):
        v = [x for x in vals if not np.isnan(x)]
        return fn(v) if v else float("nan")
    max_ulp = finite_or_nan([p["max_ulp"] for p, _ in parts], max)
    n = [m["n"] for _, m in parts]
    mean_ulp = finite_or_nan([p["mean_ulp"] * m["n"] for p, m in parts], sum)
    keep_n = sum(m["n"] for p, m in parts if not np.isnan(p["mean_ulp"]))
    mean_ulp = mean_ulp / keep_n if keep_n else float("nan")
    maxd = [p["max_rel"] * m["max"] if m["max"] else p["max_rel"] for p, m in parts]
    maxref = max((m["max"] for _, m in parts), default=0.0)
    md = finite_or_nan(maxd, max)
    max_rel = md / maxref if maxref else md
    meand = [(p["mean_rel"] * m["mean"] if m["mean"] else p["mean_rel"]) * m["n"] for p, m in parts]
    sum_ref = sum(m["mean"] * m["n"] for _, m in parts)
    sd = finite_or_nan(meand, sum)
    mean_rel = sd / sum_ref if sum_ref else sd / max(1, sum(n))
    return LayerStats(name, max_ulp, mean_ulp, max_rel, mean_rel, sum(int(p["nonfinite"]) for p, _ in parts))


def merge(results: list[dict]):
    """One CompareReport from the per-(engine, slice) task results (see the module docstring for the rules)."""
    from collections import Counter

    from ..torch.compare import CompareReport, RunStats
    runs: dict[str, list] = {}
    order: list[str] = []
    ref_acc = {}
    for r in sorted(results, key=lambda r: (r["shard"], r.get("engine_index", 0))):
        mags = r["magnitudes"]
        rows = mags["<output>"]["rows"]
        if r["report"]["reference_accuracy"] is not None:
            ref_acc[r["shard"]] = (r["report"]["reference_accuracy"], rows)
        for run in r["report"]["runs"]:
            if run["engine"] not in runs:
                runs[run["engine"]] = []
                order.append(run["engine"])
            runs[run["engine"]].append((run, mags, rows))
    merged = []
    for eng in order:
        parts = runs[eng]
        total = sum(rows for _, _, rows in parts)
        kk = parts[0][0]["k"]
        wmean = lambda key: sum(run[key] * rows for run, _, rows in parts) / total   # noqa: E731
        layers = []
        for j, lay in enumerate(parts[0][0]["layers"]):
            name = lay["layer"]
            layers.append(_merge_layer(name, [(run["layers"][j], mags[name]) for run, mags, _ in parts]))
        acc = None if parts[0][0]["accuracy"] is None else wmean("accuracy")
        ops, fb = Counter(), Counter()
        for run, _, _ in parts:
            ops.update(run["ops"])
            fb.update(run["fallbacks"])
        merged.append(RunStats(eng, layers, wmean("top1"), wmean(f"top{kk}"), kk, acc,
                               gemms=sum(run["gemms"] for run, _, _ in parts), ops=dict(ops), fallbacks=dict(fb)))
    racc = None
    if ref_acc:
        racc = sum(a * n for a, n in ref_acc.values()) / sum(n for _, n in ref_acc.values())
    return CompareReport(merged, racc)


def run_study(client, script_path, engines, *, shards: int = 1, k: int = 5, include_fp32: bool = True,
              on_progress=None):
    """Run the study script on the cluster; the merged :class:`~systolic.torch.compare.CompareReport`."""
    from distributed import as_completed
    from pathlib import Path
    from ..suggest import did_you_mean_file
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise InvalidValue("--shards must be a positive integer", rule="--shards: data slices, >= 1",
                           values={"shards": shards})
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidValue("--k must be a positive integer", rule="k >= 1 (top-k agreement)", values={"k": k})
    if not isinstance(include_fp32, bool):
        raise InvalidValue("include_fp32 is True or False", rule="run_study(include_fp32: bool)",
                           values={"include_fp32": include_fp32})
    if not isinstance(script_path, (str, os.PathLike)):
        raise InvalidValue("the study script is a path", rule="run_study(client, script: str | PathLike, ...)",
                           values={"script": script_path})
    path = Path(script_path)
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        hint = did_you_mean_file(path) if not path.exists() else ""
        raise InvalidValue(f"cannot read the study script: {exc}{hint}", rule="a study script is a Python file",
                           values={"script": str(path)}) from exc
    name = str(path)
    ns = _load_script(source, name)                           # the contract, checked before anything is sent
    engines = _check_engines(engines)
    try:
        import torch
        torch.manual_seed(0)
        samples = int(_data(ns)[0].shape[0])
    except InvalidValue:
        raise
    except Exception as exc:                                  # noqa: BLE001 - the script's data() failed
        raise InvalidValue(f"the study script's data() fails: {type(exc).__name__}: {exc}",
                           rule="data() returns the samples, or (samples, labels)", values={"script": name}) from exc
    if shards > samples:
        raise InvalidValue(f"--shards {shards} is more than the {samples} samples of data()",
                           rule="--shards <= samples: every slice holds a sample", values={"shards": shards,
                                                                                         "samples": samples})
    tag = hashlib.sha256(source.encode()).hexdigest()[:10]
    futs = {client.submit(study_task, source, name, eng, j, shards, k, include_fp32 and e == 0, pure=False,
                          key=f"systolic-study-{tag}-{e}-{j}"): e
            for e, eng in enumerate(engines) for j in range(shards)}
    if on_progress:
        on_progress(0, len(futs))
    results = []
    for fut in as_completed(list(futs)):
        results.append({**fut.result(), "engine_index": futs[fut]})
        if on_progress:
            on_progress(1, len(futs))
    return merge(results)


