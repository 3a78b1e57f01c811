"""Provider call endings and the failover memory, as pure functions (docs/telemetry.md
"Provider call endings"), over the real SDK exception classes."""

from __future__ import annotations

import asyncio

import anthropic
import httpx2
import pytest

from otel_sampling import names
from otel_sampling.records.failover import MAX_FAILOVER_PARENTS, FailoverTracker
from otel_sampling.rules.endings import ending_of, failure_of
from otel_sampling.rules.values import Response, Usage

TIMEOUTS = (anthropic.APITimeoutError, httpx2.TimeoutException)
CONNECTIONS = (anthropic.APIConnectionError, httpx2.TransportError)
REQUEST = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")


def status_error(status: int, body: object) -> anthropic.APIStatusError:
    response = httpx2.Response(status, request=REQUEST, json=body)
    return anthropic.Anthropic(api_key="k")._make_status_error_from_response(response)


@pytest.mark.parametrize(("exc", "expected"), [
    (asyncio.CancelledError(), ("cancelled", "cancelled")),
    (anthropic.APITimeoutError(request=REQUEST), ("timeout", "timeout")),
    (httpx2.ReadTimeout("read"), ("timeout", "timeout")),
    (anthropic.APIConnectionError(request=REQUEST), ("connection_error", "model.unavailable")),
    (httpx2.RemoteProtocolError("dropped"), ("connection_error", "model.unavailable")),
    (status_error(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
     ("overloaded_error", "model.unavailable")),
    (status_error(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
     ("rate_limit_error", "model.unavailable")),
    (status_error(503, "upstream down"), ("503", "model.unavailable")),  # a non-JSON body: the status
    (status_error(408, {"type": "error", "error": {"type": "timeout_error", "message": "t"}}),
     ("timeout_error", "timeout")),
    (status_error(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}),
     ("invalid_request_error", "error")),
    (ValueError("ours"), ("ValueError", "error")),
])
def test_failure_of(exc, expected):
    assert tuple(failure_of(exc, TIMEOUTS, CONNECTIONS)) == expected


@pytest.mark.parametrize(("reasons", "ending"), [(("end_turn",), "completed"), (("refusal",), "refused"),
                                                   (("content_filter",), "refused"), ((), "completed")])
def test_ending_of_a_response(reasons, ending):
    assert ending_of(Response("m", None, reasons, Usage()), None) == ending


def test_ending_of_a_failure_without_exception_is_error():
    assert ending_of(None, names.ERROR_TYPE_INCOMPLETE_STREAM) == "error"


def test_failover_needs_another_model_under_the_same_parent():
    tracker = FailoverTracker()
    parent, other = (1, 1), (1, 2)
    assert not tracker.observe(parent, "primary", failed=True)
    assert not tracker.observe(parent, "primary", failed=False)  # a retry on the same model
    assert not tracker.observe(other, "fallback", failed=False)  # another parent
    assert tracker.observe(parent, "fallback", failed=False)
    assert not tracker.observe(None, "fallback", failed=False)  # no parent span: nothing to relate


def test_failover_memory_is_bounded():
    tracker = FailoverTracker()
    for i in range(3 * MAX_FAILOVER_PARENTS):
        tracker.observe((0, i), "primary", failed=True)
    assert len(tracker._by_parent) == MAX_FAILOVER_PARENTS
    assert not tracker.observe((0, 0), "fallback", failed=False)  # the oldest was forgotten
    assert tracker.observe((0, 3 * MAX_FAILOVER_PARENTS - 1), "fallback", failed=False)
