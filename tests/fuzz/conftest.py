"""Caps the session's memory; writes the fuzz outcome counts (harness.OUTCOMES) to ``$SYSTOLIC_FUZZ_REPORT`` at the end of a session."""

import json
import os
import resource

# a hostile size that makes a call allocate without bound must surface as a MemoryError (a finding: a bare
# exception) instead of the machine's OOM killer ending the session: the fuzz session's address space is capped
_CAP = int(os.environ.get("SYSTOLIC_FUZZ_MEMORY_GB", "24")) << 30
try:
    _soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if _hard == resource.RLIM_INFINITY or _hard > _CAP:
        resource.setrlimit(resource.RLIMIT_AS, (_CAP, _hard))
except (ValueError, OSError):  # not permitted here: run uncapped
    pass

from .harness import OUTCOMES


def pytest_runtest_logfinish(nodeid, location):
    """The counts so far, after every test (a deep run stopped early still leaves them)."""
    pytest_sessionfinish(None, -1)


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("SYSTOLIC_FUZZ_REPORT")
    if path and OUTCOMES:
        worker = os.environ.get("PYTEST_XDIST_WORKER")      # under xdist each worker writes its own file
        path = f"{path}.{worker}" if worker else path
        total = sum(sum(c.values()) for c in OUTCOMES.values())
        with open(path, "w") as f:
            json.dump({"total_cases": total, "exitstatus": int(exitstatus),
                       "by_test": {k: dict(v) for k, v in sorted(OUTCOMES.items())}}, f, indent=1)
