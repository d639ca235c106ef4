"""systolic study: compare per (engine, data slice) on a cluster, merged, against one compare over all samples
in this process. The merge tests (several engines and slices) use an in-process LocalCluster (one worker thread):
worker processes would each import torch and warm up every engine first (several seconds of CPU per worker and
engine on a small CI machine). test_study_on_worker_processes runs the default path, worker processes (the
2-process cluster of conftest.py), with one cheap engine and one slice."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from systolic.cli import cli                                             # noqa: E402
from systolic.distributed.study import parse_engines, run_study          # noqa: E402
from systolic.errors import InvalidValue                                 # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "distributed" / "study_mlp.py"


def _load():
    ns: dict = {}
    exec(compile(SCRIPT.read_text(), str(SCRIPT), "exec"), ns)
    return ns


def close(a, b, rel=1e-6):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-300)


def test_parse_engines():
    assert parse_engines("amx:spr, xmx:pvc:bf16:block(8,24),xmx:dg2:int8") == [
        ("amx:spr", {}), ("xmx:pvc", {"precision": "bf16", "model": "block(8,24)"}), ("xmx:dg2", {"precision": "int8"})]
    with pytest.raises(InvalidValue):
        parse_engines("tpu:v4")


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0",
                      silence_logs=40) as lc, Client(lc) as cl:
        yield cl


def test_merged_study_equals_one_compare(client):
    from systolic.torch import compare
    # float engines only: int8's activation scale is per tensor, so a slice gets its own (docs/distributed.md)
    engines = "amx:spr,xmx:pvc:bf16:stage"
    shards = 3
    merged = run_study(client, SCRIPT, engines, shards=shards, k=2)
    ns = _load()
    x, y = ns["data"]()
    whole = compare(ns["model"](), x, engines=parse_engines(engines), k=2, targets=y)
    assert [r.engine for r in merged.runs] == [r.engine for r in whole.runs]
    assert close(merged.reference_accuracy, whole.reference_accuracy)
    for m, w in zip(merged.runs, whole.runs):
        assert close(m.top1, w.top1) and close(m.topk, w.topk) and close(m.accuracy, w.accuracy)
        assert m.gemms == shards * w.gemms                                 # GEMMs counted per slice
        assert [s.layer for s in m.layers] == [s.layer for s in w.layers]
        for ms, ws in zip(m.layers, w.layers):
            # float64 / fp32 torch may block a slice's GEMM differently from the whole batch's: rounding-level
            assert close(ms.max_ulp, ws.max_ulp, 1e-3) and close(ms.mean_ulp, ws.mean_ulp, 1e-3), (m.engine, ms, ws)
            assert close(ms.max_rel, ws.max_rel, 1e-3) and close(ms.mean_rel, ws.mean_rel, 1e-3), (m.engine, ms, ws)


def test_study_cli_writes_report(client, tmp_path):
    r = CliRunner().invoke(cli, ["study", str(SCRIPT), "--engines", "xmx:dg2:fp16", "--shards", "2", "--no-fp32",
                                 "--scheduler", client.scheduler.address, "--quiet", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "xmx:dg2 fp16" in r.output
    assert (tmp_path / "report.json").exists() and (tmp_path / "report.txt").exists()


def test_study_on_worker_processes(cluster):
    """The multi-process path ``systolic study`` takes by default: the script travels as source, each worker
    process imports torch and builds the model itself, the report comes back pickled. One cheap engine (XMX fp16
    on dg2) and one slice: one worker process imports torch (about 5 s of CPU); the merge over slices is the
    in-process tests' (above)."""
    import os

    from distributed import Client
    from systolic.torch import compare
    with Client(cluster) as cl:
        cl.wait_for_workers(2, timeout=60)
        merged = run_study(cl, SCRIPT, "xmx:dg2:fp16", shards=1, k=2)
        ran = cl.run(lambda: ("torch" in __import__("sys").modules, os.getpid()))
    assert len(ran) == 2 and all(pid != os.getpid() for _, pid in ran.values())
    assert any(has_torch for has_torch, _ in ran.values())      # the task ran (and imported torch) out there
    ns = _load()
    x, y = ns["data"]()
    whole = compare(ns["model"](), x, engines=parse_engines("xmx:dg2:fp16"), k=2, targets=y)
    assert [r.engine for r in merged.runs] == [r.engine for r in whole.runs]
    for m, w in zip(merged.runs, whole.runs):
        assert close(m.top1, w.top1) and close(m.accuracy, w.accuracy)
        for ms, ws in zip(m.layers, w.layers):
            assert close(ms.max_rel, ws.max_rel, 1e-3) and close(ms.mean_ulp, ws.mean_ulp, 1e-3), (m.engine, ms, ws)
