"""device= / path= / backend= across the engines; the older keywords warn and give the same bits."""

from __future__ import annotations

import numpy as np
import pytest

from systolic import opencl as cl
from systolic import xmx
from systolic.amx import TileMachine
from systolic.amx import matmul as amx_matmul
from systolic.errors import InvalidValue


def _ints(seed, shape):
    return np.random.default_rng(seed).integers(-128, 128, shape, dtype=np.int8)


def test_amx_matmul_device_and_path():
    a, b = _ints(0, (3, 8)), _ints(1, (8, 5))
    want = a.astype(np.int64) @ b.astype(np.int64)           # exact: no wrap at this size
    assert np.array_equal(amx_matmul(a, b, device="spr"), want)
    assert np.array_equal(amx_matmul(a, b, device="spr", path="spec"), want)
    with pytest.warns(DeprecationWarning, match="cpu= is deprecated, use device="):
        assert np.array_equal(amx_matmul(a, b, cpu="spr"), want)
    with pytest.raises(InvalidValue, match="path is 'spec' or 'fast'"):
        amx_matmul(a, b, path="slow")
    with pytest.raises(TypeError, match="unexpected keyword argument 'cpux'"):
        amx_matmul(a, b, cpux="spr")


def test_xmx_matmul_device():
    a, b = _ints(2, (8, 32)), _ints(3, (32, 16))
    want = a.astype(np.int64) @ b.astype(np.int64)
    assert np.array_equal(xmx.matmul(a, b, device="pvc"), want)
    assert np.array_equal(xmx.matmul(a, b, None, "dg2"), want)               # positional, as before
    with pytest.warns(DeprecationWarning, match="platform= is deprecated, use device="):
        assert np.array_equal(xmx.matmul(a, b, platform="pvc"), want)


def test_tile_machine_vocabulary():
    assert TileMachine(device="gnr").cpu.name == "graniterapids"
    assert TileMachine(path="spec").backend.name == "spec" and TileMachine().backend.name == "emulator"
    with pytest.warns(DeprecationWarning, match="backend='spec' is deprecated"):
        assert TileMachine(backend="spec").backend.name == "spec"
    with pytest.warns(DeprecationWarning, match="cpu= is deprecated"):
        assert TileMachine(cpu="emr").cpu.name == "emeraldrapids"
    with pytest.raises(InvalidValue, match="give device= only"):
        TileMachine(cpu="emr", device="spr")


def test_opencl_builtin_device_and_path():
    f = cl.intel_sub_group_i8_i8_matrix_mad_k32
    rng = np.random.default_rng(4)
    A, B = rng.integers(-128, 128, (8, 32)), rng.integers(-128, 128, (32, 16))
    C = np.zeros((8, 16), np.int64)
    a, b, acc = (cl.distribute(f.__name__, op, X, platform="pvc") for op, X in (("a", A), ("b", B), ("acc", C)))
    d = f(a, b, acc, device="pvc", path="spec")
    assert (cl.gather(f.__name__, "result", d, platform="pvc") == A @ B).all()
    with pytest.warns(DeprecationWarning, match="engine= is deprecated, use path="):
        assert np.array_equal(f(a, b, acc, platform="pvc", engine="spec"), d)
