"""``systolic tour``: run every engine once on small random inputs and check each against an independent oracle.

The README's "main job": a newcomer sees in one command what systolic does. Each step computes
something on an engine and compares it with a value obtained without that engine (exact integer
arithmetic in numpy int64, exact rationals, or the instruction-by-instruction definition), so the
tour is also a smoke test of an installation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = ["Step", "run_tour"]


@dataclass
class Step:
    engine: str
    what: str
    check: str
    ok: bool
    seconds: float
    #: what agreement means for this step: "bit-identical" (values, bit for bit) or "matches" (a count, a map)
    verdict: str = "bit-identical"


def _wrap32(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.int64) + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


def _amx_int8(rng) -> tuple[str, str, bool]:
    from ..amx import matmul
    a = rng.integers(-128, 128, (64, 256), dtype=np.int8)
    b = rng.integers(-128, 128, (256, 48), dtype=np.int8)
    c = rng.integers(-2 ** 31, 2 ** 31, (64, 48), dtype=np.int64).astype(np.int32)
    got = matmul(a, b, c)
    want = _wrap32(c.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64))
    return "GEMM 64x48x256 int8 as TDPBSSD tiles (emulator)", "int64 numpy, wrapped mod 2^32", bool(
        (got == want).all())


def _amx_bf16(rng) -> tuple[str, str, bool]:
    import ml_dtypes

    from ..amx import matmul
    a = rng.standard_normal((32, 64)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((64, 32)).astype(ml_dtypes.bfloat16)
    fast = matmul(a, b)
    slow = matmul(a, b, method="instructions")
    return ("GEMM 32x32x64 bf16 as TDPBF16PS tiles (emulator)",
            "the same GEMM driven instruction by instruction on a TileMachine", bool(
                (fast.view(np.uint32) == slow.view(np.uint32)).all()))


def _amx_native(rng) -> tuple[str, str, bool] | None:
    from ..amx.native import availability
    ok, _ = availability()
    if not ok:
        return None
    from ..amx import TileConfig, TileMachine
    a = rng.integers(0, 256, 16 * 64, dtype=np.uint8)
    cfg = TileConfig(palette=1, tiles={0: (16, 64), 1: (16, 64), 2: (16, 64)})
    outs = []
    for backend in ("cpu", "native"):
        m = TileMachine(backend=backend)
        m.ldtilecfg(cfg)
        mem = np.concatenate([a, a[::-1], np.zeros(1024, np.uint8)])
        m.tileloadd(1, mem, 0, 64)
        m.tileloadd(2, mem, 1024, 64)
        m.tdpbusd(0, 1, 2)
        m.tilestored(0, mem, 2048, 64)
        m.tilerelease()
        outs.append(mem[2048:].copy())
    return "TDPBUSD on this CPU's AMX unit (native)", "the emulator", bool((outs[0] == outs[1]).all())


def _xmx(rng) -> tuple[str, str, bool]:
    from ..xmx import matmul
    a = rng.integers(-128, 128, (16, 64), dtype=np.int8)
    b = rng.integers(-128, 128, (64, 32), dtype=np.int8)
    got = matmul(a, b, device="pvc")
    want = _wrap32(a.astype(np.int64) @ b.astype(np.int64))
    return "GEMM 16x32x64 int8 as DPAS tiles on pvc (8 x 16 x 32 per DPAS)", "int64 numpy", bool(
        (got == want).all())


def _xmx_exact(rng) -> tuple[str, str, bool]:
    import ml_dtypes

    from ..numerics import FP32, round_fraction
    from ..xmx import matmul
    a = rng.standard_normal((8, 16)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((16, 16)).astype(ml_dtypes.bfloat16)
    got = matmul(a, b, device="pvc", model="exact")
    ok = True
    for i in range(8):
        for j in range(16):
            s = sum(Fraction(float(a[i, k])) * Fraction(float(b[k, j])) for k in range(16))
            ok &= int(got[i, j:j + 1].view(np.uint32)[0]) == round_fraction(s, FP32)
    return 'DPAS bf16 8x16x16 on pvc, model "exact"', "Python fractions, rounded once (RNE)", bool(ok)


_VISA = """
.decl A v_type=G type=d num_elts=8 align=GRF
.decl B v_type=G type=d num_elts=8 align=GRF
.decl P v_type=P num_elts=8
add (M1, 8) A(0,0)<1> A(0,0)<1;1,0> 0x76543210:v
cmp.lt (M1, 8) P A(0,0)<1;1,0> 0x4:d
(P) sel (M1, 8) B(0,0)<1> A(0,0)<1;1,0> 0x64:d
"""


def _visa(rng) -> tuple[str, str, bool]:
    from ..visa import run_text
    m = run_text(_VISA, device="pvc")
    a = np.arange(8)
    want = np.where(a < 4, a, 100)
    return "add with a :v immediate, cmp to a predicate, predicated sel (SIMD8)", \
        "the same element by element in numpy", bool((m.read("B") == want).all() and (m.read("A") == a).all())


_IR = """
@buf = global [1024 x i8] zeroinitializer, align 64
define void @k(i16 %m) {
entry:
  %c = call x86_amx @llvm.x86.tilezero.internal(i16 %m, i16 64)
  %a = call x86_amx @llvm.x86.tileloadd64.internal(i16 %m, i16 64, ptr @buf, i64 64)
  %b = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr @buf, i64 64)
  %d = call x86_amx @llvm.x86.tdpbssd.internal(i16 %m, i16 64, i16 64, x86_amx %c, x86_amx %a, x86_amx %b)
  call void @llvm.x86.tilestored64.internal(i16 %m, i16 64, ptr @buf, i64 64, x86_amx %d)
  ret void
}
"""


def _compiler(rng) -> tuple[str, str, bool]:
    from ..compiler import compile_ir
    buf = rng.integers(-128, 128, 1024, dtype=np.int64).astype(np.int8).view(np.uint8)
    a = buf.view(np.int8).reshape(16, 64).astype(np.int64)
    mod = compile_ir(_IR)
    mem = buf.copy()
    mod.run("k", 16, memory={"buf": mem})
    # B is A's bytes read as a VNNI tile: B[k, n] = byte 4*n + k % 4 of row k // 4
    bvnni = a.reshape(16, 16, 4).transpose(0, 2, 1).reshape(64, 16)
    want = _wrap32(a @ bvnni)
    return "LLVM IR (x86_amx) -> shapes, ldtilecfg, tile regalloc -> run", \
        "int64 numpy", bool((mem.view(np.int32).reshape(16, 16) == want).all())


def _counts(rng) -> tuple[str, str, bool]:
    from .. import counters
    from ..xmx import matmul
    a = rng.integers(-128, 128, (20, 64), dtype=np.int8)
    b = rng.integers(-128, 128, (64, 40), dtype=np.int8)
    with counters.recording() as rec:
        matmul(a, b, device="pvc")
    # 3 row tiles (RC 8) x 3 column tiles (exec 16) x 2 DPAS of K 32; `systolic run` reports these counts
    return "DPAS issued by a 20x40x64 int8 GEMM on pvc (systolic.counters)", "3 x 3 x 2 = 18, counted by hand", \
        rec.total("dpas") == 18


def _sycl(rng) -> tuple[str, str, bool]:
    """A joint_matrix int8 GEMM written per work-item (one sub-group of 16 on pvc)."""
    from .. import sycl
    from ..sycl.matrix import (joint_matrix, joint_matrix_fill, joint_matrix_load, joint_matrix_mad,
                               joint_matrix_store, layout, use)
    M, N, K, SG = 8, 16, 64, 16
    a = rng.integers(-128, 128, (M, K), dtype=np.int8)
    b = rng.integers(-128, 128, (K, N), dtype=np.int8)
    c = np.zeros((M, N), np.int32)
    pa, pb, pc = sycl.ptr(a), sycl.ptr(b), sycl.ptr(c)

    def kernel(item):
        sg = item.get_sub_group()
        ta = joint_matrix(sg, np.int8, use.a, M, 32, layout.row_major)
        tb = joint_matrix(sg, np.int8, use.b, 32, N, layout.row_major)
        tc = joint_matrix(sg, np.int32, use.accumulator, M, N)
        joint_matrix_fill(sg, tc, 0)
        for k in range(0, K, 32):
            joint_matrix_load(sg, ta, pa + k, K)
            joint_matrix_load(sg, tb, pb + k * N, N)
            joint_matrix_mad(sg, tc, ta, tb, tc)
        joint_matrix_store(sg, tc, pc, N, layout.row_major)

    sycl.queue("pvc").parallel_for(sycl.nd_range((1, SG), (1, SG)), kernel).wait()
    want = a.astype(np.int64) @ b.astype(np.int64)
    return "joint_matrix int8 8x16x64 kernel, per work-item, on pvc (2 joint_matrix_mad)", "int64 numpy", \
        bool((np.asarray(pc).reshape(M, N) == want).all())


def _opencl(rng) -> tuple[str, str, bool]:
    """One OpenCL sub-group built-in, its operands distributed over the 16 work-items as the extension says."""
    from .. import opencl
    name = "intel_sub_group_i8_i8_matrix_mad_k32"
    a = rng.integers(-128, 128, (8, 32), dtype=np.int64)
    b = rng.integers(-128, 128, (32, 16), dtype=np.int64)
    acc = rng.integers(-2 ** 20, 2 ** 20, (8, 16), dtype=np.int64)
    args = [opencl.distribute(name, op, x, device="pvc") for op, x in (("a", a), ("b", b), ("acc", acc))]
    got = opencl.gather(name, "result", getattr(opencl, name)(*args, device="pvc"), device="pvc")
    return f"OpenCL {name} on pvc (16 work-items)", "int64 numpy", bool((got == acc + a @ b).all())


def _layout(rng) -> tuple[str, str, bool]:
    """Who holds B of a bf16 DPAS on pvc, for every element, against the rule written out by hand."""
    from ..explorer import resolve, where
    L = resolve("dpas", "b", device="pvc", precision="bf16")
    # visa-DPAS: B (K x N) bf16 is VNNI-packed, two K rows per dword: element (k, n) is in GRF k // 2,
    # dword n (exec size 16 fills a 64-byte GRF), bits 16 * (k % 2)
    ok = all((w := where(L, k, n))["grf"] == k // 2 and w["dword"] == n and w["bits"][0] == 16 * (k % 2)
             for k in range(16) for n in range(16))
    return "systolic layout where dpas b (bf16, pvc): all 256 elements", \
        "GRF k // 2, dword n, bits 16 (k % 2), by hand", bool(ok)


def _torch(rng) -> tuple[str, str, bool] | None:
    """An unchanged torch matmul under XMX numerics (needs torch)."""
    try:
        import torch
    except ImportError:
        return None
    import systolic.torch as st
    a = rng.integers(-8, 9, (16, 32))
    b = rng.integers(-8, 9, (32, 24))
    with st.emulate("xmx:pvc", precision="bf16"):
        got = torch.mm(torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32))
    # small integers: bf16-exact inputs, exact products and sums (|sum| < 2^24), so fp32 holds them exactly
    return "torch.mm under st.emulate('xmx:pvc', precision='bf16')", "int64 numpy (exact here)", \
        bool((got.numpy().astype(np.int64) == a @ b).all())


#: the steps whose agreement is a count or a map rather than values
_MATCHES = {_counts, _layout}


def run_tour(seed: int = 0) -> list[Step]:
    from .inputs import seeded_rng
    rng = seeded_rng(seed)
    steps = []
    for engine, fn in (("AMX", _amx_int8), ("AMX", _amx_bf16), ("AMX native", _amx_native), ("XMX", _xmx),
                       ("XMX", _xmx_exact), ("SYCL", _sycl), ("OpenCL", _opencl), ("vISA", _visa),
                       ("compiler", _compiler), ("layout", _layout), ("counters", _counts), ("torch", _torch)):
        t = time.perf_counter()
        r = fn(rng)
        if r is None:
            continue
        steps.append(Step(engine, r[0], r[1], r[2], time.perf_counter() - t,
                          "matches" if fn in _MATCHES else "bit-identical"))
    return steps
