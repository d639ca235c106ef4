"""The CUDA runtime under the GPU kernels: availability, the kernels' CUDA C sources, array intake and return,
the kernel cache.

The CUDA C sources are package data beside this module (``*.cu``, pyproject ``[tool.setuptools.package-data]``),
read by :func:`source` as UTF-8 text, byte for byte (they are compiled by NVRTC from that text; editors and CUDA
tools read them as C).

Everything here is lazy: importing :mod:`systolic.gpu.runtime` never imports CuPy; the first call that
needs it does, and a missing piece becomes :class:`systolic.errors.BackendUnavailable` saying which one
(no CuPy, no CUDA device, driver older than CuPy's CUDA runtime, no NVRTC), never an ``ImportError``.

Arrays (:func:`intake` / :func:`give_back`):

* numpy arrays are copied to the device (they must be: the kernels run there) and the results copied back
  to numpy;
* GPU arrays are taken **without a copy** where their layout allows (C-contiguous; otherwise one device-side
  copy): CuPy arrays as they are, anything with ``__cuda_array_interface__`` (Numba, older PyTorch) through
  :func:`cupy.asarray`, anything with ``__dlpack__`` whose ``__dlpack_device__`` is CUDA through
  :func:`cupy.from_dlpack` (the DLPack protocol, data-apis.org array API "Data interchange"); PyTorch
  tensors go through DLPack too, bfloat16 ones reinterpreted as int16 first (DLPack's bfloat16 code is not
  understood by every CuPy);
* the result goes back as the kind of the first GPU input (a PyTorch tensor for PyTorch inputs, CuPy
  otherwise), again through DLPack, so it stays on the device.

Element types are carried as numpy dtypes (``ml_dtypes.bfloat16`` for bfloat16); on the device a 16-bit
float is held as its uint16 bit pattern, which is what the kernels read.

The engines' kernels take their arrays through :mod:`systolic.gpu.intake`, which hands these on together with
the in-place intake of the s8/u8 GEMM.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BackendUnavailable, InvalidValue

__all__ = ["availability", "require", "info", "source", "is_gpu_array", "Intake", "intake", "give_back",
           "result_kind", "to_numpy", "module", "kernel", "MIN_COMPUTE_CAPABILITY", "INSTALL_HINT", "DISABLE_ENV"]

#: what to tell a user who lacks CuPy (pyproject.toml extra ``gpu``)
INSTALL_HINT = "pip install 'systolic[gpu]' (CuPy for CUDA 12: cupy-cuda12x; for CUDA 13: pip install cupy-cuda13x)"
#: set to 1 to make the backend report itself unavailable (tests of the CPU-only paths, a misbehaving GPU)
DISABLE_ENV = "SYSTOLIC_DISABLE_GPU"
#: the kernels use integer/float instructions and warp-level matrix ops of sm_80 and later
MIN_COMPUTE_CAPABILITY = (8, 0)

#: cudaError_t values that availability() translates (CUDA Runtime API, "Data types": cudaError)
_ERR_INSUFFICIENT_DRIVER = 35
_ERR_NO_DEVICE = 100


def _cuda_error_name(code: int) -> str:
    return {_ERR_INSUFFICIENT_DRIVER: "cudaErrorInsufficientDriver", _ERR_NO_DEVICE: "cudaErrorNoDevice",
            3: "cudaErrorInitializationError", 999: "cudaErrorUnknown"}.get(code, f"cudaError {code}")


def _version(v: int) -> str:
    """CUDA's integer versions (1000 * major + 10 * minor) as text."""
    return f"{v // 1000}.{(v % 1000) // 10}"


@dataclass(frozen=True)
class _State:
    ok: bool
    reason: str
    kind: str                       # "ok", "disabled", "no-cupy", "broken-cupy", "driver-too-old", "no-device",
    #                                 "old-device", "no-nvrtc", "cuda-error"
    details: dict


_lock = threading.Lock()
_state: _State | None = None


def _cupy_installed() -> bool:
    return importlib.util.find_spec("cupy") is not None


def _import_cupy():
    return importlib.import_module("cupy")


def _probe() -> _State:
    if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        return _State(False, f"disabled by the environment ({DISABLE_ENV}={os.environ[DISABLE_ENV]})", "disabled", {})
    if not _cupy_installed():
        return _State(False, f"CuPy is not installed ({INSTALL_HINT})", "no-cupy", {})
    try:
        cp = _import_cupy()
    except Exception as exc:  # a CuPy built for another CUDA, missing shared libraries...
        return _State(False, f"CuPy is installed but cannot be imported: {exc!s} ({INSTALL_HINT})", "broken-cupy",
                      {"error": repr(exc)})
    details: dict[str, Any] = {"cupy": getattr(cp, "__version__", "?")}
    rt = cp.cuda.runtime
    rtv = 0
    try:
        rtv = int(rt.runtimeGetVersion())
        details["cuda_runtime"] = _version(rtv)
    except Exception as exc:  # pragma: no cover - depends on the CuPy build
        details["cuda_runtime"] = f"unknown ({exc})"
    try:
        drv = rt.driverGetVersion()
    except Exception as exc:
        drv = 0
        details["driver_error"] = repr(exc)
    details["driver_cuda"] = _version(drv) if drv else None
    if not drv:
        return _State(False, "no CUDA driver is installed (libcuda not found: no NVIDIA driver on this machine)",
                      "no-device", details)
    if rtv and drv // 1000 < rtv // 1000:       # CUDA minor-version compatibility covers the same major only
        return _State(False, f"the NVIDIA driver is too old for this CuPy: driver supports CUDA "
                             f"{details['driver_cuda']}, CuPy was built for CUDA {details['cuda_runtime']} "
                             f"(update the driver, or install the CuPy wheel of an older CUDA)",
                      "driver-too-old", details)
    try:
        n = rt.getDeviceCount()
    except rt.CUDARuntimeError as exc:
        code = getattr(exc, "status", None)
        if code == _ERR_INSUFFICIENT_DRIVER:
            return _State(False, f"the NVIDIA driver is too old for this CuPy: driver supports CUDA "
                                 f"{details['driver_cuda']}, CuPy was built for CUDA {details['cuda_runtime']} "
                                 f"(update the driver, or install the CuPy wheel of an older CUDA)",
                          "driver-too-old", details)
        if code == _ERR_NO_DEVICE:
            return _State(False, "no CUDA device is visible (cudaErrorNoDevice; check CUDA_VISIBLE_DEVICES)",
                          "no-device", details)
        return _State(False, f"CUDA cannot start: {_cuda_error_name(code or -1)} ({exc})", "cuda-error", details)
    if n == 0:
        return _State(False, "no CUDA device is visible (device count 0)", "no-device", details)
    try:
        dev = cp.cuda.Device()
        ccs = str(dev.compute_capability)           # CuPy: "90" for 9.0, "100" for 10.0
        cc = (int(ccs[:-1]), int(ccs[-1]))
        props = rt.getDeviceProperties(dev.id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        details.update(device=dev.id, devices=n, name=name, compute_capability=f"{cc[0]}.{cc[1]}",
                       memory_gib=round(props["totalGlobalMem"] / 2 ** 30, 1),
                       multiprocessors=props["multiProcessorCount"])
    except Exception as exc:
        return _State(False, f"CUDA device query failed: {exc}", "cuda-error", details)
    if cc < MIN_COMPUTE_CAPABILITY:
        return _State(False, f"the GPU {name} has compute capability {cc[0]}.{cc[1]}; the kernels need "
                             f"{MIN_COMPUTE_CAPABILITY[0]}.{MIN_COMPUTE_CAPABILITY[1]} or later", "old-device", details)
    try:
        details["nvrtc"] = ".".join(str(x) for x in cp.cuda.nvrtc.getVersion())
    except Exception as exc:
        return _State(False, f"NVRTC (CUDA's runtime compiler, which builds the kernels) is missing: {exc}",
                      "no-nvrtc", details)
    return _State(True, f"{name} (compute capability {cc[0]}.{cc[1]}), CUDA driver {details['driver_cuda']}, "
                        f"CuPy {details['cupy']}", "ok", details)


def _get_state(refresh: bool = False) -> _State:
    global _state
    with _lock:
        if _state is None or refresh:
            _state = _probe()
        return _state


def availability(refresh: bool = False) -> tuple[bool, str]:
    """``(True, description)`` when the CUDA backend can run here, else ``(False, why)``.

    The reasons are distinct: CuPy not installed / not importable, no NVIDIA driver or device, driver too old
    for CuPy's CUDA runtime, GPU older than compute capability 8.0, no NVRTC. The answer is cached;
    ``refresh=True`` probes again.
    """
    s = _get_state(refresh)
    return s.ok, s.reason


def info(refresh: bool = False) -> dict:
    """The backend's state as data (``systolic gpu info --json``, ``systolic info``)."""
    s = _get_state(refresh)
    return {"available": s.ok, "reason": s.reason, "state": s.kind, **s.details}


def require():
    """The ``cupy`` module, or :class:`BackendUnavailable` saying why the CUDA backend cannot run."""
    s = _get_state()
    if not s.ok:
        raise BackendUnavailable(f"the CUDA backend is unavailable: {s.reason}", rule="backend='cuda' needs "
                                 "CuPy, an NVIDIA driver at least as new as CuPy's CUDA, and a GPU of compute "
                                 "capability >= 8.0", values={"state": s.kind})
    return _import_cupy()


# ------------------------------------------------------------------------------------------ arrays

_DLPACK_CUDA = (2, 13)  # DLDeviceType kDLCUDA, kDLCUDAManaged (dlpack.h)


def _is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _is_cupy(x) -> bool:
    return type(x).__module__.split(".")[0] == "cupy"


def is_gpu_array(x) -> bool:
    """True for arrays that live on a CUDA device (CuPy, PyTorch CUDA tensors, CAI / DLPack objects).

    Never imports CuPy or PyTorch: it only looks at the object.
    """
    if isinstance(x, np.ndarray) or np.isscalar(x) or x is None:
        return False
    if _is_torch(x):
        return bool(getattr(x, "is_cuda", False))
    if hasattr(x, "__cuda_array_interface__"):
        return True
    dev = getattr(x, "__dlpack_device__", None)
    if dev is not None:
        try:
            return int(dev()[0]) in _DLPACK_CUDA
        except Exception:
            return False
    return False


@functools.lru_cache(maxsize=1)
def _torch_dtype_map():
    import torch
    m = {torch.int8: np.dtype(np.int8), torch.uint8: np.dtype(np.uint8), torch.int16: np.dtype(np.int16),
         torch.int32: np.dtype(np.int32), torch.int64: np.dtype(np.int64), torch.float16: np.dtype(np.float16),
         torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64), torch.bool: np.dtype(np.bool_)}
    try:
        import ml_dtypes
        m[torch.bfloat16] = np.dtype(ml_dtypes.bfloat16)
    except ImportError:  # pragma: no cover - ml_dtypes is a dependency of systolic
        pass
    return m


def _storage_dtype(dt: np.dtype) -> np.dtype:
    """What the device holds for a logical dtype: 16-bit floats as their uint16 bits, others as they are."""
    if dt.itemsize == 2 and (dt.kind in "fV" or dt.name == "bfloat16"):
        return np.dtype(np.uint16)
    return dt


@dataclass
class Intake:
    """One argument on the device: ``data`` (a C-contiguous CuPy array of the storage dtype), its logical
    ``dtype`` (numpy / ml_dtypes), and where it came from: ``kind`` in {"numpy", "cupy", "torch", "cai",
    "dlpack"}; ``copied``: whether taking it cost a copy (always for numpy)."""

    data: Any
    dtype: np.dtype
    kind: str
    copied: bool

    @property
    def shape(self) -> tuple:
        return tuple(self.data.shape)


def intake(x, name: str = "array") -> Intake:
    """Bring ``x`` onto the current CUDA device as an :class:`Intake` (zero-copy for contiguous GPU arrays).

    numpy inputs (and anything :func:`numpy.asarray` accepts that is not a GPU array) are copied to the
    device. Raises :class:`BackendUnavailable` without a usable GPU and :class:`InvalidValue` for a GPU
    array of an element type the device path cannot hold.
    """
    cp = require()
    if _is_torch(x) and getattr(x, "is_cuda", False):
        import torch
        dt = _torch_dtype_map().get(x.dtype)
        if dt is None:
            raise InvalidValue(f"{name}: a torch tensor of this element type cannot go to the CUDA backend",
                               values={"dtype": str(x.dtype)})
        t = x.detach()
        if x.dtype in (torch.bfloat16, torch.float16):
            t = t.view(torch.int16)          # same bits; DLPack's bfloat16 is not understood by every CuPy
        contiguous = t.is_contiguous()
        arr = cp.from_dlpack(t.contiguous() if not contiguous else t)
        if x.dtype in (torch.bfloat16, torch.float16):
            arr = arr.view(cp.uint16)
        return Intake(arr, dt, "torch", not contiguous)
    if is_gpu_array(x):
        if _is_cupy(x):
            arr, kind = x, "cupy"
        elif hasattr(x, "__cuda_array_interface__"):
            arr, kind = cp.asarray(x), "cai"
        else:
            arr, kind = cp.from_dlpack(x), "dlpack"
        dt = np.dtype(arr.dtype)
        contiguous = bool(arr.flags.c_contiguous)
        if not contiguous:
            arr = cp.ascontiguousarray(arr)
        sd = _storage_dtype(dt)
        if sd != dt:
            arr = arr.view(cp.dtype(sd))
        return Intake(arr, dt, kind, not contiguous)
    a = np.asarray(x)
    dt = a.dtype
    host = np.ascontiguousarray(a)
    sd = _storage_dtype(dt)
    if sd != dt:
        host = host.view(sd)
    return Intake(cp.asarray(host), dt, "numpy", True)


def give_back(result, like: Intake | str, dtype: np.dtype | None = None):
    """Hand a CuPy ``result`` back in the caller's kind: numpy for numpy inputs (one copy to the host),
    a torch tensor for torch inputs, a CuPy array otherwise (both zero-copy). ``dtype``: the logical dtype
    when ``result`` holds 16-bit float bits as uint16."""
    kind = like if isinstance(like, str) else like.kind
    if kind == "numpy":
        out = result.get()
        return out.view(dtype) if dtype is not None and np.dtype(dtype) != out.dtype else out
    if kind == "torch":
        import torch
        t = torch.from_dlpack(result)
        if dtype is not None and np.dtype(dtype) != np.dtype(result.dtype):
            rev = {v: k for k, v in _torch_dtype_map().items()}
            t = t.view(torch.int16).view(rev[np.dtype(dtype)]) if np.dtype(dtype).itemsize == 2 else t
        return t
    if dtype is not None and np.dtype(dtype) != np.dtype(result.dtype):
        try:
            return result.view(np.dtype(dtype))
        except Exception:  # a CuPy without this dtype (bfloat16): the bits as they are
            return result
    return result


def result_kind(*items: Intake | None) -> str:
    """The kind results go back as: that of the first GPU input, numpy when every input came from the host."""
    for it in items:
        if it is not None and it.kind != "numpy":
            return "torch" if it.kind == "torch" else "cupy"
    return "numpy"


def to_numpy(x) -> np.ndarray:
    """Any supported array (numpy, CuPy, torch CUDA, CAI / DLPack object) as a host numpy array (a copy for
    GPU arrays; bfloat16 kept as ml_dtypes.bfloat16)."""
    if not is_gpu_array(x):
        return np.asarray(x)
    it = intake(x)
    host = it.data.get()
    return host.view(it.dtype) if host.dtype != it.dtype else host


# ------------------------------------------------------------------------------------------ kernels

@functools.lru_cache(maxsize=None)
def source(name: str) -> str:
    """The CUDA C text of ``name`` (e.g. ``"xmx.cu"``), a file of this package. Reading it needs no GPU and no
    CuPy; a missing file (a broken install) is :class:`BackendUnavailable` naming it."""
    from importlib import resources
    try:
        return resources.files(__package__).joinpath(name).read_bytes().decode("utf-8")
    except (FileNotFoundError, OSError) as e:
        raise BackendUnavailable(f"the CUDA source {name} is missing from this install ({e})",
                                 rule="systolic/gpu/*.cu ship as package data (pyproject.toml)",
                                 values={"source": name}) from None


#: NVRTC options of every systolic kernel. No fast-math and ``--ftz=false --prec-div=true --prec-sqrt=true
#: --fmad=false``: the kernels spell each FMA out (``__fmaf_rn``) and each add (``__fadd_rn``); nothing may be
#: contracted, flushed or approximated behind their back (CUDA C++ Programming Guide, "Floating-Point Standard").
NVRTC_OPTIONS = ("--std=c++17", "--ftz=false", "--prec-div=true", "--prec-sqrt=true", "--fmad=false")


@functools.lru_cache(maxsize=None)
def _module(source: str, options: tuple[str, ...], names: tuple[str, ...] | None, device: int):
    cp = require()
    with cp.cuda.Device(device):
        mod = cp.RawModule(code=source, options=NVRTC_OPTIONS + options, name_expressions=names)
        mod.compile()  # compile now (CuPy also caches the binary on disk, keyed by source and options)
    return mod


def module(source: str, options: tuple[str, ...] = (), names: tuple[str, ...] | None = None):
    """A compiled :class:`cupy.RawModule` for ``source`` on the current device, built once per process
    (and per device; CuPy keeps the binary in its on-disk kernel cache too). ``names``: C++ name
    expressions (templates) to instantiate."""
    cp = require()
    return _module(source, tuple(options), None if names is None else tuple(names), cp.cuda.Device().id)


def kernel(source: str, name: str, options: tuple[str, ...] = (), names: tuple[str, ...] | None = None):
    """One kernel (``name``: an ``extern "C"`` name or one of ``names``) of :func:`module`."""
    return module(source, options, names).get_function(name)

