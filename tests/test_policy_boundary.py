"""Policy keys for the compliance boundary: ``permitted_providers``, ``permitted_regions``, ``[endpoints]``.

The line of a bad key is the line carrying a ``# BAD`` marker in the text each test writes.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from otel_sampling.policy import Endpoint, PolicyError, load_policy

GOOD = """\
[servers."ticket-server"]
permitted_providers = ["anthropic", "openai"]
permitted_regions = ["eu"]

[endpoints."api.eu.example.com"]
region = "eu"

[endpoints.'127.0.0.1']
region = "eu"
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_boundary_keys_load(tmp_path):
    policy = load_policy(_write(tmp_path, GOOD))
    server = policy.server("ticket-server")
    assert server.permitted_providers == ("anthropic", "openai")
    assert server.permitted_regions == ("eu",)
    assert dict(policy.endpoints) == {"api.eu.example.com": Endpoint("eu"), "127.0.0.1": Endpoint("eu")}


def test_no_boundary_by_default(tmp_path):
    policy = load_policy(_write(tmp_path, '[servers."s"]\nprimary_model = "m"\n'))
    assert (policy.server("s").permitted_providers, policy.server("s").permitted_regions) == (None, None)
    assert dict(policy.endpoints) == {}


@pytest.mark.parametrize(("text", "key", "problem"), [
    ('[servers."s"]\npermitted_providers = "anthropic"  # BAD\n',
     'servers."s".permitted_providers', "expected an array of strings, got string"),
    ('[servers."s"]\npermitted_providers = ["anthropic", 7]  # BAD\n',
     'servers."s".permitted_providers[1]', "expected a string, got integer"),
    ('[servers."s"]\npermitted_providers = [""]  # BAD\n',
     'servers."s".permitted_providers[0]', "empty provider name"),
    ('[endpoints."h"]\nregion = "eu"\n[servers."s"]\npermitted_regions = ["us"]  # BAD\n',
     'servers."s".permitted_regions[0]', "region 'us' is not the region of any [endpoints] table (known: eu)"),
    ('[endpoints."h"]  # BAD\n', 'endpoints."h".region', "missing required key"),
    ('[endpoints."h"]\nregion = 1  # BAD\n', 'endpoints."h".region', "expected a string, got integer"),
    ('[endpoints."h"]\nregion = "eu"\nzone = "a"  # BAD\n', 'endpoints."h".zone', "unknown key"),
    ('[endpoints." "]  # BAD\nregion = "eu"\n', 'endpoints." "', "empty endpoint host"),
    ('endpoints = 3  # BAD\n', "endpoints", "expected a table, got integer"),
])
def test_errors_name_file_line_and_key(tmp_path, text, key, problem):
    path = _write(tmp_path, text)
    line = next(n for n, t in enumerate(text.splitlines(), start=1) if "# BAD" in t)
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert (caught.value.key, caught.value.line) == (key, line)
    assert caught.value.problem.startswith(problem)
    assert str(caught.value).startswith(f"{path}:{line}: {key}: {problem}")
