"""Known hosts' decline frames (``otel_sampling.rules.host_frames``), as the ending rules read them.

Each expected frame is the one its host's source sends: the MCP spec 2025-11-25 (client/sampling,
Error Handling: ``-1`` "User rejected sampling request"), the mcp SDK's
``_default_sampling_callback`` (``-32600`` "Sampling not supported"), agent-framework-core
1.23.0 / 1.26.0 ``agent_framework/_mcp.py`` (``types.INVALID_REQUEST`` with its three texts), and
VS Code's message as a server received it (PrefectHQ/fastmcp#2162). A host's own words decline;
the same words with another code (where the row names one), or other words, stay ``error``.
"""

from __future__ import annotations

import pytest

from otel_sampling import names
from otel_sampling.policy import EndingRule
from otel_sampling.rules import endings, host_frames

AGENT_FRAMEWORK_NO_CALLBACK = (
    "Sampling request denied. MCP sampling is disabled by default for untrusted servers; provide a "
    "'sampling_approval_callback' that approves the request to enable it."
)


@pytest.mark.parametrize(
    ("ending", "code", "message"),
    [
        ("user.denied", -1, "User rejected sampling request"),
        ("user.denied", -32603, "User rejected sampling request"),  # fastmcp: a raising handler's text
        ("host.unsupported", -32600, "Sampling not supported"),
        ("host.unsupported", -32600, AGENT_FRAMEWORK_NO_CALLBACK),  # agent-framework's default
        ("user.denied", -32600, "Sampling request denied by the 'sampling_approval_callback'."),
        ("policy.budget_exhausted", -32600, "Sampling rate limit exceeded for this MCP session."),
        ("user.denied", -32603, "The user has denied permission to call this method."),  # VS Code
        ("user.denied", -32600, "The user has denied permission to call this method."),
    ],
)
def test_a_known_hosts_decline_reads_as_its_decline(ending, code, message):
    got = endings.from_error_frame(code, None, message)

    assert (got.ending, got.error_type) == (ending, str(code))
    assert not endings.is_generic_frame(code, got)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (-32603, AGENT_FRAMEWORK_NO_CALLBACK),  # the row names -32600
        (-32603, "Sampling not supported"),
        (-32600, "sampling request denied by the 'sampling_approval_callback'."),  # exact text only
        (-32600, AGENT_FRAMEWORK_NO_CALLBACK + " Retry later."),
        (-32603, "Failed to get chat message content: overloaded"),  # agent-framework's provider failure
        (-32603, None),
        (-32603, 42),
    ],
)
def test_other_words_or_another_code_stay_an_error(code, message):
    assert endings.from_error_frame(code, None, message).ending == names.ENDING_ERROR


def test_the_operators_rules_come_before_the_table():
    rules = (EndingRule(ending="policy.denied", code=-32600, message_contains="sampling request denied"),)

    assert endings.from_error_frame(-32600, None, AGENT_FRAMEWORK_NO_CALLBACK, rules).ending == "policy.denied"


def test_data_reason_comes_before_the_table():
    frame = endings.from_error_frame(-32600, {"reason": "policy.denied"}, "Sampling not supported")

    assert frame.ending == "policy.denied"


def test_every_row_is_a_decline_with_a_source():
    """A row's ending is a decline (never ``completed``, never ``error``), every row says where it
    was read, and no two rows claim the same frame."""
    for frame in host_frames.KNOWN_DECLINES:
        assert frame.ending in names.ENDINGS
        assert frame.ending not in (names.ENDING_COMPLETED, names.ENDING_ERROR)
        assert frame.source.strip() and frame.host.strip() and frame.message.strip()
    keys = [(frame.message, frame.code) for frame in host_frames.KNOWN_DECLINES]
    assert len(keys) == len(set(keys))


def test_a_huge_message_is_no_decline():
    assert host_frames.decline_ending(-32600, "x" * 10_000_000) is None
