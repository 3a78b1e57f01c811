"""A run: one task of the agent, its mode, outcome, cost, and whether the person was told.

What becomes a run (the same on both MCP protocol paths; ``docs/telemetry.md`` "Runs"):

1. an explicit run: ``with otel_sampling.run("ticket-triage"):`` (sync or ``async with``; a
   :class:`contextvars.ContextVar` carries it into tasks);
2. an agent span that no run owns: a span started with ``gen_ai.operation.name`` ``invoke_agent``
   or ``invoke_workflow`` (``names.AGENT_OPERATIONS``, the GenAI semantic conventions' agent and
   framework spans, which name that attribute at span creation), whatever its kind and parent, is
   an implicit run named after the span, ending with it, with the outcome of the sampling requests
   that ended inside it (``failed`` when its status is ERROR;
   :func:`~otel_sampling.rules.verdict.agent_run_outcome`);
3. a host-side sampling request that no run owns, whatever its parent (a local CLIENT span such as
   a framework's ``tools/call``, a remote parent from ``params._meta``, none): a run of its own named
   ``sampling/createMessage``, ended by the request with the outcome of its ending
   (:mod:`otel_sampling.rules.verdict`: ``completed``, ``denied`` for a decision, ``failed``).

No other span starts a run: a web framework's ``GET /health`` SERVER span, an INTERNAL span of
another library, a bare provider call. Spans belong to the run current when they start, or else to
the run that owns their trace (so a sampling span whose parent came from the server through
``params._meta`` still lands in the host's run). A run owns the traces of its spans while it is
open.

A run is degraded if anything inside it was: a span that ended inside it with
``degradation.mode=degraded``, or a named degradation active at any moment while it was open.
When it ends it records ``agent.runs``, ``agent.run.cost.usd`` (the priced provider calls inside
it plus :func:`add_cost`; no point when a call inside reported tokens and had no price),
``agent.run.duration``, ``agent.run.steps`` (the provider calls made inside it, failed ones
included) and ``agent.run.tokens`` (their input and output tokens, by ``gen_ai.token.type``; no
point for a type that a call which did not fail left unreported). A run that ended degraded, or
that contains a substitution outside policy, without an ``otel_sampling.disclose()`` call is a
silent-degradation incident (a signal that never reaches the person is a record, not a control):
span event
``degradation.silent_incident`` and ``degradation.silent_incidents``, labelled with whether the
host tracks disclosure at all (``degradation.disclosure.tracked``: it called ``disclose()`` in this
process, or ``OTEL_SAMPLING_DISCLOSURE_TRACKED=true``), so that only a host that does is paged.

A run is also the key of the failover memory for provider calls made in it outside a sampling
request (:mod:`otel_sampling.records.failover`), and the scope that judges them: the policy table
:func:`policy_scope` finds for it and the runs it is nested in (:mod:`otel_sampling.rules.scopes`).
An outside-policy substitution such a call shows makes its run an ``outside_policy`` incident cause.

The registry of open runs (:data:`runs`) and the explicit run of a context (:data:`current_run_var`)
live here; this module is the only one that reads or writes them. So does the span processor
(:class:`DegradationSpanProcessor`) that tells the runs about every span and stamps degraded mode
on each one as it starts.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_sampling import foreign_spans, instants, locks, names, state
from otel_sampling.metrics import clean, finite, recorded_in
from otel_sampling.policy import Policy
from otel_sampling.records.failover import FailedModels
from otel_sampling.rules import scopes, verdict
from otel_sampling.rules.verdict import (
    NO_POLICY,
    CallSummary,
    CallVerdict,
    agent_run_outcome,
    judge_run,
    reasons_of,
    run_mode,
    server_model_reason,
)

logger = logging.getLogger(__name__)

MAX_REASONS = 16  # distinct degradation reasons remembered per run
MAX_NESTING = 64  # runs the scope rule walks outward through (a run nested deeper reads the first 64)
_AGENT_OPERATIONS = frozenset(names.AGENT_OPERATIONS)

_TOKEN_TYPES = (names.TOKEN_TYPE_INPUT, names.TOKEN_TYPE_OUTPUT)

#: Distinct tool-call fingerprints a run remembers (32 characters each: at most about 12 KB a run).
MAX_TOOL_CALLS = 128

#: Runs tracked at once (a root span that never ends must not grow memory).
MAX_OPEN_RUNS = 4096

# One lock for every run's short sections (none takes another run's lock, nor runs.lock): a lock
# per run would cost its making and its fork-safety bookkeeping on every sampling request's run.
_RUN_LOCK = locks.new()


class RunRegistry:
    """The open runs and what they own; every field is read and written under :attr:`lock`
    (``by_trace`` may be read without it: a dict lookup is atomic)."""

    __slots__ = ("lock", "by_trace", "open", "by_span")

    def __init__(self) -> None:
        self.lock = locks.new()
        self.by_trace: OrderedDict[int, Run] = OrderedDict()  # trace id -> run owning it, oldest first
        self.open: OrderedDict[int, Run] = OrderedDict()  # id(run) -> run, oldest first
        # span id -> run, for spans of an explicit run whose trace another run owns (a run nested in a run)
        self.by_span: OrderedDict[int, Run] = OrderedDict()


runs = RunRegistry()  # the open runs and what they own (process-wide)
#: The explicit run (``with otel_sampling.run(...)``) of this context.
current_run_var: ContextVar[Run | None] = ContextVar("otel_sampling_current_run", default=None)


class Run:
    """State of one run. Hosts get it from ``with otel_sampling.run(...) as run`` to set the outcome."""

    __slots__ = (
        "name",
        "tool",
        "scope_name",
        "_lock",
        "_degraded",
        "_reasons",
        "_outside_policy",
        "_disclosed",
        "_cost",
        "_unpriced",
        "_steps",
        "_tokens",
        "_tokens_unknown",
        "_tool_calls",
        "_outcome",
        "_request_outcomes",
        "_ended",
        "_trace_ids",
        "_root_span_id",
        "last_served",
        "_parent",
        "_failover",
        "_unanswered",
        "_handed_over",
        "__weakref__",
    )

    def __init__(
        self,
        name: str,
        root_span_id: int | None = None,
        parent: Run | None = None,
        *,
        tool: tuple[str, str] | None = None,
        scope_name: str | None = None,
    ) -> None:
        self.name = name
        #: ``(server, tool)`` of a server's ``tools/call`` run; None for any other run.
        self.tool = tool
        #: the name its ``[runs."<name>"]`` policy table is looked up by: its name, or an agent
        #: span's ``gen_ai.agent.name``
        self.scope_name = scope_name if scope_name is not None else name
        self._parent = parent  # the run this one is nested in: what happens inside counts there too
        self._lock = _RUN_LOCK
        self._degraded = False
        self._reasons: dict[str, None] = {}
        self._outside_policy = False
        self._disclosed = False
        self._cost = 0.0
        self._unpriced = False  # a call inside reported tokens and had no price: the run's cost is unknown
        self._steps = 0  # provider calls made inside it (failed ones included: each was a turn asked for)
        self._tokens = [0, 0]  # input, output tokens of those calls
        self._tokens_unknown = [False, False]  # a call that served reported no input / output count
        self._tool_calls: set[str] | None = None  # fingerprints of the tool calls sent in it (made at the first)
        self._outcome: str | None = None
        # request_run_outcome() of the sampling requests that ended inside it (at most the three OUTCOMES)
        self._request_outcomes: set[str] = set()
        self._ended = False
        self._trace_ids: dict[int, None] = {}  # traces it owns in runs.by_trace (leave with their eviction)
        self._root_span_id = root_span_id  # set for an agent span's run: the span that ends it
        # provider calls made in the run outside a sampling request (made at the first failed call)
        self._failover: FailedModels | None = None
        # (model, provider, region) of the last provider call that succeeded inside the run
        self.last_served: tuple[str | None, str, str | None] | None = None
        # settle() of each server-side sampling request in the run that gave no answer (tool runs only)
        self._unanswered: list[Callable[[bool], None]] | None = None
        self._handed_over = False  # one round of a tool call that goes on in a retry: records nothing

    @property
    def degraded(self) -> bool:
        return self._degraded

    @property
    def reasons(self) -> tuple[str, ...]:
        """``degradation.reason`` values seen inside the run so far, first seen first (``_unknown``
        when only spans that gave no reason were degraded)."""
        return tuple(self._reasons) or ((names.UNKNOWN_LABEL,) if self._degraded else ())

    @property
    def disclosed(self) -> bool:
        return self._disclosed

    @property
    def cost_usd(self) -> float:
        return self._cost

    def set_outcome(self, outcome: str) -> None:
        """Set the outcome the run ends with (default ``completed``, or ``failed`` on an exception).

        ``outcome`` is a short host-chosen word (``"abandoned"``, ``"escalated"``); it becomes the
        ``agent.run.outcome`` label, capped like every host-named label. ``"denied"``
        (``names.OUTCOME_DENIED``) is the one the five numbers read: the task was declined by
        policy, the user or the budget before any model was asked, so it was not attempted and
        the completion rate leaves it out (``"failed"`` is a task attempted and not done).

        Raises:
            TypeError: not a string.  ValueError: empty.
        """
        if not isinstance(outcome, str):
            raise TypeError(f"run outcome must be a string, got {type(outcome).__name__}")
        if not outcome.strip():
            raise ValueError("run outcome must not be empty")
        self._outcome = outcome

    def mark_degraded(self, reasons: tuple[str, ...] | list[str]) -> None:
        with self._lock:
            self._degraded = True
            for reason in reasons:
                if len(self._reasons) < MAX_REASONS:
                    self._reasons.setdefault(str(reason), None)
        if self._parent is not None:
            self._parent.mark_degraded(reasons)

    def note_request(self, outcome: str) -> None:
        """A sampling request inside the run (not its own run) ended, with ``outcome``
        (:func:`~otel_sampling.rules.verdict.request_run_outcome` of its ending); the enclosing
        runs too. An agent span's run ends with what its requests say
        (:func:`~otel_sampling.rules.verdict.agent_run_outcome`)."""
        with self._lock:
            if self._ended:
                return
            self._request_outcomes.add(outcome)
        if self._parent is not None:
            self._parent.note_request(outcome)

    def _note_outside_policy(self) -> None:
        self._outside_policy = True
        if self._parent is not None:
            self._parent._note_outside_policy()

    def note_disclosure(self) -> None:
        """The person was told about the degradation (``otel_sampling.disclose``); the enclosing runs too."""
        self._disclosed = True
        if self._parent is not None:
            self._parent.note_disclosure()

    def _add_cost(self, usd: float) -> None:  # counted once, in the innermost run
        with self._lock:
            self._cost += usd

    def on_call(self, call: CallSummary, reference: verdict.Reference = NO_POLICY) -> CallVerdict:
        """A provider call made in the run outside any sampling request ended: it is judged here,
        against ``reference`` (its scope's, :func:`policy_scope`), with the run as the key of its
        failover memory (:class:`~otel_sampling.records.failover.FailedModels`), then absorbed
        (:meth:`absorb`); an ``outside_policy`` verdict is noted in the run and those around it."""
        failed_over = False
        with self._lock:
            failed = call.ending.error_type is not None
            if failed and self._failover is None:
                self._failover = FailedModels()
            if self._failover is not None:  # a success with no failure standing is no failover
                failed_over = self._failover.observe(call.requested, failed)
        self.absorb(call)
        judged = verdict.judge_call(call, reference, failed_over)
        if judged.substitution == names.SUBSTITUTION_OUTSIDE_POLICY and not self._ended:
            self._note_outside_policy()
        return judged

    def lineage(self) -> tuple[scopes.RunFacts, ...]:
        """This run and the runs it is nested in, innermost first, as the scope rule reads them."""
        facts: list[scopes.RunFacts] = []
        run: Run | None = self
        while run is not None and len(facts) < MAX_NESTING:
            facts.append(scopes.RunFacts(run.scope_name, run.tool))
            run = run._parent
        return tuple(facts)

    def absorb(self, call: CallSummary) -> None:
        """A provider call made in the run (directly, or inside a sampling request it owns) ended: its
        cost is summed here (the innermost run), and a call that served records what served it (cache
        provenance reads it)."""
        with self._lock:
            if self._ended:
                return
            if call.usd is not None:
                self._cost += call.usd
            elif call.usage.input_tokens is not None or call.usage.output_tokens is not None:
                self._unpriced = True
            self._steps += 1
            usage, tokens = call.usage, self._tokens
            # A failed call that reports no count used nothing we know of; a call that served did.
            if usage.input_tokens is not None:
                tokens[0] += usage.input_tokens
            elif not call.failed:
                self._tokens_unknown[0] = True
            if usage.output_tokens is not None:
                tokens[1] += usage.output_tokens
            elif not call.failed:
                self._tokens_unknown[1] = True
            served = call.ending.error_type is None
            if served:
                self.last_served = (call.served or call.requested, call.provider, call.region)
            # None but in a tool run holding a sampling request that gave no answer
            unanswered = self._unanswered
            reason = server_model_reason(unanswered is not None, served) if unanswered else None
            if reason is not None:
                self._unanswered = None
        if reason is not None and unanswered:
            self.mark_degraded((reason,))
            _settle(unanswered, True)

    def await_server_model(self, settle: Callable[[bool], None]) -> bool:
        """A server-side sampling request of this tool run gave no answer
        (:func:`~otel_sampling.rules.verdict.sampling_gave_no_answer`): when a provider call serves
        in the run later, the run is degraded ``server_model`` and ``settle(True)`` is called; when
        the run ends first, ``settle(False)``. False (``settle`` not kept) for a run that is no tool
        run or has ended."""
        with self._lock:
            if self.tool is None or self._ended:
                return False
            if self._unanswered is None:
                self._unanswered = []
            self._unanswered.append(settle)
        return True

    def hand_over(self) -> None:
        """This run is one round of a tool call that goes on in another request (a 2026-07-28
        ``input_required`` result, retried by the client): its end records no point and no
        incident; the next round's run takes over what it saw (:meth:`take_over`)."""
        self._handed_over = True

    def take_over(self, earlier: Run) -> None:
        """Fold an earlier round's run (:meth:`hand_over`) into this one: its degradation reasons,
        substitution outside policy, disclosure and cost."""
        if earlier.degraded:
            self.mark_degraded(earlier.reasons)
        if earlier._outside_policy:
            self._note_outside_policy()
        if earlier._disclosed:
            self.note_disclosure()
        with self._lock:
            self._cost += earlier._cost
            self._unpriced = self._unpriced or earlier._unpriced

    def note_tool_call(self, fingerprint: str) -> bool:
        """The host sent a tool call with this fingerprint
        (:func:`~otel_sampling.records.ledger.tool_call_fingerprint`) inside the run: True when an
        earlier one in the run had the same. The first ``MAX_TOOL_CALLS`` distinct fingerprints are
        remembered; a later new one is not (a repeat of it goes unseen), so a run's memory is bounded."""
        with self._lock:
            if self._ended:
                return False
            seen = self._tool_calls
            if seen is None:
                seen = self._tool_calls = set()
            if fingerprint in seen:
                return True
            if len(seen) < MAX_TOOL_CALLS:
                seen.add(fingerprint)
            return False

    def __repr__(self) -> str:
        return f"Run(name={self.name!r}, degraded={self.degraded}, disclosed={self._disclosed})"


class RunScope:
    """The explicit run scope :func:`run` returns: ``with`` / ``async with`` yields the :class:`Run`."""

    __slots__ = ("_run", "_span", "_start", "_tokens", "_conversation_id")

    def __init__(self, name: str, conversation_id: str | None = None, *, tool: tuple[str, str] | None = None) -> None:
        """``tool``: (server name, tool name) for the run of a server-side MCP ``tools/call``
        (:attr:`Run.tool`); None for every other run.

        Raises:
            TypeError: ``name`` or ``conversation_id`` is not a string, ``tool`` not a pair of strings.
            ValueError: ``name`` or a given ``conversation_id`` is empty.
        """
        if tool is not None and not (
            isinstance(tool, tuple) and len(tool) == 2 and all(isinstance(part, str) for part in tool)
        ):
            raise TypeError(f"tool must be a (server, tool) pair of strings, got {tool!r:.80}")
        if not isinstance(name, str):
            raise TypeError(f"run name must be a string, got {type(name).__name__}")
        if not name.strip():
            raise ValueError("run name must not be empty")
        if conversation_id is not None and not isinstance(conversation_id, str):
            raise TypeError(f"conversation_id must be a string, got {type(conversation_id).__name__}")
        if conversation_id is not None and not conversation_id.strip():
            raise ValueError("conversation_id must not be empty (leave it out when there is none)")
        self._conversation_id = conversation_id
        # its parent is the run current where it is entered, not where it is built
        self._run = Run(name, tool=tool)
        self._span: trace.Span | None = None
        self._start = 0.0
        self._tokens: tuple[Token[Run | None], object] | None = None

    def __enter__(self) -> Run:
        run = self._run
        # Nested in the run current here, explicit or implicit (a framework's agent span): what
        # happens inside counts there too, and the silent incident is counted once, out there.
        parent = current_run()
        run._parent = parent if parent is not None and not parent._ended else None
        token = current_run_var.set(run)  # first: the run's own span belongs to it, not to a new implicit run
        _register(run)
        active = state.active_reasons()
        if active:
            run.mark_degraded(active)
        self._start = time.perf_counter()
        otel_token = None
        try:
            telemetry = state.api_instruments()
            label = telemetry.run_name_label.value(run.name)
            span = telemetry.tracer.start_span(f"{names.OPERATION_INVOKE_AGENT} {label}", kind=SpanKind.INTERNAL)
            if span.is_recording():
                attributes = {
                    names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT,
                    names.GEN_AI_AGENT_NAME: label,
                    names.AGENT_RUN_NAME: label,
                }
                conversation = self._conversation_id and clean(
                    self._conversation_id, telemetry.settings.attribute_max_length
                )
                if conversation:
                    attributes[names.GEN_AI_CONVERSATION_ID] = conversation
                scope = policy_scope(telemetry.settings.policy, run)
                if scope is not None:
                    attributes[names.POLICY_SCOPE] = scope.label  # built from the policy file's table names
                span.set_attributes(attributes)
            self._span = span
            _own_trace(run, span.get_span_context())
            otel_token = otel_context.attach(trace.set_span_in_context(span))
        except Exception:
            logger.debug("otel-sampling: could not start the run span", exc_info=True)
        self._tokens = (token, otel_token)
        return run

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        run = self._run
        if exc is not None and run._outcome is None:
            run._outcome = names.OUTCOME_FAILED
        if self._tokens is not None:
            token, otel_token = self._tokens
            self._tokens = None
            if otel_token is not None:
                otel_context.detach(otel_token)  # type: ignore[arg-type]
            try:
                current_run_var.reset(token)
            except ValueError:  # exited in another context than it was entered in: nothing to undo here
                logger.debug("otel-sampling: run %r exited in another context", run.name, exc_info=True)
        span = self._span
        try:
            _finish(run, time.perf_counter() - self._start, span)
        finally:
            if span is not None:
                if exc is not None and span.is_recording():
                    span.set_status(Status(StatusCode.ERROR))
                    span.set_attribute(names.ERROR_TYPE, type(exc).__qualname__)
                span.end()

    async def __aenter__(self) -> Run:
        return self.__enter__()

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.__exit__(exc_type, exc, tb)


def current_run() -> Run | None:
    """The run in this context: the explicit one, else the one owning the current span's trace."""
    explicit = current_run_var.get()  # _explicit(), inline: every tool call and provider call asks
    if explicit is not None and not explicit._ended:
        return explicit
    if not runs.by_trace:  # no run owns any trace (a bare provider call): skip the context lookup
        return None
    trace_id = trace.get_current_span().get_span_context().trace_id
    return runs.by_trace.get(trace_id) if trace_id else None


def policy_scope(policy: Policy, run: Run | None) -> scopes.Scope | None:
    """The policy scope of a provider call made in ``run`` (None: in no run) outside a sampling
    request (:func:`otel_sampling.rules.scopes.scope_of`); None: no table covers it."""
    if run is None:
        return scopes.scope_of(policy, ()) if policy.default is not None else None
    return scopes.scope_of(policy, run.lineage())


def current_reasons() -> tuple[str, ...]:
    """Why the current state is degraded: active named degradations, a canary block, and what the
    current run has seen so far; empty when it is primary."""
    reasons = state.active_reasons()
    current = current_run()
    if current is not None and current.degraded:
        reasons = tuple(dict.fromkeys((*reasons, *current.reasons)))
    return reasons


def current_mode() -> str:
    """``degraded`` when :func:`current_reasons` is not empty, else ``primary``."""
    return run_mode(bool(current_reasons()))


def run_owning(span: trace.Span) -> Run | None:
    """The open run ``span`` belongs to: the explicit run of this context, else the run owning its trace."""
    explicit = _explicit()
    if explicit is not None:
        return explicit
    trace_id = span.get_span_context().trace_id
    return runs.by_trace.get(trace_id) if trace_id and runs.by_trace else None


def add_cost(usd: float, span: trace.Span | None = None) -> None:
    """Add ``usd`` (US dollars, finite, >= 0) to the run that ``span`` (default: the current
    context) belongs to; summed into ``agent.run.cost.usd`` when the run ends. No run: nothing.

    Raises:
        TypeError: not a number (a bool is not one).  ValueError: negative or not finite.
    """
    if isinstance(usd, bool) or not isinstance(usd, (int, float)):
        raise TypeError(f"cost must be a number of USD, got {type(usd).__name__}")
    if not finite(usd) or usd < 0:
        raise ValueError(f"cost must be a finite, non-negative number of USD, got {usd!r:.40}")
    target = _explicit() if span is None else None
    if target is None:
        trace_id = (span or trace.get_current_span()).get_span_context().trace_id
        target = runs.by_trace.get(trace_id) if trace_id else None
    if target is not None and not target._ended:
        target._add_cost(float(usd))


# ---------------------------------------------------------------------- called by the span processor
def span_started(span: Any) -> None:
    """Attribute a started span to a run; an agent span that no run owns starts an implicit one."""
    span_context = span.get_span_context()
    trace_id = span_context.trace_id
    explicit = _explicit()
    if explicit is not None:
        _own_trace(explicit, span_context)
        if runs.by_trace.get(trace_id) is not explicit:
            with runs.lock:
                runs.by_span[span_context.span_id] = explicit
                while len(runs.by_span) > MAX_OPEN_RUNS:
                    runs.by_span.popitem(last=False)
        return
    if trace_id in runs.by_trace or not _is_agent_span(span):
        return  # an owned trace's, or not an agent's span: an HTTP server span, another library's work
    name = getattr(span, "name", "") or names.UNKNOWN_LABEL
    _start_implicit(name, span_context, root=True, scope_name=_agent_name(span.attributes, name))


def run_may_take(span: Any) -> bool:
    """Whether :func:`span_started` may attribute ``span`` to a run: a run is open in this context,
    a run owns some trace, or ``span`` is an agent's (it starts one). False for most spans of a
    process running no agent (a bare provider call): the span processor then does nothing more."""
    return _explicit() is not None or bool(runs.by_trace) or _is_agent_span(span)


def _agent_name(attributes: Any, span_name: str) -> str | None:
    """The name an agent span's ``[runs]`` table is looked up by: its ``gen_ai.agent.name``, else its
    span name after the operation (semconv names it ``invoke_agent {gen_ai.agent.name}``); None:
    the span name itself."""
    agent = attributes.get(names.GEN_AI_AGENT_NAME)
    if isinstance(agent, str) and agent:
        return agent
    prefix = f"{attributes.get(names.GEN_AI_OPERATION_NAME)} "
    if span_name.startswith(prefix) and span_name[len(prefix) :].strip():
        return span_name[len(prefix) :]
    return None


def _is_agent_span(span: Any) -> bool:
    attributes = getattr(span, "attributes", None)
    return attributes is not None and attributes.get(names.GEN_AI_OPERATION_NAME) in _AGENT_OPERATIONS


def open_request_run(span: trace.Span, active: tuple[str, ...] = ()) -> Run | None:
    """The run of a host-side sampling request that no run owns (explicit or owning its trace):
    a run of its own named ``sampling/createMessage``, owning the request's trace; None when a run
    owns it, when no instrumentor is instrumented (no span processor feeds runs) or when the
    span has no valid context. ``active``: the reasons of the named degradations around the request
    as it started (the run is degraded by them). The request ends it with :func:`end_request_run`."""
    if not state.hooked:
        return None
    span_context = span.get_span_context()
    if not span_context.is_valid or _explicit() is not None or span_context.trace_id in runs.by_trace:
        return None
    return _start_implicit(names.SPAN_SAMPLING, span_context, root=False, active=active)


def end_request_run(
    own: Run,
    outcome: str,
    reasons: tuple[str, ...],
    outside_policy: bool,
    duration_s: float,
    span_context: trace.SpanContext,
    context: otel_context.Context | None = None,
) -> None:
    """End a sampling request's own run (:func:`open_request_run`) with ``outcome``
    (:func:`~otel_sampling.rules.verdict.request_run_outcome`); ``reasons`` (its
    ``degradation.reason`` values, empty when primary) and ``outside_policy`` fold the request's own
    verdict in, also when its span was not recorded (sampled off: no span processor saw it).
    ``context``: the request's metrics context (:func:`~otel_sampling.metrics.recorded_in` of its
    span), which the run's points are recorded in too."""
    if reasons:
        own.mark_degraded(reasons)
    if outside_policy:
        own._note_outside_policy()
    if own._outcome is None:
        own._outcome = outcome
    _finish(own, duration_s, None, incident_parent=span_context, context=context)


def span_ended(span: Any) -> None:
    """Fold an ended span into its run; the end of an agent span's run's span ends the run."""
    if not runs.by_trace and not runs.by_span:  # no run owns anything: nothing to fold
        return
    span_context = span.get_span_context() if hasattr(span, "get_span_context") else span.context
    owner = runs.by_span.pop(span_context.span_id, None) if runs.by_span else None
    owner = owner or runs.by_trace.get(span_context.trace_id)
    if owner is None or owner._ended:
        return
    attributes = span.attributes or {}
    if attributes.get(names.DEGRADATION_MODE) == names.MODE_DEGRADED:
        owner.mark_degraded(reasons_of(attributes.get(names.DEGRADATION_REASON)))
    if attributes.get(names.SAMPLING_SUBSTITUTION) == names.SUBSTITUTION_OUTSIDE_POLICY:
        owner._note_outside_policy()
    if owner._root_span_id == span_context.span_id:
        if owner._outcome is None:  # the host's own word (set_outcome) wins
            failed = span.status is not None and span.status.status_code is StatusCode.ERROR
            with owner._lock:
                requests = frozenset(owner._request_outcomes)
            owner._outcome = agent_run_outcome(failed, requests)
        start, end = span.start_time or 0, span.end_time or 0
        _finish(owner, max(0, end - start) / 1e9, None, incident_parent=span_context)


def mark_open_runs_degraded(reason: str) -> None:
    """A named degradation was entered: every run open now ran degraded, for ``reason``."""
    with runs.lock:
        open_runs = tuple(runs.open.values())
    for open_run in open_runs:
        open_run.mark_degraded((reason,))


# ---------------------------------------------------------------------- internals
def _explicit() -> Run | None:
    """The explicit run of this context while it is open. A task started inside a run keeps the
    run in its context after the run ended: its later work is not that run's."""
    explicit = current_run_var.get()
    return explicit if explicit is not None and not explicit._ended else None


def _settle(settles: list[Callable[[bool], None]], server_model: bool) -> None:
    for settle in settles:
        try:
            settle(server_model)
        except Exception:
            logger.debug("otel-sampling: could not settle a server-side sampling request", exc_info=True)


def _start_implicit(
    name: str,
    span_context: trace.SpanContext,
    root: bool,
    active: tuple[str, ...] | None = None,
    scope_name: str | None = None,
) -> Run:
    """An implicit run owning ``span_context``'s trace; ``root``: the span's end ends it. ``active``:
    the reasons around it as it starts, when its starter read them already (else read here).
    ``scope_name``: the name its ``[runs]`` table is looked up by (an agent's ``gen_ai.agent.name``)."""
    implicit = Run(name, root_span_id=span_context.span_id if root else None, scope_name=scope_name)
    if active is None:
        active = state.active_reasons()
    if active:
        implicit.mark_degraded(active)
    trace_id = span_context.trace_id
    with runs.lock:  # registered and owning its trace in one section (what _register and _own_trace do)
        _open(implicit)
        if span_context.is_valid and trace_id not in runs.by_trace:
            _take_trace(implicit, trace_id)
    return implicit


def _register(new: Run) -> None:
    with runs.lock:
        _open(new)


def _open(new: Run) -> None:  # called with runs.lock held
    runs.open[id(new)] = new
    while len(runs.open) > MAX_OPEN_RUNS:
        _, evicted = runs.open.popitem(last=False)
        _forget_traces(evicted)


def _own_trace(owner: Run, span_context: trace.SpanContext) -> None:
    trace_id = span_context.trace_id
    if not span_context.is_valid or trace_id in runs.by_trace:
        return
    with runs.lock:
        if owner._ended or trace_id in runs.by_trace:
            return
        _take_trace(owner, trace_id)


def _take_trace(owner: Run, trace_id: int) -> None:  # called with runs.lock held
    runs.by_trace[trace_id] = owner
    owner._trace_ids[trace_id] = None
    while len(runs.by_trace) > MAX_OPEN_RUNS:
        evicted, previous_owner = runs.by_trace.popitem(last=False)
        previous_owner._trace_ids.pop(evicted, None)  # a run open for a million traces keeps 4096


def _forget_traces(ended: Run) -> None:  # called with runs.lock held
    for trace_id in ended._trace_ids:
        if runs.by_trace.get(trace_id) is ended:
            del runs.by_trace[trace_id]


def _finish(
    ended: Run,
    duration_s: float,
    span: trace.Span | None,
    incident_parent: trace.SpanContext | None = None,
    context: otel_context.Context | None = None,
) -> None:
    with runs.lock:
        if ended._ended:
            return
        ended._ended = True
        runs.open.pop(id(ended), None)
        _forget_traces(ended)
        unanswered, ended._unanswered = ended._unanswered, None
    if unanswered:
        _settle(unanswered, False)
    if not ended._handed_over:
        try:
            _record(ended, duration_s, span, incident_parent, context)
        except Exception:
            logger.debug("otel-sampling: could not record the end of run %r", ended.name, exc_info=True)
    # An ended run passes nothing on: a run nested in it keeps it, but not the chain above it
    # (a job that starts the next job from inside its run would otherwise keep every earlier run).
    ended._parent = None


def _record(
    ended: Run,
    duration_s: float,
    span: trace.Span | None,
    incident_parent: trace.SpanContext | None,
    context: otel_context.Context | None = None,
) -> None:
    telemetry = state.api_instruments()
    name = telemetry.run_name_label.value(ended.name)
    outcome = telemetry.outcome_label.value(ended._outcome or names.OUTCOME_COMPLETED)
    outer = ended._parent
    degraded, disclosed_run = ended._degraded, ended._disclosed
    judged = judge_run(
        degraded=degraded,
        outside_policy=ended._outside_policy,
        disclosed=disclosed_run,
        inside_open_run=outer is not None and not outer._ended,
    )
    mode = judged.mode
    disclosed = "true" if disclosed_run else "false"
    reasons = [telemetry.reason_label.value(r) for r in ended.reasons] if degraded else []
    base = {names.AGENT_RUN_NAME: name, names.AGENT_RUN_OUTCOME: outcome, names.DEGRADATION_MODE: mode}
    if context is None:
        context = _recorded_in(span, incident_parent)
    telemetry.agent_runs.add(1, {**base, names.AGENT_RUN_DISCLOSED: disclosed}, context=context)
    # Also 0 (cost per completed task divides by runs of every mode), but never for a run with an
    # unpriced call: its cost is unknown, and a 0 would read as free (otel_sampling.client.unpriced
    # names the models to price).
    if not ended._unpriced:
        telemetry.run_cost.add(ended._cost, base, context=context)
    telemetry.run_duration.record(duration_s, base, context=context)
    # Steps and tokens per run, beside its cost: a weaker model takes more turns. A token type a
    # call that served did not report is unknown for the run: no point (a sum would read low).
    telemetry.run_steps.record(ended._steps, base, context=context)
    tokens, unknown = ended._tokens, ended._tokens_unknown
    if not unknown[0]:
        telemetry.run_tokens.record(tokens[0], {**base, names.GEN_AI_TOKEN_TYPE: _TOKEN_TYPES[0]}, context=context)
    if not unknown[1]:
        telemetry.run_tokens.record(tokens[1], {**base, names.GEN_AI_TOKEN_TYPE: _TOKEN_TYPES[1]}, context=context)

    if span is not None and span.is_recording():
        attributes: dict[str, Any] = {
            names.DEGRADATION_MODE: mode,
            names.AGENT_RUN_OUTCOME: outcome,
            names.AGENT_RUN_DISCLOSED: disclosed,
        }
        if reasons:
            attributes[names.DEGRADATION_REASON] = reasons
        span.set_attributes(attributes)

    causes = judged.silent_incident_causes
    if not causes:
        return
    tracked = "true" if telemetry.settings.disclosure_tracked or state.disclosure_called() else "false"
    telemetry.silent_incidents.add(1, {names.AGENT_RUN_NAME: name, names.DISCLOSURE_TRACKED: tracked}, context=context)
    event = {names.AGENT_RUN_NAME: name, names.SILENT_INCIDENT_CAUSE: list(causes), names.DISCLOSURE_TRACKED: tracked}
    if reasons:
        event[names.DEGRADATION_REASON] = reasons
    if span is not None:
        span.add_event(names.EVENT_SILENT_INCIDENT, event)
    elif incident_parent is not None:
        # An implicit run ends with (or after) its span, which is already read-only: the event
        # goes on a zero-length child span of that span.
        parent = (
            otel_context.Context()
            if not incident_parent.is_valid
            else trace.set_span_in_context(trace.NonRecordingSpan(incident_parent))
        )
        child = telemetry.tracer.start_span(names.EVENT_SILENT_INCIDENT, context=parent, kind=SpanKind.INTERNAL)
        child.add_event(names.EVENT_SILENT_INCIDENT, event)
        child.end()


def _recorded_in(span: trace.Span | None, root: trace.SpanContext | None) -> otel_context.Context | None:
    """Where a run's points are recorded: in its own span (explicit run) or the span it is the run
    of (implicit run: an agent span or a sampling request's span, ended already), so that their
    exemplars name it; None (the current context) when neither is known."""
    if span is not None:
        return recorded_in(span)
    return recorded_in(trace.NonRecordingSpan(root)) if root is not None else None


# ---------------------------------------------------------------------- the span processor
# The span processor that puts degraded mode on every span, and feeds runs.
#
# Installed by every otel-sampling instrumentor's ``instrument()`` on the SDK ``TracerProvider`` it
# uses (one with ``add_span_processor``), once per provider however many instrumentors ask; the last
# ``uninstrument()`` turns it off (the SDK has no way to remove a processor, so it stays registered
# and does nothing). It sees spans from every instrumentation on that provider, not only ours.
#
# * ``on_start``: while a named degradation is active (or inside ``otel_sampling.canary()``), the
#   span gets ``degradation.mode=degraded`` and ``degradation.reason`` (a reason the span was
#   started with, then every active reason), and, per active named degradation in entry order,
#   ``degradation.component``, ``degradation.owner`` and ``degradation.expires_at``; while a drill
#   runs, ``otel_sampling.drill.name`` (every running drill's name). With nothing
#   active it adds nothing and removes nothing.
# * Runs: ``on_start`` attributes the span to a run (an agent span that no run owns starts one,
#   :mod:`otel_sampling.records.run`), ``on_end`` folds its mode and substitution into the run and
#   ends an agent span's run with that span.
# * Foreign spans (opt-in, ``OTEL_SAMPLING_GUARD_FOREIGN_SPANS``): ``on_start`` puts the spans of
#   the mcp SDK, fastmcp and anthropic's native tracing under :func:`otel_sampling.foreign_spans.guard`.
# * Inside ``opentelemetry.instrumentation.utils.suppress_instrumentation()``, ``on_start`` does
#   nothing: a span that a library starts there anyway (mcp's own spans do) is neither stamped nor
#   a run, so suppressed work records no ``agent.run*`` points.


class DegradationSpanProcessor(SpanProcessor):
    """Stamps degraded mode on starting spans and tells the runs about every span.

    ``foreign_max_length``: the string cap of the foreign-span guard, None while it is off.
    """

    foreign_max_length: int | None = None

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        try:
            if not state.hooked:
                return
            if self.foreign_max_length is not None and foreign_spans.is_foreign(span):  # suppressed or not
                try:
                    foreign_spans.guard(span, self.foreign_max_length)
                except Exception:
                    logger.debug("otel-sampling: foreign span guard failed", exc_info=True)
            if state.calm and not runs.by_trace and not state.canary.get() and current_run_var.get() is None:
                # The common case: nothing degraded, no canary block, no run open in this context nor
                # owning a trace. Only an agent span (it starts a run) asks for more (run_may_take).
                attributes = span.attributes  # _is_agent_span, inline: every span of the process passes here
                if attributes is None or attributes.get(names.GEN_AI_OPERATION_NAME) not in _AGENT_OPERATIONS:
                    return
                reasons: tuple[str, ...] = ()
            else:
                reasons = state.active_reasons()
                if not reasons and not run_may_take(span):
                    return  # nothing to stamp, no run to tell
            if not is_instrumentation_enabled():
                return
            if reasons:
                _stamp(span, reasons)
            span_started(span)
        except Exception:
            logger.debug("otel-sampling: span processor on_start failed", exc_info=True)

    def on_end(self, span: ReadableSpan) -> None:
        if not state.hooked or (not runs.by_trace and not runs.by_span):  # no run owns anything: nothing to fold
            return
        try:
            span_ended(span)
        except Exception:
            logger.debug("otel-sampling: span processor on_end failed", exc_info=True)


def _stamp(span: Span, reasons: tuple[str, ...]) -> None:
    own = reasons_of((span.attributes or {}).get(names.DEGRADATION_REASON))  # stays first
    attributes: dict[str, Any] = {
        names.DEGRADATION_MODE: names.MODE_DEGRADED,
        names.DEGRADATION_REASON: list(dict.fromkeys(own + reasons))[: state.MAX_STAMPED],
    }
    active = state.active_degradations()[: state.MAX_STAMPED]
    if active:  # who answers for each active degradation, and until when (one entry each, entry order)
        attributes[names.DEGRADATION_COMPONENT] = [d.component for d in active]
        attributes[names.DEGRADATION_OWNER] = [d.owner for d in active]
        attributes[names.DEGRADATION_EXPIRES_AT] = [instants.iso(d.expires_at) for d in active]
    drilling = state.drills.running
    if drilling:  # each drill is one of the active degradations too (at most state.MAX_DRILLS)
        attributes[names.DRILL_NAME] = list(dict.fromkeys(d.name for d in drilling))
    span.set_attributes(attributes)
