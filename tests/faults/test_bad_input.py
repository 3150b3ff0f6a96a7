"""Bad input through the CLI (cli.md, Exit codes): random names, numbers, filters, events, files and flags.

Every input must end with exit 0 (valid), 2 (invalid) or 3 (refused by a rule): never 1 (a bug), never a
traceback, the reason on one line, and after anything not accepted the catalog (status and topology history)
and the store (its file listing) exactly as before. The world holds no events, so that inputs which pass
validation are still answered without starting Spark: appends go to the hub H (refused by ROLE1, exit 3,
after the input was parsed) and changes are asked for with `--dry-run`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clitool import Outcome, Replctl
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

KNOWN = {"A", "B", "H"}
EXAMPLES = settings(
    max_examples=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# Inputs tried and rejected per topic, printed at the end of the run (tests/faults/conftest.py).
TALLY: dict[str, dict[str, int]] = {}


class World:
    """A: read-write, B: read-write, H: hub; A→B. No events, so no command here needs Spark."""

    def __init__(self, root: Path) -> None:
        self.rc = Replctl(root)
        self.rc("init")
        self.rc("location", "add", "A")
        self.rc("location", "add", "B")
        self.rc("location", "add", "H", "--role", "hub")
        self.rc("topology", "add", "A", "B")
        self.files = root / "inputs"
        self.files.mkdir()
        self.baseline = self.state()

    def state(self) -> dict[str, Any]:
        """What a rejected input must leave unchanged: status, history and every file of the store."""
        store = self.rc.store
        listing = sorted(str(p.relative_to(store)) for p in store.rglob("*")) if store.exists() else []
        return {**self.rc.snapshot(), "store": listing}

    def check(self, topic: str, *args: str, allowed: tuple[int, ...] = (2, 3)) -> Outcome:
        """Run; the exit code must be allowed, the reason one line, no traceback, nothing changed."""
        out = self.rc(*args, expect=None)
        text = out.stdout + out.stderr
        assert out.code in allowed, f"replctl {args!r} exited {out.code}:\n{text}"
        assert "Traceback" not in text, text
        if out.code != 0:
            assert one_line_reason(out), f"no one-line reason for {args!r}:\n{text}"
            assert self.state() == self.baseline, f"replctl {args!r} changed something"
        tally = TALLY.setdefault(topic, {"tried": 0, "rejected": 0})
        tally["tried"] += 1
        tally["rejected"] += out.code != 0
        return out


def one_line_reason(out: Outcome) -> bool:
    # A replctl error prints "error: ..." (exit 2) or the refusal itself (exit 3), then at most "also" and
    # "hint:" lines; Click's own usage errors end with one "Error: ..." line.
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    if not lines:
        return False
    if any(line.startswith("Error: ") for line in lines):
        return True
    rest = lines[1:]
    return all(line.startswith(("hint: ", "  also [")) for line in rest)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield World(tmp_path_factory.mktemp("bad-input"))


# Names ------------------------------------------------------------------------------------------------------

names = st.text(max_size=80).filter(lambda n: n not in KNOWN)

# Every command that looks a location up; "--" keeps a name that starts with "-" from being read as an option.
LOOKUPS = [
    ("location", "show", "--", "{n}"),
    ("log", "show", "--", "{n}"),
    ("log", "verify", "--", "{n}"),
    ("log", "append", "--event", "{{}}", "--", "{n}"),
    ("delete", "--upto", "1", "--", "{n}"),
    ("drill", "disaster", "--from", "1", "--", "{n}"),
    ("recover", "location", "--", "{n}"),
    ("location", "retire", "--", "{n}"),
    ("topology", "add", "--", "A", "{n}"),
    ("topology", "remove", "--", "{n}", "B"),
    ("topology", "filter", "--set", "key = 'k'", "--", "A", "{n}"),
    ("replicate", "--", "A", "{n}"),
]


@EXAMPLES
@given(name=names, command=st.sampled_from(LOOKUPS))
def test_an_unknown_location_name_exits_2_and_changes_nothing(
    world: World, name: str, command: tuple[str, ...]
) -> None:
    assume("\x00" not in name)  # no process can receive a NUL in its arguments
    world.check("unknown names", *(part.format(n=name) for part in command), allowed=(2,))


@pytest.mark.parametrize("name", ["", "..", "a/b", "a\nb", "x" * 65])
def test_a_location_id_the_store_cannot_hold_is_refused_with_exit_2(world: World, name: str) -> None:
    world.check("location ids", "location", "add", "--dry-run", "--", name, allowed=(2,))


# Numbers ----------------------------------------------------------------------------------------------------

INT64_MAX = 2**63 - 1

# Each option with the least value it takes (the greatest is the catalog's signed 64-bit limit), and the exit
# code a number in range gets: every command here is a read or a dry run (exit 0), but the hub H refuses
# local appends once the count is parsed (ROLE1, exit 3).
NUMBERED = [
    (("delete", "A", "--dry-run", "--upto", "{v}"), 0, 0),
    (("delete", "A", "--logical", "--dry-run", "--upto", "{v}"), 0, 0),
    (("log", "show", "A", "--from", "{v}"), 0, 0),
    (("log", "show", "A", "--limit", "{v}"), 1, 0),
    (("drill", "disaster", "A", "--dry-run", "--from", "{v}"), 1, 0),
    (("log", "append", "H", "--generate", "{v}"), 1, 3),
    (("ops", "list", "--limit", "{v}"), 1, 0),
]
# Options whose range depends on the catalog: `--lost-from` takes 1..A.seq only (DR0; A's log here is empty, so
# every number is out of range, tested with its exact refusal in tests/scenarios/test_recovery_stories.py).
BOUNDED = [
    (("recover", "location", "A", "--dry-run", "--lost-from", "{v}"), 1, 2),
]
# Spellings that are no number in any reading: no digit at all, or digits in a form no integer is written in.
NOT_NUMBERS = st.one_of(
    # Not starting with "-": the parser would read an option there (`-h` even prints the help).
    st.text(max_size=12).filter(lambda v: not v.startswith("-") and not any(ch.isdigit() for ch in v)),
    st.sampled_from(
        ["1.5", "1e3", "2.0e0", "0x10", "0b1", "0o7", "3.", "+-1", "1 2", "_1", "1_", "١٢", "NaN"]
    ),
)


@EXAMPLES
@given(data=st.data(), numbered=st.sampled_from(NUMBERED))
def test_a_number_in_range_is_taken_and_one_out_of_range_exits_2_changing_nothing(
    world: World, data: st.DataObject, numbered: tuple[tuple[str, ...], int, int]
) -> None:
    command, least, answer = numbered
    inside = st.integers(min_value=least, max_value=INT64_MAX)
    outside = st.integers(min_value=-(2**70), max_value=least - 1) | st.integers(INT64_MAX + 1, 2**70)
    value, valid = data.draw(st.one_of(inside.map(lambda n: (n, True)), outside.map(lambda n: (n, False))))
    args = [part.replace("{v}", str(value)) for part in command]
    # check() asserts the exact exit code, a one-line reason and, on exit 2, that nothing changed.
    world.check("numbers", *args, allowed=(answer,) if valid else (2,))


@EXAMPLES
@given(value=NOT_NUMBERS, numbered=st.sampled_from(NUMBERED + BOUNDED))
def test_what_is_not_a_number_exits_2_changing_nothing(
    world: World, value: str, numbered: tuple[tuple[str, ...], int, int]
) -> None:
    assume("\x00" not in value)  # no process can receive a NUL in its arguments
    world.check("numbers", *(part.replace("{v}", value) for part in numbered[0]), allowed=(2,))


# Filters ----------------------------------------------------------------------------------------------------

FILTER_TOKENS = [
    "key", "origin", "origin_time", "type", "tags", "payload", "KEY", "`key`", "nope", "e.key",
    "=", "<>", "<", ">=", "AND", "OR", "NOT", "IS NULL", "LIKE", "rlike", "IN", "(", ")", ",",
    "'e1'", "'", '"', "1", "-1", "1.5e", "NULL", "true", "array_contains(tags, 'x')", "size(tags)",
    "count(*)", "sum(origin_time)", "over ()", "SELECT 1", "(SELECT 1)", "--", "/*", "*/", ";", "\\", "%",
    "rand()", "current_timestamp()", "x -> x", "transform(tags, t -> t = 'a')",
]  # fmt: skip
filters = st.one_of(
    st.lists(st.sampled_from(FILTER_TOKENS), min_size=0, max_size=9).map(" ".join),
    st.text(max_size=60),
    st.sampled_from(["key = 'e1'", "array_contains(tags, 'x')", "origin_time > 3 AND type IS NULL"]),
)


def filter_args(how: str, expr: str) -> tuple[str, ...]:
    """The same filter given to a new connection (B→A) or set on the existing A→B, both as dry runs."""
    if how == "add":
        return ("topology", "add", "B", "A", "--dry-run", "--filter", expr)
    return ("topology", "filter", "A", "B", "--dry-run", "--set", expr)


@EXAMPLES
@given(expr=filters, how=st.sampled_from(["add", "set"]))
def test_any_filter_text_is_judged_without_spark_valid_or_exit_2(world: World, expr: str, how: str) -> None:
    # Random text and token soup: either a filter (exit 0) or refused as one (exit 2); never a crash, and
    # never a refusal of the topology (exit 3), which is the same for every filter here.
    assume("\x00" not in expr)
    world.check("filters", *filter_args(how, expr), allowed=(0, 2))


# Filters built to be valid: conditions on the event's columns joined with AND, OR, NOT and parentheses.
VALID_CONDITIONS = [
    "key = 'e1'", "key <> 'x'", "key LIKE 'a%'", "key rlike '^a'", "key IN ('a', 'b')", "origin = 'A'",
    "origin_time > 3", "origin_time >= -1", "type IS NULL", "payload IS NOT NULL", "size(tags) > 1",
    "array_contains(tags, 'x')", "true",
]  # fmt: skip
valid_filters = st.recursive(
    st.sampled_from(VALID_CONDITIONS),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(" ".join),
        inner.map(lambda f: f"NOT ({f})"),
        inner.map(lambda f: f"({f})"),
    ),
    max_leaves=5,
)
# One fault that makes any filter bad (F-rules of rules.md: one event's columns, deterministic, boolean),
# placed into a valid filter.
BAD_PARTS = [
    "nope = 1",  # an unknown column
    "count(*) > 0",  # an aggregate
    "sum(origin_time) > 1",
    "(SELECT 1) = 1",  # a subquery
    "rand() > 0.5",  # not deterministic
    "current_timestamp() IS NULL",
    "key =",  # incomplete
    "key = 'open",  # an unterminated string
    "(key = 'a'",  # an unclosed parenthesis
]


@EXAMPLES
@given(expr=valid_filters, how=st.sampled_from(["add", "set"]))
def test_a_valid_filter_is_accepted(world: World, expr: str, how: str) -> None:
    world.check("filters", *filter_args(how, expr), allowed=(0,))


@EXAMPLES
@given(
    good=valid_filters,
    bad=st.sampled_from(BAD_PARTS),
    join=st.sampled_from(["{bad}", "{good} AND {bad}", "{bad} OR {good}", "NOT ({bad})"]),
    how=st.sampled_from(["add", "set"]),
)
def test_a_filter_with_one_bad_part_exits_2_as_a_bad_filter_changing_nothing(
    world: World, good: str, bad: str, join: str, how: str
) -> None:
    args = filter_args(how, join.format(good=good, bad=bad))
    world.check("filters", *args, allowed=(2,))
    assert world.rc.json(*args, expect=2)["error"]["code"] == "bad-filter"


@pytest.mark.parametrize("expr", ["key", "1", "origin_time", "transform(tags, t -> t = 'a')", "", "   "])
def test_a_filter_that_is_not_a_condition_exits_2(world: World, expr: str) -> None:
    world.check("filters", *filter_args("set", expr), allowed=(2,))
    assert world.rc.json(*filter_args("set", expr), expect=2)["error"]["code"] == "bad-filter"


# Events and event files -------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
field_values = st.one_of(json_values, st.text(max_size=10), st.lists(st.text(max_size=5), max_size=3))
event_objects = st.dictionaries(
    st.sampled_from(["type", "key", "tags", "payload", "seq", "vt", "origin", "Key", ""]),
    field_values,
    max_size=4,
)
NASTY_EVENTS = [
    "",
    "{",
    '{"key": "e1"',
    '{"key": "e1"} {"key": "e2"}',
    "[" * 100_000 + "]" * 100_000,  # nesting deeper than the parser's recursion limit
    '{"payload": ' + "1" * 5000 + "}",  # an integer longer than Python converts by default
    '{"payload": NaN}',
    '{"payload": Infinity}',
    '{"key": "\\ud800"}',  # a lone surrogate: not text that UTF-8 (Parquet) can store
    '{"key": "\udcff"}',  # what a non-UTF-8 byte on the command line arrives as (surrogateescape)
    '{"tags": ["ok", "\udc80"]}',
    '{"key": "e1", "key": 7}',
    '{"tags": [null]}',
    '{"tags": "abc"}',
    "null",
    '"event"',
]
event_texts = st.one_of(
    event_objects.map(json.dumps),
    json_values.map(json.dumps),
    st.text(max_size=40),
    st.sampled_from(NASTY_EVENTS),
)


@EXAMPLES
@given(texts=st.lists(event_texts, min_size=1, max_size=3))
def test_an_event_given_with_event_is_parsed_before_anything_is_written(
    world: World, texts: list[str]
) -> None:
    assume(all("\x00" not in t for t in texts))
    args: list[str] = []
    for text in texts:
        args += ["--event", text]
    # H is a hub: input that parses is then refused by ROLE1 (exit 3), so every outcome is a rejection.
    world.check("--event", "log", "append", "H", *args, allowed=(2, 3))


def jsonl_bodies() -> st.SearchStrategy[bytes]:
    lines = st.lists(event_texts, min_size=0, max_size=5).map(
        lambda ls: "\n".join(ls).encode("utf-8", "replace")
    )
    valid = st.lists(event_objects.filter(lambda o: set(o) <= {"key", "type"}), min_size=1, max_size=5).map(
        lambda objs: "\n".join(json.dumps(o) for o in objs).encode()
    )
    truncated = st.tuples(valid, st.integers(min_value=1, max_value=200)).map(lambda t: t[0][: -t[1]])
    non_utf8 = st.tuples(valid, st.binary(min_size=1, max_size=8)).map(lambda t: t[0] + b"\xff\xfe" + t[1])
    return st.one_of(lines, valid, truncated, non_utf8, st.binary(max_size=200))


@EXAMPLES
@given(body=jsonl_bodies(), suffix=st.sampled_from([".jsonl", ".json", ".txt", ""]))
def test_an_event_file_is_parsed_whole_before_anything_is_written(
    world: World, body: bytes, suffix: str
) -> None:
    path = world.files / f"events{suffix}"
    path.write_bytes(body)
    world.check("event files", "log", "append", "H", "--file", str(path), allowed=(2, 3))


def test_a_huge_event_file_with_one_bad_line_at_its_end_is_refused_whole(world: World) -> None:
    path = world.files / "huge.jsonl"
    good = (json.dumps({"key": "k", "payload": "x" * 200}) + "\n").encode()
    path.write_bytes(good * 20_000 + b'{"key": 1}\n')  # about 4 MB
    out = world.check("event files", "log", "append", "H", "--file", str(path), allowed=(2,))
    assert "huge.jsonl:20001" in out.stderr


@pytest.mark.parametrize("given", ["missing.jsonl", "folder.jsonl", "missing.parquet"])
def test_an_event_file_that_is_not_a_file_exits_2(world: World, given: str) -> None:
    (world.files / "folder.jsonl").mkdir(exist_ok=True)
    world.check("event files", "log", "append", "A", "--file", str(world.files / given), allowed=(2,))


# Flag combinations ------------------------------------------------------------------------------------------

APPEND_FLAGS = [
    ("--event", '{"key": "k"}'),
    ("--file", "{files}/none.jsonl"),
    ("--generate", "3"),
    ("--generate", "0"),
    ("--seed", "x"),
    ("--dry-run",),
    ("--event",),
    ("--bogus",),
]
DELETE_FLAGS = [
    ("--upto", "1"),
    ("--older-than", "thirty days"),
    ("--older-than", "-1d"),
    ("--logical",),
    ("--dry-run",),
    ("--upto",),
]
COMMANDS = [
    ("log", "append", "A"),
    ("log", "append", "H"),
    ("delete", "A"),
]


@EXAMPLES
@given(
    command=st.sampled_from(COMMANDS),
    flags=st.lists(st.sampled_from(APPEND_FLAGS + DELETE_FLAGS), max_size=4),
)
def test_a_flag_combination_is_valid_or_exits_2_naming_what_is_wrong(
    world: World, command: tuple[str, ...], flags: list[tuple[str, ...]]
) -> None:
    args = [part.replace("{files}", str(world.files)) for flag in flags for part in flag]
    # Always a dry run: a valid combination is then answered before Spark (the data commands' own tests run
    # the real thing); an invalid one must be refused the same way with or without it.
    world.check("flag combinations", *command, *args, "--dry-run", allowed=(0, 2, 3))


FIXED_USAGE = [
    ("replicate", "A"),
    ("replicate", "A", "B", "C"),
    ("topology", "filter", "A", "B"),
    ("topology", "filter", "A", "B", "--set", "key = 'k'", "--clear"),
    ("topology", "add", "A", "H", "--history", "bogus"),
    ("location", "add", "Z", "--role", "bogus"),
    ("topology", "show", "--format", "bogus"),
    ("topology", "failover", "B", "--from", "A"),
    ("--spark-conf", "novalue", "status"),
    ("--output", "xml", "status"),  # json, yaml and text are the formats
    ("--db", "notaurl", "status"),
    ("--db", "mysql+nodriver://x/y", "status"),
    ("ops", "show", "no-such-operation"),
    ("bogus-command",),
]


@pytest.mark.parametrize("args", FIXED_USAGE, ids=[" ".join(a) for a in FIXED_USAGE])
def test_a_malformed_command_line_exits_2_with_one_reason(world: World, args: tuple[str, ...]) -> None:
    world.check("flag combinations", *args, allowed=(2,))
