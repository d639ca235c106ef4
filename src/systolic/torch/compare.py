"""``compare``: run a model in fp64, in plain fp32 and under each engine, and report per layer how far each run's
outputs move from the fp64 reference (ulp and relative error), and how often the final outputs still pick the
same class (top-1 / top-k agreement).

Definitions (used by the table, the JSON and the plot):

* reference: the model deep-copied to float64, fed the inputs in float64, no emulation;
* per layer: the output of every leaf module (forward hooks; the first tensor of a tuple output), and the model's
  own output as ``<output>``;
* ``ulp``: ``|x - ref| / ulp32(max(|ref|, 2^-10 * max|ref_layer|))``, ``ulp32`` the spacing of float32 there: the
  error in float32 ulps of the reference element, where elements far below the layer's scale (an exact zero after
  ReLU, a sum that cancelled) are measured in ulps at 2^-10 of the layer's largest magnitude instead of at their
  own (else a single cancelled element reads as 10^40 ulp); max and mean over the layer's elements;
* ``rel``: normwise: ``max|x - ref| / max|ref|`` (max_rel) and ``mean|x - ref| / mean|ref|`` (mean_rel);
* ``top1``: share of rows (last dimension = classes) whose argmax equals the reference's; ``topk``: mean share of
  the reference's k largest entries found among the run's k largest; ``accuracy`` when ``targets`` is given;
* ``gemms`` / ``fallbacks``: GEMMs run on the engine, ops run natively under ``fallback="native"``;
* ``nonfinite``: elements where the reference or the run is NaN or infinite. A run's NaN/inf that the reference
  does not share counts as an infinite error; a NaN/inf both share has no error to measure and is left out of the
  ulp and rel statistics (not counted as a match), so a layer whose elements are all non-finite reports NaN
  statistics, never 0.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from systolic.errors import InvalidValue
from systolic.torch.dispatch import emulate
from systolic.torch.engines import Engine, parse_engine

__all__ = ["compare", "CompareReport", "LayerStats"]

_TINY = np.float64(2.0 ** -126)


@dataclass
class LayerStats:
    layer: str
    max_ulp: float
    mean_ulp: float
    max_rel: float
    mean_rel: float
    nonfinite: int = 0      # elements where the reference or the run is NaN/inf (see the module docstring)

    def as_dict(self) -> dict:
        return {"layer": self.layer, "max_ulp": self.max_ulp, "mean_ulp": self.mean_ulp,
                "max_rel": self.max_rel, "mean_rel": self.mean_rel, "nonfinite": self.nonfinite}


@dataclass
class RunStats:
    engine: str
    layers: list[LayerStats]
    top1: float
    topk: float
    k: int
    accuracy: float | None = None
    gemms: int = 0
    ops: dict = field(default_factory=dict)
    fallbacks: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"engine": self.engine, "top1": self.top1, f"top{self.k}": self.topk, "k": self.k,
                "accuracy": self.accuracy, "gemms": self.gemms, "ops": self.ops, "fallbacks": self.fallbacks,
                "layers": [s.as_dict() for s in self.layers]}


@dataclass
class CompareReport:
    """Per engine, per layer error statistics against fp64; ``str()`` is the table, ``to_json()``, ``plot()``."""

    runs: list[RunStats]
    reference_accuracy: float | None = None

    def as_dict(self) -> dict:
        return {"reference": "float64", "reference_accuracy": self.reference_accuracy,
                "runs": [r.as_dict() for r in self.runs]}

    def to_json(self, **kw) -> str:
        return json.dumps(self.as_dict(), **kw)

    def table(self) -> str:
        """Plain-text table: one block per engine, one row per layer, then the output agreement."""
        lines = []
        w = max([len(s.layer) for r in self.runs for s in r.layers] + [8])
        head = f"  {'layer':<{w}}  {'max ulp':>10}  {'mean ulp':>10}  {'max rel':>9}  {'mean rel':>9}"
        nf = any(s.nonfinite for r in self.runs for s in r.layers)     # the column shows only when it matters
        if nf:
            head += f"  {'non-finite':>10}"
        if self.reference_accuracy is not None:
            lines.append(f"reference float64: accuracy {self.reference_accuracy:.4f}")
        for r in self.runs:
            acc = f", accuracy {r.accuracy:.4f}" if r.accuracy is not None else ""
            fb = f", fallbacks {dict(r.fallbacks)}" if r.fallbacks else ""
            lines.append(f"{r.engine}: top-1 {r.top1:.4f}, top-{r.k} {r.topk:.4f}{acc}, "
                         f"{r.gemms} GEMMs on the engine{fb}")
            lines.append(head)
            for s in r.layers:
                lines.append(f"  {s.layer:<{w}}  {s.max_ulp:>10.4g}  {s.mean_ulp:>10.4g}  {s.max_rel:>9.3e}  "
                             f"{s.mean_rel:>9.3e}" + (f"  {s.nonfinite:>10}" if nf else ""))
        return "\n".join(lines)

    __str__ = table

    def plot(self, path=None, metric: str = "max_rel"):
        """A bar chart of ``metric`` per layer and engine (log scale); saved to ``path`` if given. Needs
        matplotlib (``pip install 'systolic[torch]'`` brings it)."""
        try:
            import matplotlib
            matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt
        except ImportError as exc:
            from systolic.errors import BackendUnavailable
            raise BackendUnavailable("CompareReport.plot needs matplotlib", rule="pip install matplotlib",
                                     values={"error": str(exc)}) from exc
        if metric not in ("max_ulp", "mean_ulp", "max_rel", "mean_rel"):
            raise InvalidValue("unknown metric", rule="max_ulp, mean_ulp, max_rel, mean_rel", values={"metric": metric})
        layers = [s.layer for s in self.runs[0].layers] if self.runs else []
        fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(layers) + 2), 4))
        width = 0.8 / max(1, len(self.runs))
        for i, r in enumerate(self.runs):
            vals = [max(getattr(s, metric), 1e-18) for s in r.layers]
            ax.bar(np.arange(len(vals)) + i * width, vals, width, label=r.engine)
        ax.set_xticks(np.arange(len(layers)) + 0.4 - width / 2, layers, rotation=30, ha="right")
        ax.set_yscale("log")
        ax.set_ylabel(f"{metric} vs float64")
        ax.legend(fontsize=7)
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=120)
        return fig


def _first_tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (tuple, list)):
        for o in out:
            t = _first_tensor(o)
            if t is not None:
                return t
    if isinstance(out, dict):
        for o in out.values():
            t = _first_tensor(o)
            if t is not None:
                return t
    return None


def _run(model, inputs):
    """Outputs of every leaf module (in call order) and of the model."""
    seen: dict[str, torch.Tensor] = {}
    hooks = []
    for name, mod in model.named_modules():
        if name and not list(mod.children()):
            def hook(m, i, o, name=name):
                t = _first_tensor(o)
                if t is not None and name not in seen:
                    seen[name] = t.detach().to("cpu", torch.float64).clone()
            hooks.append(mod.register_forward_hook(hook))
    try:
        with torch.no_grad():
            out = model(*inputs)
    finally:
        for h in hooks:
            h.remove()
    seen["<output>"] = _first_tensor(out).detach().to("cpu", torch.float64).clone()
    return seen


def _stats(name, x: np.ndarray, r: np.ndarray) -> LayerStats:
    if x.shape != r.shape:
        raise InvalidValue("a layer's output changed shape under emulation", values={"layer": name})
    with np.errstate(invalid="ignore"):     # inf - inf: NaN, handled below with the other non-finite elements
        d = np.abs(x - r)
    fin = np.abs(r[np.isfinite(r)])
    floor = max(float(fin.max()) * 2.0 ** -10 if fin.size else 0.0, float(_TINY))
    unit = np.spacing(np.maximum(np.abs(r), floor).astype(np.float32)).astype(np.float64)
    ulp = d / unit
    bad = ~np.isfinite(x) | ~np.isfinite(r)
    nonfinite = int(bad.sum())
    if nonfinite:
        same = (np.isnan(x) & np.isnan(r)) | (x == r)
        # a NaN/inf that the reference does not share is an infinite error; one both share has no error to
        # measure: it leaves the statistics (counting it as 0 would read as a perfect match)
        keep = ~(bad & same)
        ulp = np.where(bad, np.inf, ulp)[keep]
        d = np.where(bad, np.inf, d)[keep]
        if not d.size and x.size:
            return LayerStats(name, np.nan, np.nan, np.nan, np.nan, nonfinite)
    ar = np.abs(np.where(np.isfinite(r), r, 0.0))
    maxr, meanr = (float(ar.max()), float(ar.mean())) if ar.size else (0.0, 0.0)
    return LayerStats(name, float(ulp.max()) if ulp.size else 0.0, float(ulp.mean()) if ulp.size else 0.0,
                      float(d.max() / maxr) if maxr else float(d.max() if d.size else 0.0),
                      float(d.mean() / meanr) if meanr else float(d.mean() if d.size else 0.0), nonfinite)


def _agreement(x: torch.Tensor, r: torch.Tensor, k: int) -> tuple[float, float]:
    if x.dim() == 0 or x.shape[-1] < 1:
        return 1.0, 1.0
    x2, r2 = x.reshape(-1, x.shape[-1]), r.reshape(-1, r.shape[-1])
    top1 = float((x2.argmax(-1) == r2.argmax(-1)).double().mean())
    kk = min(k, x2.shape[-1])
    tx, tr = x2.topk(kk, dim=-1).indices, r2.topk(kk, dim=-1).indices
    hit = (tx.unsqueeze(-1) == tr.unsqueeze(-2)).any(-1).double().sum(-1) / kk
    return top1, float(hit.mean())


def compare(model: torch.nn.Module, inputs, engines=("amx:spr",), *, k: int = 5, targets=None,
            include_fp32: bool = True, **options) -> CompareReport:
    """Run ``model`` on ``inputs`` (a tensor or a tuple of tensors) under every engine and in fp64.

    ``engines``: names (``"amx:spr"``), ``(name, {options})`` pairs (e.g. ``("xmx:dg2", {"precision": "int8"})``)
    or :class:`~systolic.torch.engines.Engine` objects; ``options`` apply to every engine (``fallback=``...);
    ``include_fp32`` adds plain fp32 PyTorch as a row; ``targets``: class labels for an accuracy column.
    The model is used in eval mode and is not changed (the fp64 reference runs on a deep copy).
    Bad arguments (a model that is not an ``nn.Module``, ``k < 1``, a malformed engine entry or option, targets
    that are not one integer label per output row) raise :class:`~systolic.errors.InvalidValue` naming them.
    """
    if not isinstance(model, torch.nn.Module):
        raise InvalidValue("compare runs a torch.nn.Module", rule="compare(model: torch.nn.Module, inputs, ...)",
                           values={"model": type(model).__name__})
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    if not isinstance(inputs, (tuple, list)):
        raise InvalidValue("inputs is a tensor or a tuple of the model's arguments",
                           rule="compare(model, inputs: Tensor | tuple, ...)", values={"inputs": type(inputs).__name__})
    inputs = tuple(inputs)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidValue("k must be a positive integer (top-k agreement)", rule="k >= 1", values={"k": k})
    if isinstance(engines, (str, Engine)):
        engines = (engines,)
    if not isinstance(engines, (tuple, list)):
        raise InvalidValue("engines is an engine name, an Engine, or a tuple/list of them",
                           rule="compare(..., engines=('amx:spr', ('xmx:dg2', {...}), Engine(...)))",
                           values={"engines": repr(engines)[:60]})
    engines = [_engine_entry(e, options) for e in engines]
    # eval mode for the runs; every module's own training flag is put back afterwards (the model is not changed)
    flags = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        ref_model = copy.deepcopy(model).to(torch.float64)
        ref_in = tuple(t.to(torch.float64) if isinstance(t, torch.Tensor) and t.is_floating_point() else t
                       for t in inputs)
        ref = _run(ref_model, ref_in)
        names = list(ref)

        labels = None if targets is None else _labels(targets, ref["<output>"])

        def accuracy(out):
            if labels is None:
                return None
            return float((out.reshape(-1, out.shape[-1]).argmax(-1).cpu() == labels).double().mean())

        runs = []
        specs = (["fp32"] if include_fp32 else []) + list(engines)
        for spec in specs:
            if spec == "fp32":
                outs, label, mode = _run(model, inputs), "fp32 (plain torch)", None
            else:
                name, opts = spec
                opts = {**options, **opts}
                mode_opts = {k2: opts.pop(k2) for k2 in ("fallback", "bias", "conv_k_order") if k2 in opts}
                eng = name if isinstance(name, Engine) else parse_engine(name, **opts)
                mode = emulate(eng, **mode_opts)
                with mode:
                    outs = _run(model, inputs)
                label = eng.name
            layers = [_stats(n, outs[n].numpy(), ref[n].numpy()) for n in names if n in outs]
            t1, tk = _agreement(outs["<output>"], ref["<output>"], k)
            runs.append(RunStats(label, layers, t1, tk, k, accuracy(outs["<output>"]),
                                 gemms=mode.gemms if mode else 0, ops=dict(mode.counts) if mode else {},
                                 fallbacks=dict(mode.fallbacks) if mode else {}))
        return CompareReport(runs, accuracy(ref["<output>"]))
    finally:
        for m, training in flags:
            m.training = training


_ENGINE_OPTIONS = ("precision", "model", "weight_scales", "backend", "fallback", "bias", "conv_k_order")


def _engine_entry(e, options: dict):
    """One ``engines`` entry as ``(name or Engine, {options})``, its shape and option names checked."""
    if isinstance(e, tuple):
        if len(e) != 2 or not isinstance(e[1], Mapping):
            raise InvalidValue("an engines entry is a name, an Engine or a (name, {options}) pair",
                               rule="engines=['amx:spr', ('xmx:dg2', {'precision': 'int8'}), ...]",
                               values={"engines entry": repr(e)[:80]})
        name, opts = e[0], dict(e[1])
    else:
        name, opts = e, {}
    unknown = sorted((set(opts) | set(options)) - set(_ENGINE_OPTIONS))
    if unknown:
        raise InvalidValue("unknown engine option(s)", rule="options: " + ", ".join(_ENGINE_OPTIONS),
                           values={"options": unknown})
    return name, opts


def _labels(targets, out: torch.Tensor) -> torch.Tensor:
    """``targets`` as one integer class label per output row (the rows ``top1`` counts)."""
    rows = out.reshape(-1, out.shape[-1]).shape[0] if out.dim() else 1
    try:
        t = torch.as_tensor(targets)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InvalidValue("targets are integer class labels", rule="one integer label per output row",
                           values={"targets": repr(targets)[:80], "error": str(exc)[:80]}) from None
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool or t.numel() != rows:
        raise InvalidValue("targets are integer class labels, one per output row",
                           rule="one integer label per output row",
                           values={"dtype": str(t.dtype), "labels": t.numel(), "rows": rows})
    t = t.reshape(-1).cpu()
    classes = out.shape[-1] if out.dim() else 1
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= classes):
        # an accuracy over labels no output can match would be a verdict wider than its check
        bad = int(t.min()) if int(t.min()) < 0 else int(t.max())
        raise InvalidValue(f"target label {bad} is outside the model's {classes} classes",
                           rule="targets are class indices 0 .. classes - 1 (the output's last dimension)",
                           values={"label": bad, "classes": classes})
    return t
