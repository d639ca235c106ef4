"""Run OpenCL C kernels and spir64 LLVM IR unchanged on the emulated XMX engines (issue 21; docs/cl.md).

A subset of pyopencl's names, so a pyopencl host script runs by changing its import line::

    import systolic.cl as cl
    ctx = cl.create_some_context()             # SYSTOLIC_DEVICE, else pvc
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, source).build(options="-DTILE=16")
    prg.gemm(queue, (N, M), None, c_buf, a_buf, b_buf, np.int32(K))

Pieces: :mod:`~systolic.cl.prelude` (the OpenCL C prelude generated from systolic.opencl's tables),
:mod:`~systolic.cl.program` (clang through :mod:`systolic.llvmir`, LLVM's parser), :mod:`~systolic.cl.interp` and
:mod:`~systolic.cl.ops` (the SIMT interpreter of spir64 IR), :mod:`~systolic.cl.memory` (bounds-checked address
spaces), :mod:`~systolic.cl.library` (built-ins), :mod:`~systolic.cl.matrix` (the matrix built-ins, through
systolic.opencl), :mod:`~systolic.cl.blocks` (2D block IO), :mod:`~systolic.cl.host` (the host API).
"""

from __future__ import annotations

from .host import (Buffer, CommandQueue, Context, Event, Kernel, LaunchStats, LocalMemory, Program,
                   create_some_context, enqueue_copy, enqueue_fill_buffer, enqueue_nd_range_kernel, mem_flags)
from .prelude import prelude

__all__ = ["Context", "create_some_context", "CommandQueue", "Program", "Kernel", "Buffer", "mem_flags",
           "enqueue_copy", "enqueue_fill_buffer", "enqueue_nd_range_kernel", "LocalMemory", "Event", "LaunchStats",
           "prelude"]
