"""Bad input to the AMX Python API (audit findings 10, 15): typed errors naming the rule and the values.

Each case failed before its fix with a bare AttributeError / IndexError / TypeError / OverflowError /
MemoryError, or returned a wrong answer silently (read_tile(-1) gave tile 7's shape with other data).
"""

import numpy as np
import pytest

from systolic.amx import TileConfig, TileMachine
from systolic.amx import intrinsics as I
from systolic.errors import InvalidValue


def _configured():
    m = TileMachine()
    m.ldtilecfg(TileConfig(palette=1, tiles={0: (16, 64), 1: (16, 64), 2: (16, 64)}))
    return m


# ------------------------------------------------------------------ finding 10: TileMachine conveniences
@pytest.mark.parametrize("tmm", [8, 9, -1, -8])
@pytest.mark.parametrize("method", ["tile_bytes", "read_tile", "write_tile"])
def test_convenience_tile_number_out_of_range(method, tmm):
    m = _configured()
    args = {"tile_bytes": (), "read_tile": (np.int32,), "write_tile": (np.zeros((16, 64), np.uint8),)}[method]
    with pytest.raises(InvalidValue) as e:
        getattr(m, method)(tmm, *args)
    assert e.value.values == {"tile": tmm}
    assert "tmm0 .. tmm7" in e.value.rule


def test_read_tile_minus_one_is_not_tile_seven():
    # before: the shape came from tmm -1 % 8 = 7 (unconfigured, 0 x 0) and the data from tiles[-1]: a silent
    # wrong answer; now refused
    m = _configured()
    with pytest.raises(InvalidValue):
        m.read_tile(-1, np.uint8)


@pytest.mark.parametrize("dtype", ["bogus", object, "O"])
def test_read_tile_bad_dtype(dtype):
    with pytest.raises(InvalidValue) as e:
        _configured().read_tile(0, dtype)
    assert "dtype" in e.value.values and "numeric numpy dtype" in e.value.rule


@pytest.mark.parametrize("values", [np.full((16, 64), None), np.full((16, 4), "abcdefghijklmnop")])
def test_write_tile_non_numeric(values):
    m = _configured()
    with pytest.raises(InvalidValue) as e:
        m.write_tile(0, values)
    assert e.value.values["dtype"] == str(values.dtype)
    assert not m.tiles.any()


@pytest.mark.parametrize("mnemonic,operands,expected", [
    ("tdpbssd", (0,), ("dst", "src1", "src2")),
    ("tdpbf16ps", (0, 1, 2, 3), ("dst", "src1", "src2")),
    ("tileloadd", (1,), ("tmm", "memory", "base", "stride")),
    ("tilezero", (), ("tmm",)),
])
def test_execute_wrong_operand_count(mnemonic, operands, expected):
    with pytest.raises(InvalidValue) as e:
        _configured().execute(mnemonic, *operands)
    assert e.value.values == {"instruction": mnemonic, "expected": expected, "given": len(operands)}
    assert mnemonic.upper() in str(e.value)


def test_execute_still_runs():
    m = _configured()
    m.execute("tdpbssd", 0, 1, 2)
    m.execute("tilezero", 0)


@pytest.mark.parametrize("stride", [2 ** 63, -(2 ** 63) - 1, 2 ** 80])
@pytest.mark.parametrize("op", ["tileloadd", "tilestored"])
def test_transfer_stride_must_fit_i64(op, stride):
    # the intrinsics layer refuses these strides too (tile_loadd stride: an integer that fits i64)
    m = _configured()
    with pytest.raises(InvalidValue) as e:
        getattr(m, op)(1, np.zeros(4096, np.uint8), 0, stride)
    assert e.value.values == {"stride": stride}
    assert "2**63" in e.value.rule
    with pytest.raises(InvalidValue):
        I.tile_loadd(I.Tile(16, 64), I.Ptr(np.zeros(4096, np.uint8)), stride)


def test_transfer_largest_i64_stride_is_a_memory_fault_not_an_error():
    from systolic.errors import MemoryFault
    m = _configured()
    with pytest.raises(MemoryFault) as e:
        m.tileloadd(1, np.zeros(4096, np.uint8), 0, 2 ** 63 - 1)
    assert e.value.row == 1


# ------------------------------------------------------------------ finding 15: GEMMs beyond memory

import ml_dtypes  # noqa: E402

from systolic.amx import gemm as amx_gemm  # noqa: E402
from systolic.amx import matmul  # noqa: E402


@pytest.mark.parametrize("inner,dtype", [("_int8", np.int8), ("_float", ml_dtypes.bfloat16)])
def test_matmul_memory_error_while_computing_is_typed(monkeypatch, inner, dtype):
    def boom(*args, **kw):
        raise MemoryError("Unable to allocate 256. GiB")
    monkeypatch.setattr(amx_gemm, inner, boom)
    from systolic.amx import native_matmul
    monkeypatch.setattr(native_matmul, "run", boom)      # AMX hosts: the native path, where it runs, fails too
    with pytest.raises(InvalidValue) as e:
        matmul(np.ones((4, 8), dtype), np.ones((8, 2), dtype))
    assert e.value.values == {"M": 4, "K": 8, "N": 2}
    assert "out of memory" in str(e.value) and "256. GiB" in str(e.value)
