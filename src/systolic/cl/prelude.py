"""The OpenCL C prelude: what ``opencl-c.h`` would give a kernel, generated from systolic's tables (issue 21
item 1; REFERENCE.md section 8, "It never declares").

clang's ``-fdeclare-opencl-builtins`` declares the work-item functions, math, ``convert_*``, ``vload``/``vstore``,
atomics and (once ``__opencl_subgroup_builtins`` is defined) the cl_khr sub-group functions. It never declares the
unsigned and vector typedefs, ``as_<type>``, ``CLK_*`` fence flags, ``INFINITY`` & co, or any ``intel_*``
function. This module writes those, as data:

* ``uchar`` ... ``ulong`` and the vector types (``ext_vector_type``) of OpenCL C 6.3.1;

* ``as_<type>`` macros over ``__builtin_astype`` for every scalar and vector type;
* limits and constants of OpenCL C 6.15.2 (``INFINITY``, ``NAN``, ``FLT_MAX``, ``M_PI_F`` ...);
* the extension macros the platform has that clang's spir64 target does not predefine
  (``cl_intel_subgroup_matrix_multiply_accumulate`` and its ``_tf32``/split companions, ``cl_intel_subgroup_2d_block_io``,
  ``cl_intel_split_work_group_barrier``), from :mod:`systolic.opencl`'s per-platform table;
* declarations of every matrix built-in overload of :data:`systolic.opencl.BUILTINS` the platform has, the
  cl_intel_subgroups shuffles and block reads/writes (global and local pointers), the bf16 and tf32 conversions,
  the 2D block IO functions of :data:`systolic.cl.blockio2d.FUNCTIONS`, and the split work-group barrier.
"""

from __future__ import annotations

import functools

from ..opencl import mapping as MP
from ..opencl import table as TB
from ..vocabulary import renamed
from ..xmx.platform import get_platform

__all__ = ["prelude", "SCALARS", "VECTOR_SIZES", "extension_macros"]

SCALARS = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "float", "double")
VECTOR_SIZES = (2, 3, 4, 8, 16)

_CONSTANTS = """
#define CHAR_BIT 8
#define SCHAR_MAX 127
#define SCHAR_MIN (-128)
#define CHAR_MAX SCHAR_MAX
#define CHAR_MIN SCHAR_MIN
#define UCHAR_MAX 255
#define SHRT_MAX 32767
#define SHRT_MIN (-32768)
#define USHRT_MAX 65535
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 0xffffffffU
#define LONG_MAX 0x7fffffffffffffffL
#define LONG_MIN (-0x7fffffffffffffffL - 1)
#define ULONG_MAX 0xffffffffffffffffUL
#define FLT_DIG 6
#define FLT_MANT_DIG 24
#define FLT_MAX 0x1.fffffep127f
#define FLT_MIN 0x1.0p-126f
#define FLT_EPSILON 0x1.0p-23f
#define MAXFLOAT FLT_MAX
#define HUGE_VALF __builtin_huge_valf()
#define HUGE_VAL __builtin_huge_val()
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define M_E_F 2.71828182845904523536028747135266250f
#define M_LOG2E_F 1.44269504088896340735992468100189214f
#define M_LOG10E_F 0.434294481903251827651128918916605082f
#define M_LN2_F 0.693147180559945309417232121458176568f
#define M_LN10_F 2.30258509299404568401799145468436421f
#define M_PI_F 3.14159265358979323846264338327950288f
#define M_PI_2_F 1.57079632679489661923132169163975144f
#define M_PI_4_F 0.785398163397448309615660845819875721f
#define M_1_PI_F 0.318309886183790671537767526745028724f
#define M_2_PI_F 0.636619772367581343075535053490057448f
#define M_2_SQRTPI_F 1.12837916709551257389615890312154517f
#define M_SQRT2_F 1.41421356237309504880168872420969808f
#define M_SQRT1_2_F 0.707106781186547524400844362104849039f
#define CLK_LOCAL_MEM_FENCE 0x01
#define CLK_GLOBAL_MEM_FENCE 0x02
#define CLK_IMAGE_MEM_FENCE 0x04
typedef uint cl_mem_fence_flags;
#if __OPENCL_C_VERSION__ >= 200
/* the C11 atomics (OpenCL C 6.15.12.3) take these enums; clang's builtin table expects them from the header */
typedef enum memory_order { memory_order_relaxed = __ATOMIC_RELAXED, memory_order_acquire = __ATOMIC_ACQUIRE,
  memory_order_release = __ATOMIC_RELEASE, memory_order_acq_rel = __ATOMIC_ACQ_REL,
  memory_order_seq_cst = __ATOMIC_SEQ_CST } memory_order;
typedef enum memory_scope { memory_scope_work_item = __OPENCL_MEMORY_SCOPE_WORK_ITEM,
  memory_scope_work_group = __OPENCL_MEMORY_SCOPE_WORK_GROUP, memory_scope_device = __OPENCL_MEMORY_SCOPE_DEVICE,
  memory_scope_all_svm_devices = __OPENCL_MEMORY_SCOPE_ALL_SVM_DEVICES,
  memory_scope_sub_group = __OPENCL_MEMORY_SCOPE_SUB_GROUP } memory_scope;
#endif
"""


def extension_macros(platform) -> list[str]:
    """Extension macros of ``platform`` that clang's spir64 target does not predefine (REFERENCE.md section 8)."""
    P = get_platform(platform)
    have = [r for r in TB.BUILTINS if MP.available(r, P) is None]
    out = []
    if any(not r.split and r.a_precision != "tf32" for r in have):
        out.append("cl_intel_subgroup_matrix_multiply_accumulate")
    if any(r.a_precision == "tf32" for r in have):
        out.append("cl_intel_subgroup_matrix_multiply_accumulate_tf32")
    if any(r.split for r in have):
        out.append("cl_intel_subgroup_split_matrix_multiply_accumulate")
    from .blockio2d import supported
    if supported(P):
        out.append("cl_intel_subgroup_2d_block_io")
    out.append("cl_intel_split_work_group_barrier")
    return out


_C_SCALAR = {"char": "char", "uchar": "unsigned char", "short": "short", "ushort": "unsigned short", "int": "int",
             "uint": "unsigned int", "long": "long", "ulong": "unsigned long", "half": "half", "float": "float",
             "double": "double"}


def _typedefs() -> list[str]:
    out = [f"typedef {c} {t};" for t, c in _C_SCALAR.items() if t != c]
    out += [f"typedef {t} {t}{n} __attribute__((ext_vector_type({n})));" for t in SCALARS for n in VECTOR_SIZES]
    return out


def _as_macros() -> list[str]:
    names = list(SCALARS) + [f"{s}{n}" for s in SCALARS for n in VECTOR_SIZES]
    return [f"#define as_{t}(x) __builtin_astype((x), {t})" for t in names]


def _types(bases, sizes=(1,) + VECTOR_SIZES):
    return [b if n == 1 else f"{b}{n}" for b in bases for n in sizes]


def _shuffles() -> list[str]:
    out = []
    for t in _types(SCALARS):
        out.append(f"{t} __OVL intel_sub_group_shuffle({t} x, uint c);")
        out.append(f"{t} __OVL intel_sub_group_shuffle_xor({t} x, uint c);")
        out.append(f"{t} __OVL intel_sub_group_shuffle_down({t} cur, {t} next, uint c);")
        out.append(f"{t} __OVL intel_sub_group_shuffle_up({t} prev, {t} cur, uint c);")
    for t in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "float", "double"):
        out.append(f"{t} __OVL intel_sub_group_broadcast({t} x, uint id);")
    return out


#: cl_intel_subgroups block functions: (suffix, element type, vector sizes)
BLOCK_FAMILIES = (("", "uint", (1, 2, 4, 8)), ("_ui", "uint", (1, 2, 4, 8)), ("_us", "ushort", (1, 2, 4, 8, 16)),
                  ("_uc", "uchar", (1, 2, 4, 8, 16)), ("_ul", "ulong", (1, 2, 4, 8)))


def _blocks() -> list[str]:
    out = []
    for suffix, base, ns in BLOCK_FAMILIES:
        for n in ns:
            tail = suffix + (str(n) if n > 1 else "")
            vt = base if n == 1 else f"{base}{n}"
            for space in ("__global", "__local"):
                out.append(f"{vt} __OVL intel_sub_group_block_read{tail}(const {space} {base}* p);")
                out.append(f"void __OVL intel_sub_group_block_write{tail}({space} {base}* p, {vt} data);")
    return out


def _conversions() -> list[str]:
    out = []
    for n in (1,) + VECTOR_SIZES:
        s = "" if n == 1 else str(n)
        out.append(f"ushort{s} __OVL intel_convert_bfloat16{s}_as_ushort{s}(float{s} x);")
        out.append(f"float{s} __OVL intel_convert_as_bfloat16{s}_float{s}(ushort{s} x);")
        out.append(f"float{s} __OVL intel_convert_tfloat32{s}_as_float{s}(float{s} x);" if n > 1
                   else "float __OVL intel_convert_tfloat32_as_float(float x);")
    return out


def _matrix(P) -> list[str]:
    out = []
    for r in TB.BUILTINS:
        if MP.available(r, P) is None:
            out.append(f"{r.result_type.name} __OVL {r.name}({r.a_type.name} a, {r.b_type.name} b, "
                       f"{r.acc_type.name} acc);")
    return out


def _is_cpu(name) -> bool:
    from ..sycl.devices import DEVICES
    d = DEVICES.get(str(name).lower())
    return d is not None and d.backend == "amx"


def _cpu_prelude(name) -> str:
    """A CPU device's prelude: the types, constants and sub-group shuffles; no XMX built-ins or extensions."""
    lines = [f"// systolic OpenCL C prelude for the CPU device {name}: no XMX built-ins",
             "#pragma OPENCL EXTENSION cl_khr_fp16 : enable", "#pragma OPENCL EXTENSION cl_khr_fp64 : enable",
             "#define __opencl_subgroup_builtins 1", "#define __OVL __attribute__((overloadable))"]
    lines += _typedefs() + _CONSTANTS.strip().splitlines() + _as_macros() + _shuffles() + _blocks() + _conversions()
    lines += ["#undef __OVL"]
    return "\n".join(lines) + "\n"


def prelude(device: str | None = None, **renamed_keywords) -> str:
    """The prelude text for ``device`` (an XMX platform or a CPU device; default: pvc; ``-include`` it; cached per
    device).
    ``platform=`` is the older name of ``device=`` (DeprecationWarning)."""
    if renamed_keywords:                 # platform=: the older name of device= (systolic.vocabulary)
        device = renamed(renamed_keywords, {"platform": "device"}, "cl.prelude", device=device)["device"]
    return _prelude("pvc" if device is None else device)


@functools.cache
def _prelude(platform: str) -> str:
    from .blockio2d import declarations
    if _is_cpu(platform):
        return _cpu_prelude(platform)
    P = get_platform(platform)
    lines = ["// systolic OpenCL C prelude (generated from systolic.opencl's tables; not a copy of opencl-c.h)",
             f"// platform {P.name}, sub-group sizes {list(P.subgroup_sizes)}",
             "#pragma OPENCL EXTENSION cl_khr_fp16 : enable",
             "#pragma OPENCL EXTENSION cl_khr_fp64 : enable",
             "#define __opencl_subgroup_builtins 1",
             "#define __OVL __attribute__((overloadable))",
             f"#define __SYSTOLIC_PLATFORM_{P.name.upper()} 1"]
    lines += [f"#define {m} 1" for m in extension_macros(P)]
    lines += _typedefs()
    lines += _CONSTANTS.strip().splitlines()
    lines += _as_macros()
    lines += _shuffles()
    lines += _blocks()
    lines += _conversions()
    lines += ["void __OVL intel_work_group_barrier_arrive(cl_mem_fence_flags flags);",
              "void __OVL intel_work_group_barrier_wait(cl_mem_fence_flags flags);"]
    lines += _matrix(P)
    lines += declarations(P)
    lines.append("#undef __OVL")
    return "\n".join(lines) + "\n"
