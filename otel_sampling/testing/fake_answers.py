"""What the fake provider's tool calls and JSON answers hold, the same for every API it speaks
(scenarios ``tool``, ``tool_name=``, ``tool_args=``, ``json=``: ``fake_provider.SCENARIOS``)."""

from __future__ import annotations

import json

BAD_JSON = '{"city": "Par'  # a cut object: not JSON
TOOL_ARGUMENTS: dict[str, object] = {"missing": {}, "wrong_type": {"city": 42}, "bad_json": BAD_JSON}
JSON_TEXTS = {"valid": '{"city": "Paris"}', "bad_json": BAD_JSON, "mismatch": '{"town": 42}'}


def tool_call(sc: dict[str, str]) -> tuple[str, object]:
    """The name and arguments (an object, or ``BAD_JSON`` text) of the scenario's tool call."""
    return sc.get("tool_name") or "get_weather", TOOL_ARGUMENTS.get(sc.get("tool_args", ""), {"city": "Paris"})


def arguments_text(arguments: object) -> str:
    """The arguments as an API that sends them as text sends them (openai's ``arguments``)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)
