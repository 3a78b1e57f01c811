"""The scripted triage scenario: what each step calls, how the provider and the host behave, and
how the sampling request is expected to end.

Pure data. ``host.py`` runs ``STEPS`` once per session (``legacy`` and ``auto``), skipping
``legacy_only`` steps in the ``auto`` session and the steps of another ``session``, and prints the
expectations as JSON when it is done. Each step is one run of the task, except consecutive steps
that name the same ``run``: one live run spanning them (``runs_of``).

The drill (``DRILL_*``, the ``drill`` steps): in the first session, between two steps of a live
run, the host starts ``otel_sampling.drill`` on the primary model, so the primary's calls fail with
the SDK's own ``OverloadedError`` and the host's fallback answers; it stops the drill after the
last drill step, and the primary then flaps on the provider's side for two steps before it serves
steadily (the exit, and its hysteresis). A ``checkpoint`` step ends with the host (run with
``--checkpoints``) waiting for the demo, which checks meanwhile what Prometheus sees.

Provider behaviour is the fake provider's ``x-fake-scenario`` header value (see
``otel_sampling.testing.fake_provider``), one for the call on the primary model and one for the
call on the fallback model (made only when the primary fails); ``None`` sends no header (a plain
200 reply that echoes the requested model).

Expected endings come from this closed vocabulary: ``completed``, ``refused``, ``policy.denied``,
``user.denied``, ``policy.budget_exhausted``, ``model.unavailable``, ``timeout``, ``cancelled``,
``error``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

ENDINGS: Final = (
    "completed",
    "refused",
    "policy.denied",
    "user.denied",
    "policy.budget_exhausted",
    "model.unavailable",
    "timeout",
    "cancelled",
    "error",
)

PRIMARY_MODEL: Final = "claude-sonnet-5-5"
FALLBACK_MODEL: Final = "claude-haiku-5-5"
CONFIDENTIAL_MARKER: Final = "[confidential]"  # the host never sends such a ticket to a provider
PROMPT_CACHE: Final = "cache"  # the fake provider reads 400 input tokens from the prompt cache, writes 100
# The drill the host runs (otel_sampling.drill): on the primary model, failing its calls as the SDK
# fails an overloaded (529) answer. Its window is far longer than the demo ever holds it, so it ends
# because the host stops it (outcome "stopped"), never because its window ran out.
DRILL_NAME: Final = "primary-outage-drill"
DRILL_FAILURE: Final = "overloaded"
DRILL_DURATION_S: Final = 3600.0
# Only the first session drills: one drill proves what it proves, and each costs the demo the
# time Prometheus needs to see its stages.
DRILL_SESSION: Final = "legacy"
DRILL_RUN: Final = "drill-run"  # the live run the drill interrupts
CHECKPOINT_DRILL_STARTING: Final = "drill-starting"  # the live run's first step answered; next: the drill
CHECKPOINT_DRILL_RUNNING: Final = "drill-running"  # the drill is running, its steps answered
CHECKPOINT_EXIT_STEP: Final = "exit-step"  # a step of the exit answered (Prometheus sees each one)
CHECKPOINT_DRILL_RECOVERED: Final = "drill-recovered"  # the drill is over, the primary serves again


@dataclass(frozen=True)
class ProviderScenario:
    """``x-fake-scenario`` for the primary call and for the fallback call (None: no header)."""

    primary: str | None = None
    fallback: str | None = None


@dataclass(frozen=True)
class HostDecisions:
    """What the host's policy and its (simulated) user decide for this step."""

    server_allowed: bool = True  # False: the operator has not allowed this server to sample
    user_approves: bool = True  # False: the user rejects the sampling request
    budget_exhausted: bool = False  # True: today's sampling budget is already spent
    crash: bool = False  # True: the callback hits a host bug and raises
    give_up_after_s: float | None = None  # the host cancels call_tool after this many seconds
    # degraded mode, told to otel-sampling through its small API (the host's own knowledge)
    degradation: str | None = None  # a named degradation (component) is active while the step runs
    disclose: bool = True  # the host tells the person when it knows the answer is degraded
    canary: bool = False  # deliberate canary traffic: the host answers on the fallback model
    cache_store: str | None = None  # the host stores the answer in its answer cache under this key
    cache_read: str | None = None  # the host answers from its answer cache (no provider call)
    grant_scope: str | None = None  # includeContext the host grants (None: the request's, capped at thisServer)
    grant_usd: float = 0.0  # USD an approver adds to the server's budget before the step (record_grant)
    gateway_quota: bool = False  # the host's model gateway is out of quota and answers with its own code
    raise_budget: bool = False  # the budget denial is raised as MCPError instead of returned
    drill: bool = False  # the drill (DRILL_NAME) runs during this step: started before the first of
    # consecutive drill steps, stopped before the first step after them


@dataclass(frozen=True)
class Step:
    name: str
    tool: str
    arguments: dict[str, Any]
    expected_ending: str
    expected_model: str | None = None  # CreateMessageResult.model the server should receive
    provider: ProviderScenario = field(default_factory=ProviderScenario)
    host: HostDecisions = field(default_factory=HostDecisions)
    legacy_only: bool = False  # needs a server-to-client request (protocol <= 2025-11-25)
    server: str | None = None  # ask through a second server of this name (default: ticket-server)
    retry_of: str | None = None  # the earlier step this one repeats (same ticket, same request)
    session: str | None = None  # run only in this session (None: every session)
    run: str | None = None  # consecutive steps naming the same run are one live run of the task
    checkpoint: str | None = None  # after this step the host (with --checkpoints) waits for the demo

    @property
    def ticket(self) -> str:
        return str(self.arguments["ticket"])

    def __post_init__(self) -> None:
        if self.expected_ending not in ENDINGS:
            raise ValueError(f"{self.name}: unknown ending {self.expected_ending!r}")


def _ticket(name: str, ticket: str, **kwargs: Any) -> Step:
    extra = kwargs.pop("arguments", {})
    return Step(name=name, tool=kwargs.pop("tool", "summarize_ticket"), arguments={"ticket": ticket, **extra}, **kwargs)


STEPS: Final[tuple[Step, ...]] = (
    # --- plain completions on the primary model
    # (the primary's prompt cache is warm for the first three: the provider reads part of the prompt from it)
    _ticket(
        "printer-fire",
        "TCK-101: the 3rd-floor printer is on fire; smoke in the hallway.",
        provider=ProviderScenario(primary=PROMPT_CACHE),
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    _ticket(
        "vpn-drops",
        "TCK-102: VPN drops every 20 minutes since the client update.",
        arguments={"include_context": "none"},
        provider=ProviderScenario(primary=PROMPT_CACHE),
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    _ticket(
        "invoice-duplicate",
        "TCK-103: customer was invoiced twice for March.",
        arguments={"include_context": "allServers"},
        provider=ProviderScenario(primary=PROMPT_CACHE),
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    # --- silent substitutions
    # the server hints an OpenAI model; the host serves it on its own primary (within policy)
    _ticket(
        "hint-gpt-4o",
        "TCK-104: export to CSV truncates rows over 65k.",
        arguments={"hint": "gpt-4o"},
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    # the host asks for the primary, the provider quietly serves another model (outside policy)
    _ticket(
        "provider-serves-opus",
        "TCK-105: SSO login loops back to the start page.",
        provider=ProviderScenario(primary="served_model=claude-opus-5-5"),
        expected_ending="completed",
        expected_model="claude-opus-5-5",
    ),
    # --- a drill mid-run (first session only): one live run; the drill starts after its first step
    # (the fallback answers the next five: the primary's calls fail before leaving the process) and
    # stops after them; the primary then flaps (the provider overloaded twice more) and recovers.
    # Before the drill the job has fewer than min_requests (10) requests: no degraded-share alert can
    # fire earlier, so the one that fires during it is the drill's.
    _ticket(
        "drill-run-warmup",
        "TCK-141: onboarding checklist for the new support hires.",
        session=DRILL_SESSION,
        run=DRILL_RUN,
        checkpoint=CHECKPOINT_DRILL_STARTING,
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    *(
        _ticket(
            f"drill-failover-{n}",
            f"TCK-14{n + 1}: {text}",
            session=DRILL_SESSION,
            run=DRILL_RUN,
            host=HostDecisions(drill=True),
            checkpoint=CHECKPOINT_DRILL_RUNNING if n == 5 else None,
            expected_ending="completed",
            expected_model=FALLBACK_MODEL,
        )
        for n, text in enumerate(
            (
                "shared drive quota warnings for the design team.",
                "calendar invites arrive in the wrong time zone.",
                "the kiosk browser forgets its start page.",
                "laptop docking stations drop the second monitor.",
                "the VPN portal shows an expired certificate warning.",
            ),
            start=1,
        )
    ),
    _ticket(
        "exit-primary-flaps",
        "TCK-147: meeting-room displays show yesterday's bookings.",
        session=DRILL_SESSION,
        run=DRILL_RUN,
        checkpoint=CHECKPOINT_EXIT_STEP,
        provider=ProviderScenario(primary="status=529"),
        expected_ending="completed",
        expected_model=FALLBACK_MODEL,
    ),
    _ticket(
        "exit-primary-back",
        "TCK-148: expense tool rejects receipts over 5 MB.",
        session=DRILL_SESSION,
        run=DRILL_RUN,
        checkpoint=CHECKPOINT_EXIT_STEP,
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    _ticket(
        "exit-primary-flaps-again",
        "TCK-149: the badge reader at door 4 beeps twice and stays shut.",
        session=DRILL_SESSION,
        run=DRILL_RUN,
        checkpoint=CHECKPOINT_EXIT_STEP,
        provider=ProviderScenario(primary="status=529"),
        expected_ending="completed",
        expected_model=FALLBACK_MODEL,
    ),
    _ticket(
        "exit-primary-steady",
        "TCK-150: the intranet search ranks old policies first.",
        session=DRILL_SESSION,
        run=DRILL_RUN,
        checkpoint=CHECKPOINT_DRILL_RECOVERED,
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    # --- degraded mode: the primary fails, the fallback serves (the first time from the fallback's
    # own prompt cache; the other failovers find none: the cache-read share drops in degraded mode)
    _ticket(
        "primary-overloaded",
        "TCK-106: dashboard charts are blank in Safari.",
        provider=ProviderScenario(primary="status=529", fallback=PROMPT_CACHE),
        expected_ending="completed",
        expected_model=FALLBACK_MODEL,
    ),
    _ticket(
        "primary-rate-limited",
        "TCK-107: password reset e-mails arrive an hour late.",
        provider=ProviderScenario(primary="status=429"),
        expected_ending="completed",
        expected_model=FALLBACK_MODEL,
    ),
    # --- no permitted model left
    _ticket(
        "all-models-down",
        "TCK-108: mobile app crashes on launch (Android 15).",
        provider=ProviderScenario(primary="status=529", fallback="status=503"),
        expected_ending="model.unavailable",
    ),
    # --- host policy and the user say no
    _ticket(
        "server-not-allowed",
        "TCK-109: add dark mode to the admin console.",
        host=HostDecisions(server_allowed=False),
        expected_ending="policy.denied",
    ),
    _ticket(
        "confidential-ticket",
        f"TCK-110: {CONFIDENTIAL_MARKER} payroll file shared with a vendor.",
        expected_ending="policy.denied",
    ),
    _ticket(
        "budget-exhausted",
        "TCK-111: search returns stale results after reindex.",
        host=HostDecisions(budget_exhausted=True),
        expected_ending="policy.budget_exhausted",
    ),
    _ticket(
        "user-rejects",
        "TCK-112: please summarize the attached customer chat log.",
        host=HostDecisions(user_approves=False),
        expected_ending="user.denied",
    ),
    # --- the model declines
    _ticket(
        "model-refuses",
        "TCK-113: how do I bypass the license check on the build server?",
        provider=ProviderScenario(primary="refusal"),
        expected_ending="refused",
        expected_model=PRIMARY_MODEL,
    ),
    # --- stalls: the server's deadline passes; the host gives up on a slow call
    _ticket(
        "deadline-stall",
        "TCK-114: nightly backup job hangs at 99%.",
        tool="summarize_with_deadline",
        arguments={"deadline_s": 0.5},
        provider=ProviderScenario(primary="delay=2"),
        legacy_only=True,
        expected_ending="timeout",
    ),
    _ticket(
        "host-gives-up",
        "TCK-115: latency spikes on the EU cluster every hour.",
        provider=ProviderScenario(primary="delay=2"),
        host=HostDecisions(give_up_after_s=0.5),
        expected_ending="cancelled",
    ),
    # --- a host bug: the callback raises
    _ticket(
        "host-bug", "TCK-116: webhook retries flood the queue.", host=HostDecisions(crash=True), expected_ending="error"
    ),
    # --- degraded mode as a named state: the search backend is down during these steps (one outage:
    # the host enters it before the first and exits it after the last)
    _ticket(
        "search-outage-disclosed",
        "TCK-117: knowledge-base search returns nothing.",
        host=HostDecisions(degradation="search"),
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    _ticket(
        "search-outage-silent",
        "TCK-118: knowledge-base links 404 after the migration.",
        host=HostDecisions(degradation="search", disclose=False),
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    # --- an outage answer goes into the host's answer cache, and is served again after recovery
    _ticket(
        "outage-answer-cached",
        "TCK-119: the status page is stuck on 'degraded'.",
        provider=ProviderScenario(primary="status=529"),
        host=HostDecisions(cache_store="status-page"),
        expected_ending="completed",
        expected_model=FALLBACK_MODEL,
    ),
    _ticket(
        "cached-answer-after-recovery",
        "TCK-120: status page still says 'degraded' (customer follow-up).",
        host=HostDecisions(cache_read="status-page", disclose=False),
        expected_ending="completed",
        expected_model=FALLBACK_MODEL,
    ),
    # --- the fallback's refusal profile differs: degraded, and the task does not complete
    _ticket(
        "fallback-refuses",
        "TCK-122: how do I read another user's mailbox as admin?",
        provider=ProviderScenario(primary="status=529", fallback="refusal"),
        expected_ending="refused",
        expected_model=FALLBACK_MODEL,
    ),
    # --- canary: a small share of real traffic goes through the fallback on purpose
    _ticket(
        "canary-on-fallback",
        "TCK-121: CSV import rejects UTF-16 files.",
        host=HostDecisions(canary=True),
        expected_ending="completed",
        expected_model=FALLBACK_MODEL,
    ),
    # --- MCP sampling in depth: context scope, request identity, grants, stalls
    # the host grants allServers: above the policy's context_ceiling (context_above_ceiling)
    _ticket(
        "wide-context-granted",
        "TCK-131: merge the two on-call calendars into one.",
        arguments={"include_context": "allServers"},
        host=HostDecisions(grant_scope="allServers"),
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    # the same request retried with a wider scope (scope_widened), then a narrower one (fine)
    _ticket(
        "narrow-first",
        "TCK-132: certificate for api.example.com expires Friday.",
        arguments={"include_context": "none"},
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    _ticket(
        "retry-wider-context",
        "TCK-132: certificate for api.example.com expires Friday.",
        arguments={"include_context": "thisServer"},
        retry_of="narrow-first",
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    _ticket(
        "retry-narrower-context",
        "TCK-132: certificate for api.example.com expires Friday.",
        arguments={"include_context": "none"},
        retry_of="narrow-first",
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    # the same request approved, then rejected (decision_flipped)
    _ticket(
        "approved-once",
        "TCK-133: rotate the staging database password.",
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    _ticket(
        "rejected-on-retry",
        "TCK-133: rotate the staging database password.",
        host=HostDecisions(user_approves=False),
        retry_of="approved-once",
        expected_ending="user.denied",
    ),
    # denied for ticket-server, then the same request from another server (rerouted_after_denial)
    _ticket(
        "denied-here",
        f"TCK-134: {CONFIDENTIAL_MARKER} export all salaries to a spreadsheet.",
        expected_ending="policy.denied",
    ),
    _ticket(
        "rerouted-elsewhere",
        f"TCK-134: {CONFIDENTIAL_MARKER} export all salaries to a spreadsheet.",
        server="ticket-server-b",
        retry_of="denied-here",
        expected_ending="policy.denied",
    ),
    # the gateway's own quota code (-32099), mapped by the policy file's [[ending_rules]]
    _ticket(
        "gateway-quota",
        "TCK-135: translate the release notes into German.",
        host=HostDecisions(gateway_quota=True),
        expected_ending="policy.budget_exhausted",
    ),
    # an approver adds budget after the exhaustion (a grant), then once more without one
    _ticket(
        "grant-after-quota",
        "TCK-136: summarise yesterday's incident channel.",
        host=HostDecisions(grant_usd=2.0),
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    _ticket(
        "grant-without-exhaustion",
        "TCK-137: draft the quarterly access review e-mail.",
        host=HostDecisions(grant_usd=1.0),
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
    # the budget denial raised as MCPError (on 2026-07-28 call_tool raises an exception group)
    _ticket(
        "budget-raised",
        "TCK-138: regenerate the API client for v3.",
        host=HostDecisions(raise_budget=True),
        expected_ending="policy.budget_exhausted",
    ),
    # a slow provider: pending past the policy's stall_threshold_seconds (a stall), then completes
    _ticket(
        "slow-provider",
        "TCK-139: the wiki search times out for long queries.",
        provider=ProviderScenario(primary="delay=2.5"),
        expected_ending="completed",
        expected_model=PRIMARY_MODEL,
    ),
)

RUN_NAME: Final = "ticket-triage"  # every run is of this task (one step, or the steps of one live run)
# The host's (simulated) eval suite: the score an answer gets, by the model that wrote it.
EVALUATION_NAME: Final = "triage-summary-quality"
QUALITY_BY_MODEL: Final = {PRIMARY_MODEL: 0.875, FALLBACK_MODEL: 0.625, "claude-opus-5-5": 0.75}


def host_notices_degradation(step: Step) -> bool:
    """The host knows this step's answer is degraded: it fell back, declared it, chose it or cached it."""
    fell_back = (step.provider.primary is not None or step.host.drill) and step.expected_model == FALLBACK_MODEL
    return fell_back or bool(step.host.degradation or step.host.canary or step.host.cache_read)


def runs_of(steps: Iterable[Step]) -> list[tuple[Step, ...]]:
    """The runs ``steps`` (as one session runs them, in order) make: consecutive steps naming the
    same ``run`` are one run, every other step a run of its own."""
    runs: list[list[Step]] = []
    for step in steps:
        if step.run is not None and runs and runs[-1][-1].run == step.run:
            runs[-1].append(step)
        else:
            runs.append([step])
    return [tuple(run) for run in runs]


def runs_done(done_steps: Iterable[dict[str, Any]]) -> list[tuple[Step, ...]]:
    """The runs of the steps of a scenario-done event (``host.py``: each names its step and the
    number of its run, ``run``), in order."""
    by_name = {step.name: step for step in STEPS}
    runs: dict[Any, list[Step]] = {}
    for done in done_steps:
        runs.setdefault(done["run"], []).append(by_name[done["step"]])
    return [tuple(run) for run in runs.values()]


def expected_run(steps: Sequence[Step]) -> tuple[str, bool]:
    """(mode, silent incident) a run of these steps should end with: degraded when an answer came
    from another model than the primary, a named degradation (or the drill) was active, or it was
    canary traffic; an incident when degraded and the host told the person about none of it (it did
    not notice, or chose not to)."""
    degraded = any(
        step.expected_model not in (None, PRIMARY_MODEL) or step.host.degradation or step.host.canary or step.host.drill
        for step in steps
    )
    disclosed = any(host_notices_degradation(step) and step.host.disclose for step in steps)
    return ("degraded" if degraded else "primary"), degraded and not disclosed


STEPS_BY_TICKET: Final = {step.ticket: step for step in STEPS if step.retry_of is None}
if len(STEPS_BY_TICKET) != sum(1 for s in STEPS if s.retry_of is None) or len({s.name for s in STEPS}) != len(STEPS):
    raise ValueError(
        "step names and tickets must be unique (the host finds a step by its ticket); "
        "a retry_of step repeats its earlier step's ticket"
    )
