"""Bad input to the Layout objects (audit finding 16): typed errors naming the rule and the values.

Before the fixes: where(1.0, 0) gave IndexError, where(True, 0) TypeError (and True would have meant row 1),
scatter of an object array TypeError, scatter(nbytes=-1) ValueError, gather("abc") ValueError, gather of an
int32 array with values > 255 wrapped them silently to bytes, and the AMX tile layouts took m="16" / 16.0.
"""

import numpy as np
import pytest

from systolic.errors import InvalidValue
from systolic.layout import amx as LA
from systolic.xmx.layout import layout as dpas_layout


@pytest.fixture(scope="module")
def L():
    return dpas_layout("pvc", "src1", "bf16", rc=8)        # 16 x 16 bf16, GRF dwords


@pytest.mark.parametrize("row,col,bad", [(1.0, 0, "row"), (True, 0, "row"), (0, np.float64(2), "col"),
                                         ("1", 0, "row"), (0, False, "col"), (None, 0, "row")])
@pytest.mark.parametrize("method", ["where", "lane_of"])
def test_element_coordinates_are_integers(L, method, row, col, bad):
    with pytest.raises(InvalidValue) as e:
        getattr(L, method)(row, col)
    assert e.value.values == {bad: row if bad == "row" else col}
    assert e.value.rule == "row and col are integers"


def test_where_numpy_integer_is_accepted_and_returned_as_int(L):
    w = L.where(np.int64(1), np.int32(0))
    assert w["row"] == 1 and type(w["row"]) is int and type(w["col"]) is int
    assert w == L.where(1, 0)


@pytest.mark.parametrize("bits", [np.full((16, 16), None), np.full((16, 16), 1.5), np.full((16, 16), "a")])
def test_scatter_refuses_non_integer_bits(L, bits):
    with pytest.raises(InvalidValue) as e:
        L.scatter(bits)
    assert e.value.values == {"dtype": str(bits.dtype)}
    assert "integer" in e.value.rule


@pytest.mark.parametrize("nbytes", [-1, 1.5, True, "512"])
def test_scatter_nbytes_is_a_non_negative_integer(L, nbytes):
    with pytest.raises(InvalidValue) as e:
        L.scatter(np.zeros((16, 16), np.uint16), nbytes=nbytes)
    assert e.value.values == {"nbytes": nbytes}
    assert "integer >= 0" in e.value.rule


@pytest.mark.parametrize("image,values", [
    ("abc", {"dtype": "<U3"}),
    (np.full(512, 256, np.int32), {"dtype": "int32", "min": 256, "max": 256}),    # would wrap to byte 0
    (np.full(512, -1, np.int16), {"dtype": "int16", "min": -1, "max": -1}),       # would wrap to 0xFF
    (np.zeros(512, np.float32), {"dtype": "float32"}),
    (np.full(512, None), {"dtype": "object"}),
])
def test_gather_refuses_what_is_not_bytes(L, image, values):
    with pytest.raises(InvalidValue) as e:
        L.gather(image)
    assert e.value.values == values
    assert e.value.rule == "gather(image): uint8 bytes"


def test_gather_takes_bytes_and_byte_valued_integers(L):
    bits = (np.arange(256, dtype=np.uint16) * 257).reshape(16, 16)     # every element distinct
    img = L.scatter(bits)
    assert (L.gather(img) == bits).all()
    assert (L.gather(bytes(img)) == bits).all()
    assert (L.gather(img.astype(np.int32)) == bits).all()               # values 0..255: the same bytes


@pytest.mark.parametrize("fn,args,bad", [
    (LA.tile_a, ("16", 32), "m"), (LA.tile_a, (16.0, 32), "m"), (LA.tile_a, (16, 32.0), "k"),
    (LA.tile_b, (32, "16"), "n"), (LA.tile_b, (True, 16), "k"),
    (LA.tile_c, (16, 16.0), "n"), (LA.tile_c, (np.float32(16), 16), "m"),
])
def test_amx_tile_dimensions_are_integers(fn, args, bad):
    with pytest.raises(InvalidValue) as e:
        fn(*args, "bf16", 16)
    assert list(e.value.values) == [bad]
    assert e.value.rule == "AMX tile layouts: M, N, K are integers"


def test_amx_tile_integer_dimensions_still_work():
    assert LA.tile_a(np.int64(16), 32, "bf16", 16).shape == (16, 32)


@pytest.mark.parametrize("opts", [dict(m="16"), dict(m=16.0), dict(n=True), dict(k="32")])
def test_resolve_amx_shape_options_are_integers(opts):
    """resolve() passes shape options as given: a string, float or bool is refused (int() had coerced them)."""
    from systolic.explorer.resolve import resolve
    with pytest.raises(InvalidValue, match="must be an integer") as e:
        resolve("amx", "a", **opts)
    assert e.value.rule == "layout shape options are integers"


def test_resolve_dpas_rc_and_sycl_shape_are_integers():
    from systolic.explorer.resolve import resolve
    with pytest.raises(InvalidValue, match="rc must be an integer"):
        resolve("dpas", "dst", rc="8")
    with pytest.raises(InvalidValue, match="rows must be an integer"):
        resolve("sycl", "a", device="pvc", type="bf16", rows=8.0, cols=16)
    assert resolve("amx", "a", m=np.int64(16)).params["M"] == 16


# ---- AMX A tiles of a TMUL instruction: colsb % 4 == 0 (SDM TDPBSSD exceptions: #UD; REFERENCE.md section 6) -------

@pytest.mark.parametrize("mn, k, colsb", [("tdpbssd", 3, 3), ("tdpbuud", 5, 5), ("tdpbf16ps", 3, 6),
                                          ("tdpfp16ps", 1, 2)])
def test_amx_a_tile_of_an_instruction_needs_whole_dwords(mn, k, colsb):
    from systolic.explorer import resolve
    with pytest.raises(InvalidValue) as e:      # was: accepted (the B operand of the same K is refused)
        resolve("amx", "a", instruction=mn, k=k)
    assert e.value.rule == "TMUL: every tile's colsb is a multiple of 4 (else #UD)"
    assert e.value.values == {"instruction": mn, "K": k, "colsb": colsb}


def test_amx_a_tile_without_an_instruction_keeps_any_colsb():
    # a bare tile (no TMUL named) is a tile row of colsb bytes; loads are checked by the machine
    assert LA.tile_a(16, 3, "s8", 8).params["colsb"] == 3
    from systolic.explorer import resolve
    assert resolve("amx", "a", instruction="tdpbssd", k=4).params["colsb"] == 4
