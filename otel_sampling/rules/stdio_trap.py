"""Does a process that serves MCP over stdio export telemetry into its own wire? Pure rules.

A stdio server's stdout is the JSON-RPC connection to its host (MCP spec 2025-11-25, basic/
transports, stdio: "The server MUST NOT write anything to its stdout that is not a valid MCP
message"). A server that runs the host's OpenTelemetry set-up (a host under
``opentelemetry-instrument`` that passes its own environment on: ``PYTHONPATH`` with the
``sitecustomize`` of opentelemetry-instrumentation, and ``OTEL_*``) collides with it in two ways:

* **stdout**: an exporter that writes to stdout (the SDK's console exporters) puts its output
  between the messages;
* **prometheus**: the Prometheus exporter listens on ``OTEL_EXPORTER_PROMETHEUS_HOST``:``_PORT``,
  the host's own endpoint when the environment is the host's.

Both only matter when stdout really is a connection: a pipe (POSIX hosts such as mcp's
``stdio_client`` spawn the server with pipes) or a socket (libuv hosts, Node.js among them, spawn
it with a socketpair); never a terminal, a file or a device.

An exporter writes to stdout when one attached to the SDK provider of its signal does (the
caller's reading of the provider: True or False); when the provider could not be read (None),
when ``OTEL_<SIGNAL>_EXPORTER`` names ``console``. Exporter names are read as the SDK's
configurator reads them (opentelemetry-sdk ``_configuration._get_exporter_names``): a
comma-separated list of entry point names, each stripped; a value that is ``none`` in any case
names none. ``OTEL_SDK_DISABLED`` is ``true`` in any case, around blanks, or false (the SDK's
providers read it so), and a disabled SDK exports nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple

# What the process's stdout (fd 1) is.
TTY: Final = "tty"
PIPE: Final = "pipe"
SOCKET: Final = "socket"
FILE: Final = "file"
DEVICE: Final = "device"
OTHER: Final = "other"
CLOSED: Final = "closed"
#: The kinds of stdout that carry an MCP stdio connection.
WIRES: Final = frozenset({PIPE, SOCKET})

#: The signals, in the order a collision names them.
SIGNALS: Final = ("traces", "metrics", "logs")
CONSOLE: Final = "console"
PROMETHEUS: Final = "prometheus"


class Collisions(NamedTuple):
    """What collides with the stdio wire: the signals exported to stdout (in :data:`SIGNALS`
    order), and whether the Prometheus exporter is configured."""

    stdout: tuple[str, ...] = ()
    prometheus: bool = False


NONE: Final = Collisions()


def exporter_names(value: str | None) -> tuple[str, ...]:
    """The exporter names in an ``OTEL_<SIGNAL>_EXPORTER`` value, in order (empty: unset or ``none``)."""
    if not value or value.lower().strip() == "none":
        return ()
    return tuple(name.strip() for name in value.split(","))


def sdk_disabled(value: str | None) -> bool:
    """True when ``OTEL_SDK_DISABLED`` (``value``, None when unset) turns the SDK off."""
    return value is not None and value.lower().strip() == "true"


def exports_to_stdout(configured: str | None, attached: bool | None) -> bool:
    """Whether one signal is exported to stdout: the attached exporters decide when they could be
    read (``attached`` True or False); else the configured names (``configured``: the
    ``OTEL_<SIGNAL>_EXPORTER`` value) do."""
    if attached is not None:
        return attached
    return CONSOLE in exporter_names(configured)


def collisions(
    stdout: str, configured: Mapping[str, str | None], attached: Mapping[str, bool | None], disabled: str | None
) -> Collisions:
    """What collides with an MCP stdio server's wire (see the module docstring).

    Args:
        stdout: the kind of the process's stdout (:data:`TTY`, :data:`PIPE`, ...).
        configured: signal (:data:`SIGNALS`) -> its ``OTEL_<SIGNAL>_EXPORTER`` value (missing or
            None: unset).
        attached: signal -> whether an exporter attached to its SDK provider writes to stdout
            (missing or None: the provider could not be read).
        disabled: the ``OTEL_SDK_DISABLED`` value (None: unset).
    """
    if stdout not in WIRES or sdk_disabled(disabled):
        return NONE
    return Collisions(
        stdout=tuple(signal for signal in SIGNALS if exports_to_stdout(configured.get(signal), attached.get(signal))),
        prometheus=PROMETHEUS in exporter_names(configured.get("metrics")),
    )
