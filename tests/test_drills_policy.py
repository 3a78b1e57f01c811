"""``[[drills]]`` in the policy file (docs/api.md "Drills"): name, target_model, start (an
instant with an offset), duration and every (seconds), failure; a bad entry is an error naming
its key. No ``[[drills]]``: no schedule."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from otel_sampling.policy import DrillSchedule, PolicyError, load_policy

VALID = """
[[drills]]
name = "nightly-claude"
target_model = "claude-sonnet-5-5"
start = 2026-12-01T03:00:00Z
duration = 600
every = 86400
failure = "rate_limited"

[[drills]]
name = "once"
target_model = "gpt-4.1"
start = "2026-12-02T04:00:00+01:00"
duration = 60
"""


def load(tmp_path: Path, text: str):
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return load_policy(path)


def error(tmp_path: Path, text: str) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        load(tmp_path, text)
    return info.value


def test_a_schedule_is_read_in_file_order(tmp_path: Path):
    utc, plus_one = dt.timezone.utc, dt.timezone(dt.timedelta(hours=1))
    assert load(tmp_path, VALID).drills == (
        DrillSchedule(
            "nightly-claude",
            "claude-sonnet-5-5",
            dt.datetime(2026, 12, 1, 3, tzinfo=utc),
            600.0,
            86400.0,
            "rate_limited",
        ),
        DrillSchedule("once", "gpt-4.1", dt.datetime(2026, 12, 2, 4, tzinfo=plus_one), 60.0, None, "overloaded"),
    )


def test_no_drills_by_default(tmp_path: Path):
    assert load(tmp_path, "").drills == ()


BASE = 'name = "d"\ntarget_model = "m"\nstart = 2026-12-01T03:00:00Z\nduration = 600\n'


@pytest.mark.parametrize(
    ("entry", "key", "says"),
    [
        (
            'target_model = "m"\nstart = 2026-12-01T03:00:00Z\nduration = 600\n',
            "drills[0].name",
            "missing required key",
        ),
        (
            'name = "d"\nstart = 2026-12-01T03:00:00Z\nduration = 600\n',
            "drills[0].target_model",
            "missing required key",
        ),
        (BASE.replace("2026-12-01T03:00:00Z", "2026-12-01T03:00:00"), "drills[0].start", "needs a UTC offset"),
        (BASE.replace("2026-12-01T03:00:00Z", '"tomorrow"'), "drills[0].start", "not an ISO 8601 date-time"),
        (BASE.replace("600", "0"), "drills[0].duration", "above 0"),
        (BASE.replace("600", '"10m"'), "drills[0].duration", "expected a number of seconds"),
        (BASE + "every = 60\n", "drills[0].every", "shorter than duration"),
        (BASE + 'failure = "boom"\n', "drills[0].failure", "unknown drill failure 'boom'"),
        (BASE + 'target = "m"\n', "drills[0].target", "unknown key"),
        (BASE.replace('"d"', '""'), "drills[0].name", "empty drill name"),
    ],
)
def test_a_bad_entry_names_its_key(tmp_path: Path, entry: str, key: str, says: str):
    problem = error(tmp_path, "[[drills]]\n" + entry)
    assert problem.key == key
    assert says in problem.problem


def test_a_drill_named_twice_is_refused(tmp_path: Path):
    problem = error(tmp_path, f"[[drills]]\n{BASE}[[drills]]\n{BASE}")
    assert problem.key == "drills[1].name" and "named twice" in problem.problem


def test_drills_must_be_an_array_of_tables(tmp_path: Path):
    assert error(tmp_path, 'drills = "nightly"\n').key == "drills"
