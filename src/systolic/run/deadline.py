"""The time limit of ``systolic run --timeout``: a program that never returns (``while True: pass``) ends with a
:class:`~systolic.errors.ProgramError` naming the limit instead of hanging.

The limit is a real-time interval timer (``signal.setitimer(ITIMER_REAL)``) whose SIGALRM handler raises
:class:`Deadline` in the main thread, where the program runs. It is a BaseException, so a program's
``except Exception`` does not swallow it. Where there is no ``setitimer`` (Windows) or the run is not on the main
thread (signals are delivered there only), no limit is enforced.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time

__all__ = ["Deadline", "limit"]


class Deadline(BaseException):
    """Raised inside the program when its time limit passes (turned into a ProgramError by run_file)."""


@contextlib.contextmanager
def limit(seconds: float | None):
    """Raise :class:`Deadline` in the body after ``seconds`` of wall time (None or 0: no limit)."""
    if not seconds or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _expired(signum, frame):
        raise Deadline(seconds)

    old_handler = signal.signal(signal.SIGALRM, _expired)
    old_timer = signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_timer[0]:                       # someone else's alarm was pending: give it back what is left
            left = max(old_timer[0] - (time.monotonic() - start), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, old_timer[1])
