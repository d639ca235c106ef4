"""Shared value generators for the AMX tests: random bits mixed with adversarial values."""

from __future__ import annotations

import numpy as np

# fp32 patterns: +-0, denormals (min, max), min normal, 1, max, +-inf, quiet and signalling NaNs with payloads
FP32_SPECIAL = np.array([
    0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x80800000, 0x3F800000, 0xBF800000,
    0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7FC12345, 0xFF812345,
    0x7F800001, 0x00400000, 0x4B800000, 0xCB800000, 0x33800000, 0x0C000000,
], dtype=np.uint32)

# bf16 / fp16 patterns: +-0, denormals, min normal, 1, max, +-inf, qNaN/sNaN with payloads
BF16_SPECIAL = np.array([0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F,
                         0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0xFFA5, 0x0040, 0x1F80, 0x5F80],
                        dtype=np.uint16)
FP16_SPECIAL = np.array([0x0000, 0x8000, 0x0001, 0x83FF, 0x0400, 0x8400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF,
                         0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x7C01, 0xFD55, 0x0200, 0x1000, 0x6000], dtype=np.uint16)
FP8_SPECIAL = np.array([0x00, 0x80, 0x01, 0x81, 0x04, 0x7B, 0xFB, 0x7C, 0xFC, 0x7D, 0x7E, 0xFF, 0x7F, 0x38, 0xB8,
                        0x3C, 0x77, 0x08], dtype=np.uint8)


def mixed(rng: np.random.Generator, shape, special: np.ndarray, profile: str, normal=None) -> np.ndarray:
    """Values of the dtype of ``special``: 'bits' (uniform), 'special' (only edge values), 'mixed', 'normal'."""
    dt = special.dtype
    n = int(np.prod(shape))
    bits = rng.integers(0, np.iinfo(dt).max + 1, n, dtype=np.uint64).astype(dt)
    if profile == "bits":
        out = bits
    elif profile == "special":
        out = special[rng.integers(0, special.size, n)]
    elif profile == "normal" and normal is not None:
        out = normal(rng, n)
    else:
        pick = rng.random(n) < 0.3
        base = normal(rng, n) if normal is not None else bits
        out = np.where(pick, special[rng.integers(0, special.size, n)], base)
    return np.asarray(out, dtype=dt).reshape(shape)
