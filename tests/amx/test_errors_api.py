"""Bad arguments to the AMX API and `systolic amx tilecfg` are typed systolic errors naming the values."""

import numpy as np
import pytest

from systolic.amx import matmul
from systolic.amx.tilecfg import TileConfig
from systolic.cli import main
from systolic.errors import InvalidValue


@pytest.mark.parametrize("kw,key", [
    (dict(tiles=[(16, 64)]), "tiles"),            # a list, not a mapping
    (dict(tiles={0: (16,)}), "shape"),            # one number, not (rows, colsb)
    (dict(tiles={0: (16, 64, 1)}), "shape"),
    (dict(tiles={0: 16}), "tiles[0]"),
    (dict(tiles={0: (16, 64.5)}), "tiles[0]"),
    (dict(tiles={0: ("16", 64)}), "tiles[0]"),
    (dict(tiles={True: (16, 64)}), "tile"),
    (dict(tiles={8: (16, 64)}), "tile"),
    (dict(rows=[16] * 7 + [None]), "rows"),
    (dict(colsb=5), "colsb"),
    (dict(palette="1"), "palette"),
    (dict(start_row=1.0), "start_row"),
])
def test_tileconfig_bad_arguments(kw, key):
    with pytest.raises(InvalidValue) as e:
        TileConfig(**{"palette": 1, **kw})
    assert key in e.value.values


def test_tileconfig_accepts_numpy_integers():
    cfg = TileConfig(palette=np.uint8(1), tiles={np.int64(2): (np.int32(16), np.uint16(64))})
    assert cfg.palette == 1 and cfg.shape(2) == (16, 64) and type(cfg.rows[2]) is int
    assert cfg.to_bytes()[48 + 2] == 16 and cfg.to_bytes()[16 + 4] == 64


@pytest.mark.parametrize("threads", ["x", 0, -1, 2.0, True])
def test_matmul_threads_must_be_a_positive_integer(threads):
    a = np.ones((2, 4), np.int8)
    with pytest.raises(InvalidValue) as e:
        matmul(a, a.T.copy(), threads=threads)
    assert e.value.values == {"threads": threads}


def test_matmul_threads_numpy_integer_gives_the_exact_result():
    import ml_dtypes
    rng = np.random.default_rng(0)
    a = (rng.integers(-8, 9, (40, 6)) / 4).astype(ml_dtypes.bfloat16)
    b = (rng.integers(-8, 9, (6, 3)) / 4).astype(ml_dtypes.bfloat16)
    exact = a.astype(np.float64) @ b.astype(np.float64)   # multiples of 1/16, sums below 2**8: exact in fp32
    assert np.array_equal(matmul(a, b, threads=np.int64(2)), exact.astype(np.float32))


@pytest.mark.parametrize("image,word", [
    ("0" * 127, "128 hex digits"),     # odd: a length error, not "must be hexadecimal"
    ("0" * 129, "128 hex digits"),
    ("00" * 63, "128 hex digits"),
    ("zz" * 64, "hexadecimal"),
])
def test_tilecfg_cli_image_errors(capsys, image, word):
    with pytest.raises(SystemExit) as e:
        main(["amx", "tilecfg", image])
    assert e.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and word in err[0]
