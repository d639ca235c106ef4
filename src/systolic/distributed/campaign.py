"""Test-vector campaigns on a Dask cluster: generate (resumable, deterministic) and verify.

A campaign is its arguments: the vector kind (:class:`systolic.distributed.kinds.Spec`), the input profile,
the number of vectors, the seed, the shard size and the file format. Shard ``i`` holds vectors
``i * shard_size ..`` and is computed from the seed pair ``(seed, i)`` alone
(``numpy.random.SeedSequence([seed, i])``), with profile ``profiles[i % len(profiles)]`` for ``--profile all``;
so its bytes do not depend on which worker made it, how many workers there were, or whether it was made
again after a worker died or the client was interrupted. Where the results are computed (``backend``: ``cpu``,
``native``, ``cuda``) and how (``path``: the fast path or, on cpu, the spec path) is not part of a shard either:
the engines are bit-identical across backends and paths, and ``verify --backend / --path`` is how that is checked
on a machine.

Workers compute; the client writes every file (atomically, :mod:`systolic.distributed.store`), so workers
need no shared file system and a killed worker can leave no partial file behind.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import __version__
from ..errors import CampaignError, InvalidValue
from ..suggest import did_you_mean
from . import formats, store
from .kinds import IMAGES, Spec, execution, make_kind, spec_dict

__all__ = ["Campaign", "make_shard", "verify_shard", "open_directory", "read_campaign", "generate", "verify",
           "GenerateResult", "VerifyResult"]

#: mismatching rows listed by verify (all are counted)
MAX_REPORTED = 1000
#: vectors in a campaign (their index is a uint64 column)
MAX_COUNT = 2**63 - 1
#: vectors in one shard (a shard is built in one worker's memory and written by the client in one piece)
MAX_SHARD = 1 << 20
#: shards in a campaign (the client holds the shard list, and the complete manifest lists every shard)
MAX_SHARDS = 10**7


@dataclass(frozen=True)
class Campaign:
    """A campaign's identity (what ``manifest.json`` records under ``args``)."""
    spec: Spec
    profile: str = "random"
    count: int = 1024
    seed: int = 0
    shard_size: int = 256
    format: str = "parquet"

    def __post_init__(self):
        """Every argument checked here, the vector kind and the profile included, so a bad campaign is refused
        where it is written, not on a worker."""
        if not isinstance(self.spec, Spec):
            raise InvalidValue("a campaign's spec is a systolic.distributed.Spec",
                               rule="Campaign(Spec(engine, instruction, ...), ...)", values={"spec": self.spec})
        for what, v, lo, hi in (("count", self.count, 1, MAX_COUNT), ("shard_size", self.shard_size, 1, MAX_SHARD),
                                ("seed", self.seed, 0, None)):
            rule = f"{what}: an integer >= {lo}" + (f" and <= {hi}" if hi else "")
            if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)) or v < lo or \
                    (hi is not None and v > hi):
                raise InvalidValue(f"{what} must be an integer >= {lo}" + (f" and <= {hi}" if hi else ""),
                                   rule=rule, values={what: v})
            object.__setattr__(self, what, int(v))             # numpy integers: plain ints for the manifest
        if self.shard_count > MAX_SHARDS:
            raise InvalidValue(f"{self.shard_count} shards: too many for one campaign",
                               rule=f"count / shard_size <= {MAX_SHARDS} shards (the client holds the shard list)",
                               values={"count": self.count, "shard_size": self.shard_size})
        if not isinstance(self.format, str) or self.format not in formats.FORMATS:
            hint = did_you_mean(self.format, formats.FORMATS) if isinstance(self.format, str) else ""
            raise InvalidValue(f"unknown format {self.format!r}{hint}", rule="formats: " + ", ".join(formats.FORMATS),
                               values={"format": self.format})
        self.kind.profiles(self.profile)               # the engine's rules, and the profile applies to the instruction

    @property
    def kind(self):
        return make_kind(self.spec)

    def canonical(self) -> "Campaign":
        """The same campaign with the kind's canonical spelling (alias engines resolved, defaults filled)."""
        kind = self.kind
        kind.profiles(self.profile)                    # the profile applies to this instruction
        return Campaign(kind.spec, self.profile, int(self.count), int(self.seed), int(self.shard_size), self.format)

    def args(self) -> dict:
        return {"spec": spec_dict(self.spec), "profile": self.profile, "count": self.count, "seed": self.seed,
                "shard_size": self.shard_size, "format": self.format}

    @staticmethod
    def from_args(a: dict) -> "Campaign":
        """The campaign of :meth:`args`' dict (a manifest's ``args``, a worker task's argument)."""
        keys = ("spec", "profile", "count", "seed", "shard_size", "format")
        if not isinstance(a, dict) or any(k not in a for k in keys):
            missing = [k for k in keys if k not in a] if isinstance(a, dict) else list(keys)
            raise InvalidValue("campaign arguments lack " + ", ".join(missing), rule="campaign args: "
                               + ", ".join(keys), values={"args": a if not isinstance(a, dict) else sorted(a)})
        return Campaign(make_kind(a["spec"]).spec, a["profile"], a["count"], a["seed"], a["shard_size"], a["format"])

    @property
    def shard_count(self) -> int:
        return math.ceil(self.count / self.shard_size)

    def shard(self, i: int) -> dict:
        """Shard ``i``'s plan: first vector, count, profile, seed pair, file name."""
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.shard_count:
            raise InvalidValue(f"no shard {i!r} in a campaign of {self.shard_count} shards",
                               rule=f"shard index: an integer 0..{self.shard_count - 1}",
                               values={"shard": i, "shard_count": self.shard_count})
        i = int(i)
        profiles = self.kind.profiles(self.profile)
        first = i * self.shard_size
        return {"index": i, "first": first, "count": min(self.shard_size, self.count - first),
                "profile": profiles[i % len(profiles)], "seed": [self.seed, i],
                "file": f"shard-{i:06d}.{formats.EXTENSIONS[self.format]}"}


def _shard_meta(c: Campaign, plan: dict) -> dict:
    kind = c.kind
    return {"systolic_version": __version__, "campaign_seed": c.seed, "shard": plan["index"],
            "seed": plan["seed"], "profile": plan["profile"], "first": plan["first"], "count": plan["count"],
            **kind.describe()}


def _inputs(c: Campaign, plan: dict) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(np.random.SeedSequence(plan["seed"]))
    return c.kind.draw(rng, plan["profile"], plan["count"])


def make_shard(args: dict, i: int, backend: str, path: str | None = None) -> dict:
    """Worker task: shard ``i`` of the campaign ``args`` as file bytes, with its sha256 and count, computed on
    ``backend`` (cpu, native, cuda) by ``path`` (fast, the default, or spec on cpu)."""
    t0 = time.perf_counter()
    backend, path, how = execution(backend, path, "make_shard")
    c = Campaign.from_args(args)
    plan = c.shard(i)
    imgs = _inputs(c, plan)
    imgs["d"] = c.kind.compute(imgs, how)
    cols = {"index": np.arange(plan["first"], plan["first"] + plan["count"], dtype=np.uint64), **imgs}
    data = formats.encode(c.format, cols, _shard_meta(c, plan))
    return {"index": i, "data": data, "count": plan["count"], "sha256": store.sha256_bytes(data),
            "seconds": time.perf_counter() - t0}


def verify_shard(args: dict, i: int, data: bytes, backend: str, max_rows: int = 20,
                 path: str | None = None) -> dict:
    """Worker task: parse shard ``i``'s bytes, regenerate its inputs from the seed pair, recompute its results on
    ``backend`` by ``path`` (default fast); the rows that differ (``image``: ``d`` for a result, ``a``/``b``/``c``
    for an input that is not the seed's) and the reason when the bytes do not parse or do not belong to this
    shard."""
    backend, path, how = execution(backend, path, "verify_shard")
    if isinstance(max_rows, (bool, np.bool_)) or not isinstance(max_rows, (int, np.integer)) or max_rows < 0:
        raise InvalidValue("max_rows must be an integer >= 0", rule="verify_shard max_rows: rows listed, >= 0",
                           values={"max_rows": max_rows})
    c = Campaign.from_args(args)
    plan = c.shard(i)
    out = {"index": i, "rows": [], "bad_rows": 0, "problem": None, "checked": 0}
    try:
        cols, meta = formats.decode(c.format, data)
    except InvalidValue as exc:
        out["problem"] = str(exc)
        return out
    n = int(cols["index"].shape[0])
    expect_index = np.arange(plan["first"], plan["first"] + plan["count"], dtype=np.uint64)
    if meta.get("shard") != i or n != plan["count"] or not np.array_equal(cols["index"], expect_index):
        out["problem"] = (f"holds shard {meta.get('shard')} with {n} vectors; shard {i} has {plan['count']} "
                          f"vectors from {plan['first']}")
        return out
    nb = c.kind.image_bytes()
    if any(cols[k].shape != (n, nb[k]) for k in IMAGES):
        out["problem"] = "image widths differ from the instruction's: " + ", ".join(
            f"{k} {cols[k].shape[1]} (expected {nb[k]})" for k in IMAGES)
        return out
    fresh = _inputs(c, plan)
    fresh["d"] = c.kind.compute({k: cols[k] for k in "abc"}, how)
    bad = np.zeros(n, bool)
    per_image = {}
    for k in IMAGES:
        diff = np.any(cols[k] != fresh[k], axis=1)
        per_image[k] = diff
        bad |= diff
    out["checked"] = n
    out["bad_rows"] = int(bad.sum())
    for r in np.flatnonzero(bad)[:max_rows]:
        for k in IMAGES:
            if per_image[k][r]:
                byte = int(np.flatnonzero(cols[k][r] != fresh[k][r])[0])
                out["rows"].append({"row": int(r), "vector": int(cols["index"][r]), "image": k, "byte": byte,
                                    "stored": int(cols[k][r][byte]), "recomputed": int(fresh[k][r][byte])})
    return out


# ------------------------------------------------------------------------------------------------ client side
@dataclass
class GenerateResult:
    manifest: dict
    computed: list[int] = field(default_factory=list)       # shard indices computed in this run
    skipped: list[int] = field(default_factory=list)        # digest-verified shards kept from an earlier run
    rejected: list[tuple[int, str]] = field(default_factory=list)   # shards found bad on resume, and why
    vectors: int = 0                                        # vectors computed in this run
    seconds: float = 0.0
    client_seconds: float = 0.0                             # of which the client spent writing files and journal


def _manifest(c: Campaign, shards: list[dict] | None) -> dict:
    m = {"format": "systolic-vectors", "format_version": 1, "systolic_version": __version__, "args": c.args(),
         "kind": c.kind.describe(), "shard_count": c.shard_count, "vector_count": c.count,
         "complete": shards is not None}
    if shards is not None:
        m["shards"] = shards
    return m




def _check_window(window) -> None:
    if window is not None and (isinstance(window, (bool, np.bool_)) or not isinstance(window, (int, np.integer))
                               or window < 1):
        raise InvalidValue("window must be a positive integer or None", rule="window: shards in flight, >= 1",
                           values={"window": window})


def _directory(out) -> Path:
    if not isinstance(out, (str, os.PathLike)) or (isinstance(out, str) and (not out or "\0" in out)):
        raise InvalidValue("the campaign directory is a path", rule="out: a str or os.PathLike naming a directory",
                           values={"out": out})
    try:
        return Path(out)
    except TypeError as exc:                       # a PathLike whose __fspath__ returns bytes
        raise InvalidValue("the campaign directory is a path", rule="out: a str or os.PathLike naming a directory",
                           values={"out": out}) from exc


def open_directory(campaign: Campaign, out) -> tuple[Campaign, Path, dict[int, dict]]:
    """Everything :func:`generate` checks before it uses the client: the campaign (canonical), the directory
    (made when missing), a manifest there of the same campaign; the shard entries that manifest records. The
    command line calls it before it starts a cluster."""
    if not isinstance(campaign, Campaign):
        raise InvalidValue("generate runs a systolic.distributed.Campaign", rule="generate(client, Campaign(...), out)",
                           values={"campaign": campaign})
    c = campaign.canonical()
    out = _directory(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:                         # under a file, no permission, a file by that name
        raise CampaignError(f"cannot make the campaign directory {out}: {exc.strerror or exc}",
                            rule="--out: a directory that exists or can be created", values={"dir": str(out)}) from exc
    old = store.read_manifest(out)
    if old is not None and old.get("args") != c.args():
        raise CampaignError(f"{out} holds another campaign", rule="resume: the same arguments as the manifest's",
                            values={"dir": str(out), "manifest_args": old.get("args"), "args": c.args()})
    return c, out, (store.manifest_shards(old, out / store.MANIFEST) if old is not None else {})


def read_campaign(out) -> tuple[Campaign, dict]:
    """The campaign recorded in ``out``'s manifest and the manifest (what :func:`verify` checks before it uses the
    client; the command line calls it before it starts a cluster)."""
    out = _directory(out)
    man = store.read_manifest(out)
    if man is None:
        raise CampaignError(f"{out} has no manifest.json", rule="verify: a directory written by vectors generate",
                            values={"dir": str(out)})
    try:
        c = Campaign.from_args(man.get("args"))
    except InvalidValue as exc:                    # an edited manifest, or one of a version with other names
        raise CampaignError(f"{out / store.MANIFEST} records no usable campaign: {exc.message}"
                            + (f" ({exc.rule})" if exc.rule else ""),
                            rule='manifest "args": the arguments of a campaign (vectors generate)',
                            values={"dir": str(out), **exc.values}) from exc
    store.manifest_shards(man, out / store.MANIFEST)
    return c, man


def generate(client, campaign: Campaign, out, *, backend: str = "cpu", path: str | None = None,
             window: int | None = None, on_progress=None, on_event=None) -> GenerateResult:
    """Run ``campaign`` on the Dask ``client``, writing shards and ``manifest.json`` under ``out``.

    Resumes: when ``out`` holds this campaign, shards whose sha256 equals the journal's or the manifest's are
    kept; bad or missing ones are computed. ``window``: shards in flight (default 2 per worker thread).
    ``on_progress(vectors, total)`` after each shard; ``on_event(text)`` for resume notes. ``backend``: where the
    workers compute (cpu, native, cuda); ``path``: the cpu backend's fast path (the default) or the spec path.
    ``backend="spec"`` is the older spelling of ``backend="cpu", path="spec"`` (DeprecationWarning; a given
    ``path="fast"`` beside it is InvalidValue)."""
    from distributed import as_completed
    backend, how_path, _ = execution(backend, path, "generate")
    _check_window(window)
    c, out, known = open_directory(campaign, out)
    t0 = time.perf_counter()
    res = GenerateResult(manifest={})
    old = store.read_manifest(out)
    known.update(store.read_journal(out))
    store.remove_temporaries(out)
    plans = [c.shard(i) for i in range(c.shard_count)]
    done: dict[int, dict] = {}
    todo = []
    for p in plans:
        path = out / p["file"]
        k = known.get(p["index"])
        if path.exists() and not path.is_file():          # it could neither be hashed nor replaced by the shard
            raise CampaignError(f"{path} is not a file", rule="a shard's name in the campaign directory is its file",
                                values={"path": str(path)})
        if k is not None and path.exists():
            digest = store.sha256_file(path)
            if digest == k["sha256"] and int(k["count"]) == p["count"]:
                done[p["index"]] = k
                res.skipped.append(p["index"])
                continue
            why = f"sha256 {digest[:12]}.. is not the recorded {k['sha256'][:12]}.. (truncated or changed)"
            res.rejected.append((p["index"], why))
            if on_event:
                on_event(f"shard {p['index']} ({p['file']}): {why}; recomputed")
        elif path.exists():
            res.rejected.append((p["index"], "no recorded digest (written after the last journal entry)"))
        todo.append(p)
    if todo and (old is None or old.get("complete")):
        # in progress: no shard list until complete; the shards kept go to the journal first, so an interrupt
        # from here on still finds their digests
        if done:
            journal = store.Journal(out)
            try:
                for e in done.values():
                    journal.append({k: e[k] for k in ("index", "file", "count", "sha256")})
            finally:
                journal.close()
        store.write_manifest(out, _manifest(c, None))
    total = sum(p["count"] for p in todo)
    if on_progress:
        on_progress(0, total)
    if todo:
        threads = sum(client.nthreads().values()) if hasattr(client, "nthreads") else 1
        window = window or max(4, 4 * threads)
        args = c.args()
        pending = list(reversed(todo))
        tag = store.sha256_bytes(repr(args).encode())[:10]
        # GPU work goes to workers that offer the GPU resource, where any does (--gpu, or dask worker --resources)
        extra = {"resources": {"GPU": 1}} if backend == "cuda" and _has_gpu_resources(client) else {}
        submit = lambda p: client.submit(make_shard, args, p["index"], backend, how_path, pure=False,  # noqa: E731
                                         key=f"systolic-shard-{p['index']}-{tag}", **extra)
        ac = as_completed([submit(pending.pop()) for _ in range(min(window, len(pending)))])
        journal = store.Journal(out)
        try:
            for fut in ac:
                r = fut.result()
                fut.release()
                tw = time.perf_counter()
                p = plans[r["index"]]
                if pending:                                  # keep the workers fed before the client writes
                    ac.add(submit(pending.pop()))
                store.atomic_write(out / p["file"], r["data"])
                entry = {"index": p["index"], "file": p["file"], "count": r["count"], "sha256": r["sha256"]}
                journal.append(entry)
                res.client_seconds += time.perf_counter() - tw
                done[p["index"]] = entry
                res.computed.append(p["index"])
                res.vectors += r["count"]
                if on_progress:
                    on_progress(r["count"], total)
        finally:
            journal.close()
    shards = []
    for p in plans:
        e = done[p["index"]]
        shards.append({"index": p["index"], "file": p["file"], "count": p["count"], "first": p["first"],
                       "profile": p["profile"], "seed": p["seed"], "sha256": e["sha256"]})
    res.manifest = _manifest(c, shards)
    store.write_manifest(out, res.manifest)
    (out / store.JOURNAL).unlink(missing_ok=True)
    res.seconds = time.perf_counter() - t0
    return res


def _has_gpu_resources(client) -> bool:
    try:
        info = client.scheduler_info()
        return any("GPU" in (w.get("resources") or {}) for w in info["workers"].values())
    except Exception:                                        # noqa: BLE001 - a scheduler without the field
        return False


@dataclass
class VerifyResult:
    shards: int = 0
    vectors: int = 0
    bad_shards: list[dict] = field(default_factory=list)     # {index, file, reason}
    mismatches: list[dict] = field(default_factory=list)     # {shard, row, vector, image, byte, stored, recomputed}
    mismatched_rows: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.bad_shards and not self.mismatched_rows


def verify(client, out, *, backend: str = "cpu", path: str | None = None, window: int | None = None,
           on_progress=None) -> VerifyResult:
    """Check every shard of the campaign in ``out``: file present, sha256 and count as in the manifest, inputs
    equal to the seed's, results recomputed on ``backend`` by ``path`` (default fast; on the cluster) bit for bit
    (``backend="spec"``: the older spelling of ``backend="cpu", path="spec"``, DeprecationWarning; a given
    ``path="fast"`` beside it is InvalidValue)."""
    from distributed import as_completed
    backend, how_path, _ = execution(backend, path, "verify")
    _check_window(window)
    out = _directory(out)
    t0 = time.perf_counter()
    c, man = read_campaign(out)
    res = VerifyResult(shards=c.shard_count)
    recorded = store.manifest_shards(man, out / store.MANIFEST)
    if not man.get("complete"):
        recorded.update(store.read_journal(out))
        res.bad_shards.append({"index": None, "file": store.MANIFEST,
                               "reason": "campaign incomplete (run the same generate command to resume)"})
    jobs = []                            # shards to recompute; each file is read only when its task is submitted
    for i in range(c.shard_count):
        p = c.shard(i)
        if not (out / p["file"]).is_file():
            res.bad_shards.append({"index": i, "file": p["file"], "reason": "missing" if not (out / p["file"]).exists()
                                   else "not a file"})
            continue
        jobs.append(i)
    total = sum(c.shard(i)["count"] for i in jobs)
    if on_progress:
        on_progress(0, total)

    def read(i: int) -> bytes:
        """Shard ``i``'s bytes; a digest or count unlike the manifest's is recorded as a bad shard (and the rows
        are still recomputed, so the report says which ones changed)."""
        p = c.shard(i)
        data = (out / p["file"]).read_bytes()
        rec = recorded.get(i)
        if rec is None:
            res.bad_shards.append({"index": i, "file": p["file"], "reason": "not in the manifest"})
        elif store.sha256_bytes(data) != rec["sha256"] or int(rec["count"]) != p["count"]:
            res.bad_shards.append({"index": i, "file": p["file"], "reason":
                                   f"sha256 differs from the manifest's ({len(data)} bytes): truncated or changed"})
        return data

    if jobs:
        threads = sum(client.nthreads().values())
        window = window or max(4, 4 * threads)
        args = c.args()
        pending = list(reversed(jobs))
        extra = {"resources": {"GPU": 1}} if backend == "cuda" and _has_gpu_resources(client) else {}
        submit = lambda i: client.submit(verify_shard, args, i, read(i), backend, 20, how_path,  # noqa: E731
                                         pure=False, **extra)
        ac = as_completed([submit(pending.pop()) for _ in range(min(window, len(pending)))])
        for fut in ac:
            r = fut.result()
            fut.release()
            if pending:
                ac.add(submit(pending.pop()))
            i = r["index"]
            if r["problem"]:
                res.bad_shards.append({"index": i, "file": c.shard(i)["file"], "reason": r["problem"]})
            res.vectors += r["checked"]
            res.mismatched_rows += r["bad_rows"]
            if len(res.mismatches) < MAX_REPORTED:            # every mismatching row is counted; the first are listed
                res.mismatches.extend({"shard": i, **row} for row in r["rows"][:MAX_REPORTED - len(res.mismatches)])
            if on_progress:
                on_progress(c.shard(i)["count"], total)
    res.bad_shards.sort(key=lambda b: (-1 if b["index"] is None else b["index"]))
    res.seconds = time.perf_counter() - t0
    return res
