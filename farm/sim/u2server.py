"""The uiautomator2 server of the virtual phone: HTTP/1.1 on tcp:9008 with JSON-RPC on /jsonrpc/0.

Method names, parameters and result shapes follow the u2.jar that uiautomator2 3.7 pushes
(`AutomatorService`), so an unmodified `uiautomator2.connect()` works against it.
"""

from __future__ import annotations

import base64
import json
from email.utils import formatdate
from typing import TYPE_CHECKING, Any

from farm.sim.apps.selector import MASKS, SelectorError, find, find_all, obj_info

if TYPE_CHECKING:
    from farm.sim.apps.base import Node
    from farm.sim.ui import UiDevice

NOT_FOUND = "androidx.test.uiautomator.UiObjectNotFoundException"
_MAX_HEADER = 64 * 1024


class RpcError(Exception):
    """A JSON-RPC error object (jsonrpc4j style)."""

    def __init__(self, code: int, message: str, data: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def _not_found(sel: Any) -> RpcError:
    return RpcError(-32002, NOT_FOUND, f"{NOT_FOUND}: UiSelector{json.dumps(sel, ensure_ascii=False)}")


class U2HttpSession:
    """One TCP stream to tcp:9008: feed request bytes, get response bytes (keep-alive, pipelining)."""

    def __init__(self, ui: UiDevice) -> None:
        self.ui = ui
        self._buf = bytearray()
        self.closed = False
        """True once a request asked for `Connection: close` (the caller then closes the stream)."""

    def feed(self, data: bytes) -> bytes:
        """Consume bytes; return the responses to every request that is now complete."""
        self._buf += data
        out = bytearray()
        while not self.closed:
            request = self._next_request()
            if request is None:
                break
            method, path, headers, body = request
            status, ctype, payload = self._route(method, path, body)
            out += _response(status, ctype, payload, close=headers.get("connection", "").lower() == "close")
            if headers.get("connection", "").lower() == "close":
                self.closed = True
        return bytes(out)

    def _next_request(self) -> tuple[str, str, dict[str, str], bytes] | None:
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buf) > _MAX_HEADER:
                self._buf.clear()
                self.closed = True
            return None
        head = self._buf[:end].decode("latin-1").split("\r\n")
        parts = head[0].split(" ")
        headers: dict[str, str] = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        try:
            length = int(headers.get("content-length", "0") or 0)
        except ValueError:
            length = 0
        if len(self._buf) < end + 4 + length:
            return None
        body = bytes(self._buf[end + 4:end + 4 + length])
        del self._buf[:end + 4 + length]
        method = parts[0].upper() if parts else ""
        path = parts[1] if len(parts) > 1 else "/"
        return method, path, headers, body

    def _route(self, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        path = path.split("?", 1)[0]
        if path == "/ping":
            return 200, "text/plain", b"pong"
        if path == "/jsonrpc/0" and method == "POST":
            return 200, "application/json-rpc", self.handle_rpc(body)
        if path == "/screenshot/0":
            return 200, "image/png", self.ui.screenshot_png()
        if path == "/stop":
            return 200, "text/plain", b"Server stopped!!!"
        return 404, "text/plain", b"Not Found"

    def handle_rpc(self, body: bytes) -> bytes:
        """Answer one JSON-RPC 2.0 request body."""
        req_id: Any = None
        try:
            req = json.loads(body.decode("utf-8"))
            if not isinstance(req, dict) or not isinstance(req.get("method"), str):
                raise RpcError(-32600, "Invalid Request")
            req_id = req.get("id")
            params = req.get("params")
            args = list(params) if isinstance(params, list) else []
            handler = getattr(self, f"rpc_{req['method']}", None)
            if handler is None:
                raise RpcError(-32601, "method not found")
            with self.ui.lock:
                result = handler(*args)
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": req_id, "result": result}
        except json.JSONDecodeError:
            reply = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "JSON parse error"}}
        except RpcError as exc:
            reply = {"jsonrpc": "2.0", "id": req_id, "error": _error(exc)}
        except SelectorError as exc:
            reply = {"jsonrpc": "2.0", "id": req_id,
                     "error": _error(RpcError(-32001, "java.lang.IllegalArgumentException", str(exc)))}
        except TypeError as exc:
            reply = {"jsonrpc": "2.0", "id": req_id, "error": _error(RpcError(-32602, "invalid params", str(exc)))}
        return json.dumps(reply, ensure_ascii=False).encode("utf-8")

    # --- helpers -------------------------------------------------------------------------------------
    def _roots(self) -> list[Node]:
        return self.ui.roots()

    def _must(self, sel: Any) -> Node:
        if not isinstance(sel, dict):
            raise RpcError(-32602, "invalid params", "selector must be an object")
        node = find(self._roots(), sel)
        if node is None:
            raise _not_found(sel)
        return node

    @staticmethod
    def _center(node: Node) -> tuple[float, float]:
        left, top, right, bottom = node.bounds
        return (left + right) / 2, (top + bottom) / 2

    # --- device ----------------------------------------------------------------------------------------
    def rpc_deviceInfo(self) -> dict[str, Any]:
        p = self.ui.phone.profile
        return {
            "currentPackageName": self.ui.foreground()[0],
            "displayHeight": p.screen.height,
            "displayRotation": 0,
            "displaySizeDpX": round(p.screen.width * 160 / p.screen.density),
            "displaySizeDpY": round(p.screen.height * 160 / p.screen.density),
            "displayWidth": p.screen.width,
            "productName": p.name,
            "screenOn": bool(self.ui.phone.screen_on),
            "sdkInt": p.sdk,
            "naturalOrientation": True,
        }

    def rpc_dumpWindowHierarchy(self, compressed: bool = False, max_depth: int = 50, *_: Any) -> str:
        return self.ui.hierarchy_xml("jar")

    def rpc_takeScreenshot(self, scale: float = 1, quality: int = 80) -> str:
        from farm.sim.screen import render

        data = render(self.ui, "JPEG", quality=int(quality), scale=max(0.05, min(float(scale), 1.0)))
        return base64.b64encode(data).decode("ascii")

    def rpc_wakeUp(self) -> None:
        self.ui.key("KEYCODE_WAKEUP")

    def rpc_sleep(self) -> None:
        self.ui.key("KEYCODE_SLEEP")

    def rpc_isScreenOn(self) -> bool:
        return bool(self.ui.phone.screen_on)

    def rpc_pressKey(self, key: str) -> bool:
        return self.ui.key(str(key))

    def rpc_pressKeyCode(self, code: int, meta: int = 0) -> bool:
        return self.ui.key(int(code))

    def rpc_setOrientation(self, orientation: str) -> None:
        return None

    def rpc_freezeRotation(self, freeze: bool = True) -> None:
        return None

    def rpc_openNotification(self) -> bool:
        return True

    def rpc_openQuickSettings(self) -> bool:
        return True

    def rpc_getLastTraversedText(self) -> None:
        return None

    def rpc_clearLastTraversedText(self) -> None:
        return None

    def rpc_getLastToast(self, *_: Any) -> str | None:
        return self.ui.last_toast

    def rpc_clearLastToast(self) -> None:
        self.ui.last_toast = None

    def rpc_makeToast(self, text: str, duration: int = 1000) -> bool:
        self.ui.toast(str(text))
        return True

    # --- clipboard and text ----------------------------------------------------------------------------
    def rpc_setClipboard(self, label: str | None, text: str) -> None:
        self.ui.clipboard = "" if text is None else str(text)

    def rpc_getClipboard(self) -> str:
        return self.ui.clipboard

    def rpc_pasteClipboard(self) -> bool:
        return self.ui.input_text(self.ui.clipboard)

    def rpc_clearInputText(self) -> bool:
        target = self.ui.focused_field()
        if target is None:
            return False
        self.ui.set_field(target[0], target[1], "")
        return True

    # --- coordinates -----------------------------------------------------------------------------------
    def rpc_click(self, *args: Any) -> bool:
        if args and isinstance(args[0], dict):
            return self.ui.tap(*self._center(self._must(args[0])))
        if len(args) >= 3:
            return self.ui.long_press(float(args[0]), float(args[1]))
        if len(args) != 2:
            raise TypeError("click expects (x, y) or (x, y, ms)")
        return self.ui.tap(float(args[0]), float(args[1]))

    def rpc_longClick(self, *args: Any) -> bool:
        if args and isinstance(args[0], dict):
            return self.ui.long_press(*self._center(self._must(args[0])))
        return self.ui.long_press(float(args[0]), float(args[1]))

    def rpc_swipe(self, *args: Any) -> bool:
        if args and isinstance(args[0], dict):
            raise RpcError(-32601, "method not found")
        fx, fy, tx, ty = (float(a) for a in args[:4])
        steps = int(args[4]) if len(args) > 4 else 10
        return self.ui.swipe(fx, fy, tx, ty, steps * 5)

    def rpc_swipePoints(self, points: list[int], steps: int = 10) -> bool:
        if len(points) < 4:
            return False
        return self.ui.swipe(points[0], points[1], points[-2], points[-1], int(steps) * 5)

    def rpc_drag(self, sx: float, sy: float, ex: float, ey: float, steps: int = 100) -> bool:
        return self.ui.swipe(sx, sy, ex, ey, int(steps) * 5)

    def rpc_dragTo(self, sel: Any, *args: Any) -> bool:
        node = self._must(sel)
        if args and isinstance(args[0], dict):
            tx, ty = self._center(self._must(args[0]))
        else:
            tx, ty = float(args[0]), float(args[1])
        return self.ui.swipe(*self._center(node), tx, ty, 500)

    def rpc_injectInputEvent(self, action: int, x: float, y: float, meta: int = 0) -> bool:
        return self.ui.touch(int(action), float(x), float(y))

    # --- selectors -------------------------------------------------------------------------------------
    def rpc_exist(self, sel: Any) -> bool:
        return find(self._roots(), sel) is not None

    def rpc_waitForExists(self, sel: Any, timeout: int = 0) -> bool:
        # Nothing on this phone changes without input, so waiting cannot make a missing view appear.
        return find(self._roots(), sel) is not None

    def rpc_waitUntilGone(self, sel: Any, timeout: int = 0) -> bool:
        return find(self._roots(), sel) is None

    def rpc_count(self, sel: Any) -> int:
        return len(find_all(self._roots(), sel))

    def rpc_objInfo(self, sel: Any) -> dict[str, Any]:
        return obj_info(self._must(sel), (self.ui.width, self.ui.height))

    def rpc_objInfoOfAllInstances(self, sel: Any) -> list[dict[str, Any]]:
        return [obj_info(loc.node, (self.ui.width, self.ui.height)) for loc in find_all(self._roots(), sel)]

    def rpc_getText(self, sel: Any) -> str:
        return self._must(sel).text

    def rpc_setText(self, sel: Any, text: str) -> bool:
        node = self._must(sel)
        if node.field_key is None:
            return False
        app = self.ui.current_app()
        app.focus = node.field_key
        self.ui.set_field(app, node.field_key, "" if text is None else str(text))
        return True

    def rpc_clearTextField(self, sel: Any) -> None:
        self.rpc_setText(sel, "")

    def _scroll(self, sel: Any, forward: bool, vertical: bool = True) -> bool:
        node = self._must(sel)
        if not node.scroll_key or not vertical:
            return False
        app = self.ui.current_app() if node.package != self.ui.launcher.package else self.ui.launcher
        before = app.scroll.get(node.scroll_key, 0)
        left, top, right, bottom = node.bounds
        x, h = (left + right) / 2, bottom - top
        y_from, y_to = (top + h * 0.8, top + h * 0.2) if forward else (top + h * 0.2, top + h * 0.8)
        self.ui.swipe(x, y_from, x, y_to, 300)
        self.ui.roots()  # re-render so the offset is clamped to the list length
        return app.scroll.get(node.scroll_key, 0) != before

    def rpc_scrollForward(self, sel: Any, vertical: bool = True, steps: int = 55) -> bool:
        return self._scroll(sel, True, vertical)

    def rpc_scrollBackward(self, sel: Any, vertical: bool = True, steps: int = 55) -> bool:
        return self._scroll(sel, False, vertical)

    def rpc_flingForward(self, sel: Any, vertical: bool = True) -> bool:
        return self._scroll(sel, True, vertical)

    def rpc_flingBackward(self, sel: Any, vertical: bool = True) -> bool:
        return self._scroll(sel, False, vertical)

    def _scroll_all(self, sel: Any, forward: bool, vertical: bool, max_swipes: int) -> bool:
        for _ in range(max(1, int(max_swipes))):
            if not self._scroll(sel, forward, vertical):
                break
        return True

    def rpc_scrollToEnd(self, sel: Any, vertical: bool = True, max_swipes: int = 500, steps: int = 55) -> bool:
        return self._scroll_all(sel, True, vertical, max_swipes)

    def rpc_scrollToBeginning(self, sel: Any, vertical: bool = True, max_swipes: int = 500,
                              steps: int = 55) -> bool:
        return self._scroll_all(sel, False, vertical, max_swipes)

    def rpc_flingToEnd(self, sel: Any, vertical: bool = True, max_swipes: int = 500) -> bool:
        return self._scroll_all(sel, True, vertical, max_swipes)

    def rpc_flingToBeginning(self, sel: Any, vertical: bool = True, max_swipes: int = 500) -> bool:
        return self._scroll_all(sel, False, vertical, max_swipes)

    def rpc_scrollTo(self, sel: Any, target: Any, vertical: bool = True) -> bool:
        for _ in range(100):
            if find(self._roots(), target) is not None:
                return True
            if not self._scroll(sel, True, vertical):
                break
        return find(self._roots(), target) is not None

    def _child_selector(self, sel: Any, child: Any, extra: dict[str, Any]) -> dict[str, Any]:
        sub = {**{k: v for k, v in child.items() if k not in ("childOrSibling", "childOrSiblingSelector")}, **extra}
        sub["mask"] = int(child.get("mask", 0))
        for key in extra:
            sub["mask"] |= MASKS[key]
        new = dict(sel)
        new["childOrSibling"] = [*sel.get("childOrSibling", []), "child"]
        new["childOrSiblingSelector"] = [*sel.get("childOrSiblingSelector", []), sub]
        if find(self._roots(), new) is None:
            raise _not_found(new)
        return new

    def rpc_childByText(self, sel: Any, child: Any, text: str, *_: Any) -> dict[str, Any]:
        return self._child_selector(sel, child, {"text": text})

    def rpc_childByDescription(self, sel: Any, child: Any, desc: str, *_: Any) -> dict[str, Any]:
        return self._child_selector(sel, child, {"description": desc})

    def rpc_childByInstance(self, sel: Any, child: Any, instance: int) -> dict[str, Any]:
        return self._child_selector(sel, child, {"instance": int(instance)})


def _error(exc: RpcError) -> dict[str, Any]:
    err: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        err["data"] = exc.data
    return err


def _response(status: int, ctype: str, body: bytes, close: bool = False) -> bytes:
    reason = {200: "OK", 404: "Not Found", 400: "Bad Request"}.get(status, "OK")
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        f"Content-Type: {ctype}\r\n"
        f"Date: {formatdate(usegmt=True)}\r\n"
        f"Connection: {'close' if close else 'keep-alive'}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


