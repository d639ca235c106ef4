"""collatz_divergent.cl from a pyopencl-style host script: divergent loops, then a sub-group reduction."""
import sys
from pathlib import Path

import numpy as np

import systolic.cl as cl


def steps(n: int) -> int:
    c = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        c += 1
    return c


ctx = cl.Context(device=sys.argv[1] if len(sys.argv) > 1 else "pvc")
queue = cl.CommandQueue(ctx)
prg = cl.Program(ctx, (Path(__file__).parent / "collatz_divergent.cl").read_text()).build()
n = 64
s_buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 4 * n)
t_buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 4 * n)
knl = cl.Kernel(prg, "collatz")                  # the set_arg form
knl.set_arg(0, s_buf)
knl.set_arg(1, t_buf)
cl.enqueue_nd_range_kernel(queue, knl, (n,), (32,))
got, tot = np.zeros(n, np.int32), np.zeros(n, np.int32)
cl.enqueue_copy(queue, got, s_buf)
cl.enqueue_copy(queue, tot, t_buf)
want = np.array([steps(i + 1) for i in range(n)], np.int32)
ok = bool((got == want).all() and (tot == np.repeat(want.reshape(-1, 16).sum(axis=1), 16)).all())
print(f"collatz_divergent on {ctx.platform.name}: {'equal to Python' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
