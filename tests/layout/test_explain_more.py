"""``explain`` beyond one DPAS/TMUL: DPASW, split OpenCL built-ins, SYCL joint_matrix_mad, AMX TCMM* and TDP*F8PS.

Oracles, none from the code under test: the final value equals the engine's own result for the same operands,
computed here through another route (xmx.dpasw on registers this test fills from DPASW.md's rules, the OpenCL
split built-in, the stored D of a SYCL kernel, a TileMachine program); every listed product equals the exact
Fraction product of the inputs; every intermediate rounding equals a rounding computed here (fp32 RNE from the
exact Fraction, ml_dtypes for bf16/fp16).
"""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from systolic import opencl as cl
from systolic import sycl, xmx
from systolic.errors import InvalidValue, SystolicError
from systolic.explorer.explain import explain, format_explain
from systolic.sycl import matrix as jm
from systolic.xmx import pack as PK

BF = np.dtype(ml_dtypes.bfloat16)


def rne32(x: Fraction) -> np.float32:
    """x rounded to float32, nearest even (exact: the float32 neighbours compared as Fractions)."""
    f = np.float32(float(x))
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    best = min(cands, key=lambda c: (abs(Fraction(float(c)) - x), int(np.float32(c).view(np.uint32)) & 1))
    return np.float32(best)


def f32bits(v) -> int:
    return int(np.float32(v).view(np.uint32))


def check_products(stages, row, col, A, B):
    """Every listed product is the exact product of A[row, k] and B[k, col]."""
    n = 0
    for st in stages:
        for k, p in zip(st["k"], st["products"]):
            assert Fraction(p) == Fraction(float(A[row, k])) * Fraction(float(B[k, col]))
            n += 1
    return n


def check_stage_sums(rep):
    """Stage model: each stage sum = RNE_fp32(previous + the stage's exact products), from C."""
    acc = Fraction(rep["c"]["value"])
    assert len(rep["sums"]) == len(rep["stages"])
    for st, s in zip(rep["stages"], rep["sums"]):
        want = rne32(acc + sum((Fraction(p) for p in st["products"]), Fraction(0)))
        assert s["bits"] == f32bits(want)
        acc = Fraction(float(want))
    return acc


# ---------------------------------------------------------------- DPASW

def dpasw_direct(A, B2, C2, eu):
    """xmx.dpasw with registers filled per DPASW.md: Src2 is A row-major, its first ceil(NGrf/2) 32-byte GRFs
    in EU0, the rest in EU1; each EU has its own B (Src1) and C (Src0)."""
    P = xmx.get_platform("dg2")
    gb = P.grf_bytes
    img = np.ascontiguousarray(A.astype(BF)).view(np.uint8).reshape(-1)
    ngrf = -(-img.size // 32)
    eu0 = (ngrf + 1) // 2
    g = [xmx.GRF(P), xmx.GRF(P)]
    g[0].write(0, img[:eu0 * gb])
    g[1].write(0, img[eu0 * gb:])
    for i in (0, 1):
        g[i].write(16 * gb, PK.pack_src1(B2[i].astype(BF), "bf16"))
        g[i].write(32 * gb, PK.pack_acc(C2[i].astype(np.float32), "fp32"))
    xmx.dpasw(g[0], pair=g[1], dst=48 * gb, src0=32 * gb, src1=16 * gb, src2=0, dst_type="fp32",
              src1_precision="bf16", src2_precision="bf16", rc=A.shape[0], device=P)
    return PK.unpack_acc(g[eu].read(48 * gb, A.shape[0] * 8 * 4), "fp32", A.shape[0], 8), eu0


@pytest.mark.parametrize("eu,row,col", [(0, 1, 2), (1, 6, 7), (1, 0, 5)])
def test_dpasw_equals_engine_products_exact_sums_rounded(eu, row, col):
    rng = np.random.default_rng(11 + eu)
    A = (rng.standard_normal((8, 16)) * 4).astype(BF)
    B2 = (rng.standard_normal((2, 16, 8)) * 4).astype(BF)
    C2 = rng.standard_normal((2, 8, 8)).astype(np.float32)
    rep = explain("dpasw", row, col, device="dg2", precision="bf16", eu=eu, a=A, b=B2, c=C2)
    D, eu0 = dpasw_direct(A, B2, C2, eu)
    assert rep["result_bits"] == f32bits(D[row, col]) and rep["consistent"]
    assert check_products(rep["stages"], row, col, A.astype(np.float32), B2[eu].astype(np.float32)) == 16
    assert Fraction(rep["c"]["value"]) == Fraction(float(C2[eu][row, col]))
    assert float(check_stage_sums(rep)) == rep["result"]
    # which EU's registers held each A element: Src2 GRF j = (row * 16 + k) * 2 // 32 bytes, EU0 iff j < eu0
    for st in rep["stages"]:
        for x, k in zip(st["a"], st["k"]):
            assert x["from"] == ("EU0" if (row * 16 + k) * 2 // 32 < eu0 else "EU1")


def test_dpasw_needs_a_valid_eu_and_a_dpasw_platform():
    with pytest.raises(InvalidValue):
        explain("dpasw", 0, 0, device="dg2", eu=2)
    with pytest.raises(SystolicError):
        explain("dpasw", 0, 0, device="pvc")


# ---------------------------------------------------------------- split OpenCL built-ins

@pytest.mark.parametrize("name,sg,row,col", [("intel_sub_group_bf16_bf16_split_matrix_mad_k16", 0, 2, 3),
                                             ("intel_sub_group_bf16_bf16_split_matrix_mad_k16", 1, 7, 0),
                                             ("intel_sub_group_i8_u8_split_matrix_mad_k32", 1, 5, 6)])
def test_split_builtin_equals_the_builtin(name, sg, row, col):
    rng = np.random.default_rng(5 + sg)
    integer = "i8" in name
    K = 32 if integer else 16
    if integer:
        A = rng.integers(-128, 128, (8, K))
        B2 = rng.integers(0, 256, (2, K, 8))
        C2 = rng.integers(-2 ** 20, 2 ** 20, (2, 8, 8))
    else:
        A = (rng.standard_normal((8, K)) * 4).astype(BF)
        B2 = (rng.standard_normal((2, K, 8)) * 4).astype(BF)
        C2 = rng.standard_normal((2, 8, 8)).astype(np.float32)
    rep = explain("opencl", row, col, name=name, device="dg2", sub_group=sg, a=A, b=B2, c=C2)
    a = cl.distribute(name, "a", A, device="dg2")
    b = np.stack([cl.distribute(name, "b", B2[i], device="dg2") for i in (0, 1)])
    acc = np.stack([cl.distribute(name, "acc", C2[i], device="dg2") for i in (0, 1)])
    got = getattr(cl, name)(a, b, acc, device="dg2")
    D = cl.gather(name, "result", got[sg], device="dg2")
    if integer:
        assert rep["result"] == int(D[row, col])
        exact = int(C2[sg][row, col]) + sum(int(A[row, k]) * int(B2[sg][k, col]) for k in range(K))
        assert rep["exact_sum"] == exact and rep["result"] == exact   # no wrap at these magnitudes
    else:
        assert rep["result_bits"] == f32bits(D[row, col])
        assert float(check_stage_sums(rep)) == rep["result"]
    assert check_products(rep["stages"], row, col, np.asarray(A, dtype=np.float64),
                          np.asarray(B2[sg], dtype=np.float64)) == K
    # the extension's rule: rows 0..M/2-1 of a come from sub-group 0, the rest from sub-group 1
    for st in rep["stages"]:
        for x in st["a"]:
            assert x["sub_group"] == (0 if row < 4 else 1)
    assert "split_matrix_mad" in rep["lowered_from"]


# ---------------------------------------------------------------- SYCL joint_matrix_mad

def run_mad(dev, a, b, c, td, ctype_T=None):
    """The stored D of a joint_matrix kernel: load A, B, C; D = mad; store D."""
    q = sycl.queue(dev)
    sg = q.get_device().get_info("sub_group_sizes")[0]
    M, K = a.shape
    N = b.shape[1]
    d = np.zeros((M, N), td)
    pa, pb, pc, pd = (sycl.ptr(np.ascontiguousarray(x)) for x in (a, b, c, d))

    def kernel(it):
        s = it.get_sub_group()
        A = jm.joint_matrix(s, a.dtype.type, jm.use.a, M, K, jm.layout.row_major)
        B = jm.joint_matrix(s, b.dtype.type, jm.use.b, K, N, jm.layout.row_major)
        C = jm.joint_matrix(s, c.dtype.type, jm.use.accumulator, M, N)
        D = jm.joint_matrix(s, np.dtype(td).type, jm.use.accumulator, M, N)
        jm.joint_matrix_load(s, A, pa, K)
        jm.joint_matrix_load(s, B, pb, N)
        jm.joint_matrix_load(s, C, pc, N, jm.layout.row_major)
        jm.joint_matrix_mad(s, D, A, B, C)
        jm.joint_matrix_store(s, D, pd, N, jm.layout.row_major)
    q.parallel_for(sycl.nd_range((1, sg), (1, sg)), kernel)
    return np.asarray(pd).reshape(M, N)


def bits(x):
    x = np.ascontiguousarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[x.dtype.itemsize])


NAMES = {np.dtype(np.float32): "fp32", BF: "bf16", np.dtype(np.float16): "fp16", np.dtype(np.int32): "sint32",
         np.dtype(np.int8): "sint8", np.dtype(np.uint8): "uint8"}

XMX_CASES = [("pvc", (32, 64, 32), BF, BF, BF, (9, 17), "bf16"),
             ("pvc", (1, 64, 32), BF, np.float32, BF, (0, 50), "bf16"),
             ("pvc", (32, 64, 32), BF, np.float32, np.float32, (31, 63), "fp32"),
             ("pvc", (16, 16, 16), BF, np.float32, BF, (12, 5), None),
             ("pvc", (32, 64, 16), np.float16, np.float16, np.float32, (20, 40), None),
             ("dg2", (32, 32, 16), BF, np.float32, np.float32, (17, 30), None),
             ("pvc", (8, 16, 32), np.int8, np.int32, np.int32, (3, 9), None),
             ("dg2", (4, 8, 32), np.uint8, np.int32, np.int32, (3, 2), None)]


@pytest.mark.parametrize("dev,shape,ta,tc,td,el,mid", XMX_CASES, ids=lambda v: str(v))
def test_sycl_xmx_equals_kernel(dev, shape, ta, tc, td, el, mid):
    M, N, K = shape
    row, col = el
    rng = np.random.default_rng(M + N + K)
    if np.dtype(ta).kind in "iu":
        lo = 0 if ta == np.uint8 else -128
        a = rng.integers(lo, 128, (M, K)).astype(ta)
        b = rng.integers(lo, 128, (K, N)).astype(ta)
        c = rng.integers(-10 ** 6, 10 ** 6, (M, N)).astype(tc)
    else:
        a = (rng.standard_normal((M, K)) * 2).astype(ta)
        b = (rng.standard_normal((K, N)) * 2).astype(ta)
        c = (rng.standard_normal((M, N)) * 4).astype(tc)
    rep = explain("sycl", row, col, device=dev, type=NAMES[np.dtype(ta)], ctype=NAMES[np.dtype(tc)],
                  dtype=NAMES[np.dtype(td)], m=M, n=N, k=K, a=a, b=b, c=c)
    D = run_mad(dev, a, b, c, td)
    assert rep["result_bits"] == int(bits(D)[row, col]) and rep["consistent"]
    steps = rep["steps"]
    ks = 32 if np.dtype(ta).itemsize == 1 else 16
    assert len(steps) == K // ks and [s["k0"] for s in steps] == list(range(0, K, ks))
    nprod = 0
    for s in steps:
        nprod += check_products(s["report"]["stages"], row, col, a.astype(np.float64), b.astype(np.float64))
    assert nprod == K
    # the C of step 0 is C; each later step's C is the previous step's D, rounded to the intermediate type
    assert Fraction(steps[0]["report"]["c"]["value"]) == Fraction(float(c[row, col]))
    for s0, s1 in zip(steps, steps[1:]):
        assert s0["rounded_to"] == mid and s1["report"]["c"]["value"] == s0["report"]["result"]
        if mid == "bf16":
            fp32_sum = np.uint32(s0["report"]["sums"][-1]["bits"]).view(np.float32)
            assert float(fp32_sum.astype(BF)) == s0["report"]["result"]
    if np.dtype(ta).kind not in "iu":
        for s in steps:
            check_stage_sums(s["report"])
    # the holders: the slices that hold A[row, k], B[k, col], C and D, as the SYCL layer's own map says
    LA = jm.layout(dev, NAMES[np.dtype(ta)], "a", M, K, "row_major")
    for s in steps:
        for st in s["report"]["stages"]:
            for x, k in zip(st["a"], st["k"]):
                w = LA.where(row, k)
                assert (x["jm_work_item"], x["jm_index"]) == (w["work_item"], w["index"])
    w = jm.layout(dev, NAMES[np.dtype(td)], "accumulator", M, N).where(row, col)
    assert (rep["d"]["work_item"], rep["d"]["index"]) == (w["work_item"], w["index"])


@pytest.mark.parametrize("dev,ta,shape,el", [("spr", BF, (16, 16, 32), (9, 7)), ("spr", np.int8, (16, 16, 64), (3, 5)),
                                             ("gnr", np.float16, (8, 12, 20), (7, 11)),
                                             ("spr", np.uint8, (5, 16, 40), (4, 15))])
def test_sycl_amx_equals_kernel(dev, ta, shape, el):
    M, N, K = shape
    row, col = el
    rng = np.random.default_rng(K)
    if np.dtype(ta).kind in "iu":
        a = rng.integers(0 if ta == np.uint8 else -128, 128, (M, K)).astype(ta)
        b = rng.integers(-128, 128, (K, N)).astype(np.int8)
        c = rng.integers(-1000, 1000, (M, N)).astype(np.int32)
        tb = "sint8"
    else:
        a = rng.standard_normal((M, K)).astype(ta)
        b = rng.standard_normal((K, N)).astype(ta)
        c = rng.standard_normal((M, N)).astype(np.float32)
        tb = NAMES[np.dtype(ta)]
    tc = NAMES[c.dtype]
    rep = explain("sycl", row, col, device=dev, type=NAMES[np.dtype(ta)], btype=tb, ctype=tc, m=M, n=N, k=K,
                  a=a, b=b, c=c)
    D = run_mad(dev, a, b, c, c.dtype)
    assert rep["result_bits"] == int(bits(D)[row, col]) and rep["consistent"]
    (st,) = rep["steps"]                       # <= 64 bytes of K: one TMUL
    n = check_products(st["report"]["steps"], row, col, a.astype(np.float64), b.astype(np.float64))
    assert n == K
    if tc == "sint32":
        assert rep["result"] == int(c[row, col]) + sum(int(a[row, k]) * int(b[k, col]) for k in range(K))


def test_sycl_errors():
    with pytest.raises(SystolicError):          # not a combination of the device
        explain("sycl", 0, 0, device="pvc", type="bf16", m=33, n=64, k=32)
    with pytest.raises(InvalidValue):
        explain("sycl", 40, 0, device="pvc", type="bf16", m=32, n=64, k=32)
    with pytest.raises(InvalidValue):
        explain("sycl", 0, 0, device="pvc", type="bf16", m=8, n=16, k=16, model="exact")


# ---------------------------------------------------------------- AMX-COMPLEX and AMX-FP8

def tile_run(mn, cpu, c_tile, a_tile, b_tile):
    from systolic.amx import TileMachine
    from systolic.amx.tilecfg import TileConfig
    t = TileMachine(cpu)
    shapes = {0: c_tile.view(np.uint8).shape, 1: a_tile.view(np.uint8).shape, 2: b_tile.view(np.uint8).shape}
    t.ldtilecfg(TileConfig(palette=1, tiles={k: (v[0], v[1]) for k, v in shapes.items()}))
    t.write_tile(0, c_tile)
    t.write_tile(1, a_tile)
    t.write_tile(2, b_tile)
    getattr(t, mn)(0, 1, 2)
    return t.read_tile(0, np.float32)


@pytest.mark.parametrize("mn", ["tcmmimfp16ps", "tcmmrlfp16ps"])
def test_tcmm_equals_tilemachine_chains_rounded(mn):
    M, N, Kc = 3, 4, 5
    rng = np.random.default_rng(1)
    are, aim = (rng.standard_normal((M, Kc)) * 3).astype(np.float16), (rng.standard_normal((M, Kc))).astype(np.float16)
    bre, bim = (rng.standard_normal((Kc, N)) * 3).astype(np.float16), (rng.standard_normal((Kc, N))).astype(np.float16)
    C = rng.standard_normal((M, N)).astype(np.float32)
    a = np.empty((M, 2 * Kc), np.float16)
    a[:, 0::2], a[:, 1::2] = are, aim
    b = np.empty((2 * Kc, N), np.float16)
    b[0::2], b[1::2] = bre, bim
    bt = np.empty((Kc, 2 * N), np.float16)     # the tile: dword (k, n) = (re low, im high)
    bt[:, 0::2], bt[:, 1::2] = bre, bim
    D = tile_run(mn, "graniterapids-d", C, a, bt)
    for row, col in ((0, 0), (2, 3)):
        rep = explain("amx", row, col, instruction=mn, m=M, n=N, k=Kc, a=a, b=b, c=C)
        assert rep["result_bits"] == f32bits(D[row, col]) and rep["consistent"]
        even = odd = Fraction(0)
        for k, st in enumerate(rep["steps"]):
            ar, ai, br, bi = (Fraction(float(x)) for x in (are[row, k], aim[row, k], bre[k, col], bim[k, col]))
            want = [ai * br, ar * bi] if mn == "tcmmimfp16ps" else [ar * br, -(ai * bi)]
            assert [Fraction(p) for p in st["products"]] == want
            even, odd = (Fraction(float(rne32(even + want[0]))), Fraction(float(rne32(odd + want[1]))))
            assert st["even_chain"]["bits"] == f32bits(float(even)) and st["odd_chain"]["bits"] == f32bits(float(odd))
        s = rne32(even + odd)
        assert rep["chains_sum"]["bits"] == f32bits(s)
        assert rep["result_bits"] == f32bits(rne32(Fraction(float(C[row, col])) + Fraction(float(s))))


def test_fp8_equals_tilemachine_exact_sum_rounded_once():
    M, N, K = 2, 3, 12
    rng = np.random.default_rng(2)

    def finite_e5m2(shape):
        v = rng.integers(0, 256, shape).astype(np.uint8)
        return np.where((v & 0x7C) == 0x7C, v & 0x83, v).astype(np.uint8)   # no inf/NaN
    A, B = finite_e5m2((M, K)), finite_e5m2((K, N))
    C = rng.standard_normal((M, N)).astype(np.float32)
    bt = B.reshape(K // 4, 4, N).transpose(0, 2, 1).reshape(K // 4, 4 * N)   # VNNI: 4 K per dword
    D = tile_run("tdpbf8ps", "diamondrapids", C, A, np.ascontiguousarray(bt))
    Av = A.view(ml_dtypes.float8_e5m2).astype(np.float64)
    Bv = B.view(ml_dtypes.float8_e5m2).astype(np.float64)
    for row, col in ((0, 0), (1, 2)):
        rep = explain("amx", row, col, instruction="tdpbf8ps", m=M, n=N, k=K, a={"bits": A}, b={"bits": B},
                      c=C)
        assert rep["result_bits"] == f32bits(D[row, col]) and rep["consistent"]
        assert check_products(rep["steps"], row, col, Av, Bv) == K
        exact = sum((Fraction(float(Av[row, k])) * Fraction(float(Bv[k, col])) for k in range(K)), Fraction(0))
        assert Fraction(rep["exact_products_sum"]["exact"]) == exact
        t = rne32(exact)
        assert rep["rounded_sum"]["bits"] == f32bits(t)
        assert rep["result_bits"] == f32bits(rne32(Fraction(float(C[row, col])) + Fraction(float(t))))


# ---------------------------------------------------------------- CLI

def test_cli_explain_new_kinds():
    from click.testing import CliRunner

    from systolic.cli import cli as main
    r = CliRunner()
    for args in (["dpasw", "5", "3", "--platform", "dg2", "--eu", "1"],
                 ["opencl", "6", "2", "--name", "intel_sub_group_bf16_bf16_split_matrix_mad_k16", "--platform",
                  "dg2", "--sub-group", "1"],
                 ["sycl", "9", "17", "--device", "pvc", "--type", "bf16", "--ctype", "bf16", "--dtype", "bf16",
                  "--m", "32", "--n", "64", "--k", "32"],
                 ["amx", "1", "2", "--instruction", "tcmmimfp16ps", "--m", "2", "--n", "3", "--k", "2"],
                 ["amx", "1", "2", "--instruction", "tdphf8ps", "--m", "2", "--n", "3", "--k", "8"]):
        out = r.invoke(main, ["layout", "explain", *args])
        assert out.exit_code == 0, out.output
        assert "INCONSISTENT" not in out.output
        js = r.invoke(main, ["layout", "explain", *args, "--json"])
        assert js.exit_code == 0 and '"result"' in js.output
    bad = r.invoke(main, ["layout", "explain", "sycl", "0", "0", "--device", "pvc", "--type", "bf16", "--m", "33",
                          "--n", "64", "--k", "32"])
    assert bad.exit_code == 1 and isinstance(bad.exception, SystolicError)


def test_format_is_text():
    rep = explain("sycl", 0, 50, device="pvc", type="bf16", ctype="fp32", dtype="bf16", m=1, n=64, k=32)
    txt = format_explain(rep)
    assert "instruction 1" in txt and "partial sum kept as bf16" in txt


def test_sycl_tf32_equals_kernel():
    """tf32 joint_matrix (pvc 8x16x8): values exact in tf32 (low 13 bits clear), so no conversion is involved."""
    rng = np.random.default_rng(8)

    def tf32_exact(shape):
        v = rng.standard_normal(shape).astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
        return v.view(np.float32)
    a, b, c = tf32_exact((8, 8)), tf32_exact((8, 16)), rng.standard_normal((8, 16)).astype(np.float32)
    rep = explain("sycl", 5, 11, device="pvc", type="tf32", ctype="fp32", m=8, n=16, k=8, a=a, b=b, c=c)
    q = sycl.queue("pvc")
    d = np.zeros((8, 16), np.float32)
    pa, pb, pc, pd = (sycl.ptr(np.ascontiguousarray(x)) for x in (a, b, c, d))

    def kernel(it):
        s = it.get_sub_group()
        A = jm.joint_matrix(s, jm.precision.tf32, jm.use.a, 8, 8, jm.layout.row_major)
        B = jm.joint_matrix(s, jm.precision.tf32, jm.use.b, 8, 16, jm.layout.row_major)
        C = jm.joint_matrix(s, np.float32, jm.use.accumulator, 8, 16)
        jm.joint_matrix_load(s, A, pa, 8)
        jm.joint_matrix_load(s, B, pb, 16)
        jm.joint_matrix_load(s, C, pc, 16, jm.layout.row_major)
        jm.joint_matrix_mad(s, C, A, B, C)
        jm.joint_matrix_store(s, C, pd, 16, jm.layout.row_major)
    q.parallel_for(sycl.nd_range((1, 16), (1, 16)), kernel)
    D = np.asarray(pd).reshape(8, 16)
    assert rep["result_bits"] == f32bits(D[5, 11])
    assert check_products(rep["steps"][0]["report"]["stages"], 5, 11, a.astype(np.float64), b.astype(np.float64)) == 8
    check_stage_sums(rep["steps"][0]["report"])


def test_sycl_b_holders_follow_the_layout_option():
    rep = explain("sycl", 3, 7, device="pvc", type="bf16", m=16, n=16, k=16, layout="ext_intel_packed")
    L = jm.layout("pvc", "bf16", "b", 16, 16, "ext_intel_packed")
    for st in rep["steps"][0]["report"]["stages"]:
        for y, k in zip(st["b"], st["k"]):
            w = L.where(k, 7)
            assert (y["jm_work_item"], y["jm_index"]) == (w["work_item"], w["index"])
