"""U2HttpSession: HTTP framing and the JSON-RPC methods uiautomator2 uses."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

from PIL import Image

from farm.sim.u2server import U2HttpSession
from tests.helpers.sim_apps import find, make_phone

CALC = "com.android.calculator2"


def request(method: str, path: str, body: bytes = b"", close: bool = False) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost:9008\r\nUser-Agent: uiautomator2\r\nAccept-Encoding: \r\n"
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    if close:
        head += "Connection: close\r\n"
    return head.encode() + b"\r\n" + body


def split_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers["content-length"])
    return int(lines[0].split()[1]), headers, rest[:length]


def rpc(session: U2HttpSession, method: str, params: Any = None) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params if params else {}}).encode()
    status, _, payload = split_response(session.feed(request("POST", "/jsonrpc/0", body)))
    assert status == 200
    reply: dict[str, Any] = json.loads(payload)
    return reply


def sel(**kw: Any) -> dict[str, Any]:
    from farm.sim.apps.selector import MASKS

    mask = 0
    for k in kw:
        mask |= MASKS[k]
    return {"mask": mask, "childOrSibling": [], "childOrSiblingSelector": [], **kw}


def session(tmp_path: Path) -> U2HttpSession:
    return U2HttpSession(make_phone(tmp_path).ui)


def test_ping_answers_pong(tmp_path: Path) -> None:
    status, headers, body = split_response(session(tmp_path).feed(request("GET", "/ping")))
    assert (status, body) == (200, b"pong")
    assert headers["connection"] == "keep-alive"


def test_partial_and_pipelined_requests(tmp_path: Path) -> None:
    s = session(tmp_path)
    raw = request("GET", "/ping") + request("GET", "/ping")
    assert s.feed(raw[:10]) == b""
    out = s.feed(raw[10:])
    assert out.count(b"pong") == 2 and out.count(b"HTTP/1.1 200 OK") == 2


def test_connection_close_marks_session_closed(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.feed(request("GET", "/ping", close=True))
    assert s.closed


def test_unknown_path_is_404(tmp_path: Path) -> None:
    status, _, _ = split_response(session(tmp_path).feed(request("GET", "/nope")))
    assert status == 404


def test_device_info_shape(tmp_path: Path) -> None:
    result = rpc(session(tmp_path), "deviceInfo")["result"]
    assert set(result) == {"currentPackageName", "displayWidth", "displayHeight", "displayRotation",
                           "displaySizeDpX", "displaySizeDpY", "productName", "screenOn", "sdkInt",
                           "naturalOrientation"}
    assert result["displayWidth"] == 1080 and result["sdkInt"] == 34 and result["screenOn"] is True


def test_unknown_method_is_a_jsonrpc_error(tmp_path: Path) -> None:
    reply = rpc(session(tmp_path), "noSuchMethod")
    assert reply["error"]["code"] == -32601 and "result" not in reply


def test_bad_json_is_a_parse_error(tmp_path: Path) -> None:
    _, _, payload = split_response(session(tmp_path).feed(request("POST", "/jsonrpc/0", b"{nope")))
    assert json.loads(payload)["error"]["code"] == -32700


def test_dump_window_hierarchy_returns_jar_xml(tmp_path: Path) -> None:
    result = rpc(session(tmp_path), "dumpWindowHierarchy", [False, 50])["result"]
    assert result.startswith("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\r\n<hierarchy")


def test_selector_click_flow_on_calculator(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.ui.launch(CALC)
    for key in "12×3=":
        assert rpc(s, "waitForExists", [sel(text=key), 20000])["result"] is True
        info = rpc(s, "objInfo", [sel(text=key)])["result"]
        b = info["visibleBounds"]
        assert rpc(s, "click", [(b["left"] + b["right"]) / 2, (b["top"] + b["bottom"]) / 2])["result"] is True
    assert rpc(s, "getText", [sel(resourceId=f"{CALC}:id/result")])["result"] == "36"


def test_obj_info_of_missing_view_is_ui_object_not_found(tmp_path: Path) -> None:
    reply = rpc(session(tmp_path), "objInfo", [sel(text="no such view")])
    assert "uiautomator.UiObjectNotFoundException" in reply["error"]["message"]


def test_selector_fields_count_and_instance(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.ui.launch(CALC)
    assert rpc(s, "count", [sel(className="android.widget.Button")])["result"] == 19
    assert rpc(s, "count", [sel(textMatches=r"[0-9]")])["result"] == 10
    assert rpc(s, "count", [sel(resourceId=f"{CALC}:id/digit_5", clickable=True)])["result"] == 1
    assert rpc(s, "count", [sel(descriptionContains="multi")])["result"] == 1
    fourth = rpc(s, "objInfo", [sel(className="android.widget.Button", instance=3)])["result"]
    assert fourth["text"] == "÷"
    assert rpc(s, "exist", [sel(packageName="com.android.systemui", textContains="%")])["result"] is True


def test_child_selector(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.ui.launch(CALC)
    parent = sel(resourceId=f"{CALC}:id/pad_numeric")
    parent["childOrSibling"] = ["child"]
    parent["childOrSiblingSelector"] = [sel(text="9")]
    assert rpc(s, "objInfo", [parent])["result"]["resourceName"] == f"{CALC}:id/digit_9"


def test_set_text_and_clear_on_selector(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.ui.launch("dev.agentfarm.notes")
    rpc(s, "click", [*_center(s, sel(description="新建笔记"))])
    body = sel(resourceId="dev.agentfarm.notes:id/note_body")
    assert rpc(s, "setText", [body, "hello"])["result"] is True
    assert rpc(s, "getText", [body])["result"] == "hello"
    rpc(s, "clearTextField", [body])
    assert rpc(s, "getText", [body])["result"] == "输入笔记内容"


def test_clipboard_paste_into_focused_field(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.ui.launch("dev.agentfarm.notes")
    rpc(s, "click", [*_center(s, sel(description="新建笔记"))])
    rpc(s, "setClipboard", [None, "pasted text"])
    assert rpc(s, "getClipboard")["result"] == "pasted text"
    rpc(s, "pasteClipboard")
    assert find(s.ui, rid="dev.agentfarm.notes:id/note_title_input").text == "pasted text"


def test_press_key_and_swipe(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.ui.launch("dev.agentfarm.shop")
    assert rpc(s, "swipe", [540, 1800, 540, 600, 55])["result"] is True
    assert rpc(s, "pressKey", ["home"])["result"] is True
    assert rpc(s, "deviceInfo")["result"]["currentPackageName"] == "com.android.launcher3"
    assert rpc(s, "pressKey", ["not-a-key"])["result"] is False


def test_scroll_forward_until_end(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.ui.launch("dev.agentfarm.shop")
    lst = sel(resourceId="dev.agentfarm.shop:id/product_list")
    assert rpc(s, "scrollTo", [lst, sel(text="电动牙刷"), True])["result"] is True
    assert rpc(s, "exist", [sel(text="电动牙刷")])["result"] is True


def test_take_screenshot_is_base64_jpeg(tmp_path: Path) -> None:
    data = rpc(session(tmp_path), "takeScreenshot", [1, 80])["result"]
    img = Image.open(io.BytesIO(base64.b64decode(data)))
    assert img.format == "JPEG" and img.size == (1080, 2400)


def _center(s: U2HttpSession, selector: dict[str, Any]) -> tuple[float, float]:
    b = rpc(s, "objInfo", [selector])["result"]["bounds"]
    return (b["left"] + b["right"]) / 2, (b["top"] + b["bottom"]) / 2
