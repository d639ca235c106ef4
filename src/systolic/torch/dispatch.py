"""``emulate``: a TorchDispatchMode under which PyTorch's GEMMs compute as an AMX or XMX engine does.

What reaches the mode are ATen ops after PyTorch's own decompositions (``nn.Linear``/``F.linear`` arrive as
``addmm``/``mm`` on a transposed weight view, ``torch.matmul``/``einsum`` as ``mm``/``bmm``/``mv``/``dot`` on views,
``F.conv2d`` as ``convolution``; under ``torch.inference_mode()``, where PyTorch skips those decompositions, the mode
runs them itself: :meth:`EmulateMode._decompose`). Each handled op is lowered to 2-D GEMMs and each GEMM runs on the engine
(:class:`systolic.torch.engines.Engine`): the engine sees exactly the values a framework would hand its kernel
(inputs rounded RNE to bf16/fp16, tf32 by the engine, or quantised to int8), accumulates in fp32/int32 as the
instruction does, and the epilogue (alpha/beta, bias, dequantisation) runs in fp32. Every other op (activations,
norms, softmax...) runs in plain PyTorch in the tensors' own dtype: only the matrix engine is emulated.

``F.scaled_dot_product_attention`` is caught one level higher (a TorchFunctionMode) and decomposed into its two
GEMMs (``Q K^T`` and ``P V``) with fp32 scale, mask and softmax between them, the graph oneDNN's SDPA pattern
and the GPU flash kernels compute (P rounded to the engine's input type before the second GEMM). The fused
attention ATen kernels, RNN kernels, quantized and oneDNN-specific GEMMs are *not* modelled: they raise
:class:`systolic.errors.UnsupportedOperation` naming the op, or, with ``fallback="native"``, run in plain
PyTorch and are counted (:attr:`EmulateMode.fallbacks`). Arguments PyTorch refuses (operands of different dtypes,
an attention mask with ``is_causal=True``...) raise PyTorch's own RuntimeError.

Gradients are not emulated: the context runs its body under ``torch.no_grad()``.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes, _pop_mode, _push_mode
from torch.utils._pytree import tree_leaves, tree_map

from systolic.errors import InvalidValue, UnsupportedOperation
from systolic.torch import quant
from systolic.torch.engines import FLOAT_DTYPES, Engine, parse_engine

__all__ = ["emulate", "EmulateMode", "HANDLED_OPS"]

aten = torch.ops.aten

#: ATen ops lowered onto the engine (overloads .default, .out and the in-place forms)
HANDLED_OPS = ("mm", "addmm", "bmm", "baddbmm", "mv", "addmv", "dot", "vdot", "convolution",
               "_scaled_dot_product_flash_attention_for_cpu")

# ops that multiply matrices but are not modelled: refused by name (or run natively with fallback="native").
_MATRIX_NAMES = {"matmul", "einsum", "tensordot", "addr", "inner", "chain_matmul", "linalg_multi_dot", "addbmm",
                 "_int_mm", "_scaled_mm", "_native_multi_head_attention", "_transformer_encoder_layer_fwd",
                 "lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
                 "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "mkldnn_rnn_layer", "_fused_sdp_choice",
                 "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "_euclidean_dist", "_cdist_forward"}
_MATRIX_RE = re.compile(r"(^|_)(add|b|badd|addb|sparse_sampled_add)?mm($|_)|conv(?!ert)|attention|linear(?!1d|2d|3d)"
                        r"|^mkldnn|^_mkldnn|pack_?(gemm|mm)|_weight_int\d+pack|^fbgemm|^miopen|^cudnn_conv")
_MATRIX_NAMESPACES = {"quantized", "_quantized", "mkldnn", "onednn", "fbgemm"}


def _is_matrix_op(func) -> bool:
    ns = getattr(func, "namespace", "aten")
    if ns in _MATRIX_NAMESPACES:
        return True
    name = func._schema.name.split("::")[-1]
    if name.startswith("upsample") or "bilinear" in name:
        return False
    return name in _MATRIX_NAMES or bool(_MATRIX_RE.search(name))


def _op_name(func) -> str:
    return str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") else str(func)


class _SdpaMode(TorchFunctionMode):
    """Decomposes ``F.scaled_dot_product_attention`` into two GEMMs that the dispatch mode then emulates."""

    def __init__(self, owner: "EmulateMode"):
        super().__init__()
        self.owner = owner

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention and not _any_meta(args, kwargs):
            mode, name = self.owner, "scaled_dot_product_attention"
            _sdpa_torch_checks(args, kwargs)
            why = mode._check_operands(name, args[:3], {}) or _dropout_why(_sdpa_arg(args, kwargs, 4, "dropout_p"))
            if why:
                return mode._unsupported(_native(func), name, args, kwargs, why)
            mode.counts[name] += 1
            return _sdpa(mode, *args, **kwargs)[0]
        # meta tensors: torch's own SDPA, whose ATen ops the dispatch mode then refuses (or runs natively with
        # fallback="native"), as for every other op on tensors without values
        return func(*args, **kwargs)


def _sdpa_arg(args, kwargs, i, key, default=0.0):
    return args[i] if len(args) > i else kwargs.get(key, default)


def _dropout_why(p) -> str | None:
    return f"dropout_p = {p} > 0 is not modelled (random, training)" if p else None


def _native(func):
    """func run in plain torch: the dispatch modes off (else the dispatch mode would emulate the ATen ops that
    F.scaled_dot_product_attention reaches, e.g. the CPU flash kernel, at the engine's precision)."""
    def run(*args, **kwargs):
        with _disable_current_modes():
            return func(*args, **kwargs)
    return run


def _sdpa_torch_checks(args, kwargs) -> None:
    """PyTorch's own argument checks of F.scaled_dot_product_attention, run on meta copies of the arguments with
    the dispatch modes off: query/key/value of different dtypes, an attn_mask of a third dtype, an attn_mask together
    with is_causal=True (refused by the math reference; the docs: "An error is thrown if both attn_mask and is_causal
    are set"), shapes that do not match raise torch's RuntimeError, as in plain torch."""
    key = _signature(args, kwargs)
    if key in _SDPA_CHECKED:
        return                                   # the checks depend only on shapes, dtypes and flags: ~2 ms each

    def meta(x):
        return x.to("meta") if isinstance(x, torch.Tensor) else x
    with _disable_current_modes():
        F.scaled_dot_product_attention(*tree_map(meta, args), **tree_map(meta, kwargs))
    if len(_SDPA_CHECKED) > 1024:
        _SDPA_CHECKED.clear()
    _SDPA_CHECKED.add(key)


#: argument signatures whose SDPA checks passed (see _sdpa_torch_checks)
_SDPA_CHECKED: set = set()


def _signature(args, kwargs) -> tuple:
    """What torch's SDPA argument checks read: each tensor's shape, dtype and device, the other values as given."""
    def sig(x):
        if isinstance(x, torch.Tensor):
            return ("tensor", tuple(x.shape), x.dtype, x.device.type)
        return x if isinstance(x, (int, float, bool, str, type(None))) else ("object", id(x))
    return tuple(sig(a) for a in args) + tuple((k, sig(v)) for k, v in sorted(kwargs.items()))


def _tensors(args, kwargs):
    return [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]


def _any_meta(args, kwargs) -> bool:
    return any(t.device.type == "meta" for t in _tensors(args, kwargs))


def _sdpa(mode, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """softmax(Q K^T * scale + mask) V with both GEMMs on the engine; returns (output, logsumexp of the scores).

    Modelling choices (the graph oneDNN matches for SDPA and what flash-attention kernels do): one GEMM per
    (batch, head); the scale multiplies the fp32 scores after the first GEMM; mask and softmax in fp32; the
    probabilities P go into the second GEMM in the engine's input type (rounded RNE, as a kernel converts P to
    bf16/fp16); the output is rounded to the query's dtype.
    """
    assert not dropout_p, "callers route dropout_p > 0 to the fallback rule (EmulateMode._unsupported)"
    L, S, E, Ev = query.size(-2), key.size(-2), query.size(-1), value.size(-1)
    sc = (1.0 / math.sqrt(E) if E else math.inf) if scale is None else scale
    if enable_gqa and key.dim() >= 3 and key.size(-3) != query.size(-3):
        rep = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    nb = math.prod(batch)       # explicit: reshape(-1, ...) cannot infer it when a length is 0
    q = query.expand(*batch, L, E).reshape(nb, L, E)
    k = key.expand(*batch, S, E).reshape(nb, S, E)
    v = value.expand(*batch, S, Ev).reshape(nb, S, Ev)
    scores = _stack([mode.gemm(q[i], k[i].t(), b_is_weight=False) for i in range(nb)], (0, L, S), query.device)
    if E:   # E == 0: the scores are empty sums, exactly 0 (torch scales Q and K, which have no elements, by it)
        scores = scores * sc
    scores = scores.reshape(*batch, L, S)
    if is_causal:
        keep = torch.ones(L, S, dtype=torch.bool, device=query.device).tril(diagonal=0)
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask.to(torch.float32)
    # a row whose every score is -inf (fully masked) gets probabilities 0, not NaN: PyTorch's _safe_softmax
    # (math and CPU flash backends, torch >= 2.5) makes such rows of the output 0
    p = torch.softmax(scores, dim=-1)
    p = p.masked_fill((scores == float("-inf")).all(dim=-1, keepdim=True), 0.0).reshape(nb, L, S)
    out = _stack([mode.gemm(p[i], v[i], b_is_weight=False) for i in range(nb)], (0, L, Ev), query.device)
    out = out.reshape(*batch, L, Ev).to(query.dtype)
    return out, torch.logsumexp(scores, dim=-1)


def _stack(items, empty_shape, device):
    return torch.stack(items) if items else torch.empty(empty_shape, dtype=torch.float32, device=device)


def _flash_cpu(mode, query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    """aten._scaled_dot_product_flash_attention_for_cpu (what F.scaled_dot_product_attention becomes when it is
    called inside another torch function, e.g. nn.MultiheadAttention): the same two GEMMs as :func:`_sdpa`."""
    return _sdpa(mode, query, key, value, attn_mask, dropout_p, is_causal, scale)


class EmulateMode(TorchDispatchMode):
    """The dispatch mode behind :func:`emulate`; ``counts`` (op -> calls emulated), ``gemms`` (2-D GEMMs run on
    the engine), ``fallbacks`` (op -> calls run natively because ``fallback="native"``)."""

    def __init__(self, engine: Engine, *, fallback: str = "raise", bias: str = "epilogue",
                 conv_k_order: str = "chw"):
        super().__init__()
        if fallback not in ("raise", "native"):
            raise InvalidValue("fallback is 'raise' or 'native'", values={"fallback": fallback})
        if bias not in ("epilogue", "accumulator"):
            raise InvalidValue("bias is 'epilogue' or 'accumulator'", values={"bias": bias})
        if conv_k_order not in ("chw", "hwc"):
            raise InvalidValue("conv_k_order is 'chw' (im2col, torch.unfold order) or 'hwc' (channels innermost)",
                               values={"conv_k_order": conv_k_order})
        self.engine = engine
        self.fallback = fallback
        self.bias = bias
        self.conv_k_order = conv_k_order
        self.counts: Counter = Counter()
        self.fallbacks: Counter = Counter()
        self.gemms = 0
        self._stack: list = []

    # ------------------------------------------------------------------ context management
    def __enter__(self):
        ng = torch.no_grad()
        ng.__enter__()
        fast = None
        if hasattr(torch.backends, "mha") and hasattr(torch.backends.mha, "get_fastpath_enabled"):
            # nn.MultiheadAttention / TransformerEncoderLayer would otherwise call fused kernels in eval mode
            fast = torch.backends.mha.get_fastpath_enabled()
            torch.backends.mha.set_fastpath_enabled(False)
        fm = _SdpaMode(self)
        fm.__enter__()
        self._stack.append((ng, fast, fm))
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            ng, fast, fm = self._stack.pop()
            fm.__exit__(*exc)
            if fast is not None:
                torch.backends.mha.set_fastpath_enabled(fast)
            ng.__exit__(*exc)

    # ------------------------------------------------------------------ dispatch
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = _op_name(func)
        handler = _HANDLERS.get(name)
        if handler is None:
            r = self._decompose(func, args, kwargs)
            if r is not NotImplemented:
                return r
            if _is_matrix_op(func):
                return self._unsupported(func, name, args, kwargs, "this matrix op is not modelled")
            return func(*args, **kwargs)
        _same_dtype_check(func, name, args, kwargs)
        why = self._check_operands(name, args, kwargs)
        if why:
            return self._unsupported(func, name, args, kwargs, why)
        out = kwargs.get("out")
        if out is not None:
            _torch_checks(func, args, kwargs)
        kwargs.pop("out", None)
        result = handler(self, *args, **kwargs)
        self.counts["scaled_dot_product_attention" if name.startswith("_scaled_dot") else name.rstrip("_")] += 1
        if name.endswith("_"):                          # in-place form: self is the first argument
            return args[0].copy_(result)
        if out is not None:                             # .out overloads
            out.resize_(result.shape)
            return out.copy_(result)
        return result

    def _decompose(self, func, args, kwargs):
        """An op with a CompositeImplicitAutograd kernel, run as that kernel (the ops it is made of come back
        here); NotImplemented for any other op.

        Outside ``torch.inference_mode()`` the Autograd dispatch keys run these decompositions before the Python
        mode sees anything (``nn.Linear`` arrives as ``addmm``); under inference mode those keys are off and the
        mode receives ``aten.linear``/``conv2d``/``matmul``/``einsum`` themselves. Decomposing them here gives the
        same ATen ops, hence the same GEMMs, in both cases. Only this dispatch mode is pushed again around the
        decomposition (``with self`` would re-enter the SDPA function mode and the no_grad state too)."""
        if not _is_composite_implicit(func):
            return NotImplemented
        _push_mode(self)
        try:
            return func.decompose(*args, **kwargs)
        finally:
            _pop_mode()

    def _check_operands(self, name, args, kwargs=None) -> str | None:
        if _any_meta(args, kwargs or {}):
            return "meta tensors carry no values to compute on (fallback='native' runs torch's meta kernel)"
        ts = [a for a in args if isinstance(a, torch.Tensor)]
        for t in ts:
            if t.dtype not in FLOAT_DTYPES:
                return (f"operand dtype {t.dtype} has no engine input (float32/bfloat16/float16 tensors; fp64 "
                        f"and integer GEMMs are not modelled)")
            if t.is_sparse or t.layout != torch.strided:
                return f"layout {t.layout} is not modelled"
        if name.startswith("_scaled_dot_product"):       # the CPU flash op: (q, k, v, dropout_p, is_causal, ...)
            return _dropout_why(args[3] if len(args) > 3 else 0.0)
        return None

    def _unsupported(self, func, name, args, kwargs, why):
        if self.fallback == "native":
            self.fallbacks[name] += 1
            return func(*args, **kwargs)
        shapes = [tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]
        dtypes = sorted({str(a.dtype) for a in args if isinstance(a, torch.Tensor)})
        raise UnsupportedOperation(f"aten.{name} cannot run under emulate({self.engine.name!r}): {why}",
                                   rule="emulate runs mm, addmm, bmm, baddbmm, mv, addmv, dot, vdot, "
                                        "convolution (2-D), scaled_dot_product_attention; fallback='native' "
                                        "runs others in plain torch",
                                   values={"op": name, "shapes": shapes, "dtypes": dtypes})

    # ------------------------------------------------------------------ GEMMs
    def gemm(self, a, b, c=None, *, b_is_weight=True, a_scale=None) -> torch.Tensor:
        """One 2-D GEMM on the engine, float32 result (counted); ``a_scale``: int8 activation scale given by the
        caller (a convolution's, over its whole input)."""
        self.gemms += 1
        if a.device != b.device:
            raise InvalidValue("GEMM operands on different devices", values={"a": str(a.device), "b": str(b.device)})
        return self.engine.gemm(a, b, c, b_is_weight=b_is_weight, a_scale=a_scale)

    def addmm2d(self, bias, a, b, beta=1, alpha=1, *, b_is_weight=True, a_scale=None) -> torch.Tensor:
        """``beta * bias + alpha * (a @ b)`` in fp32: the engine's GEMM, then the epilogue (or bias as the
        initial accumulator with ``bias="accumulator"``, when beta == alpha == 1 and the precision is float)."""
        M, N = a.shape[0], b.shape[1]
        if (bias is not None and beta == 1 and alpha == 1 and self.bias == "accumulator"
                and self.engine.precision != "int8"):
            c = bias.to(torch.float32).expand(M, N).contiguous()
            return self.gemm(a, b, c, b_is_weight=b_is_weight)
        acc = self.gemm(a, b, b_is_weight=b_is_weight, a_scale=a_scale)
        if alpha != 1:
            acc = acc * alpha
        if bias is not None and beta != 0:
            bb = bias.to(torch.float32).to(acc.device)
            acc = acc + (bb if beta == 1 else bb * beta)
        return acc


@functools.cache
def _is_composite_implicit(func) -> bool:
    """Whether ``func`` (an OpOverload) has a CompositeImplicitAutograd kernel; asked for every unhandled op
    (relu, add...), so answered once per op (the registry lookup costs ~5 us)."""
    return torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd")


def _same_dtype_check(func, name, args, kwargs) -> None:
    """Operands of different dtypes (F.linear(float32, bfloat16), bmm(float16, float32), a bf16 ``self`` of
    ``addmm_`` with float32 matrices): PyTorch's own kernel decides, so the error is torch's RuntimeError
    ("expected m1 and m2 to have the same dtype", ...), as without emulate. The meta kernels do not check dtypes,
    so the op itself runs once in plain torch on these operands (an in-place op on a copy of ``self``); should
    torch accept the mix, emulation goes on."""
    ts = [a for a in args if isinstance(a, torch.Tensor)]
    if len({t.dtype for t in ts}) <= 1:
        return
    a = list(args)
    if name.endswith("_"):
        a[0] = a[0].clone()
    kw = {k: v for k, v in kwargs.items() if k != "out"}
    func = getattr(func.overloadpacket, "default", func) if "out" in kwargs else func
    func(*a, **kw)


def _torch_checks(func, args, kwargs) -> None:
    """torch's own argument checks of ``func`` (its meta kernel on meta copies of the arguments): an ``out=``
    tensor of another dtype is refused with torch's error, as plain torch refuses it, instead of being filled by
    a silent cast. An op without a meta kernel is not checked here."""
    def meta(x):
        return x.to("meta") if isinstance(x, torch.Tensor) else x
    try:
        func(*tree_map(meta, args), **tree_map(meta, kwargs))
    except NotImplementedError:
        pass


def _out_dtype(*ts):
    return torch.result_type(*ts) if len(ts) > 1 else ts[0].dtype


def _mm(mode, a, b):
    return mode.gemm(a, b).to(_out_dtype(a, b))


def _addmm(mode, bias, a, b, *, beta=1, alpha=1):
    return mode.addmm2d(bias, a, b, beta, alpha).to(_out_dtype(a, b))


def _broadcast_weight(a, b) -> bool:
    """B is one matrix repeated over the batch (stride 0), A is not: a weight, as ``nn.Linear`` on a
    non-contiguous 3-D input hands it to bmm (torch.matmul expands the weight instead of folding the batch). The
    batch is then folded into one GEMM with B as the weight, the GEMM the contiguous input gets (int8: per-channel
    weight scales and one activation scale for the whole input, not per-tensor scales per batch element; float:
    the rows of a GEMM do not depend on each other, so the bits are those of the per-batch GEMMs)."""
    return b.dim() == 3 and b.size(0) > 0 and b.stride(0) == 0 and not (a.dim() == 3 and a.stride(0) == 0
                                                                         and a.size(0) > 1)


def _bmm(mode, a, b):
    if a.dim() != 3 or b.dim() != 3 or a.size(0) != b.size(0):
        raise InvalidValue("bmm needs (B, M, K) and (B, K, N)", values={"a": tuple(a.shape), "b": tuple(b.shape)})
    if _broadcast_weight(a, b):
        B, M, K = a.shape
        return mode.gemm(a.reshape(B * M, K), b[0]).reshape(B, M, b.size(2)).to(_out_dtype(a, b))
    outs = [mode.gemm(a[i], b[i], b_is_weight=False) for i in range(a.size(0))]
    r = torch.stack(outs) if outs else torch.empty(0, a.size(1), b.size(2))
    return r.to(_out_dtype(a, b))


def _baddbmm(mode, bias, a, b, *, beta=1, alpha=1):
    B, M, N = a.size(0), a.size(1), b.size(2)
    bias_b = bias.expand(B, M, N) if bias is not None else None
    if _broadcast_weight(a, b):                                       # see _bmm
        r = mode.addmm2d(None if bias_b is None else bias_b.reshape(B * M, N), a.reshape(B * M, a.size(2)), b[0],
                         beta, alpha)
        return r.reshape(B, M, N).to(_out_dtype(a, b))
    outs = [mode.addmm2d(None if bias_b is None else bias_b[i], a[i], b[i], beta, alpha, b_is_weight=False)
            for i in range(B)]
    r = torch.stack(outs) if outs else torch.empty(0, M, N)
    return r.to(_out_dtype(a, b))


def _mv(mode, a, v):
    return mode.gemm(a, v.unsqueeze(1)).squeeze(1).to(_out_dtype(a, v))


def _addmv(mode, bias, a, v, *, beta=1, alpha=1):
    return mode.addmm2d(bias.unsqueeze(-1) if bias.dim() == 1 else bias, a, v.unsqueeze(1), beta, alpha) \
        .squeeze(1).to(_out_dtype(a, v))


def _dot(mode, x, y):
    return mode.gemm(x.unsqueeze(0), y.unsqueeze(1)).reshape(()).to(_out_dtype(x, y))


def _convolution(mode, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    """conv2d as the GEMM oneDNN / IGC issue: im2col rows (one per output pixel), K = (C/g) * KH * KW ordered
    (c, kh, kw) as ``torch.nn.functional.unfold`` lays it out (``conv_k_order="chw"``) or channels innermost
    (``"hwc"``, the NHWC direct-convolution order); one GEMM per group; bias in the epilogue."""
    if transposed:
        raise UnsupportedOperation("transposed convolution is not modelled", rule="conv2d (not transposed)",
                                   values={"op": "convolution", "transposed": True})
    unbatched = x.dim() == 3 and w.dim() == 4
    if unbatched:
        x = x.unsqueeze(0)
    if x.dim() != 4 or w.dim() != 4:
        raise UnsupportedOperation("only 2-D convolution (conv2d) is modelled", rule="4-D input and weight",
                                   values={"op": "convolution", "input": tuple(x.shape), "weight": tuple(w.shape)})
    N, C, H, W = x.shape
    OC, Cg, KH, KW = w.shape
    if isinstance(padding, str):
        raise UnsupportedOperation("string padding reached aten.convolution", values={"padding": padding})
    cols = F.unfold(x, (KH, KW), dilation=tuple(dilation), padding=tuple(padding), stride=tuple(stride))
    OH = (H + 2 * padding[0] - dilation[0] * (KH - 1) - 1) // stride[0] + 1
    OW = (W + 2 * padding[1] - dilation[1] * (KW - 1) - 1) // stride[1] + 1
    L = cols.shape[-1]
    cols = cols.reshape(N, groups, Cg, KH * KW, L)
    OCg = OC // groups
    wg = w.reshape(groups, OCg, Cg, KH * KW)            # reshape: a weight view need not be viewable
    # int8: one activation scale over the whole input (the recipe's per-tensor scale), shared by every group; the
    # im2col matrix of a group (or of a strided conv, which skips pixels) would give another
    sa = quant.symmetric_scale(x) if mode.engine.precision == "int8" else None
    if mode.conv_k_order == "hwc":
        cols = cols.transpose(2, 3)
        wg = wg.transpose(2, 3)
    outs = []
    for g in range(groups):
        a = cols[:, g].reshape(N, Cg * KH * KW, L).transpose(1, 2).reshape(N * L, Cg * KH * KW)
        b = wg[g].reshape(OCg, Cg * KH * KW).t()
        bg = None if bias is None else bias[g * OCg:(g + 1) * OCg]
        outs.append(mode.addmm2d(bg, a, b, a_scale=sa))
    y = torch.cat(outs, dim=1) if groups > 1 else outs[0]               # (N * L, OC)
    # the output's memory format is torch's: channels_last when the input or the weight suggests it (ATen's
    # _determine_backend_memory_format for the CPU kernels), else contiguous NCHW; the values do not depend on it
    fmt = (torch.channels_last if torch.channels_last in (_suggest_memory_format(x), _suggest_memory_format(w))
           else torch.contiguous_format)
    y = y.view(N, OH, OW, OC).permute(0, 3, 1, 2).contiguous(memory_format=fmt).to(_out_dtype(x, w))
    return y[0] if unbatched else y


def _suggest_memory_format(t: torch.Tensor):
    """``Tensor.suggest_memory_format()`` (C++ only; torch._prims_common has the Python equivalent)."""
    try:
        from torch._prims_common import suggest_memory_format
    except ImportError:                     # an older torch: NHWC strides that are not also NCHW-contiguous
        return (torch.channels_last if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last)
                and not t.is_contiguous() else torch.contiguous_format)
    return suggest_memory_format(t)


_HANDLERS = {"mm": _mm, "addmm": _addmm, "addmm_": _addmm, "bmm": _bmm, "baddbmm": _baddbmm,
             "baddbmm_": _baddbmm, "mv": _mv, "addmv": _addmv, "addmv_": _addmv, "dot": _dot, "vdot": _dot,
             "convolution": _convolution,
             "_scaled_dot_product_flash_attention_for_cpu": _flash_cpu}


def emulate(engine: str | Engine, *, precision: str | None = None, model=None, weight_scales: str = "channel",
            backend: str = "auto", fallback: str = "raise", bias: str = "epilogue",
            conv_k_order: str = "chw", **unknown) -> EmulateMode:
    """A context manager under which PyTorch's GEMMs compute as ``engine`` does.

    ``engine``: ``"amx:<cpu>"`` (``amx:spr``, ``amx:gnr``...) or ``"xmx:<platform>"`` (``xmx:pvc``, ``xmx:dg2``...);
    ``precision``: input precision of the GEMMs, ``"bf16"`` (default), ``"fp16"`` (AMX-FP16 CPUs, XMX),
    ``"tf32"`` (XMX platforms with tf32), ``"int8"`` (symmetric W8A8, :mod:`systolic.torch.quant`);
    ``model``: XMX float numerics model (``"stage"`` default, ``"sequential"``, ``"exact"``, ``"block(L,F)"``);
    ``weight_scales``: int8 weight scales per output ``"channel"`` (default) or per ``"tensor"``;
    ``backend``: ``"auto"`` (CUDA tensors on the engine's CUDA backend), ``"cpu"``, ``"cuda"``;
    ``fallback``: ``"raise"`` (default: an unmodelled matrix op raises UnsupportedOperation) or ``"native"``
    (it runs in plain torch and is counted in ``.fallbacks``); ``bias``: ``"epilogue"`` (fp32 add after the GEMM,
    as oneDNN's bias post-op) or ``"accumulator"`` (the bias is the GEMM's initial C); ``conv_k_order``:
    ``"chw"`` or ``"hwc"`` (the K order of the conv GEMM).

    >>> import torch, systolic.torch as st
    >>> with st.emulate("amx:spr"):
    ...     y = torch.ones(2, 3) @ torch.full((3, 2), 1 / 3)    # 1/3 rounded to bf16 (0.333984375), summed in fp32
    >>> y[0, 0].item()
    1.001953125
    """
    if unknown:     # named, with the options there are (Python's own TypeError names neither rule nor choices)
        raise InvalidValue(f"emulate has no option {', '.join(map(repr, sorted(unknown)))}",
                           rule="emulate options: precision, model, weight_scales, backend, fallback, bias, "
                                "conv_k_order", values={"options": sorted(unknown)})
    eng = parse_engine(engine, precision=precision, model=model, weight_scales=weight_scales, backend=backend)
    return EmulateMode(eng, fallback=fallback, bias=bias, conv_k_order=conv_k_order)
