"""DPAS and DPASW on a register file: the spec path.

:func:`dpas` is a literal transcription of the pseudo-code of visa-DPAS.md
("Semantics", IGC ``documentation/visa/instructions/DPAS.md``), one channel and
one element at a time; :func:`dpasw` adds the Src2 sharing of DPASW.md. The
rules (legal types, alignment, exec size) are checked first by
:func:`systolic.xmx.rules.check`. Float stages are combined by the named
numerics model (:mod:`systolic.xmx.models`) because the manual leaves their
rounding open.

Operands are byte offsets into :class:`~systolic.xmx.grf.GRF` (raw operands:
variable base + offset). ``src0=None`` is the null operand (C = 0). All sources
are read before Dst is written.
"""

from __future__ import annotations

import math
from collections.abc import MutableMapping
from fractions import Fraction

import numpy as np

from .. import counters, fpenv
from .. import types as T
from ..errors import IllegalInstruction, InvalidValue
from ..numerics.formats import FP32
from ..numerics.rounding import decode, round_fraction
from ..observe import Observer, from_trace
from ..vocabulary import check_path, renamed
from . import models as M
from .checks import _check_footprints, _grf, _index, int_field, validate  # noqa: F401 (int_field: re-exported)
from .grf import GRF
from .platform import Platform, get_platform
from .rules import DpasShape, check

__all__ = ["dpas", "dpasw", "element_value", "fp32_to_acc_bits"]


def element_value(bits: int, precision: str, *, flush: bool = False):
    """The value of one Src1/Src2 element: a Python int (integer precisions) or an exact float.

    ``flush``: a denormal becomes a zero of the same sign (the platform/model denormal rule).
    """
    t = T.get(precision)
    if t.fmt is None:
        if t.signed and bits >> (t.bits - 1):
            return bits - (1 << t.bits)
        return bits
    fmt = t.fmt
    raw = bits >> (fmt.container_bits - fmt.bits)  # tf32: the top 19 of 32 bits
    if flush and (raw & fmt.exp_mask) == 0 and (raw & fmt.man_mask) != 0:
        return -0.0 if raw & fmt.sign_bit else 0.0
    return decode(bits, fmt)


def _acc_value(bits: int, t: str):
    """The value of one Src0 element of type ``t`` (int32/u32 as the raw 32 bits; floats exact)."""
    if t in ("int32", "u32"):
        return bits
    return decode(bits, T.get(t).fmt)


def fp32_to_acc_bits(bits32: int, t: str, model: M.NumericsModel) -> int:
    """Store an fp32 accumulator as Dst type ``t``: fp32 as is, bf16/fp16 rounded to nearest even."""
    if t == "fp32":
        return bits32
    fmt = T.get(t).fmt
    v = decode(bits32, FP32)
    if math.isnan(v):
        return fmt.exp_mask | (1 << (fmt.man_bits - 1))  # the default quiet NaN
    if math.isinf(v):
        return (fmt.sign_bit if v < 0 else 0) | fmt.exp_mask
    return round_fraction(Fraction(v), fmt, "rne", negative_zero=bool(bits32 >> 31))


class _Operands:
    """Bit-level readers of the four operands, in the pseudo-code's notation."""

    def __init__(self, grf: GRF, s: DpasShape, dst, src0, src1, src2, src2_grf_map=None):
        self.grf, self.s = grf, s
        self.dst, self.src0, self.src1, self.src2 = dst, src0, src1, src2
        self.src2_grf_map = src2_grf_map  # DPASW: Src2.R[j] -> (grf, byte offset)

    def src1_dw(self, m: int, i: int) -> int:
        """Src1.R[m].DW[i]."""
        off = self.src1 + m * self.grf.grf_bytes + 4 * i
        return int(self.grf.dwords(off, 1)[0])

    def src1_elem(self, m: int, i: int, n: int) -> int:
        """Bits of element n of Src1.R[m].DW[i] (lower element in lower bits)."""
        b = self.s.src1_bits
        return (self.src1_dw(m, i) >> (n * b)) & ((1 << b) - 1)

    def src2_elem(self, k: int) -> int:
        """Bits of element k of Src2 (a 1-D, row-major array of Src2PrecisionInBits elements)."""
        b = self.s.src2_bits
        bit = k * b
        byte = bit // 32 * 4
        if self.src2_grf_map is None:
            dw = int(self.grf.dwords(self.src2 + byte, 1)[0])
        else:
            g, off = self.src2_grf_map(byte)
            dw = int(g.dwords(off, 1)[0])
        return (dw >> (bit % 32)) & ((1 << b) - 1)

    def src0_row(self, r: int) -> list:
        """Src0.R[r]: exec_size accumulator values (null Src0 = zeros)."""
        s = self.s
        if self.src0 is None:
            return [0 if s.kind == "int" else 0.0] * s.exec_size
        t = s.src0_type
        nb = T.get(t).bits // 8
        raw = self.grf.read(self.src0 + r * s.row_bytes(t), s.exec_size * nb)
        words = raw.view({4: "<u4", 2: "<u2"}[nb])
        return [_acc_value(int(w), t) for w in words]

    def write_dst_row(self, r: int, bits: list[int]) -> None:
        s = self.s
        t = s.dst_type
        nb = T.get(t).bits // 8
        self.grf.write(self.dst + r * s.row_bytes(t), np.array(bits, dtype={4: "<u4", 2: "<u2"}[nb]))


def _check_trace(trace, s: DpasShape, opcode: str = "dpas") -> None:
    """The ``trace=`` hook names one channel of D: a dict with integer ``row`` in 0..RC-1 and ``col`` in
    0..exec_size-1 (DPASW: and ``eu`` 0 or 1, default 0). A key missing, of the wrong type or out of range would
    otherwise fail bare inside the loop or, worse, record nothing without a word."""
    if trace is None:
        return
    rule = (f"trace: a dict with row in 0..{s.rc - 1} and col in 0..{s.exec_size - 1}"
            + (", eu 0 or 1 (the fused EU pair, DPASW.md)" if opcode == "dpasw" else ""))
    if not isinstance(trace, MutableMapping):
        raise InvalidValue(f"{opcode} trace must be a dict the channel's steps are recorded into", rule=rule,
                           values={"trace": type(trace).__name__})
    limits = {"row": s.rc, "col": s.exec_size}
    if opcode == "dpasw":
        limits["eu"] = 2
    for key, limit in limits.items():
        if key not in trace:
            if key == "eu":
                continue                             # default 0
            raise InvalidValue(f"{opcode} trace needs {key!r}", rule=rule, values={"missing": key})
        v = trace[key]
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or not 0 <= v < limit:
            raise InvalidValue(f"{opcode} trace {key}={v!r} is not an integer in 0..{limit - 1}", rule=rule,
                               values={key: v, "limit": limit})


def _execute(grf: GRF, s: DpasShape, ops: _Operands, model: M.NumericsModel,
             observer: Observer | None = None) -> None:
    """visa-DPAS.md "Semantics", step by step.

    ``observer`` (:mod:`systolic.observe`; the explorer's ``explain``): for the channels it watches, each stage's
    element values and its running sum (int) or exact products (float), the model's sums
    (:func:`systolic.xmx.models.accumulate`) and the result are announced as they are computed.
    """
    OPS_PER_CHAN = s.ops_per_chan
    SRC1_OPERANDS_PER_CHAN = s.src1_operands_per_chan  # = 32 / (OPS_PER_CHAN * Src1PrecisionInBits)
    Exec_size = s.exec_size
    SD, RC = s.sd, s.rc
    flush1 = s.kind == "float" and model.flushes(s.src1_precision, s.platform)
    flush2 = s.kind == "float" and model.flushes(s.src2_precision, s.platform)

    results = []
    k = 0
    for r in range(RC):
        temp = ops.src0_row(r)                      # temp = Src0.R[r]
        stages = [[] for _ in range(Exec_size)]     # float: the exact products of each stage, per channel
        for d in range(SD):
            m = d // SRC1_OPERANDS_PER_CHAN         # to select GRF
            n = (d % SRC1_OPERANDS_PER_CHAN) * OPS_PER_CHAN  # in units of element
            for i in range(Exec_size):              # for each channel
                a = [element_value(ops.src2_elem(k + j), s.src2_precision, flush=flush2)
                     for j in range(OPS_PER_CHAN)]  # Src2.k[OPS-1:0]
                b = [element_value(ops.src1_elem(m, i, n + j), s.src1_precision, flush=flush1)
                     for j in range(OPS_PER_CHAN)]  # Src1.R[m].DW[i].n[OPS-1:0]
                before = temp[i]
                if s.kind == "int":
                    # temp.DW[i] += dot4/dot8(...): a 32-bit register, so the sum wraps modulo 2**32
                    temp[i] = (temp[i] + sum(x * y for x, y in zip(b, a))) & 0xFFFFFFFF
                else:
                    # temp.F[i] += dot2/dot4/dot8/tf32 product: rounding per the numerics model
                    stages[i].append([M.exact_product(y, x) for x, y in zip(b, a)])
                if observer and observer.watches(r, i):
                    observer.step(r, i, c=before, stage=d,
                                  k=[k - r * SD * OPS_PER_CHAN + j for j in range(OPS_PER_CHAN)], a=a, b=b,
                                  **({"acc": temp[i]} if s.kind == "int" else {"products": stages[i][-1]}))
            k += OPS_PER_CHAN
        if s.kind == "int":
            out = [t & 0xFFFFFFFF for t in temp]
        else:
            out = [fp32_to_acc_bits(M.accumulate(model, float(temp[i]), stages[i],
                                                 trace=observer.sums(r, i) if observer else None),
                                    s.dst_type, model)
                   for i in range(Exec_size)]
        if observer:
            for i in range(Exec_size):
                if observer.watches(r, i):
                    observer.result(r, i, result_bits=out[i])
        results.append(out)                          # dst.R[r] = temp
    for r, out in enumerate(results):                # all sources were read before any write
        ops.write_dst_row(r, out)


@fpenv.guarded
def dpas(grf: GRF, *, dst: int, src0: int | None, src1: int, src2: int, dst_type="fp32", src0_type=None,
         src1_precision, src2_precision, sd: int = 8, rc: int = 8, exec_size: int | None = None,
         device: str | Platform | None = None, model=None, trace: dict | None = None,
         observer: Observer | None = None, path: str = "spec", **renamed_keywords) -> DpasShape:
    """Execute ``DPAS.W.A.SD.RC (exec_size) dst src0 src1 src2`` on ``grf``.

    ``dst``/``src0``/``src1``/``src2``: byte offsets; ``src0=None`` is the null
    operand; ``dst_type``/``src0_type``: D/UD/F/BF/HF (systolic.types names or
    aliases; ``src0_type`` defaults to ``dst_type``); precisions: u2 s2 u4 s4 u8
    s8 bf hf tf32 bf8 hf8 e2m1. ``model``: a numerics model or its name (float
    DPAS only; default the platform's). ``trace``: ``{"row": r, "col": i}`` to record how D[r, i] is
    computed (``systolic layout explain``); ``observer``: any :class:`systolic.observe.Observer`, told each
    watched channel's stages and result. ``device``: the GPU platform (default: the register file's).
    ``path``: ``"spec"`` (this transcription, the default) or ``"fast"`` (the vectorised kernels of
    :mod:`systolic.xmx.kernels`, proven bit-identical; it keeps no trace). ``platform=`` is the older name of
    ``device=``, and ``xmx.dpas_fast(...)`` of ``path="fast"`` (DeprecationWarning). Returns the validated shape.
    Source: visa-DPAS.md "Semantics".
    """
    if renamed_keywords:                 # platform=: the older name of device= (systolic.vocabulary)
        device = renamed(renamed_keywords, {"platform": "device"}, "xmx.dpas", stacklevel=4, device=device)["device"]
    if check_path(path, "xmx.dpas") == "fast":
        _no_trace(trace, observer, "xmx.dpas")
        from .kernels import dpas_fast
        return dpas_fast(grf, dst=dst, src0=src0, src1=src1, src2=src2, dst_type=dst_type, src0_type=src0_type,
                         src1_precision=src1_precision, src2_precision=src2_precision, sd=sd, rc=rc,
                         exec_size=exec_size, device=device, model=model)
    grf, s, (dst, src0, src1, src2), mdl = validate(
        grf, dst=dst, src0=src0, src1=src1, src2=src2, dst_type=dst_type, src0_type=src0_type,
        src1_precision=src1_precision, src2_precision=src2_precision, sd=sd, rc=rc, exec_size=exec_size,
        platform=device, model=model)
    _check_trace(trace, s)
    _execute(grf, s, _Operands(grf, s, dst, src0, src1, src2), mdl, from_trace(trace, observer, "stages"))
    counters.count_dpas(s, "spec")
    return s


def _no_trace(trace, observer, where: str) -> None:
    """The fast path computes whole registers at once: a trace or an observer needs the spec path."""
    if trace is not None or observer is not None:
        raise InvalidValue(f"{where}: path='fast' keeps no trace; trace= / observer= need path='spec'",
                           rule="tracing watches the spec path's steps (systolic.observe)",
                           values={"path": "fast", "trace": trace, "observer": type(observer).__name__
                                   if observer is not None else None})


def dpasw_split(s: DpasShape) -> tuple[int, int]:
    """(NGrf_EU0, NGrf_EU1): Src2 GRFs read from each EU of the fused pair (DPASW.md, 32-byte GRFs)."""
    src2_size = s.src2_bits * s.ops_per_chan * s.rc  # ((bits * OPS) / 8) * 8 * RC bytes
    ngrf = (src2_size + 32 - 1) // 32
    eu0 = (ngrf + 1) // 2
    return eu0, ngrf - eu0


@fpenv.guarded
def dpasw(grf: GRF, *, pair: GRF, dst: int, src0: int | None, src1: int, src2: int, dst_type="fp32",
          src0_type=None, src1_precision, src2_precision, sd: int = 8, rc: int = 8, exec_size: int | None = None,
          device: str | Platform | None = None, model=None, trace: dict | None = None,
          observer: Observer | None = None, observer_eu: int = 0, **renamed_keywords) -> DpasShape:
    """Execute DPASW on a fused EU pair: ``grf`` is EU0's register file, ``pair`` EU1's.

    Both EUs compute ``dst = src0 + A x B`` with their own Dst, Src0 and Src1;
    A (Src2) is shared: its first NGrf_EU0 GRFs come from EU0's Src2, the rest
    from EU1's Src2 (DPASW.md "Semantics"). XeHP only; Dst/Src0 D, UD or F.
    ``trace``: as :func:`dpas`'s, with ``"eu"`` (0 or 1, default 0) naming whose D[row, col] is recorded
    (``systolic layout explain dpasw``); record-only. ``observer``: as :func:`dpas`'s, told EU ``observer_eu``'s
    channels. ``device``: the GPU platform (default: the register file's); ``platform=`` is its older name
    (DeprecationWarning). DPASW has the spec path only.
    """
    if renamed_keywords:                 # platform=: the older name of device= (systolic.vocabulary)
        device = renamed(renamed_keywords, {"platform": "device"}, "xmx.dpasw", stacklevel=4,
                         device=device)["device"]
    grf = _grf(grf)
    sd, rc = int_field(sd, "sd", "DPASW"), int_field(rc, "rc", "DPASW")
    exec_size = None if exec_size is None else int_field(exec_size, "exec_size", "DPASW")
    P = get_platform(device) if device is not None else grf.platform
    if not isinstance(pair, GRF) or pair.grf_bytes != grf.grf_bytes:
        raise IllegalInstruction("DPASW needs the register file of the paired EU",
                                 rule="DPASW.md: hardware threads must be paired (EU0, EU1)",
                                 values={"pair": repr(pair)})
    dst, src0, src1, src2 = (_index(dst, "dst"), _index(src0, "src0"), _index(src1, "src1"), _index(src2, "src2"))
    s = check(P, opcode="dpasw", exec_size=exec_size, sd=sd, rc=rc, dst_type=dst_type, src0_type=src0_type,
              src1_precision=src1_precision, src2_precision=src2_precision, dst=dst, src0=src0, src1=src1,
              src2=src2)
    _check_trace(trace, s, "dpasw")
    watcher = from_trace(trace, observer, "stages")
    watched_eu = trace.get("eu", 0) if observer is None and trace is not None else observer_eu
    eu0, eu1 = dpasw_split(s)
    gb = grf.grf_bytes
    for g in (grf, pair):
        _check_footprints(g, s, dst, src0, src1, None, 0)
    grf.check(src2, eu0 * gb, "DPASW src2 (EU0 part)")
    pair.check(src2, eu1 * gb, "DPASW src2 (EU1 part)")

    def src2_map(byte: int):
        j = byte // gb  # Src2.R[j]
        if j < eu0:
            return grf, src2 + byte                       # Src2.R[j] = EU0.Src2.R[j]
        return pair, src2 + byte - eu0 * gb               # Src2.R[eu0 + i] = EU1.Src2.R[i]

    mdl = M.get_model(model, P)
    # read both EUs' operands before either writes (they execute together)
    snap0, snap1 = grf.copy(), pair.copy()

    def src2_map_snap(byte: int):
        g, off = src2_map(byte)
        return (snap0 if g is grf else snap1), off

    for eu, (g, snap) in enumerate(((grf, snap0), (pair, snap1))):
        ops = _Operands(snap, s, dst, src0, src1, src2, src2_map_snap)
        _execute(snap, s, ops, mdl, watcher if eu == watched_eu else None)
        g.write(dst, snap.read(dst, s.rc * s.row_bytes(s.dst_type)))
    counters.count_dpas(s, "spec")
    return s
