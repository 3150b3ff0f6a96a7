"""The filter sandbox (issue 19 item 6, issue 14 item 4): which Spark SQL functions a filter may call.

Every name Spark registers (tests/unit/data/spark_functions.txt) is either allowed by design (an operator,
or a function of `replctl.filter_functions` with an example below) or refused when the filter is given.
"""

from __future__ import annotations

import pytest
from filter_examples import EXAMPLES, SPARK_FUNCTIONS

from replctl.errors import BadFilter
from replctl.filter_functions import ALLOWED_FUNCTIONS, OPERATORS
from replctl.filterexpr import check_stored, parse_filter

# What Spark refuses by its own rules (aggregates, windows) is refused before the sandbox is asked.
REFUSED = r"not an allowed function|uses aggregate functions"


def test_the_function_list_is_spark_s_whole_registry() -> None:
    assert len(SPARK_FUNCTIONS) == len(set(SPARK_FUNCTIONS)) == 591
    assert {"java_method", "reflect", "try_reflect", "raise_error", "assert_true", "rand", "uuid"} <= set(
        SPARK_FUNCTIONS
    )


def test_the_allow_list_names_only_spark_functions_and_each_has_an_example() -> None:
    # try_cast is syntax (TRY_CAST(x AS t)), not a registered function.
    assert ALLOWED_FUNCTIONS - {"try_cast"} <= set(SPARK_FUNCTIONS)
    assert set(SPARK_FUNCTIONS) >= OPERATORS
    assert set(EXAMPLES) == ALLOWED_FUNCTIONS


@pytest.mark.parametrize("name", SPARK_FUNCTIONS)
def test_every_spark_function_is_allowed_by_design_or_refused(name: str) -> None:
    if name in OPERATORS:
        return  # syntax, checked by the parser: comparison, boolean logic, arithmetic
    if name in ALLOWED_FUNCTIONS:
        parse_filter(EXAMPLES[name])
        return
    with pytest.raises(BadFilter, match=REFUSED) as caught:
        parse_filter(f"{name}(key) IS NULL")
    assert caught.value.code == "bad-filter"
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        (
            "java_method('org.apache.hadoop.fs.FileUtil','chmod','/some/file','777') = 0 and key = 'a'",
            ["java_method"],
        ),
        ("reflect('java.lang.System', 'exit', 1) = 0", ["reflect"]),
        ("try_reflect('java.lang.System', 'getenv', 'REPLCTL_DB') = 'x'", ["try_reflect"]),
        ("raise_error('boom') IS NULL", ["raise_error"]),
        ("assert_true(key = 'a') IS NULL", ["assert_true"]),
        ("rand() < 0.5", ["rand"]),
        ("uuid() = key", ["uuid"]),
        ("input_file_name() LIKE '%A%'", ["input_file_name"]),
        ("current_user() = 'root'", ["current_user"]),
        ("current_user = 'root'", ["current_user"]),
        ("`reflect`('java.lang.System', 'exit', 1) = 0", ["reflect"]),
        ("system.builtin.lower(key) = 'a'", ["system.builtin.lower"]),
        ("IDENTIFIER('reflect')('java.lang.System', 'exit', 1) = 0", ["identifier"]),
        ("uuid(key) = 'a'", ["uuid"]),
        ("key = 'a' OR lower(concat(key, java_method('a', 'b'))) = 'x'", ["java_method"]),
    ],
)
def test_issue19_6_filters_that_run_code_are_refused(text: str, refused: list[str]) -> None:
    with pytest.raises(BadFilter) as caught:
        parse_filter(text)
    error = caught.value
    assert error.code == "bad-filter"
    assert error.details["refused_functions"] == refused
    assert error.message.startswith(f"filter {text!r} calls {', '.join(refused)}: not an allowed function")


@pytest.mark.parametrize(
    "text", ["key = '${env:REPLCTL_DB}'", "${env:REPLCTL_DB} = key", "key = '$' || '{x}'"]
)
def test_issue19_6_variable_substitution_is_refused(text: str) -> None:
    if "${" not in text:
        assert parse_filter(text).normalised == "key = '$' || '{x}'"  # only the two characters together
        return
    with pytest.raises(BadFilter) as caught:
        parse_filter(text)
    assert caught.value.message == (
        f"filter {text!r} holds '${{': variable substitution is not allowed in a filter"
    )


def test_issue14_4_an_unknown_function_is_refused_when_the_filter_is_given() -> None:
    with pytest.raises(BadFilter) as caught:
        parse_filter("nosuchfn(key) = 'a'")
    assert caught.value.details["refused_functions"] == ["nosuchfn"]
    assert caught.value.exit_code == 2


def test_a_stored_filter_is_revalidated_when_read() -> None:
    assert check_stored("ARRAY_CONTAINS(tags, 'ext')") == "ARRAY_CONTAINS(tags, 'ext')"
    with pytest.raises(BadFilter, match=r"calls nosuchfn: not an allowed function"):
        check_stored("NOSUCHFN(key) = 'a'")
    with pytest.raises(BadFilter, match=r"not in normal form \(expected \"key = 'a'\"\)"):
        check_stored("KEY='a'")


def test_casts_inside_types_are_not_taken_for_calls() -> None:
    assert parse_filter(
        "CAST(payload AS DECIMAL(10, 2)) > 1 AND from_json(payload, 'MAP<STRING, DECIMAL(10,2)>') IS NULL"
    ).normalised.startswith("CAST(payload AS DECIMAL(10, 2)) > 1")
