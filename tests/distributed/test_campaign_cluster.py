"""Campaigns on a real 2-worker LocalCluster: the same bytes from 1 and 2 workers, a killed worker, an
interrupted client resumed, a corrupted shard found by verify (exit 1) and by resume."""

from __future__ import annotations

import os
import shutil
import signal

import pytest
from click.testing import CliRunner

from systolic.cli import cli
from systolic.distributed import store
from systolic.distributed.campaign import Campaign, generate, verify
from systolic.distributed.kinds import Spec

from distributed_helpers import same_tree

#: a small CPU-bound campaign: bf16 chains, every float profile, 12 shards
CAMPAIGN = Campaign(Spec("amx:spr", "tdpbf16ps", shape=(4, 8, 4)), profile="all", count=48, seed=2026,
                    shard_size=4)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, cluster):
    """The campaign written by ONE worker (an in-process single-thread cluster): the bytes everyone must match."""
    from distributed import Client, LocalCluster
    out = tmp_path_factory.mktemp("one_worker")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0",
                      silence_logs=40) as lc, Client(lc) as cl:
        res = generate(cl, CAMPAIGN, out)
    assert len(res.computed) == CAMPAIGN.shard_count and not res.skipped
    return out


def test_two_workers_write_the_same_bytes_as_one(reference, client, tmp_path):
    res = generate(client, CAMPAIGN, tmp_path)
    assert len(res.computed) == 12
    assert same_tree(reference, tmp_path) == []            # manifest.json and every shard, byte for byte
    man = store.read_manifest(tmp_path)
    assert man["complete"] and [s["seed"] for s in man["shards"]] == [[2026, i] for i in range(12)]
    assert {s["profile"] for s in man["shards"]} == {"random", "specials", "denormals", "ftz-window", "cancellation"}
    assert all(s["sha256"] == store.sha256_file(tmp_path / s["file"]) for s in man["shards"])
    v = verify(client, tmp_path)
    assert v.ok and v.vectors == 48


def test_killed_worker_is_recomputed_with_identical_output(reference, client, tmp_path):
    pids = client.run(os.getpid)                          # worker address -> process id
    killed = []

    def kill_once(n, total):
        if n and not killed:                               # after the first shard landed: kill a worker holding work
            busy = {a: ks for a, ks in client.processing().items() if ks}
            addr = sorted(busy)[0] if busy else sorted(pids)[0]
            os.kill(pids[addr], signal.SIGKILL)
            killed.append((pids[addr], len(busy.get(addr, ()))))

    res = generate(client, CAMPAIGN, tmp_path, on_progress=kill_once)
    assert len(killed) == 1 and killed[0][1] >= 1        # the victim was computing a shard when it died
    with pytest.raises(ProcessLookupError):
        os.kill(killed[0][0], 0)                           # that worker process is gone
    assert len(res.computed) == 12
    assert same_tree(reference, tmp_path) == []
    client.wait_for_workers(2, timeout=60)                 # the nanny restarts it for the next tests


def test_interrupted_client_resumes_skipping_verified_shards(reference, client, tmp_path):
    seen = []

    def interrupt(n, total):
        seen.append(n)
        if sum(seen) >= 12:                                # Ctrl-C after three shards
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        generate(client, CAMPAIGN, tmp_path, on_progress=interrupt)
    man = store.read_manifest(tmp_path)
    assert man["complete"] is False and "shards" not in man
    journal = store.read_journal(tmp_path)
    assert len(journal) == 3
    res = generate(client, CAMPAIGN, tmp_path)
    assert sorted(res.skipped) == sorted(journal)          # digest-verified shards are kept
    assert sorted(res.computed) == sorted(set(range(12)) - set(journal))
    assert same_tree(reference, tmp_path) == []
    assert not (tmp_path / store.JOURNAL).exists()


def test_corrupted_shards_are_found_by_verify_and_by_resume(reference, client, tmp_path):
    out = tmp_path / "c"
    shutil.copytree(reference, out)
    trunc = out / "shard-000003.parquet"
    trunc.write_bytes(trunc.read_bytes()[:-100])           # truncated
    addr = client.scheduler.address
    r = CliRunner().invoke(cli, ["vectors", "verify", str(out), "--scheduler", addr, "--quiet"])
    assert r.exit_code == 1, r.output
    assert "bad shard 3 (shard-000003.parquet)" in r.output and "FAILED" in r.output
    res = generate(client, CAMPAIGN, out)
    assert [i for i, _ in res.rejected] == [3] and res.computed == [3]
    assert same_tree(reference, out) == []
    r = CliRunner().invoke(cli, ["vectors", "verify", str(out), "--scheduler", addr, "--quiet", "--json"])
    assert r.exit_code == 0, r.output


def test_a_changed_result_is_reported_by_shard_and_row(client, tmp_path):
    c = Campaign(Spec("amx:spr", "tdpbssd", shape=(2, 2, 2)), profile="random", count=6, seed=1, shard_size=3,
                 format="text")
    generate(client, c, tmp_path)
    p = tmp_path / "shard-000001.txt"
    lines = p.read_text().splitlines()
    fields = lines[4].split(" ")                           # the second vector of shard 1 (after 3 comment lines)
    fields[4] = ("0" if fields[4][0] != "0" else "1") + fields[4][1:]     # one hex digit of D
    lines[4] = " ".join(fields)
    p.write_text("\n".join(lines) + "\n")
    res = verify(client, tmp_path)
    assert not res.ok
    assert [b["index"] for b in res.bad_shards] == [1]     # its digest no longer matches
    assert res.mismatched_rows == 1
    m = res.mismatches[0]
    assert (m["shard"], m["row"], m["vector"], m["image"]) == (1, 1, 4, "d")


def test_resume_refuses_another_campaign(reference, client, tmp_path):
    from systolic.errors import CampaignError
    out = tmp_path / "c"
    shutil.copytree(reference, out)
    other = Campaign(CAMPAIGN.spec, profile="all", count=48, seed=1, shard_size=4)
    with pytest.raises(CampaignError):
        generate(client, other, out)


def test_cli_generate_on_the_cluster(client, tmp_path):
    addr = client.scheduler.address
    r = CliRunner().invoke(cli, ["vectors", "generate", "--engine", "xmx:pvc", "--precision", "s8xu4", "--count", "5",
                                 "--shard-size", "2", "--out", str(tmp_path), "--scheduler", addr, "--json",
                                 "--format", "npz"])
    assert r.exit_code == 0, r.output
    assert '"computed_shards": 3' in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json", "shard-000000.npz", "shard-000001.npz",
                                                          "shard-000002.npz"]
