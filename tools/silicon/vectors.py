"""Deterministic AMX test programs for the silicon recorder and the emulator replay.

Every operation ``i`` of a family is generated from its own seed
``SeedSequence([FAMILY_SEED[family], i])`` (numpy PCG64), so any single
operation can be regenerated in CI without generating the ones before it.
Only numpy is used: the generator must not depend on the code under test.

Families (each operation is a short, always-valid AMX program; memory images
are byte arrays, every tile is transferred with the addresses given here):

``dot:<mnemonic>``  LDTILECFG(cfg); TILELOADD tmm0<-C, tmm1<-A, tmm2<-B (stride 64);
                    TDP* tmm0, tmm1, tmm2; TILESTORED tmm0 -> out (stride 64, out pre-filled).
``load:<tileloadd|tileloaddt1>``
                    LDTILECFG(cfg, start_row may be != 0); TILELOADD[T1] tmm<t> <- src+src_off
                    (any stride, negative and 0 included); STTILECFG -> cfg_after;
                    TILESTORED tmm<t> -> dst+dst_off (any stride; overlapping rows included).
``zero``            LDTILECFG; TILELOADD tmm<t>, tmm<u> (stride 64); TILEZERO tmm<t>;
                    TILESTORED tmm<t> -> out[0:1024], tmm<u> -> out[1024:2048] (stride 64).
``cfg``             LDTILECFG(cfg1); STTILECFG -> cfg_a; TILELOADD every tile of load_mask;
                    LDTILECFG(cfg2); STTILECFG -> cfg_b; TILESTORED every tile of store_mask -> out.

Values mix random bits with adversarial ones: +-0, denormals, infinities, NaNs
with random payloads (quiet and signalling), values near overflow, exact
cancellation, int8 extremes and int32 accumulators near wraparound.
"""

from __future__ import annotations

import hashlib

import numpy as np

DOT_MNEMONICS = ("tdpbssd", "tdpbsud", "tdpbusd", "tdpbuud", "tdpbf16ps")
#: the families of the first recording (9 x 100000 operations)
BASE_FAMILIES = tuple(f"dot:{m}" for m in DOT_MNEMONICS) + ("load:tileloadd", "load:tileloaddt1", "zero", "cfg")
#: TDPBF16PS aimed at the float rules: FTZ/DAZ boundary, NaN choice among several NaN inputs, inf*0 and
#: inf-inf, round-to-nearest-even ties, cancellation down to tiny residues (second recording)
EDGE_FAMILIES = ("dot:tdpbf16ps:edge",)
FAMILIES = BASE_FAMILIES + EDGE_FAMILIES

#: base seed of each family (arbitrary, fixed forever: the recorded digests depend on them)
FAMILY_SEED = {
    "dot:tdpbssd": 0x5A11_0001, "dot:tdpbsud": 0x5A11_0002, "dot:tdpbusd": 0x5A11_0003,
    "dot:tdpbuud": 0x5A11_0004, "dot:tdpbf16ps": 0x5A11_0005, "load:tileloadd": 0x5A11_0006,
    "load:tileloaddt1": 0x5A11_0007, "zero": 0x5A11_0008, "cfg": 0x5A11_0009,
    "dot:tdpbf16ps:edge": 0x5A11_000A,
}


def mnemonic_of(family: str) -> str:
    """'dot:tdpbf16ps:edge' -> 'tdpbf16ps'; 'load:tileloadd' -> 'tileloadd'."""
    return family.split(":")[1]

LOAD_BUF = 4096      # bytes of each src/dst image of the load family
LOAD_CENTER = 2048   # base offset range keeps every row inside the image for |stride| <= 128


def rng_for(family: str, i: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([FAMILY_SEED[family], int(i)])))


def make_cfg(palette: int, start_row: int, tiles: dict) -> np.ndarray:
    """The 64-byte TILECFG image (SDM vol. 2 LDTILECFG; REFERENCE.md section 6)."""
    cfg = np.zeros(64, np.uint8)
    cfg[0] = palette
    cfg[1] = start_row
    for t, (rows, colsb) in tiles.items():
        cfg[16 + 2 * t] = colsb & 0xFF
        cfg[17 + 2 * t] = colsb >> 8
        cfg[48 + t] = rows
    return cfg


def _dim(rng) -> int:
    """A shape value 1..16, edges (1, 16) over-represented."""
    r = rng.random()
    if r < 0.2:
        return 16
    if r < 0.3:
        return 1
    return int(rng.integers(1, 17))


def _other_tiles(rng, tiles: dict) -> dict:
    """Randomly configure some of the unused tiles too (valid shapes, colsb not always a multiple of 4)."""
    out = dict(tiles)
    for t in range(8):
        if t not in out and rng.random() < 0.3:
            out[t] = (int(rng.integers(1, 17)), int(rng.integers(1, 65)))
    return out


# --------------------------------------------------------------------------- element generators

_BF16_SPECIAL = np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x0001, 0x8001, 0x007F, 0x807F, 0x0080, 0x8080,
                          0x7F7F, 0xFF7F, 0x3F80, 0xBF80, 0x7FC0, 0xFFC0, 0x7F81, 0xFFBF], np.uint16)
_FP32_SPECIAL = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x00000001, 0x80000001, 0x007FFFFF,
                          0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000,
                          0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFBFFFFF], np.uint32)


def _bf16_values(rng, n: int, profile: str) -> np.ndarray:
    """n bf16 bit patterns drawn according to ``profile``."""
    def normal(k, lo=-8, hi=8):
        sign = rng.integers(0, 2, k, dtype=np.uint16) << 15
        exp = (127 + rng.integers(lo, hi + 1, k)).astype(np.uint16) << 7
        man = rng.integers(0, 128, k, dtype=np.uint16)
        return sign | exp | man

    def denormal(k):
        return (rng.integers(0, 2, k, dtype=np.uint16) << 15) | rng.integers(1, 128, k, dtype=np.uint16)

    def nan(k):
        sign = rng.integers(0, 2, k, dtype=np.uint16) << 15
        man = rng.integers(1, 128, k, dtype=np.uint16)  # quiet (bit 6 set) and signalling payloads
        return sign | np.uint16(0x7F80) | man

    if profile == "bits":
        return rng.integers(0, 1 << 16, n, dtype=np.uint16)
    if profile == "normal":
        return normal(n)
    if profile == "wide":
        return normal(n, -120, 120)
    if profile == "overflow":
        v = normal(n, 100, 127)
        return v
    if profile == "tiny":
        v = normal(n, -126, -100)
        m = rng.random(n) < 0.5
        v[m] = denormal(int(m.sum()))
        return v
    # "mixed": a bit of everything
    v = normal(n)
    kind = rng.random(n)
    m = kind < 0.1
    v[m] = rng.choice(_BF16_SPECIAL, int(m.sum()))
    m = (kind >= 0.1) & (kind < 0.18)
    v[m] = denormal(int(m.sum()))
    m = (kind >= 0.18) & (kind < 0.21)
    v[m] = nan(int(m.sum()))
    m = (kind >= 0.21) & (kind < 0.3)
    v[m] = rng.integers(0, 1 << 16, int(m.sum()), dtype=np.uint16)
    return v


def _fp32_values(rng, n: int, profile: str) -> np.ndarray:
    def normal(k, lo=-8, hi=8):
        sign = rng.integers(0, 2, k, dtype=np.uint32) << 31
        exp = (127 + rng.integers(lo, hi + 1, k)).astype(np.uint32) << 23
        man = rng.integers(0, 1 << 23, k, dtype=np.uint32)
        return sign | exp | man

    if profile == "bits":
        return rng.integers(0, 1 << 32, n, dtype=np.uint32)
    if profile == "zero":
        return np.zeros(n, np.uint32)
    if profile == "normal":
        return normal(n)
    if profile == "overflow":
        return normal(n, 100, 127)
    if profile == "tiny":
        v = normal(n, -126, -100)
        m = rng.random(n) < 0.5
        v[m] = (rng.integers(0, 2, int(m.sum()), dtype=np.uint32) << 31) | rng.integers(
            1, 1 << 23, int(m.sum()), dtype=np.uint32)
        return v
    v = normal(n)
    kind = rng.random(n)
    m = kind < 0.1
    v[m] = rng.choice(_FP32_SPECIAL, int(m.sum()))
    m = (kind >= 0.1) & (kind < 0.15)
    v[m] = (rng.integers(0, 2, int(m.sum()), dtype=np.uint32) << 31) | rng.integers(
        1, 1 << 23, int(m.sum()), dtype=np.uint32)
    m = (kind >= 0.15) & (kind < 0.18)
    v[m] = (rng.integers(0, 2, int(m.sum()), dtype=np.uint32) << 31) | np.uint32(0x7F800000) | rng.integers(
        1, 1 << 23, int(m.sum()), dtype=np.uint32)
    return v


def _int8_bytes(rng, n: int, profile: str) -> np.ndarray:
    if profile == "extreme":
        return rng.choice(np.array([0x00, 0x01, 0x7F, 0x80, 0x81, 0xFF], np.uint8), n)
    return rng.integers(0, 256, n, dtype=np.uint8)


def _int32_acc(rng, n: int, profile: str) -> np.ndarray:
    if profile == "wrap":
        near = rng.choice(np.array([0x7FFFFFFF, 0x80000000, 0x7FFF0000, 0x80010000, 0xFFFFFFFF, 0], np.uint32), n)
        return (near + rng.integers(-4096, 4097, n).astype(np.uint32)).astype(np.uint32)
    return rng.integers(0, 1 << 32, n, dtype=np.uint32)


# --------------------------------------------------------------------------- families

def gen_dot(mnemonic: str, i: int) -> dict:
    """Operation ``i`` of family ``dot:<mnemonic>``: cfg, a, b, c (16x64 bytes each), out (pre-filled)."""
    rng = rng_for(f"dot:{mnemonic}", i)
    m, k, n = _dim(rng), _dim(rng), _dim(rng)
    cfg = make_cfg(1, 0, _other_tiles(rng, {0: (m, 4 * n), 1: (m, 4 * k), 2: (k, 4 * n)}))
    a = np.zeros((16, 64), np.uint8)
    b = np.zeros((16, 64), np.uint8)
    c = np.zeros((16, 64), np.uint8)
    if mnemonic == "tdpbf16ps":
        prof = rng.choice(["normal", "mixed", "bits", "wide", "overflow", "tiny", "cancel"])
        cprof = rng.choice(["normal", "mixed", "bits", "zero", "overflow", "tiny"])
        av = _bf16_values(rng, m * 2 * k, "normal" if prof == "cancel" else prof).reshape(m, 2 * k)
        bv = _bf16_values(rng, k * 2 * n, "normal" if prof == "cancel" else prof).reshape(k, 2 * n)
        if prof == "cancel":
            # a[r, 2p+1] = -a[r, 2p] and b[p, 2j+1] = b[p, 2j]: each dword's two products cancel exactly
            av[:, 1::2] = av[:, 0::2] ^ np.uint16(0x8000)
            bv[:, 1::2] = bv[:, 0::2]
        cv = _fp32_values(rng, m * n, cprof).reshape(m, n)
        a[:m, :4 * k] = av.view(np.uint8).reshape(m, 4 * k)
        b[:k, :4 * n] = bv.view(np.uint8).reshape(k, 4 * n)
        c[:m, :4 * n] = cv.view(np.uint8).reshape(m, 4 * n)
    else:
        prof = rng.choice(["random", "extreme"])
        cprof = rng.choice(["random", "wrap"])
        a[:m, :4 * k] = _int8_bytes(rng, m * 4 * k, prof).reshape(m, 4 * k)
        b[:k, :4 * n] = _int8_bytes(rng, k * 4 * n, prof).reshape(k, 4 * n)
        c[:m, :4 * n] = _int32_acc(rng, m * n, cprof).view(np.uint8).reshape(m, 4 * n)
    fill = int(rng.integers(0, 256))
    out = np.full((16, 64), fill, np.uint8)
    return {"cfg": cfg, "a": a, "b": b, "c": c, "out": out, "m": m, "k": k, "n": n}


def _bf16(sign, exp, man) -> np.ndarray:
    """bf16 bits from sign (0/1), unbiased exponent (-127 = zero/denormal field), 7-bit fraction."""
    e = (np.asarray(exp) + 127).astype(np.uint16)
    return ((np.asarray(sign).astype(np.uint16) << 15) | (e << 7) | np.asarray(man).astype(np.uint16)).astype(
        np.uint16)


def _fp32(sign, exp, man) -> np.ndarray:
    e = (np.asarray(exp) + 127).astype(np.uint32)
    return ((np.asarray(sign).astype(np.uint32) << 31) | (e << 23) | np.asarray(man).astype(np.uint32)).astype(
        np.uint32)


EDGE_PROFILES = ("ftz", "ftz_c", "nan_prio", "inf_nan", "ties", "cancel_tiny", "denorm_mix")


def gen_dot_edge(mnemonic: str, i: int) -> dict:
    """Operation ``i`` of ``dot:tdpbf16ps:edge``: the same program as ``gen_dot``, inputs aimed at the
    float rules (profile chosen per operation, see EDGE_PROFILES)."""
    assert mnemonic == "tdpbf16ps"
    rng = rng_for(f"dot:{mnemonic}:edge", i)
    m, k, n = _dim(rng), _dim(rng), _dim(rng)
    cfg = make_cfg(1, 0, _other_tiles(rng, {0: (m, 4 * n), 1: (m, 4 * k), 2: (k, 4 * n)}))
    prof = EDGE_PROFILES[int(rng.integers(0, len(EDGE_PROFILES)))]
    na, nb, nc = (m, 2 * k), (k, 2 * n), (m, n)
    sgn = lambda shape: rng.integers(0, 2, shape)  # noqa: E731
    man7 = lambda shape: rng.integers(0, 128, shape)  # noqa: E731
    man23 = lambda shape: rng.integers(0, 1 << 23, shape)  # noqa: E731
    if prof == "ftz":
        # products near 2^-126: exponents of A and B sum to -129..-120; C zero, tiny normal or denormal
        av = _bf16(sgn(na), rng.integers(-66, -59, na), man7(na))
        bv = _bf16(sgn(nb), rng.integers(-66, -59, nb), man7(nb))
        r = rng.random(nc)
        cv = np.where(r < 0.3, 0, np.where(r < 0.7, _fp32(sgn(nc), rng.integers(-126, -122, nc), man23(nc)),
                                           (sgn(nc).astype(np.uint32) << 31) | man23(nc).astype(np.uint32)))
    elif prof == "ftz_c":
        # C just above 2^-126, products of the opposite sign of about the same size: results straddle 2^-126
        av = _bf16(sgn(na), rng.integers(-64, -62, na), man7(na))
        bv = _bf16(sgn(nb), rng.integers(-64, -61, nb), man7(nb))
        cv = _fp32(sgn(nc), rng.integers(-126, -124, nc), man23(nc))
    elif prof == "nan_prio":
        # NaNs with distinct payloads in A, B and C at once (which one comes out?)
        av = _bf16(sgn(na), rng.integers(-4, 5, na), man7(na))
        bv = _bf16(sgn(nb), rng.integers(-4, 5, nb), man7(nb))
        cv = _fp32(sgn(nc), rng.integers(-4, 5, nc), man23(nc))
        for v, bits, nanexp in ((av, 16, 0x7F80), (bv, 16, 0x7F80)):
            msk = rng.random(v.shape) < 0.3
            v[msk] = (sgn(int(msk.sum())).astype(np.uint16) << 15) | np.uint16(nanexp) | rng.integers(
                1, 128, int(msk.sum())).astype(np.uint16)
        msk = rng.random(nc) < 0.4
        cv[msk] = (sgn(int(msk.sum())).astype(np.uint32) << 31) | np.uint32(0x7F800000) | rng.integers(
            1, 1 << 23, int(msk.sum())).astype(np.uint32)
    elif prof == "inf_nan":
        # inf * 0 and inf - inf (invalid: default NaN?), infinities in C
        av = rng.choice(np.array([0x7F80, 0xFF80, 0x0000, 0x8000, 0x3F80, 0xBF80], np.uint16), na)
        bv = rng.choice(np.array([0x7F80, 0xFF80, 0x0000, 0x8000, 0x3F80, 0xBF80], np.uint16), nb)
        cv = rng.choice(np.array([0x7F800000, 0xFF800000, 0, 0x80000000, 0x3F800000], np.uint32), nc)
    elif prof == "ties":
        # C = +-2^e, products +-2^(e-24) or 2^(e-25) (exact half ulps and quarter ulps): RNE ties
        e = int(rng.integers(-20, 21))
        av = _bf16(sgn(na), rng.integers(e - 13, e - 11, na), rng.choice([0, 64], na))
        bv = _bf16(sgn(nb), rng.integers(-13, -11, nb), rng.choice([0, 64], nb))
        cv = _fp32(sgn(nc), np.full(nc, e), rng.choice([0, 1, (1 << 23) - 1], nc))
    elif prof == "cancel_tiny":
        # a[2p+1] = -a[2p], b[2j+1] = b[2j] * (1 + 2^-7): each dword leaves a residue 2^-7 smaller
        av = _bf16(sgn(na), rng.integers(-3, 4, na), man7(na))
        av[:, 1::2] = av[:, 0::2] ^ np.uint16(0x8000)
        bv = _bf16(sgn(nb), rng.integers(-3, 4, nb), np.zeros(nb, int))
        bv[:, 1::2] = bv[:, 0::2] | np.uint16(1)
        cv = _fp32(sgn(nc), rng.integers(-30, -10, nc), man23(nc))
    else:  # denorm_mix: denormal bf16 inputs (DAZ) among normals, denormal and tiny C
        av = _bf16(sgn(na), rng.integers(-10, 10, na), man7(na))
        bv = _bf16(sgn(nb), rng.integers(-10, 10, nb), man7(nb))
        for v in (av, bv):
            msk = rng.random(v.shape) < 0.4
            v[msk] = (sgn(int(msk.sum())).astype(np.uint16) << 15) | rng.integers(1, 128, int(msk.sum())).astype(
                np.uint16)
        cv = (sgn(nc).astype(np.uint32) << 31) | man23(nc).astype(np.uint32)
    a = np.zeros((16, 64), np.uint8)
    b = np.zeros((16, 64), np.uint8)
    c = np.zeros((16, 64), np.uint8)
    a[:m, :4 * k] = np.ascontiguousarray(av.astype(np.uint16)).view(np.uint8).reshape(m, 4 * k)
    b[:k, :4 * n] = np.ascontiguousarray(bv.astype(np.uint16)).view(np.uint8).reshape(k, 4 * n)
    c[:m, :4 * n] = np.ascontiguousarray(np.asarray(cv).astype(np.uint32)).view(np.uint8).reshape(m, 4 * n)
    fill = int(rng.integers(0, 256))
    out = np.full((16, 64), fill, np.uint8)
    return {"cfg": cfg, "a": a, "b": b, "c": c, "out": out, "m": m, "k": k, "n": n}


def _stride(rng, colsb: int) -> int:
    r = rng.random()
    if r < 0.4:
        return 64
    if r < 0.5:
        return 0
    if r < 0.65:
        return colsb
    return int(rng.integers(-128, 129))


def gen_load(kind: str, i: int) -> dict:
    """Operation ``i`` of family ``load:<kind>``."""
    rng = rng_for(f"load:{kind}", i)
    t = int(rng.integers(0, 8))
    rows, colsb = _dim(rng), 4 * _dim(rng)
    start = 0 if rng.random() < 0.6 else int(rng.integers(0, rows))
    cfg = make_cfg(1, start, _other_tiles(rng, {t: (rows, colsb)}))
    src = rng.integers(0, 256, LOAD_BUF, dtype=np.uint8)
    src_stride, dst_stride = _stride(rng, colsb), _stride(rng, colsb)
    src_off = LOAD_CENTER + int(rng.integers(-64, 65))
    dst_off = LOAD_CENTER + int(rng.integers(-64, 65))
    fill = int(rng.integers(0, 256))
    dst = np.full(LOAD_BUF, fill, np.uint8)
    return {"cfg": cfg, "tile": t, "src": src, "src_off": src_off, "src_stride": src_stride,
            "dst": dst, "dst_off": dst_off, "dst_stride": dst_stride, "cfg_after": np.full(64, fill ^ 0x5A, np.uint8)}


def gen_zero(i: int) -> dict:
    rng = rng_for("zero", i)
    t, u = (int(x) for x in rng.choice(8, 2, replace=False))
    tiles = {t: (_dim(rng), 4 * _dim(rng)), u: (_dim(rng), 4 * _dim(rng))}
    cfg = make_cfg(1, 0, _other_tiles(rng, tiles))
    data = rng.integers(0, 256, (2, 16, 64), dtype=np.uint8)
    fill = int(rng.integers(0, 256))
    out = np.full((2, 16, 64), fill, np.uint8)
    return {"cfg": cfg, "t": t, "u": u, "data": data, "out": out}


def _random_cfg(rng, allow_palette0: bool):
    if allow_palette0 and rng.random() < 0.1:
        return make_cfg(0, 0, {}), 0
    tiles = {}
    for t in range(8):
        if rng.random() < 0.6:
            colsb = 4 * _dim(rng) if rng.random() < 0.85 else int(rng.integers(1, 65))
            tiles[t] = (_dim(rng), colsb)
    start = 0 if rng.random() < 0.7 else int(rng.integers(0, 16))
    loadable = 0
    for t, (rows, colsb) in tiles.items():
        if colsb % 4 == 0:
            loadable |= 1 << t
    return make_cfg(1, start, tiles), loadable


def gen_cfg(i: int) -> dict:
    rng = rng_for("cfg", i)
    cfg1, load1 = _random_cfg(rng, allow_palette0=False)
    cfg2, load2 = _random_cfg(rng, allow_palette0=True)
    # loads need start_row < rows of every loaded tile: load with start_row 0 semantics only when it is 0
    cfg1[1] = 0 if rng.random() < 0.5 else cfg1[1]
    load_mask = load1 & int(rng.integers(0, 256))
    if cfg1[1] != 0:
        # every loaded tile must have rows > start_row (else the load is #UD); drop the others
        for t in range(8):
            if load_mask >> t & 1 and cfg1[48 + t] <= cfg1[1]:
                load_mask &= ~(1 << t)
    store_mask = load2 if cfg2[0] == 1 and cfg2[1] == 0 else 0
    if cfg2[0] == 1 and cfg2[1] != 0:
        for t in range(8):
            if load2 >> t & 1 and cfg2[48 + t] > cfg2[1]:
                store_mask |= 1 << t
    data = rng.integers(0, 256, (8, 16, 64), dtype=np.uint8)
    fill = int(rng.integers(0, 256))
    out = np.full((8, 16, 64), fill, np.uint8)
    return {"cfg1": cfg1, "cfg2": cfg2, "load_mask": load_mask, "store_mask": store_mask, "data": data,
            "out": out, "cfg_a": np.full(64, fill ^ 0x5A, np.uint8), "cfg_b": np.full(64, fill ^ 0xA5, np.uint8)}


def generate(family: str, i: int) -> dict:
    if family.startswith("dot:"):
        if family.endswith(":edge"):
            return gen_dot_edge(mnemonic_of(family), i)
        return gen_dot(mnemonic_of(family), i)
    if family.startswith("load:"):
        return gen_load(mnemonic_of(family), i)
    if family == "zero":
        return gen_zero(i)
    if family == "cfg":
        return gen_cfg(i)
    raise KeyError(family)


#: the recorded outputs of each family (what the digest covers, in this order)
OUTPUTS = {"dot": ("out",), "load": ("dst", "cfg_after"), "zero": ("out",), "cfg": ("cfg_a", "cfg_b", "out")}

#: the generated inputs of each family (what the input digest covers)
INPUTS = {"dot": ("cfg", "a", "b", "c", "out"), "load": ("cfg", "src", "dst"), "zero": ("cfg", "data", "out"),
          "cfg": ("cfg1", "cfg2", "data", "out")}


def kind_of(family: str) -> str:
    return family.split(":")[0]


def digest(arrays) -> bytes:
    """8-byte BLAKE2b of the concatenated bytes of ``arrays``."""
    h = hashlib.blake2b(digest_size=8)
    for a in arrays:
        h.update(np.ascontiguousarray(a).view(np.uint8).tobytes())
    return h.digest()


def output_digest(family: str, op: dict) -> bytes:
    return digest(op[k] for k in OUTPUTS[kind_of(family)])


def input_digest(family: str, op: dict) -> bytes:
    return digest(op[k] for k in INPUTS[kind_of(family)])
