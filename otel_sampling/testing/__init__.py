"""Testing aids for users of otel-sampling: a fake LLM provider (``otel_sampling.testing.fake_provider``,
``python -m otel_sampling.testing.fake_provider --help``)."""
