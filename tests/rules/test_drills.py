"""The drill window rule (otel_sampling.rules.drills): a schedule's windows are
[start + k * every, start + k * every + duration), half-open, k >= 0; one window without every."""

from __future__ import annotations

import datetime as dt

from otel_sampling.rules.drills import window_at

START = dt.datetime(2026, 12, 1, 3, 0, tzinfo=dt.timezone.utc)


def at(seconds: float) -> dt.datetime:
    return START + dt.timedelta(seconds=seconds)


def test_one_window_without_every():
    assert window_at(START, 600, None, at(0)) == (START, at(600))
    assert window_at(START, 600, None, at(599.9)) == (START, at(600))


def test_a_window_is_half_open_and_nothing_runs_before_start():
    assert window_at(START, 600, None, at(600)) is None
    assert window_at(START, 600, None, at(-0.001)) is None
    assert window_at(START, 600, None, at(86400 * 7)) is None


def test_every_repeats_the_window():
    day = 86400
    assert window_at(START, 600, day, at(day + 10)) == (at(day), at(day + 600))
    assert window_at(START, 600, day, at(3 * day + 599)) == (at(3 * day), at(3 * day + 600))


def test_between_repeated_windows_no_drill_runs():
    assert window_at(START, 600, 3600, at(600)) is None
    assert window_at(START, 600, 3600, at(3599)) is None


def test_back_to_back_windows_when_every_equals_duration():
    assert window_at(START, 60, 60, at(60)) == (at(60), at(120))


def test_offsets_compare_as_instants():
    paris = dt.timezone(dt.timedelta(hours=1))
    assert window_at(START, 600, None, dt.datetime(2026, 12, 1, 4, 5, tzinfo=paris)) == (START, at(600))
