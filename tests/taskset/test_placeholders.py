"""Placeholder parsing and substitution, including property tests."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from farm.taskset import placeholders
from farm.taskset.model import AnswerRegex, ScreenHas, Task
from farm.taskset.placeholders import Placeholder, PlaceholderError, find, resolve_task, substitute

names = st.from_regex(r"\A[a-z][a-z0-9_]{0,12}\Z")
params = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,20}\Z")
plain = st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=20)
tokens = st.one_of(
    names.map(lambda n: ("app", n, None)),
    names.map(lambda n: ("probe", n, None)),
    st.tuples(names, params).map(lambda t: ("probe", t[0], t[1])),
    st.just(("run", "", None)),
)


def render(kind: str, name: str, param: str | None) -> str:
    if kind == "run":
        return "{run}"
    return f"{{{kind}:{name}:{param}}}" if param else f"{{{kind}:{name}}}"


@given(st.lists(st.tuples(plain, tokens), max_size=6), plain)
def test_find_returns_every_placeholder_in_order(parts: list[tuple[str, tuple[str, str, str | None]]],
                                                 tail: str) -> None:
    text = "".join(prefix + render(*tok) for prefix, tok in parts) + tail
    found = find(text)
    assert [(p.kind, p.name, p.param) for p in found] == [tok for _prefix, tok in parts]
    assert [text[p.start:p.end] for p in found] == [p.text for p in found]


@given(st.lists(st.tuples(plain, tokens), max_size=6), plain, st.text(max_size=10))
def test_substitute_replaces_every_placeholder(parts: list[tuple[str, tuple[str, str, str | None]]], tail: str,
                                               run: str) -> None:
    text = "".join(prefix + render(*tok) for prefix, tok in parts) + tail
    apps = {name: f"<app {name}>" for kind, name, _ in (t for _p, t in parts) if kind == "app"}
    probes = {(f"{n}:{p}" if p else n): f"<probe {n}>" for k, n, p in (t for _p, t in parts) if k == "probe"}
    out = substitute(text, apps=apps, probes=probes, run=run)
    expected = "".join(
        prefix + (run if tok[0] == "run" else apps[tok[1]] if tok[0] == "app" else f"<probe {tok[1]}>")
        for prefix, tok in parts
    ) + tail
    assert out == expected


@given(plain)
def test_text_without_braces_has_no_placeholders(text: str) -> None:
    assert find(text) == []
    assert substitute(text, apps={}, probes={}, run="r") == text


def test_regex_quantifiers_are_not_placeholders() -> None:
    assert find(r"\d{2,3}-{run}") == [Placeholder("run", "", None, 8, 13)]


@pytest.mark.parametrize("bad", ["{app:}", "{app:Notes}", "{probe:x:}", "{probe:a b}", "{app:notes"])
def test_malformed_placeholders_are_refused(bad: str) -> None:
    with pytest.raises(PlaceholderError, match="malformed placeholder"):
        find(f"看 {bad} 这里")


def test_missing_value_is_refused() -> None:
    with pytest.raises(PlaceholderError, match="probesBefore"):
        substitute("{probe:date}", apps={}, probes={}, run="r")
    with pytest.raises(PlaceholderError, match="capability 'notes'"):
        substitute("{app:notes}", apps={}, probes={}, run="r")


def test_probe_key_includes_parameter() -> None:
    (ph,) = find("{probe:package_version:com.tencent.mm}")
    assert (ph.key, ph.param) == ("package_version:com.tencent.mm", "com.tencent.mm")
    assert substitute(ph.text, apps={}, probes={ph.key: "8.0.49"}, run="r") == "8.0.49"


def _task() -> Task:
    return Task.model_validate({
        "id": "t", "goal": "记下 AF-{run}-n,型号 {probe:device_model}", "apps": ["{app:notes}"],
        "category": "write", "expect": "succeeded", "marker": "AF-{run}-n",
        "probesBefore": ["device_model"],
        "checks": [{"type": "screen_has", "marker": True, "packageName": "{app:notes}"},
                   {"type": "answer_regex", "pattern": "^{probe:device_model}$"}],
    })


def test_resolve_task_fills_goal_apps_marker_and_checks() -> None:
    task = resolve_task(_task(), apps={"notes": "dev.agentfarm.notes"}, probes={"device_model": "Pixel 7 (x)"},
                        run="r42")
    assert task.goal == "记下 AF-r42-n,型号 Pixel 7 (x)"
    assert task.apps == ["dev.agentfarm.notes"]
    assert task.marker == "AF-r42-n"
    screen, regex = task.checks
    assert isinstance(screen, ScreenHas) and screen.package_name == "dev.agentfarm.notes"
    assert isinstance(regex, AnswerRegex) and re.search(regex.pattern, "Pixel 7 (x)")


def test_resolve_task_leaves_the_original_unchanged() -> None:
    task = _task()
    resolve_task(task, apps={"notes": "p"}, probes={"device_model": "m"}, run="r")
    assert task.marker == "AF-{run}-n" and task.apps == ["{app:notes}"]


def test_substitute_all_validates_patterns_before_resolution() -> None:
    assert placeholders.substitute_all("a{probe:x}b{run}", "0") == "a0b0"
