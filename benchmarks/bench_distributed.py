"""Distributed test-vector campaigns: speed-up of N local workers over one, vectors/s per backend, and the
kill / resume runs, all on the machine this runs on.

    python benchmarks/bench_distributed.py [--workers 1,16] [--seconds 40] [--repeat 3] [--shard-size 64]
                                           [--native] [--gpu] [--kill-resume] [--out DIR]

* scaling: one CPU-bound campaign (AMX TDPBF16PS, random profile, 16x16x16 tiles, shards of 64) sized so that one
  worker needs about ``--seconds``; timed on a fresh LocalCluster of each worker count after every worker has
  computed a warm-up shard (imports, JIT), so the figure is the campaign, not the cluster start; N > 1 workers run
  it ``--repeat`` times on one cluster and the median counts. The ratio is vectors/s of N workers over vectors/s
  of one, in the same run; the directories must be byte-identical.
* ``--native``: the same campaign computed by the CPU's AMX unit (backend native), 1 and N workers; its bytes must
  equal the emulator's (shards do not depend on the backend). Then ``verify --backend native`` of campaigns with
  every profile (bf16 and int8): the emulator's vectors replayed on silicon.
* ``--gpu``: one worker per GPU (backend cuda) on the same campaign (fewer vectors); bytes must equal the CPU's.
* ``--kill-resume``: a worker SIGKILLed a quarter of the way through (API), and the CLI interrupted with SIGINT
  and run again (subprocess): both must end byte-identical to the uninterrupted directory.

Results: a table on stdout, JSON and Markdown in ``--out``.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from systolic.distributed import store
from systolic.distributed.campaign import Campaign, generate, make_shard, verify
from systolic.distributed.cluster import open_client
from systolic.distributed.kinds import Spec


def identical(a: Path, b: Path) -> bool:
    na, nb = sorted(p.name for p in a.iterdir()), sorted(p.name for p in b.iterdir())
    if na != nb:
        return False
    _, mis, err = filecmp.cmpfiles(a, b, na, shallow=False)
    return not mis and not err


def warm(client, c: Campaign, backend: str) -> None:
    """Every worker computes a small shard of the campaign's kind (imports, JIT compilation, tile permission)."""
    small = Campaign(c.spec, c.profile, 4, c.seed + 1, 4, c.format).args()
    client.run(make_shard, small, 0, backend)


def timed_campaign(c: Campaign, out: Path, backend: str, workers: int | None = None, gpu: bool = False,
                   repeat: int = 1) -> dict:
    """``repeat`` runs on one cluster (each into its own directory, ``out`` and ``out``.r1 ...); the median."""
    times, client_s = [], []
    with open_client(workers=workers, gpu=gpu) as client:
        n = len(client.scheduler_info()["workers"])
        warm(client, c, backend)
        for i in range(repeat):
            d = out if i == 0 else out.with_name(f"{out.name}.r{i}")
            t0 = time.perf_counter()
            res = generate(client, c, d, backend=backend)
            times.append(time.perf_counter() - t0)
            client_s.append(res.client_seconds)
            assert len(res.computed) == c.shard_count
            if i:
                assert identical(out, d)
    dt = sorted(times)[len(times) // 2]
    return {"workers": n, "backend": backend, "vectors": c.count, "seconds": round(dt, 3),
            "vectors_per_s": round(c.count / dt, 1), "all_seconds": [round(t, 3) for t in times],
            "client_write_seconds": [round(t, 3) for t in client_s]}


def per_vector_seconds(c: Campaign, backend: str) -> float:
    make_shard(Campaign(c.spec, c.profile, 8, 99, 8, c.format).args(), 0, backend)
    t0 = time.perf_counter()
    make_shard(Campaign(c.spec, c.profile, 64, 98, 64, c.format).args(), 0, backend)
    return (time.perf_counter() - t0) / 64


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default=f"1,{os.cpu_count()}")
    ap.add_argument("--seconds", type=float, default=40.0, help="target time of the 1-worker run")
    ap.add_argument("--native", action="store_true")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--kill-resume", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="runs per worker count (the median is reported)")
    ap.add_argument("--shard-size", type=int, default=64)
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    outdir = Path(a.out)
    outdir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench_distributed_"))
    counts = [int(x) for x in a.workers.split(",")]
    top = max(counts)
    cpu_name = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    report = {"host": {"cpu": cpu_name, "cpus": os.cpu_count(), "python": platform.python_version()}, "runs": []}
    spec = Spec("amx:spr", "tdpbf16ps")
    tv = per_vector_seconds(Campaign(spec), "cpu")
    shard = a.shard_size
    count = max(shard * top * 4, int(a.seconds / tv) // (shard * top) * shard * top)
    base = Campaign(spec, "random", count, 1, shard)
    report["campaign"] = {**base.args(), "in_process_s_per_vector": tv}
    print(f"{cpu_name}, {os.cpu_count()} CPUs; campaign {count} vectors of tdpbf16ps 16x16x16 "
          f"(~{tv * 1e3:.2f} ms/vector in-process)", flush=True)

    dirs = {}
    for n in counts:
        d = tmp / f"cpu_{n}"
        r = timed_campaign(base, d, "cpu", workers=n, repeat=a.repeat if n > 1 else 1)
        dirs[n] = d
        r["identical_to_1_worker"] = identical(dirs[counts[0]], d)
        report["runs"].append({"what": "scaling", **r})
        print(json.dumps(report["runs"][-1]), flush=True)
    one = next(r for r in report["runs"] if r["what"] == "scaling" and r["workers"] == counts[0])
    for r in report["runs"]:
        if r["what"] == "scaling":
            r["speedup"] = round(r["vectors_per_s"] / one["vectors_per_s"], 2)

    if a.native:
        from systolic.amx.native import availability
        ok, why = availability()
        report["native"] = {"available": ok, "reason": why}
        if ok:
            for n in (top, 1):
                small = base if n == top else Campaign(spec, "random", shard * 16, 1, shard)
                d = tmp / f"native_{n}"
                r = timed_campaign(small, d, "native", workers=n)
                ref = dirs[top] if n == top else None
                if ref is None:
                    dref = tmp / "cpu_ref_small"
                    with open_client(workers=top) as cl:
                        generate(cl, small, dref)
                    ref = dref
                r["identical_to_emulator"] = identical(ref, d)
                report["runs"].append({"what": "native", **r})
                print(json.dumps(report["runs"][-1]), flush=True)
            for name, sp in (("tdpbf16ps", Spec("amx:spr", "tdpbf16ps")), ("tdpbssd", Spec("amx:spr", "tdpbssd"))):
                c = Campaign(sp, "all", 64 * top * 2, 7, 64)
                d = tmp / f"all_{name}"
                with open_client(workers=top) as cl:
                    generate(cl, c, d)
                    v = verify(cl, d, backend="native")
                report["runs"].append({"what": "verify-native", "instruction": name, "profile": "all",
                                       "vectors": v.vectors, "mismatched_rows": v.mismatched_rows,
                                       "bad_shards": len(v.bad_shards), "seconds": round(v.seconds, 2),
                                       "vectors_per_s": round(v.vectors / v.seconds, 1)})
                print(json.dumps(report["runs"][-1]), flush=True)

    if a.gpu:
        from systolic.distributed.cluster import gpu_count
        ng = gpu_count()
        report["gpus"] = ng
        if ng:
            for name, sp in (("amx tdpbf16ps", spec), ("xmx pvc bf16 stage", Spec("xmx:pvc", precision="bf16"))):
                c = Campaign(sp, "random", shard * 8 * ng, 1, shard)
                dc, dg = tmp / f"gpu_cpu_{sp.engine}", tmp / f"gpu_{sp.engine}"
                with open_client(workers=top) as cl:
                    generate(cl, c, dc)
                r = timed_campaign(c, dg, "cuda", gpu=True)
                r["identical_to_cpu"] = identical(dc, dg)
                report["runs"].append({"what": f"gpu {name}", **r})
                print(json.dumps(report["runs"][-1]), flush=True)

    if a.kill_resume:
        ref = dirs[top]
        d = tmp / "killed"
        with open_client(workers=top) as client:
            warm(client, base, "cpu")
            pids = client.run(os.getpid)
            victim = sorted(pids.values())[0]
            state = {"done": 0, "killed": False}

            def kill(n, total):
                state["done"] += n
                if not state["killed"] and state["done"] >= total // 4:
                    os.kill(victim, signal.SIGKILL)
                    state["killed"] = True
                    state["at"] = state["done"]
            t0 = time.perf_counter()
            res = generate(client, base, d, on_progress=kill)
            dt = time.perf_counter() - t0
        report["runs"].append({"what": "kill", "workers": top, "killed_pid": victim, "killed_after_vectors":
                               state.get("at"), "seconds": round(dt, 2), "shards": len(res.computed),
                               "identical": identical(ref, d)})
        print(json.dumps(report["runs"][-1]), flush=True)

        d = tmp / "resumed"
        cmd = [sys.executable, "-m", "systolic", "vectors", "generate", "--engine", "amx:spr", "--instruction",
               "tdpbf16ps", "--count", str(base.count), "--seed", "1", "--shard-size", str(shard), "--out", str(d),
               "--workers", str(top)]
        p = subprocess.Popen(cmd + ["--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t0 = time.perf_counter()
        while len(store.read_journal(d)) < base.shard_count // 3 and p.poll() is None:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        out1, err1 = p.communicate(timeout=120)
        journal = len(store.read_journal(d))
        p2 = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=600)
        summary = json.loads(p2.stdout) if p2.returncode == 0 else {"error": p2.stderr[-2000:]}
        report["runs"].append({"what": "resume", "workers": top, "interrupted_rc": p.returncode,
                               "interrupted_stderr_tail": err1[-300:], "journal_shards_at_interrupt": journal,
                               "resume": summary, "identical": identical(ref, d)})
        print(json.dumps(report["runs"][-1]), flush=True)

    (outdir / "bench_distributed.json").write_text(json.dumps(report, indent=1))
    lines = [f"host: {cpu_name}, {os.cpu_count()} CPUs", "", "| run | workers | backend | vectors | s | vectors/s |"
             " speed-up / check |", "|---|---:|---|---:|---:|---:|---|"]
    for r in report["runs"]:
        chk = r.get("speedup", "")
        for k in ("identical_to_1_worker", "identical_to_emulator", "identical_to_cpu", "identical",
                  "mismatched_rows"):
            if k in r:
                chk = f"{chk} {k}={r[k]}".strip()
        lines.append(f"| {r['what']} | {r.get('workers', '')} | {r.get('backend', '')} | {r.get('vectors', '')} | "
                     f"{r.get('seconds', '')} | {r.get('vectors_per_s', '')} | {chk} |")
    (outdir / "bench_distributed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
