"""A pyopencl-style host API over the interpreter (issue 21, "API"): a pyopencl script runs by changing its
import line to ``import systolic.cl as cl``.

Names: :class:`Context` (``device=`` any :mod:`systolic.xmx` platform), :func:`create_some_context`
(``SYSTOLIC_DEVICE``, else pvc), :class:`CommandQueue` (in order; ``finish()``), :class:`Program` (``build(options=)``;
kernels as attributes), :class:`Kernel` (``set_arg``/``set_args``, call), :class:`Buffer`, :class:`mem_flags`,
:func:`enqueue_copy`, :func:`enqueue_fill_buffer`, :class:`LocalMemory`, :class:`Event`. Everything runs when
enqueued (the queue is synchronous), so events are complete at once.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..errors import InvalidValue, UnsupportedCombination
from ..xmx.platform import MAX_WORK_GROUP_SIZE, get_platform
from . import irtypes as IT
from .program import BuiltModule, compile_cl

__all__ = ["Context", "create_some_context", "CommandQueue", "Program", "Kernel", "Buffer", "mem_flags",
           "enqueue_copy", "enqueue_fill_buffer", "enqueue_nd_range_kernel", "LocalMemory", "Event", "LaunchStats",
           "LANES_PER_BATCH"]

#: work-groups run together while their lanes fit this many (whole work-groups; memory grows with it)
LANES_PER_BATCH = 1 << 16
#: the most work-items one launch may have: at ~1 us per IR instruction and sub-group an interpreted launch of
#: more would run for days (and its work-group list alone would exhaust memory); refused before any work
MAX_WORK_ITEMS = 1 << 28


class mem_flags:
    READ_WRITE = 1 << 0
    WRITE_ONLY = 1 << 1
    READ_ONLY = 1 << 2
    USE_HOST_PTR = 1 << 3
    ALLOC_HOST_PTR = 1 << 4
    COPY_HOST_PTR = 1 << 5


class CpuDevice:
    """A SYCL CPU device with AMX (spr, emr, gnr, dmr of :mod:`systolic.sycl.devices`) as an OpenCL device: it runs
    SPIR-V IR (joint_matrix through :func:`systolic.sycl.lower_amx.mad`) and plain OpenCL C; the XMX built-ins
    are not there. Sub-groups of 16 by default (DPC++'s CPU device; ``intel_reqd_sub_group_size`` picks others)."""

    backend = "amx"
    exec_size = 0
    subgroup_sizes = (1, 4, 8, 16, 32, 64)
    matrix_subgroup_size = 16

    def __init__(self, sycl_device) -> None:
        self.name = sycl_device.name
        self.engine = sycl_device.engine
        self.description = sycl_device.description

    def __repr__(self) -> str:
        return f"<CPU device {self.name} ({self.engine}, AMX)>"


def _device(name):
    """An XMX platform, or a CPU device with AMX (its SYCL name)."""
    try:
        return get_platform(name)
    except InvalidValue:
        from ..sycl.devices import get_device
        try:
            d = get_device(name)
        except InvalidValue:
            d = None
        if d is not None and d.backend == "amx":
            return CpuDevice(d)
        raise


class Context:
    """A device: ``Context(device="pvc")`` (a platform name or alias of :mod:`systolic.xmx`; default pvc).
    ``devices``: pyopencl's spelling, one name or a one-name list (a context holds one device here); beside a
    ``device=`` naming another device it is InvalidValue. ``engine``: ``"batched"`` (default) or ``"per-call"`` for
    the matrix built-ins (:mod:`systolic.cl.matrix`); ``model``: a :mod:`systolic.xmx` numerics model (default the
    platform's)."""

    def __init__(self, devices=None, *, device: str | None = None, engine: str = "batched", model=None) -> None:
        if device is not None and not isinstance(device, str):
            raise InvalidValue(f"device is a platform name (str), got {type(device).__name__}",
                               rule="systolic.cl.Context(device=NAME)", values={"device": repr(device)[:60]})
        if devices is not None:          # was: anything but a name (or a list starting with one) silently gave pvc
            one = devices if isinstance(devices, str) else (
                devices[0] if isinstance(devices, (list, tuple)) and len(devices) == 1 else None)
            if not isinstance(one, str):
                raise InvalidValue("devices is one device name or a one-name list",
                                   rule="systolic.cl.Context(devices=NAME | [NAME]): one device per context",
                                   values={"devices": repr(devices)[:60]})
            if device is not None and _device(device).name != _device(one).name:
                raise InvalidValue("devices= and device= name two devices; give device= only",
                                   rule="systolic.cl.Context: one device per context",
                                   values={"devices": one, "device": device})
            device = one if device is None else device
        self.platform = _device(device or "pvc")
        if engine not in ("batched", "per-call"):
            raise InvalidValue("engine is 'batched' or 'per-call'", rule="systolic.cl.Context(engine=...)",
                               values={"engine": engine})
        self.engine = engine
        self.model = model
        self.devices = [self.platform.name]

    def __repr__(self) -> str:
        return f"<systolic.cl.Context device={self.platform.name}>"


def create_some_context(interactive=None, answers=None) -> Context:
    """A context on ``SYSTOLIC_DEVICE`` (a platform name), else pvc."""
    return Context(device=os.environ.get("SYSTOLIC_DEVICE") or "pvc")


class Event:
    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = seconds

    def wait(self) -> None:
        return None


class CommandQueue:
    def __init__(self, context: Context, device=None, properties=None) -> None:
        if not isinstance(context, Context):
            raise InvalidValue("CommandQueue takes a systolic.cl.Context", values={"type": type(context).__name__})
        self.context = context
        self.last_stats: LaunchStats | None = None

    def finish(self) -> None:
        return None

    flush = finish


class Buffer:
    """``Buffer(ctx, flags, size=None, hostbuf=None)``: device memory (bytes). With ``USE_HOST_PTR`` it shares
    ``hostbuf``'s memory, with ``COPY_HOST_PTR`` it starts as a copy."""

    def __init__(self, context: Context, flags: int = mem_flags.READ_WRITE, size: int | None = None,
                 hostbuf=None) -> None:
        _need(context, Context, "Buffer(context, ...)", "context")
        self.context = context
        self.flags = _count(flags, "flags", "clCreateBuffer: flags are mem_flags bits (CL_INVALID_VALUE)", 0,
                            _ALL_FLAGS)
        if size is not None:
            size = _count(size, "size", "clCreateBuffer: size is a positive integer (CL_INVALID_BUFFER_SIZE)", 1)
        if hostbuf is not None:
            try:
                hb = np.asarray(hostbuf)
            except (ValueError, TypeError) as e:
                hb = None
                why = str(e)
            else:
                why = f"dtype {hb.dtype}"
            if hb is None or hb.dtype.kind not in "biufcV":
                raise InvalidValue("hostbuf is a numeric numpy array (or buffer-protocol object)",
                                   rule="clCreateBuffer: host_ptr is plain memory (CL_INVALID_HOST_PTR)",
                                   values={"hostbuf": type(hostbuf).__name__, "why": why[:80]})
            if self.flags & mem_flags.USE_HOST_PTR and hb.flags.c_contiguous and hb.flags.writeable:
                data = hb.reshape(-1).view(np.uint8)
            else:
                data = np.ascontiguousarray(hb).reshape(-1).view(np.uint8).copy()
            if size is not None and size > data.size:
                raise InvalidValue("size is larger than hostbuf", rule="clCreateBuffer: size <= hostbuf bytes",
                                   values={"size": size, "hostbuf_bytes": data.size})
            if size is not None:
                data = data[:size]
        else:
            if size is None:
                raise InvalidValue("a Buffer needs size > 0 or hostbuf", rule="clCreateBuffer: CL_INVALID_BUFFER_SIZE",
                                   values={"size": size})
            data = np.zeros(size, np.uint8)
        self.data = data
        self.size = int(data.size)

    def __repr__(self) -> str:
        return f"<systolic.cl.Buffer {self.size} bytes>"


_ALL_FLAGS = (1 << 6) - 1
#: the largest buffer or offset (bytes): an int64 index of the interpreter's flat memory
_MAX_BYTES = (1 << 62)


def _need(obj, cls, where, what):
    if not isinstance(obj, cls):
        raise InvalidValue(f"{where}: {what} is a systolic.cl.{cls.__name__}, got {type(obj).__name__}",
                           rule=f"{where} takes a systolic.cl.{cls.__name__}", values={what: repr(obj)[:60]})


def _host_array(a, what, where):
    """``a`` as a numpy array of numbers (what a host pointer holds), else InvalidValue."""
    try:
        arr = np.asarray(a)
    except (ValueError, TypeError):
        arr = None
    if arr is None or arr.dtype.kind not in "biufcV":
        raise InvalidValue(f"{where}: {what} is a numeric numpy array, got {type(a).__name__}",
                           rule=f"{where}: host memory holds numbers", values={what: repr(a)[:60]})
    return arr


def _count(v, what, rule, lo=0, hi=_MAX_BYTES):
    """``v`` as an int in [lo, hi]: a Python or numpy integer, never a bool, str or float (pyopencl refuses them;
    converting "8" or 8.7 would change what was written)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or not lo <= int(v) <= hi:
        raise InvalidValue(f"{what} is an integer in [{lo}, {hi}], got {v!r:.60}", rule=rule,
                           values={what: repr(v)[:60]})
    return int(v)


class LocalMemory:
    """``LocalMemory(nbytes)``: a ``__local`` kernel argument of this many bytes per work-group."""

    def __init__(self, size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size <= 0:
            raise InvalidValue("LocalMemory takes a positive number of bytes", values={"size": size})
        self.size = int(size)


def enqueue_copy(queue, dest, src, *, is_blocking=True, wait_for=None, device_offset: int = 0) -> Event:
    """Buffer <- numpy array, numpy array <- Buffer, or Buffer <- Buffer (whole source, from ``device_offset``)."""
    _need(queue, CommandQueue, "enqueue_copy(queue, dest, src)", "queue")
    device_offset = _count(device_offset, "device_offset", "clEnqueue*Buffer: the offset is a byte count")
    if isinstance(dest, Buffer) and isinstance(src, Buffer):
        n = src.size
        _fits(dest, device_offset, n, "enqueue_copy")
        dest.data[device_offset:device_offset + n] = src.data
    elif isinstance(dest, Buffer):
        raw = np.ascontiguousarray(_host_array(src, "src", "enqueue_copy")).reshape(-1).view(np.uint8)
        _fits(dest, device_offset, raw.size, "enqueue_copy")
        dest.data[device_offset:device_offset + raw.size] = raw
    elif isinstance(src, Buffer):
        out = _host_array(dest, "dest", "enqueue_copy")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise InvalidValue("enqueue_copy into a host array needs a writable C-contiguous numpy array",
                               values={"type": type(dest).__name__})
        raw = out.reshape(-1).view(np.uint8)
        _fits(src, device_offset, raw.size, "enqueue_copy")
        raw[:] = src.data[device_offset:device_offset + raw.size]
    else:
        raise InvalidValue("enqueue_copy copies between a Buffer and a numpy array (or two Buffers)",
                           values={"dest": type(dest).__name__, "src": type(src).__name__})
    return Event()


def _fits(buf, off, n, what):
    if off < 0 or off + n > buf.size:
        raise InvalidValue(f"{what}: {n} bytes at offset {off} do not fit the buffer of {buf.size} bytes",
                           rule="clEnqueue*Buffer: CL_INVALID_VALUE (region outside the buffer)",
                           values={"bytes": n, "offset": off, "buffer_bytes": buf.size})


def enqueue_fill_buffer(queue, mem: Buffer, pattern, offset: int, size: int, wait_for=None) -> Event:
    """Fill ``size`` bytes from ``offset`` with the repeated bytes of ``pattern`` (a numpy scalar or array)."""
    _need(queue, CommandQueue, "enqueue_fill_buffer(queue, mem, ...)", "queue")
    _need(mem, Buffer, "enqueue_fill_buffer(queue, mem, ...)", "mem")
    offset = _count(offset, "offset", "clEnqueueFillBuffer: offset is a byte count")
    size = _count(size, "size", "clEnqueueFillBuffer: size is a byte count")
    pat = np.ascontiguousarray(_host_array(pattern, "pattern", "enqueue_fill_buffer")).reshape(-1).view(np.uint8)
    if pat.size == 0 or size % pat.size or offset % pat.size:
        raise InvalidValue("offset and size are multiples of the pattern size",
                           rule="clEnqueueFillBuffer: CL_INVALID_VALUE", values={"pattern_bytes": pat.size,
                                                                                  "offset": offset, "size": size})
    _fits(mem, offset, size, "enqueue_fill_buffer")
    mem.data[offset:offset + size] = np.tile(pat, size // pat.size)
    return Event()


class Program:
    """``Program(ctx, source)``: OpenCL C source, or a SPIR-V module as bytes (read through ``llvm-spirv -r``
    when installed: :func:`systolic.cl.program.spirv_to_ir`), or ``Program(ctx, ir=...)``: spir64 LLVM IR text."""

    def __init__(self, context: Context, source: str | None = None, *, ir: str | None = None,
                 filename: str = "kernel.cl", source_dir=None) -> None:
        if not isinstance(context, Context):
            raise InvalidValue("Program takes a systolic.cl.Context", values={"type": type(context).__name__})
        if source is None and ir is None or (source is not None and ir is not None):
            raise InvalidValue("Program takes OpenCL C source or ir=, one of them", rule="Program(ctx, source)")
        self.context = context
        if isinstance(source, (bytes, bytearray, memoryview)):
            from .program import spirv_to_ir
            ir, source = spirv_to_ir(bytes(source)), None
        self.source = source
        self.filename = filename
        self.source_dir = source_dir
        self._ir = ir
        self.built: BuiltModule | None = None
        self._kernels: dict[str, Kernel] = {}

    def build(self, options=None, devices=None) -> "Program":
        ir = self._ir if self._ir is not None else compile_cl(self.source, self.context.platform, options,
                                                              filename=self.filename, source_dir=self.source_dir)
        self.built = BuiltModule(ir, name=self.filename)
        return self

    @property
    def ir(self) -> str:
        self._require()
        return self.built.ir

    @property
    def kernel_names(self) -> list[str]:
        self._require()
        return list(self.built.kernels)

    def _require(self):
        if self.built is None:
            raise InvalidValue("build the program first: Program(ctx, src).build()",
                               rule="clBuildProgram before clCreateKernel")

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("built", "context", "source", "_kernels", "_ir"):
            raise AttributeError(name)
        built = self.__dict__.get("built")
        if name.startswith("_") and (built is None or name not in built.kernels):
            raise AttributeError(name)
        self._require()
        if name not in self.built.kernels:
            raise AttributeError(f"the program has no kernel {name!r}; kernels: {list(self.built.kernels)}")
        k = self._kernels.get(name)
        if k is None:
            k = self._kernels[name] = Kernel(self, name)
        return k


class LaunchStats:
    """What one launch executed: IR instructions x sub-groups, sub-groups, matrix built-in calls, seconds."""

    def __init__(self) -> None:
        self.instructions = 0
        self.sub_groups = 0
        self.work_groups = 0
        self.matrix_calls: dict = {}
        self.seconds = 0.0
        self.sub_group_size = 0
        self.local_size = ()
        self.barriers = 0

    def as_dict(self) -> dict:
        return {"ir_instructions_x_sub_groups": self.instructions, "sub_groups": self.sub_groups,
                "work_groups": self.work_groups, "sub_group_size": self.sub_group_size,
                "local_size": list(self.local_size), "seconds": self.seconds,
                "matrix_calls": {k: {"builtin": v[0].signature, "dpas": v[0].dpas, "calls": v[1]}
                                 for k, v in self.matrix_calls.items()}}


class Kernel:
    """``Kernel(prg, name)``: arguments by ``set_arg(i, v)``/``set_args(...)``, then ``enqueue_nd_range_kernel`` or a
    call ``k(queue, global_size, local_size, *args)``."""

    def __init__(self, program: Program, name: str) -> None:
        program._require()
        if name not in program.built.kernels:
            raise InvalidValue(f"no kernel {name!r} in the program", rule="clCreateKernel: CL_INVALID_KERNEL_NAME",
                               values={"kernels": list(program.built.kernels)})
        self.program = program
        self.name = name
        self.info = program.built.kernels[name]
        self._args: list = [_UNSET] * len(self.info.params)

    @property
    def num_args(self) -> int:
        return len(self.info.params)

    def set_arg(self, index: int, value) -> None:
        if not 0 <= index < len(self._args):
            raise InvalidValue(f"kernel {self.name} has {len(self._args)} arguments; index {index}",
                               rule="clSetKernelArg: CL_INVALID_ARG_INDEX", values={"index": index})
        self._args[index] = value

    def set_args(self, *args) -> None:
        self._check_count(args)
        self._args = list(args)

    def _check_count(self, args):
        if len(args) != len(self.info.params):
            raise InvalidValue(f"kernel {self.name} takes {len(self.info.params)} arguments, got {len(args)}",
                               rule="clSetKernelArg: one value per kernel parameter",
                               values={"parameters": self._describe_params()})

    def _describe_params(self):
        names = self.info.arg_types or self.info.params
        return [f"{t}" for t in names]

    def __call__(self, queue, global_size, local_size, *args, global_offset=None, wait_for=None) -> Event:
        if args:
            self.set_args(*args)
        return enqueue_nd_range_kernel(queue, self, global_size, local_size, global_offset)


_UNSET = object()


def _sizes(v, what, lo=1):
    try:
        t = (v,) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else tuple(v)
    except TypeError:
        t = ()
    if not 1 <= len(t) <= 3 or any(isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer))
                                   or not lo <= x < 1 << 62 for x in t):
        raise InvalidValue(f"{what} is 1 to 3 integers >= {lo}", rule="clEnqueueNDRangeKernel: work_dim 1..3",
                           values={what: repr(v)[:60]})
    return tuple(int(x) for x in t)


def _default_local(G, S):
    loc = [1] * len(G)
    cap = 256
    best = 1
    for d in range(1, min(G[0], cap) + 1):
        if G[0] % d == 0 and (d % S == 0 or d == G[0] or d < S):
            best = d
    loc[0] = best
    return tuple(loc)


def enqueue_nd_range_kernel(queue, kernel: Kernel, global_size, local_size, global_offset=None) -> Event:
    from .interp import Executor
    from .lanes import Lanes
    from .launch import Batch
    _need(queue, CommandQueue, f"kernel {getattr(kernel, 'name', '?')}(queue, global_size, local_size, ...)",
          "queue")
    _need(kernel, Kernel, "enqueue_nd_range_kernel(queue, kernel, ...)", "kernel")
    ctx = queue.context
    P = ctx.platform
    info = kernel.info
    if any(a is _UNSET for a in kernel._args):
        missing = [i for i, a in enumerate(kernel._args) if a is _UNSET]
        raise InvalidValue(f"kernel {kernel.name}: arguments {missing} are not set",
                           rule="clEnqueueNDRangeKernel: CL_INVALID_KERNEL_ARGS", values={"missing": missing})
    G = _sizes(global_size, "global_size")
    dim = len(G)
    S = info.reqd_sub_group_size or P.matrix_subgroup_size
    if S not in P.subgroup_sizes:
        raise UnsupportedCombination(f"kernel {kernel.name} requires sub-group size {S}; {P.name} has "
                                     f"{list(P.subgroup_sizes)}", rule="intel_reqd_sub_group_size: a size the "
                                     "device supports (CL_DEVICE_SUB_GROUP_SIZES_INTEL)",
                                     values={"kernel": kernel.name, "device": P.name, "required": S})
    if local_size is None:
        L = info.reqd_work_group_size[:dim] if info.reqd_work_group_size else _default_local(G, S)
    else:
        L = _sizes(local_size, "local_size")
    if len(L) != dim:
        raise InvalidValue("global_size and local_size have the same number of dimensions",
                           values={"global_size": G, "local_size": L})
    if info.reqd_work_group_size and tuple(L) + (1,) * (3 - dim) != info.reqd_work_group_size:
        raise InvalidValue(f"kernel {kernel.name} requires local size {info.reqd_work_group_size[:dim]}",
                           rule="reqd_work_group_size: CL_INVALID_WORK_GROUP_SIZE",
                           values={"local_size": L, "reqd_work_group_size": info.reqd_work_group_size})
    if any(g % loc for g, loc in zip(G, L)):
        raise InvalidValue("global_size must be a multiple of local_size in every dimension",
                           rule="clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE (uniform work-groups)",
                           values={"global_size": G, "local_size": L})
    wg = int(np.prod(L))
    if wg > MAX_WORK_GROUP_SIZE:
        raise UnsupportedCombination(f"a work-group of {wg} work-items exceeds {P.name}'s maximum of "
                                     f"{MAX_WORK_GROUP_SIZE}", rule="CL_INVALID_WORK_GROUP_SIZE",
                                     values={"local_size": L})
    if int(np.prod(G, dtype=object)) > MAX_WORK_ITEMS:
        raise UnsupportedCombination(f"a launch of {int(np.prod(G, dtype=object))} work-items exceeds the "
                                     f"interpreter's {MAX_WORK_ITEMS}", rule="systolic.cl.host.MAX_WORK_ITEMS: "
                                     "work-items per launch of the SIMT interpreter", values={"global_size": G})
    G3 = G + (1,) * (3 - dim)
    L3 = tuple(L) + (1,) * (3 - dim)
    off = () if global_offset is None else _sizes(global_offset, "global_offset", 0)
    if len(off) > dim:
        raise InvalidValue("global_offset has at most as many dimensions as global_size",
                           rule="clEnqueueNDRangeKernel: global_work_offset has work_dim entries",
                           values={"global_offset": off, "global_size": G})
    off = off + (0,) * (3 - len(off))
    groups = [(x, y, z) for z in range(G3[2] // L3[2]) for y in range(G3[1] // L3[1]) for x in range(G3[0] // L3[0])]
    wg_lanes = -(-wg // S) * S
    per = max(1, LANES_PER_BATCH // wg_lanes)
    built = kernel.program.built
    fn = built.decoded.function(kernel.name)
    stats = LaunchStats()
    stats.sub_group_size = S
    stats.local_size = tuple(L)
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        for b0 in range(0, len(groups), per):
            lanes = Lanes(S, L3, G3, dim, groups[b0:b0 + per], off)
            batch = Batch(built, kernel.name, lanes, P, ctx.engine)
            batch.model = ctx.model
            batch.matrix_calls = stats.matrix_calls
            batch.barriers = 0
            args = _bind(kernel, batch)
            ex = Executor(built.decoded, batch)
            ex.call(fn, args, batch.all_mask)
            stats.instructions += ex.executed
            stats.sub_groups += lanes.G
            stats.work_groups += lanes.n_wg
            stats.barriers += batch.barriers
    stats.seconds = time.perf_counter() - t0
    queue.last_stats = stats
    kernel.last_stats = stats
    return Event(stats.seconds)


def _bind(kernel: Kernel, batch) -> list:
    out = []
    info = kernel.info
    for i, (p, a) in enumerate(zip(info.params, kernel._args)):
        t = IT.vtype(p)
        ctype = info.arg_types[i] if i < len(info.arg_types) else p
        if t.kind == "ptr":
            if t.addrspace == 0:
                # a private pointer parameter (DPC++'s byval structs: accessor ranges, ids): each work-item gets
                # its own copy of the bytes given
                if isinstance(a, (Buffer, LocalMemory)) or a is None:
                    raise InvalidValue(f"kernel {kernel.name} argument {i} ({ctype}) points to private memory: pass "
                                       "the bytes it points to (a numpy array)",
                                       rule="a byval parameter is copied per work-item", values={"argument": i})
                raw = np.ascontiguousarray(np.asarray(a)).reshape(-1).view(np.uint8)
                n = batch.lanes.n
                size = max(raw.size, 1)
                base = batch.mem.add("private", f"argument {i} ({ctype})", np.tile(raw, n) if raw.size else
                                     np.zeros(n, np.uint8), lane_stride=size)
                out.append(base + np.arange(n, dtype=np.int64) * size)
                continue
            if t.addrspace == 3:
                if not isinstance(a, LocalMemory):
                    raise InvalidValue(f"kernel {kernel.name} argument {i} ({ctype}) is __local: pass "
                                       "systolic.cl.LocalMemory(nbytes)", rule="clSetKernelArg: a __local "
                                       "argument is a size", values={"argument": i, "given": type(a).__name__})
                out.append(batch.local_arg(a.size, f"argument {i}"))
                continue
            if not isinstance(a, Buffer):
                raise InvalidValue(f"kernel {kernel.name} argument {i} ({ctype}) is a pointer: pass a "
                                   "systolic.cl.Buffer", rule="clSetKernelArg: CL_INVALID_MEM_OBJECT",
                                   values={"argument": i, "given": type(a).__name__})
            out.append(np.int64(batch.mem.add("global", f"argument {i} ({ctype})", a.data)))
            continue
        if isinstance(a, (Buffer, LocalMemory)) or (isinstance(a, np.ndarray) and a.ndim > 0 and not t.n):
            raise InvalidValue(f"kernel {kernel.name} argument {i} is a {ctype} value, not a buffer",
                               rule="clSetKernelArg: CL_INVALID_ARG_VALUE", values={"argument": i,
                                                                                  "given": type(a).__name__})
        out.append(_scalar(a, t, i, ctype, kernel.name))
    return out


def _scalar(a, t, i, ctype, kname):
    v = np.asarray(a)
    if isinstance(a, np.generic) and v.dtype.itemsize * max(t.n, 1) != t.nbytes and t.kind != "int":
        pass
    if t.kind == "float":
        if v.dtype.kind not in "fiu":
            raise InvalidValue(f"kernel {kname} argument {i} ({ctype}) takes a number",
                               rule="clSetKernelArg: CL_INVALID_ARG_VALUE", values={"given": repr(a)[:40]})
        if isinstance(a, np.generic) and v.dtype != t.dtype and v.dtype.kind == "f":
            raise InvalidValue(f"kernel {kname} argument {i} is {ctype}; got a numpy {v.dtype}",
                               rule="clSetKernelArg: the argument's size is the parameter's (CL_INVALID_ARG_SIZE)",
                               values={"argument": i, "expected": str(t.dtype), "given": str(v.dtype)})
        r = v.astype(t.dtype)
    else:
        if v.dtype.kind not in "iub":
            raise InvalidValue(f"kernel {kname} argument {i} ({ctype}) takes an integer, got {v.dtype}",
                               rule="clSetKernelArg: CL_INVALID_ARG_VALUE", values={"given": repr(a)[:40]})
        if isinstance(a, np.generic) and v.dtype.itemsize != t.elem_bytes and t.bits != 1:
            raise InvalidValue(f"kernel {kname} argument {i} is {ctype} ({t.elem_bytes} bytes); got a numpy "
                               f"{v.dtype}", rule="clSetKernelArg: the argument's size is the parameter's "
                               "(CL_INVALID_ARG_SIZE)", values={"argument": i, "given": str(v.dtype)})
        lo, hi = (-(1 << (t.bits - 1)), (1 << t.bits) - 1) if t.bits > 1 else (0, 1)
        if v.dtype.kind in "iu" and v.size and (int(v.min()) < lo or int(v.max()) > hi):
            raise InvalidValue(f"kernel {kname} argument {i} ({ctype}) does not hold {a}",
                               rule="clSetKernelArg: the value fits the parameter's type", values={"argument": i})
        r = v.astype(np.int64).astype(t.udtype).view(t.dtype) if t.bits > 1 else v.astype(bool)
    if t.n:
        r = np.broadcast_to(r, (t.n,)).copy()
    return r
