"""Fuzz: the public entry points of systolic.distributed (Spec, make_kind, Campaign and its shards, the worker
tasks make_shard / verify_shard, the shard file formats, the manifest and journal of a campaign directory,
generate / verify / open_client / run_study on bad arguments, the study's --engines parser) with hostile values.

No cluster is started: generate, verify, open_client and run_study get arguments of which at least one is bad,
and must refuse them (typed) before they reach a client; verify reads a directory whose shard files are absent,
so it never submits work. Oracles: a campaign that is accepted has plain ints in its manifest arguments and its
arguments rebuild the same campaign; a shard verified against its own untouched bytes has no bad row and no
problem; a shard whose bytes were changed is never reported clean; a journal line that is not a whole entry is
dropped, never trusted.
"""

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from systolic.distributed import Campaign, Spec, formats, store
from systolic.distributed.campaign import generate, make_shard, verify, verify_shard
from systolic.distributed.cluster import open_client
from systolic.distributed.kinds import make_kind
from systolic.distributed.study import parse_engines, run_study

from .harness import examples, hostile, maybe, ok, outcome

pytest.importorskip("pyarrow")

ENGINES = ["amx:spr", "amx:gnr", "amx:dmr", "xmx:pvc", "xmx:dg2", "amx:sprx", "xmx", "amy:spr", "amx:", ":pvc"]
INSTRUCTIONS = [None, "tdpbssd", "tdpbf16ps", "tdpfp16ps", "tdphf8ps", "dpas", "tdpbsssd", ""]
PRECISIONS = [None, "bf16", "fp16", "s8", "s8xu4", "u4", "tf32", "x", "bf17", "s8x"]
SMALL_SHAPES = st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3))
PROFILES = ["random", "specials", "denormals", "ftz-window", "cancellation", "extremes", "wrap", "all", "wrapp"]


def specs():
    """Spec keyword sets: mostly meaningful (so calls get deep), sometimes hostile in any field."""
    return st.fixed_dictionaries({
        "engine": maybe(st.sampled_from(ENGINES), 6),
        "instruction": maybe(st.sampled_from(INSTRUCTIONS), 6),
        "precision": maybe(st.sampled_from(PRECISIONS), 6),
        "model": maybe(st.sampled_from([None, "stage", "exact", "block(8,24)", "nope"]), 6),
        "dst_type": maybe(st.sampled_from([None, "fp32", "int32", "bf16", "f", "zz"]), 6),
        "rc": maybe(st.sampled_from([None, 1, 2, 8, 9, 0]), 6),
        "shape": maybe(st.one_of(st.none(), SMALL_SHAPES, st.lists(st.integers(0, 17), max_size=4)), 6),
    })


def _kind_of(kw):
    """A Spec and its kind from keywords: the kind or the typed refusal."""
    r = outcome(Spec, **kw)
    if not ok(r):
        return r
    return outcome(make_kind, r[1])


@examples(80)
@given(specs())
def test_spec_and_kind(kw):
    r = _kind_of(kw)
    if ok(r):
        kind = r[1]
        d = kind.describe()
        assert d["bytes"] == kind.image_bytes() and all(n > 0 for n in d["bytes"].values())
        assert make_kind(kind.spec).spec == kind.spec                         # canonical spelling is a fixed point


@examples(60)
@given(specs(), maybe(st.sampled_from(PROFILES), 5), maybe(st.integers(1, 9), 5), maybe(st.integers(0, 2**70), 5),
       maybe(st.integers(1, 4), 5), maybe(st.sampled_from(["parquet", "npz", "text"]), 5),
       maybe(st.integers(-1, 4)))
def test_campaign_and_its_shards(kw, profile, count, seed, shard_size, fmt, i):
    s = outcome(Spec, **kw)
    if not ok(s):
        return
    r = outcome(Campaign, s[1], profile, count, seed, shard_size, fmt)
    if not ok(r):
        return
    c = r[1]
    args = c.args()
    assert all(type(args[k]) is int for k in ("count", "seed", "shard_size"))
    assert json.loads(json.dumps(args)) == args
    assert Campaign.from_args(args) == Campaign(make_kind(c.spec).spec, c.profile, c.count, c.seed, c.shard_size,
                                                c.format)
    p = outcome(c.shard, i)
    if ok(p):
        assert 0 <= i < c.shard_count and 1 <= p[1]["count"] <= c.shard_size


# ---- worker tasks ---------------------------------------------------------------------------------------------
_SMALL = [Campaign(Spec("amx:spr", "tdpbssd", shape=(2, 2, 2)), "all", 5, 7, 2, "parquet"),
          Campaign(Spec("amx:gnr", "tdpbf16ps", shape=(1, 2, 3)), "specials", 3, 1, 3, "npz"),
          Campaign(Spec("xmx:dg2", precision="s8xu4", rc=1), "extremes", 2, 0, 1, "text"),
          Campaign(Spec("xmx:pvc", precision="bf16", rc=1), "all", 4, 3, 2, "parquet")]


def _mutate_args(args, data):
    """The campaign arguments with one field (of args or of its spec) replaced by a hostile value, or dropped."""
    args = json.loads(json.dumps(args))
    where = data.draw(st.sampled_from(["args", "spec"]))
    d = args if where == "args" else args["spec"]
    key = data.draw(st.sampled_from(sorted(d) + ["extra"]))
    if data.draw(st.booleans()):
        d[key] = data.draw(hostile())
    else:
        d.pop(key, None)
    return args


@examples(40)
@given(st.sampled_from(_SMALL), st.data())
def test_make_shard(c, data):
    args = c.args() if data.draw(st.booleans()) else _mutate_args(c.args(), data)
    i = data.draw(maybe(st.integers(0, c.shard_count)))
    backend = data.draw(maybe(st.sampled_from(["cpu", "native", "cuda", "gpu"]), 5))
    path = data.draw(maybe(st.sampled_from(["fast", "spec"]), 5))
    if isinstance(backend, str) and backend in ("native", "cuda"):
        return                               # a real backend of a machine this suite may not run on
    # (a hostile backend may be an ndarray: `in` on a tuple would compare it element-wise)
    r = outcome(make_shard, args, i, backend, path)
    if ok(r):
        assert r[1]["count"] == Campaign.from_args(args).shard(i)["count"]


@examples(40, 0.5)
@given(st.sampled_from(_SMALL), st.data())
def test_verify_shard(c, data):
    i = data.draw(st.integers(0, c.shard_count - 1))
    good = make_shard(c.args(), i, "cpu")["data"]
    how = data.draw(st.sampled_from(["same", "flip", "truncate", "junk", "hostile", "other-shard"]))
    if how == "same":
        blob = good
    elif how == "flip":
        pos = data.draw(st.integers(0, len(good) - 1))
        blob = good[:pos] + bytes([good[pos] ^ data.draw(st.integers(1, 255))]) + good[pos + 1:]
    elif how == "truncate":
        blob = good[:data.draw(st.integers(0, len(good) - 1))]
    elif how == "junk":
        blob = data.draw(st.binary(max_size=64))
    elif how == "other-shard":
        blob = make_shard(c.args(), (i + 1) % c.shard_count, "cpu")["data"]
    else:
        blob = data.draw(hostile())
    max_rows = data.draw(maybe(st.integers(0, 5)))
    r = outcome(verify_shard, c.args(), i, blob, data.draw(maybe(st.just("cpu"), 5)), max_rows,
                data.draw(maybe(st.sampled_from(["fast", "spec"]), 5)))
    if ok(r):
        v = r[1]
        if how == "same":
            assert v["problem"] is None and v["bad_rows"] == 0 and v["checked"] == c.shard(i)["count"]
        elif blob != good and not (how == "other-shard" and c.shard_count == 1):
            assert v["problem"] is not None or v["bad_rows"] > 0 or _same_content(c, blob, good), how


def _same_content(c, blob, good):
    """A changed byte that does not change the decoded columns (a zip/parquet field the reader ignores)."""
    a, _ = formats.decode(c.format, blob)
    b, _ = formats.decode(c.format, good)
    return all(np.array_equal(a[k], b[k]) for k in b)


@examples(40, 2)
@given(maybe(st.sampled_from(["parquet", "npz", "text"]), 6), st.one_of(st.binary(max_size=80), hostile()))
def test_decode(fmt, blob):
    outcome(formats.decode, fmt, blob)


# ---- a campaign directory ------------------------------------------------------------------------------------
def _json_hostile():
    return st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=4),
                     st.lists(st.integers(-2, 3), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(),
                                                                             max_size=2))


@examples(40)
@given(st.sampled_from(_SMALL), st.data())
def test_verify_reads_a_hostile_manifest(tmp_path_factory, c, data):
    out = tmp_path_factory.mktemp("campaign")
    shards = [{**c.shard(i), "sha256": "0" * 64} for i in range(c.shard_count)]
    man = {"format": "systolic-vectors", "format_version": 1, "args": c.args(), "complete": True,
           "shard_count": c.shard_count, "vector_count": c.count, "shards": shards}
    how = data.draw(st.sampled_from(["field", "args", "spec", "shard", "shard", "text"]))
    if how == "field":
        man[data.draw(st.sampled_from(sorted(man)))] = data.draw(_json_hostile())
    elif how == "args":
        man["args"][data.draw(st.sampled_from(sorted(man["args"])))] = data.draw(_json_hostile())
    elif how == "spec":
        man["args"]["spec"][data.draw(st.sampled_from(sorted(man["args"]["spec"])))] = data.draw(_json_hostile())
    elif how == "shard" and shards:
        e = shards[data.draw(st.integers(0, len(shards) - 1))]
        e[data.draw(st.sampled_from(["index", "count", "sha256", "file", "first"]))] = data.draw(_json_hostile())
    text = json.dumps(man)
    if how == "text":
        text = text[:data.draw(st.integers(0, len(text)))]
    (out / store.MANIFEST).write_text(text)
    if data.draw(st.booleans()):
        (out / store.JOURNAL).write_text(data.draw(st.sampled_from(['{"index": 0}', '{"index": "x", "sha256": 1}',
                                                                    '[1]', '{"index": 0, "count": 2, "file": 3, '
                                                                    '"sha256": null}', "\x00"])) + "\n")
    # no shard file exists, so verify never submits to the (absent) client
    r = outcome(verify, None, out)
    if ok(r):
        assert not r[1].ok and len(r[1].bad_shards) >= 1


@examples(30)
@given(st.lists(st.one_of(st.text(max_size=30), st.sampled_from([
    '{"index": 1, "file": "shard-000001.parquet", "count": 2, "sha256": "%s"}' % ("a" * 64),
    '{"index": -1, "file": "x", "count": 2, "sha256": "%s"}' % ("a" * 64),
    '{"index": 1, "count": "2", "sha256": 5}', '{"index": 1.5}', "null", "[]", '{"index": [1]}'])), max_size=5))
def test_read_journal(tmp_path_factory, lines):
    out = tmp_path_factory.mktemp("journal")
    (out / store.JOURNAL).write_text("\n".join(lines) + "\n")
    r = outcome(store.read_journal, out)
    assert ok(r)
    for i, e in r[1].items():
        assert type(i) is int and i >= 0 and isinstance(e["sha256"], str) and len(e["sha256"]) == 64
        assert type(e["count"]) is int and e["count"] >= 1 and isinstance(e["file"], str)


# ---- commands on bad arguments: refused before any client is used ---------------------------------------------
_BAD = {"campaign": ["amx:spr", None, {"engine": "amx:spr"}, 3],
        "out": [None, 3, 1.5, b"\x00", ["x"]],
        "backend": ["gpu", None, 3, "CPU", ""],
        "window": [0, -1, 1.5, "4", True]}


def _valid_window(w) -> bool:
    """A window generate/verify accept (campaign._check_window: a positive int or numpy integer, not a bool)."""
    return isinstance(w, (int, np.integer)) and not isinstance(w, (bool, np.bool_)) and w >= 1


@examples(40)
@given(st.sampled_from(sorted(_BAD)), st.data())
def test_generate_refuses_bad_arguments(tmp_path_factory, which, data):
    kw = {"campaign": _SMALL[0], "out": tmp_path_factory.mktemp("gen"), "backend": "cpu", "window": None}
    kw[which] = data.draw(st.one_of(st.sampled_from(_BAD[which]), hostile()))
    if which == "window" and (kw["window"] is None or _valid_window(kw["window"])):
        return
    if which == "out" and isinstance(kw["out"], str):
        return                                                     # a string is a valid directory name
    r = outcome(generate, None, kw.pop("campaign"), kw.pop("out"), **kw)
    assert not ok(r), which


@examples(30)
@given(st.sampled_from(["out", "backend", "window"]), st.data())
def test_verify_refuses_bad_arguments(tmp_path_factory, which, data):
    kw = {"out": tmp_path_factory.mktemp("ver"), "backend": "cpu", "window": None}
    kw[which] = data.draw(st.one_of(st.sampled_from(_BAD[which]), hostile()))
    if which == "window" and (kw["window"] is None or _valid_window(kw["window"])):
        return
    r = outcome(verify, None, kw.pop("out"), **kw)
    assert not ok(r), which                            # a bad argument, or a directory with no manifest


@examples(40)
@given(st.sampled_from(["scheduler", "workers", "gpu"]), st.data())
def test_open_client_refuses_bad_arguments(which, data):
    kw = {"scheduler": None, "workers": 1, "gpu": False}
    kw[which] = data.draw(hostile())
    v = kw[which]
    if which == "workers" and (v is None or (type(v) is int and v >= 1)):
        return                                                     # a valid size would start a cluster
    if which == "scheduler" and (v is None or (isinstance(v, str) and v == "")):
        return
    if which == "gpu" and v is False:
        return

    def enter():
        with open_client(**kw):
            raise AssertionError("a cluster started on bad arguments")
    r = outcome(enter)
    assert not ok(r)


SCRIPT = "examples/distributed/study_mlp.py"


@examples(25, 0.5)
@given(st.sampled_from(["script", "engines", "shards", "k", "include_fp32"]), st.data())
def test_run_study_refuses_bad_arguments(which, data):
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    kw = {"script": root / SCRIPT, "engines": "amx:spr", "shards": 2, "k": 2, "include_fp32": True}
    bad = {"script": [root / "nope.py", root / "examples", None, 3, root / "README.md"],
           "engines": ["", "tpu:v4", "amx", None, 3, [("amx:spr", 5)], "amx:spr:bf17", "xmx:pvc:bf16:nope"],
           "shards": [0, -1, 1.5, "2", True, None, 10**9],
           "k": [0, -1, 1.5, "2", None, True],
           "include_fp32": [None, "yes", 2, 1.5]}[which]
    kw[which] = data.draw(st.one_of(st.sampled_from(bad), hostile()))
    v = kw[which]
    if which == "shards" and type(v) is int and 1 <= v <= 64:
        return
    if which == "k" and type(v) is int and v >= 1:
        return
    if which == "include_fp32" and type(v) is bool:
        return
    r = outcome(run_study, None, kw.pop("script"), kw.pop("engines"), **kw)
    assert not ok(r), which


@examples(60, 2)
@given(maybe(st.text(alphabet="amxpvcdg2:,()bf16int8sr ", max_size=30), 5))
def test_parse_engines(text):
    r = outcome(parse_engines, text)
    if ok(r):
        assert r[1] and all(n.split(":")[0] in ("amx", "xmx") for n, _ in r[1])
