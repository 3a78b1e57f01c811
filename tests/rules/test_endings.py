"""How a sampling request or a provider call ended (``otel_sampling.rules.endings``).

Expected endings come from the MCP spec 2025-11-25 (client/sampling: code ``-1`` "User rejected
sampling request"), the MCP spec 2026-07-28 ("Error Codes": a code it does not define lies outside
JSON-RPC's reserved ``-32768..-32000``, so the policy refusal code is ``-31003`` by default), the
mcp SDK (``REQUEST_TIMEOUT = -32001``; a cancel reason ``timed out after {t}s``), the provider
SDKs' own exception classes and error bodies, and the tables of ``docs/telemetry.md`` ("Ending
rules", "Provider ``error.type`` values", "Provider call endings"). Every classifier is also total:
whatever a peer sends, one ending from ``names.ENDINGS``, never an exception.

Span status: MCP span status by JSON-RPC code (``model/mcp/common.yaml``, ``mcp.server.status.attributes`` and
``mcp.client.status.attributes``): the receiver does not count a request it could not serve as its
own error; the sender counts every error code.
"""

from __future__ import annotations

import asyncio
import sys

import anthropic
import anyio
import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import codes, exceptions, frame_data, hostile_text, json_leaf, json_value, stop_reasons
from otel_sampling import names
from otel_sampling.policy import EndingRule
from otel_sampling.rules import endings
from otel_sampling.rules.endings import (
    RECEIVER_NOT_ERRORS,
    answer_ending,
    error_type_of,
    failure_of,
    fallback_failure,
    receiver_failed,
    sender_failed,
)
from otel_sampling.rules.values import Ending, Failure, ProviderCalls, Response, Usage

try:
    from mcp import MCPError  # mcp 2.x; mcp 1.x names it McpError and builds it from an ErrorData
except ImportError:  # pragma: no cover - the mcp 1.x matrix cells
    MCPError = None
needs_mcp2 = pytest.mark.skipif(MCPError is None, reason="mcp 2.x's MCPError")

if sys.version_info < (3, 11):  # anyio brings the backport there
    from exceptiongroup import ExceptionGroup

#: The policy file's ``[[ending_rules]]`` of a host whose denials use their own code and message.
HOST_RULES = (
    EndingRule(ending="policy.budget_exhausted", code=-32099),
    EndingRule(ending="policy.denied", message_contains="QUOTA"),
)
ending_rules = st.lists(
    st.builds(
        EndingRule,
        ending=st.sampled_from([e for e in names.ENDINGS if e != "completed"]),
        code=st.none() | codes,
        message_contains=st.none() | hostile_text,
    ),
    max_size=3,
)


class TestErrorFrames:
    """``from_error_frame``: an ``ErrorData`` returned, or the frame of an ``MCPError`` raised."""

    @pytest.mark.parametrize(
        ("ending", "code", "data"),
        [
            # 1. data.reason is itself an ending other than completed: that ending
            ("policy.budget_exhausted", -32003, {"reason": "policy.budget_exhausted"}),
            ("model.unavailable", -32603, {"reason": "model.unavailable"}),  # whatever the code
            ("error", -32603, {"reason": "completed"}),  # an error frame is never a completion
            # 2. code -1 (MCP spec: user rejected sampling request)
            ("user.denied", -1, None),
            ("user.denied", -1, {"reason": "policy:pii"}),  # not an ending: the code decides
            # 3. the policy refusal code (default -31003), or -32003, the code hosts sent before
            ("policy.denied", -31003, None),
            ("policy.denied", -31003, {"reason": "something-else"}),
            ("policy.denied", -32003, None),
            ("policy.denied", -32003, {"reason": "something-else"}),
            ("policy.denied", -32003, "not a mapping"),
            # 4. code -32001 (mcp REQUEST_TIMEOUT)
            ("timeout", -32001, None),
            # 5. anything else
            ("error", 0, None),
            ("error", -32600, None),
        ],
    )
    def test_the_first_matching_rule_decides(self, ending, code, data):
        """The "Ending rules" table, first match wins; ``error.type`` is the code as a string."""
        got = endings.from_error_frame(code, data)

        assert (ending, str(code)) == (got.ending, got.error_type)

    @pytest.mark.parametrize(
        ("ending", "code", "message"),
        [
            # the MCP spec's rejection text, whatever the code: fastmcp sends a handler's refusal as -32603
            ("user.denied", -32603, "User rejected sampling request"),
            ("user.denied", -32000, "User rejected sampling request"),
            ("user.denied", -1, "User rejected sampling request"),
            ("error", -32603, "user rejected the request"),  # another text: a generic failure
            # the mcp SDK's default answer without a sampling callback (1.x and 2.x): -32600 "Sampling not supported"
            ("host.unsupported", -32600, "Sampling not supported"),
            ("error", -32603, "Sampling not supported"),  # the text with another code is not the SDK's answer
            ("error", -32600, "Invalid request"),
            ("error", -32603, None),
        ],
    )
    def test_the_spec_and_sdk_texts_decide_before_the_codes(self, ending, code, message):
        """Rules 3 and 4: the spec's rejection text (any code), the SDK's "not supported" answer."""
        got = endings.from_error_frame(code, None, message)

        assert (ending, str(code)) == (got.ending, got.error_type)

    def test_data_reason_and_host_rules_come_before_the_texts(self):
        """Rules 1 and 2 still come first."""
        assert (
            "policy.denied"
            == endings.from_error_frame(-32603, {"reason": "policy.denied"}, "User rejected sampling request").ending
        )
        rules = (EndingRule(ending="policy.denied", message_contains="rejected"),)
        assert "policy.denied" == endings.from_error_frame(-32603, None, "User rejected sampling request", rules).ending

    @pytest.mark.parametrize(
        ("generic", "code", "message"),
        [
            (True, -32603, "Error code: 503 - fake server_error (503)"),  # fastmcp: an exception's text
            (False, -32603, "User rejected sampling request"),  # a decline, not a failure
            (True, -32603, None),
            (False, -32602, "Invalid request parameters"),
            (False, -1, "User rejected sampling request"),
        ],
    )
    def test_a_generic_frame_is_an_internal_error_read_as_error(self, generic, code, message):
        """``is_generic_frame``: ``-32603`` (JSON-RPC 2.0 Internal error) that no rule named."""
        assert generic is endings.is_generic_frame(code, endings.from_error_frame(code, None, message))

    @pytest.mark.parametrize(
        ("ending", "code", "data", "message"),
        [
            ("policy.budget_exhausted", -32099, None, "over budget"),  # a host rule by code
            ("policy.denied", -32000, None, "monthly quota hit"),  # by message, case-insensitive
            ("user.denied", -32099, {"reason": "user.denied"}, "x"),  # data.reason still comes first
            ("user.denied", -1, None, "User rejected"),  # the built-in rules come after the host's
        ],
    )
    def test_host_rules_come_after_data_reason_and_before_the_built_in_codes(self, ending, code, data, message):
        """Rule 1b: the policy file's ``[[ending_rules]]``, in file order."""
        assert ending == endings.from_error_frame(code, data, message, HOST_RULES).ending

    def test_the_first_host_rule_in_file_order_wins(self):
        """Two rules matching one frame: the one earlier in the file decides."""
        rules = (EndingRule(ending="policy.denied", code=-32099), EndingRule(ending="timeout", code=-32099))

        assert "policy.denied" == endings.from_error_frame(-32099, None, "x", rules).ending

    def test_a_configured_refusal_code_replaces_the_default_and_the_legacy_code_stays(self):
        """Rule 3 with ``OTEL_SAMPLING_POLICY_REFUSAL_CODE=4003``: 4003 and -32003 are policy
        refusals; the default -31003 is then just another code."""
        assert "policy.denied" == endings.from_error_frame(4003, None, refusal_code=4003).ending
        assert "policy.denied" == endings.from_error_frame(-32003, None, refusal_code=4003).ending
        assert ("error", "-31003") == endings.from_error_frame(-31003, None, refusal_code=4003)[:2]

    @needs_mcp2
    def test_a_raised_frame_is_read_with_the_configured_refusal_code(self):
        assert "policy.denied" == endings.from_exception(MCPError(4003, "Denied"), refusal_code=4003).ending

    def test_resets_at_is_read_from_data(self):
        """``data.resetsAt`` is kept when it is a string, else dropped."""
        got = endings.from_error_frame(
            -32003, {"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01T00:00:00Z"}
        )

        assert "2026-12-01T00:00:00Z" == got.resets_at
        assert None is endings.from_error_frame(-32003, {"resetsAt": 12}).resets_at

    @settings(max_examples=500)
    @given(code=codes | json_leaf, data=frame_data, message=json_leaf, rules=ending_rules)
    def test_every_frame_gets_one_ending_and_never_completed(self, code, data, message, rules):
        """However malformed the frame and whatever the host's rules: one ending, never
        ``completed``, and ``error.type`` always set (MCP semantic conventions: the code)."""
        got = endings.from_error_frame(code, data, message, rules)

        assert got.ending in names.ENDINGS and got.ending != names.ENDING_COMPLETED
        assert str(code) == got.error_type
        assert got.resets_at is None or isinstance(got.resets_at, str)


class TestStatusCodes:
    """``rpc.response.status_code`` (MCP semconv: conditionally required when the answer carries
    an error code): the code as a string, as the mcp SDK's own spans write it."""

    def test_an_integer_code_is_its_string_and_nothing_else_is_a_code(self):
        assert ("-32602", "0", "4003") == tuple(endings.status_code(c) for c in (-32602, 0, 4003))
        assert [None] * 4 == [endings.status_code(c) for c in (None, True, "-1", 1.0)]

    @needs_mcp2
    def test_a_raised_frame_is_the_answer_and_the_sdks_own_failures_are_not(self):
        """On the server side an ``MCPError`` is the client's answer, unless the SDK raised it
        itself: REQUEST_TIMEOUT -32001, CONNECTION_CLOSED -32000, ``NoBackChannelError``."""
        from mcp.shared.exceptions import NoBackChannelError

        assert -1 == endings.answered_code(MCPError(-1, "User rejected sampling request"))
        assert -32003 == endings.frame_code(ExceptionGroup("g", [MCPError(-32003, "Denied")]))
        assert None is endings.answered_code(MCPError(-32001, "Request 'sampling/createMessage' timed out"))
        assert None is endings.answered_code(MCPError(-32000, "Connection closed"))
        assert None is endings.answered_code(NoBackChannelError("sampling/createMessage"))
        assert None is endings.frame_code(RuntimeError("x"))


class TestResults:
    """``from_result``: a ``CreateMessageResult`` by its ``stopReason`` (an open string in MCP)."""

    @pytest.mark.parametrize(
        ("ending", "stop_reason"),
        [
            ("completed", "endTurn"),
            ("completed", "maxTokens"),
            ("completed", "toolUse"),
            ("completed", None),
            ("refused", "refusal"),
            ("refused", "content_filter"),
        ],
    )
    def test_a_result_is_completed_unless_the_model_refused(self, ending, stop_reason):
        """``refusal`` (anthropic) and ``content_filter`` (openai) say the model declined."""
        assert ending == endings.from_result(stop_reason).ending

    @settings(max_examples=300)
    @given(stop_reason=stop_reasons | json_value)
    def test_every_result_is_completed_or_refused(self, stop_reason):
        """Any stopReason: ``refused`` for the two refusal reasons, else ``completed``; no error.type."""
        got = endings.from_result(stop_reason)

        assert (
            names.ENDING_REFUSED if stop_reason in ("refusal", "content_filter") else names.ENDING_COMPLETED
        ) == got.ending
        assert None is got.error_type


class TestCancellations:
    """``from_cancellation`` by the peer's ``notifications/cancelled`` reason; ``is_cancellation``."""

    @pytest.mark.parametrize(
        ("ending", "reason"),
        [
            ("timeout", "timed out after 0.5s"),  # mcp SDK: jsonrpc_dispatcher "timed out after {t}s"
            ("timeout", "Request timeout"),
            ("cancelled", "caller cancelled"),
            ("cancelled", None),
        ],
    )
    def test_a_cancel_that_says_it_timed_out_is_a_timeout(self, ending, reason):
        """A reason mentioning a timeout: ``timeout``; any other cancel: ``cancelled``."""
        assert ending == endings.from_cancellation(reason).ending

    @settings(max_examples=300)
    @given(reason=st.none() | hostile_text)
    def test_every_cancellation_is_timeout_or_cancelled(self, reason):
        """Whatever the peer writes as the reason."""
        assert endings.from_cancellation(reason).ending in (names.ENDING_TIMEOUT, names.ENDING_CANCELLED)

    def test_task_cancellation_is_recognised(self):
        """asyncio's ``CancelledError``, and anyio's cancellation on asyncio, are cancellations;
        a ``TimeoutError`` or a ``KeyboardInterrupt`` is not."""

        async def anyio_cancelled() -> BaseException:
            return anyio.get_cancelled_exc_class()()

        assert endings.is_cancellation(asyncio.CancelledError())
        assert endings.is_cancellation(anyio.run(anyio_cancelled))
        assert not endings.is_cancellation(TimeoutError())
        assert not endings.is_cancellation(KeyboardInterrupt())


class TestExceptions:
    """``from_exception``: what a sampling callback raised, not a cancellation."""

    def test_an_exception_that_is_not_an_mcp_error_is_error_with_its_class_name(self):
        """``error`` with the qualified class name as ``error.type`` (builtins unqualified)."""
        assert ("error", "RuntimeError", None) == endings.from_exception(RuntimeError("x"))
        assert "TimeoutError" == endings.from_exception(asyncio.TimeoutError()).error_type

    def test_an_exception_with_the_spec_rejection_text_is_a_user_denial(self):
        """mcp sends a raising callback's text as the frame's message (``MCPError(INTERNAL_ERROR, str(e))``):
        a host that declines by raising with the spec's text declined."""
        assert ("user.denied", "RuntimeError", None) == endings.from_exception(
            RuntimeError("User rejected sampling request")
        )
        assert "error" == endings.from_exception(RuntimeError("User rejected sampling request", 1)).ending

    @pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(1)])
    def test_keyboard_interrupt_and_system_exit_are_errors(self, exc):
        """They end the request as ``error`` too (docs/telemetry.md "Ending rules")."""
        assert "error" == endings.from_exception(exc).ending

    @needs_mcp2
    def test_an_mcp_error_is_classified_by_its_frame(self):
        """The SDK sends the raised ``MCPError``'s frame on the wire: the frame rules read it."""
        got = endings.from_exception(MCPError(-1, "User rejected sampling request"))

        assert ("user.denied", "-1") == (got.ending, got.error_type)

    @needs_mcp2
    def test_a_group_of_one_mcp_error_is_classified_by_its_frame(self):
        """anyio task groups wrap what a callback raised (the mcp 2026-07-28 input-required driver)."""
        group = ExceptionGroup(
            "unhandled errors in a TaskGroup",
            [MCPError(-32003, "Daily limit", data={"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01"})],
        )

        assert Ending("policy.budget_exhausted", "-32003", "2026-12-01") == endings.from_exception(group)

    def test_nested_groups_of_one_are_classified_by_the_innermost(self):
        """Groups of one inside groups of one: the one exception inside."""
        group = ExceptionGroup("g", [ExceptionGroup("h", [ValueError("x")])])

        assert ("error", "ValueError", None) == endings.from_exception(group)

    def test_a_group_of_several_is_an_error_of_the_group(self):
        """A group holding more than one exception is not one of them."""
        group = ExceptionGroup("g", [ValueError("x"), KeyError("y")])

        assert ("error", "ExceptionGroup", None) == endings.from_exception(group)

    @needs_mcp2
    @settings(max_examples=500)
    @given(exc=exceptions, rules=ending_rules)
    def test_every_exception_gets_one_ending(self, exc, rules):
        """Any exception or group, any host rules: one ending, never ``completed``, an error.type."""
        got = endings.from_cancellation(None) if endings.is_cancellation(exc) else endings.from_exception(exc, rules)

        assert got.ending in names.ENDINGS and got.ending != names.ENDING_COMPLETED
        assert isinstance(got.error_type, str) and got.error_type


OVERLOADED = Ending("model.unavailable", "overloaded_error")  # anthropic 529, the SDK's OverloadedError
TIMED_OUT = Ending("timeout", "timeout")  # an SDK's APITimeoutError
REFUSED_CALL = Ending("refused")  # anthropic stop_reason refusal / openai finish_reason content_filter
ANSWERED = Ending("completed")


def calls(*ended: Ending) -> ProviderCalls:
    """The provider calls of one callback, in order."""
    seen = ProviderCalls()
    for call in ended:
        seen = seen.after(call)
    return seen


def happened(told: Ending, *ended: Ending, result: bool = False, generic: bool = False) -> Ending:
    return endings.from_what_happened(endings.Happened(told, result, generic, calls(*ended)))


class TestWhatHappened:
    """``from_what_happened``: the ending from the provider calls inside the callback, when the
    frame is a host's generic failure or the result hides what the calls did (the rows of
    ``WHAT_HAPPENED``, docs/telemetry.md "Ending rules")."""

    @pytest.mark.parametrize(
        ("ending", "last"),
        [
            (OVERLOADED, OVERLOADED),  # fastmcp: -32603 "Error code: 529 ..." after a 529
            (Ending("timeout", "-32603"), TIMED_OUT),
            (Ending("refused", "-32603"), REFUSED_CALL),  # a host that raises on a refusal
        ],
    )
    def test_a_generic_frame_after_a_failed_call_ends_as_that_call(self, ending, last):
        """Row a: the call's ending; ``error.type`` stays the frame's code."""
        frame = Ending("error", "-32603")
        got = happened(frame, ANSWERED, last, generic=True)

        assert (ending.ending, "-32603") == (got.ending, got.error_type)

    def test_a_raised_exception_after_a_failed_call_ends_as_that_call(self):
        """Row a, an exception the rules read as ``error`` (langchain's on mcp 1.x): its class stays ``error.type``."""
        got = happened(Ending("error", "anthropic.OverloadedError"), OVERLOADED, OVERLOADED, generic=True)

        assert Ending("model.unavailable", "anthropic.OverloadedError") == got

    def test_a_generic_frame_after_a_successful_call_is_the_hosts_own_failure(self):
        """The last call answered: the host failed after it, the frame's ending stays."""
        frame = Ending("error", "-32603")
        assert frame == happened(frame, OVERLOADED, ANSWERED, generic=True)

    def test_a_frame_that_says_what_happened_is_kept(self):
        """A decline, a timeout, a frame naming its reason: not generic, whatever the calls did."""
        for frame in (Ending("user.denied", "-1"), Ending("model.unavailable", "-32603"), Ending("error", "-32602")):
            assert frame == happened(frame, OVERLOADED)

    def test_a_result_while_every_call_failed_ends_as_the_last_failure(self):
        """Row b: a host that turned the failure into assistant text with endTurn."""
        assert TIMED_OUT == happened(endings.COMPLETED, OVERLOADED, TIMED_OUT, result=True)

    def test_a_result_produced_by_a_refused_call_is_refused(self):
        """Row c: pydantic-ai reports no stopReason, fastmcp maps content_filter to endTurn."""
        assert endings.REFUSED == happened(endings.COMPLETED, REFUSED_CALL, result=True)
        assert endings.REFUSED == happened(endings.COMPLETED, OVERLOADED, REFUSED_CALL, result=True)

    def test_a_result_produced_by_an_answer_after_a_refusal_is_completed(self):
        """The host tried another model after a refusal and that one answered: its result."""
        assert endings.COMPLETED == happened(endings.COMPLETED, REFUSED_CALL, ANSWERED, result=True)

    def test_without_provider_calls_the_frame_decides(self):
        frame = Ending("error", "-32603")
        assert frame == happened(frame, generic=True)
        assert endings.COMPLETED == happened(endings.COMPLETED, result=True)

    def test_the_rules_table_is_the_documented_one(self):
        """Three rows, in the documented order."""
        assert [rule.name for rule in endings.WHAT_HAPPENED] == [
            "a generic failure after a provider call that failed or was refused",
            "a result while every provider call failed",
            "a completed result produced by a refused provider call",
        ]


class TestQualifiedName:
    """``qualified_name``: the general OTel ``error.type`` form of an exception class."""

    @needs_mcp2
    def test_module_and_qualified_name(self):
        """``module.QualName``, as the mcp SDK defines ``MCPError``."""
        assert "mcp.shared.exceptions.MCPError" == endings.qualified_name(MCPError)

    def test_builtins_are_unqualified(self):
        """A builtin exception is its bare name."""
        assert "ValueError" == endings.qualified_name(ValueError)


class TestFinishReasons:
    """``finish_reasons``: ``gen_ai.response.finish_reasons`` from one stop reason."""

    @pytest.mark.parametrize(
        ("reasons", "stop_reason"),
        [
            (("endTurn",), "endTurn"),
            ((), None),
            ((), ""),
            ((), 3),
        ],
    )
    def test_one_reason_or_none(self, reasons, stop_reason):
        """A non-empty string is the one reason; anything else gives none."""
        assert reasons == endings.finish_reasons(stop_reason)


class TestOrFallback:
    """``or_fallback``: a request whose ending cannot be classified still ends."""

    def test_the_classification_when_it_works(self):
        """The classifier's answer, from the arguments given."""
        assert Ending("refused") == endings.or_fallback(endings.from_result, endings.COMPLETED, "refusal")

    def test_the_fallback_when_classifying_raises(self):
        """A broken ending rule (or a hostile value) gives the fallback, not an exception."""

        class Broken(EndingRule):
            def matches(self, code, message):
                raise RuntimeError("broken rule")

        fallback = Ending("error", "-32099")

        assert fallback == endings.or_fallback(
            endings.from_error_frame, fallback, -32099, None, "x", (Broken(ending="policy.denied", code=-32099),)
        )


# ---------------------------------------------------------------- provider calls
ANTHROPIC_REQUEST = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")
OPENAI_REQUEST = httpx2.Request("POST", "https://api.openai.com/v1/chat/completions")
# What each provider's instrumentor passes (instrumentation/_provider.py): the SDK's classes, raw httpx2 errors.
TIMEOUTS = (anthropic.APITimeoutError, httpx2.TimeoutException)
CONNECTIONS = (anthropic.APIConnectionError, httpx2.TransportError)
OPENAI_TIMEOUTS = (openai.APITimeoutError, httpx2.TimeoutException)
OPENAI_CONNECTIONS = (openai.APIConnectionError, httpx2.TransportError)
OPENAI_ENVELOPE = ("code", "type")


def anthropic_status_error(status: int, body: object) -> anthropic.APIStatusError:
    """The exception the anthropic SDK raises for an HTTP ``status`` answer with JSON ``body``."""
    response = httpx2.Response(status, request=ANTHROPIC_REQUEST, json=body)
    return anthropic.Anthropic(api_key="k")._make_status_error_from_response(response)


def anthropic_envelope(status: int, error_type: str) -> anthropic.APIStatusError:
    """An anthropic error envelope (``{"type": "error", "error": {"type": ..., "message": ...}}``)."""
    return anthropic_status_error(status, {"type": "error", "error": {"type": error_type, "message": "m"}})


def openai_status_error(status: int, error: dict) -> openai.APIStatusError:
    """The exception the openai SDK raises for an HTTP ``status`` answer with ``{"error": error}``."""
    response = httpx2.Response(status, request=OPENAI_REQUEST, json={"error": error})
    return openai.OpenAI(api_key="k")._make_status_error_from_response(response)


class TestProviderFailures:
    """``failure_of``: ``error.type`` and ending of a provider SDK exception (docs/telemetry.md
    "Provider ``error.type`` values" and "Provider call endings")."""

    @pytest.mark.parametrize(
        ("expected", "exc"),
        [
            (("cancelled", "cancelled"), asyncio.CancelledError()),
            (("timeout", "timeout"), anthropic.APITimeoutError(request=ANTHROPIC_REQUEST)),
            (("timeout", "timeout"), httpx2.ReadTimeout("read")),
            (("connection_error", "model.unavailable"), anthropic.APIConnectionError(request=ANTHROPIC_REQUEST)),
            (("connection_error", "model.unavailable"), httpx2.RemoteProtocolError("dropped")),
            (("overloaded_error", "model.unavailable"), anthropic_envelope(529, "overloaded_error")),
            (("rate_limit_error", "model.unavailable"), anthropic_envelope(429, "rate_limit_error")),
            (("503", "model.unavailable"), anthropic_status_error(503, "upstream down")),  # a non-JSON body: the status
            (("timeout_error", "timeout"), anthropic_envelope(408, "timeout_error")),
            (("invalid_request_error", "error"), anthropic_envelope(400, "invalid_request_error")),
            (("ValueError", "error"), ValueError("ours")),
        ],
    )
    def test_anthropic_exceptions(self, expected, exc):
        """anthropic's envelope ``type``, else the status, else the transport failure's kind."""
        assert Failure(*expected) == failure_of(exc, TIMEOUTS, CONNECTIONS)

    @pytest.mark.parametrize(
        ("expected", "exc"),
        [
            (
                ("insufficient_quota", "model.unavailable"),
                openai_status_error(
                    429, {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}
                ),
            ),
            (
                ("model_not_found", "error"),  # the code comes before the type
                openai_status_error(400, {"message": "x", "type": "invalid_request_error", "code": "model_not_found"}),
            ),
            (
                ("server_error", "model.unavailable"),  # no code: the type
                openai_status_error(500, {"message": "x", "type": "server_error", "code": None}),
            ),
            (("timeout", "timeout"), openai.APITimeoutError(request=OPENAI_REQUEST)),  # subclasses APIConnectionError
            (("504", "timeout"), openai_status_error(504, {"message": "gateway"})),
        ],
    )
    def test_openai_exceptions(self, expected, exc):
        """openai's envelope ``code``, then its ``type``; a timeout before a connection failure."""
        assert Failure(*expected) == failure_of(exc, OPENAI_TIMEOUTS, OPENAI_CONNECTIONS, OPENAI_ENVELOPE)

    @pytest.mark.parametrize(
        ("expected", "status", "body"),
        [
            (("RESOURCE_EXHAUSTED", "model.unavailable"), 429, {"code": 429, "status": "RESOURCE_EXHAUSTED"}),
            (("UNAVAILABLE", "model.unavailable"), 503, {"code": 503, "status": "UNAVAILABLE"}),
            (("DEADLINE_EXCEEDED", "timeout"), 504, {"code": 504, "status": "DEADLINE_EXCEEDED"}),
            (("INVALID_ARGUMENT", "error"), 400, {"code": 400, "status": "INVALID_ARGUMENT"}),
            (("500", "model.unavailable"), 500, {}),  # no status named: the HTTP code
        ],
    )
    def test_google_genai_exceptions(self, expected, status, body):
        """google-genai's ``APIError``: Google's error ``status``, else its HTTP ``code`` (``status_field``)."""
        errors = pytest.importorskip("google.genai.errors")
        error_class = errors.ClientError if status < 500 else errors.ServerError
        exc = error_class(status, {"error": {"message": "x", **body}}, None)
        assert Failure(*expected) == failure_of(exc, TIMEOUTS, CONNECTIONS, ("status",), "code")

    def test_error_type_alone(self):
        """``error_type_of`` is the ``error.type`` half of the same rule."""
        exc = openai_status_error(400, {"message": "x", "type": "invalid_request_error", "code": "model_not_found"})

        assert "model_not_found" == error_type_of(exc, OPENAI_TIMEOUTS, OPENAI_CONNECTIONS, OPENAI_ENVELOPE)
        assert "invalid_request_error" == error_type_of(exc, OPENAI_TIMEOUTS, OPENAI_CONNECTIONS)

    @needs_mcp2
    @settings(max_examples=300)
    @given(exc=exceptions)
    def test_every_provider_exception_gets_one_ending(self, exc):
        """Whatever was raised: one ending and a non-empty ``error.type``."""
        failure = failure_of(exc, (TimeoutError,), (OSError,))

        assert failure.ending in names.ENDINGS and isinstance(failure.error_type, str) and failure.error_type

    @pytest.mark.parametrize(
        ("expected", "exc"),
        [
            (("cancelled", "cancelled"), asyncio.CancelledError()),
            (("ValueError", "error"), ValueError("x")),
        ],
    )
    def test_the_fallback_when_classifying_failed(self, expected, exc):
        """``fallback_failure``: a cancellation stays ``cancelled``; anything else is ``error``."""
        assert Failure(*expected) == fallback_failure(exc)


usage_counts = st.none() | st.integers(min_value=-(2**70), max_value=2**70) | hostile_text | st.booleans()
responses = st.builds(
    Response,
    model=st.none() | hostile_text,
    response_id=st.none() | hostile_text,
    finish_reasons=st.lists(hostile_text | st.sampled_from(["refusal", "content_filter"]), max_size=3).map(tuple),
    usage=st.builds(Usage, usage_counts, usage_counts, usage_counts, usage_counts),
    provider_fallback=st.booleans(),
    output=st.none(),
    error_type=st.none() | hostile_text | st.sampled_from(["overloaded_error", "timeout_error"]),
)


class TestProviderAnswers:
    """``answer_ending``: a call that raised nothing, or failed without an exception."""

    @pytest.mark.parametrize(
        ("ending", "reasons"),
        [
            ("completed", ("end_turn",)),
            ("refused", ("refusal",)),
            ("refused", ("content_filter",)),
            ("completed", ()),
        ],
    )
    def test_a_response_is_completed_unless_a_finish_reason_refused(self, ending, reasons):
        """anthropic ``stop_reason="refusal"``, openai ``finish_reason="content_filter"``."""
        assert ending == answer_ending(Response("m", None, reasons, Usage()), None).ending

    def test_an_incomplete_stream_is_an_error(self):
        """A stream that ended without its terminal event."""
        assert "error" == answer_ending(None, names.ERROR_TYPE_INCOMPLETE_STREAM).ending

    @pytest.mark.parametrize(
        ("ending", "error_type"),
        [
            ("model.unavailable", "server_error"),  # openai Responses status failed with error.code server_error
            ("timeout", "timeout_error"),
            ("error", "failed"),  # status failed without a code
            # Gemini: an error body or stream chunk with HTTP 200, named by its google.rpc status.
            ("model.unavailable", "RESOURCE_EXHAUSTED"),
            ("model.unavailable", "UNAVAILABLE"),
            ("model.unavailable", "INTERNAL"),
            ("timeout", "DEADLINE_EXCEEDED"),
            ("error", "INVALID_ARGUMENT"),
        ],
    )
    def test_a_failure_the_answer_reports_follows_the_envelope_rule(self, ending, error_type):
        """Failures that raise nothing (openai Responses, a Gemini error body) end like an envelope of that type."""
        assert ending == answer_ending(None, error_type).ending

    @settings(max_examples=300)
    @given(
        response=st.none() | responses,
        error_type=st.none()
        | hostile_text
        | st.sampled_from(["overloaded_error", "rate_limit_exceeded", "timeout_error", "server_error"]),
    )
    def test_every_provider_answer_gets_one_ending(self, response, error_type):
        """Whatever the answer held."""
        assert answer_ending(response, error_type).ending in names.ENDINGS


class TestStreamEndings:
    """``stream_ending``: a stream that raised nothing, once it is closed or collected."""

    def test_a_complete_stream_ends_by_its_answer(self):
        assert Ending("completed") == endings.stream_ending(
            Response("m", "id", ("end_turn",), Usage(), answered=True), complete=True, exhausted=True
        )
        assert Ending("refused") == endings.stream_ending(
            Response("m", "id", ("refusal",), Usage(), answered=True), complete=True, exhausted=False
        )

    def test_read_to_the_end_without_its_final_event_is_an_incomplete_stream(self):
        assert Ending("error", "incomplete_stream") == endings.stream_ending(None, complete=False, exhausted=True)

    def test_left_early_by_the_host_is_cancelled(self):
        assert Ending("cancelled") == endings.stream_ending(None, complete=False, exhausted=False)

    def test_an_error_its_events_reported_ends_it_however_it_ended(self):
        reported = Response("m", "id", (), Usage(), error_type="overloaded_error")
        assert "model.unavailable" == endings.stream_ending(reported, complete=False, exhausted=False).ending


class TestFallbackEndings:
    """What an ending is when classifying it failed (our failure, never the host's)."""

    def test_an_error_frame_keeps_its_code(self):
        assert Ending("error", "-32603") == endings.failed_frame(-32603)

    def test_an_error_frame_without_an_integer_code_is_unknown(self):
        assert Ending("error", "_unknown") == endings.failed_frame("x")

    def test_an_exception_is_error_of_unknown_type_a_cancellation_stays_cancelled(self):
        assert Ending("error", "_unknown") == endings.FAILED
        assert Ending("cancelled", "cancelled") == endings.CANCELLED

    def test_an_unanswered_request_names_itself(self):
        assert Ending("unanswered", "unanswered") == endings.UNANSWERED


class TestInferenceFinishReasons:
    """GenAI semconv, client-inference.md note on ``gen_ai.response.finish_reasons``: "If a finish
    reason was expected but not received, for example because generation failed, was cancelled, or
    a stream ended before the final event, instrumentations SHOULD report `error` for that position
    instead of omitting it."""

    @pytest.mark.parametrize("ending", ["error", "timeout", "cancelled", "model.unavailable"])
    def test_a_call_that_did_not_complete_and_reported_none_reports_error(self, ending):
        assert endings.inference_finish_reasons((), ending) == ("error",)

    @pytest.mark.parametrize("ending", ["completed", "error", "refused"])
    def test_reported_reasons_are_kept(self, ending):
        assert endings.inference_finish_reasons(("length",), ending) == ("length",)

    @pytest.mark.parametrize("ending", ["completed", "refused"])
    def test_a_whole_answer_without_a_reason_has_none(self, ending):
        """A refusal is an answer, not a failure: a blocked Gemini prompt has no candidate, so no
        reason was expected."""
        assert endings.inference_finish_reasons((), ending) == ()

    def test_thousands_of_reasons_are_cut_to_the_first_sixteen(self):
        reported = tuple(f"STOP-{i}" for i in range(5000))
        assert endings.inference_finish_reasons(reported, "completed") == reported[:16]


# ---------------------------------------------------------------------- span status
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
