"""Which repeat-request and boundary violations a sampling request shows (``otel_sampling.rules.servers``).

Each test is a row of docs/telemetry.md "Request identity and violations": ``rerouted_after_denial``,
``scope_widened``, ``decision_flipped`` (with its budget exceptions) and ``boundary_crossed``,
shown found when it happens and not when it does not. ``includeContext`` widens
``none`` < ``thisServer`` < ``allServers`` (MCP spec 2025-11-25, client/sampling). The same rules
over real mcp sessions: tests/test_mcp_violations.py.
"""

from __future__ import annotations

import secrets

import pytest

from otel_sampling.rules.servers import (
    DECISION_SERVERS,
    GENERATED_NAME_MAX_LENGTH,
    Seen,
    crossed_boundary,
    decision,
    is_placeholder,
    known_as,
    stable_name,
    stdio_endpoint,
    url_endpoint,
    violations_at_end,
    violations_at_start,
    wider,
)


def seen(*endings_by_server: tuple[str | None, str], requested: str = "none", granted: str | None = None) -> Seen:
    """What the host remembers after a request ended with each ``(server, ending)`` in turn."""
    entry = None
    for server, ending in endings_by_server:
        entry = Seen.after(
            server=server, ending=ending, requested=requested, granted=granted, trace_id=1, span_id=1, earlier=entry
        )
    assert entry is not None
    return entry


class TestWider:
    """``wider``: the widening order of ``includeContext``."""

    @pytest.mark.parametrize(
        ("expected", "scope", "than"),
        [
            (True, "thisServer", "none"),
            (True, "allServers", "thisServer"),
            (True, "allServers", "none"),
            (False, "none", "thisServer"),  # narrowing
            (False, "thisServer", "thisServer"),
            (False, "everything", "none"),  # unknown values are never wider
            (False, "allServers", "somewhere"),
            (False, "allServers", None),
        ],
    )
    def test_order(self, expected, scope, than):
        """``none`` < ``thisServer`` < ``allServers``; unknown values compare as never wider."""
        assert expected is wider(scope, than)


class TestDecision:
    """``decision``: which endings are a decision about the request."""

    @pytest.mark.parametrize(
        ("expected", "ending"),
        [
            ("allow", "completed"),
            ("allow", "refused"),  # the host let it through; the model declined
            ("deny", "policy.denied"),
            ("deny", "user.denied"),
            ("deny", "policy.budget_exhausted"),
            (None, "timeout"),
            (None, "cancelled"),
            (None, "error"),
            (None, "model.unavailable"),
        ],
    )
    def test_allowed_denied_or_no_decision(self, expected, ending):
        """Timeouts, cancellations and errors decide nothing."""
        assert expected == decision(ending)


class TestReroutedAfterDenial:
    """A request denied for one server arrives from another server."""

    @pytest.mark.parametrize("denial", ["policy.denied", "user.denied", "policy.budget_exhausted"])
    def test_a_denied_request_sent_by_another_server(self, denial):
        """Every denial counts."""
        assert ["rerouted_after_denial"] == violations_at_start(seen(("a", denial)), "b", "none")

    def test_a_retry_by_the_server_it_moved_to_is_a_repeat_there(self):
        """Once per move: ``b`` already sent it last, so its next retry is no second reroute."""
        moved = seen(("a", "policy.denied"), ("b", "completed"))

        assert [] == violations_at_start(moved, "b", "none")

    def test_the_same_server_asking_again_is_no_reroute(self):
        """A retry by the server it was denied for."""
        assert [] == violations_at_start(seen(("a", "policy.denied")), "a", "none")

    def test_a_request_never_denied_is_no_reroute(self):
        """Another server sending an allowed request."""
        assert [] == violations_at_start(seen(("a", "completed")), "b", "none")

    def test_an_unknown_server_is_no_reroute(self):
        """Without ``serverInfo.name`` nothing says the request moved."""
        assert [] == violations_at_start(seen(("a", "policy.denied")), None, "none")


class TestScopeWidened:
    """A repeated request requests, or is granted, a wider ``includeContext`` than the last time."""

    def test_a_wider_requested_scope(self):
        """Found as the request arrives."""
        assert ["scope_widened"] == violations_at_start(seen(("a", "completed")), "a", "thisServer")

    def test_a_narrower_requested_scope_is_fine(self):
        """Narrowing is fine."""
        assert [] == violations_at_start(seen(("a", "completed"), requested="allServers"), "a", "thisServer")

    def test_a_wider_granted_scope(self):
        """Found as the request ends, against the last scope granted."""
        earlier = seen(("a", "completed"), granted="none")

        assert ["scope_widened"] == violations_at_end(earlier, "a", "completed", "thisServer")

    def test_a_narrower_or_equal_grant_is_fine(self):
        """Granting the same scope, or less."""
        earlier = seen(("a", "completed"), granted="thisServer")

        assert [] == violations_at_end(earlier, "a", "completed", "thisServer")
        assert [] == violations_at_end(earlier, "a", "completed", "none")

    def test_no_grant_then_or_now_is_fine(self):
        """A host that never reported a grant (``grant_context``) widened nothing."""
        assert [] == violations_at_end(seen(("a", "completed")), "a", "completed", "allServers")
        assert [] == violations_at_end(seen(("a", "completed"), granted="none"), "a", "completed", None)

    def test_the_last_grant_is_remembered_across_requests_without_one(self):
        """An ended request that reported no grant keeps the earlier one."""
        earlier = Seen.after(
            server="a",
            ending="completed",
            requested="none",
            granted=None,
            trace_id=2,
            span_id=2,
            earlier=seen(("a", "completed"), granted="none"),
        )

        assert "none" == earlier.granted
        assert ["scope_widened"] == violations_at_end(earlier, "a", "completed", "allServers")


class TestDecisionFlipped:
    """A repeated request from the same server gets the other decision than the last one taken for it."""

    @pytest.mark.parametrize(
        ("before", "now"),
        [
            ("completed", "policy.denied"),
            ("refused", "user.denied"),
            ("policy.denied", "completed"),
            ("user.denied", "refused"),
        ],
    )
    def test_allowed_then_denied_or_the_reverse(self, before, now):
        """Allowed (``completed``, ``refused``) vs denied (``policy.denied``, ``user.denied``)."""
        assert ["decision_flipped"] == violations_at_end(seen(("a", before)), "a", now, None)

    @pytest.mark.parametrize(
        ("before", "now"),
        [
            ("completed", "completed"),
            ("policy.denied", "user.denied"),
            ("completed", "timeout"),  # decides nothing
            ("policy.denied", "error"),
        ],
    )
    def test_the_same_decision_or_none_is_fine(self, before, now):
        """The same decision repeated, or an ending that decides nothing."""
        assert [] == violations_at_end(seen(("a", before)), "a", now, None)

    def test_a_decision_for_another_server_is_no_flip(self):
        """Each server's decision is compared with its own last one."""
        assert [] == violations_at_end(seen(("a", "completed")), "b", "policy.denied", None)

    def test_a_decision_for_another_server_in_between_hides_nothing(self):
        """Allowed for ``a``, denied for ``b``, then denied for ``a``: a flip for ``a``."""
        earlier = seen(("a", "completed"), ("b", "policy.denied"))

        assert ["decision_flipped"] == violations_at_end(earlier, "a", "policy.denied", None)

    def test_decisions_for_up_to_eight_servers_are_remembered(self):
        """``DECISION_SERVERS`` (8) servers per request; the oldest one beyond is forgotten."""
        assert 8 == DECISION_SERVERS
        kept = seen(("s0", "completed"), *((f"s{i}", "policy.denied") for i in range(1, 8)))
        forgotten = seen(("s0", "completed"), *((f"s{i}", "policy.denied") for i in range(1, 9)))

        assert ["decision_flipped"] == violations_at_end(kept, "s0", "policy.denied", None)
        assert [] == violations_at_end(forgotten, "s0", "policy.denied", None)

    def test_an_exhausted_budget_then_a_completion_is_a_flip(self):
        """A window that rolled, or a limiter that refilled, re-evaluated the same request."""
        earlier = seen(("a", "policy.budget_exhausted"))

        assert ["decision_flipped"] == violations_at_end(earlier, "a", "completed", None)

    def test_an_exhausted_budget_then_a_completion_after_a_grant_is_fine(self):
        """A grant for that server (``record_grant``) in between makes the new answer legitimate."""
        earlier = seen(("a", "policy.budget_exhausted"))

        assert [] == violations_at_end(earlier, "a", "completed", None, granted_budget_since=True)

    def test_a_grant_does_not_excuse_a_flip_of_a_policy_denial(self):
        """Only a budget is a quantity a user may decide to spend more of."""
        earlier = seen(("a", "policy.denied"))

        assert ["decision_flipped"] == violations_at_end(earlier, "a", "completed", None, granted_budget_since=True)

    def test_an_allowed_request_exhausting_the_budget_when_repeated_is_fine(self):
        """n samples of one question: the budget ran out, nobody changed their mind."""
        assert [] == violations_at_end(seen(("a", "completed")), "a", "policy.budget_exhausted", None)

    def test_a_flip_and_a_wider_grant_are_both_found(self):
        """Violations are independent: one request can show several."""
        earlier = seen(("a", "policy.denied"), granted="none")

        assert ["decision_flipped", "scope_widened"] == violations_at_end(earlier, "a", "completed", "thisServer")


class TestSeen:
    """``Seen.after``: what the host remembers of a request that just ended."""

    def test_the_last_server_denied_for_is_kept_until_another_denial(self):
        """An allowed request for another server keeps the denial visible (for the reroute rule)."""
        assert "a" == seen(("a", "policy.denied"), ("b", "completed")).denied_server
        assert "b" == seen(("a", "policy.denied"), ("b", "user.denied")).denied_server
        assert None is seen(("a", "completed")).denied_server

    def test_an_ending_that_decides_nothing_keeps_the_last_decision(self):
        """A timeout after a completion: the completion is still the decision for that server."""
        entry = seen(("a", "completed"), ("a", "timeout"))

        assert ("a", "allow", False) == entry.decision_for("a")[:3]

    def test_a_budget_denial_is_remembered_as_one(self):
        """The decision carries whether it was a budget exhaustion (for the grant exception)."""
        assert ("a", "deny", True) == seen(("a", "policy.budget_exhausted")).decision_for("a")[:3]
        assert None is seen(("a", "completed")).decision_for("b")


REGIONS = {"api.eu.example.com": "eu", "api.us.example.com": "us"}  # the policy's [endpoints]


def region_of(address: str | None) -> str | None:
    return REGIONS.get(address or "")


class TestCrossedBoundary:
    """``crossed_boundary``: a call that served the request ran outside the server's
    ``permitted_providers`` / ``permitted_regions`` (the policy's ``[endpoints]`` give regions)."""

    @pytest.mark.parametrize(
        ("expected", "served", "providers", "regions"),
        [
            (False, [("anthropic", "api.eu.example.com")], ["anthropic"], ["eu"]),
            (True, [("openai", "api.eu.example.com")], ["anthropic"], None),  # another provider
            (True, [("anthropic", "api.us.example.com")], None, ["eu"]),  # another region
            (True, [("anthropic", "unknown.example.com")], None, ["eu"]),  # no known region: cannot be shown inside
            (True, [("anthropic", None)], None, ["eu"]),  # no server.address
            (False, [("openai", "unknown.example.com")], None, None),  # no boundary: anything goes
            (True, [("anthropic", "api.eu.example.com"), ("openai", "api.eu.example.com")], ["anthropic"], None),
            (False, [], ["anthropic"], ["eu"]),  # served by no provider call
        ],
    )
    def test_any_call_outside_crosses(self, expected, served, providers, regions):
        """One call outside is enough; ``None`` permits any provider or region."""
        assert expected is crossed_boundary(served, providers, regions, region_of)


# ------------------------------------------------------------------------------------ server names
# Does a server's self-reported name tell it apart (``otel_sampling.rules.servers``)?
#
# Expected values come from the SDKs' own naming: fastmcp's ``FastMCP.generate_name`` (2.x to 4.x:
# ``f"{cls.__name__}-{secrets.token_hex(2)}"``, so ``FastMCP-3a7f``, ``FastMCPProxy-09be``), mcp 2.x's
# ``MCPServer`` default ``mcp-server`` and mcp 1.x's ``FastMCP`` default ``FastMCP``; the endpoint forms
# from ``shlex.join`` (POSIX shell quoting) and RFC 3986 URL parts (user info, query and fragment are
# left out).


class TestStableName:
    """``stable_name``: a generated name's generator prefix with ``-*``; any other name itself."""

    @pytest.mark.parametrize(
        ("name", "stable"),
        [
            ("FastMCP-3a7f", "FastMCP-*"),  # FastMCP()
            ("FastMCPProxy-09be", "FastMCPProxy-*"),  # FastMCP.as_proxy(...) / create_proxy(...)
            ("TicketServer-c2d1", "TicketServer-*"),  # class TicketServer(FastMCP), built without a name
            ("tickets", "tickets"),
            ("tickets-c2d1", "tickets-c2d1"),  # not a class name: a name someone chose
            ("FastMCP-3A7F", "FastMCP-3A7F"),  # token_hex is lower case
            ("FastMCP-3a7", "FastMCP-3a7"),  # token_hex(2) is 4 digits
            ("FastMCP-3a7f0", "FastMCP-3a7f0"),
            ("FastMCP-tickets-3a7f", "FastMCP-tickets-3a7f"),  # generate_name(name) is never used for a server
            ("mcp-server", "mcp-server"),  # an SDK default is stable already
            (None, None),
        ],
    )
    def test_generated_names_become_their_prefix(self, name, stable):
        assert stable == stable_name(name)

    def test_every_name_fastmcp_generates_has_one_stable_form(self):
        """What ``generate_name`` makes for a class, whatever the random digits."""
        names = {f"FastMCP-{secrets.token_hex(2)}" for _ in range(200)}
        assert {stable_name(name) for name in names} == {"FastMCP-*"}

    def test_a_long_name_is_never_generated(self):
        long = "F" * GENERATED_NAME_MAX_LENGTH + "-3a7f"
        assert stable_name(long) == long


class TestIsPlaceholder:
    """``is_placeholder``: generated names and SDK defaults do not tell servers apart."""

    @pytest.mark.parametrize(
        ("name", "placeholder"),
        [
            ("FastMCP-3a7f", True),
            ("mcp-server", True),  # mcp 2.x MCPServer(name=None)
            ("FastMCP", True),  # mcp 1.x FastMCP(name=None)
            ("tickets", False),
            ("FastMCP-tickets", False),
            (None, False),  # nothing reported: nothing to mistake for an identity
        ],
    )
    def test_generated_and_default_names(self, name, placeholder):
        assert placeholder is is_placeholder(name)


class TestEndpoints:
    """The endpoint forms a policy table and a grant name a server by."""

    @pytest.mark.parametrize(
        ("command", "args", "endpoint"),
        [
            ("python", ["tickets.py"], "stdio:python tickets.py"),
            ("uvx", ["mcp-server-fetch", "--ignore-robots-txt"], "stdio:uvx mcp-server-fetch --ignore-robots-txt"),
            ("/opt/my server/run", ["a b"], "stdio:'/opt/my server/run' 'a b'"),  # shell quoting
            ("node", [], "stdio:node"),
        ],
    )
    def test_stdio_is_the_command_line(self, command, args, endpoint):
        assert endpoint == stdio_endpoint(command, args)

    @pytest.mark.parametrize(
        ("url", "endpoint"),
        [
            ("https://api.example.com/mcp", "https://api.example.com/mcp"),
            ("HTTPS://API.Example.com:8443/mcp/", "https://api.example.com:8443/mcp/"),
            ("https://user:secret@api.example.com/mcp?token=abc#frag", "https://api.example.com/mcp"),
            ("http://[::1]:8000/mcp", "http://[::1]:8000/mcp"),
            ("http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp"),
        ],
    )
    def test_url_without_credentials_query_or_fragment(self, url, endpoint):
        assert endpoint == url_endpoint(url)

    @pytest.mark.parametrize("url", ["", "/mcp", "api.example.com/mcp", "http://host:notaport/mcp", "http://[::1/mcp"])
    def test_not_a_url(self, url):
        assert url_endpoint(url) is None


class TestKnownAs:
    """``known_as``: the names a server is kept by (the first) and matched to a policy by (in order)."""

    @pytest.mark.parametrize(
        ("name", "endpoint", "known"),
        [
            ("tickets", "stdio:python tickets.py", ("tickets",)),  # a real name is the identity
            ("tickets", None, ("tickets",)),
            ("FastMCP-3a7f", "stdio:python tickets.py", ("stdio:python tickets.py", "FastMCP-*")),
            ("FastMCP-3a7f", None, ("FastMCP-*",)),  # in-process: only the generator is known
            ("mcp-server", "https://api.example.com/mcp", ("https://api.example.com/mcp", "mcp-server")),
            ("mcp-server", None, ("mcp-server",)),
            (None, "stdio:python tickets.py", ("stdio:python tickets.py",)),
            (None, None, ()),
        ],
    )
    def test_placeholders_are_known_by_their_endpoint_first(self, name, endpoint, known):
        assert known == known_as(name, endpoint)

    def test_restarts_of_a_generated_name_are_one_server(self):
        """The same command restarted under fresh generated names: one key, one stable form."""
        endpoint = stdio_endpoint("python", ["tickets.py"])
        assert len({known_as(f"FastMCP-{secrets.token_hex(2)}", endpoint) for _ in range(200)}) == 1

    def test_two_unnamed_servers_are_two_servers(self):
        """Two commands reporting the same SDK default are kept apart by their endpoints."""
        one = known_as("mcp-server", stdio_endpoint("python", ["tickets.py"]))
        other = known_as("mcp-server", stdio_endpoint("python", ["wiki.py"]))
        assert one[0] != other[0]
