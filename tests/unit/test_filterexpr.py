"""Filter expressions: what is accepted, what is refused and where, and how they normalise (cli.md, RFC2)."""

from __future__ import annotations

import pytest

from replctl.errors import BadFilter
from replctl.filterexpr import ALLOWED_COLUMNS, or_origin, parse_filter


@pytest.mark.parametrize(
    ("text", "normalised", "columns"),
    [
        ("key = 'e3'", "key = 'e3'", {"key"}),
        ("array_contains(tags, 'ext')", "ARRAY_CONTAINS(tags, 'ext')", {"tags"}),
        ("origin_time > 3 AND origin = 'A'", "origin_time > 3 AND origin = 'A'", {"origin_time", "origin"}),
        ("type IN ('a', 'b') OR key LIKE 'e%'", "type IN ('a', 'b') OR key LIKE 'e%'", {"type", "key"}),
        ("get_json_object(payload, '$.x') = '1'", "GET_JSON_OBJECT(payload, '$.x') = '1'", {"payload"}),
        ("exists(tags, t -> t = 'x')", "EXISTS(tags, t -> t = 'x')", {"tags"}),
        ("isnull(type)", "ISNULL(type)", {"type"}),
        ("NOT (key = 'e3')", "NOT (key = 'e3')", {"key"}),
        ("true", "TRUE", set()),
    ],
)
def test_accepted_filters_normalise_and_name_their_columns(
    text: str, normalised: str, columns: set[str]
) -> None:
    parsed = parse_filter(text)
    assert parsed.normalised == normalised
    assert parsed.columns == columns


@pytest.mark.parametrize(
    "variant",
    [
        "KEY  =  'e3'",
        "key='e3'",
        "`key` = 'e3'",
        'Key = "e3"',
        "key == 'e3'",
        "key = 'e3' -- a comment",
        "\n key\n=\n'e3'",
    ],
)
def test_spellings_of_one_filter_normalise_to_the_same_text(variant: str) -> None:
    assert parse_filter(variant).normalised == parse_filter("key = 'e3'").normalised == "key = 'e3'"


@pytest.mark.parametrize(
    "text",
    [
        "KEY = 'e3' and ARRAY_CONTAINS(Tags, 'x')",
        "origin_time BETWEEN 1 AND 5 OR payload IS NULL",
        "key = 'it\\'s'",
        "size(tags) > 0",
    ],
)
def test_normalising_twice_changes_nothing(text: str) -> None:
    once = parse_filter(text).normalised
    assert parse_filter(once).normalised == once


def test_syntax_error_gives_line_and_column_of_the_offending_token() -> None:
    with pytest.raises(BadFilter) as caught:
        parse_filter("key = 'e3'\nand and tags")
    error = caught.value
    assert error.code == "bad-filter"
    assert error.exit_code == 2
    assert "line 2, column 5" in error.message
    assert error.details["line"] == 2
    assert error.details["column"] == 5


def test_incomplete_expression_points_at_its_last_token() -> None:
    with pytest.raises(BadFilter, match=r"line 1, column 12 near 'and'"):
        parse_filter("key = 'e3' and")


@pytest.mark.parametrize("text", ["key = OR (key = 'e1')", "key = AND (origin = 'A')"])
def test_an_and_or_or_the_parser_would_drop_is_refused_not_recorded_without_it(text: str) -> None:
    # sqlglot reads these as `key = (key = 'e1')`: the connective would vanish from the recorded filter.
    with pytest.raises(BadFilter) as caught:
        parse_filter(text)
    assert caught.value.message == (
        f"syntax error in filter {text!r}: an AND or OR has no condition on one side"
    )
    assert parse_filter("origin_time BETWEEN 1 AND 3 AND key = 'a' OR true").normalised == (
        "origin_time BETWEEN 1 AND 3 AND key = 'a' OR TRUE"
    )


def test_unterminated_string_is_reported_where_it_starts() -> None:
    with pytest.raises(BadFilter, match=r"line 1, column 7: unterminated string"):
        parse_filter("key = 'e3")


def test_empty_filter_is_refused() -> None:
    with pytest.raises(BadFilter, match="empty"):
        parse_filter("   ")


def test_unknown_columns_are_named_with_the_allowed_ones() -> None:
    with pytest.raises(BadFilter) as caught:
        parse_filter("colour = 'red' OR Size > 3")
    message = caught.value.message
    assert "colour" in message and "Size" in message
    assert all(column in message for column in ALLOWED_COLUMNS)
    assert caught.value.details["unknown_columns"] == ["colour", "Size"]


def test_qualified_column_is_unknown() -> None:
    with pytest.raises(BadFilter, match=r"unknown column e\.key"):
        parse_filter("e.key = 'x'")


@pytest.mark.parametrize(
    "text", ["key", "1 + 2", "origin_time * 2", "NOT key", "type = 'x' OR origin", "'e3'"]
)
def test_non_boolean_expressions_are_refused(text: str) -> None:
    with pytest.raises(BadFilter, match="not a boolean expression"):
        parse_filter(text)


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("key IN (SELECT key FROM t)", "subqueries"),
        ("(SELECT 1) = 1", "subqueries"),
        ("EXISTS (SELECT 1)", "subqueries"),
        ("count(*) > 1", "aggregate"),
        ("max(origin_time) > 1", "aggregate"),
        ("row_number() OVER (ORDER BY key) = 1", "window"),
        ("key = ?", "parameters"),
        ("key = 'a'; DROP TABLE t", "statements"),
    ],
)
def test_constructs_beyond_one_event_are_refused(text: str, what: str) -> None:
    with pytest.raises(BadFilter, match=what):
        parse_filter(text)


def test_or_origin_widens_a_filter_to_the_terminal_locations_own_events_dr3() -> None:
    assert or_origin("key = 'e3'", "A") == "(key = 'e3') OR origin = 'A'"
    widened = or_origin(parse_filter("key = 'e1' OR key = 'e2'").normalised, "B")
    assert widened == "(key = 'e1' OR key = 'e2') OR origin = 'B'"
    assert parse_filter(widened).normalised == widened


def test_or_origin_quotes_the_location_id() -> None:
    assert or_origin("key = 'e3'", "it's") == "(key = 'e3') OR origin = 'it\\'s'"
