"""The one bound the tests put on waiting for another process, a server or a thread.

A busy machine is slow, never wrong: a wait in a test bounds a hang, never a duration. ``HANG_S``
is the bound of every such wait (a subprocess, a server becoming ready, a scrape, a thread's
join); it stays under the suite's per-test timeout (``timeout`` in pyproject.toml's pytest
options, 1800 s) so that the wait's own error, which names what hung, is the one reported.
"""

HANG_S = 1500.0
