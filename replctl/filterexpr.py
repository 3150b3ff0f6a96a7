"""Connection filter expressions: parse, check and normalise Spark SQL boolean expressions (cli.md, RFC2).

A filter is validated when given, without starting Spark: syntax, column names, a boolean top level, and no
subqueries, aggregates or window functions (a filter judges one event at a time). The normalised text is what
the catalog stores, what RFC2 compares with ``==``, and what the replication job hands to Spark's ``F.expr``.

A filter is code that Spark runs as the operator, so it is sandboxed (issue 19): it may call only the
functions of `replctl.filter_functions` (deterministic, side-effect free, over the event), never a qualified
or unknown one, and never holds ``${`` (Spark's variable substitution, also switched off in every session
replctl builds). Function names are checked twice: as typed (sqlglot turns some calls into others, e.g.
``date(x)`` into a cast) and as the normalised text calls them (what Spark will run). The normalised text must
itself pass `parse_filter` unchanged, so a stored filter can be re-validated when it is read
(`check_stored`).

sqlglot costs about 0.1 s to import, so it is imported inside the functions: commands that take no filter (and
``replctl --help``) never pay for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from replctl.errors import BadFilter
from replctl.filter_functions import ALLOWED_FUNCTIONS, OPERATORS

if TYPE_CHECKING:
    from sqlglot import exp

DIALECT = "spark"

# The event columns a filter may read (cli.md; rules.md M2).
ALLOWED_COLUMNS: frozenset[str] = frozenset({"origin", "origin_time", "type", "key", "tags", "payload"})

# Spark functions that return a boolean but that sqlglot parses as untyped (anonymous) calls.
_BOOLEAN_FUNCTIONS = frozenset(
    {
        "forall",
        "isnull",
        "isnotnull",
        "isnan",
        "arrays_overlap",
        "equal_null",
        "is_valid_utf8",
        "is_variant_null",
        "map_contains_key",
        "regexp",
        "like",
        "ilike",
        "rlike",
        "array_contains",
        "exists",
        "startswith",
        "endswith",
        "contains",
        "in",
    }
)

_MISSING_QUOTE = re.compile(r"Missing (\S+) from")

# Keywords that may stand before a parenthesis without calling anything.
_KEYWORDS = frozenset({"then", "else"})
# Types that take arguments, as written after AS, ::, < or , in a cast (DECIMAL(10, 2)); not calls.
_PARAMETRISED_TYPES = frozenset({"decimal", "dec", "numeric", "char", "character", "varchar"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LEADING_NAME = re.compile(r"`?([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class FilterExpr:
    """A validated filter: its normalised Spark SQL text and the event columns it reads."""

    normalised: str
    columns: frozenset[str]


def parse_filter(text: str) -> FilterExpr:
    """Parse and validate a filter expression; raise `BadFilter` (exit 2) when it cannot be a filter.

    Normalisation lower-cases column names, drops quoting and comments, and prints the expression with
    sqlglot's Spark generator, so ``KEY  =  'e3'`` and ``key = 'e3'`` normalise to the same text. The
    normalised text passes the same checks again: Spark runs that text, not the one typed.
    """
    parsed = _parse_filter(text)
    again = _parse_filter(parsed.normalised)
    if again.normalised != parsed.normalised:
        raise BadFilter(
            f"filter {text.strip()!r} does not keep one meaning once normalised; write it more plainly",
            details={"expression": text},
        )
    return parsed


def check_stored(normalised: str) -> str:
    """Re-validate a filter read from the catalog; return it, or raise `BadFilter` saying why it is refused.

    A stored filter may predate the sandbox, or the catalog may have been edited by hand: it is run only if it
    passes today's checks and is already in normal form.
    """
    parsed = parse_filter(normalised)
    if parsed.normalised != normalised:
        raise BadFilter(
            f"stored filter {normalised!r} is not in normal form (expected {parsed.normalised!r})",
            hint="set it again: replctl topology filter SRC DST --set EXPR",
            details={"expression": normalised},
        )
    return normalised


def _parse_filter(text: str) -> FilterExpr:
    from sqlglot import exp

    if "${" in text:
        # Spark would expand ${env:...}, ${system:...} before parsing: a filter could read the environment.
        raise BadFilter(
            f"filter {text.strip()!r} holds '${{': variable substitution is not allowed in a filter",
            hint="write the value itself, e.g. key = 'e3'",
            details={"expression": text},
        )
    tree = _parse(text)
    _refuse_non_row_constructs(tree, text)
    _refuse_functions(_called_names(text), text)
    _refuse_functions(_generated_names(tree), text)
    columns = _normalise_columns(tree, text)
    if not _is_boolean(tree):
        raise BadFilter(
            f"filter {text.strip()!r} is not a boolean expression; a filter must decide true or false for "
            "each event, e.g. key = 'e3' or array_contains(tags, 'ext')",
            hint="compare a column with a value, e.g. --filter \"key = 'e3'\"",
            details={"expression": text},
        )
    for node in tree.walk():
        if isinstance(node, exp.Expr):
            node.pop_comments()
    normalised = tree.sql(dialect=DIALECT)
    return FilterExpr(normalised=normalised, columns=frozenset(columns))


def or_origin(filters: str | Sequence[str], location: str) -> str:
    """DR3: the filter of a terminal location's recovery source, OR-ed with ``origin = '<location>'``.

    `filters` is one normalised filter or several (every filter the connection ever had, core.recovery
    `history_filters`), each kept in its own parentheses. Returns the normalised text of
    ``(<f1>) OR (<f2>) ... OR origin = '<location>'``.
    """
    from sqlglot import exp

    each = [filters] if isinstance(filters, str) else list(filters)
    literal = exp.Literal.string(location).sql(dialect=DIALECT)
    return parse_filter(" OR ".join([*(f"({f})" for f in each), f"origin = {literal}"])).normalised


def _parse(text: str) -> exp.Expr:
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    if not text.strip():
        raise BadFilter("empty filter expression (line 1, column 1)", details={"line": 1, "column": 1})
    try:
        tree = sqlglot.parse_one(text, read=DIALECT)
    except TokenError as error:
        line, column, what = _unterminated(text)
        raise BadFilter(
            f"syntax error at line {line}, column {column}: {what}",
            details={"line": line, "column": column, "expression": text},
        ) from error
    except ParseError as error:
        # A refused function called with arguments sqlglot does not expect is refused as a function, not as
        # a syntax error: the operator learns that no spelling of it is allowed.
        _refuse_functions(_called_names(text), text)
        first = error.errors[0] if error.errors else {}
        line = int(first.get("line") or 1)
        end_column = int(first.get("col") or 1)
        highlight = str(first.get("highlight") or "")
        # sqlglot reports the column where the offending token ends; operators look for where it starts.
        column = max(1, end_column - len(highlight) + 1)
        description = str(first.get("description") or "cannot parse")
        near = f" near {highlight!r}" if highlight else ""
        raise BadFilter(
            f"syntax error at line {line}, column {column}{near}: {_plain(description)}",
            details={"line": line, "column": column, "expression": text},
        ) from error
    except (IndexError, KeyError, TypeError, ValueError, AttributeError) as error:
        # sqlglot's builders of some functions index their arguments unchecked (map with an odd count).
        _refuse_functions(_called_names(text), text)
        raise BadFilter(
            f"filter {text.strip()!r} cannot be parsed: check the arguments of its function calls",
            details={"expression": text},
        ) from error
    if tree is None:
        raise BadFilter("empty filter expression (line 1, column 1)", details={"line": 1, "column": 1})
    _check_connectives(text, tree)
    return tree


def _check_connectives(text: str, tree: exp.Expr) -> None:
    """Refuse an AND or OR that the parser dropped: sqlglot reads `key = OR (key = 'a')` as
    `key = (key = 'a')`, so the filter recorded would not be the one typed. Every AND and OR token must be a
    conjunction or disjunction of the tree (or the AND of a BETWEEN)."""
    from sqlglot import TokenType
    from sqlglot import exp as expressions
    from sqlglot.dialects.dialect import Dialect

    typed = sum(
        t.token_type in (TokenType.AND, TokenType.OR) for t in Dialect.get_or_raise(DIALECT).tokenize(text)
    )
    parsed = sum(1 for _ in tree.find_all(expressions.And, expressions.Or, expressions.Between))
    if parsed < typed:
        raise BadFilter(
            f"syntax error in filter {text.strip()!r}: an AND or OR has no condition on one side",
            details={"expression": text},
        )


def _plain(description: str) -> str:
    """sqlglot's descriptions name its Python classes; keep what an operator can act on."""
    if description.startswith("Required keyword"):
        return "the expression is incomplete"
    return description


def _unterminated(text: str) -> tuple[int, int, str]:
    """Find the quote or comment that the tokenizer could not close: (line, column, what), 1-based.

    sqlglot's tokenizer error carries no reliable position, so the text is scanned here with Spark's lexical
    rules (backslash escapes inside string literals).
    """
    index = 0
    while index < len(text):
        char = text[index]
        if char in "'\"`":
            end = index + 1
            while end < len(text) and text[end] != char:
                end += 2 if char != "`" and text[end] == "\\" else 1
            if end >= len(text):
                line, column = _position(text, index)
                kind = "quoted name" if char == "`" else "string"
                return line, column, f"unterminated {kind} starting with {char}"
            index = end + 1
        elif text.startswith("--", index):
            newline = text.find("\n", index)
            index = len(text) if newline < 0 else newline + 1
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            if end < 0:
                line, column = _position(text, index)
                return line, column, "unterminated comment starting with /*"
            index = end + 2
        else:
            index += 1
    line, column = _position(text, len(text))
    return line, column, "cannot split the expression into tokens"


def _position(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    line = before.count("\n") + 1
    column = offset - (before.rfind("\n") + 1) + 1
    return line, column


def _refuse_non_row_constructs(tree: exp.Expr, text: str) -> None:
    """A filter sees one event: no subquery, aggregate, window, statement, star or parameter."""
    from sqlglot import exp

    refused: tuple[tuple[type[exp.Expr], str], ...] = (
        (exp.Query, "subqueries"),
        (exp.DDL, "statements"),
        (exp.DML, "statements"),
        (exp.Command, "statements"),
        (exp.Block, "several statements"),
        (exp.AggFunc, "aggregate functions"),
        (exp.Window, "window functions"),
        (exp.Star, "*"),
        (exp.Placeholder, "parameters"),
    )
    for node in tree.walk():
        for kind, label in refused:
            if isinstance(node, kind):
                raise BadFilter(
                    f"filter {text.strip()!r} uses {label} ({node.sql(dialect=DIALECT)}); a filter is a "
                    "boolean expression over the columns of one event",
                    details={"expression": text},
                )


def _called_names(text: str) -> list[str]:
    """The names the text calls as functions, as typed: every name token right before a parenthesis.

    A qualified call (``system.builtin.lower(key)``) comes back with its qualifier, so that it is refused: it
    could name a user-defined function that shadows a built-in one.
    """
    from sqlglot import TokenType
    from sqlglot.dialects.spark import Spark

    type_context = {TokenType.ALIAS, TokenType.DCOLON, TokenType.LT, TokenType.COLON, TokenType.COMMA}
    tokens = Spark().tokenize(text)
    names: list[str] = []
    for index, token in enumerate(tokens[:-1]):
        if tokens[index + 1].token_type is not TokenType.L_PAREN or not _NAME.fullmatch(token.text):
            continue
        if token.token_type is TokenType.NUMBER or token.token_type.name.endswith("STRING"):
            continue
        before = tokens[index - 1].token_type if index else None
        if token.text.lower() in _PARAMETRISED_TYPES and before in type_context:
            continue
        parts = [token.text]
        back = index - 1
        while back >= 1 and tokens[back].token_type is TokenType.DOT:
            parts.insert(0, tokens[back - 1].text)
            back -= 2
        names.append(".".join(parts).lower())
    return names


def _generated_names(tree: exp.Expr) -> list[str]:
    """The functions the normalised text calls, as Spark will read them (sqlglot may rename a call)."""
    from sqlglot import exp

    names: list[str] = []
    for node in tree.walk():
        if not isinstance(node, exp.Func):
            continue
        if isinstance(node, exp.Anonymous):
            names.append(str(node.name).lower())
            continue
        generated = node.sql(dialect=DIALECT)
        if isinstance(node, exp.Binary):  # an operator form, e.g. key RLIKE 'e.*'
            left, right = node.left.sql(dialect=DIALECT), node.right.sql(dialect=DIALECT)
            if generated.startswith(left) and generated.endswith(right):
                names.append(generated[len(left) : len(generated) - len(right)].strip().lower())
                continue
        match = _LEADING_NAME.match(generated)
        # Anything that does not start with a name is not a call the allow-list knows: refused.
        names.append(match.group(1).lower() if match else generated)
    return names


def _refuse_functions(names: list[str], text: str) -> None:
    """The sandbox (issue 19): only functions of the allow-list, never a qualified or unknown one."""
    refused = [n for n in dict.fromkeys(names) if n not in ALLOWED_FUNCTIONS | OPERATORS | _KEYWORDS]
    if not refused:
        return
    plural = "s" if len(refused) > 1 else ""
    raise BadFilter(
        f"filter {text.strip()!r} calls {', '.join(refused)}: not an allowed function{plural}; a filter may "
        "call only deterministic, side-effect-free functions of the event (comparison, string, array, map "
        "and JSON functions, casts)",
        hint="e.g. lower(key) = 'e3' or array_contains(tags, 'ext')",
        details={
            "refused_functions": refused,
            "allowed_functions": sorted(ALLOWED_FUNCTIONS),
            "expression": text,
        },
    )


def _normalise_columns(tree: exp.Expr, text: str) -> set[str]:
    """Check every column reference against ALLOWED_COLUMNS and rewrite it lower-case and unquoted."""
    from sqlglot import exp

    columns: set[str] = set()
    unknown: list[str] = []
    for column in list(tree.find_all(exp.Column)):
        qualified = bool(column.table)
        name = column.sql(dialect=DIALECT).replace("`", "") if qualified else column.name
        lowered = name.lower()
        if qualified or lowered not in ALLOWED_COLUMNS:
            if name not in unknown:
                unknown.append(name)
            continue
        columns.add(lowered)
        column.set("this", exp.to_identifier(lowered))
    if unknown:
        allowed = ", ".join(sorted(ALLOWED_COLUMNS))
        plural = "s" if len(unknown) > 1 else ""
        raise BadFilter(
            f"unknown column{plural} {', '.join(unknown)} in filter {text.strip()!r}; allowed: {allowed}",
            hint=f"a filter reads only the event columns {allowed}",
            details={"unknown_columns": unknown, "allowed_columns": sorted(ALLOWED_COLUMNS)},
        )
    return columns


def _is_boolean(tree: exp.Expr) -> bool:
    """True when the expression is a predicate; AND, OR and NOT must combine predicates, not strings."""
    from sqlglot import exp
    from sqlglot.optimizer.annotate_types import annotate_types

    node = tree
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Connector):
        return _is_boolean(node.left) and _is_boolean(node.right)
    if isinstance(node, exp.Not):
        return _is_boolean(node.this)
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower() in _BOOLEAN_FUNCTIONS
    if isinstance(node, exp.Func) and _generated_names(node)[0] in _BOOLEAN_FUNCTIONS:
        return True  # a typed node sqlglot does not annotate, e.g. equal_null
    if isinstance(node, exp.Column):
        return False  # no event column is boolean
    annotated = annotate_types(node.copy(), dialect=DIALECT)
    return annotated.type is not None and annotated.type.is_type(exp.DataType.Type.BOOLEAN)
