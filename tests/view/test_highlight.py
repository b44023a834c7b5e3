"""What the checks look for, marked in the page's texts: from each kind of check, escaped, never from a placeholder."""

from __future__ import annotations

from farm.taskset.model import Task
from farm.view.highlight import MAX_MARKS, Highlighter, answer_values, needles


def _task(*checks: dict[str, object]) -> Task:
    return Task.model_validate({"id": "t", "goal": "g", "category": "read", "expect": "succeeded",
                                "checks": list(checks)})


def test_each_kind_of_check_gives_what_it_looks_for() -> None:
    task = _task({"type": "answer_contains", "text": "Paris"}, {"type": "answer_regex", "pattern": r"\d{3}-\d{4}"},
                 {"type": "screen_has", "text": "Saved", "packageName": "com.notes"},
                 {"type": "confirmation_shows", "action": "Send", "target": "Mum", "content": "hello"},
                 {"type": "state", "probe": "wifi", "op": "equals", "value": "off"})
    marks = Highlighter(needles(task, None))
    html = str(marks.marked("paris 555-1234 Saved; Send hello to Mum, wifi off"))
    assert html == ('<mark title="answer_contains">paris</mark> <mark title="answer_regex">555-1234</mark> '
                    '<mark title="screen_has">Saved</mark>; <mark title="confirmation_shows">Send</mark> '
                    '<mark title="confirmation_shows">hello</mark> to <mark title="confirmation_shows">Mum</mark>, '
                    'wifi <mark title="state">off</mark>')


def test_a_text_with_a_placeholder_is_not_looked_for_but_a_regex_repeat_is() -> None:
    task = _task({"type": "answer_contains", "text": "{probe:android_version}"},
                 {"type": "answer_regex", "pattern": "AF-{run}-n1"}, {"type": "answer_regex", "pattern": r"x{2}"})
    found = needles(task, None)
    assert [n.pattern.pattern for n in found] == [r"x{2}"]


def test_phone_text_is_escaped_around_and_inside_the_marks() -> None:
    marks = Highlighter(needles(_task({"type": "answer_contains", "text": "<b>"}), None))
    html = str(marks.marked('<script>alert(1)</script> "<b>" &'))
    assert html == '&lt;script&gt;alert(1)&lt;/script&gt; "<mark title="answer_contains">&lt;b&gt;</mark>" &amp;'


def test_overlapping_matches_keep_the_earliest_then_the_longest() -> None:
    task = _task({"type": "answer_contains", "text": "56,088"}, {"type": "answer_regex", "pattern": "088 total"})
    spans = Highlighter(needles(task, None)).spans("= 56,088 total")
    assert spans == [(2, 8, "answer_contains")]


def test_answer_grounded_looks_for_the_answers_values_and_without_a_task_so_does_the_page() -> None:
    assert answer_values('It costs 1,299.00 at "Blue Shop", order 7 of 「小米」') == ["1,299.00", "Blue Shop", "小米"]
    grounded = needles(_task({"type": "answer_grounded"}), "the product is 56,088")
    assert [n.check for n in grounded] == ["answer_grounded"]
    assert [n.pattern.pattern for n in needles(None, "the product is 56,088")] == ["56,088"]
    assert needles(_task({"type": "asked_user"}), "the product is 56,088") == []


def test_a_text_with_too_many_matches_is_shown_unmarked() -> None:
    marks = Highlighter(needles(_task({"type": "answer_contains", "text": "a"}), None))
    assert "<mark" in str(marks.marked("a" * MAX_MARKS))
    assert str(marks.marked("a" * (MAX_MARKS + 1))) == "a" * (MAX_MARKS + 1)
    assert marks.hits(None) == 0 and str(marks.marked(None)) == ""
