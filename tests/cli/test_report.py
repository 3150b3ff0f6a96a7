"""`replctl report --html PATH`: one self-contained page that shows what `status --json` says.

The page is read back with Python's html.parser (the SVG graph, the heat map and the tables carry `data-*`
attributes with the exact values), and once in a real browser: Debian's headless chromium loads it, its DOM after
the scripts ran is checked, and its screenshot is kept at test-output/report/report.png (beside the page,
test-output/report/report.html) for a person to look at.
"""

from __future__ import annotations

import os
import shutil
import stat
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

from cli.htmlpage import Element, parse_file, parse_html

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "test-output" / "report"
ALL = {"A", "B", "C", "D", "R"}


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """`replctl` bound to a new SQLite catalog and store, after `replctl init`."""
    tool = Replctl(tmp_path)
    tool("init")
    return tool


def build_topology(rc: Replctl) -> None:
    """A cycle A–B–C, a filtered bridge C→D, a removed D→C (history edge) and a retired R (removed A→R).

    Only topology commands: none of them starts Spark.
    """
    for name in sorted(ALL):
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "B", "C", "--both")
    rc("topology", "add", "C", "A", "--both")
    rc(
        "topology", "add", "C", "D", "--filter", "key = 'x'"
    )  # D hangs off the cycle: the filter is a bridge (F1)
    rc("topology", "add", "D", "C")
    rc("topology", "remove", "D", "C")
    rc("topology", "add", "A", "R")
    rc("topology", "remove", "A", "R")
    rc("location", "retire", "R", "--reason", "closed <script>alert('x')</script> & gone")


def nodes(page: Element) -> dict[str, Element]:
    """The SVG node of every location, by name."""
    svg = page.find("svg", "graph")
    assert len(svg) == 1
    return {g.attrs["data-location"]: g for g in svg[0].find("g", "node")}


def edges(page: Element) -> dict[tuple[str, str], Element]:
    """The SVG arrow of every connection, by (source, target)."""
    return {(g.attrs["data-source"], g.attrs["data-target"]): g for g in page.find("g", "edge")}


def connection_rows(page: Element) -> dict[tuple[str, str], Element]:
    """The rows of the lag table, by (source, target)."""
    table = page.find("table", "connections")[0]
    return {
        (tr.attrs["data-source"], tr.attrs["data-target"]): tr
        for tr in table.find("tr")
        if "data-source" in tr.attrs
    }


def assert_lags_match(page: Element, connections: list[dict[str, Any]]) -> None:
    """The lag table has one row per connection, with the lag `status` reports."""
    rows = connection_rows(page)
    assert set(rows) == {(c["source"], c["target"]) for c in connections}
    for c in connections:
        assert int(rows[c["source"], c["target"]].find("td", "lag")[0].attrs["data-lag"]) == c["lag"]


def assert_heatmap_matches(page: Element, matrix: dict[str, Any]) -> None:
    """Every heat-map cell carries (and shows) the max seen and the deleted prefix that `status` reports."""
    cells = {(td.attrs["data-row"], td.attrs["data-origin"]): td for td in page.find("td", "cell")}
    expected = {(row, origin) for row in matrix["rows"] for origin in matrix["origins"]}
    assert set(cells) == expected
    for (row, origin), td in cells.items():
        want = matrix["rows"][row][origin]
        assert (int(td.attrs["data-max"]), int(td.attrs["data-deleted"])) == (want["max"], want["deleted"])
        shown = td.find("span", "max")[0].text
        assert shown == str(want["max"])
        if want["deleted"]:
            assert f"deleted ≤ {want['deleted']}" in td.text
        column_max = max(r[origin]["max"] for r in matrix["rows"].values())
        assert int(td.attrs["data-behind"]) == column_max - want["max"]


def assert_self_contained(text: str, page: Element) -> None:
    """Nothing is fetched: no URL anywhere, no external script, style sheet or image."""
    assert "http://" not in text and "https://" not in text
    stack = [page]
    while stack:
        element = stack.pop()
        stack.extend(element.children)
        for name in ("src", "href", "xlink:href"):
            assert name not in element.attrs, (element.tag, element.attrs)
        assert element.tag not in ("link", "iframe", "img", "object", "embed")


def test_the_report_draws_the_topology_and_matches_status_without_spark(rc: Replctl, tmp_path: Path) -> None:
    build_topology(rc)
    path = tmp_path / "out" / "report.html"
    path.parent.mkdir()
    doc = rc.json("report", "--html", str(path))
    assert doc == {
        "ok": True,
        "path": str(path.resolve()),
        "locations": 5,
        "retired": 1,
        "connections": 7,
        "history_edges": 2,
        "pending_deletions": 0,
        "operations": doc["operations"],
        "bytes": path.stat().st_size,
    }
    assert doc["operations"] == 14  # 5 location add, 6 topology add (one per command), 2 remove, 1 retire
    status = rc.json("status")
    text = path.read_text(encoding="utf-8")
    page = parse_html(text)

    drawn = nodes(page)
    assert set(drawn) == {loc["name"] for loc in status["locations"]} == ALL
    assert {name for name, g in drawn.items() if "retired" in g.classes} == {"R"}
    assert "svg .node.retired rect { fill: #e5e7eb" in text  # greyed by the page's own style sheet
    for name, g in drawn.items():
        assert g.find("rect") and g.find("text", "name")[0].text == name

    arrows = edges(page)
    assert set(arrows) == {(c["source"], c["target"]) for c in status["connections"]}
    for key, g in arrows.items():
        line = g.find("line", "edge-line")[0]
        assert line.attrs["marker-end"].startswith("url(#arrow-")  # every connection has an arrowhead
        removed = key in {("D", "C"), ("A", "R")}
        assert ("removed" in g.classes) is removed
        assert ("stroke-dasharray" in line.attrs) is removed, key  # history edges, and only they, are dashed
    assert {f"arrow-{s}" for s in ("active", "pending", "blocked", "removed")} <= {
        m.attrs["id"] for m in page.find("marker")
    }

    filtered = {key for key, g in arrows.items() if "filtered" in g.classes}
    assert filtered == {("C", "D")}
    assert arrows["C", "D"].find("line", "filter-band")
    labels = [
        (t.attrs["data-source"], t.attrs["data-target"], t.text) for t in page.find("text", "filter-label")
    ]
    assert labels == [("C", "D", "filter: key = 'x'")]

    assert status["matrix"] == {"origins": [], "rows": {"A": {}, "B": {}, "C": {}, "D": {}}}
    assert_heatmap_matches(page, status["matrix"])
    assert "No events yet" in page.find("section")[1].text

    assert_lags_match(page, status["connections"])

    ops = page.find("table", "operations")[0].find("tr")[1:]
    assert len(ops) == 14
    assert [td.text for td in ops[0].find("td")][1:3] == ["location retire", "succeeded"]
    # Operator text is shown as text, never as markup.
    assert "closed <script>alert('x')</script> & gone" in ops[0].text
    assert "<script>alert" not in text
    # As Jinja2's autoescape (markupsafe) writes it: `'` as &#39;.
    assert "closed &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; gone" in text
    warnings = page.find("ul", "warnings")[0].text
    assert "ROLE2" in warnings  # D's writes cannot leave D: C→D is its only connection

    assert_self_contained(text, page)
    body = page.find("body")[0]
    assert body.attrs["data-report"] == "loading"  # only the last script says "ok"
    scripts = body.find("script")
    assert "window.onerror" in scripts[0].text and '"ok"' in scripts[-1].text
    assert all("src" not in s.attrs for s in scripts)


def test_a_missing_folder_or_a_folder_as_the_file_is_refused_with_exit_2(rc: Replctl, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "report.html"
    out = rc("report", "--html", str(missing), expect=2)
    reason, hint = out.stderr.splitlines()
    assert reason == f"error: cannot write the report to {missing}: folder {missing.parent} does not exist"
    assert hint == f"hint: create it first: mkdir -p {missing.parent}"
    assert not missing.parent.exists()
    doc = rc("report", "--html", str(tmp_path), "--json", expect=2).doc
    assert doc["ok"] is False and doc["error"]["code"] == "bad-path"
    assert "it is a folder" in doc["error"]["message"]


def test_a_new_report_replaces_the_old_one_whole_and_leaves_no_temporary_file(
    rc: Replctl, tmp_path: Path
) -> None:
    path = tmp_path / "report.html"
    path.write_text("old report")
    rc("location", "add", "A")
    out = rc("report", "--html", str(path))
    assert out.stdout.strip() == f"report written: {path.resolve()} (1 location, 0 connections, 1 operation)"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".report.html")] == []
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the operator's own (issue 19)
    assert set(nodes(parse_file(path))) == {"A"}


# ------------------------------------------------------------------------------------ with events (Spark) and chromium


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replctl]:
    """The topology above with events: C lags behind on A's events, A deleted a prefix, B's deletion waits for C,
    and A→E waits for its start rule. Built once for the module (the Spark passes are the slow part)."""
    rc = Replctl(tmp_path_factory.mktemp("report-story"))
    rc("init")
    build_topology(rc)
    rc.append("A", "a1", "a2", "a3")
    rc.append("B", "b1", "b2")
    rc("replicate")
    rc.append("A", "a4", "a5")
    rc("replicate", "A", "B")  # B has a4, a5; C does not yet
    rc("delete", "A", "--upto", "2")  # every target of A has a1, a2: deleted now
    rc("delete", "B", "--upto", str(rc.location("B")["seq"]), expect=5)  # C still lacks a4, a5: waits (DEL4)
    rc("location", "add", "E")
    rc("topology", "add", "A", "E")  # DVV-A = {A: 2} is not ≤ CVV-E = {}: pending (ADD1)
    yield rc


@pytest.mark.spark
def test_the_heat_map_lag_and_pending_work_show_the_numbers_of_status(story: Replctl, tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    doc = story.json("report", "--html", str(path))
    assert (doc["locations"], doc["pending_deletions"]) == (6, 1)
    status = story.json("status")
    page = parse_file(path)

    matrix = status["matrix"]
    assert matrix["origins"] == ["A", "B"] and set(matrix["rows"]) == {"A", "B", "C", "D", "E"}
    assert matrix["rows"]["C"]["A"]["max"] < matrix["rows"]["B"]["A"]["max"]  # the story's lag, as built
    assert matrix["rows"]["A"]["A"]["deleted"] > 0
    assert_heatmap_matches(page, matrix)
    cells = {(td.attrs["data-row"], td.attrs["data-origin"]): td for td in page.find("td", "cell")}
    assert "hsl(142" in cells["B", "A"].attrs["style"]  # up to date: green
    assert "hsl(142" not in cells["C", "A"].attrs["style"]  # behind: amber to red

    assert_lags_match(page, status["connections"])
    assert {(c["source"], c["target"]): c["lag"] for c in status["connections"]}["B", "C"] > 0

    assert [(p["location"], [b["target"] for b in p["blocked_by"]]) for p in status["pending_deletions"]] == [
        ("B", ["C"])
    ]
    held = page.find("table", "pending-deletions")[0].find("tr")[1]
    assert held.attrs["data-location"] == "B" and held.find("td", "held-by")[0].text == "C"
    waiting = page.find("table", "pending-connections")[0].find("tr")[1]
    reason = next(c["reason"] for c in status["connections"] if c["target"] == "E")
    assert (waiting.attrs["data-source"], waiting.attrs["data-target"]) == ("A", "E")
    assert reason and reason in waiting.text
    assert {"A", "E"} <= {k[0] for k in edges(page)} | {k[1] for k in edges(page)}
    assert "pending" in edges(page)["A", "E"].classes

    journal = page.find("table", "operations")[0].find("tr")[1:]
    outcomes = [(tr.find("td")[1].text, tr.find("td")[2].text) for tr in journal]
    assert len(outcomes) == 20
    assert ("delete", "incomplete") in outcomes and outcomes[0] == ("topology add", "succeeded")
    assert_self_contained(path.read_text(encoding="utf-8"), page)


def chromium() -> str:
    """The chromium binary. `.ci/run` installs it; without one the test is skipped on a workstation and fails
    under CI (`CI` set), so a green CI run always means the page was loaded in a browser."""
    found = shutil.which("chromium")
    if found is None:
        reason = "chromium is not installed (Debian: apt-get install chromium; .ci/run installs it as root)"
        if os.environ.get("CI"):
            pytest.fail(f"under CI: {reason}", pytrace=False)
        pytest.skip(reason)
    return found


def headless(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """One headless chromium run that reaches nothing on the network. The timeout only ends a browser that
    hangs (the test then fails); how long a run takes on a busy machine is not what is tested."""
    return subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            "--window-size=1400,1800",
            *args,
        ],
        capture_output=True,
        timeout=300,
        check=False,
    )


@pytest.mark.spark
def test_chromium_loads_the_page_without_script_errors_and_its_screenshot_is_kept(
    story: Replctl, tmp_path: Path
) -> None:
    """Screenshot: test-output/report/report.png (page: test-output/report/report.html), kept after the run."""
    browser = chromium()
    OUTPUT.mkdir(parents=True, exist_ok=True)
    page, shot = OUTPUT / "report.html", OUTPUT / "report.png"
    shot.unlink(missing_ok=True)
    story("report", "--html", str(page))
    url = page.as_uri()

    dumped = headless(browser, tmp_path / "profile", "--dump-dom", url)
    assert dumped.returncode == 0, dumped.stderr.decode(errors="replace")[-2000:]
    dom = parse_html(dumped.stdout.decode("utf-8"))
    assert (
        dom.find("body")[0].attrs["data-report"] == "ok"
    )  # the last script ran, and no error fired before it
    assert set(nodes(dom)) == {"A", "B", "C", "D", "E", "R"}

    done = headless(browser, tmp_path / "profile", f"--screenshot={shot}", url)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (1400, 1800)
    assert len(data) > 40_000  # a blank or error page compresses to a few KB


def test_the_report_lists_the_locations_a_total_loss_would_hurt() -> None:
    # BK3 in the page: the same answer as `status`, with what would be lost and the command that fixes it.
    from replctl.report.page import pending_html

    doc = {
        "locations": [
            {"name": "A", "recoverable": {"state": "yes", "backup": None, "shortfall": {}}},
            {"name": "B", "recoverable": {"state": "no", "backup": None, "shortfall": {"A": [1, 2]}}},
        ]
    }
    (table,) = parse_html(pending_html(doc)).find("table", "unrecoverable")
    rows = [[cell.text for cell in row.find("td")] for row in table.find("tr")[1:]]
    assert rows == [["B", "no", "A: 1..2", "replctl backup create B"]]
