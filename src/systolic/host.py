"""What this machine offers: CPU AMX features, Linux tile-data permission, LLVM, optional GPU libraries.

Sources: CPUID leaf 7 feature names as Linux prints them in /proc/cpuinfo
(amx_tile, amx_int8, amx_bf16, amx_fp16, amx_complex, amx_fp8, ...); Linux
``Documentation/arch/x86/xstate.rst`` for ``arch_prctl(ARCH_REQ_XCOMP_PERM,
XFEATURE_XTILEDATA)`` (REFERENCE.md section 6).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import platform
from dataclasses import dataclass, field

from .errors import InvalidValue

__all__ = ["AMX_FLAGS", "cpu_flags", "amx_features", "request_tile_permission", "TilePermission", "llvm_version",
           "optional_libraries", "summary", "memory_budget", "refuse_beyond_memory", "out_of_memory"]

#: /proc/cpuinfo flag -> our feature name
AMX_FLAGS = {
    "amx_tile": "AMX-TILE", "amx_int8": "AMX-INT8", "amx_bf16": "AMX-BF16", "amx_fp16": "AMX-FP16",
    "amx_complex": "AMX-COMPLEX", "amx_fp8": "AMX-FP8", "amx_avx512": "AMX-AVX512", "amx_movrs": "AMX-MOVRS",
    "amx_tf32": "AMX-TF32", "amx_transpose": "AMX-TRANSPOSE",
}

ARCH_GET_XCOMP_PERM = 0x1022
ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18
SYS_arch_prctl = 158  # x86-64 syscall number


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The feature flags Linux reports for the first CPU (empty where /proc/cpuinfo is absent)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def cpu_model_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def amx_features(flags: frozenset[str] | None = None) -> list[str]:
    """AMX features of this CPU, e.g. ['AMX-TILE', 'AMX-INT8', 'AMX-BF16']."""
    flags = cpu_flags() if flags is None else flags
    return [name for flag, name in AMX_FLAGS.items() if flag in flags]


@dataclass(frozen=True)
class TilePermission:
    """Outcome of asking Linux for AMX tile data (``granted``) and why not (``reason``)."""

    granted: bool
    reason: str
    errno: int = 0
    details: dict = field(default_factory=dict)


@functools.lru_cache(maxsize=1)
def request_tile_permission() -> TilePermission:
    """Ask Linux once per process for XTILEDATA (arch_prctl(ARCH_REQ_XCOMP_PERM, 18)) and report the outcome."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return TilePermission(False, f"not x86-64 Linux ({platform.system()} {platform.machine()})")
    if "amx_tile" not in cpu_flags():
        return TilePermission(False, "the CPU does not report amx_tile in /proc/cpuinfo")
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        rc = libc.syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)
    except (OSError, AttributeError) as exc:  # pragma: no cover - exotic libc
        return TilePermission(False, f"cannot call arch_prctl: {exc}")
    if rc != 0:
        err = ctypes.get_errno()
        return TilePermission(False, f"arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) failed: "
                                     f"{os.strerror(err)} (errno {err})", errno=err)
    mask = ctypes.c_uint64(0)
    libc.syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, ctypes.byref(mask))
    return TilePermission(True, "granted", details={"xcomp_perm": hex(mask.value)})


def llvm_version() -> str | None:
    try:
        import llvmlite
        import llvmlite.binding as llvm
        return f"llvmlite {llvmlite.__version__}, LLVM {'.'.join(map(str, llvm.llvm_version_info))}"
    except Exception:  # pragma: no cover - llvmlite is a core dependency
        return None


def llvm_host_features() -> list[str]:
    """AMX features in LLVM's view of the host CPU (llvmlite's host feature list)."""
    try:
        import llvmlite.binding as llvm
        feats = llvm.get_host_cpu_features()
        return sorted(k for k, v in feats.items() if v and k.startswith("amx"))
    except Exception:
        return []


def optional_libraries() -> dict[str, str | None]:
    """Versions of optional libraries this machine has (None when absent)."""
    out: dict[str, str | None] = {}
    for name in ("torch", "numba", "dpctl", "dpnp", "intel_extension_for_pytorch", "cupy", "pyopencl"):
        spec = importlib.util.find_spec(name)
        if spec is None:
            out[name] = None
            continue
        try:
            from importlib.metadata import version
            out[name] = version(name.replace("_", "-")) if name != "intel_extension_for_pytorch" else version(
                "intel-extension-for-pytorch")
        except Exception:
            out[name] = "present"
    return out


def summary() -> dict:
    """Everything ``systolic info`` reports, as a dict."""
    perm = request_tile_permission()
    return {
        "cpu": cpu_model_name(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "amx_features": amx_features(),
        "llvm_amx_features": llvm_host_features(),
        "tile_data_permission": {"granted": perm.granted, "reason": perm.reason, **perm.details},
        "llvm": llvm_version(),
        "optional_libraries": optional_libraries(),
    }


# ------------------------------------------------------------------ memory: refuse a GEMM that cannot fit

def memory_budget() -> int | None:
    """Bytes this process can allocate at most: physical memory, or RLIMIT_AS when lower (None: unknown)."""
    limits = []
    try:
        limits.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        pass
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limits.append(soft)
    except (ImportError, OSError, ValueError):
        pass
    return min(limits) if limits else None


#: GEMMs whose arrays need fewer bytes than this are not checked against the budget (it costs ~2 us a call, and a
#: MemoryError there is still re-raised typed by out_of_memory)
CHECK_FROM_BYTES = 1 << 30


def refuse_beyond_memory(engine: str, M: int, K: int, N: int, nbytes: int) -> None:
    """InvalidValue, before anything is allocated, when a GEMM's arrays (``nbytes``, a lower bound of what its
    path allocates) cannot fit this process's memory: inputs may be ``np.broadcast_to`` views of one element,
    so the shapes alone say how much the path will materialise. A bare MemoryError names neither M, K, N."""
    if nbytes < CHECK_FROM_BYTES:
        return
    budget = memory_budget()
    if budget is not None and nbytes > budget:
        raise InvalidValue(f"{engine}: a {M} x {K} by {K} x {N} GEMM needs at least {nbytes / 2**30:.1f} GiB of "
                           f"arrays, more than this process can allocate ({budget / 2**30:.1f} GiB)",
                           rule="the GEMM's arrays fit memory (physical memory, or RLIMIT_AS when lower)",
                           values={"M": M, "K": K, "N": N, "bytes": nbytes, "budget": budget})


def out_of_memory(engine: str, M: int, K: int, N: int, err: MemoryError) -> InvalidValue:
    """The typed error for a MemoryError met while computing (the estimate above is only a lower bound)."""
    return InvalidValue(f"{engine}: out of memory computing a {M} x {K} by {K} x {N} GEMM ({err})",
                        rule="the GEMM's arrays fit memory", values={"M": M, "K": K, "N": N})
