"""Model names as hosts report them, read as provider model ids (``otel_sampling.rules.model_names``).

Expected names come from where the reported forms are defined: pydantic-ai's
``FallbackModel.model_name`` (``"fallback:" + ",".join(member.model_name ...)``) and its
``provider:model`` ids (``parse_model_id``, the Gateway's ``gateway/openai:gpt-5``); OpenRouter's
``anthropic/claude-sonnet-4.5``; Google's ``models/gemini-2.5-pro``; the Bedrock ids of Anthropic's
"Claude on Amazon Bedrock" table (``anthropic.claude-sonnet-4-5-20250929-v1:0`` is the API's
``claude-sonnet-4-5-20250929``, ``anthropic.claude-opus-4-6-v1`` its ``claude-opus-4-6``, the legacy
``anthropic.claude-v2:1`` is Claude 2.1) and cross-region inference profiles (``us.``); Ollama's
``model:tag`` names (ollama.com library: ``llama3:latest``, ``mistral:7b``).
"""

from __future__ import annotations

import pytest

from otel_sampling.rules.model_names import (
    MAX_MEMBERS,
    ReportedModel,
    normalise,
    read_report,
    reports_another_model,
    same_model_name,
    served_member,
)


class TestNormalise:
    """``normalise``: a path, one provider prefix and Bedrock's version suffix come off."""

    @pytest.mark.parametrize(
        ("reported", "model"),
        [
            ("claude-sonnet-4-5", "claude-sonnet-4-5"),
            # dotted provider prefixes: other hosts' names, Bedrock ids and inference profiles
            ("anthropic.claude-sonnet-4-5", "claude-sonnet-4-5"),
            ("generic.gpt-4o", "gpt-4o"),
            ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),
            ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),
            ("anthropic.claude-opus-4-6-v1", "claude-opus-4-6"),
            ("anthropic.claude-v2:1", "claude-v2:1"),  # Claude 2.1: the version names the model
            # pydantic-ai provider:model ids
            ("openai:gpt-4o", "gpt-4o"),
            ("google-gla:gemini-2.5-pro", "gemini-2.5-pro"),
            ("bedrock:us.anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet-20241022"),
            # paths
            ("anthropic/claude-sonnet-4.5", "claude-sonnet-4.5"),
            ("models/gemini-2.5-pro", "gemini-2.5-pro"),
            ("gateway/openai:gpt-5", "gpt-5"),
            # dots and colons that belong to the model
            ("gpt-4.1", "gpt-4.1"),
            ("claude-3.5-sonnet", "claude-3.5-sonnet"),
            ("llama3:latest", "llama3:latest"),
            ("mistral:7b", "mistral:7b"),
            ("phi:chat", "phi:chat"),
            ("o3", "o3"),
            ("Claude Sonnet 4.5", "Claude Sonnet 4.5"),  # a display name: no prefix to take off
        ],
    )
    def test_the_provider_model_id(self, reported, model):
        assert model == normalise(reported)

    def test_a_name_that_is_only_a_path_is_kept(self):
        assert "models/" == normalise("models/")

    def test_a_huge_name_is_read_in_one_pass(self):
        """A hostile host's name: linear work, the name back when nothing matches."""
        name = "a" * 1_000_000 + ":" + "b" * 1_000_000
        assert name == normalise(name)


class TestReadReport:
    """``read_report``: a composite fallback name is its members, each normalised."""

    def test_a_plain_name_is_one_member(self):
        assert ReportedModel(("gpt-4o",), False) == read_report("openai:gpt-4o")

    def test_pydantic_ai_fallback_model_name(self):
        """``FallbackModel(AnthropicModel("claude-sonnet-4-5"), AnthropicModel("claude-haiku-4-5")).model_name``."""
        assert ReportedModel(("claude-sonnet-4-5", "claude-haiku-4-5"), True) == read_report(
            "fallback:claude-sonnet-4-5,claude-haiku-4-5"
        )

    def test_a_fallback_model_among_the_members(self):
        """A nested ``FallbackModel`` names its members behind its own ``fallback:``."""
        assert ("gpt-4o", "claude-haiku-4-5", "gpt-4o-mini") == read_report(
            "fallback:fallback:gpt-4o,claude-haiku-4-5,openai:gpt-4o-mini"
        ).members

    def test_a_hostile_composite_is_read_up_to_its_first_members(self):
        report = read_report("fallback:" + ",".join(f"m-{i}" for i in range(100_000)))
        assert len(report.members) == MAX_MEMBERS


class TestServedMember:
    """``served_member``: the model a report says served, or None when it does not say."""

    def test_a_plain_name(self):
        assert "claude-sonnet-4-5" == served_member(read_report("anthropic.claude-sonnet-4-5"))

    def test_a_composite_does_not_say_which_member_served(self):
        assert served_member(read_report("fallback:claude-sonnet-4-5,claude-haiku-4-5")) is None

    def test_a_composite_of_one_model_does(self):
        assert "claude-sonnet-4-5" == served_member(read_report("fallback:claude-sonnet-4-5"))
        assert "claude-sonnet-4-5" == served_member(
            read_report("fallback:claude-sonnet-4-5,claude-sonnet-4-5-20250929")
        )

    def test_an_empty_composite_names_nothing(self):
        assert served_member(read_report("fallback:")) is None


class TestSameModelName:
    """``same_model_name``: one model up to case and a snapshot suffix."""

    @pytest.mark.parametrize(
        ("same", "a", "b"),
        [
            (True, "claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),
            (True, "Claude-Sonnet-4-5", "claude-sonnet-4-5"),
            (True, "gpt-4o-2024-08-06", "gpt-4o"),
            (False, "gpt-4o", "gpt-4o-mini"),
            (False, "claude-sonnet-4-5", "claude-haiku-4-5"),
        ],
    )
    def test_case_and_snapshots(self, same, a, b):
        assert same is same_model_name(a, b)


class TestReportsAnotherModel:
    """``reports_another_model``: the host's report names none of what the provider served."""

    @pytest.mark.parametrize(
        ("mismatch", "reported", "served"),
        [
            (False, "claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),  # a snapshot of the same model
            (False, "anthropic.claude-sonnet-4-5", "claude-sonnet-4-5"),  # a prefix is not another model
            (False, "CLAUDE-SONNET-4-5", "claude-sonnet-4-5"),
            (True, "claude-sonnet-4-5", "claude-haiku-4-5"),  # the host's configured name, not the provider's
            # a composite names its candidates: a member that served is no mismatch, a model none names is
            (False, "fallback:claude-sonnet-4-5,claude-haiku-4-5", "claude-haiku-4-5"),
            (True, "fallback:claude-sonnet-4-5,claude-haiku-4-5", "claude-opus-4-1"),
            (False, None, "claude-haiku-4-5"),  # nothing reported
            (False, "claude-sonnet-4-5", None),  # nothing served
            (False, "", "claude-haiku-4-5"),  # an empty report names nothing
        ],
    )
    def test_reported_against_served(self, mismatch, reported, served):
        assert mismatch is reports_another_model(reported, served)
