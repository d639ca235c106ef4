"""OpenCL sub-group matrix built-ins on the XMX engine (DESIGN.md "models" layer; docs/opencl.md).

Every built-in of cl_intel_subgroup_matrix_multiply_accumulate (rev 1.1.0, sub-group 8 and 16), its ``_tf32``
companion, cl_intel_subgroup_split_matrix_multiply_accumulate, and the extras of IGC's ``IBiF_dpas.cl`` is a
module-level function under its OpenCL name::

    from systolic import opencl as cl
    d = cl.intel_sub_group_i8_i8_matrix_mad_k32(a, b, acc, platform="dg2")

Arguments are per-work-item values, work-item on the leading axis: for a sub-group of size S an OpenCL
``short8 a`` is an (S, 8) int16 array, ``int b`` (S,) int32, ``float4 acc`` (S, 4) float32, a bf16
accumulator (``short``) int16 bit patterns, ``half`` float16. Split built-ins take and return a leading axis of 2
(one slice per participating sub-group) when called directly, and this sub-group's slice inside a kernel run by
:func:`run`. ``platform=`` (default: the kernel's, else pvc when it has the built-in, else dg2) picks the
sub-group size, the legal set and the numerics (``model=``: a :mod:`systolic.xmx` numerics model, default the
platform's).

Each call is lowered as IGC lowers it: the arguments placed in a GRF image (component-major, which is DPAS's
operand layout), one DPAS (DPASW for split) executed by :mod:`systolic.xmx`, the result read back per work-item.

Helpers: :func:`distribute` / :func:`gather` (logical matrix <-> per-work-item values, through the one SPIR-V
map in :mod:`systolic.layout.opencl`), :func:`layout`, :func:`builtins`; the kernel runner :func:`run` with the
work-item functions, :class:`where` (divergent branches), :func:`barrier`, :class:`GlobalPtr` and the
``intel_sub_group_block_read*`` / ``_write*`` functions; :func:`as_type`.
"""

from __future__ import annotations

import sys as _sys

from .blockio import BLOCK_FUNCTIONS as _BLOCK
from .blockio import GlobalPtr
from .calls import call
from .cltypes import as_type
from .mapping import builtins, distribute, gather, layout, resolve
from .runner import (CLK_GLOBAL_MEM_FENCE, CLK_LOCAL_MEM_FENCE, barrier, get_global_id, get_global_size,
                     get_group_id, get_local_id, get_local_size, get_max_sub_group_size, get_num_groups,
                     get_num_sub_groups, get_sub_group_id, get_sub_group_local_id, get_sub_group_size,
                     get_work_dim, run, sub_group_broadcast, where)
from .table import BUILTINS, NAMES, Builtin


def _builtin(name: str):
    recs = [r for r in BUILTINS if r.name == name]

    def f(a, b, acc, *, platform=None, model=None, engine: str = "fast"):
        return call(name, a, b, acc, platform=platform, model=model, engine=engine)

    f.__name__ = f.__qualname__ = name
    sigs = "\n".join(f"    {r.signature};  // sub-group {r.sub_group_size}, {r.dpas}" for r in recs)
    f.__doc__ = (f"OpenCL ``{name}``: {len(recs)} overloads ({recs[0].source}).\n\n{sigs}\n\n"
                 "Per-work-item arguments, work-item on the leading axis (see systolic.opencl).")
    return f


_mod = _sys.modules[__name__]
for _n in NAMES:
    setattr(_mod, _n, _builtin(_n))
for _n, _f in _BLOCK.items():
    setattr(_mod, _n, _f)


def intel_convert_tfloat32_as_float(x):
    """float -> tf32 rounded to nearest even, as float (cl_intel_subgroup_matrix_multiply_accumulate_tf32)."""
    import numpy as np

    from .. import types as T
    return T.round_to_tf32(np.asarray(x, dtype=np.float32))


for _n in ("intel_convert_tfloat322_as_float2", "intel_convert_tfloat323_as_float3",
           "intel_convert_tfloat324_as_float4", "intel_convert_tfloat328_as_float8",
           "intel_convert_tfloat3216_as_float16"):
    setattr(_mod, _n, intel_convert_tfloat32_as_float)

__all__ = ["BUILTINS", "NAMES", "Builtin", "builtins", "call", "layout", "resolve", "distribute", "gather",
           "run", "where", "barrier", "GlobalPtr", "as_type", "get_global_id", "get_global_size", "get_group_id",
           "get_local_id", "get_local_size", "get_max_sub_group_size", "get_num_groups", "get_num_sub_groups",
           "get_sub_group_id", "get_sub_group_local_id", "get_sub_group_size", "get_work_dim",
           "sub_group_broadcast", "CLK_LOCAL_MEM_FENCE", "CLK_GLOBAL_MEM_FENCE", "intel_convert_tfloat32_as_float",
           *NAMES, *_BLOCK]
