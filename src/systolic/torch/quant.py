"""The int8 recipe: symmetric scales, quantise in torch, int8 GEMM on the engine (int32, exact), dequantise in fp32.

This is the W8A8 symmetric recipe of the common frameworks (torch.ao's ``per_channel_symmetric`` qint8 weight
observer; activations with one symmetric per-tensor scale computed at run time, i.e. *dynamic* quantisation):

* ``scale = max|x| / 127`` in fp32 over the tensor (activations, and weights with ``weight_scales="tensor"``)
  or over each output channel = column of B (weights, ``weight_scales="channel"``); an all-zero
  tensor/channel gets scale 1;
* ``q = clamp(round_half_even(x / scale), -127, 127)`` as int8 (``torch.round`` rounds half to even; the
  division is one fp32 IEEE division);
* ``acc = A_q @ B_q`` on the engine: int32, exact (TDPBSSD on AMX, s8 x s8 DPAS on XMX, wrapping modulo 2^32
  as both do; it cannot wrap for K < 2^17 with |q| <= 127);
* ``y = float32(acc) * (scale_a * scale_b)``: the int32 -> fp32 conversion (RNE, exact below 2^24) and one fp32
  product with the fp32 product of the two scales; a bias is added after this (fp32), in the caller.

Differences from torch.ao's own dynamic quantisation (a modelling choice, stated): torch.ao quantises
activations asymmetrically to uint8 with a zero point (and ``reduce_range`` on x86); here both sides are
symmetric int8, which is what the AMX TDPBSSD and the XMX s8 x s8 DPAS take without a zero-point correction.
A GEMM whose both operands are activations (``bmm``: attention) uses per-tensor scales on both sides, per batch
element; a ``bmm`` whose B is one matrix broadcast over the batch (stride 0: what ``nn.Linear`` on a
non-contiguous 3-D input becomes) is one GEMM with B as the weight, as for the contiguous input. A convolution's
activation scale is taken over its whole input tensor, once, and shared by every group.
"""

from __future__ import annotations

import torch

__all__ = ["symmetric_scale", "quantize", "int8_gemm", "QMAX"]

QMAX = 127


def symmetric_scale(x: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """fp32 scale(s) ``max|x| / 127``: one per tensor (``dim=None``) or one per slice along ``dim`` (kept)."""
    ax = x.detach().to(torch.float32).abs()
    if dim is None:
        m = ax.amax() if ax.numel() else torch.zeros((), dtype=torch.float32)
    elif ax.size(dim) == 0:     # an empty K: amax has nothing to reduce; the scale is 1, as for an all-zero slice
        shape = list(ax.shape)
        shape[dim] = 1
        m = torch.zeros(shape, dtype=torch.float32)
    else:
        m = ax.amax(dim=dim, keepdim=True)
    if not torch.isfinite(m).all():
        from systolic.errors import InvalidValue
        raise InvalidValue("int8 quantisation needs finite inputs (max|x| is inf or NaN)",
                           rule="symmetric scale = max|x| / 127", values={"max": float(m.max())})
    # the division runs on the CPU: PyTorch's CUDA kernel divides by a Python number as a multiplication by its
    # reciprocal (BinaryDivTrueKernel.cu), which rounds differently from m / 127; the scales are few
    s = m.cpu() / QMAX
    return torch.where(s == 0, torch.ones_like(s), s).to(x.device)


def quantize(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``clamp(round_half_even(x / scale), -127, 127)`` as int8 (scale broadcasts; a tensor on x's device, so the
    division is IEEE division on either device, never a reciprocal multiplication)."""
    q = torch.round(x.to(torch.float32) / scale)
    return q.clamp_(-QMAX, QMAX).to(torch.int8)


def int8_gemm(engine, a: torch.Tensor, b: torch.Tensor, *, per_channel: bool,
              a_scale: torch.Tensor | None = None) -> torch.Tensor:
    """``a @ b`` by the recipe above on ``engine`` (a :class:`systolic.torch.engines.Engine`); fp32 result.

    ``a_scale``: the activation scale when ``a`` is only part of the activation tensor (a convolution's im2col
    matrix of one group, which also misses the pixels a stride skips): the caller computes it once over the whole
    tensor, so every group and every pixel share the one per-tensor scale of the recipe."""
    sa = symmetric_scale(a) if a_scale is None else a_scale
    sb = symmetric_scale(b, dim=0) if per_channel else symmetric_scale(b)
    qa, qb = quantize(a, sa), quantize(b, sb)
    acc = engine.raw(qa.contiguous(), qb.contiguous())
    return acc.to(torch.float32) * (sa.cpu() * sb.cpu()).to(acc.device)
