"""Writes the fuzz outcome counts (harness.OUTCOMES) to ``$SYSTOLIC_FUZZ_REPORT`` at the end of a session."""

import json
import os

from .harness import OUTCOMES


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("SYSTOLIC_FUZZ_REPORT")
    if path:
        total = sum(sum(c.values()) for c in OUTCOMES.values())
        with open(path, "w") as f:
            json.dump({"total_cases": total, "exitstatus": int(exitstatus),
                       "by_test": {k: dict(v) for k, v in sorted(OUTCOMES.items())}}, f, indent=1)
