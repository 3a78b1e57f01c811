"""Test helpers for otel-sampling: a fake LLM provider (``otel_sampling.testing.fake_provider``)."""
