"""otel_sampling.policy: the TOML policy file.

Expected values are written out here or computed from the text each test writes (the line of a
bad key is the line carrying a ``# BAD`` marker), never taken from the loader's own output.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import pickle
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_sampling.policy import (
    ALLOWED_CONTEXT_CEILINGS,
    EMPTY_POLICY,
    EndingRule,
    Endpoint,
    Policy,
    PolicyError,
    Price,
    ServerPolicy,
    load_policy,
)

FULL = """\
# Per MCP server (keyed by the server's serverInfo.name)
[servers."ticket-server"]
primary_model = "claude-sonnet-5-5"
permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]
context_ceiling = "thisServer"

[servers."wiki"]
permitted_models = ["claude-haiku-5-5"]
context_ceiling = "none"

[servers.everything]
context_ceiling = "allServers"

# Price table, USD per million tokens, per model; dated
[prices."claude-sonnet-5-5"]
input_usd_per_mtok = 3.0
output_usd_per_mtok = 15.0
cache_read_usd_per_mtok = 0.3
cache_write_usd_per_mtok = 3.75
as_of = 2026-11-01

[prices."claude-haiku-5-5"]
input_usd_per_mtok = 1
output_usd_per_mtok = 5
as_of = "2026-10-15"
"""


def write(tmp_path: Path, text: str, name: str = "policy.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def marked_line(path: Path, marker: str = "# BAD") -> int:
    """1-based number of the only line of the file carrying *marker*."""
    lines = [n for n, line in enumerate(path.read_text("utf-8").split("\n"), 1) if marker in line]
    assert len(lines) == 1, f"test file must mark exactly one line with {marker!r}"
    return lines[0]


def load_error(path: Path) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    return info.value


# ---------------------------------------------------------------- valid files


def test_full_file_round_trips(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)

    policy = load_policy(path)

    assert policy == Policy(
        servers={
            "ticket-server": ServerPolicy(
                primary_model="claude-sonnet-5-5",
                permitted_models=("claude-sonnet-5-5", "claude-haiku-5-5"),
                context_ceiling="thisServer",
            ),
            "wiki": ServerPolicy(
                primary_model=None,
                permitted_models=("claude-haiku-5-5",),
                context_ceiling="none",
            ),
            "everything": ServerPolicy(primary_model=None, permitted_models=None, context_ceiling="allServers"),
        },
        prices={
            "claude-sonnet-5-5": Price(
                input_usd_per_mtok=3.0,
                output_usd_per_mtok=15.0,
                cache_read_usd_per_mtok=0.3,
                cache_write_usd_per_mtok=3.75,
                as_of=datetime.date(2026, 11, 1),
            ),
            "claude-haiku-5-5": Price(
                input_usd_per_mtok=1.0,
                output_usd_per_mtok=5.0,
                cache_read_usd_per_mtok=None,
                cache_write_usd_per_mtok=None,
                as_of=datetime.date(2026, 10, 15),
            ),
        },
        source=str(path),
    )


def test_values_have_the_documented_python_types(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, FULL))

    haiku = policy.prices["claude-haiku-5-5"]
    assert type(haiku.input_usd_per_mtok) is float  # written as the integer 1
    assert type(haiku.output_usd_per_mtok) is float
    assert type(haiku.as_of) is datetime.date  # written as a string
    assert isinstance(policy.servers["wiki"].permitted_models, tuple)


def test_the_older_cache_write_key_is_read(tmp_path: Path) -> None:
    """``cache_creation_usd_per_mtok``, the name before semantic-conventions-genai #440, gives the
    same price as ``cache_write_usd_per_mtok``."""
    table = '[prices."m"]\ninput_usd_per_mtok = 3.0\noutput_usd_per_mtok = 15.0\n'
    old = load_policy(write(tmp_path, table + "cache_creation_usd_per_mtok = 3.75\n"))
    new = load_policy(write(tmp_path, table + "cache_write_usd_per_mtok = 3.75\n"))
    assert old.prices["m"].cache_write_usd_per_mtok == new.prices["m"].cache_write_usd_per_mtok == 3.75


def test_str_path_and_pathlike_both_load(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)

    assert load_policy(str(path)) == load_policy(path)
    assert load_policy(str(path)).source == str(path)


def test_equivalent_toml_spellings_load_the_same(tmp_path: Path) -> None:
    dotted = write(
        tmp_path,
        """\
        servers.wiki.permitted_models = ["claude-haiku-5-5"]
        servers.wiki.context_ceiling = "none"
        """,
        "dotted.toml",
    )
    inline = write(
        tmp_path,
        """\
        [servers]
        'wiki' = { permitted_models = ["claude-haiku-5-5"], context_ceiling = "none" }
        """,
        "inline.toml",
    )
    expected = ServerPolicy(None, ("claude-haiku-5-5",), "none")

    assert load_policy(dotted).servers == {"wiki": expected}
    assert load_policy(inline).servers == {"wiki": expected}


def test_empty_permitted_models_is_an_empty_tuple(tmp_path: Path) -> None:
    path = write(tmp_path, "[servers.locked]\npermitted_models = []\n")

    assert load_policy(path).server("locked") == ServerPolicy(None, (), None)


@pytest.mark.parametrize("text", ["", "\n\n", "# nothing configured yet\n", "[servers]\n[prices]\n"])
def test_empty_file_gives_no_servers_and_no_prices(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)

    policy = load_policy(path)

    assert dict(policy.servers) == {}
    assert dict(policy.prices) == {}
    assert policy.source == str(path)


def test_server_lookup(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, FULL))

    assert policy.server("unknown") is None
    assert policy.server("wiki") == ServerPolicy(None, ("claude-haiku-5-5",), "none")
    assert EMPTY_POLICY.server("wiki") is None


def test_empty_policy_constant() -> None:
    assert dict(EMPTY_POLICY.servers) == {}
    assert dict(EMPTY_POLICY.prices) == {}
    assert EMPTY_POLICY.source is None


def test_allowed_context_ceilings_are_the_mcp_include_context_values() -> None:
    assert ALLOWED_CONTEXT_CEILINGS == ("none", "thisServer", "allServers")


# ---------------------------------------------------------------- immutability


def test_mappings_are_read_only(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, FULL))

    with pytest.raises(TypeError):
        policy.servers["new"] = ServerPolicy()  # type: ignore[index]
    with pytest.raises(TypeError):
        del policy.servers["wiki"]  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        policy.prices["new"] = Price(1.0, 2.0)  # type: ignore[index]
    assert set(policy.servers) == {"ticket-server", "wiki", "everything"}


def test_dataclasses_are_frozen(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, FULL))

    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.servers["wiki"].context_ceiling = "allServers"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.prices["claude-haiku-5-5"].input_usd_per_mtok = 0.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.servers = {}  # type: ignore[misc]


def test_policy_built_in_code_copies_its_dicts() -> None:
    servers = {"wiki": ServerPolicy(context_ceiling="none")}
    policy = Policy(servers=servers, prices={})

    servers["other"] = ServerPolicy()

    assert set(policy.servers) == {"wiki"}
    with pytest.raises(TypeError):
        policy.servers["other"] = ServerPolicy()  # type: ignore[index]


# ---------------------------------------------------------------- file-level errors


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "policy.toml"

    err = load_error(path)

    assert str(path) in str(err)
    assert "policy file not found" in str(err)
    assert err.path == str(path)
    assert err.key is None
    assert err.line is None


def test_unreadable_file(tmp_path: Path) -> None:
    err = load_error(tmp_path)  # a directory cannot be read as a file

    assert str(tmp_path) in str(err)
    assert "cannot read" in str(err)
    assert err.key is None


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b"[servers.wiki]\n# caf\xe9\ncontext_ceiling = 'none'\n")

    err = load_error(path)

    assert str(path) in str(err)
    assert "UTF-8" in str(err)
    assert err.line == 2
    assert f"{path}:2:" in str(err)


def test_toml_syntax_error_reports_line_and_column(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        [servers."wiki"]
        permitted_models = ["claude-haiku-5-5"]
        context_ceiling = = "none"  # BAD
        """,
    )
    line = marked_line(path)

    err = load_error(path)

    assert err.line == line
    assert err.column is not None and err.column > 1
    assert err.key is None
    assert str(err).startswith(f"{path}:{line}:{err.column}: ")
    assert "TOML syntax error" in str(err)


def test_duplicate_key_is_a_syntax_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        [servers.wiki]
        context_ceiling = "none"
        context_ceiling = "none"  # BAD
        """,
    )

    err = load_error(path)

    assert err.line == marked_line(path)


# ---------------------------------------------------------------- schema errors
#
# Each case: (file text with the offending line marked "# BAD", expected dotted key, a fragment of
# the problem). The expected line is the marked line of the file as written.

SCHEMA_ERRORS = {
    "unknown top-level table": (
        """\
        [servers.wiki]
        context_ceiling = "none"

        [serverz."ticket-server"]  # BAD
        context_ceiling = "none"
        """,
        "serverz",
        "allowed: servers, prices",
    ),
    "unknown top-level key": (
        """\
        # comment
        primary_model = "claude-sonnet-5-5"  # BAD
        """,
        "primary_model",
        "unknown top-level key",
    ),
    "unknown server key (typo)": (
        """\
        [servers."ticket-server"]
        primary_model = "claude-sonnet-5-5"

        [servers."wiki"]
        context_ceiling = "none"
        permited_models = ["claude-haiku-5-5"]  # BAD
        """,
        'servers."wiki".permited_models',
        "did you mean 'permitted_models'",
    ),
    "unknown price key": (
        """\
        [prices."claude-sonnet-5-5"]
        input_usd_per_mtok = 3.0
        output_usd_per_mtok = 15.0
        cache_hit_usd_per_mtok = 0.3  # BAD
        """,
        'prices."claude-sonnet-5-5".cache_hit_usd_per_mtok',
        "unknown key",
    ),
    "permitted_models is a string": (
        """\
        [servers.wiki]
        context_ceiling = "none"
        permitted_models = "claude-haiku-5-5"  # BAD
        """,
        'servers."wiki".permitted_models',
        "expected an array of strings, got string: 'claude-haiku-5-5'",
    ),
    "permitted_models item is a number": (
        """\
        [servers.wiki]
        permitted_models = ["claude-haiku-5-5", 4]  # BAD
        """,
        'servers."wiki".permitted_models[1]',
        "expected a string, got integer: 4",
    ),
    "primary_model is a number": (
        """\
        [servers."ticket-server"]

        primary_model = 45  # BAD
        """,
        'servers."ticket-server".primary_model',
        "expected a string, got integer: 45",
    ),
    "empty primary_model": (
        """\
        [servers.wiki]
        primary_model = ""  # BAD
        """,
        'servers."wiki".primary_model',
        "empty model name",
    ),
    "empty model in permitted_models": (
        """\
        [servers.wiki]
        permitted_models = ["claude-haiku-5-5", " "]  # BAD
        """,
        'servers."wiki".permitted_models[1]',
        "empty model name",
    ),
    "empty model name in prices": (
        """\
        [prices."claude-haiku-5-5"]
        input_usd_per_mtok = 1
        output_usd_per_mtok = 5
        [prices.""]  # BAD
        input_usd_per_mtok = 1
        output_usd_per_mtok = 5
        """,
        'prices.""',
        "empty model name",
    ),
    "empty server name": (
        """\
        [servers.""]  # BAD
        context_ceiling = "none"
        """,
        'servers.""',
        "empty server name",
    ),
    "unknown context ceiling": (
        """\
        [servers.wiki]
        permitted_models = ["claude-haiku-5-5"]
        context_ceiling = "conversation"  # BAD
        """,
        'servers."wiki".context_ceiling',
        'must be one of "none", "thisServer", "allServers"; got \'conversation\'',
    ),
    "context ceiling is case-sensitive": (
        """\
        [servers.wiki]
        context_ceiling = "ThisServer"  # BAD
        """,
        'servers."wiki".context_ceiling',
        "must be one of",
    ),
    "context ceiling is not a string": (
        """\
        [servers.wiki]
        context_ceiling = ["none"]  # BAD
        """,
        'servers."wiki".context_ceiling',
        "expected a string, got array",
    ),
    "primary model not permitted": (
        """\
        [servers."ticket-server"]
        permitted_models = ["claude-haiku-5-5"]
        primary_model = "claude-sonnet-5-5"  # BAD
        """,
        'servers."ticket-server".primary_model',
        "not in permitted_models",
    ),
    "bool where a float is expected": (
        """\
        [prices."claude-sonnet-5-5"]
        input_usd_per_mtok = true  # BAD
        output_usd_per_mtok = 15.0
        """,
        'prices."claude-sonnet-5-5".input_usd_per_mtok',
        "got boolean",
    ),
    "string where a float is expected": (
        """\
        [prices."claude-sonnet-5-5"]
        input_usd_per_mtok = 3.0
        output_usd_per_mtok = "15"  # BAD
        """,
        'prices."claude-sonnet-5-5".output_usd_per_mtok',
        "got string: '15'",
    ),
    "negative price": (
        """\
        [prices."claude-sonnet-5-5"]
        input_usd_per_mtok = 3.0
        output_usd_per_mtok = 15.0
        cache_read_usd_per_mtok = -0.3  # BAD
        """,
        'prices."claude-sonnet-5-5".cache_read_usd_per_mtok',
        "must not be negative",
    ),
    "non-finite price": (
        """\
        [prices."claude-sonnet-5-5"]
        input_usd_per_mtok = 3.0
        output_usd_per_mtok = 15.0
        cache_write_usd_per_mtok = inf  # BAD
        """,
        'prices."claude-sonnet-5-5".cache_write_usd_per_mtok',
        "finite",
    ),
    "both names of the cache-write price": (
        """\
        [prices."claude-sonnet-5-5"]
        input_usd_per_mtok = 3.0
        output_usd_per_mtok = 15.0
        cache_write_usd_per_mtok = 3.75
        cache_creation_usd_per_mtok = 3.75  # BAD
        """,
        'prices."claude-sonnet-5-5".cache_creation_usd_per_mtok',
        "give cache_write_usd_per_mtok only",
    ),
    "missing required price is reported at the table header": (
        """\
        [prices."claude-haiku-5-5"]
        input_usd_per_mtok = 1
        output_usd_per_mtok = 5

        [prices."claude-sonnet-5-5"]  # BAD
        input_usd_per_mtok = 3.0
        """,
        'prices."claude-sonnet-5-5".output_usd_per_mtok',
        "missing required key",
    ),
    "as_of is a date-time": (
        """\
        [prices."claude-sonnet-5-5"]
        input_usd_per_mtok = 3.0
        output_usd_per_mtok = 15.0
        as_of = 2026-11-01T09:00:00Z  # BAD
        """,
        'prices."claude-sonnet-5-5".as_of',
        "expected a date",
    ),
    "as_of string is not a date": (
        """\
        [prices."claude-sonnet-5-5"]
        input_usd_per_mtok = 3.0
        output_usd_per_mtok = 15.0
        as_of = "Nov 1 2026"  # BAD
        """,
        'prices."claude-sonnet-5-5".as_of',
        "expected a date",
    ),
    "as_of string is an impossible date": (
        """\
        [prices."claude-sonnet-5-5"]
        input_usd_per_mtok = 3.0
        output_usd_per_mtok = 15.0
        as_of = "2026-02-30"  # BAD
        """,
        'prices."claude-sonnet-5-5".as_of',
        "not a valid date",
    ),
    "servers is not a table": (
        """\
        # comment
        servers = ["wiki"]  # BAD
        """,
        "servers",
        "expected a table, got array",
    ),
    "server entry is not a table": (
        """\
        [servers]
        wiki = "none"  # BAD
        """,
        'servers."wiki"',
        "expected a table, got string",
    ),
    "inline table is reported at its line": (
        """\
        [servers]
        ticket-server = { context_ceiling = "none" }
        wiki = { context_ceiling = "conversation" }  # BAD
        """,
        'servers."wiki".context_ceiling',
        "must be one of",
    ),
    "dotted keys at top level": (
        """\
        servers.wiki.context_ceiling = "none"
        servers.wiki.primary_model = 7  # BAD
        """,
        'servers."wiki".primary_model',
        "expected a string",
    ),
    "header written with spaces and a literal-string name": (
        """\
        [ servers . 'ticket-server' ]  # a comment
        context_ceiling = "none"
        [ servers . 'wiki' ]
        context_ceiling = "everything"  # BAD
        """,
        'servers."wiki".context_ceiling',
        "must be one of",
    ),
    "same key name in an earlier table is not taken": (
        """\
        [servers.a]
        context_ceiling = "none"
        [servers.b]
        primary_model = "claude-haiku-5-5"
        context_ceiling = "conversation"  # BAD
        """,
        'servers."b".context_ceiling',
        "must be one of",
    ),
    "primary_effort not a level": (
        """\
        [servers.a]
        primary_effort = "maximum"  # BAD
        """,
        'servers."a".primary_effort',
        'must be one of "none", "minimal", "low", "medium", "high", "xhigh" or a thinking budget in tokens',
    ),
    "primary_effort budget not above 0": (
        """\
        [servers.a]
        primary_effort = 0  # BAD
        """,
        'servers."a".primary_effort',
        "a thinking budget must be above 0 tokens",
    ),
    "primary_effort a float": (
        """\
        [servers.a]
        primary_effort = 1.5  # BAD
        """,
        'servers."a".primary_effort',
        "expected an effort level (a string) or a thinking budget in tokens (an integer), got float",
    ),
    "side_effect_tools with an empty name": (
        """\
        [servers.a]
        side_effect_tools = ["create_ticket", ""]  # BAD
        """,
        'servers."a".side_effect_tools[1]',
        "empty tool name",
    ),
}


@pytest.mark.parametrize(("text", "key", "problem"), SCHEMA_ERRORS.values(), ids=SCHEMA_ERRORS)
def test_schema_error_names_file_key_and_line(tmp_path: Path, text: str, key: str, problem: str) -> None:
    path = write(tmp_path, text)
    line = marked_line(path)

    err = load_error(path)

    message = str(err)
    assert message.startswith(f"{path}:{line}: {key}: "), message
    assert problem in message
    assert err.path == str(path)
    assert err.key == key
    assert err.line == line
    assert err.problem in message


def test_unknown_context_ceiling_lists_every_allowed_value(tmp_path: Path) -> None:
    path = write(tmp_path, '[servers.wiki]\ncontext_ceiling = "conversation"\n')

    message = str(load_error(path))

    for value in ("none", "thisServer", "allServers"):
        assert f'"{value}"' in message


def test_long_values_are_truncated_in_the_message(tmp_path: Path) -> None:
    long_value = "m" * 500
    path = write(tmp_path, f'[servers.wiki]\npermitted_models = "{long_value}"\n')

    err = load_error(path)

    assert long_value not in str(err)
    shown = str(err).split("got string: ", 1)[1]
    assert len(shown) == 60
    assert shown.startswith("'mmm") and shown.endswith("...")


def test_policy_error_is_a_value_error_and_pickles(tmp_path: Path) -> None:
    path = write(tmp_path, '[servers.wiki]\ncontext_ceiling = "conversation"\n')
    err = load_error(path)

    copy = pickle.loads(pickle.dumps(err))  # noqa: S301 - our own object, pickled a line above

    assert isinstance(err, ValueError)
    assert (str(copy), copy.path, copy.key, copy.line) == (str(err), err.path, err.key, 2)


# ---------------------------------------------------------------- properties

# Names an operator might give servers: anything printable, including quotes, dots and spaces.
server_names = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20).filter(
    lambda name: name.strip() != ""
)


def toml_quote(name: str) -> str:
    """A TOML basic string, every non-ASCII character escaped (exercises escape handling)."""
    out = []
    for char in name:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x80:
            out.append(char)
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(f"\\U{ord(char):08X}")
    return '"' + "".join(out) + '"'


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(server_names, min_size=1, max_size=4, unique=True),
    bad_index=st.integers(min_value=0, max_value=3),
    padding=st.lists(st.sampled_from(["", "# note", "   "]), max_size=3),
)
def test_bad_key_line_is_found_for_any_server_name(
    tmp_path_factory: pytest.TempPathFactory, names: list[str], bad_index: int, padding: list[str]
) -> None:
    bad_name = names[bad_index % len(names)]
    lines: list[str] = []
    for name in names:
        lines.append(f"[servers.{toml_quote(name)}]")
        lines.extend(padding)
        ceiling = '"conversation"' if name == bad_name else '"none"'
        lines.append(f"context_ceiling = {ceiling}")
    expected_line = lines.index('context_ceiling = "conversation"') + 1
    path = tmp_path_factory.mktemp("prop") / "policy.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    err = load_error(path)

    assert err.line == expected_line
    # Keys show the name as a JSON string, with characters that are not printable escaped too.
    quoted = "".join(
        ch if ch.isprintable() else json.dumps(ch)[1:-1] for ch in json.dumps(bad_name, ensure_ascii=False)
    )
    assert err.key == f"servers.{quoted}.context_ceiling"
    assert f"{path}:{expected_line}: " in str(err)


@settings(max_examples=60, deadline=None)
@given(names=st.lists(server_names, max_size=4, unique=True))
def test_any_server_names_round_trip(tmp_path_factory: pytest.TempPathFactory, names: list[str]) -> None:
    text = "".join(f'[servers.{toml_quote(name)}]\ncontext_ceiling = "none"\n' for name in names)
    path = tmp_path_factory.mktemp("prop") / "policy.toml"
    path.write_text(text, encoding="utf-8")

    policy = load_policy(path)

    assert dict(policy.servers) == {name: ServerPolicy(context_ceiling="none") for name in names}


@pytest.mark.parametrize(
    "text",
    [
        '[prices."m"]\ninput_usd_per_mtok = ' + "9" * 400 + "\noutput_usd_per_mtok = 1\n",
        '[prices."m"]\ninput_usd_per_mtok = ' + "9" * 5000 + "\noutput_usd_per_mtok = 1\n",
        "deep = " + "[" * 2000 + "]" * 2000 + "\n",
    ],
)
def test_pathological_values_are_policy_errors_not_tracebacks(tmp_path, text):
    path = tmp_path / "policy.toml"
    path.write_text(text)
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert str(info.value).startswith(str(path))


def test_a_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_bytes(b"\xef\xbb\xbf" + b'[servers."s"]\nprimary_model = "m"\n')
    assert load_policy(path).server("s").primary_model == "m"


def test_control_characters_in_names_stay_escaped_in_the_message(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text('[servers."a\\nb\\u001b"]\nprimary_model = 1\n')
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    message = str(info.value)
    assert "\n" not in message and "\x1b" not in message
    assert 'servers."a\\nb\\u001b".primary_model' in message  # JSON string escapes


ENDING_RULES = """\
[[ending_rules]]
code = -32050
ending = "policy.denied"

[[ending_rules]]
code = -32051
ending = "user.denied"

[[ending_rules]]
code = -32052
ending = "nonsense"

[[ending_rules]]
ending = "error"
"""


@pytest.mark.parametrize(
    ("broken_line", "text", "where"),
    [
        (11, ENDING_RULES.replace('\n[[ending_rules]]\nending = "error"\n', ""), "ending_rules[2].ending"),
        (13, ENDING_RULES.replace('"nonsense"', '"error"'), "ending_rules[3]"),
        (6, ENDING_RULES.replace("code = -32051", 'code = "x"'), "ending_rules[1].code"),
    ],
)
def test_an_error_in_a_later_ending_rule_names_its_own_line(tmp_path: Path, broken_line, text, where) -> None:
    """Each [[ending_rules]] entry is its own table: the error names the line of that entry's key
    (or header), never the first entry's."""
    error = load_error(write(tmp_path, text))
    assert str(error).startswith(f"{tmp_path / 'policy.toml'}:{broken_line}: {where}")


# ---------------------------------------------------------------- stall threshold and host ending rules
def test_policy_stall_threshold_and_ending_rules(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text('stall_threshold_seconds = 5\n[[ending_rules]]\ncode = -32099\nending = "policy.denied"\n')
    policy = load_policy(path)
    assert policy.stall_threshold_seconds == 5.0
    assert policy.ending_rules == (EndingRule(ending="policy.denied", code=-32099),)
    assert load_policy(tmp_path / "policy.toml").source == str(path)
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert load_policy(empty).stall_threshold_seconds == 30.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("stall_threshold_seconds = 0\n", "stall_threshold_seconds: must be a finite number of seconds above 0"),
        ('stall_threshold_seconds = "30s"\n', "stall_threshold_seconds: expected a number of seconds"),
        ('[[ending_rules]]\ncode = -1\nending = "denied"\n', "ending_rules[0].ending: must be one of"),
        ('[[ending_rules]]\nending = "error"\n', "ending_rules[0]: a rule needs code, message_contains or both"),
        ('[[ending_rules]]\ncode = "x"\nending = "error"\n', "ending_rules[0].code: expected an integer"),
        ('[[ending_rules]]\ncode = 1\nending = "error"\nmatch = 2\n', "ending_rules[0].match: unknown key"),
    ],
)
def test_bad_stall_threshold_and_ending_rules_are_policy_errors(tmp_path, text, message):
    path = tmp_path / "policy.toml"
    path.write_text(text)
    with pytest.raises(PolicyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_policy(path)


def test_an_ending_rule_cannot_map_error_frames_to_completed(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text(
        '[[ending_rules]]\ncode = -32050\nending = "policy.denied"\n\n'
        '[[ending_rules]]\ncode = -32051\nending = "completed"\n'
    )
    with pytest.raises(PolicyError, match=r"policy.toml:7: ending_rules\[1\].ending: an error frame is never"):
        load_policy(path)


# ---------------------------------------------------------------- the compliance boundary
# permitted_providers, permitted_regions and [endpoints]
BOUNDARY = """\
[servers."ticket-server"]
permitted_providers = ["anthropic", "openai"]
permitted_regions = ["eu"]

[endpoints."api.eu.example.com"]
region = "eu"

[endpoints.'127.0.0.1']
region = "eu"
"""


def test_boundary_keys_load(tmp_path):
    policy = load_policy(write(tmp_path, BOUNDARY))
    server = policy.server("ticket-server")
    assert server.permitted_providers == ("anthropic", "openai")
    assert server.permitted_regions == ("eu",)
    assert dict(policy.endpoints) == {"api.eu.example.com": Endpoint("eu"), "127.0.0.1": Endpoint("eu")}


def test_no_boundary_by_default(tmp_path):
    policy = load_policy(write(tmp_path, '[servers."s"]\nprimary_model = "m"\n'))
    assert (policy.server("s").permitted_providers, policy.server("s").permitted_regions) == (None, None)
    assert dict(policy.endpoints) == {}


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        (
            '[servers."s"]\npermitted_providers = "anthropic"  # BAD\n',
            'servers."s".permitted_providers',
            "expected an array of strings, got string",
        ),
        (
            '[servers."s"]\npermitted_providers = ["anthropic", 7]  # BAD\n',
            'servers."s".permitted_providers[1]',
            "expected a string, got integer",
        ),
        (
            '[servers."s"]\npermitted_providers = [""]  # BAD\n',
            'servers."s".permitted_providers[0]',
            "empty provider name",
        ),
        (
            '[endpoints."h"]\nregion = "eu"\n[servers."s"]\npermitted_regions = ["us"]  # BAD\n',
            'servers."s".permitted_regions[0]',
            "region 'us' is not the region of any [endpoints] table (known: eu)",
        ),
        ('[endpoints."h"]  # BAD\n', 'endpoints."h".region', "missing required key"),
        ('[endpoints."h"]\nregion = 1  # BAD\n', 'endpoints."h".region', "expected a string, got integer"),
        ('[endpoints."h"]\nregion = "eu"\nzone = "a"  # BAD\n', 'endpoints."h".zone', "unknown key"),
        ('[endpoints." "]  # BAD\nregion = "eu"\n', 'endpoints." "', "empty endpoint host"),
        ("endpoints = 3  # BAD\n", "endpoints", "expected a table, got integer"),
    ],
)
def test_boundary_errors_name_file_line_and_key(tmp_path, text, key, problem):
    names_file_line_and_key(tmp_path, text, key, problem)


def names_file_line_and_key(tmp_path: Path, text: str, key: str, problem: str) -> None:
    """Loading ``text`` fails at ``key``, on the line marked ``# BAD``, with ``problem``."""
    path = write(tmp_path, text)
    line = marked_line(path)
    error = load_error(path)
    assert (error.key, error.line) == (key, line)
    assert error.problem.startswith(problem)
    assert str(error).startswith(f"{path}:{line}: {key}: {problem}")


# ---------------------------------------------------------------- scopes beyond MCP servers
SCOPES = """\
[endpoints."api.eu.example.com"]
region = "eu"

[servers."tickets"]
context_ceiling = "thisServer"

[servers."tickets".tools."summarise"]
primary_model = "claude-sonnet-5-5"
permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]

[runs."ticket-triage"]
permitted_providers = ["anthropic"]

[runs."nightly/report"]
primary_model = "gpt-5"

[default]
permitted_regions = ["eu"]
"""


def test_scope_tables_load(tmp_path):
    policy = load_policy(write(tmp_path, SCOPES))
    assert dict(policy.tools) == {
        ("tickets", "summarise"): ServerPolicy(
            primary_model="claude-sonnet-5-5", permitted_models=("claude-sonnet-5-5", "claude-haiku-5-5")
        )
    }
    assert dict(policy.runs) == {
        "ticket-triage": ServerPolicy(permitted_providers=("anthropic",)),
        "nightly/report": ServerPolicy(primary_model="gpt-5"),
    }
    assert policy.default == ServerPolicy(permitted_regions=("eu",))
    assert policy.server("tickets") == ServerPolicy(context_ceiling="thisServer")  # its tools are not its keys


def test_no_scope_tables_by_default(tmp_path):
    policy = load_policy(write(tmp_path, '[servers."s"]\nprimary_model = "m"\n'))
    assert (dict(policy.runs), dict(policy.tools), policy.default) == ({}, {}, None)


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ('[runs."r"]\npermited_models = ["m"]  # BAD\n', 'runs."r".permited_models', "unknown key; did you mean"),
        ('[runs."r"]\ncontext_ceiling = "none"  # BAD\n', 'runs."r".context_ceiling', "unknown key"),
        ('[runs." "]  # BAD\n', 'runs." "', "empty run name"),
        ("runs = 3  # BAD\n", "runs", "expected a table, got integer"),
        (
            '[runs."r"]\nprimary_model = "a"  # BAD\npermitted_models = ["b"]\n',
            'runs."r".primary_model',
            "'a' is not in permitted_models ['b']",
        ),
        ("[default]\ntools = {}  # BAD\n", "default.tools", "unknown key"),
        ("[default]\npermitted_providers = [1]  # BAD\n", "default.permitted_providers[0]", "expected a string"),
        ("default = 1  # BAD\n", "default", "expected a table, got integer"),
        (
            '[endpoints."h"]\nregion = "eu"\n[default]\npermitted_regions = ["us"]  # BAD\n',
            "default.permitted_regions[0]",
            "region 'us' is not the region of any [endpoints] table (known: eu)",
        ),
        (
            '[servers."s".tools."t"]\ncontext_ceiling = "none"  # BAD\n',
            'servers."s".tools."t".context_ceiling',
            "unknown key",
        ),
        ('[servers."s".tools.""]  # BAD\n', 'servers."s".tools.""', "empty tool name"),
        ('[servers."s"]\ntools = ["t"]  # BAD\n', 'servers."s".tools', "expected a table, got array"),
        (
            '[servers."s".tools."t"]\npermitted_regions = ["us"]  # BAD\n',
            'servers."s".tools."t".permitted_regions[0]',
            "region 'us' is not the region of any [endpoints] table (known: none)",
        ),
    ],
)
def test_scope_errors_name_file_line_and_key(tmp_path, text, key, problem):
    names_file_line_and_key(tmp_path, text, key, problem)


def test_the_checker_command_checks_scope_tables(tmp_path, capsys):
    from otel_sampling.policy.__main__ import main

    good = write(tmp_path, SCOPES)
    assert main([str(good)]) == 0
    # SCOPES: one server table, one tool table, two run tables, [default]
    assert capsys.readouterr().out == f"{good}: ok (1 server, 0 prices, 1 tool table, 2 run tables, a default scope)\n"
    bad = tmp_path / "bad.toml"
    bad.write_text('[runs."triage"]\npermitted_model = ["m"]\n')
    assert main([str(bad)]) == 1
    assert f'{bad}:2: runs."triage".permitted_model: unknown key' in capsys.readouterr().err


@pytest.mark.parametrize("effort", ["high", 8192])
def test_effort_and_side_effect_tools_are_read(tmp_path: Path, effort: object) -> None:
    value = f'"{effort}"' if isinstance(effort, str) else str(effort)
    path = write(tmp_path, f'[servers.a]\nprimary_effort = {value}\nside_effect_tools = ["create_ticket"]\n')
    server = load_policy(path).servers["a"]
    assert server.primary_effort == effort
    assert server.side_effect_tools == ("create_ticket",)
    assert load_policy(write(tmp_path, "[servers.b]\n", "empty.toml")).servers["b"].primary_effort is None
