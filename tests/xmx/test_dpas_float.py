"""Float DPAS (spec path and fast path) against the independent exact oracle (tests/xmx/oracle.py).

Every float precision, every named model, platforms with flushing and retaining denormal rules, Dst fp32 /
bf16 / fp16, on random and adversarial bit patterns (+-0, denormals, largest finite, inf, NaN, cancellation).
"""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic import packing
from systolic.numerics.formats import BF16, FP16
from systolic.numerics.rounding import round_fraction
from systolic.xmx import GRF, dpas
from systolic.xmx.kernels import dpas_fast

from . import oracle as O

BITS = {"bf16": 16, "fp16": 16, "tf32": 32, "bf8": 8, "hf8": 8, "e2m1": 4}
OPS = {"bf16": 2, "fp16": 2, "tf32": 1, "bf8": 4, "hf8": 4, "e2m1": 8}
# adversarial patterns per format: zeros, smallest/largest denormal, smallest normal, one, one+ulp, largest, inf, NaN
POOL = {
    "bf16": [0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x3F80, 0xBF80, 0x3F81, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC1],
    "fp16": [0x0000, 0x8000, 0x0001, 0x83FF, 0x0400, 0x3C00, 0xBC00, 0x3C01, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E01],
    "tf32": [0x0, 0x80000000, 0x00002000, 0x807FE000, 0x00800000, 0x3F800000, 0xBF800000, 0x3F802000, 0x7F7FE000,
             0xFF7FE000, 0x7F800000, 0xFF800000, 0x7FC02000, 0x3F801FFF],
    "bf8": [0x00, 0x80, 0x01, 0x83, 0x04, 0x3C, 0xBC, 0x3D, 0x7B, 0xFB, 0x7C, 0xFC, 0x7E],
    "hf8": [0x00, 0x80, 0x01, 0x87, 0x08, 0x38, 0xB8, 0x39, 0x7E, 0xFE, 0x7F, 0xFF],
    "e2m1": list(range(16)),
}
C_POOL = [0x0, 0x80000000, 0x1, 0x807FFFFF, 0x00800000, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
          0xFF800000, 0x7FC00001, 0x4B800000, 0x33800000]
FLUSH = {"dg2": {"bf16", "tf32"}, "pvc": {"bf16", "tf32"}, "bmg": set(), "lnl": set(), "xe3p": set()}
MODELS = {"stage": ("stage",), "sequential": ("sequential",), "exact": ("exact",), "block(4,24)": ("block", 4, 24),
          "block(16,3)": ("block", 16, 3), "block(1,30)": ("block", 1, 30)}
CASES = [("dg2", "bf16"), ("dg2", "fp16"), ("pvc", "bf16"), ("pvc", "tf32"), ("bmg", "bf16"), ("lnl", "tf32"),
         ("bmg", "fp16"), ("xe3p", "bf8"), ("xe3p", "hf8"), ("xe3p", "e2m1")]


def gen_bits(rng, prec, shape, adversarial):
    b = BITS[prec]
    rand = rng.integers(0, 1 << b, size=shape, dtype=np.int64)
    if prec == "tf32":
        rand &= ~0x1FFF
    if not adversarial:
        # mostly moderate values: random sign and fraction, exponent near the bias
        if prec in ("bf16", "tf32"):
            e = rng.integers(120, 134, size=shape)
            rand = (rand & ~(0xFF << (23 if prec == "tf32" else 7))) | (e << (23 if prec == "tf32" else 7))
        return rand
    pool = np.array(POOL[prec], dtype=np.int64)
    pick = rng.integers(0, len(pool), size=shape)
    return np.where(rng.random(shape) < 0.6, pool[pick], rand)


def gen_c(rng, shape, adversarial):
    r = rng.integers(0, 1 << 32, size=shape, dtype=np.int64)
    if not adversarial:
        return (r & 0x807FFFFF) | (rng.integers(120, 134, size=shape) << 23)
    pool = np.array(C_POOL, dtype=np.int64)
    return np.where(rng.random(shape) < 0.6, pool[rng.integers(0, len(pool), size=shape)], r)


def cancel_case(rng, prec, m, k, n):
    """A and B whose products cancel C and each other exactly or nearly (catastrophic cancellation)."""
    a = np.zeros((m, k), dtype=np.int64)
    b = np.zeros((k, n), dtype=np.int64)
    one = {"bf16": 0x3F80, "fp16": 0x3C00, "tf32": 0x3F800000, "bf8": 0x3C, "hf8": 0x38, "e2m1": 0x2}[prec]
    sign = 1 << (BITS[prec] - 1)
    a[:, 0] = one
    a[:, 1] = one | sign
    b[0, :] = gen_bits(rng, prec, (n,), False) & (sign - 1)
    b[1, :] = b[0, :] ^ rng.integers(0, 2, size=n)   # equal or one ulp apart
    return a, b


def place(g, a_bits, b_bits, c_bits, prec, c_type):
    gb = g.grf_bytes
    src2, src1, src0, dst = 0, 16 * gb, 32 * gb, 64 * gb
    bits = BITS[prec]
    g.write(src2, packing.pack(a_bits.astype(np.uint32), bits).astype("<u4"))
    g.write(src1, packing.vnni_pack(b_bits.astype(np.uint32), bits).astype("<u4"))
    if c_type == "fp32":
        g.write(src0, c_bits.astype("<u4"))
    else:
        g.write(src0, c_bits.astype("<u2"))
    return dict(dst=dst, src0=src0, src1=src1, src2=src2)


def c_value_bits(c_bits, c_type):
    """Src0 of a 16-bit type holds exact values: their fp32 bits for the oracle."""
    if c_type == "fp32":
        return c_bits
    from systolic.numerics.rounding import from_bits
    fmt = BF16 if c_type == "bf16" else FP16
    with np.errstate(invalid="ignore"):  # signalling NaN payloads: the cast keeps them, numpy warns
        v = from_bits(c_bits.astype(np.uint32), fmt).astype(np.float32)
    return v.view(np.uint32).astype(np.int64)


def to_dst(bits32, dst_type):
    if dst_type == "fp32":
        return bits32
    fmt = BF16 if dst_type == "bf16" else FP16
    v = O.fp32(bits32)[0]
    if v is O.NAN:
        return fmt.exp_mask | (1 << (fmt.man_bits - 1))
    if isinstance(v, float):
        return fmt.exp_mask | (fmt.sign_bit if v < 0 else 0)
    return round_fraction(Fraction(v), fmt, "rne", negative_zero=bool(bits32 >> 31))


def run_case(platform, prec, model, rc, seed, adversarial, dst_type="fp32", c_type=None, cancel=False,
             paths=("spec", "fast")):
    c_type = c_type or dst_type
    rng = np.random.default_rng(seed)
    g = GRF(platform)
    n = g.platform.exec_size
    k = 8 * OPS[prec]
    a = gen_bits(rng, prec, (rc, k), adversarial)
    b = gen_bits(rng, prec, (k, n), adversarial)
    if cancel:
        a, b = cancel_case(rng, prec, rc, k, n)
    c = gen_c(rng, (rc, n), adversarial)
    if c_type != "fp32":
        c = gen_bits(rng, "bf16" if c_type == "bf16" else "fp16", (rc, n), adversarial)
        if c_type == "fp16":
            c = rng.integers(0, 1 << 16, size=(rc, n)) if adversarial else c
    off = place(g, a, b, c, prec, c_type)
    flush = prec in FLUSH[platform]
    want = O.matmul_bits(a.tolist(), b.tolist(), c_value_bits(c, c_type).tolist(), prec, MODELS[model], OPS[prec],
                         k, flush)
    want = np.array([[to_dst(x, dst_type) for x in row] for row in want], dtype=np.int64)
    nb = 4 if dst_type == "fp32" else 2
    for path in paths:
        h = g.copy()
        fn = dpas if path == "spec" else dpas_fast
        fn(h, **off, dst_type=dst_type, src0_type=c_type, src1_precision=prec, src2_precision=prec, rc=rc,
           model=model)
        got = h.read(off["dst"], rc * n * nb).view("<u4" if nb == 4 else "<u2").reshape(rc, n).astype(np.int64)
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)[0]
            raise AssertionError(f"{path} {platform} {prec} {model} at {tuple(bad)}: got {got[tuple(bad)]:#x} "
                                 f"want {want[tuple(bad)]:#x}")


@pytest.mark.parametrize("platform,prec", CASES)
@pytest.mark.parametrize("model", list(MODELS))
def test_models_against_oracle(platform, prec, model):
    run_case(platform, prec, model, rc=2, seed=1, adversarial=False)
    run_case(platform, prec, model, rc=2, seed=2, adversarial=True)


@pytest.mark.parametrize("platform,prec", CASES)
def test_cancellation(platform, prec):
    for model in ("stage", "exact", "block(4,24)"):
        run_case(platform, prec, model, rc=2, seed=5, adversarial=False, cancel=True)


@pytest.mark.parametrize("dst_type,c_type", [("bf16", "bf16"), ("fp32", "bf16"), ("bf16", "fp32")])
def test_bf16_accumulator_types(dst_type, c_type):
    for seed, adv in ((3, False), (4, True)):
        run_case("pvc", "bf16", "stage", rc=3, seed=seed, adversarial=adv, dst_type=dst_type, c_type=c_type)


def test_fp16_accumulator_pvc():
    run_case("pvc", "fp16", "stage", rc=3, seed=9, adversarial=True, dst_type="fp16", c_type="fp16")
    run_case("pvc", "fp16", "exact", rc=3, seed=10, adversarial=False, dst_type="fp16", c_type="fp16")


def test_denormal_rule_differs_between_pvc_and_bmg():
    # A = smallest bf16 denormal, B = 2**100: the product 2**-33 survives only when denormals are kept
    outs = {}
    for platform in ("pvc", "bmg"):
        g = GRF(platform)
        a = np.zeros((1, 16), dtype=np.int64)
        a[0, 0] = 0x0001                       # 2**-133
        b = np.zeros((16, 16), dtype=np.int64)
        b[0, :] = 0x7180                       # 2**100
        off = place(g, a, b, np.zeros((1, 16), dtype=np.int64), "bf16", "fp32")
        dpas(g, **off, dst_type="f", src1_precision="bf", src2_precision="bf", rc=1)
        outs[platform] = g.view(off["dst"], np.float32, 16)[0]
    assert outs["pvc"] == 0.0 and outs["bmg"] == 2.0 ** -33
    # the model can override the platform's rule
    from systolic.xmx.models import NumericsModel
    g = GRF("pvc")
    off = place(g, a, b, np.zeros((1, 16), dtype=np.int64), "bf16", "fp32")
    dpas(g, **off, dst_type="f", src1_precision="bf", src2_precision="bf", rc=1,
         model=NumericsModel("stage", denormals="keep"))
    assert g.view(off["dst"], np.float32, 16)[0] == 2.0 ** -33


def test_models_differ_where_documented():
    # C = 1, products 2**-24 each: stage rounds (1 + 2*2**-24) = 1 + 2**-23 per stage; sequential loses each
    # 2**-24 (tie to even); exact keeps 16 * 2**-24 = 2**-20.
    g = GRF("pvc")
    a = np.full((1, 16), 0x3380, dtype=np.int64)   # 2**-24
    b = np.full((16, 16), 0x3F80, dtype=np.int64)  # 1
    c = np.full((1, 16), 0x3F800000, dtype=np.int64)
    off = place(g, a, b, c, "bf16", "fp32")
    res = {}
    for model in ("stage", "sequential", "exact"):
        h = g.copy()
        dpas(h, **off, dst_type="f", src1_precision="bf", src2_precision="bf", rc=1, model=model)
        res[model] = float(h.view(off["dst"], np.float32, 1)[0])
    assert res == {"stage": 1 + 8 * 2.0 ** -23, "sequential": 1.0, "exact": 1 + 2.0 ** -20}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(CASES), st.sampled_from(list(MODELS)), st.integers(1, 3), st.integers(0, 2 ** 32 - 1),
       st.booleans())
def test_hypothesis_fast_and_spec_equal_oracle(case, model, rc, seed, adversarial):
    platform, prec = case
    run_case(platform, prec, model, rc=rc, seed=seed, adversarial=adversarial)
