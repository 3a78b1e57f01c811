"""Does a server's self-reported name tell it apart (``otel_sampling.rules.server_names``)?

Expected values come from the SDKs' own naming: fastmcp's ``FastMCP.generate_name`` (2.x to 4.x:
``f"{cls.__name__}-{secrets.token_hex(2)}"``, so ``FastMCP-3a7f``, ``FastMCPProxy-09be``), mcp 2.x's
``MCPServer`` default ``mcp-server`` and mcp 1.x's ``FastMCP`` default ``FastMCP``; the endpoint forms
from ``shlex.join`` (POSIX shell quoting) and RFC 3986 URL parts (user info, query and fragment are
left out).
"""

from __future__ import annotations

import secrets

import pytest

from otel_sampling.rules.server_names import (
    GENERATED_NAME_MAX_LENGTH,
    is_placeholder,
    known_as,
    stable_name,
    stdio_endpoint,
    url_endpoint,
)


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
