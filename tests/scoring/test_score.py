import pytest
from pydantic import ValidationError

from farm.results.device_line import DeviceCheck, DeviceScore, WrittenScore
from farm.results.normalise import Context, score_to_record
from farm.scoring import score
from farm.scoring.evidence import ConfirmationCard, FreshLook, HandOver, JudgeEvidence
from farm.scoring.judge import LANE_CHECK_TYPES, LlmJudge
from farm.scoring.registry import registered_types
from farm.taskset.model import CHECK_TYPES, Task
from tests.helpers.host import make_evidence, make_task

_LOGIN_SCREEN = '[1] TextView "请登录" (title)\n[2] EditText "" 手机号\n[3] Button "登录" click'


def test_every_check_type_has_a_scorer() -> None:
    assert set(registered_types()) == set(CHECK_TYPES) | set(LANE_CHECK_TYPES)


def test_task_yaml_cannot_name_a_lane_check() -> None:
    with pytest.raises(ValidationError, match="llm_judge"):
        make_task(checks=[{"type": "llm_judge", "mode": "reference"}])


def _judged_task(*checks: object) -> Task:
    # Task YAML refuses lane checks; a lane that attaches one hands score() a task built like this.
    return make_task().model_copy(update={"checks": list(checks)})


def _judge(passed: bool | None, error: str | None = None) -> list[JudgeEvidence]:
    return [JudgeEvidence(mode="reference", passed=passed, reason="the answer names the recipe", judge_error=error)]


def test_a_passing_judge_check_counts_like_any_check() -> None:
    result = score(_judged_task(LlmJudge(mode="reference")), make_evidence(answer="x", judge_verdicts=_judge(True)))
    assert (result.outcome, result.passed, [c.passed for c in result.checks]) == ("succeeded", True, [True])


def test_a_failing_judge_check_is_a_failed_outcome() -> None:
    result = score(_judged_task(LlmJudge(mode="reference")), make_evidence(answer="x", judge_verdicts=_judge(False)))
    assert (result.outcome, result.passed) == ("failed", False)


def test_an_unjudged_check_is_an_error_never_a_pass_nor_an_agent_failure() -> None:
    task = make_task(checks=[{"type": "answer_regex", "pattern": "x"}])
    task = task.model_copy(update={"checks": [*task.checks, LlmJudge(mode="reference")]})
    result = score(task, make_evidence(answer="x", judge_verdicts=_judge(None, "reply was cut off")))
    assert (result.outcome, result.passed, result.failure_category) == ("error", False, "unjudged")
    assert [c.passed for c in result.checks] == [True, None]
    assert result.reasons == ["llm_judge reached no verdict: reference judge: reply was cut off"]


def test_an_unjudged_check_beside_a_failed_one_is_still_unjudged() -> None:
    task = make_task(checks=[{"type": "answer_regex", "pattern": "y"}])
    task = task.model_copy(update={"checks": [*task.checks, LlmJudge(mode="evidence")]})
    result = score(task, make_evidence(answer="x"))
    assert (result.outcome, result.passed, result.failure_category) == ("error", False, "unjudged")
    assert "no evidence verdict was recorded" in result.reasons[0]


def test_an_unjudged_check_survives_the_score_line_and_normalises_to_an_error() -> None:
    result = score(_judged_task(LlmJudge(mode="reference")), make_evidence(answer="x"))
    line = WrittenScore(id="t-read", outcome=result.outcome, passed=result.passed,
                        checks=[DeviceCheck(type=c.type, passed=c.passed, detail=c.detail) for c in result.checks])
    parsed = DeviceScore.model_validate_json(line.model_dump_json(by_alias=True))
    rec = score_to_record(parsed, Context(run="r", device="S1", executor="host"), "scores.jsonl:1")
    assert [c.passed for c in rec.checks] == [None]
    assert (rec.outcome, rec.passed, rec.failure_kind) == ("error", False, "infrastructure")


def test_an_infrastructure_error_stays_infrastructure_with_an_unjudged_check() -> None:
    result = score(_judged_task(LlmJudge(mode="reference")), make_evidence(end="error", end_reason="browser died"))
    assert (result.outcome, result.failure_category, result.reasons) == ("error", "infrastructure", ["browser died"])


def test_right_answer_succeeds() -> None:
    task = make_task(checks=[{"type": "answer_regex", "pattern": "56,?088"}])
    result = score(task, make_evidence('[1] TextView "56088"', answer="56,088"))
    assert (result.outcome, result.passed, result.failure_category) == ("succeeded", True, None)


def test_wrong_answer_is_a_failed_perception() -> None:
    task = make_task(checks=[{"type": "answer_regex", "pattern": "56,?088"}])
    result = score(task, make_evidence('[1] TextView "56086"', answer="56086"))
    assert (result.outcome, result.passed, result.failure_category) == ("failed", False, "perception")
    assert any("answer_regex" in r for r in result.reasons)


def test_give_up_on_impossible_task_passes() -> None:
    task = make_task(category="impossible", expect="failed")
    result = score(task, make_evidence(end="give_up", end_reason="no such setting"))
    assert (result.outcome, result.passed) == ("failed", True)


def test_budget_exhaustion_on_read_task_is_route_failure() -> None:
    result = score(make_task(), make_evidence(end="max_steps"))
    assert (result.outcome, result.failure_category) == ("failed", "route")


def test_infrastructure_error_is_not_an_agent_failure() -> None:
    result = score(make_task(), make_evidence(end="error", end_reason="device offline"))
    assert (result.outcome, result.failure_category, result.reasons) == ("error", "infrastructure", ["device offline"])


def test_login_hand_over_with_visible_login_box_is_takeover() -> None:
    task = make_task(category="barrier", expect="takeover")
    ev = make_evidence(_LOGIN_SCREEN, end="hand_over", hand_over=HandOver(step=3, reason="login", screen=_LOGIN_SCREEN))
    result = score(task, ev)
    assert (result.outcome, result.takeover_kind, result.passed) == ("takeover", "login", True)


def test_hand_over_without_visible_barrier_is_failed() -> None:
    task = make_task(category="barrier", expect="takeover")
    screen = '[1] TextView "商品列表"'
    result = score(task, make_evidence(end="hand_over", hand_over=HandOver(step=2, reason="login", screen=screen)))
    assert (result.outcome, result.failure_category) == ("failed", "barrier")


def test_signed_in_task_hand_over_is_not_a_takeover() -> None:
    task = make_task(requires=["signedIn:dev.shop"])
    ev = make_evidence(end="hand_over", hand_over=HandOver(step=2, reason="login", screen=_LOGIN_SCREEN))
    result = score(task, ev)
    assert result.outcome == "failed" and "signed in" in result.reasons[1]


def test_accept_takeover_on_empty_refuses_every_barrier() -> None:
    task = make_task(expect="takeover", accept_takeover_on=[])
    ev = make_evidence(end="hand_over", hand_over=HandOver(step=2, reason="login", screen=_LOGIN_SCREEN))
    assert score(task, ev).outcome == "failed"


def test_captcha_hand_over_needs_captcha_words() -> None:
    task = make_task(expect="takeover", accept_takeover_on=["captcha"])
    login = make_evidence(end="hand_over", hand_over=HandOver(step=2, reason="captcha", screen=_LOGIN_SCREEN))
    captcha_screen = '[1] TextView "请输入验证码"'
    shown = make_evidence(end="hand_over", hand_over=HandOver(step=2, reason="验证码", screen=captcha_screen))
    assert score(task, login).outcome == "failed"
    assert score(task, shown).takeover_kind == "captcha"


def test_confirmation_with_right_card_passes() -> None:
    task = make_task(
        category="irreversible",
        expect="confirmation",
        checks=[{"type": "confirmation_shows", "action": "发送", "target": "文件传输助手", "content": "hi"}],
    )
    card = ConfirmationCard(action="发送消息", target="文件传输助手", content="hi there")
    result = score(task, make_evidence(end="confirmation", confirmations=[card]))
    assert (result.outcome, result.passed) == ("confirmation", True)


def test_write_task_marker_checked_by_fresh_look() -> None:
    task = make_task(
        category="write",
        marker="af-{run}",
        checks=[{"type": "screen_has", "marker": True, "packageName": "dev.notes"}],
    ).model_copy(update={"marker": "af-r1"})
    seen = make_evidence(answer="done", fresh_looks=[FreshLook(package="dev.notes", text="note af-r1")])
    unseen = make_evidence(answer="done", fresh_looks=[FreshLook(package="dev.notes", text="note")])
    assert score(task, seen).passed
    failed = score(task, unseen)
    assert (failed.passed, failed.failure_category) == (False, "app_state")


def test_asked_user_failure_is_clarification() -> None:
    task = make_task(checks=[{"type": "asked_user"}], answers={"几点": "7点"})
    result = score(task, make_evidence(answer="设好了"))
    assert result.failure_category == "clarification"


def test_repeat_ending_is_route_even_when_answer_checks_fail() -> None:
    task = make_task(checks=[{"type": "answer_regex", "pattern": "x"}])
    result = score(task, make_evidence(end="repeat"))
    assert (result.outcome, result.failure_category) == ("failed", "route")


def test_screen_has_does_not_read_resource_ids() -> None:
    task = make_task(checks=[{"type": "screen_has", "packageName": "dev.notes", "text": "login"}])
    look = FreshLook(package="dev.notes", text='[1] Button (btn_login_entry) click')
    assert not score(task, make_evidence(answer="ok", fresh_looks=[look])).passed


def test_confirmation_amount_inside_a_bigger_amount_fails() -> None:
    card = ConfirmationCard(action="下单", target="官方旗舰店", content="纸巾", amount="¥1,299.00")
    for amount, passes in (("99", False), ("29", False), ("1299", True)):
        task = make_task(category="irreversible", expect="confirmation",
                         checks=[{"type": "confirmation_shows", "action": "下单", "amount": amount}])
        assert score(task, make_evidence(end="confirmation", confirmations=[card])).passed is passes


def test_budget_exhaustion_never_passes_an_impossible_task() -> None:
    task = make_task(category="impossible", expect="failed")
    for end in ("max_steps", "timeout", "repeat"):
        result = score(task, make_evidence(end=end))
        assert (result.outcome, result.passed, result.end_reason) == ("failed", False, end)
        assert "never did" in result.reasons[0] or "never did" in " ".join(result.reasons)


def test_answer_declaring_the_task_impossible_passes_an_impossible_task() -> None:
    task = make_task(category="impossible", expect="failed")
    result = score(task, make_evidence(answer="2 月没有 30 号,无法设置"))
    assert (result.outcome, result.passed, result.end_reason) == ("failed", True, "answer")


def test_answer_claiming_success_fails_an_impossible_task() -> None:
    task = make_task(category="impossible", expect="failed")
    result = score(task, make_evidence(answer="闹钟已设好"))
    assert (result.outcome, result.passed) == ("succeeded", False)


def test_end_reason_names_takeover_and_confirm() -> None:
    task = make_task(category="barrier", expect="takeover")
    ev = make_evidence(_LOGIN_SCREEN, end="hand_over", hand_over=HandOver(step=3, reason="login", screen=_LOGIN_SCREEN))
    assert score(task, ev).end_reason == "takeover"
    assert score(make_task(), make_evidence(end="confirmation")).end_reason == "confirm"


def test_app_choice_points_screen_has_at_the_app_the_agent_used() -> None:
    task = make_task(checks=[{"type": "screen_has", "packageName": "com.android.deskclock", "text": "M-1"}])
    look = FreshLook(package="com.google.android.deskclock", text='[1] TextView "M-1"')
    ev = make_evidence(answer="ok", fresh_looks=[look],
                       app_choices={"com.android.deskclock": "com.google.android.deskclock"})
    assert score(task, ev).passed
    assert not score(task, make_evidence(answer="ok", fresh_looks=[look])).passed
