"""Every AMX TMUL and every DPAS precision family as a campaign kind: vectors drawn with the specials profile,
results from the fast path, recomputed by the spec path (the SDM / vISA pseudo-code in exact arithmetic)."""

from __future__ import annotations

import pytest

from systolic.distributed.campaign import Campaign, make_shard, verify_shard
from systolic.distributed.kinds import Spec

AMX = [("spr", "tdpbssd"), ("spr", "tdpbsud"), ("spr", "tdpbusd"), ("spr", "tdpbuud"), ("spr", "tdpbf16ps"),
       ("gnr", "tdpfp16ps"), ("gnr-d", "tcmmimfp16ps"), ("gnr-d", "tcmmrlfp16ps"), ("dmr", "tdpbf8ps"),
       ("dmr", "tdpbhf8ps"), ("dmr", "tdphbf8ps"), ("dmr", "tdphf8ps")]
XMX = [("pvc", "bf16", None, 8), ("pvc", "fp16", "fp16", 2), ("pvc", "tf32", None, 1), ("pvc", "bf16", "bf16", 3),
       ("pvc", "s8", None, 8), ("pvc", "u8xs4", None, 2), ("pvc", "s2xu2", None, 1), ("dg2", "u4", "u32", 4),
       ("xe3p", "bf8xhf8", None, 2), ("xe3p", "e2m1", "bf16", 1), ("bmg", "fp16", None, 8)]


@pytest.mark.parametrize("cpu,mn", AMX, ids=[m for _, m in AMX])
def test_amx_kind_fast_equals_spec(cpu, mn):
    is_int = mn.startswith("tdpb") and mn.endswith("d")
    c = Campaign(Spec(f"amx:{cpu}", mn, shape=(2, 2, 2)), profile="extremes" if is_int else "specials", count=3,
                 seed=9, shard_size=3)
    r = make_shard(c.args(), 0, "cpu")
    out = verify_shard(c.args(), 0, r["data"], "cpu", path="spec")
    assert out["problem"] is None and out["checked"] == 3 and out["bad_rows"] == 0, out


@pytest.mark.parametrize("plat,prec,dst,rc", XMX, ids=[f"{p}-{q}-{d}-rc{r}" for p, q, d, r in XMX])
def test_xmx_kind_fast_equals_spec(plat, prec, dst, rc):
    is_int = prec[0] in "su"
    c = Campaign(Spec(f"xmx:{plat}", precision=prec, dst_type=dst, rc=rc), profile="extremes" if is_int else "specials",
                 count=2, seed=4, shard_size=2)
    r = make_shard(c.args(), 0, "cpu")
    out = verify_shard(c.args(), 0, r["data"], "cpu", path="spec")
    assert out["problem"] is None and out["checked"] == 2 and out["bad_rows"] == 0, out
