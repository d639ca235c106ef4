"""SYCL joint_matrix on the emulated matrix engines (issue 12; docs/sycl.md).

* :mod:`~systolic.sycl.runtime`: ``queue``, USM pointers, ``nd_range``, ``nd_item``, ``sub_group``;
* :mod:`~systolic.sycl.simt`: SIMT execution (vectorised over work-items, per work-item on greenlets when
  control flow diverges) and the group-operation checks;
* :mod:`~systolic.sycl.group_algorithms`: SYCL 2020 group algorithms on ``sub_group`` and ``group``
  (``reduce_over_group``, ``group_broadcast``, ``joint_reduce``, ``any_of_group``/``all_of_group``, the scans)
  and ``group_barrier``; :mod:`~systolic.sycl.memory`: ``atomic_ref`` and ``local_accessor``;
* :mod:`~systolic.sycl.devices`: devices by architecture and their matrix combinations, as data;
* :mod:`~systolic.sycl.matrix`: today's ``sycl_ext_oneapi_matrix`` + ``sycl_ext_intel_matrix`` API;
* :mod:`~systolic.sycl.matrix_2021`: the first revision (2021, AMX), as the seed text writes it; its feature-test
  macro is ``matrix_2021.SYCL_EXT_ONEAPI_MATRIX`` (1: "Initial extension implementation on AMX");
* :mod:`~systolic.sycl.lower_xmx`, :mod:`~systolic.sycl.lower_amx`: joint_matrix_mad on DPAS / AMX tiles.
"""

from __future__ import annotations

from .devices import DEVICES, Combination, Device, devices, get_device
from .group_algorithms import (
    all_of_group,
    any_of_group,
    bit_and,
    bit_or,
    bit_xor,
    exclusive_scan_over_group,
    group,
    group_barrier,
    group_broadcast,
    inclusive_scan_over_group,
    joint_reduce,
    logical_and,
    logical_or,
    maximum,
    minimum,
    multiplies,
    none_of_group,
    plus,
    reduce_over_group,
)
from .memory import atomic_ref, local_accessor, memory_order, memory_scope
from .runtime import (
    USMPtr,
    device,
    event,
    nd_item,
    nd_range,
    ptr,
    queue,
    range,
    sub_group,
)

__all__ = [
    "DEVICES",
    "all_of_group",
    "any_of_group",
    "atomic_ref",
    "bit_and",
    "bit_or",
    "bit_xor",
    "exclusive_scan_over_group",
    "group",
    "group_barrier",
    "group_broadcast",
    "inclusive_scan_over_group",
    "joint_reduce",
    "local_accessor",
    "logical_and",
    "logical_or",
    "maximum",
    "memory_order",
    "memory_scope",
    "minimum",
    "multiplies",
    "none_of_group",
    "plus",
    "reduce_over_group",
    "Combination",
    "Device",
    "USMPtr",
    "device",
    "devices",
    "event",
    "get_device",
    "matrix",
    "matrix_2021",
    "nd_item",
    "nd_range",
    "ptr",
    "queue",
    "range",
    "sub_group",
]


def __getattr__(name):
    if name in ("matrix", "matrix_2021"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(name)
