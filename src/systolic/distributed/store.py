"""The campaign directory on disk: atomic writes, digests, the manifest and the journal.

* every file is written to a temporary name in the same directory (``.tmp-<name>-<random>``) and renamed over
  its final name (``os.replace``: atomic on POSIX), so a reader or a resumed run never sees half a file under a
  final name after the client stops or crashes. Shard files and journal lines are not fsynced (the client
  writes every shard of every worker, so it stays off the disk's flush path): after a power cut a shard may be
  lost or empty, and it then fails its digest check and is computed again on resume. ``manifest.json`` is fsynced;
* ``manifest.json``: the campaign's arguments, the systolic version and, once complete, every shard's file,
  count, seed pair, profile and sha256. It is a function of the arguments alone (no times, no host names),
  so one worker and sixteen write the same bytes;
* ``.journal.jsonl``: one line per shard as it completes (index, file, count, sha256), appended and flushed
  by the client; a resumed run trusts a shard file only when its sha256 equals the journal's (or the complete
  manifest's). A torn last line (a crash mid-write) is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path

from ..errors import CampaignError

__all__ = ["atomic_write", "sha256_file", "sha256_bytes", "read_manifest", "write_manifest", "read_journal",
           "append_journal", "remove_temporaries", "MANIFEST", "JOURNAL"]

MANIFEST = "manifest.json"
JOURNAL = ".journal.jsonl"


def atomic_write(path: Path, data: bytes, durable: bool = False) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename (``durable``: fsync
    the data before the rename)."""
    path = Path(path)
    tmp = path.with_name(f".tmp-{path.name}-{secrets.token_hex(6)}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def manifest_bytes(manifest: dict) -> bytes:
    return (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()


def write_manifest(out: Path, manifest: dict) -> None:
    atomic_write(Path(out) / MANIFEST, manifest_bytes(manifest), durable=True)


def read_manifest(out: Path) -> dict | None:
    """The manifest of ``out``, or None when there is none; :class:`CampaignError` when it does not parse."""
    p = Path(out) / MANIFEST
    if not p.exists():
        return None
    try:
        m = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise CampaignError(f"{p} does not parse: {exc}", rule="manifest.json is JSON written by systolic vectors",
                            values={"path": str(p)}) from exc
    if not isinstance(m, dict) or m.get("format") != "systolic-vectors":
        raise CampaignError(f"{p} is not a systolic vector manifest", rule='manifest "format": "systolic-vectors"',
                            values={"path": str(p)})
    return m


def read_journal(out: Path) -> dict[int, dict]:
    """Completed shards recorded in the journal: index -> entry (later lines win; unparsable lines ignored)."""
    p = Path(out) / JOURNAL
    done: dict[int, dict] = {}
    if not p.exists():
        return done
    for line in p.read_text(errors="replace").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if shard_entry_problem(e) is None:               # a line that is not a whole entry is never trusted
            done[e["index"]] = e
    return done


def _is_int(v) -> bool:
    return type(v) is int


def shard_entry_problem(e) -> str | None:
    """Why ``e`` is not a shard entry of a journal or manifest (``index`` int >= 0, ``file`` str, ``count`` int
    >= 1, ``sha256`` 64 hex digits), or None when it is one."""
    if not isinstance(e, dict):
        return "an entry is a JSON object"
    if not _is_int(e.get("index")) or e["index"] < 0:
        return "index is an integer >= 0"
    if not isinstance(e.get("file"), str):
        return "file is a name"
    if not _is_int(e.get("count")) or e["count"] < 1:
        return "count is an integer >= 1"
    h = e.get("sha256")
    if not isinstance(h, str) or len(h) != 64 or any(ch not in "0123456789abcdef" for ch in h):
        return "sha256 is 64 lower-case hex digits"
    return None


def manifest_shards(manifest: dict, path) -> dict[int, dict]:
    """The shard entries of a manifest by index; :class:`CampaignError` naming the first malformed one."""
    shards = manifest.get("shards", [])
    if not isinstance(shards, list):
        raise CampaignError(f"{path}: shards is not a list", rule='manifest "shards": a list of shard entries',
                            values={"path": str(path), "shards": type(shards).__name__})
    out = {}
    for j, e in enumerate(shards):
        why = shard_entry_problem(e)
        if why is not None:
            raise CampaignError(f"{path}: shard entry {j} is malformed: {why}",
                                rule="manifest shard entries: index, file, count, sha256",
                                values={"path": str(path), "entry": j})
        out[e["index"]] = e
    return out


class Journal:
    """Append-only completion log, one flushed JSON line per shard."""

    def __init__(self, out: Path) -> None:
        self._f = open(Path(out) / JOURNAL, "a")

    def append(self, entry: dict) -> None:
        self._f.write(json.dumps(entry, sort_keys=True) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()


def append_journal(out: Path, entry: dict) -> None:
    j = Journal(out)
    try:
        j.append(entry)
    finally:
        j.close()


def remove_temporaries(out: Path) -> int:
    """Remove temporary files left by interrupted writes; the count removed."""
    n = 0
    for p in Path(out).glob(".tmp-*"):
        p.unlink(missing_ok=True)
        n += 1
    return n
