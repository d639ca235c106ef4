"""The XMX GEMM kernels' CUDA C source (``xmx.cu``, package data, compiled by NVRTC through
:mod:`systolic.gpu.runtime`) and the names of its template instantiations.

The source is a file of its own, apart from the Python driver (:mod:`systolic.gpu.xmx_kernels`): one text
with one digest, read by editors and CUDA tools as C. Every float operation is spelled out with an ``_rn``
intrinsic; NVRTC runs with ``--fmad=false --ftz=false`` (runtime.NVRTC_OPTIONS), so nothing is contracted or
flushed behind our back.

Kernels:

* ``xmx_decode`` -- 16-bit / tf32 bit patterns -> exact fp32 values, into a zero-padded M x Kp buffer,
  flushing input denormals when the platform's rule says so (the numbers of ``gemm._float_values``).
* ``xmx_fma32`` -- "sequential" (and tf32 "stage"): per output a chain of binary32 FMAs in K order, which is
  the model itself (docs/xmx.md: one product per step = IEEE 754 fusedMultiplyAdd in binary32).
* ``xmx_stage<T>`` -- "stage" with T = 2, 4, 8 products per systolic stage: binary64 FMAs, one rounding to
  24 bits per stage by Veltkamp's splitting, and the a-posteriori proof of ``systolic.xmx.native`` evaluated
  per element in the epilogue (flag = not proven).
* ``xmx_stage32<U, MINB, R, P, FX>`` -- bf16 "stage" (T = 2) on the FP32 pipe: each stage certified by
  rounding's monotonicity (RN(x + RD(p0 + p1)) == RN(x + RU(p0 + p1))), the rare uncertified ones recomputed
  exactly by the Boldo-Melquiond sum of three; zero and non-finite results flagged.
* ``xmx_stage_robust<T>`` -- one thread per flagged element: TwoSum cascade, error cascade and round-to-odd
  (the numpy path's algorithm, kernels.round_sum_fp32), with IEEE special values and the zero-sign rule;
  flags only three-level cancellation ("hard"), which the caller sends to the exact CPU path.
* ``xmx_stats_a`` / ``xmx_stats_b`` -- per K chunk of 16: the smallest power of two dividing every element
  (a lower bound from the exponent and the format's significant bits) and a power-of-two bound on the largest
  magnitude; and the same over the whole operand (xmx_stage32's precondition).
"""

from __future__ import annotations

from . import runtime

SOURCE = runtime.source("xmx.cu")  # the CUDA C text: src/systolic/gpu/xmx.cu (package data)

#: dynamic shared memory of xmx_stage: two buffers of A (16 x 64) and B (16 x 128) doubles, the (lsb, max) rows
#: and the maxima as doubles
S_SMEM = 2 * 16 * (64 + 128) * 8 + 2 * (64 + 128) * 8 + 2 * (64 + 128) * 8

#: the stage kernel's variant (JV, MINB): JV of a thread's 8 columns rounded by Veltkamp on the DP pipe, the
#: others on the integer pipe (JV = -1: all by the magic constant, rn24m); MINB blocks per SM asked of the
#: compiler (2 caps registers at 128)
STAGE_VARIANT = (8, 1)
#: the variants compiled for T = 2 (benchmarks time them); T = 4 and 8 get STAGE_VARIANT only
STAGE_VARIANTS = ((8, 1), (8, 2), (-1, 1), (-1, 2))

#: the fp32-pipe stage kernel's variants (U: unroll of its stages per step, MINB: blocks per SM asked of the
#: compiler, R: rows of outputs per thread, 8, 4 or 2: blocks of 16 R x 128, or 0: xmx_stage32tc, the first
#: products from the tensor cores, 4 x 8 outputs per thread in 64 x 128 blocks; P: software pipelining by a
#: row, FX: outputs per test and redo group, 8 or 4, or 0: a test per row, then only the outputs whose bounds
#: differ are redone, picked by selects, redo_picked; xmx_stage32tc always does so; an optional sixth, NB:
#: tiles of F_BK per barrier, default 1) and the one used for T = 2 operands of at most STAGE32_MAX_SIG
#: significant bits (bf16: about 0.08% of stages redone; fp16's 11 bits: 2%, where the binary64 kernel is
#: faster). H100, bf16, kernel alone (benchmarks/bench_gpu_stage_variants.py, sixth session): the default
#: 91.9 ms at 8192^3 and 12.24 ms at 4096^3; the former default (2, 2, 4, 0, 8) 94.4 and 12.57; the
#: tensor-core variant 102.1 and 14.17 (benchmarks/results/gpu_xmx.md).
STAGE32_VARIANTS = ((2, 2, 4, 0, 0, 2), (2, 2, 4, 0, 8), (2, 2, 4, 0, 8, 2), (4, 2, 4, 0, 0), (2, 2, 2, 0, 8, 3),
                    (4, 2, 0, 0, 0))
STAGE32_VARIANT = (2, 2, 4, 0, 0, 2)
#: the FMUL variant taken where a tensor-core variant is chosen but its operand conditions fail
STAGE32_PLAIN = (2, 2, 4, 0, 0, 2)
STAGE32_MAX_SIG = 8


def stage32_kernel(variant, mode: int = 0) -> tuple[str, int]:
    """The C++ name of a fp32-pipe stage variant and the rows of its blocks (128 columns each); ``mode``: the
    tensor-core kernel's operand type, 0 bf16, 1 fp16."""
    u, mb, r, p, fx, *nb = variant
    if r == 0:
        return f"xmx_stage32tc<{u}, {mb}, {mode}>", 64
    return f"xmx_stage32<{u}, {mb}, {r}, {p}, {fx}{''.join(f', {x}' for x in nb)}>", 16 * r


def _stage32_names(variant) -> tuple[str, ...]:
    return tuple(dict.fromkeys(stage32_kernel(variant, h)[0] for h in (0, 1)))


#: the C++ name expressions of the kernels the default choices run (compiled on first use: one NVRTC module)
NAMES = tuple(dict.fromkeys(
    _stage32_names(STAGE32_VARIANT) + _stage32_names(STAGE32_PLAIN)
    + tuple(f"xmx_stage<{t}, {STAGE_VARIANT[0]}, {STAGE_VARIANT[1]}>" for t in (2, 4, 8))
    + tuple(f"xmx_stage_robust<{t}>" for t in (1, 2, 4, 8))))
#: every instantiation, the variants benchmarks and tests choose included (a second module, compiled only when
#: one of them is asked for)
ALL_NAMES = tuple(dict.fromkeys(
    NAMES + sum((_stage32_names(v) for v in STAGE32_VARIANTS), ())
    + tuple(f"xmx_stage<2, {jv}, {mb}>" for jv, mb in STAGE_VARIANTS)))
