"""Host-side MCP sampling instrumentation (entry point ``otel_sampling_mcp``): one instrumentor for
mcp 2.x and 1.x, which wraps the target table of the installed mcp major.

* mcp 2.x: :mod:`~otel_sampling.instrumentation.mcp_v2` (both protocol paths: JSON-RPC and
  2026-07-28 multi-round-trip).
* mcp 1.x: :mod:`~otel_sampling.instrumentation.mcp_v1` (JSON-RPC only: mcp 1.x has no 2026-07-28
  path).

Both tables build the same host state (:class:`~otel_sampling.instrumentation._mcp_host.HostState`:
request identity, stall watch, grants, connection facts) and record through the same
:class:`~otel_sampling.records.sampling.SamplingRecord`; what differs between the majors is listed
in ``docs/telemetry.md`` ("Limits of what is observed").
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from otel_sampling.instrumentation._targets import HostTargets, Target, TargetTableInstrumentor
from otel_sampling.metrics import Instruments


class MCPSamplingInstrumentor(TargetTableInstrumentor):
    """Instruments the host side of MCP sampling in mcp 2.x and mcp 1.x, choosing the target table
    by the installed mcp major (see the module docstring).

    ``instrument(tracer_provider=None, meter_provider=None)``; providers default to the global ones.
    """

    # The versions `make test-matrix` proves (2.0 is left out: untested).
    dependencies = ("mcp >= 1.10, != 2.0.*, < 3",)

    def _table(self) -> tuple[tuple[Target, ...], Callable[[Instruments], Any]]:
        # Imported here: each table module reads its own mcp major's names.
        if _installed_mcp_major() == 1:
            from otel_sampling.instrumentation import mcp_v1 as table
        else:
            from otel_sampling.instrumentation import mcp_v2 as table  # type: ignore[no-redef]
        return table.TARGETS, table.State

    def _host_targets(self) -> tuple[HostTargets, ...]:
        # mcp 1.x has no 2026-07-28 path: no host library drives an input-required loop there.
        if _installed_mcp_major() == 1:
            return ()
        from otel_sampling.instrumentation import mcp_v2

        return mcp_v2.HOST_TARGETS


def _installed_mcp_major() -> int | None:
    try:
        return int(version("mcp").split(".", 1)[0])
    except (PackageNotFoundError, ValueError):
        return None
