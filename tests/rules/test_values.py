"""What a token count is (otel_sampling.rules.values): an int (not a bool) from 0 to 2**63 - 1, as
OTLP carries int attributes (int64); anything else a provider sends is left off."""

from __future__ import annotations

from otel_sampling.rules.values import MAX_TOKEN_COUNT, Usage, clean_usage


class _EqualToAnything:
    """A hostile value: equal to anything, unhashable."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return True


def test_usage_of_counts_is_kept_as_it_is() -> None:
    usage = Usage(75, 51, 0, None, MAX_TOKEN_COUNT)
    assert clean_usage(usage) is usage


def test_every_value_that_is_no_count_is_left_off() -> None:
    cleaned = clean_usage(Usage(10, "51", -1, True, MAX_TOKEN_COUNT + 1))
    assert cleaned[0] == 10
    assert all(value is None for value in cleaned[1:])


def test_a_value_equal_to_anything_is_left_off_too() -> None:
    cleaned = clean_usage(Usage(10, _EqualToAnything()))
    assert cleaned[0] == 10
    assert all(value is None for value in cleaned[1:])
