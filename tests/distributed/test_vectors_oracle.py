"""The vectors themselves, without a cluster: results against independent oracles (int64 arithmetic), profiles,
determinism of a shard from its seed pair, and the three file formats read back exactly."""

from __future__ import annotations

import numpy as np
import pytest

from systolic.distributed import formats
from systolic.distributed.campaign import Campaign, make_shard, verify_shard
from systolic.distributed.kinds import Spec, make_kind
from systolic.distributed.profiles import draw_bits
from systolic.errors import InvalidValue, UnsupportedCombination

pytest.importorskip("pyarrow")


def _signed8(b):
    return b.astype(np.int8).astype(np.int64)


def test_tdpbssd_vectors_equal_int64_oracle():
    c = Campaign(Spec("amx:spr", "tdpbssd"), profile="all", count=9, seed=3, shard_size=3)
    for i in range(3):
        r = make_shard(c.args(), i, "cpu")
        cols, meta = formats.decode("parquet", r["data"])
        assert meta["profile"] == ("random", "extremes", "wrap")[i]
        for v in range(cols["index"].shape[0]):
            a = _signed8(cols["a"][v].reshape(16, 64))                        # A: 16 x 64 int8
            bt = _signed8(cols["b"][v].reshape(16, 16, 4))                     # B tile: K dword rows x N x 4 bytes
            b = bt.transpose(0, 2, 1).reshape(64, 16)                          # logical B: 64 x 16 (VNNI undone)
            cc = cols["c"][v].view("<i4").reshape(16, 16).astype(np.int64)
            want = ((cc + a @ b + 2**31) % 2**32 - 2**31).astype("<i4")
            assert np.array_equal(cols["d"][v].view("<i4").reshape(16, 16), want)


def test_xmx_s8_dpas_vectors_equal_int64_oracle():
    c = Campaign(Spec("xmx:dg2", precision="s8", rc=4), profile="extremes", count=4, seed=1, shard_size=4)
    cols, _ = formats.decode("parquet", make_shard(c.args(), 0, "cpu")["data"])
    k, n = 32, 8                                                               # dg2: exec size 8, K = 8 x 4
    for v in range(4):
        a = _signed8(cols["a"][v]).reshape(4, k)                               # Src2: rows of K bytes
        b = _signed8(cols["b"][v]).reshape(k // 4, n, 4).transpose(0, 2, 1).reshape(k, n)
        cc = cols["c"][v].view("<i4").reshape(4, n).astype(np.int64)
        want = ((cc + a @ b + 2**31) % 2**32 - 2**31).astype("<i4")
        assert np.array_equal(cols["d"][v].view("<i4").reshape(4, n), want)


def test_float_results_match_the_spec_backend():
    c = Campaign(Spec("amx:spr", "tdpbf16ps", shape=(2, 4, 3)), profile="all", count=10, seed=5, shard_size=2)
    for i in range(c.shard_count):
        r = make_shard(c.args(), i, "cpu")
        out = verify_shard(c.args(), i, r["data"], "cpu", path="spec")                    # the SDM pseudo-code, exact arithmetic
        assert out["problem"] is None and out["bad_rows"] == 0 and out["checked"] == 2


def test_profiles_reach_their_corners():
    rng = np.random.default_rng(0)
    sp = draw_bits(rng, "bf16", (4000,), "specials")
    exp = (sp >> 7) & 0xFF
    assert ((exp == 0xFF) & ((sp & 0x7F) != 0)).any() and ((exp == 0xFF) & ((sp & 0x7F) == 0)).any()
    assert ((sp & 0x7FFF) == 0).any()
    dn = draw_bits(rng, "fp16", (4000,), "denormals")
    assert (((dn >> 10) & 0x1F) == 0).mean() > 0.3
    fw = draw_bits(rng, "fp32", (4000,), "ftz-window")
    assert (((fw >> 23) & 0xFF) <= 4).all()
    hf8 = draw_bits(rng, "hf8", (4000,), "random")
    assert not ((hf8 & 0x7F) == 0x7F).any()                                  # E4M3fn: no NaN in random
    w = draw_bits(rng, "int32", (1000,), "wrap")
    assert (((w >= 0x7FFFFF00) & (w <= 0x800000FF))).all()


def test_shard_is_a_function_of_its_seed_pair():
    c = Campaign(Spec("xmx:pvc", precision="bf16"), profile="specials", count=6, seed=11, shard_size=3)
    a = make_shard(c.args(), 1, "cpu")
    b = make_shard(c.args(), 1, "cpu")
    assert a["data"] == b["data"] and a["sha256"] == b["sha256"]
    other = make_shard(Campaign(Spec("xmx:pvc", precision="bf16"), profile="specials", count=6, seed=12,
                                shard_size=3).args(), 1, "cpu")
    assert other["data"] != a["data"]


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_formats_round_trip(fmt):
    c = Campaign(Spec("amx:gnr", "tdpfp16ps", shape=(3, 2, 5)), profile="cancellation", count=4, seed=2,
                 shard_size=4, format=fmt)
    r = make_shard(c.args(), 0, "cpu")
    cols, meta = formats.decode(fmt, r["data"])
    ref, _ = formats.decode("parquet", make_shard({**c.args(), "format": "parquet"}, 0, "cpu")["data"])
    for k in ("index", "a", "b", "c", "d"):
        assert np.array_equal(cols[k], ref[k])
    assert meta["instruction"] == "tdpfp16ps" and meta["seed"] == [2, 0]


def test_text_form_is_the_documented_word_stream():
    c = Campaign(Spec("amx:spr", "tdpbssd", shape=(1, 1, 1)), count=1, seed=0, shard_size=1, format="text")
    text = make_shard(c.args(), 0, "cpu")["data"].decode()
    line = [s for s in text.splitlines() if not s.startswith("#")][0].split(" ")
    cols, _ = formats.decode("parquet", make_shard({**c.args(), "format": "parquet"}, 0, "cpu")["data"])
    assert line[0] == "0"
    for field, k in zip(line[1:], ("c", "a", "b", "d")):
        assert field == f"{int.from_bytes(bytes(cols[k][0]), 'little'):08X}"


def test_cancellation_cancels():
    c = Campaign(Spec("amx:spr", "tdpbf16ps"), profile="cancellation", count=3, seed=0, shard_size=3)
    cols, _ = formats.decode("parquet", make_shard(c.args(), 0, "cpu")["data"])
    cv, dv = cols["c"].view("<f4"), cols["d"].view("<f4")
    fin = np.isfinite(cv) & (cv != 0)
    assert (np.abs(dv[fin]) <= np.abs(cv[fin]) * 2.0**-20).mean() > 0.9    # D = C + A.B cancels to a few ulps


def test_bad_arguments_are_typed():
    with pytest.raises(InvalidValue):
        make_kind(Spec("amx:nosuchcpu", "tdpbssd"))
    with pytest.raises(InvalidValue):
        make_kind(Spec("tpu:v4", "x"))
    with pytest.raises(UnsupportedCombination):
        Campaign(Spec("amx:spr", "tdpbssd"), profile="denormals").canonical()
    with pytest.raises(Exception) as e:                                        # #UD: SPR has no AMX-FP16
        make_kind(Spec("amx:spr", "tdpfp16ps"))
    assert type(e.value).__name__ == "InvalidOpcode"
    with pytest.raises(UnsupportedCombination):
        make_kind(Spec("amx:spr", "tdpbssd", precision="bf16"))
    with pytest.raises(InvalidValue):
        Campaign(Spec("amx:spr", "tdpbssd"), count=0)
    with pytest.raises(InvalidValue):
        formats.decode("parquet", b"PAR1 not really")
