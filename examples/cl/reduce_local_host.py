"""reduce_local.cl from a pyopencl-style host script: a __local argument (cl.LocalMemory) and barriers."""
import sys
from pathlib import Path

import numpy as np

import systolic.cl as cl

ctx = cl.create_some_context()                   # SYSTOLIC_DEVICE, else pvc
queue = cl.CommandQueue(ctx)
prg = cl.Program(ctx, (Path(__file__).parent / "reduce_local.cl").read_text()).build()
x = np.arange(1024, dtype=np.int32)
mf = cl.mem_flags
x_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
sums = np.zeros(1024 // 64, np.int32)
s_buf = cl.Buffer(ctx, mf.WRITE_ONLY, sums.nbytes)
prg.reduce_sum(queue, (1024,), (64,), x_buf, s_buf, cl.LocalMemory(64 * 4))
cl.enqueue_copy(queue, sums, s_buf)
ok = bool((sums == x.reshape(-1, 64).sum(axis=1)).all())
print(f"reduce_local on {ctx.platform.name}: {'equal to numpy' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
