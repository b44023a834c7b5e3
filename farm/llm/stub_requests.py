"""Reading the conversation out of a request body of either model API (for stub responders and assertions)."""

from __future__ import annotations

from typing import Any


def count_images(node: Any) -> int:
    """Images anywhere in a message list (image parts, tool results included)."""
    if isinstance(node, list):
        return sum(count_images(item) for item in node)
    if isinstance(node, dict):
        own = 1 if node.get("type") in ("image", "image_url") else 0
        return own + sum(count_images(v) for k, v in node.items() if k in ("content", "messages"))
    return 0


def _joined_text(blocks: Any) -> str:
    if isinstance(blocks, str):
        return blocks
    if not isinstance(blocks, list):
        return ""
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")


def tool_results(body: dict[str, Any]) -> list[str]:
    """Tool-result texts of a request body of either API, in order (for responders and assertions)."""
    out: list[str] = []
    for msg in body.get("messages", []):
        if msg.get("role") == "tool":
            out.append(_joined_text(msg.get("content")))
        elif isinstance(msg.get("content"), list):
            out += [_joined_text(b.get("content")) for b in msg["content"] if b.get("type") == "tool_result"]
    return out


def user_texts(body: dict[str, Any]) -> list[str]:
    """Texts of user messages of a request body of either API (tool results excluded), in order."""
    out: list[str] = []
    for msg in body.get("messages", []):
        if msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, list):
            content = [b for b in content if b.get("type") == "text"]
        text = _joined_text(content)
        if text:
            out.append(text)
    return out
