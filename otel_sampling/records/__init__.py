"""Records: one object per request, provider call or run, owning its span, metric points and ending,
and the bounded stores they consult (request identity, the host ledger, the stall watch, failover
memory)."""
