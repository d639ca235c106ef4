"""The direct engine call on numpy operands: what every dispatched GEMM must equal, bit for bit."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import systolic.amx as amx
import systolic.xmx as xmx

#: (engine name, options) pairs the tests run: every engine kind x input precision the integration offers
ENGINES = [
    ("amx:spr", {"precision": "bf16"}),
    ("amx:gnr", {"precision": "fp16"}),
    ("amx:spr", {"precision": "int8"}),
    ("xmx:pvc", {"precision": "bf16", "model": "stage"}),
    ("xmx:pvc", {"precision": "tf32"}),
    ("xmx:dg2", {"precision": "fp16"}),
    ("xmx:dg2", {"precision": "int8"}),
    ("xmx:bmg", {"precision": "bf16", "model": "block(16,24)"}),
]
IDS = [f"{e}-{o['precision']}" + (f"-{o['model']}" if "model" in o else "") for e, o in ENGINES]


def _engine(name, opts, a, b, c=None):
    kind, dev = name.split(":")
    if kind == "amx":
        return amx.matmul(a, b, c, device=dev)
    kw = {"device": dev}
    if opts.get("model"):
        kw["model"] = opts["model"]
    if opts["precision"] == "tf32":
        kw["precision"] = "tf32"
    return xmx.matmul(a, b, c, **kw)


def _to_input(x, p):
    x = np.ascontiguousarray(x, dtype=np.float32)
    if p == "bf16":
        return x.astype(ml_dtypes.bfloat16)
    if p == "fp16":
        return x.astype(np.float16)
    return x


def scale(x, axis=None):
    """max|x| / 127 in fp32 over the tensor or along axis (kept); 1 where that is 0."""
    x = np.asarray(x, np.float32)
    m = np.abs(x).max(axis=axis, keepdims=axis is not None) if x.size else np.float32(0)
    s = (np.float32(m) if axis is None else m.astype(np.float32)) / np.float32(127)
    return np.where(s == 0, np.float32(1), s).astype(np.float32)


def _quant(x, axis=None, s=None):
    x = np.asarray(x, np.float32)
    s = scale(x, axis) if s is None else s
    q = np.clip(np.rint(x / s), -127, 127).astype(np.int8)
    return q, s


def gemm(name, opts, a, b, c=None, *, weight=True, a_scale=None) -> np.ndarray:
    """``c + a @ b`` (float32 numpy) as the engine computes it on the converted / quantised operands; int8:
    ``a_scale`` is the activation scale when ``a`` is part of a larger activation tensor (a conv's im2col)."""
    p = opts["precision"]
    if p == "int8":
        assert c is None
        qa, sa = _quant(a, s=a_scale)
        qb, sb = _quant(b, axis=0 if weight else None)
        acc = _engine(name, opts, qa, qb)
        return acc.astype(np.float32) * (np.float32(sa) * sb).astype(np.float32)
    return _engine(name, opts, _to_input(a, p), _to_input(b, p), c)


def addmm(name, opts, bias, a, b, *, weight=True, beta=1.0, alpha=1.0, a_scale=None):
    """The epilogue form: fp32 GEMM, then alpha, then + beta * bias in fp32."""
    acc = gemm(name, opts, a, b, weight=weight, a_scale=a_scale)
    if alpha != 1:
        acc = (acc * np.float32(alpha)).astype(np.float32)
    if bias is not None and beta != 0:
        bb = np.asarray(bias, np.float32)
        acc = (acc + (bb if beta == 1 else (bb * np.float32(beta)).astype(np.float32))).astype(np.float32)
    return acc
