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
