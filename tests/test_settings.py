"""Settings from OTEL_SAMPLING_* variables."""

from __future__ import annotations

import logging

import pytest

from otel_sampling import price_source, settings
from otel_sampling.policy import EMPTY_POLICY, PolicyError
from otel_sampling.settings import Settings


def test_defaults():
    s = Settings.from_env({})
    assert (s.policy, s.label_value_limit, s.attribute_max_length) == (EMPTY_POLICY, 100, 256)


def test_values_are_read():
    s = Settings.from_env({"OTEL_SAMPLING_LABEL_VALUE_LIMIT": "7", "OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH": "32"})
    assert (s.label_value_limit, s.attribute_max_length) == (7, 32)


@pytest.mark.parametrize("raw", ["lots", "0", "-3", "1.5"])
def test_bad_numbers_warn_and_fall_back(raw, caplog):
    with caplog.at_level(logging.WARNING):
        s = Settings.from_env({"OTEL_SAMPLING_LABEL_VALUE_LIMIT": raw})
    assert s.label_value_limit == 100
    assert "OTEL_SAMPLING_LABEL_VALUE_LIMIT" in caplog.text


def test_missing_policy_file_is_a_clear_error(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(PolicyError, match=r"nope\.toml"):
        Settings.from_env({"OTEL_SAMPLING_POLICY": str(missing)})


def test_policy_is_loaded(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('[servers."s"]\nprimary_model = "m"\n')
    assert Settings.from_env({"OTEL_SAMPLING_POLICY": str(path)}).policy.server("s").primary_model == "m"


def test_the_price_source_is_genai_prices_when_installed():
    """Unset or ``genai-prices`` (any case): the installed genai-prices data, None without it."""
    for env in ({}, {"OTEL_SAMPLING_PRICE_SOURCE": "genai-prices"}, {"OTEL_SAMPLING_PRICE_SOURCE": " GenAI-Prices "}):
        assert price_source.installed() is Settings.from_env(env).price_source


@pytest.mark.parametrize("raw", ["none", "NONE", " none "])
def test_price_source_none_leaves_only_the_table(raw):
    assert None is Settings.from_env({"OTEL_SAMPLING_PRICE_SOURCE": raw}).price_source


def test_an_unknown_price_source_warns_and_keeps_the_default(caplog):
    with caplog.at_level(logging.WARNING):
        s = Settings.from_env({"OTEL_SAMPLING_PRICE_SOURCE": "litellm-prices"})
    assert price_source.installed() is s.price_source
    assert "OTEL_SAMPLING_PRICE_SOURCE='litellm-prices'" in caplog.text


def test_settings_built_in_code_have_no_price_source():
    """``Settings()`` (no environment read) prices with the policy's table only."""
    assert None is Settings().price_source


class TestServedModelHeaders:
    """``OTEL_SAMPLING_SERVED_MODEL_HEADERS``: the response headers naming a gateway's served model."""

    def test_the_documented_gateways_by_default(self):
        """ngrok AI Gateway's Ngrok-AIG-Model; Bifrost's routing-info and older resolved-model headers."""
        assert Settings.from_env({}).served_model_headers == (
            "ngrok-aig-model",
            "x-bifrost-routing-info-model",
            "x-bifrost-resolved-model",
        )
        assert Settings.from_env({"OTEL_SAMPLING_SERVED_MODEL_HEADERS": " "}).served_model_headers == (
            Settings().served_model_headers
        )  # empty is unset (OpenTelemetry environment variable spec)

    def test_a_list_is_read_lower_cased_in_order_each_once(self):
        s = Settings.from_env({"OTEL_SAMPLING_SERVED_MODEL_HEADERS": "X-Served-Model, x-b ,,x-served-model"})
        assert s.served_model_headers == ("x-served-model", "x-b")

    def test_none_reads_none(self):
        assert Settings.from_env({"OTEL_SAMPLING_SERVED_MODEL_HEADERS": "None"}).served_model_headers == ()

    def test_an_entry_that_is_not_a_header_name_is_left_out_and_named(self, caplog):
        with caplog.at_level(logging.WARNING):
            s = Settings.from_env({"OTEL_SAMPLING_SERVED_MODEL_HEADERS": "x-good,bad header,x:y"})
        assert s.served_model_headers == ("x-good",)
        assert "OTEL_SAMPLING_SERVED_MODEL_HEADERS" in caplog.text and "'bad header'" in caplog.text

    def test_a_long_list_is_cut(self, caplog):
        with caplog.at_level(logging.WARNING):
            s = Settings.from_env({"OTEL_SAMPLING_SERVED_MODEL_HEADERS": ",".join(f"h{i}" for i in range(1000))})
        assert s.served_model_headers == tuple(f"h{i}" for i in range(16))
        assert "OTEL_SAMPLING_SERVED_MODEL_HEADERS" in caplog.text


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (None, -31003),  # the default: outside JSON-RPC's reserved -32768..-32000 (MCP 2026-07-28)
        ("4003", 4003),
        (" -31999 ", -31999),
        ("-32769", -32769),  # just below the reserved range
        ("-32003", -32003),  # the legacy code, for servers that read only it
    ],
)
def test_the_policy_refusal_code_is_read(raw, code):
    env = {} if raw is None else {"OTEL_SAMPLING_POLICY_REFUSAL_CODE": raw}
    assert Settings.from_env(env).policy_refusal_code == code


@pytest.mark.parametrize(
    "raw",
    [
        "denied",
        "1.5",
        "-32000",
        "-32019",
        "-32010",  # legacy: "new implementations SHOULD NOT use" (MCP 2026-07-28)
        "-32020",
        "-32021",
        "-32099",  # reserved for the MCP specification
        "-32603",
        "-32768",  # JSON-RPC's own
        "-1",  # the user's rejection (MCP 2025-11-25)
        str(2**31),  # past a 32-bit integer
    ],
)
def test_a_policy_refusal_code_outside_the_rule_warns_and_keeps_the_default(raw, caplog, monkeypatch):
    monkeypatch.setattr(settings, "_reported", set())
    with caplog.at_level(logging.WARNING):
        s = Settings.from_env({"OTEL_SAMPLING_POLICY_REFUSAL_CODE": raw})
    assert s.policy_refusal_code == -31003
    assert "OTEL_SAMPLING_POLICY_REFUSAL_CODE" in caplog.text
