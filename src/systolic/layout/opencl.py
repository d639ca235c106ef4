"""OpenCL / SPIR-V sub-group matrix operands: which work-item's component holds each element.

The rules are those of SPV_INTEL_subgroup_matrix_multiply_accumulate, section "Mapping Matrix Data to
Invocations" (KhronosGroup/SPIRV-Registry, revision 1, 2025-01-07), which the OpenCL built-ins of
cl_intel_subgroup_matrix_multiply_accumulate (rev 1.1.0), ..._tf32 and ..._split_... follow (REFERENCE.md
section 4). ``N`` is the sub-group size (the number of invocations); holders are ``("work_item", "component")``
with ``unit_bits`` = the width of one component of the built-in's argument:

* **Matrix A (M x K)**: "the K columns of data are passed by the N invocations, lower-numbered invocations passing
  the lower-numbered columns". With ``per = component_bits / element_bits`` columns packed in one component
  (lower columns in lower bits) a row needs ``K / per`` invocations:

  - ``K / per == N`` (the text's cases N == K and N < K): invocation ``c // per`` holds columns
    ``[per*i, per*i + per)`` of every row, component ``r`` = row ``r``;
  - ``K / per < N`` (the text's case N > K): ``ratio = N * per / K`` rows share one component: invocation
    ``(r % ratio) * K/per + c // per``, component ``r // ratio`` ("every other row of a single column, lower
    invocations the first row"); when M < ratio the higher invocations hold nothing (their data is ignored).

* **Matrix B (K x N)**: invocation = column; elements of at most 16 bits are packed into 32-bit components,
  ``32 / element_bits`` consecutive rows each, lower rows in lower bits (the "packed" or VNNI layout); wider
  elements take one component each.
* **Matrix C and the Result (M x N)**: invocation = column, component = row, one element per component.
* **Split A** (cl_intel_subgroup_split_matrix_multiply_accumulate): the first M/2 rows come from sub-group 0 and
  the rest from sub-group 1, each sub-group's half mapped as Matrix A with M/2 rows; holders
  ``("sub_group", "work_item", "component")``.

Every layout carries ``params["unit_strides"]``: a sub-group variable of vector type lives in registers
component-major (component j of all N work-items contiguous; for split A, sub-group 0's variable first), so the
flat image of :meth:`Layout.scatter` is the variable's register image, which is exactly DPAS's Src2 / Src1 /
Src0 / Dst image (visa-DPAS.md "Semantics"; ``tests/opencl/test_layout_opencl.py`` proves it against
:mod:`systolic.layout.dpas` for every built-in). ``params["lanes"]`` and ``params["lane_bits"]`` give the SIMD
view (:meth:`Layout.lane_of`).

Pure functions of primitive parameters: this module imports nothing above :mod:`systolic.layout.core`.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidValue
from .core import Layout

__all__ = ["matrix_a", "matrix_b", "matrix_acc", "split_a", "a_components", "b_components"]

_SPEC = "SPV_INTEL_subgroup_matrix_multiply_accumulate, Mapping Matrix Data to Invocations"


def _pos(**kw) -> None:
    for k, v in kw.items():
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v <= 0:
            raise InvalidValue(f"{k} must be a positive integer", rule="layout shape parameters", values={k: v})


def _a_geometry(k: int, n: int, element_bits: int, component_bits: int) -> tuple[int, int, int]:
    """(per, invocations per row, ratio) of Matrix A, checking that the rule applies."""
    if component_bits % element_bits:
        raise InvalidValue("a component of Matrix A holds a whole number of elements",
                           rule=f"{_SPEC}: columns are packed into a single value per row",
                           values={"element_bits": element_bits, "component_bits": component_bits})
    per = component_bits // element_bits
    if k % per:
        raise InvalidValue("K must be a multiple of the columns one component packs",
                           rule=f"{_SPEC}: each invocation packs K/N columns", values={"k": k, "per_component": per})
    inv = k // per
    if inv > n or n % inv:
        raise InvalidValue("the sub-group cannot pass this Matrix A: K / (elements per component) must divide N",
                           rule=f"{_SPEC}: N == K, N < K (columns packed) or N a multiple of K (rows interleaved)",
                           values={"k": k, "n": n, "per_component": per, "invocations_per_row": inv})
    return per, inv, n // inv


def a_components(m: int, k: int, *, sub_group_size: int, element_bits: int, component_bits: int) -> int:
    """Components of the per-work-item argument ``a`` (M, or ceil(M / ratio) when rows interleave)."""
    _pos(m=m, k=k, sub_group_size=sub_group_size, element_bits=element_bits, component_bits=component_bits)
    _, _, ratio = _a_geometry(k, sub_group_size, element_bits, component_bits)
    return -(-m // ratio)


def b_components(k: int, *, element_bits: int) -> int:
    """Components (32-bit, or one per element wider than 16 bits) of the per-work-item argument ``b``."""
    _pos(k=k, element_bits=element_bits)
    per = 32 // element_bits if element_bits <= 16 else 1
    return -(-k // per)


def matrix_a(m: int, k: int, *, sub_group_size: int, element_bits: int, component_bits: int, element: str = "",
             **params) -> Layout:
    """Matrix A (M x K) as ``("work_item", "component")``: see the module text."""
    _pos(m=m, k=k, sub_group_size=sub_group_size, element_bits=element_bits, component_bits=component_bits)
    n = sub_group_size
    per, inv, ratio = _a_geometry(k, n, element_bits, component_bits)
    r, c = np.meshgrid(np.arange(m, dtype=np.int64), np.arange(k, dtype=np.int64), indexing="ij")
    wi = (r % ratio) * inv + c // per
    comp = r // ratio
    idx = np.stack([wi, comp], axis=-1)
    bit = (c % per) * element_bits
    comps = -(-m // ratio)
    case = "N == K" if (per == 1 and ratio == 1) else ("N < K" if ratio == 1 else "N > K")
    p = dict(params, sub_group_size=n, M=m, K=k, components=comps, per_component=per, rows_per_component=ratio,
             case=case, unit_strides=(1, n), lanes=n, lane_bits=component_bits)
    return Layout(params.get("layer", "opencl"), "a", m, k, element or f"{element_bits}-bit", element_bits,
                  ("work_item", "component"), idx, bit, component_bits, params=p,
                  title=f"a: A {m}x{k} over {n} work-items ({case}), {comps} component(s) of {component_bits} bits")


def matrix_b(k: int, n: int, *, sub_group_size: int, element_bits: int, element: str = "", **params) -> Layout:
    """Matrix B (K x N): work-item = column, 32-bit components packing lower rows in lower bits."""
    _pos(k=k, n=n, sub_group_size=sub_group_size, element_bits=element_bits)
    if n != sub_group_size:
        raise InvalidValue("Matrix B has one column per invocation: N must equal the sub-group size",
                           rule=f"{_SPEC}: each invocation contributes a single column of Matrix B",
                           values={"n": n, "sub_group_size": sub_group_size})
    if element_bits <= 16:
        if 32 % element_bits:
            raise InvalidValue("packed B elements must divide 32 bits", values={"element_bits": element_bits})
        per, cbits = 32 // element_bits, 32
    else:
        per, cbits = 1, element_bits
    kk, nn = np.meshgrid(np.arange(k, dtype=np.int64), np.arange(n, dtype=np.int64), indexing="ij")
    idx = np.stack([nn, kk // per], axis=-1)
    bit = (kk % per) * element_bits
    comps = -(-k // per)
    p = dict(params, sub_group_size=n, K=k, N=n, components=comps, per_component=per, vnni=per,
             unit_strides=(1, n), lanes=n, lane_bits=cbits)
    return Layout(params.get("layer", "opencl"), "b", k, n, element or f"{element_bits}-bit", element_bits,
                  ("work_item", "component"), idx, bit, cbits, params=p,
                  title=f"b: B {k}x{n}, column per work-item, {comps} component(s) of {cbits} bits"
                        + (f", {per} rows each (packed)" if per > 1 else ""))


def matrix_acc(m: int, n: int, *, sub_group_size: int, element_bits: int, element: str = "", operand: str = "acc",
               **params) -> Layout:
    """Matrix C or the Result (M x N): work-item = column, component = row."""
    _pos(m=m, n=n, sub_group_size=sub_group_size, element_bits=element_bits)
    if n != sub_group_size:
        raise InvalidValue("Matrix C has one column per invocation: N must equal the sub-group size",
                           rule=f"{_SPEC}: each invocation contributes a single column of Matrix C",
                           values={"n": n, "sub_group_size": sub_group_size})
    if operand not in ("acc", "result"):
        raise InvalidValue("the accumulator operand is acc or result", values={"operand": operand})
    r, c = np.meshgrid(np.arange(m, dtype=np.int64), np.arange(n, dtype=np.int64), indexing="ij")
    idx = np.stack([c, r], axis=-1)
    p = dict(params, sub_group_size=n, M=m, N=n, components=m, unit_strides=(1, n), lanes=n,
             lane_bits=element_bits)
    return Layout(params.get("layer", "opencl"), operand, m, n, element or f"{element_bits}-bit", element_bits,
                  ("work_item", "component"), idx, np.zeros((m, n), dtype=np.int64), element_bits, params=p,
                  title=f"{operand}: {m}x{n}, column per work-item, component = row")


def split_a(m: int, k: int, *, sub_group_size: int, element_bits: int, component_bits: int, element: str = "",
            **params) -> Layout:
    """Matrix A of a split built-in: rows [0, M/2) from sub-group 0, [M/2, M) from sub-group 1."""
    _pos(m=m, k=k, sub_group_size=sub_group_size, element_bits=element_bits, component_bits=component_bits)
    if m % 2:
        raise InvalidValue("a split Matrix A has an even number of rows (half from each sub-group)",
                           rule="cl_intel_subgroup_split_matrix_multiply_accumulate: M = 2 x components of a",
                           values={"m": m})
    half = matrix_a(m // 2, k, sub_group_size=sub_group_size, element_bits=element_bits,
                    component_bits=component_bits, element=element)
    n = sub_group_size
    comps = half.params["components"]
    idx = np.concatenate([np.concatenate([np.zeros((m // 2, k, 1), np.int64), half.index], axis=-1),
                          np.concatenate([np.ones((m // 2, k, 1), np.int64), half.index], axis=-1)], axis=0)
    bit = np.concatenate([half.bit, half.bit], axis=0)
    p = dict(params, sub_group_size=n, M=m, K=k, components=comps, per_component=half.params["per_component"],
             rows_per_component=half.params["rows_per_component"], case=half.params["case"],
             unit_strides=(comps * n, 1, n), lanes=n, lane_bits=component_bits, split=True)
    return Layout(params.get("layer", "opencl"), "a", m, k, element or f"{element_bits}-bit", element_bits,
                  ("sub_group", "work_item", "component"), idx, bit, component_bits, params=p,
                  title=f"split a: A {m}x{k}, rows 0..{m // 2 - 1} from sub-group 0, the rest from sub-group 1")
