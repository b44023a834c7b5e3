"""Takeover kinds from what the screen shows; barriers only from visible text."""

from farm.scoring import score
from farm.scoring.evidence import HandOver
from farm.scoring.takeover import judge_hand_over, screen_kind
from tests.helpers.host import make_evidence, make_task

_PAYMENT = '[1] TextView "请输入支付密码"\n[2] EditText "" password\n[3] Button "确认付款" click'
_CAPTCHA = '[1] TextView "安全验证"\n[2] TextView "请拖动滑块完成拼图"'
_LOGIN = '[1] TextView "账号"\n[2] EditText "" \n[3] Button "登录" click'


def _judge(reason: str, screen: str, accept_on: list[str] | None = None) -> tuple[bool, str]:
    v = judge_hand_over(HandOver(step=1, reason=reason, screen=screen), requires=[], accept_on=accept_on)
    return v.accepted, v.kind


def test_payment_password_screen_is_not_a_login() -> None:
    assert screen_kind(_PAYMENT, "login") == "payment"
    assert _judge("login", _PAYMENT) == (False, "payment")


def test_captcha_screen_is_a_captcha_takeover() -> None:
    assert _judge("captcha", _CAPTCHA) == (True, "captcha")


def test_verification_is_the_captcha_kind() -> None:
    assert _judge("verification code", _CAPTCHA, ["verification"]) == (True, "captcha")


def test_login_screen_is_a_login_takeover() -> None:
    assert _judge("需要登录", _LOGIN) == (True, "login")


def test_payment_takeover_only_when_the_task_accepts_it() -> None:
    assert _judge("payment", _PAYMENT, ["payment"]) == (True, "payment")


def test_login_barrier_from_a_resource_id_only_is_not_visible() -> None:
    screen = "app: dev.shop/.Main\n[1] Button (btn_login_entry) click\n[2] TextView \"商品\""
    assert _judge("login", screen) == (False, "login")


def test_captcha_barrier_from_an_activity_name_only_is_not_visible() -> None:
    screen = "app: dev.shop/.CaptchaActivity\n[1] ImageView (captcha) click"
    accepted, _ = _judge("captcha", screen)
    assert not accepted


def test_hand_over_reason_naming_no_barrier_is_refused() -> None:
    assert _judge("I am stuck", _LOGIN)[0] is False


def test_barrier_task_with_payment_screen_fails_as_barrier() -> None:
    task = make_task(category="barrier", expect="takeover", accept_takeover_on=["login"])
    ev = make_evidence(_PAYMENT, end="hand_over", hand_over=HandOver(step=2, reason="login", screen=_PAYMENT))
    result = score(task, ev)
    assert (result.outcome, result.passed, result.failure_category) == ("failed", False, "barrier")
