"""The real-host suite's shared table: model families, hosts, scenarios and their expected verdicts.

Imported by the pytest module (the main venv) and by the host scripts (each host's own venv), so
stdlib only. Nothing here reads what otel-sampling records: an expected verdict is what a person
reading the fake provider's answers would say about the request (``docs/telemetry.md`` names the
values), derived only from the scenario the provider was told to play.

A family is the set of models one host is configured with and the policy of the server it talks
to: the server hints the primary model, the host asks the provider for the primary first and for the
fallback when the primary fails, and ``outside`` is a model the policy does not permit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

TOOL = "summarise"  # the server's one tool; otel_sampling.sampling.tool.name on the sampling span
TICKET = "Printer on fire"  # the tool's argument, the text the server asks to be summarised
SERVER_VERSION = "1.0.0"  # serverInfo.version of both servers (server_v1.py, server_v2.py)


@dataclass(frozen=True)
class Family:
    """The models one host uses and the policy of the server it talks to."""

    provider: str  # "anthropic" | "openai" | "gemini": the API the host's model client calls
    server: str  # the server's serverInfo.name, the policy table's key
    hint: str  # modelPreferences.hints[0].name the server sends
    primary: str  # the policy's primary_model; what the host asks for first
    fallback: str  # permitted, not the primary: the host's fallback model
    outside: str  # not permitted: what an outside-policy substitution serves

    @property
    def permitted(self) -> tuple[str, str]:
        return (self.primary, self.fallback)


ANTHROPIC = Family(
    "anthropic", "tickets-anthropic", "claude-sonnet", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1"
)
# The hint must be an openai model id for fastmcp's OpenAISamplingHandler to pick it (it picks the
# first hint that is a known ChatModel, else its default_model); no model here contains another's name.
OPENAI = Family("openai", "tickets-openai", "gpt-4.1", "gpt-4.1", "gpt-4o-mini", "o3")
# The Gemini API through google-genai (ADK's Gemini model class).
GEMINI = Family(
    "gemini", "tickets-gemini", "gemini-2.5-pro", "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.0-flash-lite"
)


@dataclass(frozen=True)
class Host:
    name: str  # the venv under .venv-hosts/ and the script tests/hosts/host_<module>.py
    module: str
    family: Family
    server_script: str  # the MCP server it drives: server_v2.py (mcp 2.x) or server_v1.py (mcp 1.x)
    # mcp 1.x servers send sampling/createMessage whatever the client declared (the client's SDK then
    # answers "Sampling not supported"); an mcp 2.x server's Sample fails the tool call before asking.
    asked_without_capability: bool
    venv: str = ""  # its venv under .venv-hosts/ when another host's ("": its name)

    @property
    def venv_name(self) -> str:
        return self.venv or self.name


HOSTS = (
    Host("pydantic-ai", "host_pydantic_ai", ANTHROPIC, "server_v2.py", asked_without_capability=False),
    Host("fastmcp", "host_fastmcp", OPENAI, "server_v2.py", asked_without_capability=False),
    Host("mcp-use", "host_mcp_use", ANTHROPIC, "server_v1.py", asked_without_capability=True),
    Host("google-adk", "host_google_adk", ANTHROPIC, "server_v2.py", asked_without_capability=False),
    Host("langchain-mcp-adapters", "host_langchain", OPENAI, "server_v1.py", asked_without_capability=True),
    # google-adk's own Gemini model class (google-genai), in the google-adk venv.
    Host("google-adk-gemini", "host_google_adk", GEMINI, "server_v2.py", False, venv="google-adk"),
    # A fastmcp 4 client whose sampling handler is a LiteLLM Router falling back from the primary.
    Host("litellm-router", "host_litellm_router", OPENAI, "server_v2.py", asked_without_capability=False),
)

# How the host is set up to answer sampling requests (the host scripts' --sampling):
SAMPLING_MODEL = "model"  # its model client (primary, then fallback) answers
SAMPLING_DECLINE = "decline"  # its sampling callback refuses, the framework's way
SAMPLING_NONE = "none"  # sampling is not configured at all: the SDK's own default answer


@dataclass(frozen=True)
class Expected:
    """The verdict on the one sampling request of a scenario; None: not asserted (the issue
    defines no value for it), ``DECLINED_NOT_ERROR``: any ending but ``error`` and ``completed``."""

    ending: str
    served: str | None  # gen_ai.response.model on the sampling span: what the provider served
    substitution: str
    mode: str
    reasons: tuple[str, ...]
    run_outcome: str | None
    violations: tuple[str, ...] = ()


DECLINED_NOT_ERROR = "<a decline ending, not error>"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    sampling: str  # SAMPLING_*
    header: str  # the x-fake-scenario value; {primary}, {fallback}, {outside}, {status} filled per family
    expected: Callable[[Family], Expected] = field(repr=False)
    # The verdict when the host runs with no policy file (None: the same as with one). Without a
    # policy the reference is the model the host asked the provider for, else the server's hint: any
    # other model served is a substitution, degraded on every signal (docs/telemetry.md).
    without_policy: Callable[[Family], Expected] | None = field(default=None, repr=False)
    policy: bool = True  # the instrumented run has OTEL_SAMPLING_POLICY set (policy_toml())
    base: str = ""  # the scenario this one is the no-policy twin of ("": itself)
    hosts: tuple[str, ...] = ()  # the hosts it applies to (a host behaviour only they have; (): every host)

    def applies_to(self, host: Host) -> bool:
        return not self.hosts or host.name in self.hosts

    def twin_without_policy(self) -> Scenario:
        """The same scenario on a host with no policy file."""
        return replace(
            self,
            name=f"{self.name}{NO_POLICY_SUFFIX}",
            description=f"{self.description}; no policy file",
            expected=self.without_policy or self.expected,
            without_policy=None,
            policy=False,
            base=self.name,
        )


NO_POLICY_SUFFIX = "-no_policy"
# Another model than asked, and no policy covers the server (docs/telemetry.md, "Verdicts with and
# without a policy").
WITHOUT_POLICY = "without_policy"  # names.SUBSTITUTION_WITHOUT_POLICY (test_real_hosts checks it is one)

_SCENARIOS_WITH_POLICY = (
    Scenario(
        "served",
        "the provider serves the requested (primary) model",
        SAMPLING_MODEL,
        "",
        lambda f: Expected("completed", f.primary, "none", "primary", (), "completed"),
    ),
    Scenario(
        "substituted_within",
        "the provider answers the primary request with the permitted fallback model",
        SAMPLING_MODEL,
        "served_model={fallback}",
        # Served another permitted model than asked: within policy, reason fallback (one name at every level).
        lambda f: Expected("completed", f.fallback, "within_policy", "degraded", ("fallback",), "completed"),
        lambda f: Expected("completed", f.fallback, WITHOUT_POLICY, "degraded", ("substitution",), "completed"),
    ),
    Scenario(
        "substituted_outside",
        "the provider answers the primary request with a model outside the policy",
        SAMPLING_MODEL,
        "served_model={outside}",
        lambda f: Expected(
            "completed",
            f.outside,
            "outside_policy",
            "degraded",
            ("substitution",),
            "completed",
            ("model_outside_policy",),
        ),
        lambda f: Expected("completed", f.outside, WITHOUT_POLICY, "degraded", ("substitution",), "completed"),
    ),
    Scenario(
        "overload_fallback",
        "the primary is overloaded (529/503 on every try), the fallback model serves",
        SAMPLING_MODEL,
        "status={status},fail_model={primary}",
        # The fallback was asked for and served: no substitution (the reference is the model the
        # host asked the provider for); the failover degrades it, with a policy or without.
        lambda f: Expected("completed", f.fallback, "none", "degraded", ("failover",), "completed"),
        lambda f: Expected("completed", f.fallback, "none", "degraded", ("failover",), "completed"),
    ),
    Scenario(
        "context_window_fallback",
        "the request does not fit the primary's context window (HTTP 400, the openai context-length "
        "message); the Router's context_window_fallbacks serve it on the fallback model",
        SAMPLING_MODEL,
        "status=400,fail_model={primary},error_message=This model's maximum context length is 8192 tokens",
        # The fallback was asked for and served (no substitution); a fit fallback is not a failover
        # (docs/telemetry.md, "Automatic degraded mode"): its call's reason, context_window_fallback,
        # is the request's, with a policy or without (the router's reason wins, as on the call).
        lambda f: Expected("completed", f.fallback, "none", "degraded", ("context_window_fallback",), "completed"),
        lambda f: Expected("completed", f.fallback, "none", "degraded", ("context_window_fallback",), "completed"),
        hosts=("litellm-router",),
    ),
    Scenario(
        "refusal",
        "the primary model refuses (anthropic stop_reason refusal, openai content_filter)",
        SAMPLING_MODEL,
        "refusal",
        # A model was asked and declined: the task was attempted and not done (rules/verdict.py).
        lambda f: Expected("refused", f.primary, "none", "primary", (), "failed"),
    ),
    Scenario(
        "all_failing",
        "every provider call fails (529/503 on every try, on every model)",
        SAMPLING_MODEL,
        "status={status}",
        lambda f: Expected("model.unavailable", None, "none", "primary", (), "failed"),
    ),
    Scenario(
        "declined",
        "the host's sampling callback refuses the request",
        SAMPLING_DECLINE,
        "",
        lambda f: Expected("user.denied", None, "none", "primary", (), "denied"),
    ),
    Scenario(
        "unsupported",
        "the host configures no sampling: the SDK's default answer",
        SAMPLING_NONE,
        "",
        lambda f: Expected(DECLINED_NOT_ERROR, None, "none", "primary", (), "denied"),
    ),
)

# Every scenario with the policy file, then every one without.
SCENARIOS = (*_SCENARIOS_WITH_POLICY, *(s.twin_without_policy() for s in _SCENARIOS_WITH_POLICY))

# The overload status per provider: anthropic's 529 overloaded_error, openai's and Gemini's 503 (no 529).
OVERLOAD_STATUS = {"anthropic": "529", "openai": "503", "gemini": "503"}


def expected_for(scenario: Scenario, host: Host) -> Expected | None:
    """The expected verdict of the scenario on this host; None when the server never asks (no request)."""
    if scenario.sampling == SAMPLING_NONE and not host.asked_without_capability:
        return None
    return scenario.expected(host.family)


def scenario_header(scenario: Scenario, family: Family) -> str:
    """The x-fake-scenario header value the host's model client sends in this scenario."""
    return scenario.header.format(
        primary=family.primary,
        fallback=family.fallback,
        outside=family.outside,
        status=OVERLOAD_STATUS[family.provider],
    )


def policy_toml() -> str:
    """The policy file (OTEL_SAMPLING_POLICY) every instrumented host runs with."""
    tables = []
    for family in (ANTHROPIC, OPENAI, GEMINI):
        permitted = ", ".join(f'"{m}"' for m in family.permitted)
        tables.append(
            f'[servers."{family.server}"]\nprimary_model = "{family.primary}"\npermitted_models = [{permitted}]\n'
        )
    return "\n".join(tables)


# ---------------------------------------------------------------- what the host scripts share
SCENARIO_HEADER = "x-fake-scenario"  # otel_sampling.testing.fake_provider.SCENARIO_HEADER (the hosts do not import it)
OUTPUT_PREFIX = "HOST-OUTPUT "  # the one stdout line a host script ends with: this, then JSON


def parse_host_args(argv: list[str] | None = None) -> argparse.Namespace:
    """A host script's command line: the provider URL, the scenario header, how sampling is set up,
    and the server command (this interpreter and the server script beside the host scripts)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--provider-url", required=True, help="the fake provider, http://127.0.0.1:<port>")
    parser.add_argument("--scenario", default="", help="the x-fake-scenario header value")
    parser.add_argument("--sampling", choices=(SAMPLING_MODEL, SAMPLING_DECLINE, SAMPLING_NONE), required=True)
    parser.add_argument("--host", required=True, choices=[host.name for host in HOSTS])
    args = parser.parse_args(argv)
    host = next(h for h in HOSTS if h.name == args.host)
    args.family = host.family
    args.server_command = sys.executable
    args.server_args = [
        str(Path(__file__).with_name(host.server_script)),
        "--name",
        host.family.server,
        "--hint",
        host.family.hint,
    ]
    return args


def sampling_callback_for(args: argparse.Namespace, answering: Callable[[], Any], decline: Any) -> Any:
    """The host's sampling callback for ``--sampling``: ``answering()`` (its model client), ``decline``,
    or None (no sampling configured)."""
    if args.sampling == SAMPLING_MODEL:
        return answering()
    return decline if args.sampling == SAMPLING_DECLINE else None


def run_host(main: Callable[[argparse.Namespace], Awaitable[str]]) -> None:
    """Run a host's ``main(args)`` and print what the host ended with as the last stdout line: the
    tool result as the framework handed it over, or the exception the framework raised (the host's
    own behaviour either way; the process still exits 0)."""
    args = parse_host_args()
    try:
        output = asyncio.run(main(args))
    except Exception as exc:  # noqa: BLE001 - what the framework raised is the host's output here
        output = f"raised {type(exc).__name__}: {exc}"
    print(OUTPUT_PREFIX + json.dumps({"output": output}), flush=True)
