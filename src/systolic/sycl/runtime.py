"""The SYCL runtime objects joint_matrix kernels need: queue, USM pointers, nd_range, nd_item, sub_group.

Names mirror SYCL 2020 (``queue``, ``malloc_shared``, ``parallel_for``, ``nd_range``, ``nd_item``,
``sub_group``). Linear ids follow SYCL 2020 section 3.11.1: the last dimension varies fastest; sub-groups are
consecutive runs of ``sub_group_size`` local linear ids inside a work-group.
"""

from __future__ import annotations

import operator

import numpy as np

from ..errors import InvalidValue, MemoryFault, UnsupportedCombination
from ..vocabulary import check_path, spelled
from . import simt
from .devices import Device, get_device
from .simt import USMPtrLike, Varying

__all__ = [
    "USMPtr",
    "device",
    "event",
    "group",
    "nd_item",
    "nd_range",
    "ptr",
    "queue",
    "range",
    "storage_dtype",
    "sub_group",
]

_builtin_range = range


#: ml_dtypes element types numpy reports as kind "V": numbers too
_ML_NUMBERS = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3", "float8_e3m4", "float4_e2m1fn",
               "float6_e2m3fn", "float6_e3m2fn", "int4", "uint4", "int2", "uint2")


def storage_dtype(T) -> np.dtype:
    """The numpy dtype that stores elements of ``T`` (a numpy/ml_dtypes number type; ``precision.tf32`` ->
    float32). ``None`` (numpy's float64 default), strings, objects, complex and datetimes are refused: USM holds
    the element types a kernel computes with."""
    from .matrix_core import tf32
    if T is tf32 or (isinstance(T, str) and T == "tf32"):
        return np.dtype(np.float32)
    if T is None or isinstance(T, (bool, int, float)):
        raise InvalidValue(f"{T!r} is not an element type", rule="an element type: a numpy / ml_dtypes number type",
                           values={"type": repr(T)})
    try:
        dt = np.dtype(T)
    except (TypeError, ValueError, SyntaxError):
        raise InvalidValue(f"{T!r} is not an element type", values={"type": repr(T)}) from None
    if dt.kind not in "biuf" and dt.name not in _ML_NUMBERS:
        raise InvalidValue(f"{dt} is not a number type USM elements can have",
                           rule="an element type: a numpy / ml_dtypes number type", values={"type": str(dt)})
    return dt


def _elements(value, dt: np.dtype, what: str) -> np.ndarray:
    """``value`` (a number or array) as elements of ``dt``.

    Integer elements take the integers they hold exactly: a value out of range, a float with a fraction, NaN or
    infinity is refused (:class:`InvalidValue`), not wrapped or truncated. Float elements take any real number,
    rounded once to nearest even (C++'s conversion to float / half / bfloat16; out of range gives +-inf).
    Strings, None, complex numbers and other objects are refused."""
    from .. import types as Ty
    from ..numerics.rounding import as_exact_array
    try:
        a = as_exact_array(value)
    except (TypeError, ValueError, OverflowError):
        a = np.asarray(value, dtype=object)
    k = a.dtype.kind
    if k == "O":
        odd = [x for x in a.flat if not isinstance(x, (bool, int, float, np.integer, np.floating))]
    else:
        odd = [] if (k in "biuf" or a.dtype.name in _ML_NUMBERS) else [value]
    if odd:
        raise InvalidValue(f"{what}: {odd[0]!r:.60} is not a number {dt} can hold", rule="USM elements are numbers",
                           values={"value": repr(odd[0])[:60], "type": str(dt)})
    if dt.kind in "iu":
        if k in "biu":
            ints = a
        else:
            vals = list(a.flat) if k == "O" else list(a.astype(np.float64).flat)
            bad = [x for x in vals if not isinstance(x, (int, np.integer)) and not (
                np.isfinite(float(x)) and float(x) == int(float(x)))]
            if bad:
                raise InvalidValue(f"{what}: {bad[0]!r} is not an integer; {dt} elements hold integers exactly",
                                   rule="a value enters exactly or is refused (no truncation)",
                                   values={"value": repr(bad[0]), "type": str(dt)})
            ints = np.array([int(x) for x in vals], dtype=object).reshape(a.shape)
        info = np.iinfo(dt)
        if a.size:
            lo, hi = int(ints.min()), int(ints.max())
            if lo < info.min or hi > info.max:
                v = lo if lo < info.min else hi
                raise InvalidValue(f"{what}: {v} is out of range for {dt}",
                                   rule=f"{dt} holds [{info.min}, {info.max}]; a value enters exactly or is refused "
                                        "(no wrapping)", values={"value": v, "type": str(dt)})
        return ints.astype(dt)
    if dt.name in ("float32", "float16", "bfloat16"):       # one rounding from the exact value (big ints too)
        name = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}[dt.name]
        return np.asarray(Ty.convert(a if k != "b" else a.astype(np.int64), name)).astype(dt)
    try:
        return a.astype(dt)
    except OverflowError:
        raise InvalidValue(f"{what}: a value is out of range for {dt}", values={"type": str(dt)}) from None


class range(tuple):
    """``sycl::range<D>``: 1 to 3 positive extents."""

    def __new__(cls, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        if not 1 <= len(dims) <= 3:
            raise InvalidValue("a range has 1 to 3 dimensions", values={"dims": dims})
        out = []
        for d in dims:
            if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 1:
                raise InvalidValue("range extents are positive integers", values={"range": dims})
            out.append(int(d))
        return super().__new__(cls, out)

    def size(self) -> int:
        return int(np.prod(self))


class nd_range:
    """``sycl::nd_range<D>(global, local)``: the global range must be a multiple of the local range."""

    def __init__(self, global_range, local_range) -> None:
        g = global_range if isinstance(global_range, range) else range(*_tuple(global_range))
        lo = local_range if isinstance(local_range, range) else range(*_tuple(local_range))
        if len(g) != len(lo):
            raise InvalidValue("global and local ranges have different dimensions", values={"global": g, "local": lo})
        if any(a % b for a, b in zip(g, lo)):
            raise InvalidValue("the global range is not a multiple of the local range",
                               rule="SYCL 2020 4.9.1.2: global % local == 0", values={"global": g, "local": lo})
        self.global_range, self.local_range = g, lo

    def __repr__(self) -> str:
        return f"nd_range({tuple(self.global_range)}, {tuple(self.local_range)})"


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


class USMPtr(USMPtrLike):
    """A USM pointer: a flat numpy array and an element offset (``ptr + n`` moves by ``n`` elements, as in C++).

    Inside a vectorised kernel the offset may be a :class:`~systolic.sycl.simt.Varying` (one per work-item).
    ``np.asarray(p)`` / ``p.numpy()`` give the elements from the offset on (a view).
    """

    __slots__ = ("mem", "offset")
    # numpy must not treat a pointer as an array operand (array + p would broadcast its elements): with
    # __array_ufunc__ = None, ndarray + p defers to p.__radd__, which refuses what is not an integer offset
    __array_ufunc__ = None

    def __init__(self, mem: np.ndarray, offset=0) -> None:
        self.mem, self.offset = mem, offset

    @property
    def dtype(self) -> np.dtype:
        return self.mem.dtype

    def _off(self, k):
        if isinstance(k, USMPtrLike):
            raise InvalidValue("pointer + pointer is not defined")
        if isinstance(k, Varying):
            return self.offset + k
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise InvalidValue(f"a pointer moves by an integer number of elements, not {type(k).__name__}",
                               values={"offset": repr(k)[:60]})
        off = self.offset + int(k)
        if not isinstance(off, Varying) and not -(1 << 62) <= off < (1 << 62):
            raise InvalidValue("a pointer offset past 2**62 elements has no address",
                               rule="USM pointers are 64-bit addresses", values={"offset": off})
        return off

    def __add__(self, k) -> USMPtr:
        return USMPtr(self.mem, self._off(k))

    __radd__ = __add__

    def __sub__(self, k):
        if isinstance(k, USMPtr):
            if not simt.same_memory(k.mem, self.mem):
                raise InvalidValue("pointers into different allocations cannot be subtracted")
            return self.offset - k.offset
        if isinstance(k, USMPtrLike):
            raise InvalidValue("pointer - pointer needs two USM pointers of one allocation")
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer, Varying)):
            raise InvalidValue(f"a pointer moves by an integer number of elements, not {type(k).__name__}",
                               values={"offset": repr(k)[:60]})
        return self.__add__(-k)

    def __eq__(self, o) -> bool:  # type: ignore[override]
        return isinstance(o, USMPtr) and simt.same_memory(o.mem, self.mem) and bool(np.all(np.asarray(
            o.offset.v if isinstance(o.offset, Varying) else o.offset) == np.asarray(
            self.offset.v if isinstance(self.offset, Varying) else self.offset)))

    __hash__ = None  # type: ignore[assignment]

    def _index(self, i):
        off = self._off(i)
        idx = off.v if isinstance(off, Varying) else np.asarray(off)
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= self.mem.size):
            raise MemoryFault("access outside the USM allocation", rule="USM pointer bounds",
                              values={"allocation_elements": int(self.mem.size), "min_index": int(idx.min()),
                                      "max_index": int(idx.max())})
        return off, idx

    def __getitem__(self, i):
        off, idx = self._index(i)
        v = self.mem[idx]
        return Varying(v) if isinstance(off, Varying) else v[()]

    def __setitem__(self, i, value) -> None:
        _, idx = self._index(i)
        if not self.mem.flags.writeable:
            raise InvalidValue("the USM allocation is read-only (a read-only numpy array wrapped by ptr())",
                               rule="a kernel writes only writable memory", values={"elements": int(self.mem.size)})
        val = _elements(value.v if isinstance(value, Varying) else value, self.mem.dtype, "USM element assignment")
        if val.ndim and val.shape != np.shape(idx) and val.size != 1:
            try:
                np.broadcast_to(val, np.shape(idx))
            except ValueError:
                raise InvalidValue("the assigned values do not match the elements addressed",
                                   values={"values": val.shape, "elements": np.shape(idx)}) from None
        if not np.shape(idx) and val.ndim:
            raise InvalidValue("one element takes one value, not an array", values={"shape": val.shape})
        L = simt.current_launch()
        if L is not None:
            L.write(self.mem, idx, val)
        else:
            self.mem[idx] = val

    def numpy(self) -> np.ndarray:
        if isinstance(self.offset, Varying):
            raise InvalidValue("a per-work-item pointer has no single array view")
        return self.mem[self.offset:]

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __len__(self) -> int:
        return self.mem.size - int(self.offset)

    def __repr__(self) -> str:
        return f"USMPtr(<{self.mem.size} x {self.mem.dtype}>, offset={self.offset!r})"


def ptr(array) -> USMPtr:
    """Wrap an existing numpy array (C-contiguous; a flat view is kept, writes go to the array) as a USM pointer."""
    if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
        raise InvalidValue("ptr() wraps a C-contiguous numpy array (so kernel writes reach it)",
                           values={"type": type(array).__name__})
    storage_dtype(array.dtype)          # numbers only (an object or string array is refused here)
    return USMPtr(array.reshape(-1))


class event:
    """``sycl::event``: the work already ran (this runtime is synchronous); ``wait()`` returns at once."""

    def __init__(self, mode: str, counts: dict) -> None:
        self.mode, self.collectives = mode, dict(counts)

    def wait(self) -> event:
        return self


class device:
    """``sycl::device`` for one architecture (:mod:`systolic.sycl.devices`)."""

    def __init__(self, record: Device) -> None:
        self.record = record

    @property
    def name(self) -> str:
        return self.record.name

    def get_info(self, what: str):
        """``get_info<...>()``: "matrix_combinations", "sub_group_sizes", "name", "architecture", "backend",
        and Intel's ``ext::intel::experimental::info::device::matrix::numtiles`` ("numtiles")."""
        key = str(what).split("::")[-1]
        if key == "numtiles":
            return self._numtiles()
        if key == "matrix_combinations":
            return list(self.record.combinations)
        if key == "sub_group_sizes":
            return [self.record.sub_group_size]
        if key in ("name", "architecture", "backend", "kind", "engine", "description"):
            return getattr(self.record, key)
        raise InvalidValue(f"unknown device info {what!r}",
                           rule="matrix_combinations, sub_group_sizes, name, architecture, backend, kind, engine, "
                                "numtiles",
                           values={"info": what})

    def _numtiles(self) -> int:
        """sycl_ext_intel_matrix, New Device Information Descriptor, ``matrix::numtiles``: "If the matrix hardware
        in the device has separate storage (register files or tiles) from the rest of the processing units (e.g.
        Intel AMX), returns the number of tiles. For other devices, returns 0." AMX: the tile names of palette 1
        (CPUID 1DH, the CPU model of :mod:`systolic.amx`); XMX works on the GRF: 0."""
        if self.record.backend != "amx":
            return 0
        from ..amx import get_cpu
        return int(get_cpu(self.record.engine).palette(1).max_names)

    def __repr__(self) -> str:
        return f"device({self.record.name})"


#: queue(amx_backend=) older spellings -> (where it runs, path)
_OLD_AMX_BACKENDS = {"emulator": ("cpu", "fast"), "spec": ("cpu", "spec"), "llvm": ("native", "fast")}
#: queue(amx_backend=) -> the tile compiler's backend= (systolic.compiler Module.run: its "native" runs each
#: instruction on AMX, its "llvm" the whole JIT-compiled program, which is what amx_backend="native" means here)
_COMPILER_BACKEND = {"cpu": "cpu", "native": "llvm"}


class queue:
    """``sycl::queue`` on a device named by architecture ("spr", "pvc", ...).

    ``amx``: how AMX devices execute joint_matrix ("fast": :func:`systolic.amx.matmul`, proven equal to the tile
    instructions; "tiles": each mad as :mod:`systolic.amx.intrinsics` calls on the TileMachine emulator;
    "compiled": the whole kernel traced to tile IR by :mod:`systolic.compiler` and run where ``amx_backend``
    says: "cpu" (the TileMachine emulator, its ``path`` "fast" or "spec"; default: fast) or "native" (JIT-compiled
    for this CPU's AMX); see :mod:`systolic.sycl.lower_amx_compiled`). ``amx_backend="emulator" | "spec" |
    "llvm"`` are the older spellings of cpu / cpu with path="spec" / native (DeprecationWarning; a ``path=`` given
    beside one that says otherwise is InvalidValue). ``.amx_backend`` and ``.amx_path`` read back the new
    spellings (``"cpu"`` or ``"native"``; ``"fast"`` or ``"spec"``).
    ``mode``: "auto" (vectorised, per work-item when control flow diverges), "vector" or "per-item".
    """

    def __init__(self, dev="pvc", *, amx: str = "fast", mode: str = "auto", amx_backend: str = "cpu",
                 path: str | None = None) -> None:
        if isinstance(dev, device):
            dev = dev.record
        self._device = device(get_device(dev))
        if amx not in ("fast", "tiles", "compiled"):
            raise InvalidValue("unknown AMX execution", rule="amx='fast', 'tiles' or 'compiled'", values={"amx": amx})
        if path is not None:             # None: not given (the fast path, unless an older amx_backend says spec)
            check_path(path, "sycl.queue")
        if isinstance(amx_backend, str) and amx_backend in _OLD_AMX_BACKENDS:   # the older spellings
            where, old_path = _OLD_AMX_BACKENDS[amx_backend]
            new = spelled(f"amx_backend={amx_backend!r}", {"amx_backend": where, "path": old_path}, "sycl.queue",
                          stacklevel=2, path=path)
            amx_backend, path = new["amx_backend"], new["path"]
        if not isinstance(amx_backend, str) or amx_backend not in _COMPILER_BACKEND:
            raise InvalidValue("unknown backend of the compiled AMX path", rule="amx_backend: cpu, native",
                               values={"amx_backend": amx_backend})
        #: where the compiled program runs ("cpu" or "native") and by which path, in the caller's words; the tile
        #: compiler's name for the backend is passed down where it runs (parallel_for)
        self.amx_backend: str = amx_backend
        self.amx_path: str = "fast" if path is None else path
        if self.amx_path == "spec" and amx_backend != "cpu":
            raise InvalidValue(f"the spec path runs on the cpu backend, not {amx_backend}",
                               rule="sycl.queue: path='spec' is the TileMachine's, in this process",
                               values={"amx_backend": amx_backend, "path": path})
        self.last_compiled = None
        if mode not in ("auto", "vector", "per-item"):
            raise InvalidValue("unknown execution mode", rule="auto, vector, per-item", values={"mode": mode})
        self.amx, self.mode = amx, mode
        self.last_event: event | None = None

    def get_device(self) -> device:
        return self._device

    def malloc_shared(self, count, dtype) -> USMPtr:
        """``malloc_shared<T>(count, q)``: ``count`` zeroed elements of ``dtype``."""
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)) or count < 0:
            raise InvalidValue("malloc_shared needs a non-negative integer element count",
                               rule="SYCL 2020 malloc_shared(size_t count, ...)", values={"count": repr(count)[:60]})
        n = operator.index(count)
        dt = storage_dtype(dtype)
        try:
            if n * dt.itemsize >= 1 << 63:
                raise MemoryError
            return USMPtr(np.zeros(n, dtype=dt))
        except (MemoryError, ValueError):  # SYCL 2020 returns nullptr here; a Python caller gets the reason instead
            raise InvalidValue(f"malloc_shared cannot allocate {n} elements of {dt} on this host",
                               rule="SYCL 2020 malloc_shared: nullptr when the allocation cannot be made",
                               values={"count": n, "bytes": n * dt.itemsize}) from None

    malloc_device = malloc_shared

    def parallel_for(self, ndr: nd_range, kernel) -> event:
        """Run ``kernel(item)`` for every work-item of ``ndr`` (SIMT; see :mod:`systolic.sycl.simt`)."""
        if not isinstance(ndr, nd_range):
            raise InvalidValue("parallel_for takes an nd_range (joint_matrix needs sub-groups)",
                               values={"range": type(ndr).__name__})
        if not callable(kernel):
            raise InvalidValue("parallel_for runs a kernel: a callable taking the nd_item",
                               rule="parallel_for(nd_range, kernel(item))", values={"kernel": type(kernel).__name__})
        rec = self._device.record
        sg = rec.sub_group_size
        wg = ndr.local_range.size()
        if wg % sg:
            raise InvalidValue(f"the work-group size {wg} is not a multiple of {rec.name}'s sub-group size {sg}",
                               rule="reqd_sub_group_size divides the work-group size",
                               values={"local": tuple(ndr.local_range), "sub_group_size": sg})
        mx = rec.max_work_group_size
        if mx is not None and wg > mx:
            raise UnsupportedCombination(f"a work-group of {wg} work-items exceeds {rec.name}'s "
                                         f"max_work_group_size {mx} (errc::nd_range)",
                                         rule="intel/compute-runtime device_caps.cpp: maxWorkGroupSize = "
                                              "min(threads x SIMD, 1024)",
                                         values={"local": tuple(ndr.local_range), "work_group_size": wg, "max": mx})
        try:
            launch = simt.Launch(self, tuple(ndr.global_range), tuple(ndr.local_range), sg)
        except MemoryError:     # the emulator keeps ids per work-item: an ND-range this host cannot hold
            raise InvalidValue(f"the ND-range of {ndr.global_range.size()} work-items does not fit in this host's "
                               "memory", rule="the emulator holds per-work-item ids in host memory",
                               values={"global": tuple(ndr.global_range), "local": tuple(ndr.local_range)}) from None
        if rec.backend == "amx" and self.amx == "compiled":
            from .lower_amx_compiled import run_compiled
            with simt.launched(launch):
                self.last_compiled = run_compiled(launch, kernel, lambda w: nd_item(launch, w),
                                                  _COMPILER_BACKEND[self.amx_backend], self.amx_path)
            self.last_event = event("compiled", launch.counts)
            return self.last_event
        mode = simt.run_kernel(launch, kernel, lambda: nd_item(launch, None),
                               lambda w: nd_item(launch, w), self.mode)
        self.last_event = event(mode, launch.counts)
        return self.last_event

    def submit(self, fn):
        """``q.submit([&](handler &h) { h.parallel_for(...); })``: ``fn(h)`` with ``h.parallel_for``."""
        q = self

        class handler:
            def parallel_for(self, ndr, kernel):
                return q.parallel_for(ndr, kernel)
        fn(handler())
        return self.last_event or event("none", {})

    def wait(self) -> queue:
        return self


class nd_item:
    """``sycl::nd_item<D>``: one work-item (``w``) or, vectorised, all of them at once (``w is None``)."""

    __slots__ = ("_L", "_w")

    def __init__(self, launch, w) -> None:
        self._L, self._w = launch, w

    def _val(self, arr: np.ndarray):
        return Varying(arr) if self._w is None else int(arr[self._w])

    def _dim(self, d) -> int:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or not 0 <= d < self._L.dims:
            raise InvalidValue(f"dimension {d!r} outside the {self._L.dims}-D range", values={"dimension": d})
        return int(d)

    def get_global_id(self, d: int = 0):
        return self._val(self._L.glob[self._dim(d)])

    def get_local_id(self, d: int = 0):
        return self._val(self._L.local[self._dim(d)])

    def get_group(self, d=None):
        """``get_group()``: the ``sycl::group`` (for group algorithms and barriers); ``get_group(d)``: the
        work-group id in dimension ``d``."""
        if d is None:
            return group(self._L, self._w)
        return self._val(self._L.group[self._dim(d)])

    def get_group_id(self, d: int = 0):
        return self._val(self._L.group[self._dim(d)])

    def barrier(self, fence_space=None) -> None:
        """``nd_item::barrier()``: a work-group barrier (``group_barrier(item.get_group())``)."""
        simt.barrier(group(self._L, self._w), 4)   # the call site checked is the kernel's

    def get_global_range(self, d: int = 0) -> int:
        return self._L.gsize[self._dim(d)]

    def get_local_range(self, d: int = 0) -> int:
        return self._L.lsize[self._dim(d)]

    def get_group_range(self, d: int = 0) -> int:
        return self._L.groups[self._dim(d)]

    def get_global_linear_id(self):
        L = self._L
        lin = np.zeros(L.n_items, dtype=np.int64)
        for d in _builtin_range(L.dims):        # (``range`` here is sycl::range)
            lin = lin * L.gsize[d] + L.glob[d]
        return self._val(lin)

    def get_local_linear_id(self):
        return self._val(self._L.local_linear)

    def get_sub_group(self) -> sub_group:
        return sub_group(self._L, self._w)

    def __repr__(self) -> str:
        return "nd_item(all work-items)" if self._w is None else f"nd_item(work-item {self._w})"


class sub_group:
    """``sycl::sub_group`` seen by one work-item (or, vectorised, by all)."""

    __slots__ = ("_L", "_wi")

    def __init__(self, launch, w) -> None:
        self._L, self._wi = launch, w

    def _val(self, arr):
        return Varying(arr) if self._wi is None else int(arr[self._wi])

    def get_local_id(self):
        return self._val(self._L.local_linear % self._L.sg_size)

    def get_group_id(self):
        return self._val(self._L.local_linear // self._L.sg_size)

    def get_local_range(self) -> int:
        return self._L.sg_size

    def get_max_local_range(self) -> int:
        return self._L.sg_size

    def get_group_range(self) -> int:
        return self._L.sg_per_wg

    @property
    def launch(self):
        return self._L

    def __repr__(self) -> str:
        return f"sub_group(size {self._L.sg_size})"


class group:
    """``sycl::group<D>``: the work-group of one work-item (or, vectorised, of each): ``item.get_group()``."""

    __slots__ = ("_L", "_wi")

    def __init__(self, launch, w) -> None:
        self._L, self._wi = launch, w

    @property
    def launch(self):
        return self._L

    @property
    def scope_size(self) -> int:
        """How many work-items a group operation on this group waits for (:class:`simt.Scheduler`)."""
        return self._L.wg_items

    def _val(self, arr):
        return Varying(arr) if self._wi is None else int(arr[self._wi])

    def _dim(self, d) -> int:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or not 0 <= d < self._L.dims:
            raise InvalidValue(f"dimension {d!r} outside the {self._L.dims}-D range", values={"dimension": d})
        return int(d)

    def get_group_id(self, d: int = 0):
        return self._val(self._L.group[self._dim(d)])

    def get_local_id(self, d: int = 0):
        return self._val(self._L.local[self._dim(d)])

    def get_local_range(self, d: int = 0) -> int:
        return self._L.lsize[self._dim(d)]

    def get_group_range(self, d: int = 0) -> int:
        return self._L.groups[self._dim(d)]

    def get_local_linear_id(self):
        return self._val(self._L.local_linear)

    def get_group_linear_id(self):
        return self._val(np.arange(self._L.n_items) // self._L.wg_items)

    def get_local_linear_range(self) -> int:
        return self._L.wg_items

    def get_group_linear_range(self) -> int:
        return self._L.n_groups

    def leader(self):
        return self.get_local_linear_id() == 0

    def __repr__(self) -> str:
        return f"group(local range {tuple(self._L.lsize)})"
