"""Secrets never appear in anything replctl prints or writes (issue 14 item 6).

A scripted run on a real PostgreSQL catalog whose URL carries a password, with a credential Spark setting on
every command, and a Spark Connect URL with a token on one that fails: every stdout and stderr, the JSON
documents, the journal (`ops show` of every operation), the HTML report and a plan file are searched for the
planted secrets. The error paths are part of the script, since an error quotes the URLs it could not use.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clitool import Replctl
from pg import free_port
from sqlalchemy.engine import make_url

DB_PASSWORD = "pgPw-7Hq2xZ"
S3_SECRET = "s3Secret-Lk93Vd"
CONNECT_TOKEN = "tok-Qm8Rz41"
PLANTED = (DB_PASSWORD, S3_SECRET, CONNECT_TOKEN)

pytestmark = [pytest.mark.postgres, pytest.mark.spark]


def test_no_output_journal_report_or_plan_of_a_scripted_run_shows_a_planted_secret(
    tmp_path: Path, postgres_url: str
) -> None:
    # The test server trusts local connections, so the planted password is carried but never checked.
    db = make_url(postgres_url).set(password=DB_PASSWORD).render_as_string(hide_password=False)
    rc = Replctl(tmp_path, db_url=db)
    conf = ["--spark-conf", f"spark.hadoop.fs.s3a.secret.key={S3_SECRET}"]
    seen: list[str] = []

    def run(*args: str, expect: int = 0) -> None:
        out = rc(*conf, *args, expect=expect)
        seen.extend([out.stdout, out.stderr])

    report, plan = tmp_path / "report.html", tmp_path / "plan.json"
    closed = free_port()
    script: list[tuple[list[str], int]] = [
        (["init"], 0),
        (["db", "current"], 0),
        (["db", "upgrade", "--json"], 0),
        (["config", "show"], 0),
        (["config", "show", "--json"], 0),
        (["--spark-remote", f"sc://127.0.0.1:{closed}/;token={CONNECT_TOKEN}", "config", "show"], 0),
        (["location", "add", "A"], 0),
        (["location", "add", "B"], 0),
        (["topology", "add", "A", "B", "--filter", "key <> 'x'"], 0),
        (["log", "append", "A", "--event", '{"key": "a1"}', "--event", '{"key": "a2"}'], 0),
        (["replicate"], 0),
        (["replicate", "--json"], 0),
        (["status"], 0),
        (["status", "--json"], 0),
        (["log", "show", "B", "--json"], 0),
        (["--plan-out", str(plan), "delete", "A", "--upto", "1"], 0),
        (["report", "--html", str(report)], 0),
        (
            [
                "--spark-remote",
                f"sc://127.0.0.1:{closed}/;token={CONNECT_TOKEN}",
                "log",
                "append",
                "A",
                "--generate",
                "2",
            ],
            6,
        ),
        (
            [
                "--json",
                "--spark-remote",
                f"sc://127.0.0.1:{closed}/;token={CONNECT_TOKEN}",
                "log",
                "append",
                "A",
                "--generate",
                "1",
            ],
            6,
        ),
        (["--db", f"postgresql://ops:{DB_PASSWORD}@127.0.0.1:{closed}/x", "status"], 6),
        (["--db", f"postgresql://ops:{DB_PASSWORD}@127.0.0.1:{closed}/x", "init", "--json"], 6),
        (["--db", f"mysql://ops:{DB_PASSWORD}@127.0.0.1/x", "status"], 2),
        (["ops", "list"], 0),
        (["ops", "list", "--json"], 0),
    ]
    for args, code in script:
        run(*args, expect=code)
    for op in rc.json("ops", "list")["operations"]:
        run("ops", "show", str(op["id"]))
        run("ops", "show", str(op["id"]), "--json")
    seen += [report.read_text(encoding="utf-8"), plan.read_text(encoding="utf-8")]

    assert "***" in "".join(seen)  # the secrets were there to mask
    for text in seen:
        for secret in PLANTED:
            assert secret not in text, f"{secret!r} shown in:\n{text}"
