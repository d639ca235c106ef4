"""Engines as PyTorch sees them: one 2-D GEMM on torch tensors, computed by ``systolic.amx.matmul`` or
``systolic.xmx.matmul``, with the input conversion (RNE to bf16/fp16, tf32 in the engine) or the int8
quantisation recipe (:mod:`systolic.torch.quant`) a framework applies before it issues the GEMM.

An engine is named ``"amx:<cpu>"`` (a :data:`systolic.amx.CPUS` name or alias: ``spr``, ``emr``, ``gnr``...)
or ``"xmx:<platform>"`` (``pvc``, ``dg2``, ``bmg``, ``lnl``, ``xe3p`` and their aliases); a SYCL device name or
architecture of the family is accepted too (``amx:intel_cpu_spr``, ``xmx:arl``, ``xmx:intel_gpu_pvc``: issue 27,
:func:`systolic.sycl.devices.engine_device`), and the engine records the canonical CPU model / platform. Everything is checked
when the engine is built, so a bad name or an instruction the device lacks fails before any model runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from systolic.backend_registry import resolve as resolve_backend
from systolic.errors import InvalidValue, UnsupportedCombination, UnsupportedOperation
from systolic.torch import quant

__all__ = ["Engine", "parse_engine", "PRECISIONS"]

#: input precisions an engine may be asked for (torch name -> engine name)
PRECISIONS = ("bf16", "fp16", "tf32", "int8")
_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "s8": "int8", "qint8": "int8"}
#: torch dtypes of the operands a GEMM under emulation accepts (the model's dtype); fp64 has no engine input
FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _exact_input(x: torch.Tensor, precision: str) -> torch.Tensor:
    """A float64 tensor rounded once (RNE) to bf16 / fp16, or to tf32 values in float32, on the host by
    :func:`systolic.types.convert`: torch's ``Tensor.to`` goes through float32 and rounds twice (1 + 2**-8 +
    2**-40 -> bf16 1.0, where the value is above the midpoint and rounds to 1 + 2**-7)."""
    from systolic import types as T
    bits = np.ascontiguousarray(T.convert(x.detach().to("cpu").numpy(), precision))
    if precision == "bf16":
        out = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
    else:                                   # fp16: numpy float16; tf32: float32 with the low 13 bits zero
        out = torch.from_numpy(bits)
    return out.to(x.device).contiguous()


def _norm_precision(p: str) -> str:
    key = str(p).lower()
    key = _ALIASES.get(key, key)
    if key not in PRECISIONS:
        raise InvalidValue("unknown input precision", rule=f"one of {PRECISIONS}", values={"precision": p})
    return key


@dataclass(frozen=True)
class Engine:
    """A matrix engine and the input precision its GEMMs run at.

    ``kind``: ``"amx"`` or ``"xmx"``; ``device``: the CPU model or GPU platform (canonical name);
    ``precision``: ``bf16``, ``fp16``, ``tf32`` (XMX only) or ``int8``; ``model``: the XMX float numerics
    model (``stage``, ``sequential``, ``exact``, ``block(L,F)``); ``weight_scales``: ``"channel"`` or
    ``"tensor"`` for int8 weights; ``backend``: ``"auto"``, ``"cpu"`` or ``"cuda"``.
    """

    kind: str
    device: str
    precision: str = "bf16"
    model: str | None = None
    weight_scales: str = "channel"
    backend: str = "auto"
    label: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        extra = f" {self.model}" if self.kind == "xmx" and self.precision != "int8" else ""
        return f"{self.kind}:{self.device} {self.precision}{extra}"

    # ------------------------------------------------------------------ one GEMM
    def gemm(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None, *,
             b_is_weight: bool = True, a_scale: torch.Tensor | None = None) -> torch.Tensor:
        """``c + a @ b`` for 2-D float tensors a (M, K), b (K, N), as this engine computes it; float32 result.

        Float precisions: a and b are rounded to the engine's input type (RNE, as ``Tensor.to`` does), ``c``
        (float32, optional) is the initial accumulator. int8: see :func:`systolic.torch.quant.int8_gemm`
        (``c`` must be None: an int32 accumulator cannot start at a float bias).
        """
        if self.precision == "int8":
            if c is not None:
                raise UnsupportedOperation("an int8 GEMM cannot start its int32 accumulator at a float value",
                                           rule="int8: bias is added after dequantisation",
                                           values={"engine": self.name})
            return quant.int8_gemm(self, a, b, per_channel=b_is_weight and self.weight_scales == "channel",
                                   a_scale=a_scale)
        a_in, b_in = self.to_input(a), self.to_input(b)
        c_in = None if c is None else c.to(torch.float32).contiguous()
        return self.raw(a_in, b_in, c_in)

    def to_input(self, x: torch.Tensor) -> torch.Tensor:
        """x rounded to the engine's input type: RNE (``Tensor.to``), as oneDNN and the GPU runtimes convert;
        tf32 stays float32 here and the XMX engine rounds it (RNE, systolic.xmx.gemm._tf32_rne). float64
        tensors are rounded once from their exact values (:func:`_exact_input`)."""
        if x.dtype == torch.float64 and self.precision in ("bf16", "fp16", "tf32"):
            return _exact_input(x, self.precision)
        if self.precision == "bf16":
            return x.to(torch.bfloat16).contiguous()
        if self.precision == "fp16":
            return x.to(torch.float16).contiguous()
        return x.to(torch.float32).contiguous()

    def raw(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
        """The engine's matmul on tensors already in its input type (bf16/fp16/float32 for tf32/int8)."""
        fn, kwargs = self._engine_call()
        if self.backend == "cuda" or (self.backend == "auto" and (a.is_cuda or b.is_cuda)):
            return self._cuda(fn, kwargs, a, b, c)
        # the CPU path: CPU tensors, and CUDA tensors under backend="cpu" (copied to the host and the result back)
        out = fn(_to_numpy(a), _to_numpy(b), None if c is None else _to_numpy(c), backend="cpu", **kwargs)
        return torch.from_numpy(np.ascontiguousarray(out)).to(a.device)

    def _engine_call(self):
        if self.kind == "amx":
            from systolic.amx.gemm import matmul
            return matmul, {"device": self.device}
        from systolic.xmx.gemm import matmul
        kw = {"device": self.device, "model": self.model or "stage"}
        if self.precision == "tf32":
            kw["precision"] = "tf32"
        return matmul, kw

    def _cuda(self, fn, kwargs, a, b, c):
        """The engine's CUDA backend: CUDA tensors go in as they are and the result comes back as a CUDA tensor;
        CPU tensors (backend="cuda" asked for them) go in as numpy and come back as a CPU tensor."""
        if not a.is_cuda:
            a, b, c = _to_numpy(a), _to_numpy(b), None if c is None else _to_numpy(c)
        out = fn(a, b, c, backend="cuda", **kwargs)     # results come back in the kind of the first GPU input
        if isinstance(out, torch.Tensor):
            return out.to(torch.float32 if out.is_floating_point() else torch.int32)
        return torch.from_numpy(np.ascontiguousarray(out))


def _to_numpy(x: torch.Tensor) -> np.ndarray:
    """A tensor as a host numpy array, 16-bit floats as ml_dtypes/float16 arrays (bit patterns unchanged).

    Not :func:`systolic.gpu.runtime.to_numpy`: that one brings GPU arrays over through CuPy (which a machine
    with CUDA tensors under backend="cpu" need not have) and leaves host objects to ``np.asarray``, which
    refuses bfloat16 tensors."""
    x = x.detach().cpu().contiguous()
    if x.dtype == torch.bfloat16:
        import ml_dtypes
        return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return x.numpy()


def parse_engine(engine: str | Engine, *, precision: str | None = None, model: str | None = None,
                 weight_scales: str = "channel", backend: str = "auto") -> Engine:
    """``"amx:spr"``, ``"xmx:pvc"``... plus options -> a checked :class:`Engine`.

    Checks here, before any model runs: the device exists; its instruction set has the precision (AMX fp16 needs
    AMX-FP16, e.g. graniterapids; tf32 needs an XMX platform with tf32 DPAS, e.g. pvc); ``model`` only for XMX
    float GEMMs.
    """
    if isinstance(engine, Engine):
        return engine
    if not isinstance(engine, str) or ":" not in engine:
        raise InvalidValue("an engine is named 'amx:<cpu>' or 'xmx:<platform>'", values={"engine": engine})
    kind, _, dev = engine.partition(":")
    kind = kind.strip().lower()
    p = _norm_precision("bf16" if precision is None else precision)   # "or" would ask an array its truth
    if weight_scales not in ("channel", "tensor"):
        raise InvalidValue("weight_scales is 'channel' or 'tensor'", values={"weight_scales": weight_scales})
    resolve_backend(backend)                         # an unknown name is the engines' own InvalidValue
    if kind == "amx":
        from systolic.amx.cpu import get_cpu
        from systolic.sycl.devices import engine_device
        cpu = get_cpu(engine_device("amx", dev))      # CPU aliases and SYCL names (intel_cpu_spr) alike
        if model is not None:
            raise InvalidValue("model= is an XMX option (AMX float numerics are fixed by the SDM)",
                               values={"engine": engine, "model": model})
        need = {"bf16": "tdpbf16ps", "fp16": "tdpfp16ps", "int8": "tdpbssd"}.get(p)
        if need is None:
            raise UnsupportedCombination("AMX has no tf32 input", rule="AMX TMUL: int8, bf16, fp16 (AMX-FP16)",
                                         values={"engine": engine, "precision": p})
        if not cpu.supports(need):
            raise UnsupportedCombination(f"{need.upper()} is not available on {cpu.name}",
                                         rule="CPUID feature flag of the instruction (fp16: AMX-FP16, e.g. "
                                              "graniterapids)", values={"cpu": cpu.name, "precision": p})
        return Engine("amx", cpu.name, p, None, weight_scales, backend)
    if kind == "xmx":
        from systolic.xmx.models import get_model
        from systolic.xmx.platform import get_platform
        from systolic.sycl.devices import engine_device
        plat = get_platform(engine_device("xmx", dev))  # platform aliases and SYCL names (arl, intel_gpu_pvc)
        dp = {"int8": "s8"}.get(p, p)
        if not plat.supports(dp):
            raise UnsupportedCombination(f"{plat.name} DPAS does not take {p}",
                                         rule=f"{plat.name} DPAS precisions: {sorted(plat.precisions)}",
                                         values={"platform": plat.name, "precision": p})
        if p == "int8" and model is not None:
            raise InvalidValue("model= applies to float GEMMs (integer DPAS is exact)",
                               values={"engine": engine, "model": model})
        m = None
        if p != "int8":
            m = plat.default_model if model is None else model
            get_model(m, plat)                       # validates the name / parameters now
        return Engine("xmx", plat.name, p, m, weight_scales, backend)
    raise InvalidValue("unknown engine kind", rule="'amx:<cpu>' or 'xmx:<platform>'", values={"engine": engine})
