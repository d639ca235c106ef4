"""The engines' backend= registry (systolic.backend_registry): providers fill it from above, the engines look up.

Oracles: pyproject.toml's entry points (read with tomllib, not through the registry), a fake provider that records
the arguments it is handed, ``sys.modules`` in a fresh interpreter (what "auto" on numpy inputs imports).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import systolic
from systolic import backend_registry as R
from systolic.errors import BackendUnavailable, InvalidValue

ROOT = Path(__file__).resolve().parents[1]


#: the package root's built-in provider (what a source checkout without installed metadata has)
BUILTIN_CUDA = R.Provider("cuda", systolic._cuda_provider, "systolic.gpu.register:register")


@pytest.fixture
def clean(monkeypatch):
    """A registry with nothing registered or loaded, the installed entry points unread (restored afterwards):
    the package root's built-in cuda provider only."""
    fresh = R._registry()
    fresh.add("cuda", BUILTIN_CUDA)
    monkeypatch.setattr(R, "PROVIDERS", fresh)
    monkeypatch.setattr(R, "_impls", {})
    monkeypatch.setattr(R, "_detectors", {})
    monkeypatch.setattr(R, "_loaded", set())
    monkeypatch.setattr(R, "_all_loaded", False)
    monkeypatch.setattr(R, "_eps_read", True)
    return R


class FakeDeviceArray:
    """An input only the fake provider claims."""

    def __init__(self, x):
        self.x = np.asarray(x)


@pytest.fixture
def fake(clean, monkeypatch):
    """A provider "fake" (its loader handed to provide()); returns its list of loads."""
    calls = []

    def register():
        calls.append("loaded")
        R.register_detector("fake", lambda x: isinstance(x, FakeDeviceArray))
        R.register("amx.matmul", "fake", lambda *a, **kw: ("amx", a, kw))
        R.register("xmx.matmul", "fake", lambda *a, **kw: ("xmx", a, kw))

    fresh = R._registry()                                     # no CUDA provider in these tests
    monkeypatch.setattr(R, "PROVIDERS", fresh)
    R.provide("fake", register, source="tests:fake")
    return calls


def test_pyproject_declares_the_builtin_providers():
    """The entry points an installed systolic reads name the functions the package root provides a source
    checkout with (a fresh interpreter: the root's records before any entry point is read)."""
    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["systolic.backends"]
    code = ("from systolic import backend_registry as R; "
            "print({p.name: p.source for p in R.PROVIDERS if p.name not in R.OWN})")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == repr(eps)
    for name, value in eps.items():                     # each names a real function
        mod, _, attr = value.partition(":")
        assert callable(getattr(importlib.import_module(mod), attr))


def test_numpy_inputs_under_auto_load_no_provider():
    code = ("import sys, numpy as np; from systolic import amx, xmx; "
            "a = np.ones((2, 32), np.int8); amx.matmul(a, a.T.copy()); xmx.matmul(a, a.T.copy()); "
            "print(sorted(m for m in sys.modules if m.startswith('systolic.gpu')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]"


def test_unknown_backend_names_the_known_ones():
    from systolic.amx import matmul
    a = np.ones((2, 4), np.int8)
    for bad in ("tpu", "CUDA", None, 3):
        with pytest.raises(InvalidValue, match="unknown backend") as e:
            matmul(a, a.T.copy(), backend=bad)
        assert e.value.rule == "auto, cpu, cuda"


def test_builtin_cuda_provider_without_installed_metadata(clean, monkeypatch):
    """A source checkout on PYTHONPATH (no dist-info): the package root's loader finds systolic.gpu."""
    from systolic.gpu import amx_kernels, runtime, xmx_kernels
    assert R.lookup("amx.matmul", "cuda") is amx_kernels.matmul
    assert R.lookup("xmx.matmul", "cuda") is xmx_kernels.matmul
    assert R._detectors["cuda"] is runtime.is_gpu_array


def test_a_provider_is_loaded_once_and_gets_the_arguments_less_backend(fake):
    from systolic import amx, xmx
    a, b = np.ones((2, 4), np.int8), np.ones((4, 2), np.int8)
    got = amx.matmul(a, b, backend="fake", device="emr", threads=2)
    assert got == ("amx", (a, b, None), {"cpu": "emr", "method": "auto", "threads": 2})
    got = xmx.matmul(a, b, None, "dg2", backend="fake")
    assert got == ("xmx", (a, b, None), {"platform": "dg2", "model": "stage", "precision": None, "row_block": None})
    assert fake == ["loaded"]
    assert R.names() == ("auto", "cpu", "fake")


def test_auto_goes_where_a_detector_claims_an_input(fake):
    from systolic import amx
    calls = fake
    a = np.ones((2, 4), np.int8)
    assert R.resolve("auto", a, None) == "cpu" and calls == []        # numpy: nothing loaded
    assert R.resolve("auto", [[1]], None) == "cpu" and calls == ["loaded"]   # not numpy: asked, not claimed
    dev = FakeDeviceArray(a.T)
    assert amx.matmul(a, dev)[0] == "amx"
    assert R.resolve("cpu", dev) == "cpu"


def test_a_broken_provider_is_backend_unavailable(clean, monkeypatch):
    R.provide("cuda", lambda: importlib.import_module("nowhere.at.all"), "nowhere.at.all:register")  # no module
    with pytest.raises(BackendUnavailable, match="provider could not be loaded") as e:
        R.lookup("amx.matmul", "cuda")
    assert e.value.values["provider"] == "nowhere.at.all:register"
    assert R.resolve("auto", [[1]]) == "cpu"                      # "auto" skips a provider that cannot load


def test_a_provider_without_the_engine_is_backend_unavailable(clean):
    R.register("xmx.matmul", "fake", lambda *a, **kw: None)
    with pytest.raises(BackendUnavailable, match="has no amx.matmul"):
        R.lookup("amx.matmul", "fake")


def test_auto_and_cpu_cannot_be_registered(clean):
    with pytest.raises(InvalidValue):
        R.register("amx.matmul", "cpu", lambda *a, **kw: None)


def test_torch_engines_check_backend_names_through_the_registry():
    st = pytest.importorskip("systolic.torch")
    with pytest.raises(InvalidValue, match="unknown backend") as e:
        st.parse_engine("amx:spr", backend="tpu")
    assert e.value.rule == "auto, cpu, cuda"
    assert st.parse_engine("xmx:pvc", backend="cuda").backend == "cuda"      # parsed: nothing probed yet
