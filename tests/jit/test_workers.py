"""systolic.jit.workers: the CPU count, the process's one pool (made again after fork), run_jobs' contract.

Oracles are the operating system's own facts (a patched affinity mask, ``taskset``), counts of job calls, and
barriers: a job that waits for N parties can only finish when N threads really run jobs at the same time.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from systolic import fpenv
from systolic.jit import scratch, workers

SRC = Path(__file__).resolve().parents[2] / "src"
WAIT = 20          # seconds a barrier waits before the test fails (instead of hanging)


# ------------------------------------------------------------------------------------------------------- cpus()

def test_cpus_counts_the_affinity_mask(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert workers.cpus() == 3


@pytest.mark.parametrize("count, want", [(7, 7), (None, 1)])
def test_cpus_falls_back_to_cpu_count(monkeypatch, count, want):
    def refuse(pid):
        raise OSError("no affinity here")
    monkeypatch.setattr(os, "sched_getaffinity", refuse, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: count)
    assert workers.cpus() == want
    monkeypatch.delattr(os, "sched_getaffinity")            # not Linux: the function does not exist
    assert workers.cpus() == want


def test_cpus_is_the_one_count_every_driver_uses():
    from systolic.amx import native_gemm
    assert native_gemm.cpus is workers.cpus


@pytest.mark.skipif(shutil.which("taskset") is None or not hasattr(os, "sched_getaffinity"),
                    reason="needs taskset (Linux)")
def test_taskset_one_cpu_gives_one():
    cpu = min(os.sched_getaffinity(0))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(["taskset", "-c", str(cpu), sys.executable, "-c",
                          "from systolic.jit import workers; print(workers.cpus())"],
                         capture_output=True, text=True, env=env, timeout=120, check=True)
    assert out.stdout.strip() == "1"


# ------------------------------------------------------------------------------------------------- run_jobs()

@pytest.mark.parametrize("nthreads", [1, 2, 5])
def test_every_job_runs_exactly_once(nthreads):
    jobs = [("job", i * 7) for i in range(203)]
    seen = []
    lock = threading.Lock()

    def call(q, job):
        with lock:
            seen.append((q, job))
    workers.run_jobs(call, jobs, nthreads)
    assert sorted(seen) == list(enumerate(jobs))


def test_for_each_and_empty_jobs():
    seen = []
    workers.for_each(seen.append, iter(range(10)), 3)       # any iterable
    assert sorted(seen) == list(range(10))
    workers.run_jobs(lambda q, j: pytest.fail("no job to run"), [], 4)


def test_jobs_really_run_side_by_side_even_beyond_the_cpu_count():
    # five jobs that each wait for all five: finishes only with five threads at once (the caller and four of the
    # pool), so an explicit thread count above cpus() gets its threads
    n = workers.cpus() + 3
    barrier = threading.Barrier(n, timeout=WAIT)
    idents = set()

    def call(q, job):
        idents.add(threading.get_ident())
        barrier.wait()
    workers.run_jobs(call, list(range(n)), n)
    assert len(idents) == n and threading.get_ident() in idents


def test_a_jobs_exception_reaches_the_caller_after_the_running_jobs_end():
    started, finished = threading.Event(), threading.Event()

    def call(q, job):
        if job == "slow":
            started.set()
            time.sleep(0.3)
            finished.set()
        else:
            assert started.wait(WAIT)
            raise ValueError("job failed")
    with pytest.raises(ValueError, match="job failed"):
        workers.run_jobs(call, ["slow", "bad"], 2)
    assert finished.is_set(), "run_jobs returned while a job was still running"


def test_no_further_jobs_after_an_exception():
    ran = []

    def call(q, job):
        ran.append(q)
        if q == 0:
            raise KeyError(q)
    with pytest.raises(KeyError):
        workers.run_jobs(call, list(range(50)), 1)
    assert ran == [0]


def test_nested_calls_do_not_wait_for_a_busy_pool():
    # every pool thread runs an outer job that calls run_jobs again (asking for no more threads than the pool
    # has, so no larger pool is made): the inner shares cannot get a thread, the inner callers must do the work
    # themselves and not wait for shares queued behind the outer jobs
    # (sized from the pool as it is now: an earlier test may have grown it beyond cpus())
    outer = workers.executor()._max_workers + 1
    gate = threading.Barrier(outer, timeout=WAIT)
    total = []
    lock = threading.Lock()

    def inner(q, job):
        with lock:
            total.append(job)

    def call(q, job):
        gate.wait()                                          # all outer jobs hold their threads
        workers.run_jobs(inner, [(q, i) for i in range(8)], 2)
    done = threading.Thread(target=workers.run_jobs, args=(call, list(range(outer)), outer), daemon=True)
    done.start()
    done.join(WAIT * 2)
    assert not done.is_alive(), "nested run_jobs deadlocked"
    assert sorted(total) == [(q, i) for q in range(outer) for i in range(8)]


@pytest.mark.skipif(fpenv.read() is None, reason="MXCSR is not accessible on this host")
def test_pool_threads_compute_under_the_callers_mxcsr():
    ftz_daz = fpenv.DEFAULT | 1 << 15 | 1 << 6
    saved = fpenv.read()
    try:
        for mxcsr in (ftz_daz, fpenv.DEFAULT, ftz_daz):     # the same pool threads, switched each call
            fpenv.write(mxcsr)
            barrier = threading.Barrier(2, timeout=WAIT)
            seen = []

            def call(q, job):
                barrier.wait()                               # two threads: the caller's and one of the pool
                seen.append((threading.get_ident(), fpenv.read() & 0xFFC0))
            workers.run_jobs(call, [0, 1], 2)
            assert len({t for t, _ in seen}) == 2
            assert {m for _, m in seen} == {mxcsr & 0xFFC0}
    finally:
        fpenv.write(saved)


# ----------------------------------------------------------------------------------------------------- fork

def _child(queue):
    inherited = workers._state["pool"]
    barrier = threading.Barrier(2, timeout=WAIT)
    try:
        workers.run_jobs(lambda q, j: barrier.wait(), [0, 1], 2)   # needs a pool thread that really runs
        queue.put(("ok", workers.executor() is not inherited, workers._state["pid"] == os.getpid()))
    except BaseException as exc:                                   # report, do not hang the parent
        queue.put(("error", repr(exc), None))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # Python 3.12 warns on fork with threads running
def test_the_pool_is_made_again_in_a_forked_child():
    barrier = threading.Barrier(2, timeout=WAIT)
    workers.run_jobs(lambda q, j: barrier.wait(), [0, 1], 2)       # the parent's pool has a running thread
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue,))
    proc.start()
    try:
        status, fresh, own_pid = queue.get(timeout=WAIT * 3)
    finally:
        proc.join(WAIT)
        if proc.is_alive():
            proc.kill()
    assert status == "ok", fresh
    assert fresh and own_pid
    assert proc.exitcode == 0


# ------------------------------------------------------------------------------------------ aligned buffers

@pytest.mark.parametrize("shape, dtype", [(1, np.uint8), (100, np.uint8), ((3, 17), np.float32),
                                          ((64, 129), np.int16), ((0, 5), np.int32)])
def test_aligned_empty(shape, dtype):
    x = scratch.aligned_empty(shape, dtype)
    assert x.shape == (shape if isinstance(shape, tuple) else (shape,))
    assert x.dtype == dtype and x.flags.c_contiguous and x.flags.writeable
    if x.size:                                               # (an empty array has no data to align)
        assert x.ctypes.data % 64 == 0
        assert scratch.aligned_empty(shape, dtype, align=4096).ctypes.data % 4096 == 0


def test_one_aligned_helper():
    from systolic.amx import native_gemm
    assert native_gemm.aligned_empty is scratch.aligned_empty
    with scratch.buffer(1000, np.float64) as b:
        assert b.ctypes.data % 64 == 0 and b.shape == (1000,)
