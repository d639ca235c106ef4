"""Instruction counters: a small, thread-safe recorder of the instructions the engines execute.

The engines report each instruction they execute (or, for the whole-GEMM fast paths, each instruction the tiled
kernel they model would issue) with one call, ``count(kind, **params)``; ``systolic run`` and tests read the
totals::

    >>> from systolic import counters
    >>> with counters.recording() as rec:
    ...     counters.count("dpas", platform="pvc", a="bf16", b="bf16", rc=8)
    ...     counters.count("dpas", 3, platform="pvc", a="bf16", b="bf16", rc=8)
    >>> rec.total("dpas")
    4

Kinds used by the engines (the params each one records):

* ``"dpas"``: ``op`` (dpas/dpasw), ``platform``, ``a`` (Src2 precision), ``b`` (Src1 precision), ``sd``, ``rc``,
  ``exec`` (exec size), ``dst`` (Dst type), ``via`` (spec / fast / matmul: which engine entry point);
* ``"amx"``: ``op`` (the mnemonic: ldtilecfg, tileloadd, tdpbf16ps, ...), for TMUL ops ``m``, ``n``,
  ``k_dwords`` (the tile shape: rows of C, int32/fp32 columns of C, dwords of a row of A), for loads/stores
  ``rows``, ``colsb``, and ``via`` (machine / matmul);
* ``"visa"``: ``op`` (the vISA opcode), ``platform``.

When nothing records, :func:`count` returns after one global lookup and one test, so the hooks cost nothing
measurable in the engines' hot paths. Recording is process-wide (events from every thread reach every active
recorder, e.g. the worker threads of a GEMM); recorders nest.
"""

from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager
from itertools import product

__all__ = ["Recorder", "recording", "count", "count_dpas", "count_tiling", "active", "note_path", "path_taken"]

_lock = threading.Lock()
#: the recorders now active (a tuple, replaced as a whole under the lock, so readers need no lock)
_active: tuple["Recorder", ...] = ()


class Recorder:
    """The events recorded between entering and leaving :func:`recording`: ``(kind, params) -> count``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: Counter = Counter()

    def add(self, kind: str, n: int, params: dict) -> None:
        key = (kind, tuple(sorted(params.items())))
        with self._lock:
            self.counts[key] += n

    def events(self, kind: str | None = None) -> list[dict]:
        """One dict per distinct (kind, params): ``{"kind": ..., **params, "count": n}``, in a stable order."""
        with self._lock:
            items = list(self.counts.items())
        out = [{"kind": k, **dict(p), "count": n} for (k, p), n in items if kind is None or k == kind]
        return sorted(out, key=lambda e: tuple(str(e[x]) for x in sorted(e) if x != "count"))

    def total(self, kind: str | None = None, **match) -> int:
        """The number of events of ``kind`` (all kinds if None) whose params include ``match``."""
        with self._lock:
            items = list(self.counts.items())
        return sum(n for (k, p), n in items
                   if (kind is None or k == kind) and all(dict(p).get(f) == v for f, v in match.items()))

    def by(self, kind: str, *fields: str) -> dict:
        """Totals of ``kind`` grouped by the values of ``fields`` (a tuple key, or the value for one field)."""
        out: Counter = Counter()
        for e in self.events(kind):
            key = tuple(e.get(f) for f in fields)
            out[key[0] if len(fields) == 1 else key] += e["count"]
        return dict(out)

    def __repr__(self) -> str:
        return f"Recorder({sum(self.counts.values())} events, {len(self.counts)} distinct)"


def active() -> bool:
    """True while some recorder is recording."""
    return bool(_active)


@contextmanager
def recording():
    """Record every engine event until the block ends; yields the :class:`Recorder`."""
    global _active
    rec = Recorder()
    with _lock:
        _active = _active + (rec,)
    try:
        yield rec
    finally:
        with _lock:
            _active = tuple(r for r in _active if r is not rec)


@contextmanager
def suspended():
    """Keep events out of the active recorders inside the block (a caller that counts the instructions itself,
    e.g. a batched lowering whose engine GEMM is tiled differently from the kernel); yields the recorders that
    were active. Recorders opened meanwhile (another thread) stay open afterwards."""
    global _active
    with _lock:
        saved = _active
        _active = ()
    try:
        yield saved
    finally:
        with _lock:
            _active = saved + tuple(r for r in _active if r not in saved)


def count(kind: str, n: int = 1, /, **params) -> None:
    """Record ``n`` events of ``kind`` with ``params`` (hashable values) in every active recorder."""
    if not _active:
        return
    n = int(n)
    if n <= 0:
        return
    for r in _active:
        r.add(kind, n, params)


def count_dpas(shape, via: str, n: int = 1) -> None:
    """Record ``n`` DPAS/DPASW of a validated shape (:class:`systolic.xmx.rules.DpasShape`, read by attribute)."""
    if not _active:
        return
    count("dpas", n, op=shape.opcode, platform=shape.platform.name, a=shape.src2_precision, b=shape.src1_precision,
          sd=shape.sd, rc=shape.rc, exec=shape.exec_size, dst=shape.dst_type, via=via)


def _blocks(extent: int, block: int, partial: bool) -> list[tuple[int, int]]:
    """(size, how many) of the blocks cutting ``extent``: full blocks, then the edge (partial or padded)."""
    full, rest = divmod(extent, block)
    out = [(block, full)] if full else []
    if rest:
        out.append((rest if partial else block, 1))
    return out


def count_tiling(kind: str, extents: dict, blocks: dict, *, partial: bool, **params) -> None:
    """Record the instructions of a tiled loop nest: one event per tile of the grid cutting ``extents``.

    ``extents`` and ``blocks`` map a param name (e.g. ``m``, ``n``, ``k_dwords``) to the extent and the block size;
    ``partial``: the edge tiles are smaller (AMX: fewer rows, smaller colsb) or padded to whole blocks (DPAS: the
    instruction always has its full shape). An extent of 0 issues nothing.
    """
    if not _active:
        return
    names = list(extents)
    cuts = [_blocks(int(extents[k]), int(blocks[k]), partial) for k in names]
    for combo in product(*cuts):
        num = 1
        shape = {}
        for name, (size, how_many) in zip(names, combo):
            num *= how_many
            shape[name] = size
        count(kind, num, **params, **shape)


# ------------------------------------------------------------------ which implementation ran

_paths: dict[str, str] = {}


def note_path(entry: str, path: str) -> None:
    """Remember that the last call of ``entry`` (e.g. ``"amx.matmul tdpbf16ps"``) ran on ``path`` (``"native"``,
    ``"emulator"``, ...). Always recorded (one dict store), recorder or not."""
    _paths[entry] = path


def path_taken(entry: str | None = None):
    """The path the last call of ``entry`` ran on (None if never called), or all of them as a dict."""
    return dict(_paths) if entry is None else _paths.get(entry)
