"""The spec bodies announce a watched element's steps to an observer (systolic.observe) and keep no record.

Oracles: int64 numpy sums of the same bytes (an independent computation), and the spec path run without an
observer (an observer may only watch: the tiles come out the same)."""

from __future__ import annotations

import numpy as np

from systolic.amx import spec
from systolic.observe import ElementRecord, Observer


class Steps(Observer):
    """Counts every event of every element: watches all of them."""

    def __init__(self):
        self.steps, self.results = [], []

    def watches(self, row, col):
        return True

    def step(self, row, col, **values):
        self.steps.append((row, col, values))

    def result(self, row, col, **values):
        self.results.append((row, col, values))


def _tiles(seed, M=3, N=4, K=5):
    rng = np.random.default_rng(seed)
    c, a, b = (np.zeros((16, 64), np.uint8) for _ in range(3))
    c[:M, :4 * N] = rng.integers(0, 256, (M, 4 * N))
    a[:M, :4 * K] = rng.integers(0, 256, (M, 4 * K))
    b[:K, :4 * N] = rng.integers(0, 256, (K, 4 * N))
    return c, a, b, M, N, K


def _int64_reference(c, a, b, M, N, K):
    A = a[:M, :4 * K].view(np.int8).astype(np.int64)                       # (M, 4K) signed bytes
    B = b[:K, :4 * N].view(np.int8).astype(np.int64).reshape(K, N, 4)       # VNNI: dword n of row k = 4 bytes
    B = B.transpose(0, 2, 1).reshape(4 * K, N)
    C = c[:M, :4 * N].view("<i4").astype(np.int64)
    return (C + A @ B) & 0xFFFFFFFF


def test_element_record_steps_end_at_the_int64_sum():
    c, a, b, M, N, K = _tiles(1)
    want = _int64_reference(c, a, b, M, N, K)
    rec = {}
    spec.tdpbssd(c, a, b, M, 4 * N, 4 * K, observer=ElementRecord(rec, 2, 3))
    assert [s["k"] for s in rec["steps"]] == list(range(K))
    assert rec["steps"][-1]["acc"] == want[2, 3] == c[2, 12:16].view("<u4")[0]


def test_an_observer_only_watches():
    c, a, b, M, N, K = _tiles(2)
    c2, obs = c.copy(), Steps()
    spec.tdpbssd(c, a, b, M, 4 * N, 4 * K)
    spec.tdpbssd(c2, a, b, M, 4 * N, 4 * K, observer=obs)
    assert np.array_equal(c, c2)
    assert len(obs.steps) == M * N * K                 # one step per (m, k, n), every element watched
    assert Observer().watches(0, 0) is False and Observer().sums(0, 0) is None


def test_trace_dict_is_the_older_spelling():
    c, a, b, M, N, K = _tiles(3)
    old, new = {"row": 1, "col": 0}, {}
    spec.tdpbssd(c.copy(), a, b, M, 4 * N, 4 * K, trace=old)
    spec.tdpbssd(c.copy(), a, b, M, 4 * N, 4 * K, observer=ElementRecord(new, 1, 0))
    assert {k: v for k, v in old.items() if k not in ("row", "col")} == new
