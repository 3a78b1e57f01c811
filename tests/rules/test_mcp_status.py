"""MCP span status by JSON-RPC code (``model/mcp/common.yaml``, ``mcp.server.status.attributes`` and
``mcp.client.status.attributes``): the receiver does not count a request it could not serve as its
own error; the sender counts every error code."""

from __future__ import annotations

import pytest

from otel_sampling.rules.mcp_status import RECEIVER_NOT_ERRORS, receiver_failed, sender_failed


def test_the_codes_the_conventions_list():
    # "-32700 (Parse error), -32600 (Invalid Request), -32601 (Method not found), -32602 (Invalid
    # params), -32002 (Resource not found) ... SHOULD NOT be considered errors"
    assert frozenset({"-32700", "-32600", "-32601", "-32602", "-32002"}) == RECEIVER_NOT_ERRORS


@pytest.mark.parametrize("code", sorted(RECEIVER_NOT_ERRORS))
def test_the_receiver_is_not_in_error_for_a_request_it_could_not_serve(code):
    assert not receiver_failed("host.unsupported", code)


@pytest.mark.parametrize(("error_type", "code"), [("user.denied", "-1"), ("host.error", "-32603"), ("timeout", None)])
def test_the_receiver_is_in_error_for_any_other_code_or_a_failure_without_one(error_type, code):
    assert receiver_failed(error_type, code)


def test_a_completed_request_is_no_error_on_either_side():
    assert not receiver_failed(None, None)
    assert not sender_failed(None, None)


@pytest.mark.parametrize("code", ["-32600", "-32602", "-1", "-32603"])
def test_the_sender_is_in_error_for_every_code(code):
    assert sender_failed(None, code)
    assert sender_failed("host.unsupported", code)
