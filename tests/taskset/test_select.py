"""Task selection: repeated --set, -k, --exclude, the failed-task list, and what must not be selected."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from farm.errors import FarmError
from farm.taskset.keyword import KeywordError
from farm.taskset.loader import LoadedTask, load_taskset
from farm.taskset.rules import select_valid_tasks
from farm.taskset.select import TaskSelection, irreversible, select
from tests.helpers.taskset import TaskSetBuilder, minimal_task


def ids(tasks: list[LoadedTask]) -> list[str]:
    return [t.task.id for t in tasks]


def test_repeated_sets_are_a_union_not_the_last_one(taskset: TaskSetBuilder) -> None:
    got = select(load_taskset(taskset.root), "all", TaskSelection(sets=["read/system", "write"])).tasks
    assert sorted(ids(got)) == sorted(taskset.ids("read/system") + taskset.ids("write"))


def test_a_set_that_matches_nothing_is_refused_even_beside_good_ones(taskset: TaskSetBuilder) -> None:
    with pytest.raises(FarmError, match=r"^--set nothing/here: no task matches it"):
        select(load_taskset(taskset.root), "all", TaskSelection(sets=["write", "nothing/here"]))
    with pytest.raises(FarmError, match="--set '/': empty"):
        select(load_taskset(taskset.root), "all", TaskSelection(sets=["/"]))


def test_skills_and_memory_only_when_a_set_names_them(taskset: TaskSetBuilder) -> None:
    tasks = load_taskset(taskset.root)
    plain = {t.directory.split("/")[0] for t in select(tasks, "all", None).tasks}
    assert "skills" not in plain and "memory" not in plain and "write" in plain
    # -k alone does not reach into a special set, however well it matches.
    assert select(tasks, "all", TaskSelection(keyword="skills")).tasks == []
    named = select(tasks, "all", TaskSelection(sets=["skills", "write"])).tasks
    assert sorted(ids(named)) == sorted(taskset.ids("skills") + taskset.ids("write"))


def test_keyword_narrows_the_pool_and_the_sets(taskset: TaskSetBuilder) -> None:
    tasks = load_taskset(taskset.root)
    sel = TaskSelection(sets=["read"], keyword="(system or shopping) and not sys-5")
    got = ids(select(tasks, "tune", sel).tasks)
    expected = [i for i in taskset.ids("read/shopping", "tune") + taskset.ids("read/system", "tune") if i != "sys-5"]
    assert sorted(got) == sorted(expected) and got


def test_exclude_takes_ids_and_globs_and_reports_the_ones_that_matched_nothing(taskset: TaskSetBuilder) -> None:
    tasks = load_taskset(taskset.root)
    chosen = select(tasks, "all", TaskSelection(sets=["read/system", "write", "irreversible"],
                                                exclude=["sys-0", "write/*", "irrev-?", "nope-*"]))
    got = ids(chosen.tasks)
    assert "sys-0" not in got and not [i for i in got if i.startswith(("write-", "irrev-"))]
    assert sorted(got) == sorted(i for i in taskset.ids("read/system") if i != "sys-0")
    assert chosen.unmatched_excludes == ["nope-*"]


def test_an_exclude_is_a_whole_match_not_a_substring(taskset: TaskSetBuilder) -> None:
    chosen = select(load_taskset(taskset.root), "all", TaskSelection(sets=["read/system"], exclude=["sys"]))
    assert sorted(ids(chosen.tasks)) == sorted(taskset.ids("read/system")) and chosen.unmatched_excludes == ["sys"]


def test_only_ids_take_exactly_those_tasks_even_from_a_special_set(taskset: TaskSetBuilder) -> None:
    tasks = load_taskset(taskset.root)
    sel = TaskSelection(only_ids=["skills-0", "sys-1", "gone-task"], only_from="r1")
    chosen = select(tasks, "all", sel)
    assert sorted(ids(chosen.tasks)) == ["skills-0", "sys-1"] and chosen.missing_ids == ["gone-task"]
    assert ids(select(tasks, "all", TaskSelection(only_ids=[])).tasks) == []
    # The pool still applies: sys-1 is a holdout task of the builder's read/system.
    assert ids(select(tasks, "tune", TaskSelection(only_ids=["sys-1"])).tasks) == []


def test_a_directory_named_like_an_operator_is_reached_by_quoting(taskset: TaskSetBuilder) -> None:
    taskset.add("not", minimal_task("read/content", 99) | {"id": "zz-99"})
    tasks = load_taskset(taskset.root)
    assert ids(select(tasks, "all", TaskSelection(keyword='"not"')).tasks) == ["zz-99"]
    with pytest.raises(KeywordError, match="expected a word at the end"):
        select(tasks, "all", TaskSelection.model_construct(keyword="not"))


def test_a_selection_with_a_bad_keyword_cannot_be_built_or_restored() -> None:
    with pytest.raises(ValidationError, match="unmatched"):
        TaskSelection(keyword="a)")
    with pytest.raises(ValidationError):
        TaskSelection.model_validate_json('{"keyword": "(", "sets": []}')
    with pytest.raises(ValidationError):
        TaskSelection.model_validate({"sets": ["a"], "colour": "red"})


def test_only_one_set_and_nothing_else_is_an_eval_set() -> None:
    assert TaskSelection(sets=["read/system"]).single_set() == "read/system"
    assert TaskSelection(sets=["read", "write"]).single_set() is None
    assert TaskSelection(sets=["read"], exclude=["x"]).single_set() is None
    assert TaskSelection(sets=["read"], only_ids=[]).single_set() is None
    described = TaskSelection(sets=["a", "b"], keyword="x or y", exclude=["c*"], only_from="r1").describe()
    assert described == "--set a --set b -k 'x or y' --exclude c* --only-failed-from r1"


def test_select_valid_tasks_applies_a_selection_instead_of_the_prefix(taskset: TaskSetBuilder) -> None:
    got = select_valid_tasks(taskset.root, "all", "write", whole_set=False,
                             selection=TaskSelection(sets=["read/system", "impossible"]))
    assert sorted(ids(got)) == sorted(taskset.ids("read/system") + taskset.ids("impossible"))
    assert ids(select_valid_tasks(taskset.root, "all", "write", whole_set=False)) == taskset.ids("write")


def test_irreversible_names_only_the_tasks_that_really_act(taskset: TaskSetBuilder) -> None:
    tasks = load_taskset(taskset.root)
    assert ids(irreversible(tasks)) == taskset.ids("irreversible") and irreversible(tasks)
    assert irreversible([t for t in tasks if t.directory == "write"]) == []
