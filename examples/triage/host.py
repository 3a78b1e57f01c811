"""Triage host: an agent host that connects to ticket-server and answers its sampling requests.

The host launches ``server.py`` as a stdio subprocess and runs the scripted steps of
``scenario.py`` twice (then two of them once more over streamable HTTP on 127.0.0.1): once on a
``mode="legacy"`` connection (protocol 2025-11-25, sampling is a server-to-client JSON-RPC request)
and once on a ``mode="auto"`` connection (protocol 2026-07-28, sampling rides ``InputRequiredResult`` round trips).

Its sampling callback is a small host policy, in plain code:

1. only servers the operator allowed may sample, and tickets marked ``[confidential]`` never leave
   the host: ``ErrorData(-31003, "Sampling denied by policy", {"reason": "policy.denied"})``;
2. a daily budget in USD: ``ErrorData(-31003, "Daily sampling budget exhausted",
   {"reason": "policy.budget_exhausted", "resetsAt": <next midnight UTC>})``;
3. the user approves each request (simulated): a rejection is the MCP spec's
   ``ErrorData(-1, "User rejected sampling request")``;
4. the completion runs on the primary model (claude-sonnet-5-5) whatever the server hinted; if the
   provider is overloaded, rate-limited, failing or unreachable it retries once on the fallback
   (claude-haiku-5-5); if that fails too: ``ErrorData(-32603, "No permitted model available",
   {"reason": "model.unavailable"})``.

It reports to otel-sampling, when that is installed, what no wrapper can see: the
``includeContext`` scope it grants (``otel_sampling.grant_context``; the request's scope capped at
``thisServer`` unless a step says otherwise) and budget an approver adds
(``otel_sampling.record_grant``). Its model gateway answers "out of quota" with its own code
(``-32099``), which the demo's policy file maps to ``policy.budget_exhausted``.

It runs a drill, as a host would, through the public API only: between two steps of a live run
(one run of the task spanning several steps) it starts ``otel_sampling.drill`` on its primary model
and stops it after the drill steps, so its own fallback code answers meanwhile (``scenario.py``).

The result names the model the provider actually served (``response.model``). The server's
``temperature`` is advisory and dropped: this provider API (anthropic 2.x) takes none.

Usage::

    ANTHROPIC_BASE_URL=http://127.0.0.1:PORT python host.py [--hold] [--checkpoints]

stderr: one line per step (session, step, what came back, elapsed ms). stdout: one JSON line
``{"event": "scenario-done", "steps": [...]}`` with the expected ending of every step run (and the
number of its run, ``run``). With ``--hold`` the host then waits for a line on stdin before it
exits. With ``--checkpoints``, after each step that names a checkpoint it prints
``{"event": "checkpoint", "name": ..., "session": ..., "step": ...}`` and waits for a line on stdin
(the demo checks what Prometheus saw meanwhile); without it, it does not stop there.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import anyio
from mcp import Client, MCPError, StdioServerParameters, types
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import get_default_environment
from mcp.shared.exceptions import MCPDeprecationWarning

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import agent_loop  # noqa: E402
import otel_sampling as osm  # noqa: E402  # the small API for what no wrapper can see
from otel_sampling.degradation import Degradation  # noqa: E402
from scenario import (  # noqa: E402
    CONFIDENTIAL_MARKER,
    DRILL_DURATION_S,
    DRILL_FAILURE,
    DRILL_NAME,
    EVALUATION_NAME,
    FALLBACK_MODEL,
    PRIMARY_MODEL,
    QUALITY_BY_MODEL,
    RUN_NAME,
    STEPS,
    STEPS_BY_TICKET,
    Step,
    runs_of,
)

if sys.version_info < (3, 11):  # anyio brings the backport there
    from exceptiongroup import BaseExceptionGroup

try:  # optional: reports the facts no wrapper can see (granted scope, budget grants)
    import otel_sampling
except ImportError:  # pragma: no cover - the host runs without it too
    otel_sampling = None

# The host uses MCP sampling on purpose (deprecated in 2026-07-28); that is not news to the operator.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

SERVER_NAME = "ticket-server"
SESSIONS = ("legacy", "auto")
# A short third session over streamable HTTP (legacy protocol): the transport with a session id.
HTTP_SESSION = "http"
HTTP_STEPS = ("printer-fire", "wide-context-granted")
HTTP_START_TIMEOUT_S = 600.0  # a hang bound: a busy machine starts a server slowly

# Host policy: which servers may sample, on which models (first = primary).
PERMITTED_MODELS: dict[str, tuple[str, ...]] = {SERVER_NAME: (PRIMARY_MODEL, FALLBACK_MODEL)}
# USD per million tokens (input, output).
PRICES_USD_PER_MTOK: dict[str, tuple[float, float]] = {
    "claude-sonnet-5-5": (3.0, 15.0),
    "claude-haiku-5-5": (1.0, 5.0),
    "claude-opus-5-5": (15.0, 75.0),
}
DAILY_BUDGET_USD = 1.00

# Outside JSON-RPC's reserved -32768..-32000, as MCP 2026-07-28 asks of codes it does not define;
# otel-sampling's default policy refusal code. data.reason says which rule.
POLICY_REFUSAL = -31003
USER_REJECTED = -1  # MCP spec, client/sampling "Error Handling"
NO_MODEL = types.INTERNAL_ERROR  # -32603: the host could not produce a completion
GATEWAY_QUOTA = -32099  # the model gateway's own "out of quota" code
HOST_CONTEXT_CEILING = ("none", "thisServer")  # scopes the host grants unless a step says otherwise
APPROVER = "oncall-lead"
RETRY_ON_FALLBACK = (
    anthropic.OverloadedError,  # 529
    anthropic.RateLimitError,  # 429
    anthropic.InternalServerError,  # 5xx
    anthropic.APIConnectionError,  # incl. APITimeoutError
)
STOP_REASONS = {
    "end_turn": "endTurn",
    "max_tokens": "maxTokens",
    "stop_sequence": "stopSequence",
    "tool_use": "toolUse",
    "refusal": "refusal",
}
SCENARIO_HEADER = "x-fake-scenario"
DRAIN_TIMEOUT_S = 3.0


def log(message: str) -> None:
    print(f"[host] {message}", file=sys.stderr, flush=True)


@dataclass
class StepRun:
    """One step in one session, and what the sampling callback saw while it ran."""

    session: str
    step: Step
    notes: list[str] = field(default_factory=list)
    fell_back: bool = False  # the primary failed and the fallback answered
    got: str = ""  # what the step came back with, as logged
    from_cache: bool = False  # the answer came from the host's answer cache
    declined: bool = False  # the host declined the request (policy, user, budget): the task was not attempted


CURRENT_STEP: contextvars.ContextVar[StepRun | None] = contextvars.ContextVar("triage_current_step", default=None)


def _text_of(message: types.SamplingMessage) -> str:
    blocks = message.content if isinstance(message.content, list) else [message.content]
    return "\n".join(b.text if isinstance(b, types.TextContent) else f"<{b.type}>" for b in blocks)


def _next_midnight_utc(now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{(now.date() + dt.timedelta(days=1)).isoformat()}T00:00:00Z"


def _cost_usd(model: str, input_tokens: int, output_tokens: int) -> float:
    price_in, price_out = PRICES_USD_PER_MTOK.get(model, PRICES_USD_PER_MTOK[PRIMARY_MODEL])
    return (input_tokens * price_in + output_tokens * price_out) / 1e6


class Host:
    """The host's sampling policy and its provider client, shared by every session."""

    def __init__(self, llm: anthropic.AsyncAnthropic) -> None:
        self.llm = llm
        self.spent_usd = 0.0
        self.granted_usd = 0.0  # budget approvers added today
        self.in_flight = 0
        self.runs: dict[tuple[str, str], StepRun] = {}  # (session, ticket) -> run, for the fallback lookup
        self.session = ""
        self.run_count = 0  # runs of the task so far (numbers the runs in the scenario-done event)
        # answer cache: key -> (result, provenance stamp of the configuration that produced it)
        self.cache: dict[str, tuple[types.CreateMessageResult, dict[str, Any]]] = {}

    # ------------------------------------------------------------------ which step is this?
    def _find_run(self, params: types.CreateMessageRequestParams) -> StepRun:
        run = CURRENT_STEP.get()
        if run is not None:
            run.notes.append("step via contextvar")
            return run
        # The contextvar did not travel with the request: find the step by its ticket text.
        prompt = "\n".join(_text_of(m) for m in params.messages)
        for ticket, step in STEPS_BY_TICKET.items():
            if ticket in prompt:
                run = self.runs.setdefault((self.session, ticket), StepRun(self.session, step))
                run.notes.append("step via ticket text")
                return run
        raise LookupError("sampling request for no known step")

    # ------------------------------------------------------------------ the callback
    def sampling_callback(
        self, server: str
    ) -> Callable[[ClientRequestContext, types.CreateMessageRequestParams], Awaitable[Any]]:
        """The sampling callback for one configured server connection."""

        async def callback(
            context: ClientRequestContext, params: types.CreateMessageRequestParams
        ) -> types.CreateMessageResult | types.ErrorData:
            run = self._find_run(params)
            prefs = params.model_preferences
            hints = [h.name for h in (prefs.hints or [])] if prefs else []
            run.notes.append(f"request id={context.request_id!r} hints={hints} includeContext={params.include_context}")
            t0 = time.monotonic()
            self.in_flight += 1
            try:
                outcome = await self._decide(server, params, run)
                if isinstance(outcome, types.ErrorData) and outcome.code in (
                    POLICY_REFUSAL,
                    USER_REJECTED,
                    GATEWAY_QUOTA,
                ):
                    run.declined = True
                if isinstance(outcome, types.ErrorData):
                    run.notes.append(f"cb -> ErrorData({outcome.code})")
                else:
                    run.notes.append(f"cb -> result model={outcome.model} stop={outcome.stop_reason}")
                return outcome
            except BaseException as e:  # noted for the step line; cancellation included
                run.notes.append(f"cb raised {type(e).__name__} after {(time.monotonic() - t0) * 1000:.0f} ms")
                raise
            finally:
                self.in_flight -= 1

        return callback

    async def _decide(
        self, server: str, params: types.CreateMessageRequestParams, run: StepRun
    ) -> types.CreateMessageResult | types.ErrorData:
        step = run.step
        if step.host.crash:
            raise RuntimeError("host bug: sampling policy table is missing the approval column")
        prompt = "\n".join(_text_of(m) for m in params.messages)

        # 1. who may sample, and what may leave the host
        models = PERMITTED_MODELS.get(server, ())
        if not models or not step.host.server_allowed or CONFIDENTIAL_MARKER in prompt:
            return types.ErrorData(
                code=POLICY_REFUSAL, message="Sampling denied by policy", data={"reason": "policy.denied"}
            )

        # 2. daily budget: the worst case of this request must fit in what is left
        primary, fallback = models[0], (models[1] if len(models) > 1 else None)
        worst_case = _cost_usd(primary, len(prompt) // 4 + 100, params.max_tokens)
        if step.host.raise_budget:  # the same denial, raised (an exception group on 2026-07-28)
            run.declined = True
            raise MCPError.from_error_data(
                types.ErrorData(
                    code=POLICY_REFUSAL,
                    message="Daily sampling budget exhausted",
                    data={"reason": "policy.budget_exhausted", "resetsAt": _next_midnight_utc()},
                )
            )
        if step.host.budget_exhausted or self.spent_usd + worst_case > DAILY_BUDGET_USD + self.granted_usd:
            return types.ErrorData(
                code=POLICY_REFUSAL,
                message="Daily sampling budget exhausted",
                data={"reason": "policy.budget_exhausted", "resetsAt": _next_midnight_utc()},
            )

        # 3. the user approves (simulated, decided per step)
        if not step.host.user_approves:
            return types.ErrorData(code=USER_REJECTED, message="User rejected sampling request")
        if step.host.gateway_quota:
            return types.ErrorData(code=GATEWAY_QUOTA, message="Model gateway quota exceeded")

        # what the prompt may include: the request's scope, capped by the host (or as the step says)
        requested = params.include_context or "none"
        granted = step.host.grant_scope or (requested if requested in HOST_CONTEXT_CEILING else "thisServer")
        if otel_sampling is not None:
            otel_sampling.grant_context(granted)

        # the host's answer cache: the entry's provenance says which configuration produced it
        if step.host.cache_read:
            entry = self.cache.get(step.host.cache_read)
            match = osm.provenance.lookup(hit=entry is not None, stamp=entry[1] if entry else None)
            if entry is not None:
                run.from_cache = True
                run.notes.append(f"answered from cache (provenance {entry[1]['mode']}, {match})")
                return entry[0]

        if step.host.canary and fallback is not None:  # canary traffic: the fallback on purpose
            primary = fallback
            run.notes.append("canary: answered on the fallback")

        # 4. the provider: primary, then the fallback once
        try:
            response = await self._complete(primary, params, step.provider.primary, canary=step.host.canary)
        except RETRY_ON_FALLBACK as e:
            run.notes.append(f"{primary}: {type(e).__name__}")
            if fallback is None:
                return self._no_model()
            try:
                response = await self._complete(fallback, params, step.provider.fallback)
            except RETRY_ON_FALLBACK as e2:
                run.notes.append(f"{fallback}: {type(e2).__name__}")
                return self._no_model()
            run.fell_back = True

        self.spent_usd += _cost_usd(response.model, response.usage.input_tokens, response.usage.output_tokens)
        text = "".join(block.text for block in response.content if block.type == "text")
        stop_reason = STOP_REASONS.get(response.stop_reason or "", response.stop_reason)
        result = types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=text), model=response.model, stop_reason=stop_reason
        )
        if step.host.cache_store:
            self.cache[step.host.cache_store] = (result, osm.provenance.stamp())
        return result

    @staticmethod
    def _no_model() -> types.ErrorData:
        return types.ErrorData(
            code=NO_MODEL, message="No permitted model available", data={"reason": "model.unavailable"}
        )

    async def _complete(
        self, model: str, params: types.CreateMessageRequestParams, scenario: str | None, canary: bool = False
    ) -> anthropic.types.Message:
        kwargs: dict[str, Any] = {
            "model": model,
            "max_tokens": params.max_tokens,
            "messages": [{"role": m.role, "content": _text_of(m)} for m in params.messages],
        }
        if params.system_prompt:
            kwargs["system"] = params.system_prompt
        if params.stop_sequences:
            kwargs["stop_sequences"] = params.stop_sequences
        if scenario is not None:
            kwargs["extra_headers"] = {SCENARIO_HEADER: scenario}
        with osm.canary() if canary else contextlib.nullcontext():  # tells otel-sampling it is canary traffic
            return await self.llm.messages.create(**kwargs)

    async def drain(self) -> bool:
        """Wait for callbacks still running (e.g. cancelled ones unwinding); False if they don't end."""
        with anyio.move_on_after(DRAIN_TIMEOUT_S):
            while self.in_flight:
                await anyio.sleep(0.01)
        return self.in_flight == 0


def _describe_exception(e: BaseException) -> str:
    if isinstance(e, MCPError):
        return f"call_tool raised MCPError code={e.code} message={e.message!r} data={e.data!r}"
    if isinstance(e, BaseExceptionGroup):
        inner = ", ".join(f"{type(x).__name__}({x})" for x in e.exceptions)
        return f"call_tool raised {type(e).__name__}[{inner}]"
    return f"call_tool raised {type(e).__name__}: {e}"


def grant_budget(host: Host, step: Step) -> None:
    """An approver adds budget for the server before the step runs."""
    host.granted_usd += step.host.grant_usd
    if otel_sampling is not None:
        otel_sampling.record_grant(SERVER_NAME, step.host.grant_usd, _next_midnight_utc(), granted_by=APPROVER)


async def run_step(client: Client, host: Host, session: str, step: Step) -> None:
    if step.host.grant_usd:
        grant_budget(host, step)
    run = StepRun(session, step)
    host.runs[(session, step.ticket)] = run
    token = CURRENT_STEP.set(run)
    t0 = time.monotonic()
    try:
        give_up = step.host.give_up_after_s
        with anyio.move_on_after(give_up if give_up is not None else float("inf")) as scope:
            result = await client.call_tool(step.tool, step.arguments)
        if scope.cancelled_caught:
            got = f"host gave up: call_tool cancelled after {give_up}s"
        else:
            text = " ".join(c.text for c in result.content if isinstance(c, types.TextContent))
            got = f"tool {'error' if result.is_error else 'result'}: {text}"
    except Exception as e:  # noqa: BLE001 - the host survives every step, and reports it
        got = _describe_exception(e)
    finally:
        CURRENT_STEP.reset(token)
    elapsed_ms = (time.monotonic() - t0) * 1000
    drained = await host.drain()
    if not drained:
        run.notes.append("callback still running after the step")
    run.got = got
    log(f"{session:<6} {step.name:<22} {elapsed_ms:6.0f} ms  {got}  [{'; '.join(run.notes)}]")


class Outage:
    """The named degradation of the steps that declare one: entered at the first step of a stretch
    of consecutive steps naming the same component, exited before the first step that does not (one
    outage, one entry: entering it per step would count as flapping)."""

    def __init__(self) -> None:
        self.current: Degradation | None = None

    def follow(self, step: Step) -> None:
        component = step.host.degradation
        if self.current is not None and self.current.component != component:
            self.end()
        if component and self.current is None:
            self.current = osm.degraded(
                component, reason="sources unavailable", owner="oncall-search", expires_at=_next_midnight_utc()
            ).enter()

    def end(self) -> None:
        if self.current is not None:
            self.current.exit()
            self.current = None


class DrillSteps:
    """The drill of the steps that ask for one (``step.host.drill``), through the public API: started
    before the first of consecutive drill steps, stopped before the first step that is not one (or
    when the session ends). Its window (``DRILL_DURATION_S``) is far longer than that: the host ends it."""

    def __init__(self) -> None:
        self.current: osm.Drill | None = None

    def follow(self, step: Step) -> None:
        if self.current is not None and not step.host.drill:
            self.end()
        if step.host.drill and self.current is None:
            self.current = osm.drill(
                DRILL_NAME,
                target_model=PRIMARY_MODEL,
                duration=DRILL_DURATION_S,
                failure=DRILL_FAILURE,
                owner="triage-oncall",
            ).start()
            log(f"drill {DRILL_NAME!r} started on {PRIMARY_MODEL} ({DRILL_FAILURE})")

    def end(self) -> None:
        if self.current is not None:
            self.current.stop()
            self.current = None
            log(f"drill {DRILL_NAME!r} stopped")


Checkpoint = Callable[[str, str, Step], Awaitable[None]]


async def run_steps_as_run(
    clients: Callable[[Step], Awaitable[Client]],
    host: Host,
    session: str,
    steps: tuple[Step, ...],
    before: Callable[[Step], None],
    checkpoint: Checkpoint,
) -> None:
    """Steps as one run of the task (otel-sampling API; one step, or the steps of a live run): a run
    during which a declared outage or the drill was active is degraded; the host tells the person
    when it knows an answer is degraded; the (simulated) eval suite scores every usable answer.
    ``before`` runs before each step (outages and the drill follow the steps), ``checkpoint`` after
    each step that names one."""
    served_models: list[str] = []
    with osm.run(RUN_NAME) as agent_run:
        for step in steps:
            client = await clients(step)
            before(step)
            await run_step(client, host, session, step)
            run = host.runs[(session, step.ticket)]
            served = _summary_model(run.got)
            if served is None:
                # no usable summary: declined by the host's policy, user or budget (not attempted), or failed
                agent_run.set_outcome("denied" if run.declined else "failed")
            else:
                served_models.append(served)
            if step.host.disclose and (run.fell_back or run.from_cache or step.host.degradation or step.host.canary):
                osm.disclose(
                    f"Reduced mode: {f'summary by {served}' if served else 'no summary'}",
                    kind="activity_log" if step.host.canary else "inline",
                )
            if step.checkpoint:
                await checkpoint(step.checkpoint, session, step)
    for served in served_models:
        osm.record_evaluation(EVALUATION_NAME, QUALITY_BY_MODEL.get(served, 0.5), run=agent_run)


async def no_checkpoint(name: str, session: str, step: Step) -> None:
    """Without ``--checkpoints`` the host does not stop at a checkpoint."""


async def wait_at_checkpoint(name: str, session: str, step: Step) -> None:
    """Tell the demo (stdout) and wait for its line on stdin."""
    print(json.dumps({"event": "checkpoint", "name": name, "session": session, "step": step.name}), flush=True)
    log(f"checkpoint {name!r}: waiting for a line on stdin")
    await anyio.to_thread.run_sync(sys.stdin.readline)


def _summary_model(got: str) -> str | None:
    """The model of a usable summary in a step's outcome ("tool result: summary by <model> (stop: ...)")."""
    prefix = "tool result: summary by "
    if not got.startswith(prefix) or "(stop: refusal)" in got:
        return None
    return got[len(prefix) :].split(" ", 1)[0]


def server_parameters(name: str = SERVER_NAME) -> StdioServerParameters:
    """How to launch server.py. ``TRIAGE_SERVER_LAUNCHER`` (e.g. ``opentelemetry-instrument``) runs
    it through that program; each ``TRIAGE_SERVER_ENV_<NAME>`` of the host is ``<NAME>`` for the server."""
    env = {
        key.removeprefix("TRIAGE_SERVER_ENV_"): value
        for key, value in os.environ.items()
        if key.startswith("TRIAGE_SERVER_ENV_")
    }
    env["TRIAGE_SERVER_NAME"] = name
    launcher = os.environ.get("TRIAGE_SERVER_LAUNCHER")
    args = [str(HERE / "server.py")]
    if launcher:
        return StdioServerParameters(command=launcher, args=[sys.executable, *args], env=env)
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def connect(host: Host, session: str, name: str = SERVER_NAME) -> Client:
    return Client(
        server_parameters(name),
        mode=session,
        sampling_callback=host.sampling_callback(name),
        client_info=types.Implementation(name="triage-host", version="1.0.0"),
    )


async def run_session(host: Host, session: str, checkpoint: Checkpoint = no_checkpoint) -> list[dict[str, Any]]:
    done: list[dict[str, Any]] = []
    host.session = session
    others: dict[str, Client] = {}  # second servers, connected when a step first needs one
    outage, drill = Outage(), DrillSteps()
    async with contextlib.AsyncExitStack() as stack:  # one stack: connections close in reverse order
        stack.callback(outage.end)  # also when the session fails mid-outage
        stack.callback(drill.end)  # and mid-drill
        client = await stack.enter_async_context(connect(host, session))
        info = client.server_info
        log(
            f"{session}: connected to {info.name if info else '?'} {info.version if info else ''} "
            f"protocol {client.protocol_version}"
        )

        async def client_for(step: Step) -> Client:
            if step.server is None:
                return client
            if step.server not in others:
                others[step.server] = await stack.enter_async_context(connect(host, session, step.server))
            return others[step.server]

        def before(step: Step) -> None:
            outage.follow(step)
            drill.follow(step)

        steps = [
            step for step in STEPS if not (step.legacy_only and session != "legacy") and step.session in (None, session)
        ]
        for steps_of_run in runs_of(steps):
            await run_steps_as_run(client_for, host, session, steps_of_run, before, checkpoint)
            host.run_count += 1
            done += [
                {
                    "session": session,
                    "step": step.name,
                    "run": host.run_count,
                    "expected_ending": step.expected_ending,
                    "expected_model": step.expected_model,
                }
                for step in steps_of_run
            ]
    return done


async def run_http_session(host: Host) -> list[dict[str, Any]]:
    """Start server.py over streamable HTTP on 127.0.0.1 and run ``HTTP_STEPS`` through it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    params = server_parameters()
    process = await anyio.open_process(
        [params.command, *params.args, "--http", str(port)],
        env={**get_default_environment(), **(params.env or {})},
        stdout=subprocess.DEVNULL,
        stderr=None,
    )
    done: list[dict[str, Any]] = []
    try:
        with anyio.fail_after(HTTP_START_TIMEOUT_S):
            while True:
                try:
                    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await anyio.sleep(0.1)
        host.session = HTTP_SESSION
        async with Client(
            f"http://127.0.0.1:{port}/mcp",
            mode="legacy",
            sampling_callback=host.sampling_callback(SERVER_NAME),
            client_info=types.Implementation(name="triage-host", version="1.0.0"),
        ) as client:
            log(f"{HTTP_SESSION}: connected over streamable HTTP, protocol {client.protocol_version}")
            for step in STEPS:
                if step.name in HTTP_STEPS:
                    await run_steps_as_run(
                        lambda _: client_ready(client), host, HTTP_SESSION, (step,), lambda _: None, no_checkpoint
                    )
                    host.run_count += 1
                    done.append(
                        {
                            "session": HTTP_SESSION,
                            "step": step.name,
                            "run": host.run_count,
                            "expected_ending": step.expected_ending,
                            "expected_model": step.expected_model,
                        }
                    )
    finally:
        # SIGINT, not SIGTERM: uvicorn re-raises the signal after its graceful shutdown, and only
        # SIGINT (KeyboardInterrupt) lets the server's exit hooks flush its telemetry.
        process.send_signal(signal.SIGINT)
        with anyio.move_on_after(10):
            await process.wait()
    return done


async def client_ready(client: Client) -> Client:
    return client


async def main_async(checkpoints: bool = False) -> int:
    base_url = os.environ.get("ANTHROPIC_BASE_URL")
    if not base_url:
        log("ANTHROPIC_BASE_URL is not set (start the fake provider: python -m otel_sampling.testing.fake_provider)")
        return 2
    steps: list[dict[str, Any]] = []
    failed = False
    t0 = time.monotonic()
    async with anthropic.AsyncAnthropic(base_url=base_url, api_key="sk-fake-demo", max_retries=0) as llm:
        host = Host(llm)
        for session in SESSIONS:
            try:
                steps.extend(await run_session(host, session, wait_at_checkpoint if checkpoints else no_checkpoint))
            except Exception as e:  # noqa: BLE001 - could not connect, or the server died: reported
                failed = True
                log(f"{session}: session failed: {_describe_exception(e)}")
        try:
            steps.extend(await run_http_session(host))
        except Exception as e:  # noqa: BLE001 - could not connect, or the server died: reported
            failed = True
            log(f"{HTTP_SESSION}: session failed: {_describe_exception(e)}")
        agent_tasks: list[dict[str, Any]] = []
        try:  # the tool-using loop on the host's own LLM, its tools run on the ticket server
            async with connect(host, "auto") as client:
                agent_tasks = await agent_loop.run_tasks(llm, client)
        except Exception as e:  # noqa: BLE001 - could not connect, or the server died: reported
            failed = True
            log(f"agent loop failed: {_describe_exception(e)}")
    log(f"done: {len(steps)} steps in {time.monotonic() - t0:.1f} s, spent ${host.spent_usd:.6f}")
    print(json.dumps({"event": "scenario-done", "steps": steps, "agent_tasks": agent_tasks}), flush=True)
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hold", action="store_true", help="after the scenario, wait for a line on stdin")
    parser.add_argument(
        "--checkpoints",
        action="store_true",
        help="after each step that names a checkpoint, print it and wait for a line on stdin",
    )
    args = parser.parse_args()
    code = anyio.run(main_async, args.checkpoints)
    if args.hold and code != 2:
        print("[host] holding for telemetry; press Enter to exit", file=sys.stderr, flush=True)
        sys.stdin.readline()
    return code


if __name__ == "__main__":
    sys.exit(main())
