"""The first revision of the SYCL matrix extension (2021, AMX), as the seed text writes it.

Source: ``/work/shared/specs/sycl_ext_intel_matrix-2021-amx.md`` (``sycl::ext::intel::experimental::matrix``):

* ``joint_matrix<sub_group, T, Rows, Cols, matrix_layout Layout = row_major>``: no ``use``; a packed B is
  declared with its VNNI sizes, ``joint_matrix<sub_group, int8_t, tK/4, tN*4, packed_b>``;
* ``joint_matrix_load/store(sg, m, ptr, stride, layout)``; ``D = joint_matrix_mad(sg, A, B, C)`` *returns* D;
* "The current implementation provides support of the matrix interface on AMX" and "SG_SIZE has to be equal to
  one": this module runs on the AMX devices only;
* "although the AMX hardware supports 2d tiles with a maximum size of 16x64 bytes, this current implementation
  can handle any size": any shape, computed tile by tile (:mod:`systolic.sycl.lower_amx`);
* types: A(int8, row_major), B(int8, packed_b), C(int32, row_major) or A(bf16), B(bf16, packed_b), C(float)
  (and what the device's AMX multiplies: uint8 mixes; fp16 on Granite Rapids).

A matrix here holds the block of elements exactly as it lies in memory (Rows x Cols as declared); the layout
says how to read the logical operand from it: ``packed_b`` is the VNNI image of a K x N B (K/vf rows of
N*vf), ``packed_a`` the VNNI image of a column-major A (K/vf rows of M*vf), ``col_major`` the transpose.

Feature-test macro: "an implementation supporting this extension must predefine the macro
SYCL_EXT_ONEAPI_MATRIX" with value 1, "Initial extension implementation on AMX. Base features are supported"
(the seed's table, SYCL 2020 section 6.3.3 "Feature test macros"): :data:`SYCL_EXT_ONEAPI_MATRIX` below,
the module constant a Python program tests in place of ``#if defined(SYCL_EXT_ONEAPI_MATRIX)``.
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from ..errors import InvalidValue, UnsupportedCombination
from . import matrix_core as core
from .devices import near_combinations
from .matrix_core import JointMatrix

__all__ = ["SYCL_EXT_ONEAPI_MATRIX", "joint_matrix", "joint_matrix_load", "joint_matrix_mad", "joint_matrix_store",
           "matrix_layout"]

#: the extension's feature-test macro: 1 = "Initial extension implementation on AMX. Base features are
#: supported." (sycl_ext_intel_matrix-2021-amx.md, the macro's value table)
SYCL_EXT_ONEAPI_MATRIX = 1


class matrix_layout(Enum):
    row_major = "row_major"
    col_major = "col_major"
    packed_a = "packed_a"
    packed_b = "packed_b"


def _sg(sg, name):
    from .runtime import sub_group
    if not isinstance(sg, sub_group):
        raise InvalidValue(f"{name} takes the sub_group first", values={"got": type(sg).__name__})
    rec = sg.launch.device.get_device().record
    if rec.backend != "amx":
        raise UnsupportedCombination(
            f"the 2021 matrix revision is implemented on AMX only, not on {rec.name}",
            rule="seed: 'The current implementation provides support of the matrix interface on AMX'",
            values={"device": rec.name, "amx_devices": ["spr", "emr", "gnr", "dmr"]})
    return sg.launch


def _ml(layout) -> str:
    if isinstance(layout, matrix_layout):
        return layout.value
    if layout in ("row_major", "col_major", "packed_a", "packed_b"):
        return layout
    raise InvalidValue(f"unknown matrix_layout {layout!r}", rule="row_major, col_major, packed_a, packed_b",
                       values={"layout": layout})


#: the largest rows x cols a 2021-API matrix may have here (2**22 elements: its element map alone is 64 MiB)
MAX_ELEMENTS = 1 << 22


def joint_matrix(sg, T, rows, cols, layout=matrix_layout.row_major) -> JointMatrix:
    """``joint_matrix<sub_group, T, rows, cols, layout> m(sg)`` (rows/cols as declared: VNNI sizes when packed)."""
    rec = _sg(sg, "joint_matrix").device.get_device().record
    lay = _ml(layout)
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in (rows, cols)) and \
            int(rows) * int(cols) > MAX_ELEMENTS:
        # "any size" is blocked onto tiles, but the emulator keeps the whole matrix and its element map in host
        # memory (16+ bytes per element): rows = 10**9 would exhaust it rather than fail
        raise InvalidValue(f"a {rows} x {cols} joint_matrix is more than the emulator holds "
                           f"({MAX_ELEMENTS} elements)", rule="the 2021 API's any-size matrices live in host memory",
                           values={"rows": int(rows), "cols": int(cols), "max_elements": MAX_ELEMENTS})
    try:
        # the 2021 revision has no use: a matrix is held as an accumulator-like block of any size
        m = JointMatrix(sg, T, "accumulator", rows, cols, "row_major", anysize=True)
    except UnsupportedCombination as e:
        # the declaration check words its refusal in today's API (use::..., layout::...); say it in the 2021 API's
        t = e.values.get("type", T)
        types = sorted({x for c in rec.combinations for x in c.types()})
        raise UnsupportedCombination(
            f"{rec.name} AMX multiplies and accumulates no {t}: "
            f"joint_matrix<sub_group, {t}, {rows}, {cols}, matrix_layout::{lay}> cannot be declared",
            rule="seed: any size, but A(int8) B(int8, packed_b) C(int32), or A(bf16) B(bf16, packed_b) C(float) "
                 f"(and what the device's AMX multiplies); {rec.name} element types: {', '.join(types)}",
            values={"device": rec.name, "type": t, "rows": rows, "cols": cols, "layout": lay}) from None
    m.tag = lay
    return m


def _layout_of(m) -> str:
    return m.tag or "row_major"


def _io(b, *, store: bool, lay: str):
    mg, (mem, offs), stride = b.args
    spec = mg.spec
    if mem.dtype != spec.t.dtype:
        raise InvalidValue(f"{b.name}: the pointer's element type {mem.dtype} is not the matrix's {spec.t.dtype}",
                           values={"pointer": str(mem.dtype), "matrix": str(spec.t.dtype)})
    stride = np.broadcast_to(np.asarray(stride, dtype=np.int64), (b.nsg,))
    core.check_stride(stride, spec)
    # the block lies in memory as declared; col_major reads it transposed
    idx = core.mem_index(spec, offs, stride, "col_major" if lay == "col_major" else "row_major")
    if store:
        core.scatter(mem, idx, mg.get(), b.name)
    else:
        mg.set(core.gather(mem, idx, b.name))


def joint_matrix_load(sg, m, ptr, stride, layout=matrix_layout.row_major) -> None:
    """Load the declared Rows x Cols block from ``ptr`` (rows ``stride`` elements apart; col_major: columns)."""
    L = _sg(sg, "joint_matrix_load")
    from .matrix import check_matrix, check_pointer, check_scalars
    check_scalars("joint_matrix_load", stride=stride)
    L.collective("joint_matrix_load", _io, sg, (check_matrix(m, "load"), check_pointer(ptr), stride),
                 store=False, lay=_ml(layout))


def joint_matrix_store(sg, m, ptr, stride, layout=matrix_layout.row_major) -> None:
    """Store the declared block to ``ptr``."""
    L = _sg(sg, "joint_matrix_store")
    from .matrix import check_matrix, check_pointer, check_scalars
    check_scalars("joint_matrix_store", stride=stride)
    L.collective("joint_matrix_store", _io, sg, (check_matrix(m, "store"), check_pointer(ptr), stride),
                 store=True, lay=_ml(layout))


def _logical(vals: np.ndarray, lay: str, role: str) -> np.ndarray:
    """(P, rows, cols) blocks -> the logical operand: A is M x K, B is K x N."""
    vf = 4 // vals.dtype.itemsize
    P, r, c = vals.shape
    if lay == "packed_b":                 # (K/vf, N*vf) -> K x N
        return vals.reshape(P, r, c // vf, vf).transpose(0, 1, 3, 2).reshape(P, r * vf, c // vf)
    if lay == "packed_a":                 # (K/vf, M*vf) of a column-major A -> M x K
        kxm = vals.reshape(P, r, c // vf, vf).transpose(0, 1, 3, 2).reshape(P, r * vf, c // vf)
        return kxm.transpose(0, 2, 1)
    if lay == "col_major":                # held as loaded (already the logical orientation)
        return vals
    return vals


def _mad_2021(b, *, layouts):
    A, B, C, D = b.args
    la, lb = layouts
    a = _logical(A.get(), la, "a")
    bb = _logical(B.get(), lb, "b")
    c = C.get()
    if a.shape[2] != bb.shape[1] or c.shape[1:] != (a.shape[1], bb.shape[2]):
        raise InvalidValue("joint_matrix_mad shapes: A M x K, B K x N (after VNNI unpacking), C M x N",
                           values={"A": a.shape[1:], "B": bb.shape[1:], "C": c.shape[1:]})
    rec = A.spec.device
    ta, tb, tc = A.spec.t, B.spec.t, C.spec.t
    want = "sint32" if ta.name in ("sint8", "uint8") else "fp32"
    if tc.name != want or not any(cmb.atype == ta.name and cmb.btype == tb.name for cmb in rec.combinations):
        raise UnsupportedCombination(
            f"{rec.name} AMX cannot multiply {ta.name} x {tb.name} into {tc.name}",
            rule="seed: A(int8) B(int8, packed_b) C(int32), or A(bf16) B(bf16, packed_b) C(float); "
                 + near_combinations(rec, (ta.name, tb.name)),
            values={"a": ta.name, "b": tb.name, "c": tc.name})
    from .lower_amx import mad
    D.set(mad(rec.engine, ta.name, tb.name, a, bb, c, how=b.launch.device.amx))


def joint_matrix_mad(sg, A, B, C) -> JointMatrix:
    """``D = joint_matrix_mad(sg, A, B, C)``: A * B + C, returned as a new matrix shaped like C."""
    L = _sg(sg, "joint_matrix_mad")
    from .matrix import check_matrix
    for x, w in ((A, "A"), (B, "B"), (C, "C")):
        check_matrix(x, "joint_matrix_mad", w)
    D = joint_matrix(sg, C.spec.t.dtype, C.spec.rows, C.spec.cols)
    L.collective("joint_matrix_mad", _mad_2021, sg, (A, B, C, D), layouts=(_layout_of(A), _layout_of(B)))
    return D

