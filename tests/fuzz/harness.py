"""The fuzz suite's one rule, as code: every call ends ok or with a typed error (issue 25).

``outcome(fn)`` runs one hostile call and classifies it: a return value is "ok", a :class:`systolic.errors`
error (or, inside torch code, torch's own error type) is "typed"; any other exception, or a call that runs past
:data:`HANG_S` seconds, fails the test with the call's traceback. Counts per test go to :data:`OUTCOMES`; with
``SYSTOLIC_FUZZ_REPORT=path`` the session writes them there as JSON (conftest.py).

Depth: each test runs ``examples(n)`` cases: ``n`` in CI (the whole directory stays under a minute on 2 cores),
``SYSTOLIC_FUZZ_EXAMPLES`` when that is set (the deep run).
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
from decimal import Decimal
from fractions import Fraction

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from systolic.errors import SystolicError

HANG_S = float(os.environ.get("SYSTOLIC_FUZZ_HANG_S", "60"))
OUTCOMES: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


def examples(n: int, weight: float = 1.0) -> settings:
    """Hypothesis settings of a fuzz test: ``n`` cases in CI; in a deep run ``SYSTOLIC_FUZZ_EXAMPLES * weight``
    (``weight`` < 1 for the slow tests - a torch model compare, an SVG per case - > 1 for the fast ones, so every
    test gets a similar share of the run's time)."""
    deep = int(os.environ.get("SYSTOLIC_FUZZ_EXAMPLES", "0") or 0)
    return settings(max_examples=max(n, int(deep * weight)) if deep else n, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


class Hang(Exception):
    pass


@contextlib.contextmanager
def _alarm(seconds: float):
    if not hasattr(signal, "setitimer"):
        yield
        return

    def fire(signum, frame):
        raise Hang(f"the call ran longer than {seconds} s")
    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _test_name() -> str:
    return os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]


def outcome(fn, *args, typed: tuple = (), **kw):
    """Run ``fn(*args, **kw)``; returns ("ok", value) or ("typed", error). ``typed``: further error types that
    count as typed (torch's own inside torch code). Anything else fails the test."""
    name = _test_name()
    try:
        with _alarm(HANG_S):
            v = fn(*args, **kw)
    except Hang:
        OUTCOMES[name]["hang"] += 1
        raise AssertionError(f"hang: {fn!r} args={args!r} kw={kw!r}") from None
    except SystolicError as e:
        OUTCOMES[name]["typed:" + type(e).__name__] += 1
        return "typed", e
    except typed as e:  # noqa: B030 - a tuple of types (may be empty)
        OUTCOMES[name]["typed:" + type(e).__name__] += 1
        return "typed", e
    except Exception as e:  # the defect the suite exists to find
        OUTCOMES[name]["bare:" + type(e).__name__] += 1
        raise AssertionError(f"bare {type(e).__name__} from {getattr(fn, '__qualname__', fn)}: {e}") from e
    OUTCOMES[name]["ok"] += 1
    return "ok", v


def ok(r) -> bool:
    return r[0] == "ok"


# ----------------------------------------------------------------------------------------- hostile values
_ODD = [None, True, False, "", "x", "3", b"\x00", 1.5, -0.0, float("nan"), float("inf"), -float("inf"), 2 ** 64,
        -(2 ** 63) - 1, 10 ** 30, 1e300, complex(1, 2), Fraction(1, 3), Decimal("1.5"), [], [1, 2], (1,), {},
        object(), np.int8(5), np.uint64(2 ** 64 - 1), np.float32("nan"), np.float16(1.5), np.array(3),
        np.array([1, 2]), np.array(2.5), np.zeros((2, 2)), np.bool_(True), np.datetime64("2020"), int, np]


def hostile() -> st.SearchStrategy:
    """A value someone could pass where a number, name or array is expected."""
    return st.one_of(st.integers(-3, 70), st.integers(-(2 ** 70), 2 ** 70),
                     st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(_ODD),
                     st.text(max_size=5))


def maybe(valid: st.SearchStrategy, p_hostile: int = 3) -> st.SearchStrategy:
    """Mostly valid values (so calls get deep), sometimes hostile ones."""
    return st.one_of(*([valid] * p_hostile), hostile())


def readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a)
    a.setflags(write=False)
    return a
