"""The GEMM examples of this directory run from a pyopencl-style host script (change `import systolic.cl as cl`
to `import pyopencl as cl` and it is a pyopencl script). Each result is checked against an exact oracle.

    python examples/cl/gemm_host.py                    # every GEMM example on its device
    python examples/cl/gemm_host.py gemm_int8_pvc.cl bmg
"""
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

import systolic.cl as cl

HERE = Path(__file__).parent
#: file -> (kernel, device, A/B element type, VNNI factor of B (0: row-major), tile M x N per work-group, size)
GEMMS = {
    "gemm_int8_dg2.cl": ("gemm_s8", "dg2", np.int8, 4, (8, 8), 64),
    "gemm_int8_pvc.cl": ("gemm_s8", "pvc", np.int8, 4, (8, 16), 64),
    "gemm_bf16_dg2.cl": ("gemm_bf16", "dg2", ml_dtypes.bfloat16, 2, (8, 8), 64),
    "gemm_bf16_pvc.cl": ("gemm_bf16", "pvc", ml_dtypes.bfloat16, 2, (8, 16), 64),
    "gemm_tf32_pvc.cl": ("gemm_tf32", "pvc", np.float32, 0, (8, 16), 32),
    "gemm_split_dg2.cl": ("gemm_split", "dg2", np.int8, 4, (8, 16), 32),
}


def run(name: str, device: str | None = None) -> bool:
    kname, dev, dt, vnni, (tm, tn), n = GEMMS[name]
    ctx = cl.Context(device=device or dev)
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, (HERE / name).read_text()).build()
    rng = np.random.default_rng(0)
    lo, hi = (-128, 128) if dt == np.int8 else (-8, 9)
    A = rng.integers(lo, hi, (n, n)).astype(dt)
    B = rng.integers(lo, hi, (n, n)).astype(dt)
    Bk = B.reshape(n // vnni, vnni, n).transpose(0, 2, 1).copy() if vnni else B     # the VNNI form
    is_int = dt == np.int8
    C = np.zeros((n, n), np.int32 if is_int else np.float32)
    mf = cl.mem_flags
    a_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=A)
    b_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=Bk)
    c_buf = cl.Buffer(ctx, mf.WRITE_ONLY, C.nbytes)
    getattr(prg, kname)(queue, (n * (16 if dev == "pvc" or "split" in name else 8) // tn, n // tm), None,
                        c_buf, a_buf, b_buf, np.int32(n), np.int32(n))
    cl.enqueue_copy(queue, C, c_buf)
    queue.finish()
    exact = A.astype(np.float64) @ B.astype(np.float64)
    ok = bool((C == exact.astype(C.dtype)).all())
    print(f"{name} on {ctx.platform.name}: {'bit-identical to the exact product' if ok else 'MISMATCH'} "
          f"({queue.last_stats.sub_groups} sub-groups)")
    return ok


if __name__ == "__main__":
    names = [sys.argv[1]] if len(sys.argv) > 1 else list(GEMMS)
    results = [run(nm, sys.argv[2] if len(sys.argv) > 2 else None) for nm in names]
    sys.exit(0 if all(results) else 1)
