"""The effort an anthropic Messages request asks for (``otel_sampling.instrumentation.anthropic.effort_of``),
as :mod:`otel_sampling.rules.effort` compares it: ``thinking`` is ``{"type": "enabled", "budget_tokens": n}``
or ``{"type": "disabled"}`` (off when absent), ``output_config.effort`` a level (Anthropic's
"Extended thinking" and "Effort" pages)."""

from __future__ import annotations

import pytest
from anthropic._types import NOT_GIVEN, omit

from otel_sampling.instrumentation.anthropic import effort_of


class TestAnthropicEffort:
    @pytest.mark.parametrize(
        ("thinking", "level", "effort"),
        [
            ({"type": "enabled", "budget_tokens": 4096}, None, 4096),
            ({"type": "enabled", "budget_tokens": 4096}, "high", 4096),  # the budget is what is cut
            ({"type": "disabled"}, None, 0),
            (None, None, 0),  # extended thinking is off unless enabled
            (None, "low", "low"),
            ({"type": "disabled"}, "medium", "medium"),
            ({"type": "adaptive"}, None, None),  # the model decides the budget
            ({"type": "enabled", "budget_tokens": "4096"}, None, None),  # unreadable
            ({"type": "enabled", "budget_tokens": True}, None, None),
            (omit, None, 0),  # left out: the SDK's sentinel, not asked for
            (NOT_GIVEN, None, 0),
            ("x", None, None),  # not an object (the API takes only one): unreadable, not "off"
            ("x", "low", "low"),
        ],
    )
    def test_a_messages_requests_effort(self, thinking, level, effort):
        assert effort_of(thinking, level) == effort
