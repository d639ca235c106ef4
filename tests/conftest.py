"""Hypothesis profiles for the whole suite.

* default (a developer's run): random examples, so every run can find something new; no per-example deadline
  and no "too slow" health check, because the machines are small and shared.
* ``ci`` (chosen when the CI variable is set, as .ci/run's environment does): the same settings with
  ``derandomize=True``, so CI replays a fixed set of examples and a red CI always reproduces. Failures found
  by random runs are pinned with ``@example`` in the test that found them.
"""

import os

from hypothesis import HealthCheck, settings

_common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
               print_blob=True)
settings.register_profile("dev", **_common)
settings.register_profile("ci", derandomize=True, **_common)
settings.load_profile("ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "dev")
