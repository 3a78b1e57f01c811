"""Reasoning effort: is a call's requested effort below its scope's primary effort? Pure rules.

An effort has one of two shapes (``docs/telemetry.md`` "Reduced effort"):

* a level (a string), ordered ``none`` < ``minimal`` < ``low`` < ``medium`` < ``high`` < ``xhigh``
  (:data:`LEVELS`): openai Chat Completions ``reasoning_effort`` and the Responses API's
  ``reasoning.effort`` (openai API reference, "reasoning effort"), anthropic ``output_config.effort``
  (``low``, ``medium``, ``high``);
* a thinking budget in tokens (an int >= 0): anthropic ``thinking.budget_tokens`` of extended
  thinking, 0 when thinking is disabled or not asked for (Anthropic's extended thinking is off
  unless the request enables it; the anthropic wrapper reads it so).

A call's effort is below the primary effort when both have the same shape and the call's is
lower: a level ranks lower in :data:`LEVELS`, a budget is smaller. Nothing else is below: a call
that states no effort (the provider's default applies, which differs by model), a level this
module does not know, or an effort of the other shape than the primary's (a budget is not a
level) is not compared.
"""

from __future__ import annotations

from typing import Final

from otel_sampling.names import EFFORT_LEVELS

#: Effort levels, lowest first (openai's values; anthropic's are among them).
LEVELS: Final = EFFORT_LEVELS
_RANK: Final = {level: rank for rank, level in enumerate(LEVELS)}

#: An effort: a level of :data:`LEVELS` (or another string, never compared) or a budget in tokens.
Effort = str | int


def below_primary(effort: Effort | None, primary: Effort | None) -> bool:
    """True when ``effort`` (a call's) is below ``primary`` (its scope's ``primary_effort``) in the
    same shape; False when either is None or they cannot be compared (the module docstring)."""
    if effort is None or primary is None or isinstance(effort, bool):
        return False
    if isinstance(primary, int):
        return isinstance(effort, int) and effort < primary
    if isinstance(effort, int):
        return False
    rank, primary_rank = _RANK.get(effort), _RANK.get(primary)
    return rank is not None and primary_rank is not None and rank < primary_rank
