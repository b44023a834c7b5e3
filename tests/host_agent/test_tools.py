import pytest

from host_agent import tools as t


def test_every_tool_has_an_object_schema_without_titles() -> None:
    specs = {s.name: s for s in t.tool_specs()}
    assert set(specs) == set(t.TOOLS)
    for spec in specs.values():
        assert spec.parameters["type"] == "object" and "title" not in str(spec.parameters.keys())
        assert spec.description


def test_confirm_schema_names_card_fields() -> None:
    confirm = next(s for s in t.tool_specs() if s.name == "confirm")
    assert set(confirm.parameters["properties"]) == {"action", "target", "content", "amount"}  # type: ignore[arg-type]


def test_tap_needs_a_ref_or_both_coordinates() -> None:
    assert t.parse_call("tap", '{"ref": 4}') == t.Tap(ref=4)
    assert t.parse_call("tap", {"x": 1, "y": 2}) == t.Tap(x=1, y=2)
    with pytest.raises(t.ToolCallError, match="give a ref"):
        t.parse_call("tap", '{"x": 1}')


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("fly", "{}", "unknown tool 'fly'"),
        ("tap", '{"ref": 1', "not valid JSON"),
        ("tap", "[1]", "must be a JSON object"),
        ("wait", '{"seconds": 99}', "seconds"),
        ("swipe", '{"direction": "sideways"}', "direction"),
        ("answer", '{"text": ""}', "text"),
        ("tap", '{"ref": 1, "force": true}', "force"),
    ],
)
def test_bad_calls_raise_errors_the_agent_can_act_on(name: str, args: str, message: str) -> None:
    with pytest.raises(t.ToolCallError, match=message):
        t.parse_call(name, args)


def test_terminal_tools() -> None:
    assert t.TERMINAL == {"answer", "give_up", "hand_over", "confirm"}


@pytest.mark.parametrize(
    "label", ["发送", "确认发送", "提交订单", "立即购买", "删除", "Send", "Buy now", "Place order"]
)
def test_final_step_labels_are_recognised(label: str) -> None:
    from host_agent.actions import is_final_step

    assert is_final_step(label)


@pytest.mark.parametrize("label", ["保存", "新建笔记", "加入购物车", "发送前请确认", "Settings", "取消", "Sender"])
def test_ordinary_labels_are_not_final_steps(label: str) -> None:
    from host_agent.actions import is_final_step

    assert not is_final_step(label)
