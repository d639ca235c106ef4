"""Issue 21 item 8: every broken rule is a typed error naming it."""
import numpy as np
import pytest

import systolic.cl as cl
from systolic.errors import (DivergentCollective, InvalidValue, MemoryFault, SourceCompileError,
                             UnsupportedCombination)

SRC = r"""
kernel void copy(global const int* a, global int* b, int n) { int i = get_global_id(0); b[i] = a[i] + n; }
kernel void bad_barrier(global int* b) {
    int i = get_local_id(0);
    if (i < 8) barrier(CLK_LOCAL_MEM_FENCE);
    b[get_global_id(0)] = i;
}
kernel void bad_collective(global int* b) {
    int i = get_global_id(0);
    if (i % 2) b[i] = sub_group_reduce_add(i);
}
__attribute__((intel_reqd_sub_group_size(8)))
kernel void needs8(global int* b) { b[get_global_id(0)] = get_sub_group_size(); }
"""


@pytest.fixture(scope="module")
def prg():
    return cl.Program(cl.Context(device="pvc"), SRC).build()


@pytest.fixture
def q(prg):
    return cl.CommandQueue(prg.context)


def _buf(ctx, n=64, dt=np.int32):
    return cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=np.zeros(n, dt))


def test_wrong_argument_count(prg, q):
    with pytest.raises(InvalidValue, match="takes 3 arguments, got 2"):
        prg.copy(q, (64,), (16,), _buf(prg.context), _buf(prg.context))


def test_wrong_argument_type(prg, q):
    ctx = prg.context
    with pytest.raises(InvalidValue, match="is a pointer: pass a systolic.cl.Buffer"):
        prg.copy(q, (64,), (16,), np.zeros(64, np.int32), _buf(ctx), np.int32(1))
    with pytest.raises(InvalidValue, match="CL_INVALID_ARG_SIZE"):
        prg.copy(q, (64,), (16,), _buf(ctx), _buf(ctx), np.int64(1))
    with pytest.raises(InvalidValue, match="not a buffer"):
        prg.copy(q, (64,), (16,), _buf(ctx), _buf(ctx), _buf(ctx))


def test_buffer_too_small_is_a_memory_fault_naming_kernel_instruction_work_item(prg, q):
    ctx = prg.context
    with pytest.raises(MemoryFault) as e:
        prg.copy(q, (64,), (16,), _buf(ctx, 40), _buf(ctx), np.int32(1))
    v = e.value.values
    assert v["kernel"] == "copy" and "load i32" in v["instruction"] and v["work_item"] == (40,)


def test_barrier_reached_divergently(prg, q):
    with pytest.raises(DivergentCollective, match="part of a work-group") as e:
        prg.bad_barrier(q, (32,), (16,), _buf(prg.context))
    assert e.value.values["work_items_not_there"] == 8


def test_sub_group_function_reached_divergently(prg, q):
    with pytest.raises(DivergentCollective, match="part of a sub-group") as e:
        prg.bad_collective(q, (32,), (16,), _buf(prg.context))
    assert e.value.values["inactive_sub_group_local_ids"] == list(range(0, 16, 2))


def test_required_sub_group_size_the_device_lacks(prg, q):
    with pytest.raises(UnsupportedCombination, match="requires sub-group size 8; pvc has"):
        prg.needs8(q, (16,), (16,), _buf(prg.context))


def test_builtin_the_platform_lacks_names_where_it_exists():
    src = "kernel void k(global float* c) { float8 a = 0; c[0] = " \
          "intel_sub_group_tf32_tf32_matrix_mad_k8((float4)(0), a, a).s0; }"
    with pytest.raises(UnsupportedCombination, match="not available on dg2") as e:
        cl.Program(cl.Context(device="dg2"), src).build()
    assert "pvc" in e.value.values["available_on"]


def test_clang_diagnostics_carry_file_line_col():
    with pytest.raises(SourceCompileError) as e:
        cl.Program(cl.Context(device="pvc"), "kernel void k(global int* a) {\n  a[0] = nope;\n}\n",
                   filename="bad.cl").build()
    d = [x for x in e.value.diagnostics if x.severity == "error"][0]
    assert (d.file, d.line, d.column) == ("bad.cl", 2, 10)


def test_launch_sizes_checked(prg, q):
    ctx = prg.context
    with pytest.raises(InvalidValue, match="multiple of local_size"):
        prg.copy(q, (60,), (16,), _buf(ctx), _buf(ctx), np.int32(1))
    with pytest.raises(UnsupportedCombination, match="exceeds"):
        prg.copy(q, (2048,), (2048,), _buf(ctx, 2048), _buf(ctx, 2048), np.int32(1))


def test_spirv_without_a_translator_says_what_to_install(monkeypatch):
    from systolic.errors import BackendUnavailable
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("SYSTOLIC_LLVM_SPIRV", raising=False)
    with pytest.raises(BackendUnavailable, match="install llvm-spirv"):
        cl.Program(cl.Context(device="pvc"), b"\x03\x02\x23\x07" + bytes(16))


def test_a_builtin_outside_the_library_is_refused_by_name():
    from systolic.errors import UnsupportedOperation
    ir = """
target triple = "spir64-unknown-unknown"
declare spir_func ptr addrspace(4) @_Z19__spirv_AccessChaini(i32)
define spir_kernel void @k(ptr addrspace(1) %p) {
  %m = call spir_func ptr addrspace(4) @_Z19__spirv_AccessChaini(i32 0)
  ret void
}
"""
    ctx = cl.Context(device="pvc")
    prg = cl.Program(ctx, ir=ir).build()
    with pytest.raises(UnsupportedOperation, match="__spirv_AccessChain"):
        prg.k(cl.CommandQueue(ctx), (16,), (16,), _buf(ctx))
