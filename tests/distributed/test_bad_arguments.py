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
    assert e.value.values == {"backend": backend} and "cpu, native, cuda" in e.value.rule
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


# ---- what tests/fuzz/test_fuzz_distributed.py found, pinned --------------------------------------------------
def test_decode_of_a_non_bytes_value():
    from systolic.distributed import formats
    with pytest.raises(InvalidValue) as e:
        formats.decode("parquet", 0)
    assert e.value.values == {"data": "int"}


@pytest.mark.parametrize("text", [None, 3, ["amx:spr"]])
def test_parse_engines_of_a_non_string(text):
    from systolic.distributed.study import parse_engines
    with pytest.raises(InvalidValue) as e:
        parse_engines(text)
    assert e.value.values == {"engines": text}


@pytest.mark.parametrize("kw", [{"workers": True}, {"gpu": 0}, {"gpu": "yes"}, {"scheduler": 3}])
def test_open_client_refuses_before_starting_a_cluster(kw):
    from systolic.distributed import open_client
    with pytest.raises(InvalidValue):
        with open_client(**{"workers": 1, **kw}):
            raise AssertionError("a cluster started on bad arguments")


@pytest.mark.parametrize("kw", [{"campaign": "amx:spr"}, {"out": None}, {"out": b"x"}, {"window": 0},
                                {"window": 1.5}, {"backend": "gpu"}])
def test_generate_refuses_before_using_the_client(kw, tmp_path):
    from systolic.distributed import generate
    a = {"campaign": Campaign(SMALL, count=4, shard_size=2), "out": tmp_path / "c", "backend": "cpu", "window": None,
         **kw}
    with pytest.raises(InvalidValue):
        generate(None, a.pop("campaign"), a.pop("out"), **a)


def test_generate_under_a_file_is_a_campaign_error(tmp_path):
    from systolic.distributed import generate
    from systolic.errors import CampaignError
    (tmp_path / "f").write_text("x")
    with pytest.raises(CampaignError) as e:
        generate(None, Campaign(SMALL, count=4, shard_size=2), tmp_path / "f" / "sub")
    assert e.value.values == {"dir": str(tmp_path / "f" / "sub")}


def _manifest(tmp_path, mutate):
    import json
    c = Campaign(SMALL, count=4, shard_size=2).canonical()              # as generate records it
    man = {"format": "systolic-vectors", "format_version": 1, "args": c.args(), "complete": True,
           "shards": [{**c.shard(i), "sha256": "0" * 64} for i in range(c.shard_count)]}
    mutate(man)
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    return c


@pytest.mark.parametrize("mutate, where", [
    (lambda m: m["shards"][1].update(index="x"), "shard entry 1"),
    (lambda m: m["shards"][0].pop("sha256"), "shard entry 0"),
    (lambda m: m.update(shards=None), "shards is not a list"),
    (lambda m: m.update(args=None), "records no usable campaign"),
    (lambda m: m["args"]["spec"].update(shape="2,2,2"), "records no usable campaign"),
])
def test_verify_and_resume_refuse_a_malformed_manifest(tmp_path, mutate, where):
    from systolic.distributed import generate, verify
    from systolic.errors import CampaignError
    c = _manifest(tmp_path, mutate)
    with pytest.raises(CampaignError) as e:
        verify(None, tmp_path)
    assert where in str(e.value)
    if "shard" in where:                    # resume reads the same shard list (before any client is used)
        with pytest.raises(CampaignError) as e:
            generate(None, c, tmp_path)
        assert where in str(e.value)


def test_journal_keeps_only_whole_entries(tmp_path):
    from systolic.distributed import store
    good = {"index": 1, "file": "shard-000001.parquet", "count": 2, "sha256": "a" * 64}
    import json
    lines = ['{"index": 0}', '{"index": "2", "file": "f", "count": 2, "sha256": "%s"}' % ("a" * 64), "[1]", "null",
             json.dumps(good), '{"index": 3, "file": "f", "count": 2, "sha256": null}']
    (tmp_path / store.JOURNAL).write_text("\n".join(lines) + "\n")
    assert store.read_journal(tmp_path) == {1: good}


def test_study_script_that_does_not_run(tmp_path):
    pytest.importorskip("torch")
    from systolic.distributed.study import run_study
    s = tmp_path / "s.py"
    s.write_text("def model(:\n")
    with pytest.raises(InvalidValue) as e:
        run_study(None, s, "amx:spr")
    assert "SyntaxError" in str(e.value) and e.value.values == {"script": str(s)}


@pytest.mark.parametrize("kw, field", [
    ({"shards": 65}, "samples"), ({"k": 0}, "k"), ({"include_fp32": 1}, "include_fp32"),
    ({"engines": "amx:spr:bf17"}, None), ({"engines": [("amx:spr", 5)]}, "entry"), ({"script": None}, "script")])
def test_run_study_checks_before_sending(kw, field):
    pytest.importorskip("torch")
    from pathlib import Path

    from systolic.distributed.study import run_study
    from systolic.errors import SystolicError
    a = {"script": Path(__file__).resolve().parents[2] / "examples" / "distributed" / "study_mlp.py",
         "engines": "amx:spr", **kw}
    with pytest.raises(SystolicError) as e:                     # the example has 64 samples
        run_study(None, a.pop("script"), a.pop("engines"), **a)
    if field:
        assert field in e.value.values


@pytest.mark.parametrize("rc", [-3, 0, 9, 2**40])
def test_xmx_repeat_count_out_of_range(rc):
    from systolic.errors import IllegalInstruction
    with pytest.raises(IllegalInstruction) as e:                  # -3 was a numpy "negative dimensions" ValueError
        make_kind(Spec("xmx:pvc", precision="bf16", rc=rc))
    assert e.value.values == {"rc": rc} and "1..8" in e.value.rule


@pytest.mark.parametrize("field", ["instruction", "precision", "model", "dst_type"])
def test_empty_names_are_not_the_default(field):
    engine = "amx:spr" if field == "instruction" else "xmx:pvc"
    with pytest.raises(InvalidValue) as e:                        # "" silently meant the default before
        Spec(engine, **{field: ""})
    assert e.value.values == {field: ""}


def test_a_directory_where_a_shard_file_belongs(tmp_path):
    from systolic.distributed import generate, verify
    from systolic.errors import CampaignError
    c = _manifest(tmp_path, lambda m: None)
    (tmp_path / c.shard(1)["file"]).mkdir()
    (tmp_path / ".tmp-x").mkdir()                               # not a temporary of ours: left alone
    res = verify(None, tmp_path)                                # was: submitted, then IsADirectoryError
    assert {(b["index"], b["reason"]) for b in res.bad_shards} == {(0, "missing"), (1, "not a file")}
    with pytest.raises(CampaignError) as e:                     # was: IsADirectoryError hashing it
        generate(None, c, tmp_path)
    assert e.value.values == {"path": str(tmp_path / c.shard(1)["file"])}
    assert (tmp_path / ".tmp-x").is_dir()
