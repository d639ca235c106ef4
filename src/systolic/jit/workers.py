"""The JIT kernels' worker threads: how many CPUs this process may use, and one thread pool for the process.

The compiled kernels (:mod:`systolic.jit.int_gemm`, the AMX float GEMMs of ``systolic.amx.gemm`` /
``gemm_jit``, the XMX kernels of ``systolic.xmx.native`` / ``native_block`` / ``kernels``) split a product into
independent jobs (panels, row blocks) that each write their own part of the result, and run them on threads:
ctypes releases the GIL for the length of each kernel call. This module is where all of them get their threads.

* :func:`cpus` -- the CPUs of this process's affinity mask (``taskset -c 0,1`` or a cgroup cpuset gives 2 on a
  16-core host; ``os.cpu_count()`` would say 16 and oversubscribe), ``os.cpu_count()`` where the mask cannot be
  read.
* :func:`executor` -- one ``ThreadPoolExecutor`` per process, kept: starting threads per call cost 0.3-0.7 ms
  (a tenth of a 1024^3 GEMM on 16 cores), and one pool instead of one per driver keeps the number of idle
  threads at the number of CPUs. A forked child inherits the executor object but not its threads (work
  submitted there would never run), so the pool is made again in a child (keyed by the process id).
* :func:`run_jobs` / :func:`for_each` -- every job once, on up to ``nthreads`` threads: the calling thread takes
  a share, jobs are handed out one at a time (a thread slowed by other work takes fewer). The order in which
  jobs run never changes a result bit: the jobs write disjoint parts of the output.

The pool's threads are shared by every caller, so they do not inherit the floating-point environment of the
call that uses them (a thread started by an integer GEMM of an unguarded caller could have MXCSR.FTZ set):
each share of a call runs with the calling thread's MXCSR control bits (:mod:`systolic.fpenv`; the float entry
points set the IEEE defaults there), which is what a pool started inside the call used to inherit.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .. import fpenv

__all__ = ["cpus", "executor", "run_jobs", "for_each"]

#: MXCSR's control bits (DAZ, exception masks, rounding control, FTZ); bits 0-5 are the sticky status flags
_CONTROL = 0xFFC0
_lock = threading.Lock()
_state: dict = {"pid": None, "pool": None, "size": 0}


def _after_fork_in_child() -> None:
    # a fork taken while another thread held the lock would leave it held forever in the child
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def cpus() -> int:
    """CPUs this process may run on (its affinity mask: ``taskset`` / cgroup cpusets shrink it), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux: no affinity mask to read
        return max(1, os.cpu_count() or 1)


def executor(workers: int = 0) -> ThreadPoolExecutor:
    """The process's pool: at least :func:`cpus` threads, and at least ``workers`` (an explicit ``threads=``
    above the CPU count still gets its threads; the pool is then replaced by a larger one, the old one's threads
    finishing what they hold and exiting). Threads start on demand, the first time the pool needs them."""
    with _lock:
        if _state["pid"] != os.getpid() or _state["size"] < workers:
            size = max(cpus(), workers)
            _state.update(pid=os.getpid(), size=size,
                          pool=ThreadPoolExecutor(size, thread_name_prefix="systolic-jit"))
        return _state["pool"]


def run_jobs(call, jobs, nthreads: int) -> None:
    """``call(index, job)`` for every job of ``jobs``, each exactly once, on up to ``nthreads`` threads: the
    calling thread and ``nthreads - 1`` of :func:`executor`'s. Returns when every job has finished.

    A job's exception stops the handing out of further jobs; the jobs already running finish (they may write
    buffers the caller frees on return), then the first exception is raised in the caller."""
    jobs = list(jobs)
    if nthreads <= 1 or len(jobs) <= 1:
        for q, job in enumerate(jobs):
            call(q, job)
        return
    env = fpenv.read()
    lock = threading.Lock()
    state = {"next": 0, "stop": False}

    def share(on_pool: bool):
        saved = fpenv.read() if on_pool and env is not None else None
        if saved is not None and saved & _CONTROL != env & _CONTROL:
            fpenv.write(env & _CONTROL | saved & ~_CONTROL & 0xFFFF)   # the caller's controls, our own status flags
        else:
            saved = None
        try:
            while True:
                with lock:
                    q = state["next"]
                    if state["stop"] or q >= len(jobs):
                        return
                    state["next"] = q + 1
                try:
                    call(q, jobs[q])
                except BaseException:
                    with lock:
                        state["stop"] = True
                    raise
        finally:
            if saved is not None:
                fpenv.write(saved)

    pool = executor(nthreads - 1)
    futures = [pool.submit(share, True) for _ in range(min(nthreads, len(jobs)) - 1)]
    error = None
    try:
        share(False)
    except BaseException as exc:
        error = exc
    # Shares still queued (the pool busy with other callers' work, or this call itself running on a pool thread)
    # would find no job left: cancel them instead of waiting for a free thread, which a nested call could wait
    # for forever.
    for f in futures:
        f.cancel()
    for f in futures:
        if not f.cancelled() and f.exception() is not None and error is None:
            error = f.exception()
    if error is not None:
        raise error


def for_each(fn, items, nthreads: int) -> None:
    """``fn(item)`` for every item, as :func:`run_jobs` runs its jobs."""
    run_jobs(lambda _q, item: fn(item), items, nthreads)
