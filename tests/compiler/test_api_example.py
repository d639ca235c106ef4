"""The seed's `api` example compiled and run: equal to eager execution and to exact integer arithmetic, both
branches, valid shapes; InvalidOpcode for shapes the hardware rejects (seed section 4-5, REFERENCE.md 6-7)."""

import numpy as np
import pytest

from systolic.amx.intrinsics import Ptr, Tile, tile_dpbssd, tile_loadd, tile_stored
from systolic.compiler import compile_ir
from systolic.compiler.tracing import if_
from systolic.errors import GeneralProtection, InvalidOpcode

from .helpers import example, rand_bytes


@pytest.fixture(scope="module")
def api():
    return compile_ir(example("api.ll"), source="api.ll")


def api_eager(cond, row, col, buf, buf2):
    """The seed's C code (section 4) written with the clang-style intrinsics, run eagerly."""
    col = ((col & 0xFF) ^ 0x80) - 0x80  # %conv.i31: the listing sign-extends the low byte of col
    a, b, c = Tile(row, col), Tile(row, col), Tile(row, col)
    src = Ptr(buf) if cond else Ptr(buf2)
    tile_loadd(a, src, 32)
    tile_loadd(b, src, 32)
    tile_loadd(c, src, 32)
    tile_dpbssd(c, a, b)
    tile_stored(Ptr(buf), 32, c)


def exact(cond, row, col, buf, buf2):
    """Independent oracle: Python ints, the SDM's TDPBSSD definition (sign-extended bytes, dwords wrap)."""
    src = (buf if cond else buf2).tolist()
    s8 = lambda x: x - 256 if x >= 128 else x

    def tile(r, c):
        return [[src[i * 32 + j] for j in range(c)] for i in range(r)]

    a, b, cc = tile(row, col), tile(row, col), tile(row, col)
    out = buf.copy()
    for m in range(row):
        for n in range(col // 4):
            acc = int.from_bytes(bytes(cc[m][4 * n:4 * n + 4]), "little", signed=True)
            for k in range(col // 4):
                for q in range(4):
                    acc += s8(a[m][4 * k + q]) * s8(b[k][4 * n + q])
            acc = (acc + 2 ** 31) % 2 ** 32 - 2 ** 31
            out[m * 32 + 4 * n:m * 32 + 4 * n + 4] = np.frombuffer(acc.to_bytes(4, "little", signed=True), np.uint8)
    return out


@pytest.mark.parametrize("cond", [1, 0, -5])
@pytest.mark.parametrize("row, col", [(8, 32), (16, 64), (4, 16), (1, 4)])
def test_compiled_equals_eager_and_exact(api, cond, row, col):
    rng = np.random.default_rng(row * 100 + col + (cond & 7))
    buf, buf2 = rand_bytes(rng, 1024), rand_bytes(rng, 1024)
    b1, b2 = buf.copy(), buf2.copy()
    e1, e2 = buf.copy(), buf2.copy()
    o1, o2 = buf.copy(), buf2.copy()
    api.run("api", cond, row, col, memory={"buf": b1, "buf2": b2})
    api_eager(cond, row, col, e1, e2)
    oracle = exact(cond, row, col, o1, o2)
    assert np.array_equal(b1, oracle)
    assert np.array_equal(b1, e1) and np.array_equal(b2, e2) and np.array_equal(b2, buf2)
    r = api.run_eager("api", cond, row, col, memory={"buf": o1, "buf2": o2})
    assert np.array_equal(r.memory["buf"], oracle)


@pytest.mark.parametrize("row, col", [(16, 32), (8, 16), (4, 32)])
def test_rejected_shapes_raise_invalid_opcode(api, row, col):
    buf, buf2 = np.zeros(1024, np.uint8), np.zeros(1024, np.uint8)
    with pytest.raises(InvalidOpcode, match="src2 rows|src1.colsb"):
        api.run("api", 1, row, col, memory={"buf": buf, "buf2": buf2})
    with pytest.raises(InvalidOpcode):
        api_eager(1, row, col, buf.copy(), buf2.copy())


@pytest.mark.parametrize("row, col", [(17, 64), (8, 68)])
def test_shapes_beyond_the_palette_raise_general_protection(api, row, col):
    buf, buf2 = np.zeros(1024, np.uint8), np.zeros(1024, np.uint8)
    with pytest.raises(GeneralProtection):
        api.run("api", 1, row, col, memory={"buf": buf, "buf2": buf2})


def test_colsb_not_multiple_of_4_is_invalid_opcode(api):
    with pytest.raises(InvalidOpcode):
        api.run("api", 1, 8, 30, memory={"buf": np.zeros(1024, np.uint8), "buf2": np.zeros(1024, np.uint8)})


def test_spec_path_backend_gives_the_same_bytes(api):
    rng = np.random.default_rng(9)
    buf, buf2 = rand_bytes(rng, 1024), rand_bytes(rng, 1024)
    m1 = {"buf": buf.copy(), "buf2": buf2.copy()}
    m2 = {"buf": buf.copy(), "buf2": buf2.copy()}
    api.run("api", 0, 16, 64, memory=m1)
    r = api.run("api", 0, 16, 64, memory=m2, path="spec")
    assert r.machine.backend.name == "spec"
    assert np.array_equal(m1["buf"], m2["buf"])


def test_machine_program_shape(api):
    text = api.emit("machine")
    assert text.count("LDTILECFG") == 1 and text.count("TILERELEASE") == 1
    assert "TDPBSSD tmm2, tmm0, tmm1" in text
    info = api.info["api"]
    # both branches load into the same three tiles: every phi copy was coalesced away
    assert info["copies"] == info["copies_eliminated"] == 7
    assert info["spilled"] == []
    assert sorted(info["shapes"]) == [0, 1, 2]


def test_config_bytes_written_before_ldtilecfg(api):
    r = api.run("api", 1, 8, 32, memory={"buf": np.zeros(1024, np.uint8), "buf2": np.zeros(1024, np.uint8)},
                record=True)
    assert r.trace[0].startswith("LDTILECFG") and r.trace[-1] == "TILERELEASE"
    # after the run the tiles are released: the machine is back in its init state
    assert not r.machine.configured


def test_traced_api_equals_listing(api):
    """The same program traced from Python compiles to the same results."""
    from systolic.compiler import compile_module
    from systolic.compiler.tracing import trace

    def api_traced(cond, row, col, buf, buf2):
        a, b, c = Tile(row, col), Tile(row, col), Tile(row, col)

        def load(src):
            tile_loadd(a, src, 32)
            tile_loadd(b, src, 32)
            tile_loadd(c, src, 32)
        if_(cond != 0, lambda: load(buf), lambda: load(buf2))
        tile_dpbssd(c, a, b)
        tile_stored(buf, 32, c)

    mod = compile_module(trace(api_traced, scalars={"cond": "i32", "row": "i16", "col": "i16"},
                               buffers={"buf": 1024, "buf2": 1024}))
    rng = np.random.default_rng(5)
    for cond in (0, 1):
        buf, buf2 = rand_bytes(rng, 1024), rand_bytes(rng, 1024)
        m1 = {"buf": buf.copy(), "buf2": buf2.copy()}
        m2 = {"buf": buf.copy(), "buf2": buf2.copy()}
        mod.run("api_traced", cond, 16, 64, memory=m1)
        api.run("api", cond, 16, 64, memory=m2)
        assert np.array_equal(m1["buf"], m2["buf"])
