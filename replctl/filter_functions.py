"""The filter sandbox's allow-list: the Spark SQL functions a connection filter may call (issue 19, cli.md).

A filter runs inside the replication job, in the driver and the executors, as the operator who replicates.
So it may call only functions that are deterministic (every pass, dry run and re-run decides alike), that
have no side effect (no reflection, no file, no error raised on purpose, no environment) and that read
nothing but the event: comparison, null handling and boolean logic, string, array, map and JSON functions,
and casts. Everything else Spark knows is refused when the filter is set, and again when a stored filter is
read: random and time functions, reflection (`java_method`, `reflect`, `try_reflect`), `raise_error`,
`assert_true`, `input_file_name`, `current_user` and the other session functions, aggregates, windows,
generators, and functions whose output size an expression can blow up (`repeat`, `space`, `lpad`, `rpad`,
`array_repeat`, `sequence`).

The names are Spark SQL's (`SHOW SYSTEM FUNCTIONS`), lower case. tests/unit/test_filter_sandbox.py checks
every name Spark registers against these sets, so a new Spark version cannot add a callable function
unnoticed.
"""

from __future__ import annotations

COMPARISON_FUNCTIONS: frozenset[str] = frozenset(
    {
        "coalesce",
        "equal_null",
        "greatest",
        "if",
        "ifnull",
        "isnan",
        "isnotnull",
        "isnull",
        "least",
        "nanvl",
        "nullif",
        "nvl",
        "nvl2",
    }
)

STRING_FUNCTIONS: frozenset[str] = frozenset(
    {
        "ascii",
        "bit_length",
        "btrim",
        "char_length",
        "character_length",
        "concat",
        "concat_ws",
        "contains",
        "endswith",
        "find_in_set",
        "ilike",
        "initcap",
        "instr",
        "is_valid_utf8",
        "lcase",
        "left",
        "len",
        "length",
        "levenshtein",
        "like",
        "locate",
        "lower",
        "ltrim",
        "octet_length",
        "overlay",
        "position",
        "regexp",
        "regexp_count",
        "regexp_extract",
        "regexp_extract_all",
        "regexp_instr",
        "regexp_like",
        "regexp_replace",
        "regexp_substr",
        "replace",
        "reverse",
        "right",
        "rlike",
        "rtrim",
        "split",
        "split_part",
        "startswith",
        "substr",
        "substring",
        "substring_index",
        "translate",
        "trim",
        "ucase",
        "upper",
    }
)

ARRAY_FUNCTIONS: frozenset[str] = frozenset(
    {
        "aggregate",
        "array",
        "array_append",
        "array_compact",
        "array_contains",
        "array_distinct",
        "array_except",
        "array_insert",
        "array_intersect",
        "array_join",
        "array_max",
        "array_min",
        "array_position",
        "array_prepend",
        "array_remove",
        "array_size",
        "array_sort",
        "array_union",
        "arrays_overlap",
        "cardinality",
        "element_at",
        "exists",
        "filter",
        "flatten",
        "forall",
        "get",
        "reduce",
        "size",
        "slice",
        "sort_array",
        "transform",
        "try_element_at",
        "zip_with",
    }
)

# JSON text (payload) and what parsing it yields: maps and variants.
JSON_FUNCTIONS: frozenset[str] = frozenset(
    {
        "from_json",
        "get_json_object",
        "is_variant_null",
        "json_array_length",
        "json_object_keys",
        "map",
        "map_contains_key",
        "map_keys",
        "map_values",
        "to_json",
        "try_parse_json",
        "try_variant_get",
        "variant_get",
    }
)

CAST_FUNCTIONS: frozenset[str] = frozenset({"bigint", "boolean", "cast", "int", "string", "try_cast"})

ALLOWED_FUNCTIONS: frozenset[str] = (
    COMPARISON_FUNCTIONS | STRING_FUNCTIONS | ARRAY_FUNCTIONS | JSON_FUNCTIONS | CAST_FUNCTIONS
)

# Spark registers its operators as functions too. They are syntax the parser checks (comparison, boolean
# logic, arithmetic on origin_time); none has a side effect or depends on anything but its operands.
OPERATORS: frozenset[str] = frozenset(
    {
        "!",
        "!=",
        "%",
        "&",
        "*",
        "+",
        "-",
        "/",
        "<",
        "<<",
        "<=",
        "<=>",
        "<>",
        "=",
        "==",
        ">",
        ">=",
        ">>",
        ">>>",
        "^",
        "|",
        "||",
        "~",
        "and",
        "between",
        "case",
        "in",
        "not",
        "or",
        "when",
    }
)
