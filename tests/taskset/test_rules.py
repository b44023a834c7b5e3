"""Every task-set rule: a set violating exactly that rule gives exactly that line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from farm.errors import FarmError
from farm.taskset.rules import (
    BUILTIN_PACKAGES,
    InvalidTaskSet,
    card_kind,
    check_tasks,
    holdout_bounds,
    require_valid,
    select_valid_tasks,
)
from tests.helpers.taskset import MESSENGER, THIRD_PARTY, TaskSetBuilder, minimal_task, tasks_cli


def violation_lines(root: Path) -> tuple[int, list[str]]:
    """Exit code of `farm tasks check root` and the violation lines it printed (before the table)."""
    result = CliRunner().invoke(tasks_cli(), ["tasks", "check", str(root)])
    lines = []
    for line in result.output.splitlines():
        # The table after them: titled at a terminal, a tab-separated header line when piped (the runner).
        if line.strip() == "task set" or line.startswith("directory\t"):
            break
        lines.append(line)
    return result.exit_code, lines


def assert_only(b: TaskSetBuilder, code: str, line: str) -> None:
    report = check_tasks(b.root)
    assert [(v.code, v.line()) for v in report.violations] == [(code, line)]
    exit_code, lines = violation_lines(b.root)
    assert (exit_code, lines) == (2, [line])


def test_minimal_set_is_clean(taskset: TaskSetBuilder) -> None:
    assert check_tasks(taskset.root).violations == []
    exit_code, lines = violation_lines(taskset.root)
    assert (exit_code, lines) == (0, [])


def test_malformed_json_reports_line_and_column(taskset: TaskSetBuilder) -> None:
    path = taskset.root / "read/system/broken.json"
    path.write_text('{\n  "id": "broken",\n  "goal": "x",,\n}\n', encoding="utf-8")
    assert_only(taskset, "parse", f"{path}:3:15: json: malformed JSON: Expecting property name enclosed in "
                f"double quotes — fix the JSON syntax")


def test_wrong_type_reports_field_path(taskset: TaskSetBuilder) -> None:
    path = taskset.add("read/content", minimal_task("read/content", 99) | {
        "checks": [{"type": "answer_grounded", "minItems": "two"}]})
    # A count is a JSON number, never text that looks like one (nor true, nor 2.0).
    assert_only(taskset, "parse",
                f"{path}: checks[0].minItems: Input should be a valid integer, got str — fix the value")


def test_unknown_field_is_rejected(taskset: TaskSetBuilder) -> None:
    path = taskset.add("read/content", minimal_task("read/content", 99) | {"maxStep": 3})
    assert_only(taskset, "parse", f"{path}: maxStep: unknown field — remove it or fix its spelling "
                "(fields are camelCase, see seed 003)")


def test_unknown_check_type_is_rejected(taskset: TaskSetBuilder) -> None:
    path = taskset.add("read/content", minimal_task("read/content", 99) | {"checks": [{"type": "answer_is"}]})
    report = check_tasks(taskset.root)
    assert [(v.path, v.field, v.code) for v in report.violations] == [(str(path), "checks[0]", "parse")]
    assert "answer_contains, answer_regex" in report.violations[0].fix


def test_regex_that_does_not_compile_is_rejected(taskset: TaskSetBuilder) -> None:
    path = taskset.add("read/content", minimal_task("read/content", 99) | {
        "checks": [{"type": "answer_regex", "pattern": "56(088"}]})
    assert_only(taskset, "parse", f"{path}: checks[0].pattern: pattern does not compile: missing ), unterminated "
                "subpattern at position 2 — fix the value")


def test_marker_without_run_is_rejected(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", marker="AF-note", goal="新建笔记 AF-note")
    assert_only(taskset, "parse", f"{path}: marker: marker must contain {{run}} so each run's data is distinct "
                "— fix the value")


def test_malformed_placeholder_is_rejected(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-5", apps=["{app:Calculator}"])
    assert_only(taskset, "parse", f"{path}: apps: malformed placeholder '{{app:Calculator}}': use "
                "{app:<capability>} or {probe:<name>[:<param>]} — fix the value")


def test_id_must_equal_file_name(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-5", id="content-55")
    assert_only(taskset, "id-file", f"{path}: id: id 'content-55' differs from the file name 'content-5' — "
                "rename the file to content-55.json or set id to 'content-5'")


def test_ids_are_unique(taskset: TaskSetBuilder) -> None:
    first = taskset.path("content-5")
    second = taskset.add("read/content/more", minimal_task("read/content", 5, "tune"))
    assert_only(taskset, "id-unique", f"{second}: id: id 'content-5' is also used by {first} — "
                "give every task its own id")


def test_task_outside_known_directories(taskset: TaskSetBuilder) -> None:
    path = taskset.add("misc", minimal_task("misc", 1))
    assert_only(taskset, "directory", f"{path}: directory: 'misc' is not a task-set directory — move it under one "
                "of read/system, read/content, read/shopping, write, irreversible, impossible, barrier, web, "
                "skills, memory")


def test_directory_minimum(taskset: TaskSetBuilder) -> None:
    taskset.remove(taskset.ids("barrier", "tune")[0])
    assert_only(taskset, "minimum", f"{taskset.root / 'barrier'}: tasks: barrier has 1 tasks, minimum 2 — "
                "add 1 more task(s)")


def test_every_task_has_a_partition(taskset: TaskSetBuilder) -> None:
    path = taskset.edit(taskset.ids("read/content", "tune")[0], partition=None)
    assert_only(taskset, "partition", f"{path}: partition: task has no partition — add \"partition\": \"tune\" "
                "or \"holdout\" (keep about 30 % of the directory in holdout)")


def test_every_directory_has_holdout(taskset: TaskSetBuilder) -> None:
    for tid in taskset.ids("read/system", "holdout"):
        taskset.edit(tid, partition="tune")
    assert_only(taskset, "holdout-share", f"{taskset.root / 'read/system'}: partition: read/system has 0 of 10 "
                "tasks in holdout (allowed 2–4) — move tasks between tune and holdout to keep about 30 % in holdout")


def test_holdout_share_above_tolerance(taskset: TaskSetBuilder) -> None:
    for tid in taskset.ids("read/content", "tune")[:4]:
        taskset.edit(tid, partition="holdout")
    assert_only(taskset, "holdout-share", f"{taskset.root / 'read/content'}: partition: read/content has 8 of 15 "
                "tasks in holdout (allowed 3–6) — move tasks between tune and holdout to keep about 30 % in holdout")


def test_holdout_bounds_are_about_thirty_percent() -> None:
    assert [holdout_bounds(n) for n in (1, 2, 5, 8, 10, 15, 30)] == [
        (1, 1), (1, 1), (1, 2), (1, 4), (2, 4), (3, 6), (6, 12)]


def test_pair_shares_one_pool(taskset: TaskSetBuilder) -> None:
    taskset.edit("skills-1", partition="holdout")
    assert_only(taskset, "pool-group", f"{taskset.path('skills-0')}: partition: pair 'p1' spans pools (holdout: "
                "skills-1; tune: skills-0) — put every task of pair 'p1' in one pool")


def test_memory_session_shares_one_pool(taskset: TaskSetBuilder) -> None:
    taskset.edit("memory-1", partition="holdout")
    assert_only(taskset, "pool-group", f"{taskset.path('memory-0')}: partition: memory session 's1' spans pools "
                "(holdout: memory-1; tune: memory-0) — put every task of memory session 's1' in one pool")


def test_pair_has_train_and_test(taskset: TaskSetBuilder) -> None:
    taskset.edit("skills-1", split="train")
    assert_only(taskset, "pair-split", f"{taskset.path('skills-0')}: split: pair 'p1' needs a train and a test "
                "task (has train, train) — set \"split\": \"train\" on the learning task and \"test\" on the other")


def test_category_matches_directory(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("sys-5", category="impossible")
    assert_only(taskset, "category-directory", f"{path}: category: category 'impossible' in read/system/ — "
                "set \"category\": \"read\" or move the task")


def test_expect_matches_directory(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("imposs-3", expect="succeeded")
    assert_only(taskset, "expect-directory", f"{path}: expect: expect 'succeeded' in impossible/ — "
                "set \"expect\": \"failed\" or move the task")


def test_write_task_needs_marker(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", marker=None, checks=[{"type": "screen_has", "text": "买牛奶",
                                                         "packageName": "{app:notes}"}])
    assert_only(taskset, "write-marker", f"{path}: marker: write task has no marker — add \"marker\": "
                "\"AF-{run}-<what>\", name it in the goal and find it with screen_has (a setting change instead: a "
                "state check comparing before with after, and goalState)")


def test_a_setting_task_without_a_marker_needs_a_before_after_state_check_and_a_goal_state(
    taskset: TaskSetBuilder
) -> None:
    state = {"type": "state", "probe": "setting_global:wifi_on", "op": "changed", "before": "0", "value": "1"}
    goal = [{"probe": "setting_global:wifi_on", "op": "equals", "value": "1"}]
    taskset.edit("write-5", goal="帮我把 Wi-Fi 打开", marker=None, checks=[state], goalState=goal)
    assert check_tasks(taskset.root).violations == []
    path = taskset.edit("write-5", goalState=[])
    assert_only(taskset, "write-marker", f"{path}: marker: write task has no marker — add \"marker\": "
                "\"AF-{run}-<what>\", name it in the goal and find it with screen_has (a setting change instead: a "
                "state check comparing before with after, and goalState)")


def test_a_state_checks_probe_must_be_in_the_catalogue_and_its_file_under_shared_storage(
    taskset: TaskSetBuilder
) -> None:
    path = taskset.edit("write-5", checks=[{"type": "state", "probe": "files:/sdcard/Download", "op": "row",
                                            "where": {"name": "{marker}"}}])
    found = [(v.code, v.line()) for v in check_tasks(taskset.root).violations]
    # Named relative to shared storage (the probe adds /sdcard), never by a path of the phone.
    assert any(code == "probe" and "checks[0].probe" in line for code, line in found), found
    taskset.edit("write-5", checks=[{"type": "state", "probe": "no_such_probe", "op": "equals", "marker": True}])
    assert_only(taskset, "probe", f"{path}: checks[0].probe: unknown probe 'no_such_probe' — use one of "
                + ", ".join(sorted(p.stem for p in (Path(__file__).parents[2] / "probes").glob("*.yaml")))
                + " or add probes/no_such_probe.yaml")


def test_write_goal_names_the_marker(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", goal="在备忘录里新建一条笔记")
    assert_only(taskset, "marker-in-goal", f"{path}: goal: goal does not name the marker 'AF-{{run}}-w5' — "
                "write the marker into the goal so the created data carries it")


def test_write_checks_find_the_marker(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", checks=[{"type": "answer_grounded"}])
    assert_only(taskset, "marker-checked", f"{path}: checks: no screen_has/probe_has/state check finds the marker — "
                "add {\"type\": \"screen_has\", \"marker\": true, \"packageName\": \"{app:<capability>}\"}")


def test_probe_has_can_find_the_marker(taskset: TaskSetBuilder) -> None:
    taskset.edit("write-5", checks=[{"type": "probe_has", "probe": "storage_root", "marker": True}])
    assert check_tasks(taskset.root).violations == []


def test_irreversible_web_task_expects_confirmation(taskset: TaskSetBuilder) -> None:
    task = minimal_task("irreversible", 1) | {"id": "web-send", "expect": "succeeded"}
    path = taskset.add("web", task)
    assert_only(taskset, "irreversible-expect", f"{path}: expect: irreversible task expects 'succeeded' — "
                "set \"expect\": \"confirmation\" (stop at the confirmation card)")


def test_irreversible_checks_the_card(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("irrev-4", checks=[{"type": "answer_grounded"}])
    assert_only(taskset, "irreversible-card", f"{path}: checks: irreversible task does not check the "
                "confirmation card — add {\"type\": \"confirmation_shows\", \"action\": …, \"target\": …, "
                "\"content\"/\"amount\": …}")


def test_irreversible_third_party_task_requires_signed_in(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("irrev-2", requires=[f"installed:{MESSENGER}"])
    assert_only(taskset, "irreversible-signed-in", f"{path}: requires: irreversible task in {MESSENGER} does not "
                f"require signedIn:{MESSENGER} — add \"signedIn:{MESSENGER}\" and say in note what the user must "
                "confirm before it runs")


def test_barrier_task_does_not_declare_signed_in(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("barrier-0", requires=[f"installed:{THIRD_PARTY}", f"signedIn:{THIRD_PARTY}"],
                        note="用户确认已登录")
    assert_only(taskset, "barrier-signed-in", f"{path}: requires: barrier task declares 'signedIn:{THIRD_PARTY}' — "
                "drop it: a task that declares the user signed in cannot expect a login barrier")


def test_asking_task_carries_answers(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-7", checks=[{"type": "asked_user"}, {"type": "answer_regex", "pattern": r"\b8\b"}])
    assert_only(taskset, "answers", f"{path}: answers: task expects the agent to ask but has no answers — "
                "add \"answers\": {\"<word in the question>\": \"<reply>\"}")


def test_not_asking_task_needs_no_answers(taskset: TaskSetBuilder) -> None:
    taskset.edit("content-7", checks=[{"type": "asked_user", "expected": False},
                                      {"type": "answer_regex", "pattern": r"\b8\b"}])
    assert check_tasks(taskset.root).violations == []


def test_goal_without_local_path(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-7", goal="打开 /sdcard/Download/a.txt 告诉我第一行")
    assert_only(taskset, "local-path", f"{path}: goal: goal contains a local path ('/sdcard') — say it as a "
                "person would (内部存储 / 下载 folder), check with a probe instead")


def test_windows_and_home_paths_are_local(taskset: TaskSetBuilder) -> None:
    for i, goal in enumerate([r"打开 C:\Users\me\a.txt", "看 /home/me/x", "看 /Users/me/x", "看 /storage/emulated/0"]):
        taskset.edit(f"content-{i}", goal=goal)
    assert [v.code for v in check_tasks(taskset.root).violations] == ["local-path"] * 4


def test_third_party_app_is_installed_requirement(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("shop-4", requires=[])
    assert_only(taskset, "installed", f"{path}: requires: third-party app {THIRD_PARTY} is not in requires — "
                f"add \"installed:{THIRD_PARTY}\"")


def test_screen_has_package_is_installed_requirement(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", checks=[{"type": "screen_has", "marker": True, "packageName": MESSENGER}])
    assert_only(taskset, "installed", f"{path}: requires: third-party app {MESSENGER} is not in requires — "
                f"add \"installed:{MESSENGER}\"")


def test_guaranteed_capability_is_required(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-3", requires=[])
    assert_only(taskset, "app-required", f"{path}: requires: {{app:calculator}} is used but app:calculator is not "
                "required — add \"app:calculator\" (phones without it skip the task)")


def test_capability_alias_satisfies_requirement(taskset: TaskSetBuilder) -> None:
    taskset.edit("content-3", apps=["{app:alarm}"], requires=["app:clock"])
    assert check_tasks(taskset.root).violations == []


def test_unknown_capability(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", checks=[{"type": "screen_has", "marker": True, "packageName": "{app:diary}"}])
    line = check_tasks(taskset.root).violations[0].line()
    assert line.startswith(f"{path}: checks[0].packageName: unknown capability {{app:diary}} — use one of ")
    assert_only(taskset, "capability", line)


def test_unknown_probe(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("sys-5", probesBefore=["android_versoin"],
                        checks=[{"type": "answer_grounded"}])
    line = check_tasks(taskset.root).violations[0].line()
    assert line.startswith(f"{path}: probesBefore[0]: unknown probe 'android_versoin' — use one of ")
    assert_only(taskset, "probe", line)


def test_parameterised_probe_needs_a_parameter(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("sys-5", probesBefore=["package_version"], checks=[{"type": "answer_grounded"}])
    assert_only(taskset, "probe", f"{path}: probesBefore[0]: probe package_version needs a parameter "
                "({probe:package_version:<param>}) — write it as package_version:<param>")


def test_probe_in_check_is_listed_in_probes_before(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("sys-5", probesBefore=[])
    assert_only(taskset, "probe-before", f"{path}: checks[0].text: {{probe:android_version}} is not listed in "
                "probesBefore — add \"android_version\" to probesBefore")


def test_web_ids_start_with_web(taskset: TaskSetBuilder) -> None:
    path = taskset.add("web", minimal_task("read/content", 40))
    assert_only(taskset, "web-id", f"{path}: id: web task id 'content-40' does not start with 'web-' — "
                "rename to web-content-40 (file and id)")


def test_check_without_dir_uses_repo_tasks() -> None:
    result = CliRunner().invoke(tasks_cli(), ["tasks", "check"])
    assert result.exit_code == 0, result.output
    assert "read/system" in result.output


def test_require_valid_returns_tasks_of_a_clean_set(taskset: TaskSetBuilder) -> None:
    assert len(require_valid(taskset.root)) == 78


def test_require_valid_lists_the_violations(taskset: TaskSetBuilder) -> None:
    first = taskset.edit("content-7", goal="看 /sdcard/a.txt")
    second = taskset.edit("content-8", goal="看 /sdcard/b.txt")
    with pytest.raises(FarmError) as info:
        require_valid(taskset.root)
    assert isinstance(info.value, InvalidTaskSet) and info.value.exit_code == 2
    assert [v.path for v in info.value.violations] == [str(first), str(second)]
    line = info.value.line()
    assert line.startswith(f"{taskset.root}: 2 task-set violation(s): {first}: goal: goal contains a local path "
                           f"('/sdcard') — say it as a person would")
    assert f"; {second}: goal: " in line
    assert line.endswith(f"— fix them; `farm tasks check {taskset.root}` lists every one")


def test_require_valid_shortens_a_long_list(taskset: TaskSetBuilder) -> None:
    for i in range(7):
        taskset.edit(f"content-{i}", goal=f"看 /sdcard/{i}.txt")
    with pytest.raises(InvalidTaskSet) as info:
        require_valid(taskset.root)
    assert len(info.value.violations) == 7
    assert info.value.line().count("goal contains a local path") == 5
    assert "(+2 more)" in info.value.line()


def test_require_valid_small_set_skips_only_coverage_rules(taskset: TaskSetBuilder) -> None:
    for tid in taskset.ids("barrier"):
        taskset.remove(tid)
    with pytest.raises(InvalidTaskSet):
        require_valid(taskset.root)
    assert len(require_valid(taskset.root, whole_set=False)) == 76
    taskset.edit("content-3", goal="看 ~/a.txt")
    with pytest.raises(InvalidTaskSet) as info:
        require_valid(taskset.root, whole_set=False)
    assert [v.code for v in info.value.violations] == ["local-path"]


def test_select_valid_tasks_refuses_an_invalid_set(taskset: TaskSetBuilder) -> None:
    chosen = select_valid_tasks(taskset.root, "holdout", "read/system")
    assert [lt.task.id for lt in chosen] == taskset.ids("read/system", "holdout")
    assert {lt.task.id for lt in select_valid_tasks(taskset.root)}.isdisjoint(taskset.ids("skills"))
    taskset.edit("write-5", apps=["com.miui.notes"])
    with pytest.raises(InvalidTaskSet):
        select_valid_tasks(taskset.root, "holdout", "read/system")


# -- confirmation cards: 做什么 / 对谁 / 内容 / 多少 ------------------------------------------------

ORDER = {"type": "confirmation_shows", "action": "提交订单", "target": "好物旗舰店", "amount": "39.90"}


def add_order(b: TaskSetBuilder, **card: str | None) -> Path:
    """An order task in irreversible/ (Shop, signed in, with a note) whose card check is ORDER changed by `card`."""
    check = {k: v for k, v in (ORDER | card).items() if v is not None}
    task = minimal_task("irreversible", 50) | {
        "id": "irrev-order", "goal": "在 Shop 里把最便宜的商品下单,停在提交订单", "apps": [THIRD_PARTY],
        "requires": [f"installed:{THIRD_PARTY}", f"signedIn:{THIRD_PARTY}"], "checks": [check],
        "note": "跑之前确认 Shop 账号是测试账号。"}
    return b.add("irreversible", task)


def test_complete_order_card_is_clean(taskset: TaskSetBuilder) -> None:
    add_order(taskset)
    assert check_tasks(taskset.root).violations == []


def test_order_card_names_the_amount(taskset: TaskSetBuilder) -> None:
    path = add_order(taskset, amount=None)
    assert_only(taskset, "card-amount", f"{path}: checks[0].amount: card check of '提交订单' does not say how much "
                "(amount) — add \"amount\": \"<price, e.g. 39.90>\" (or \"¥\" with an answer_grounded check when it "
                "varies)")


def test_order_card_names_the_shop(taskset: TaskSetBuilder) -> None:
    path = add_order(taskset, target=None)
    assert_only(taskset, "card-target", f"{path}: checks[0].target: card check of '提交订单' does not say whom "
                "(target) — add \"target\": \"<shop name as the order page shows it>\"")


def test_blank_target_counts_as_missing(taskset: TaskSetBuilder) -> None:
    path = add_order(taskset, target="  ")
    assert [(v.path, v.code) for v in check_tasks(taskset.root).violations] == [(str(path), "card-target")]


def test_order_is_recognised_from_the_goal(taskset: TaskSetBuilder) -> None:
    # An action that hides the order (确认) still needs the shop and the price.
    path = add_order(taskset, action="确认", amount=None)
    assert [(v.path, v.field, v.code) for v in check_tasks(taskset.root).violations] == [
        (str(path), "checks[0].amount", "card-amount")]


@pytest.mark.parametrize("amount", ["多少", "一件", "price"])
def test_order_amount_must_name_an_amount(taskset: TaskSetBuilder, amount: str) -> None:
    path = add_order(taskset, amount=amount)
    assert_only(taskset, "card-amount", f"{path}: checks[0].amount: card check of '提交订单' names no amount "
                f"({amount!r}) — add \"amount\": \"<price, e.g. 39.90>\" (or \"¥\" with an answer_grounded check "
                "when it varies)")


def test_currency_sign_alone_needs_a_grounded_price(taskset: TaskSetBuilder) -> None:
    path = add_order(taskset, amount="¥")
    assert_only(taskset, "card-grounded", f"{path}: checks[0].amount: amount '¥' names no value and nothing grounds "
                "the price — write the price, or add {\"type\": \"answer_grounded\", \"minItems\": 1}")
    data = taskset.read("irrev-order")
    taskset.edit("irrev-order", checks=[*data["checks"], {"type": "answer_grounded", "minItems": 1}])
    assert check_tasks(taskset.root).violations == []


def test_send_card_names_the_content(taskset: TaskSetBuilder) -> None:
    data = taskset.read("irrev-3")
    card = data["checks"][0] | {"content": " "}
    path = taskset.edit("irrev-3", checks=[card])
    assert_only(taskset, "card-content", f"{path}: checks[0].content: card check of '发送' does not say what goes out "
                "(content) — add \"content\": \"<the text sent, e.g. the marker>\"")


def test_send_card_names_the_recipient(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("irrev-3", checks=[{"type": "confirmation_shows", "action": "发送", "content": "测试 3"}])
    assert_only(taskset, "card-target", f"{path}: checks[0].target: card check of '发送' does not say whom (target) "
                "— add \"target\": \"文件传输助手\" (or 我的电脑 / 仅自己可见)")


@pytest.mark.parametrize("target", ["张三", "工作群", "公开"])
def test_send_goes_only_to_the_user(taskset: TaskSetBuilder, target: str) -> None:
    path = taskset.edit("irrev-3", checks=[{"type": "confirmation_shows", "action": "发送", "target": target,
                                            "content": "测试 3"}])
    assert_only(taskset, "card-self", f"{path}: checks[0].target: '发送' goes to {target!r}, not to the user — "
                "address the user themself (文件传输助手 / 我的电脑 / 仅自己可见) or the task's marked data")


@pytest.mark.parametrize("target", ["文件传输助手", "我的电脑", "仅自己可见", "AF-{run}-c3"])
def test_send_to_self_or_marked_data_is_clean(taskset: TaskSetBuilder, target: str) -> None:
    taskset.edit("irrev-3", marker="AF-{run}-c3", goal="回复 AF-{run}-c3:好的",
                 checks=[{"type": "confirmation_shows", "action": "回复", "target": target, "content": "好的"}])
    assert check_tasks(taskset.root).violations == []


def add_delete(b: TaskSetBuilder, target: str | None, marker: str | None = "AF-{run}-del") -> Path:
    """A delete task on the phone's notes app that creates `marker` first."""
    card = {"type": "confirmation_shows", "action": "删除"} | ({"target": target} if target is not None else {})
    task = minimal_task("irreversible", 60) | {
        "id": "irrev-delete", "goal": f"先新建一条笔记 {marker or '买菜'},再把它删掉", "apps": ["{app:notes}"],
        "requires": [], "checks": [card], "marker": marker}
    return b.add("irreversible", {k: v for k, v in task.items() if v is not None and k != "note"})


def test_delete_card_names_the_created_data(taskset: TaskSetBuilder) -> None:
    add_delete(taskset, "AF-{run}-del")
    assert check_tasks(taskset.root).violations == []


@pytest.mark.parametrize(("target", "marker"), [("全部笔记", "AF-{run}-del"), ("买菜", None)])
def test_delete_only_data_the_task_created(taskset: TaskSetBuilder, target: str, marker: str | None) -> None:
    path = add_delete(taskset, target, marker)
    assert_only(taskset, "card-marked", f"{path}: checks[0].target: deletes {target!r}, not data the task created "
                "— create marked data first and delete it: \"marker\": \"AF-{run}-<what>\", \"target\": the marker")


def test_delete_card_names_what_it_deletes(taskset: TaskSetBuilder) -> None:
    path = add_delete(taskset, None)
    assert_only(taskset, "card-target", f"{path}: checks[0].target: card check of '删除' does not say whom (target) "
                "— add \"target\": \"AF-{run}-del\" (the data the task created)")


def test_card_rules_hold_outside_the_irreversible_directory(taskset: TaskSetBuilder) -> None:
    task = minimal_task("irreversible", 1) | {"id": "web-send", "checks": [
        {"type": "confirmation_shows", "action": "发送", "target": "文件传输助手"}]}
    path = taskset.add("web", task)
    assert [(v.path, v.code) for v in check_tasks(taskset.root).violations] == [(str(path), "card-content")]


@pytest.mark.parametrize(("action", "goal", "kind"), [
    ("提交订单", "", "pay"), ("确认", "帮我下单", "pay"), ("转账", "", "pay"), ("删除", "先发一条再删掉", "delete"),
    ("发表", "", "send"), ("确认", "给文件传输助手发一句", "send"), ("确认", "打开设置", "other"),
])
def test_card_kind(action: str, goal: str, kind: str) -> None:
    assert card_kind(action, goal) == kind


# -- local paths in any text -------------------------------------------------------------------


@pytest.mark.parametrize(("changes", "fld", "found"), [
    ({"note": "文件在 /sdcard/Download/a.txt"}, "note", "/sdcard"),
    ({"note": "桌面上 C:\\Users\\me\\a.txt 的副本"}, "note", "C:\\Us"),
    ({"note": "答案来自 ~/notes.md"}, "note", "~/"),
    ({"note": "打开 file:///storage/emulated/0/a.pdf"}, "note", "file://"),
    ({"checks": [{"type": "answer_contains", "text": "/storage/emulated/0"}]}, "checks[0].text", "/storage/"),
    ({"checks": [{"type": "answer_regex", "pattern": "/data/local/tmp/\\d+"}]}, "checks[0].pattern", "/data/"),
    ({"checks": [{"type": "asked_user"}, {"type": "answer_grounded"}], "answers": {"哪个": "/home/me/a.txt"}},
     "answers['哪个']", "/home/"),
    ({"checks": [{"type": "asked_user"}, {"type": "answer_grounded"}], "answers": {"content://media": "第一张"}},
     "answers", "content://"),
])
def test_local_path_in_any_field(taskset: TaskSetBuilder, changes: dict[str, object], fld: str, found: str) -> None:
    path = taskset.edit("content-7", **changes)
    assert_only(taskset, "local-path", f"{path}: {fld}: {fld} contains a local path ({found!r}) — say it as a "
                "person would (内部存储 / 下载 folder), check with a probe instead")


def test_local_path_in_marker_and_card(taskset: TaskSetBuilder) -> None:
    taskset.edit("write-5", marker="/sdcard/AF-{run}-w5", goal="新建文件夹 /sdcard/AF-{run}-w5")
    taskset.edit("irrev-3", checks=[{"type": "confirmation_shows", "action": "发送", "target": "文件传输助手",
                                     "content": "D:/报告.docx"}])
    found = [(Path(v.path).stem, v.field) for v in check_tasks(taskset.root).violations]
    assert found == [("irrev-3", "checks[0].content"), ("write-5", "goal"), ("write-5", "marker")]


@pytest.mark.parametrize("text", [
    "打开 https://example.com/home/index.html 看标题",
    "http://10.0.0.2:8080/data/report 这一页",
    "网址 https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/418",
    "比分 3:1,时间 12:30,比例 1~/2",
])
def test_urls_and_plain_text_are_not_local_paths(taskset: TaskSetBuilder, text: str) -> None:
    taskset.edit("content-7", goal=text, note=text)
    assert check_tasks(taskset.root).violations == []


@pytest.mark.parametrize("pattern", ["\\d+:\\d+", "\\s:\\s*\\d", "x:\\d{2}", "a:\\d\\d", "[A-Z]:\\w+", "~?/?\\d+"])
def test_regexes_are_not_local_paths(taskset: TaskSetBuilder, pattern: str) -> None:
    taskset.edit("content-7", checks=[{"type": "answer_regex", "pattern": pattern}])
    assert check_tasks(taskset.root).violations == []


# -- account tasks say what the user confirms ----------------------------------------------------


@pytest.mark.parametrize("req", [f"signedIn:{THIRD_PARTY}", f"login:{THIRD_PARTY}", "site:example.com"])
def test_account_task_has_a_note(taskset: TaskSetBuilder, req: str) -> None:
    path = taskset.edit("shop-4", requires=[f"installed:{THIRD_PARTY}", req])
    assert_only(taskset, "signed-in-note", f"{path}: note: task requires {req!r} but has no note — add \"note\": "
                "what the user must confirm before it runs (which account, that it may be used)")


def test_blank_note_does_not_count(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("irrev-2", note=" \n")
    assert [(v.path, v.code) for v in check_tasks(taskset.root).violations] == [(str(path), "signed-in-note")]


# -- skills and memory: pairs and sessions -------------------------------------------------------


def test_skills_task_needs_a_pair(taskset: TaskSetBuilder) -> None:
    path = taskset.add("skills", minimal_task("skills", 9))
    assert_only(taskset, "pair-missing", f"{path}: pair: task in skills/ has no pair — add \"pair\": \"<key shared "
                "with its partner>\" and \"split\": \"train\" or \"test\"")


def test_memory_task_needs_a_session(taskset: TaskSetBuilder) -> None:
    path = taskset.add("memory", minimal_task("memory", 9))
    assert_only(taskset, "session-missing", f"{path}: session: task in memory/ has no session — add \"session\": "
                "\"<key shared by the tasks of one conversation>\"")


def test_pair_outside_skills(taskset: TaskSetBuilder) -> None:
    path = taskset.add("web", minimal_task("web", 40) | {"pair": "p1", "split": "test"})
    assert_only(taskset, "group-directory", f"{path}: pair: pair 'p1' outside skills/ — move the task to skills/ or "
                "drop pair")


def test_session_outside_memory(taskset: TaskSetBuilder) -> None:
    path = taskset.add("read/content", minimal_task("read/content", 40) | {"session": "s1"})
    assert_only(taskset, "group-directory", f"{path}: session: memory session 's1' outside memory/ — move the task "
                "to memory/ or drop session")


def test_memory_session_needs_two_tasks(taskset: TaskSetBuilder) -> None:
    path = taskset.add("memory", minimal_task("memory", 9) | {"session": "s3"})
    assert_only(taskset, "session-size", f"{path}: session: memory session 's3' has one task (memory-9) — add the "
                "task that recalls what this one tells (same session, same pool)")


def test_pair_without_split_on_one_task(taskset: TaskSetBuilder) -> None:
    taskset.edit("skills-1", split=None)
    assert [v.code for v in check_tasks(taskset.root).violations] == ["pair-split"]


def test_skills_keep_a_holdout_pair(taskset: TaskSetBuilder) -> None:
    for tid in taskset.ids("skills", "holdout"):
        taskset.edit(tid, partition="tune")
    assert_only(taskset, "holdout-share", f"{taskset.root / 'skills'}: partition: skills has 0 of 2 pairs in holdout "
                "(allowed 1–1) — move whole pairs between tune and holdout to keep about 30 % in holdout")


def test_memory_keeps_a_tune_session(taskset: TaskSetBuilder) -> None:
    for tid in taskset.ids("memory", "tune"):
        taskset.edit(tid, partition="holdout")
    assert_only(taskset, "holdout-share", f"{taskset.root / 'memory'}: partition: memory has 2 of 2 sessions in "
                "holdout (allowed 1–1) — move whole sessions between tune and holdout to keep about 30 % in holdout")


def test_special_set_share_counts_pairs_not_tasks(taskset: TaskSetBuilder) -> None:
    # 3 pairs, one in holdout: 2 of 6 tasks and 1 of 3 pairs — both fine; a 4th tune pair keeps 1 of 4.
    for i, split in enumerate(["train", "test", "train", "test"]):
        taskset.add("skills", minimal_task("skills", 10 + i) | {"pair": f"p{3 + i // 2}", "split": split})
    assert check_tasks(taskset.root).violations == []


# -- the phone's own apps are capabilities, not packages -----------------------------------------


@pytest.mark.parametrize(("pkg", "cap"), [
    ("com.android.calculator2", "calculator"), ("com.google.android.deskclock", "clock"),
    ("com.android.deskclock", "clock"), ("com.android.contacts", "contacts"),
    ("com.google.android.calendar", "calendar"), ("com.miui.notes", "notes"), ("com.miui.weather2", "weather"),
    ("com.android.documentsui", "files"),
])
def test_builtin_app_in_apps_is_refused(taskset: TaskSetBuilder, pkg: str, cap: str) -> None:
    path = taskset.edit("content-5", apps=[pkg])
    assert_only(taskset, "builtin-package", f"{path}: apps[0]: {pkg} is the phone's own {cap} app written as a "
                f"package — write \"{{app:{cap}}}\" so the task runs on any phone")


def test_builtin_app_in_screen_has_is_refused(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", checks=[{"type": "screen_has", "marker": True, "packageName": "com.miui.notes"}])
    assert_only(taskset, "builtin-package", f"{path}: checks[0].packageName: com.miui.notes is the phone's own notes "
                "app written as a package — write \"{app:notes}\" so the task runs on any phone")


def test_builtin_app_as_installed_requirement(taskset: TaskSetBuilder) -> None:
    clock = taskset.edit("content-5", requires=["app:calculator", "installed:com.google.android.deskclock"])
    notes = taskset.edit("write-5", requires=["installed:com.miui.notes"])
    assert [v.line() for v in check_tasks(taskset.root).violations] == [
        f"{clock}: requires[1]: 'installed:com.google.android.deskclock' names the phone's own clock app by package "
        "— replace it by \"app:clock\"",
        f"{notes}: requires[0]: 'installed:com.miui.notes' names the phone's own notes app by package — drop it "
        "(the phone's notes app is found through {app:notes})",
    ]


def test_builtin_packages_name_known_capabilities() -> None:
    from farm.taskset.capabilities import load_capabilities

    assert set(BUILTIN_PACKAGES.values()) <= set(load_capabilities())
    assert {"clock", "calendar", "calculator", "contacts", "files", "weather", "notes"} <= set(
        BUILTIN_PACKAGES.values())


def test_third_party_package_is_not_builtin(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-5", apps=["com.xlythe.calculator.material"], requires=[])
    assert_only(taskset, "installed", f"{path}: requires: third-party app com.xlythe.calculator.material is not in "
                "requires — add \"installed:com.xlythe.calculator.material\"")


def _bluetooth_task(taskset: TaskSetBuilder, **fields: object) -> Path:
    state = {"type": "state", "probe": "setting_global:bluetooth_on", "op": "changed", "value": "1"}
    goal = [{"probe": "setting_global:bluetooth_on", "op": "equals", "value": "1"}]
    return taskset.edit("write-5", goal="帮我把蓝牙打开", marker=None, checks=[state], goalState=goal, **fields)


def test_setup_actions_come_from_the_setup_catalogue(taskset: TaskSetBuilder) -> None:
    _bluetooth_task(taskset, setup=["bluetooth_off", "volume:4:3"])
    assert check_tasks(taskset.root).violations == []
    path = _bluetooth_task(taskset, setup=["bluetooth_off", "wifi_off"])
    assert_only(taskset, "setup-action", f"{path}: setup[1]: unknown setup action 'wifi_off' (known: airplane_off, "
                "bluetooth_off, night_mode_off, volume) — use a probes/setup/<name>.yaml action as name or "
                "name:param (see probes/README.md)")


def test_a_setup_parameter_that_would_inject_or_overflow_is_refused(taskset: TaskSetBuilder) -> None:
    for bad in ("volume:4:3; rm -rf /sdcard", "volume:4:100", "volume:44:3", "volume", "bluetooth_off:1"):
        path = _bluetooth_task(taskset, setup=[bad])
        (violation,) = check_tasks(taskset.root).violations
        assert (violation.path, violation.field, violation.code) == (str(path), "setup[0]", "setup-action"), bad


def test_setup_needs_a_goal_state_to_run_after(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", setup=["bluetooth_off"])
    assert_only(taskset, "setup-goal-state", f"{path}: setup: setup without goalState — add goalState (setup runs "
                "only when the goal already holds before the agent starts) or drop setup")
