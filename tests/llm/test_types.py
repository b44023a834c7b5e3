"""The neutral message types refuse shapes no provider accepts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from farm.llm.types import Message, ModelTurn, ToolCall, ToolSpec, image_media_type


def test_tool_message_needs_its_call_id() -> None:
    with pytest.raises(ValidationError, match="tool_call_id"):
        Message(role="tool", text="result")


def test_tool_calls_only_on_assistant_messages() -> None:
    with pytest.raises(ValidationError, match="assistant"):
        Message(role="user", text="hi", tool_calls=[ToolCall(id="1", name="tap", arguments_json="{}")])


def test_user_message_needs_content() -> None:
    with pytest.raises(ValidationError, match="text or images"):
        Message.user()


def test_images_not_on_system_messages() -> None:
    with pytest.raises(ValidationError, match="images"):
        Message(role="system", text="s", images=[b"\xff\xd8"])


@pytest.mark.parametrize("name", ["has space", "", "x" * 65, "dot.name"])
def test_tool_names_follow_the_api_rule(name: str) -> None:
    with pytest.raises(ValidationError):
        ToolSpec(name=name, description="d")


def test_arguments_must_be_an_object() -> None:
    with pytest.raises(ValueError, match="not a JSON object"):
        ToolCall(id="1", name="tap", arguments_json="[1, 2]").arguments()


def test_empty_arguments_mean_no_arguments() -> None:
    assert ToolCall(id="1", name="back", arguments_json="").arguments() == {}


def test_messages_round_trip_through_json_with_images() -> None:
    msg = Message.tool_result("call_1", "shot", images=[b"\xff\xd8\x00\x01binary\xff\xd9"])
    assert Message.model_validate_json(msg.model_dump_json()) == msg


def test_turn_becomes_the_assistant_message() -> None:
    call = ToolCall(id="c1", name="tap", arguments_json='{"x": 1}')
    msg = ModelTurn(text="tapping", tool_calls=[call]).as_message()
    assert (msg.role, msg.text, msg.tool_calls) == ("assistant", "tapping", [call])


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        (b"\xff\xd8\xff\xe0rest", "image/jpeg"),
        (b"\x89PNG\r\n\x1a\nrest", "image/png"),
        (b"RIFF\x00\x00\x00\x00WEBPrest", "image/webp"),
    ],
)
def test_image_media_type_is_detected(data: bytes, media_type: str) -> None:
    assert image_media_type(data) == media_type
