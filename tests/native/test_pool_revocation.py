"""The resident worker pool (amx.native_gemm_ir.pool_module) when workers come late: the caller revokes the
invitations not yet accepted and runs those shares itself. Exercised through the compiled B packer (no AMX
needed), with the pool's threads squeezed onto one CPU so that workers regularly miss their call, against the
numpy packer (an independent index computation)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(os, "sched_setaffinity"),
                                reason="the pool parks its workers on Linux futexes")

_CHILD = textwrap.dedent("""
    import os, sys, time
    import numpy as np, ml_dtypes
    from systolic.amx import native_gemm as G
    from systolic.amx.native_gemm_ir import CTRL_INVITE, CTRL_WORKERS, JOINED, REVOKED
    cpu = sorted(os.sched_getaffinity(0))[0]
    os.sched_setaffinity(0, {cpu})                 # one CPU for the caller and all seven workers
    G._pool_obj[:] = [G._Pool(8)]
    G.PACK_PARALLEL_BYTES = 0                      # every call through the pool
    pool = G._pool_obj[0]
    rng = np.random.default_rng(5)
    seen = {JOINED: 0, REVOKED: 0}
    for i in range(int(sys.argv[1])):
        dt = (np.int8, np.uint8, ml_dtypes.bfloat16)[i % 3]
        b = rng.integers(0, 100, (int(rng.integers(2048, 2600)), int(rng.integers(16, 80)))).astype(dt)
        if i % 4 == 0:
            time.sleep(0.002)                      # some calls find the workers parked, some spinning
        got = G.pack_b(b, threads=8, pad=64 * (i % 3))
        if not np.array_equal(got.data, G.pack_b_numpy(b, pad=64 * (i % 3)).data):
            print("MISMATCH", i); sys.exit(1)
        for w in range(1, 8):
            state = int(pool.ctrl[(CTRL_WORKERS + 64 * w + CTRL_INVITE) // 8]) & 3
            if state in seen:
                seen[state] += 1
    print("OK", seen[JOINED], seen[REVOKED])
""")


def test_latecomers_are_revoked_and_every_share_runs_once():
    out = subprocess.run([sys.executable, "-c", _CHILD, "300"], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    tag, joined, revoked = out.stdout.split()[-3:]
    assert tag == "OK"
    # both paths ran: shares done by workers that came in time, and shares the caller took back
    assert int(joined) > 0 and int(revoked) > 0, out.stdout


def test_share_count_outside_one_to_size_is_refused():
    import numpy as np

    from systolic.amx import native_gemm as G
    from systolic.amx.native_gemm_ir import SHARE_FIELDS
    from systolic.errors import InvalidValue
    pool = G._Pool(2)
    try:
        for n in (0, 3):
            shares = np.zeros((n, SHARE_FIELDS), np.int64)
            with pytest.raises(InvalidValue, match="1 to size"):
                pool.run(shares, shares.ctypes.data)
    finally:
        pool.stop()
    assert not any(t.is_alive() for t in pool.threads)


def test_a_dropped_pool_stops_its_workers():
    import gc

    from systolic.amx import native_gemm as G
    pool = G._Pool(3)
    threads = pool.threads
    assert all(t.is_alive() for t in threads)
    del pool
    gc.collect()
    for t in threads:
        t.join(timeout=5)
    assert not any(t.is_alive() for t in threads)


_FORK_CHILD = textwrap.dedent("""
    import os, sys, threading, time
    import numpy as np
    from systolic.amx import native_gemm as G
    G.PACK_PARALLEL_BYTES = 0
    b = np.ones((4096, 64), np.int8)
    G.pack_b(b, threads=2)
    stop = False
    def busy():                                   # keeps the pool's lock (and the module's) taken most of the time
        while not stop:
            G.pack_b(b, threads=2)
    t = threading.Thread(target=busy)
    t.start()
    kids = []
    for _ in range(8):
        time.sleep(0.003)
        pid = os.fork()
        if pid == 0:
            got = G.pack_b(b, threads=2)          # the child's own pool, not the parent's workers
            ok = np.array_equal(got.data, G.pack_b_numpy(b).data)
            os._exit(0 if ok else 3) if len(sys.argv) > 1 else sys.exit(0 if ok else 3)
        kids.append(pid)
    codes = [os.waitpid(p, 0)[1] for p in kids]
    stop = True
    t.join()
    print("CODES", codes)
""")


def test_fork_while_the_pool_is_busy_and_the_child_exits_normally():
    """A child forked while another thread is inside the pool (its lock held) packs with a pool of its own and
    exits through the interpreter's normal exit (finalizers, atexit) without hanging on the parent's lock."""
    out = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", _FORK_CHILD],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "CODES [0, 0, 0, 0, 0, 0, 0, 0]" in out.stdout, out.stdout + out.stderr
