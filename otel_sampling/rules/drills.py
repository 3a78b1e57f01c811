"""Drill windows: when a scheduled drill (``[[drills]]`` in the policy file) is running.

A schedule is ``start`` (an aware instant), ``duration`` seconds and, optionally, ``every``
seconds: the windows are ``[start + k * every, start + k * every + duration)`` for k = 0, 1, 2, ...
(only k = 0 without ``every``). A window is half-open: at its end the drill is over. ``every``
is at least ``duration`` (the policy loader checks it), so windows never overlap.
"""

from __future__ import annotations

import datetime as dt
import math


def window_at(
    start: dt.datetime, duration: float, every: float | None, now: dt.datetime
) -> tuple[dt.datetime, dt.datetime] | None:
    """The window ``(begins, ends)`` that holds ``now``, or None when ``now`` is in none.

    Args:
        start: the first window's beginning (aware).
        duration: seconds each window lasts (> 0).
        every: seconds between two windows' beginnings (>= ``duration``), or None: one window.
        now: the instant asked about (aware).
    """
    elapsed = (now - start).total_seconds()
    if elapsed < 0:
        return None
    index = math.floor(elapsed / every) if every else 0
    begins = start + dt.timedelta(seconds=index * every) if every else start
    ends = begins + dt.timedelta(seconds=duration)
    return (begins, ends) if begins <= now < ends else None
