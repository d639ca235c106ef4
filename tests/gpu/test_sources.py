"""The CUDA C sources are package data (src/systolic/gpu/*.cu), read by runtime.source without a GPU or CuPy.

Every kernel a driver looks up by name is defined in the file it loads, so a renamed or lost file, or a kernel
moved between files, fails here on a machine without CUDA too (the kernels' bits are tested on the GPU)."""

from __future__ import annotations

import re

import pytest

from systolic.errors import BackendUnavailable
from systolic.gpu import amx_float_cuda, int_gemm, runtime, xmx_source

#: file -> (the module that loads it, kernels its driver asks for by name)
SOURCES = {
    "amx_float.cu": (amx_float_cuda, ["convert_a_bf16", "convert_a_fp16", "convert_b_bf16", "convert_b_fp16",
                                      "scan_c", "amx_exact"]),
    "int_gemm.cu": (int_gemm, ["transpose_b", "shift_rows", "bias_c"]),
    "xmx.cu": (xmx_source, ["xmx_decode", "xmx_fma32", "xmx_stage", "xmx_stage32", "xmx_stage_robust",
                            "xmx_stats_a", "xmx_stats_b"]),
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_source_is_package_data_and_defines_its_kernels(name):
    mod, kernels = SOURCES[name]
    text = runtime.source(name)
    assert text is mod.SOURCE and "__global__" in text
    for k in kernels:
        assert re.search(rf"__global__[^{{;]*\b{k}\b", text), f"{name} lacks kernel {k}"


def test_a_missing_source_is_backend_unavailable():
    with pytest.raises(BackendUnavailable, match="nope.cu"):
        runtime.source("nope.cu")
