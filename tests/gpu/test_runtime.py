"""systolic.gpu.runtime: availability with distinct reasons, typed errors, array intake and return.

The reasons are tested everywhere with a stand-in CuPy module (no GPU needed); intake / give_back on a real GPU.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from systolic.errors import BackendUnavailable, InvalidValue
from systolic.gpu import resolve_backend, runtime

from .conftest import needs_gpu


class _CudaErr(Exception):
    def __init__(self, status):
        self.status = status
        super().__init__(f"status {status}")


def fake_cupy(driver=12040, runtime_v=12040, count=1, count_error=None, cc=(9, 0), nvrtc=(12, 4)):
    rt = types.SimpleNamespace(CUDARuntimeError=_CudaErr, runtimeGetVersion=lambda: runtime_v,
                               driverGetVersion=lambda: driver,
                               getDeviceProperties=lambda i: {"name": b"Fake GPU", "totalGlobalMem": 2 ** 34,
                                                              "multiProcessorCount": 132})

    def count_fn():
        if count_error is not None:
            raise _CudaErr(count_error)
        return count
    rt.getDeviceCount = count_fn

    def nv():
        if nvrtc is None:
            raise RuntimeError("libnvrtc.so not found")
        return nvrtc
    dev = types.SimpleNamespace(id=0, compute_capability=f"{cc[0]}{cc[1]}")
    cuda = types.SimpleNamespace(runtime=rt, Device=lambda *a: dev, nvrtc=types.SimpleNamespace(getVersion=nv))
    return types.SimpleNamespace(__version__="14.0-fake", cuda=cuda)


@pytest.fixture
def probe(monkeypatch):
    """Run the availability probe against a stand-in CuPy; restores the real state afterwards."""
    def run(installed=True, importer=None, **kw):
        monkeypatch.setattr(runtime, "_cupy_installed", lambda: installed)
        monkeypatch.setattr(runtime, "_import_cupy", importer or (lambda: fake_cupy(**kw)))
        return runtime.info(refresh=True)
    monkeypatch.delenv(runtime.DISABLE_ENV, raising=False)
    yield run
    monkeypatch.undo()
    runtime.availability(refresh=True)


def test_no_cupy(probe):
    s = probe(installed=False)
    assert not s["available"] and s["state"] == "no-cupy" and "pip install 'systolic[gpu]'" in s["reason"]


def test_broken_cupy_is_not_an_import_error(probe):
    def boom():
        raise ImportError("libcudart.so.12: cannot open shared object file")
    s = probe(importer=boom)
    assert s["state"] == "broken-cupy" and "libcudart" in s["reason"]


def test_no_driver(probe):
    s = probe(driver=0)
    assert s["state"] == "no-device" and "no CUDA driver" in s["reason"]


def test_no_device(probe):
    assert probe(count_error=100)["state"] == "no-device"
    s = probe(count=0)
    assert s["state"] == "no-device" and "device count 0" in s["reason"]


def test_driver_too_old(probe):
    s = probe(count_error=35)
    assert s["state"] == "driver-too-old" and "too old" in s["reason"]
    s = probe(driver=11080, runtime_v=12040)
    assert s["state"] == "driver-too-old" and "11.8" in s["reason"] and "12.4" in s["reason"]


def test_old_gpu_and_missing_nvrtc(probe):
    assert probe(cc=(7, 5))["state"] == "old-device"
    assert probe(nvrtc=None)["state"] == "no-nvrtc"


def test_ok_state_describes_the_device(probe):
    s = probe()
    assert s["available"] and s["name"] == "Fake GPU" and s["compute_capability"] == "9.0"
    assert runtime.availability() == (True, s["reason"])


def test_require_raises_backend_unavailable_with_the_reason(probe):
    probe(count_error=35)
    with pytest.raises(BackendUnavailable, match="too old") as e:
        runtime.require()
    assert e.value.values["state"] == "driver-too-old"


def test_disabled_by_environment(monkeypatch):
    monkeypatch.setenv(runtime.DISABLE_ENV, "1")
    try:
        ok, why = runtime.availability(refresh=True)
        assert not ok and runtime.DISABLE_ENV in why
        with pytest.raises(BackendUnavailable):
            runtime.intake(np.zeros(3))
    finally:
        monkeypatch.delenv(runtime.DISABLE_ENV)
        runtime.availability(refresh=True)


def test_resolve_backend():
    assert resolve_backend("auto", np.zeros(2), None) == "cpu"
    assert resolve_backend("cuda", np.zeros(2)) == "cuda"
    with pytest.raises(InvalidValue, match="auto, cpu, cuda"):
        resolve_backend("gpu")


def test_is_gpu_array_looks_only_at_the_object():
    class CAI:
        __cuda_array_interface__ = {"shape": (1,), "typestr": "<f4", "data": (0, False), "version": 3}

    class DL:
        def __dlpack_device__(self):
            return (2, 0)

    class HostDL:
        def __dlpack_device__(self):
            return (1, 0)
    assert runtime.is_gpu_array(CAI()) and runtime.is_gpu_array(DL())
    assert not runtime.is_gpu_array(HostDL()) and not runtime.is_gpu_array(np.zeros(2)) and not runtime.is_gpu_array(3)


@needs_gpu
def test_round_trip_of_every_kind():
    import cupy as cp
    import ml_dtypes
    x = np.arange(12, dtype=np.float32).reshape(3, 4).astype(ml_dtypes.bfloat16)
    it = runtime.intake(x)
    assert it.kind == "numpy" and it.dtype == x.dtype and it.data.dtype == cp.uint16
    back = runtime.give_back(it.data, it, dtype=x.dtype)
    assert back.dtype == x.dtype and np.array_equal(back.view(np.uint16), x.view(np.uint16))
    y = cp.arange(6, dtype=cp.int32)
    assert runtime.give_back(runtime.intake(y).data, "cupy") is not None
    assert np.array_equal(runtime.to_numpy(y), np.arange(6))


@needs_gpu
def test_compiled_modules_are_cached():
    src = 'extern "C" __global__ void k(int* x) { x[threadIdx.x] = threadIdx.x; }'
    assert runtime.module(src) is runtime.module(src)
    import cupy as cp
    x = cp.zeros(32, cp.int32)
    runtime.kernel(src, "k")((1,), (32,), (x,))
    assert x.get().tolist() == list(range(32))
