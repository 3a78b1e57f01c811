"""Pure decisions over plain values: no OpenTelemetry, no process-wide state, no I/O."""
