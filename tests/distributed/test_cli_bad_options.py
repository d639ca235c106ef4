"""`systolic vectors generate|verify` and `systolic study` on bad options: a usage error (exit status 2) or one
`error:` line naming the broken rule (exit status 1), before any cluster starts (review finding: an --out under a
file, a corrupt manifest.json, --shards 0 were found only after a cluster had started, some as bare exceptions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from systolic.cli import main

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "distributed" / "study_mlp.py"
GEN = ["vectors", "generate", "--engine", "amx:spr", "--instruction", "tdpbssd", "--shape", "2,2,2", "--count", "4",
       "--shard-size", "2", "--quiet"]


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch):
    """Every case here must be refused before a cluster is opened."""
    def boom(*a, **kw):
        raise AssertionError("a cluster was opened before the options were checked")
    monkeypatch.setattr("systolic.distributed.cluster.open_client", boom)


def run(capsys, argv):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    return e.value.code, err


def one_error(capsys, argv, *words):
    code, err = run(capsys, argv)
    assert code == 1 and len(err) == 1 and err[0].startswith("error: "), (code, err)
    for w in words:
        assert w in err[0], (w, err[0])
    return err[0]


@pytest.mark.parametrize("opts, words", [
    (["--count", "0"], ["count must be an integer >= 1", "count=0"]),
    (["--count", "-5"], ["count=-5"]),
    (["--shard-size", "0"], ["shard_size must be an integer >= 1", "shard_size=0"]),
    (["--shard-size", str(1 << 21)], ["shard_size: an integer >= 1 and <= 1048576"]),
    (["--count", str(10**9), "--shard-size", "1"], ["shards (the client holds the shard list)"]),
    (["--seed", "-1"], ["seed must be an integer >= 0", "seed=-1"]),
    (["--profile", "wrapp"], ["unknown profile 'wrapp'", "did you mean 'wrap'"]),
    (["--engine", "amx"], ["unknown engine 'amx'", "rule: engines"]),
])
def test_generate_option_rules(capsys, tmp_path, opts, words):
    one_error(capsys, GEN + ["--out", tmp_path / "c"] + opts, *words)          # a repeated option: the last wins


@pytest.mark.parametrize("opts", [["--count", "many"], ["--format", "xml"], ["--shape", "1,2"],
                                  ["--backend", "gpu"]])
def test_generate_usage_errors(capsys, tmp_path, opts):
    code, err = run(capsys, GEN + ["--out", tmp_path / "c"] + opts)
    assert code == 2 and any("Invalid value" in line or "Error" in line for line in err), err


def test_backend_spec_beside_path_fast_is_a_usage_error(capsys, tmp_path):
    """--backend spec is the older spelling of --backend cpu --path spec: an explicit --path fast beside it was
    silently overridden (the spec path ran); now a usage error naming both."""
    for argv in (GEN + ["--out", tmp_path / "c"], ["vectors", "verify", tmp_path, "--quiet"]):
        code, err = run(capsys, argv + ["--backend", "spec", "--path", "fast"])
        assert code == 2 and any("--backend spec is the older spelling of --backend cpu --path spec, not the "
                                 "--path fast also given" in line for line in err), err


def test_generate_out_is_a_file(capsys, tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    code, err = run(capsys, GEN + ["--out", f])
    assert code == 2 and any("is a file" in line for line in err), err
    one_error(capsys, GEN + ["--out", f / "sub"], "cannot make the campaign directory",
              "rule: --out: a directory that exists or can be created")


def test_generate_into_a_corrupt_or_foreign_campaign(capsys, tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    (d / "manifest.json").write_text("{not json")
    one_error(capsys, GEN + ["--out", d], "does not parse", "rule: manifest.json is JSON")
    (d / "manifest.json").write_text(json.dumps({"format": "systolic-vectors", "args": {"x": 1}}))
    one_error(capsys, GEN + ["--out", d], "holds another campaign")


def _manifest(d: Path, **change):
    """A complete manifest of the GEN campaign, written by hand, with ``change`` applied."""
    from systolic.distributed import Campaign, Spec
    c = Campaign(Spec("amx:spr", "tdpbssd", shape=(2, 2, 2)), "random", 4, 0, 2, "parquet").canonical()
    man = {"format": "systolic-vectors", "format_version": 1, "args": c.args(), "complete": True,
           "shards": [{**c.shard(i), "sha256": "0" * 64} for i in range(c.shard_count)], **change}
    d.mkdir(exist_ok=True)
    (d / "manifest.json").write_text(json.dumps(man))
    return man


@pytest.mark.parametrize("content, words", [
    ("{not json", ["does not parse"]),
    (b"\xff\xfe", ["does not parse"]),
    ("[]", ["is not a systolic vector manifest"]),
    ('{"format": "systolic-vectors"}', ["records no usable campaign", "campaign arguments lack"]),
])
def test_verify_a_corrupt_manifest(capsys, tmp_path, content, words):
    (tmp_path / "manifest.json").write_bytes(content if isinstance(content, bytes) else content.encode())
    one_error(capsys, ["vectors", "verify", tmp_path, "--quiet"], *words)


def test_verify_malformed_manifest_fields(capsys, tmp_path):
    man = _manifest(tmp_path / "a")
    man["shards"][1]["sha256"] = 5
    (tmp_path / "a" / "manifest.json").write_text(json.dumps(man))
    one_error(capsys, ["vectors", "verify", tmp_path / "a"], "shard entry 1 is malformed", "sha256 is 64")
    man = _manifest(tmp_path / "b")
    man["args"]["spec"]["shape"] = "2,2,2"
    (tmp_path / "b" / "manifest.json").write_text(json.dumps(man))
    one_error(capsys, ["vectors", "verify", tmp_path / "b"], "records no usable campaign", "Spec.shape")
    man = _manifest(tmp_path / "c")
    man["args"]["count"] = "4"
    (tmp_path / "c" / "manifest.json").write_text(json.dumps(man))
    one_error(capsys, ["vectors", "verify", tmp_path / "c"], "count must be an integer")
    one_error(capsys, ["vectors", "verify", tmp_path], "has no manifest.json")
    code, _ = run(capsys, ["vectors", "verify", tmp_path / "nope"])
    assert code == 2


@pytest.mark.parametrize("opts, words", [
    (["--shards", "0"], ["--shards must be a positive integer", "shards=0"]),
    (["--shards", "65"], ["more than the 64 samples", "rule: --shards <= samples"]),
    (["--k", "0"], ["--k must be a positive integer", "k=0"]),
    (["--engines", "tpu:v4"], ["bad engine 'tpu:v4'"]),
    (["--engines", "amx:sprx"], ["unknown CPU model 'sprx'", "did you mean 'spr'"]),
])
def test_study_option_rules(capsys, opts, words):
    argv = ["study", SCRIPT, "--engines", "amx:spr", "--quiet"] + opts
    one_error(capsys, argv, *words)


def test_study_script_and_out(capsys, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def model(:\n")
    one_error(capsys, ["study", bad, "--engines", "amx:spr"], "the study script does not run", "SyntaxError")
    nodata = tmp_path / "nodata.py"
    nodata.write_text("def model():\n    return None\n")
    one_error(capsys, ["study", nodata, "--engines", "amx:spr"], "defines no data()")
    f = tmp_path / "f"
    f.write_text("x")
    one_error(capsys, ["study", SCRIPT, "--engines", "amx:spr", "--out", f / "sub"],
              "cannot make the report directory")
    code, err = run(capsys, ["study", SCRIPT, "--engines", "amx:spr", "--out", f])
    assert code == 2 and any("is a file" in line for line in err), err
