"""Records: one object per request, provider call or run, owning its span, metric points and ending."""
