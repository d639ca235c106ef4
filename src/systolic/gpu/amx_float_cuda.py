"""The AMX float GEMM kernels (TDPBF16PS / TDPFP16PS chains) and their input conversions: the CUDA C source
(``amx_float.cu``, package data) and its variants' table.

The source is a file of its own, apart from the Python driver (:mod:`systolic.gpu.amx_kernels`). The
rules come from :mod:`systolic.amx.fp_x86` (SDM vol. 2 TDPBF16PS "FP32 FMA with DAZ=FTZ=1, RNE rounding";
SDM vol. 1 4.9.1.5 tininess after rounding; SDM vol. 1 Table 4-7 NaN priority); docs/gpu.md explains them.

Why the GPU's own fp32 FMA gives the x86 result:

* ``__fmaf_rn`` / ``__fadd_rn`` are single IEEE 754 operations rounded to nearest-even, with gradual underflow
  (NVRTC ``--ftz=false``; ``--fmad=false`` so nothing is contracted behind our back).
* DAZ: the conversion kernels flush bf16 denormal inputs, the GEMM flushes denormal C values on load; chain
  values are never denormal (FTZ below), so the FMAs never see one.
* FTZ with tininess after rounding: where the GPU returns a denormal or exactly +-2^-126 (the only results
  where gradual underflow and x86's "tiny after rounding to 24 bits" can disagree), the exact result is below
  2^-100 in magnitude, so its operands are small; the same operation on operands scaled by 2^64 is exact in
  its scaling and rounds in the normal range (unbounded exponent): the x86 result is +-2^-126 when that value
  is >= 2^-62, else a zero of the result's sign (the CPU kernel's fix, systolic.amx.gemm_jit). The check is
  compiled out (``_fast`` kernels) when the input exponents prove that no chain value can fall below 2^-126
  (systolic.amx.gemm._ftz_possible).
* NaN: the fast kernel is only trusted on rows of A / columns of B without inf or NaN; a NaN it makes comes
  from an invalid operation on finite inputs (overflow, then inf - inf) and becomes x86's default NaN
  0xFFC00000, or from a NaN in C (the first operand of every ``C + t``), which comes out quieted with its
  payload. Rows / columns with inf or NaN inputs are recomputed by ``amx_exact``, which applies the x86
  operand priority (multiplicand of A, of B, accumulator; first operand of an add) at every step.
"""

from __future__ import annotations

from . import runtime

SOURCE = runtime.source("amx_float.cu")  # the CUDA C text: src/systolic/gpu/amx_float.cu (package data)

#: variant -> (BM, BN, threads per block); kernels are named chain_<variant>_fast / chain_<variant>_check
#: (a "cs" variant keeps C in shared memory instead of registers: fewer registers, more shared memory)
VARIANTS = {"128x128_8x8": (128, 128, 256), "128x128_8x8cs": (128, 128, 256), "128x64_8x4": (128, 64, 256),
            "128x64_8x4cs": (128, 64, 256), "64x128_4x8": (64, 128, 256), "64x64_4x4": (64, 64, 256),
            "64x64_4x4cs": (64, 64, 256)}
#: the variants without and with the FTZ check that exist
FAST_VARIANTS = ("128x128_8x8", "128x128_8x8cs", "128x64_8x4", "128x64_8x4cs", "64x128_4x8", "64x64_4x4")
CHECK_VARIANTS = ("128x64_8x4", "128x64_8x4cs", "64x64_4x4", "64x64_4x4cs")


def smem_bytes(variant: str) -> int:
    """Dynamic shared memory of a variant: two stages of A and B tiles (+ C for the cs variants)."""
    bm, bn, _ = VARIANTS[variant]
    return 2 * 32 * (bm + bn) * 4 + (bm * bn * 4 if variant.endswith("cs") else 0)
