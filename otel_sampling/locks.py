"""The locks of otel-sampling, made so that a forked child can use them.

Only the forking thread survives ``fork()``: a lock another thread of the parent held at that
moment stays held in the child, where no thread will release it. Every lock of the package is
made by :func:`new`, which remembers it (weakly); the at-fork handler of
:mod:`otel_sampling.state` calls :func:`reinit_after_fork` in the child, which makes each of them
a fresh, unlocked lock again (what the standard library's ``logging`` and ``threading`` do for
theirs). Here, below every other module, so that the rules, metrics and labels can make locks too.
"""

from __future__ import annotations

import threading
import weakref

_made: weakref.WeakSet[threading.Lock] = weakref.WeakSet()


def new() -> threading.Lock:
    """A ``threading.Lock`` that a forked child finds unlocked."""
    lock = threading.Lock()
    _made.add(lock)
    return lock


def reinit_after_fork() -> None:
    """In a forked child: every lock made by :func:`new` unlocked (never call it anywhere else:
    a lock some thread of this process holds would be taken from it)."""
    for lock in list(_made):
        reinit = getattr(lock, "_at_fork_reinit", None)  # CPython >= 3.9: what the stdlib calls for its own
        if reinit is not None:
            reinit()
        elif lock.locked():
            lock.release()  # a Lock (unlike an RLock) may be released by any thread
