"""Why a unit did not pass (`farm.report.why`): one text from the checks and reasons, shown by every output; the
"Not passed" list read by task; progress lines that say the verdict, count 1…N and never interleave."""

from __future__ import annotations

import csv
import io
import re
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

from farm.report.aggregate import aggregate
from farm.report.junit import render_junit
from farm.report.markdown import render_markdown
from farm.report.why import BODY_ITEMS, ITEM_CHARS, MESSAGE_CHARS, why
from farm.report.writers import render_csv, render_html
from farm.results.record import CheckResult
from tests.helpers.records import record, write_run

FAILED = CheckResult(type="answer_regex", passed=False, detail="/56,?088/ not in answer '56 000'")
PASSED = CheckResult(type="screen_has", passed=True, detail="found 56088")
UNJUDGED = CheckResult(type="llm_judge", passed=None, detail="judge API: 503")


def test_no_checks_is_the_reasons() -> None:
    w = why([], ["expected failed, got succeeded"])
    assert (w.checks, w.message, w.body, w.cell) == ((), "expected failed, got succeeded",
                                                     "expected failed, got succeeded", "")
    assert why(None, None).message == "" and why(None, None).body == ""


def test_passed_checks_are_not_why() -> None:
    w = why([PASSED], ["expected succeeded, got failed"])
    assert w.checks == () and w.message == "expected succeeded, got failed"


def test_every_failing_check_comes_first_and_an_unjudged_one_is_named_so() -> None:
    w = why([PASSED, FAILED, UNJUDGED], ["expected succeeded, got failed", "answer_regex: " + FAILED.detail,
                                         "llm_judge reached no verdict: judge API: 503"])
    assert w.checks == ("answer_regex: /56,?088/ not in answer '56 000'", "llm_judge (unjudged): judge API: 503")
    assert w.message == "answer_regex: /56,?088/ not in answer '56 000'"
    # A reason a check already says is not said twice.
    assert w.reasons == ("expected succeeded, got failed",)
    assert w.body.splitlines() == [*w.checks, "expected succeeded, got failed"]
    assert w.cell == "; ".join(w.checks)


def test_the_report_columns_and_dicts_read_the_same() -> None:
    as_json = '[{"type": "llm_judge", "passed": null, "detail": "judge API: 503"}]'
    assert why(as_json, []).checks == why([UNJUDGED], []).checks == why([UNJUDGED.model_dump()], []).checks
    assert why("not json", []).checks == ("checks (unjudged): not readable",)
    assert why("[1, {}]", []).checks == ("check (unjudged)", "check (unjudged)")


def test_markup_newlines_and_pipes_stay_text_on_one_line() -> None:
    hostile = CheckResult(type="screen_has", passed=False, detail="a | b\n<script>x</script>\r\n[l](http://e) `c`")
    w = why([hostile], ["line one\nline two"])
    assert "\n" not in w.message and "\r" not in w.checks[0]
    assert w.checks == ("screen_has: a | b <script>x</script> [l](http://e) `c`",)
    assert w.body.splitlines() == [w.checks[0], "line one line two"]


def test_a_very_long_detail_is_bounded() -> None:
    long = CheckResult(type="answer_contains", passed=False, detail="长" * 50_000)
    w = why([long] * (BODY_ITEMS + 5), ["x" * 50_000])
    assert len(w.message) == MESSAGE_CHARS and w.message.endswith("…")
    assert all(len(item) <= ITEM_CHARS for item in w.items)
    lines = w.body.splitlines()
    assert len(lines) == BODY_ITEMS + 1 and lines[-1] == "… 6 more"


def _run(tmp_path: Path) -> Path:
    hostile = CheckResult(type="screen_has", passed=False, detail='a | b\n<i>"x"</i> & ]]>')
    recs = [
        *(record("calc", run="r", device=s, passed=False, reasons=["expected succeeded, got failed"],
                 checks=[PASSED, FAILED]) for s in ("S1", "S2", "S3")),
        record("calc", run="r", device="S4", passed=False, reasons=["expected succeeded, got failed"],
               checks=[hostile]),
        record("calc", run="r", device="S5"),
        record("calc", run="r", device="S6", outcome="skipped", passed=False, reasons=["no calculator"]),
        record("judge", run="r", device="S1", outcome="error", passed=False, failure_category="unjudged",
               reasons=["llm_judge reached no verdict: judge API: 503"], checks=[UNJUDGED]),
        record("make-call", run="r", device="S2", outcome="succeeded", expect="failed", passed=False,
               reasons=["expected failed, got succeeded"], category="impossible"),
        record("fine", run="r", device="S1"),
    ]
    return write_run(tmp_path, "r", recs, [(s, "Pixel 8") for s in ("S1", "S2", "S3", "S4", "S5", "S6")])


def test_the_not_passed_list_is_read_by_task_with_the_failing_checks_counted(tmp_path: Path) -> None:
    agg = aggregate([_run(tmp_path)])
    d = agg.data
    groups = {g.task_id: g for g in d.failure_groups}
    # The most phones failed first; then by category and task.
    assert list(groups) == ["calc", "make-call", "judge"] and d.failure_groups_total == 3
    calc = groups["calc"]
    # Six phones: four failed, one passed, one skipped (not run).
    assert (calc.phones_failed, calc.phones_run, calc.units_failed) == (4, 5, 4)
    assert [(c.key, c.count) for c in calc.why] == [
        ("answer_regex: /56,?088/ not in answer '56 000'", 3), ('screen_has: a | b <i>"x"</i> & ]]>', 1)]
    assert sorted(d.failures[i].device for i in calc.rows) == sorted(d.failures[i].device for i in range(len(
        d.failures)) if d.failures[i].task_id == "calc")
    assert [(c.key, c.count) for c in groups["judge"].why] == [("llm_judge (unjudged): judge API: 503", 1)]
    assert [(c.key, c.count) for c in groups["make-call"].why] == [("expected failed, got succeeded", 1)]
    md = render_markdown(d)
    by_task = md.split("## Not passed (6)\n", 1)[1].split("\n## ", 1)[0]
    (row,) = [ln for ln in by_task.splitlines() if "| calc |" in ln]
    assert "| 4 of 5 |" in row and "answer\\_regex" not in row and "answer_regex: /56,?088/" in row
    assert "a \\| b &lt;i&gt;" in row  # escaped: the pipe stays inside its cell
    assert row.count("Pixel 8") == 4  # each failed phone (linked to its run record in a written report)
    # The unit rows are still there, after the breakdowns.
    heads = re.findall(r"^## (.+?)(?: \(\d+\))?$", md, re.MULTILINE)
    assert heads.index("Not passed") < heads.index("By category") < heads.index("Not passed, unit by unit")
    html = render_html(d)
    assert "<details><summary>Not passed, unit by unit (6)</summary>" in html
    for i in calc.rows:
        assert f'<a href="#unit-{i}">' in html and f'<tr id="unit-{i}">' in html
    assert "&lt;i&gt;&#34;x&#34;&lt;/i&gt;" in html and "<i>\"x\"" not in html


def test_junit_and_csv_say_the_failing_checks(tmp_path: Path) -> None:
    agg = aggregate([_run(tmp_path)])
    root = ET.fromstring(render_junit(agg))
    cases = {(c.get("name"), (c.get("classname") or "").split(".")[1]): c for c in root.iter("testcase")}
    by_task: dict[str, list[ET.Element]] = {}
    for (name, _), case in cases.items():
        by_task.setdefault(name or "", []).append(case)
    failures = [c.find("failure") for c in by_task["calc"] if c.find("failure") is not None]
    assert len(failures) == 4
    messages = sorted(f.get("message") or "" for f in failures if f is not None)
    assert messages == ["answer_regex: /56,?088/ not in answer '56 000'"] * 3 + ['screen_has: a | b <i>"x"</i> & ]]>']
    for f in failures:
        assert f is not None and (f.text or "").splitlines()[-1] == "expected succeeded, got failed"
    (error,) = [c.find("error") for c in by_task["judge"]]
    assert error is not None and error.get("message") == "llm_judge (unjudged): judge API: 503"
    (failure,) = [c.find("failure") for c in by_task["make-call"]]
    assert failure is not None and failure.get("message") == "expected failed, got succeeded"
    rows = list(csv.DictReader(io.StringIO(render_csv(agg).lstrip("\ufeff"))))
    cells = {(r["task_id"], r["failing_checks"]) for r in rows}
    assert ("calc", "answer_regex: /56,?088/ not in answer '56 000'") in cells
    assert ("calc", 'screen_has: a | b <i>"x"</i> & ]]>') in cells
    assert ("judge", "llm_judge (unjudged): judge API: 503") in cells
    assert ("fine", "") in cells and ("make-call", "") in cells


def test_the_progress_line_says_the_verdict_not_the_outcome() -> None:
    from farm.android.progress import record_line, verdict

    impossible = record("make-call", outcome="succeeded", expect="failed", passed=False,
                        reasons=["expected failed, got succeeded"])
    assert verdict(impossible) == "failed"
    assert record_line(1, 3, impossible, "Pixel 8") == (
        "[1/3] make-call r1 on Pixel 8: failed — expected failed, got succeeded")
    assert record_line(2, 3, record("ok"), "Pixel 8") == "[2/3] ok r1 on Pixel 8: passed"
    login = record("shop", outcome="takeover", takeover_kind="login", passed=True)
    assert verdict(login) == "failed"  # a login hand-over is never a pass, as the reports count it
    assert verdict(record("s", outcome="skipped", passed=False)) == "skipped"
    assert verdict(record("e", outcome="error", passed=False)) == "error"


class _SlowStream:
    """A stream that takes its text a character at a time, letting other threads in between."""

    def __init__(self) -> None:
        self.chars: list[str] = []

    def write(self, text: str) -> int:
        for ch in text:
            self.chars.append(ch)
            time.sleep(0)
        return len(text)

    def flush(self) -> None:
        pass


def test_two_phones_finishing_at_once_print_whole_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    from farm.sweep.sweep import _say

    stream = _SlowStream()
    monkeypatch.setattr(sys, "stderr", stream)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    req = SimpleNamespace(show_progress=True)
    start = threading.Barrier(2)

    def phone(name: str) -> None:
        start.wait()
        for i in range(200):
            _say(req, f"[{i}/200] task-{name} r1 on {name}: failed")  # type: ignore[arg-type]

    try:
        threads = [threading.Thread(target=phone, args=(n,)) for n in ("A", "B")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    lines = "".join(stream.chars).split("\n")
    assert lines[-1] == "" and len(lines) == 401
    assert all(re.fullmatch(r"\[\d+/200\] task-([AB]) r1 on \1: failed", ln) for ln in lines[:-1])


@pytest.mark.parametrize("reasons", [
    [], ["expected failed, got succeeded"], ["交给用户:login 没有登录"], [""], [" padded "], ["two  spaces"],
    ["tab\there"], ["line\nbreak"], ["nbsp\u00a0here"], ["ideographic\u3000space"], ["sep\x1fchar"],
    ["nel\x85char"], ["thin\u2009space"], ["x" * MESSAGE_CHARS], ["x" * (MESSAGE_CHARS + 1)], ["a", "b"],
    ["emoji 😀 ok"], ["<b>|`*_</b>"],
])
def test_the_sql_shortcut_says_what_python_says(reasons: list[str]) -> None:
    import duckdb

    from farm.report.why import _cells, register_sql, why_sql

    con = duckdb.connect()
    register_sql(con)
    for checks in ("[]", None):
        row = con.execute(f"SELECT {why_sql('c', 'r')} FROM (SELECT ?::JSON AS c, ?::VARCHAR[] AS r)",
                          [checks, reasons]).fetchone()
        assert row is not None and row[0] == _cells(checks, reasons), (checks, reasons)
