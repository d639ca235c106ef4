"""Bad arguments to the public entry points of systolic.distributed (review finding: Spec, Campaign, make_shard):
each is an InvalidValue naming the broken rule and the value, raised where the argument is written (Spec,
Campaign), not an unpacking, attribute or key error later on a worker."""

from __future__ import annotations

import numpy as np
import pytest

from systolic.distributed import Campaign, Spec
from systolic.distributed.campaign import make_shard, verify_shard
from systolic.distributed.kinds import make_kind
from systolic.errors import InvalidValue, UnsupportedCombination

pytest.importorskip("pyarrow")

SMALL = Spec("amx:spr", "tdpbssd", shape=(2, 2, 2))


@pytest.mark.parametrize("kw, field, rule", [
    ({"engine": "amx:spr", "instruction": "tdpbssd", "shape": (2, 2)}, "shape", "Spec.shape"),
    ({"engine": "amx:spr", "instruction": "tdpbssd", "shape": "abc"}, "shape", "Spec.shape"),
    ({"engine": "amx:spr", "instruction": "tdpbssd", "shape": (2, 2.5, 2)}, "shape", "Spec.shape"),
    ({"engine": "amx:spr", "instruction": "tdpbssd", "shape": 16}, "shape", "Spec.shape"),
    ({"engine": None}, "engine", "engines: amx:<cpu>"),
    ({"engine": 3}, "engine", "engines: amx:<cpu>"),
    ({"engine": "amx"}, "engine", "engines: amx:<cpu>"),
    ({"engine": "amx:"}, "engine", "engines: amx:<cpu>"),
    ({"engine": "xmx:pvc", "rc": 2.5}, "rc", "Spec.rc"),            # was silently truncated to 2
    ({"engine": "xmx:pvc", "rc": "8"}, "rc", "Spec.rc"),
    ({"engine": "xmx:pvc", "rc": True}, "rc", "Spec.rc"),
    ({"engine": "xmx:pvc", "precision": 3}, "precision", "Spec.precision"),
    ({"engine": "amx:spr", "instruction": b"tdpbssd"}, "instruction", "Spec.instruction"),
])
def test_spec_form_is_checked_at_construction(kw, field, rule):
    with pytest.raises(InvalidValue) as e:
        Spec(**kw)
    assert field in e.value.values and e.value.values[field] is kw[field]
    assert rule in e.value.rule


def test_spec_normalises_shape_and_rc():
    s = Spec("amx:spr", "tdpbssd", shape=[2, np.int64(3), 4])
    assert s.shape == (2, 3, 4) and type(s.shape[1]) is int
    assert hash(s) == hash(Spec("amx:spr", "tdpbssd", shape=(2, 3, 4)))     # usable as a cache key
    assert Spec("xmx:pvc", rc=np.int8(4)).rc == 4


def test_unknown_family_suggests():
    with pytest.raises(InvalidValue) as e:
        Spec("amy:spr", "tdpbssd")
    assert "did you mean 'amx'" in str(e.value)


def test_unknown_instruction_suggests():
    with pytest.raises(InvalidValue) as e:
        make_kind(Spec("amx:spr", "tdpbsssd"))
    assert "did you mean 'tdpbssd'" in str(e.value)


def test_campaign_checks_its_kind_and_profile_at_construction():
    with pytest.raises(InvalidValue) as e:
        Campaign(Spec("amx:spr", "tdpbssd", shape=(2, 20, 2)))               # K dwords out of 1..16
    assert e.value.values == {"M": 2, "K": 20, "N": 2}
    with pytest.raises(InvalidValue) as e:
        Campaign("amx:spr")
    assert e.value.values == {"spec": "amx:spr"}
    with pytest.raises(InvalidValue) as e:
        Campaign(SMALL, profile="wrapp")
    assert "did you mean 'wrap'" in str(e.value)
    with pytest.raises(InvalidValue) as e:
        Campaign(SMALL, profile=None)
    assert e.value.values == {"profile": None}
    with pytest.raises(UnsupportedCombination):
        Campaign(SMALL, profile="denormals")                                  # a float profile, integer TMUL
    with pytest.raises(InvalidValue) as e:
        Campaign(SMALL, format="parket")
    assert "did you mean 'parquet'" in str(e.value)
    with pytest.raises(InvalidValue) as e:
        Campaign(SMALL, count=10**12, shard_size=1)                           # 10^12 shards: refused, not a hang
    assert "shards" in e.value.rule
    with pytest.raises(InvalidValue) as e:
        Campaign(SMALL, shard_size=1 << 30)
    assert e.value.values == {"shard_size": 1 << 30}
    c = Campaign(SMALL, count=np.int64(4), seed=np.uint32(3), shard_size=2)
    assert type(c.count) is int and type(c.seed) is int                      # the manifest's JSON takes them


@pytest.mark.parametrize("i", [2, -1, 10**20, 1.0, "0", None, True])
def test_make_shard_out_of_range(i):
    c = Campaign(SMALL, count=4, shard_size=2)
    with pytest.raises(InvalidValue) as e:
        make_shard(c.args(), i, "cpu")
    assert e.value.values == {"shard": i, "shard_count": 2} and "0..1" in e.value.rule


@pytest.mark.parametrize("backend", ["gpu", None, 0, "CPU"])
def test_unknown_backend(backend):
    c = Campaign(SMALL, count=4, shard_size=2)
    with pytest.raises(InvalidValue) as e:
        make_shard(c.args(), 0, backend)
    assert e.value.values == {"backend": backend} and "cpu, spec, native, cuda" in e.value.rule
    data = make_shard(c.args(), 0, "cpu")["data"]
    with pytest.raises(InvalidValue):
        verify_shard(c.args(), 0, data, backend)
    with pytest.raises(InvalidValue):
        make_kind(SMALL).compute({k: np.zeros((1, 16), np.uint8) for k in "abc"}, backend)
    if backend == "gpu":
        assert "did you mean 'cpu'" in str(e.value)


@pytest.mark.parametrize("args", [None, {}, {"spec": {"engine": "amx:spr"}}, "x"])
def test_make_shard_bad_args(args):
    with pytest.raises(InvalidValue) as e:
        make_shard(args, 0, "cpu")
    assert "campaign args" in e.value.rule


def test_spec_dict_with_unknown_field():
    args = Campaign(SMALL, count=4, shard_size=2).args()
    args["spec"]["shap"] = [2, 2, 2]
    with pytest.raises(InvalidValue) as e:
        make_shard(args, 0, "cpu")
    assert "did you mean 'shape'" in str(e.value)
